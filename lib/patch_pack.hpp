// The im2col matrix of one output row, never materialized: X(k, ow) is the input element that
// weight k meets at output (od, oh, ow), or 0 where that tap falls in the padding. Forward and
// backward-filter pack blocks of it into their panel layouts; backward-data scatters into it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "lib/geometry.hpp"

namespace convjit::detail {

inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Input coordinate of tap index t (0..kernel-1) at output position o in one spatial dim.
inline int64_t input_coordinate(const convjit_conv_problem& g, int dim, int64_t o, int64_t t) {
  int64_t tap = g.flip ? g.kernel[dim] - 1 - t : t;
  return o * g.stride[dim] - g.pad_begin[dim] + tap * g.dilation[dim];
}

// Visits X(k, ow) for k in [k0, k0 + kc) and ow in [ow0, ow0 + owc) of output row (od, oh):
// visit(k - k0, ow - ow0, pointer to the input element, or null where the tap is padding).
// x points at the image's first channel of the group; T is float or const float.
template <typename T, typename Visit>
void visit_patches(const ConvGeometry& g, T* x, int64_t od, int64_t oh, int64_t ow0, int64_t owc, int64_t k0,
                   int64_t kc, Visit&& visit) {
  const int64_t kw_count = g.kernel[2], khw_count = g.kernel[1] * g.kernel[2];
  for (int64_t kl = 0; kl < kc; ++kl) {
    const int64_t k = k0 + kl, tap = g.tap_of(k);
    const int64_t id = input_coordinate(g, 0, od, tap / khw_count);
    const int64_t ih = input_coordinate(g, 1, oh, tap / kw_count % g.kernel[1]);
    int64_t lo = owc, hi = owc;  // real input for ow in [lo, hi)
    T* src = nullptr;
    if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1]) {
      const int64_t first_iw = input_coordinate(g, 2, ow0, tap % kw_count);  // later ow step by stride
      lo = std::clamp<int64_t>(ceil_div(-first_iw, g.stride[2]), 0, owc);
      hi = std::clamp<int64_t>(ceil_div(g.in[2] - first_iw, g.stride[2]), lo, owc);
      src = x + g.ic_of(k) * g.x.channel + id * g.x.spatial[0] + ih * g.x.spatial[1] +
            (first_iw + lo * g.stride[2]) * g.x.spatial[2];
    }
    for (int64_t ow = 0; ow < lo; ++ow) visit(kl, ow, static_cast<T*>(nullptr));
    const int64_t step = g.stride[2] * g.x.spatial[2];
    for (int64_t ow = lo; ow < hi; ++ow, src += step) visit(kl, ow, src);
    for (int64_t ow = hi; ow < owc; ++ow) visit(kl, ow, static_cast<T*>(nullptr));
  }
}

// The packing form: store(k - k0, ow - ow0, X(k, ow)).
template <typename Store>
void pack_patches(const ConvGeometry& g, const float* x, int64_t od, int64_t oh, int64_t ow0, int64_t owc,
                  int64_t k0, int64_t kc, Store&& store) {
  visit_patches(g, x, od, oh, ow0, owc, k0, kc,
                [&](int64_t k, int64_t ow, const float* src) { store(k, ow, src ? *src : 0.0f); });
}

}  // namespace convjit::detail
