// pool_nchw.hpp's kernel over a vector type F (simd_avx2.hpp, simd_avx512.hpp). Include only from
// files compiled for F's ISA; everything here has internal linkage.
#pragma once

#include <cstdint>

#include "pool_lanes.hpp"
#include "pool_nchw.hpp"
#include "pool_window.hpp"

namespace convjit::detail {
namespace {

// Vectors of a row's outputs formed at once.
constexpr int kPoolRowVectors = 4;

// Outputs [first, first + Vecs * kLanes): every tap a load (Stride 1) or the even lanes of two.
template <typename F, bool Max, int Stride, int Vecs>
inline __attribute__((always_inline)) void nchw_outputs(const PoolGeometry& g, const float* plane, const Window& win,
                                                        float* out, float divisor) {
  PoolLanes<F, Max> lanes[Vecs];
  for (int64_t a = win.lo[0]; a < win.hi[0]; ++a) {
    for (int64_t b = win.lo[1]; b < win.hi[1]; ++b) {
      const float* row = plane + (win.origin[0] + a * g.dilation[0]) * g.x.spatial[0] +
                         (win.origin[1] + b * g.dilation[1]) * g.x.spatial[1] + win.origin[2];
      for (int64_t t = 0; t < g.window[2]; ++t) {
        const float* src = row + t * g.dilation[2];
        for (int v = 0; v < Vecs; ++v) {
          typename F::Vec value;
          if constexpr (Stride == 1) {
            value = F::load(src + v * F::kLanes);
          } else {  // the last odd position is not read: it may lie past the input's end
            const float* pair = src + 2 * v * F::kLanes;
            value = F::even_lanes(F::load(pair), F::load(pair + F::kLanes, F::first_lanes(F::kLanes - 1)));
          }
          lanes[v].add(value);
        }
      }
    }
  }
  const bool any_tap = win.real_taps() > 0;
  for (int v = 0; v < Vecs; ++v) {
    const typename F::Vec result = lanes[v].result(any_tap, divisor);
    F::store(out + v * F::kLanes, result);
  }
}

template <typename F, bool Max, int Stride>
void nchw_interior(const PoolGeometry& g, const float* plane, int64_t o0, int64_t o1, int64_t first, int64_t count,
                   float* y_row) {
  int64_t o[3] = {o0, o1, first};
  const Window win = clip_window(g, o);  // the same for every output of the run but for origin[2]
  const float divisor = g.exclude_padding ? float(win.real_taps()) : window_taps(g);
  Window at = win;
  int64_t ow = first;
  for (; ow + kPoolRowVectors * F::kLanes <= first + count; ow += kPoolRowVectors * F::kLanes) {
    at.origin[2] = win.origin[2] + (ow - first) * Stride;
    nchw_outputs<F, Max, Stride, kPoolRowVectors>(g, plane, at, y_row + ow, divisor);
  }
  for (; ow < first + count; ow += F::kLanes) {
    at.origin[2] = win.origin[2] + (ow - first) * Stride;
    nchw_outputs<F, Max, Stride, 1>(g, plane, at, y_row + ow, divisor);
  }
  F::leave();
}

template <typename F>
void run_pool_nchw_interior(const PoolGeometry& g, PoolOp op, const float* plane, int64_t o0, int64_t o1, int64_t first,
                            int64_t count, float* y_row) {
  const bool max = op == PoolOp::Max;
  if (g.stride[2] == 1) {
    (max ? nchw_interior<F, true, 1> : nchw_interior<F, false, 1>)(g, plane, o0, o1, first, count, y_row);
  } else {
    (max ? nchw_interior<F, true, 2> : nchw_interior<F, false, 2>)(g, plane, o0, o1, first, count, y_row);
  }
}

}  // namespace
}  // namespace convjit::detail
