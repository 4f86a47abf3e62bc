// Tensor rearrangements for metamorphic tests (layout swaps, kernel flips), written
// independently of both lib/ and tests/reference.
#pragma once

#include <cstdint>
#include <vector>

#include "convjit/dims.hpp"

namespace convjit::testing {

// [N][C][P] <-> [N][P][C], P = product of the spatial sizes.
template <typename T>
std::vector<T> channels_first_to_last(const std::vector<T>& v, int64_t batch, int64_t channels, int64_t pixels) {
  std::vector<T> out(v.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < pixels; ++p) out[(n * pixels + p) * channels + c] = v[(n * channels + c) * pixels + p];
  return out;
}

template <typename T>
std::vector<T> channels_last_to_first(const std::vector<T>& v, int64_t batch, int64_t channels, int64_t pixels) {
  std::vector<T> out(v.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < pixels; ++p) out[(n * channels + c) * pixels + p] = v[(n * pixels + p) * channels + c];
  return out;
}

// Weights [O][I][taps] (OIHW) <-> [O][taps][I] (OHWI): the same transposition per output channel.
template <typename T>
std::vector<T> oihw_to_ohwi(const std::vector<T>& w, int64_t out_channels, int64_t in_per_group, int64_t taps) {
  return channels_first_to_last(w, out_channels, in_per_group, taps);
}
template <typename T>
std::vector<T> ohwi_to_oihw(const std::vector<T>& w, int64_t out_channels, int64_t in_per_group, int64_t taps) {
  return channels_last_to_first(w, out_channels, in_per_group, taps);
}

// Weights of `dims` with every spatial kernel dim reversed (either layout).
template <typename T>
std::vector<T> flip_kernel(const std::vector<T>& w, const ConvDims& dims) {
  int64_t k[3] = {1, 1, 1};
  for (int i = 0; i < dims.rank; ++i) k[i + 3 - dims.rank] = dims.kernel[i];
  const int64_t taps = k[0] * k[1] * k[2];
  const int64_t ipg = dims.in_channels / dims.groups;
  std::vector<T> out(w.size());
  for (int64_t o = 0; o < dims.out_channels; ++o)
    for (int64_t i = 0; i < ipg; ++i)
      for (int64_t a = 0; a < k[0]; ++a)
        for (int64_t b = 0; b < k[1]; ++b)
          for (int64_t c = 0; c < k[2]; ++c) {
            const int64_t tap = (a * k[1] + b) * k[2] + c;
            const int64_t flipped = ((k[0] - 1 - a) * k[1] + (k[1] - 1 - b)) * k[2] + (k[2] - 1 - c);
            if (dims.layout == Layout::NCHW) {
              out[(o * ipg + i) * taps + flipped] = w[(o * ipg + i) * taps + tap];
            } else {
              out[(o * taps + flipped) * ipg + i] = w[(o * taps + tap) * ipg + i];
            }
          }
  return out;
}

}  // namespace convjit::testing
