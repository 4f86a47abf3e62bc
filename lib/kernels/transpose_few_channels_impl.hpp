// transpose.hpp's few-channel image transpose, for the file that includes it to compile for its
// ISA: with the channel count a constant, the compiler can turn each pixel's channels into
// interleaving shuffles of whole vectors of pixels (GCC 12 does for 2, 3, 4 and 8 channels; one is
// a plain copy). Internal linkage.
#pragma once

#include <cstdint>

#include "transpose.hpp"

namespace convjit::detail {
namespace {

template <int Channels>
void transpose_pixels(int64_t pixels, const float* __restrict src, float* __restrict dst, bool to_nchw) {
  if (to_nchw) {
    for (int64_t p = 0; p < pixels; ++p) {
#pragma GCC unroll 8
      for (int c = 0; c < Channels; ++c) dst[c * pixels + p] = src[p * Channels + c];
    }
  } else {
    for (int64_t p = 0; p < pixels; ++p) {
#pragma GCC unroll 8
      for (int c = 0; c < Channels; ++c) dst[p * Channels + c] = src[c * pixels + p];
    }
  }
}

inline void run_transpose_few_channels(int64_t channels, int64_t pixels, const float* src, float* dst, bool to_nchw) {
  using Transpose = void (*)(int64_t, const float*, float*, bool);
  static constexpr Transpose kByChannels[kMaxFewChannels] = {
      transpose_pixels<1>, transpose_pixels<2>, transpose_pixels<3>, transpose_pixels<4>,
      transpose_pixels<5>, transpose_pixels<6>, transpose_pixels<7>, transpose_pixels<8>};
  kByChannels[channels - 1](pixels, src, dst, to_nchw);
}

}  // namespace
}  // namespace convjit::detail
