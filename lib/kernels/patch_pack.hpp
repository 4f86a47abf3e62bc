// The im2col matrix of one output row, never materialized: X(k, ow) is the input element that
// weight k meets at output (od, oh, ow), or 0 where that tap falls in the padding. Forward and
// backward-filter pack blocks of it into their panel layouts; backward-data scatters into it.
// Rows are described as runs (PatchRow), so the copies are plain strided loops.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gemm_tile.hpp"
#include "geometry.hpp"
#include "steps.hpp"

namespace convjit::detail {

// Input coordinate of tap index t (0..kernel-1) at output position o in one spatial dim.
inline int64_t input_coordinate(const convjit_conv_problem& g, int dim, int64_t o, int64_t t) {
  int64_t tap = g.flip ? g.kernel[dim] - 1 - t : t;
  return o * g.stride[dim] - g.pad_begin[dim] + tap * g.dilation[dim];
}

// Row k of X over [ow0, ow0 + owc): real input for local ow in [lo, hi), at src + (ow - lo) * step;
// zeros (padding) elsewhere.
template <typename T>
struct PatchRow {
  T* src;
  int64_t step, lo, hi;
};

// (ic, kd, kh, kw) of weight index k, advanced without divisions: the packing loops visit
// every k in order, and a division per k costs more than the copy of a short row.
class WeightCursor {
 public:
  WeightCursor(const ConvGeometry& g, int64_t k) : g_(g) {
    const int64_t tap = g.tap_of(k);
    ic = g.ic_of(k);
    kd = tap / (g.kernel[1] * g.kernel[2]);
    kh = tap / g.kernel[2] % g.kernel[1];
    kw = tap % g.kernel[2];
  }
  void advance() {  // to k + 1, in the layout's order
    if (g_.layout == CONVJIT_NHWC && ++ic < g_.ic_per_group) return;
    if (g_.layout == CONVJIT_NHWC) ic = 0;
    if (++kw < g_.kernel[2]) return;
    kw = 0;
    if (++kh < g_.kernel[1]) return;
    kh = 0;
    if (++kd < g_.kernel[0]) return;
    kd = 0;
    if (g_.layout == CONVJIT_NCHW) ++ic;
  }
  int64_t ic, kd, kh, kw;

 private:
  const ConvGeometry& g_;
};

// Calls row(k - k0, PatchRow) for k in [k0, k0 + kc) of output row (od, oh), ow in [ow0, ow0 + owc).
// x points at the image's first channel of the group; T is float or const float.
template <typename T, typename RowFn>
void for_each_patch_row(const ConvGeometry& g, T* x, int64_t od, int64_t oh, int64_t ow0, int64_t owc, int64_t k0,
                        int64_t kc, RowFn&& row_fn) {
  const int64_t stride = g.stride[2];
  WeightCursor at(g, k0);
  for (int64_t kl = 0; kl < kc; ++kl, at.advance()) {
    const int64_t id = input_coordinate(g, 0, od, at.kd);
    const int64_t ih = input_coordinate(g, 1, oh, at.kh);
    PatchRow<T> row{x, 0, 0, 0};
    if (id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1]) {
      const int64_t first_iw = input_coordinate(g, 2, ow0, at.kw);  // later ow step by stride
      const StepRange inside = steps_inside(first_iw, stride, g.in[2], owc);
      row.lo = inside.lo;
      row.hi = inside.hi;
      // Two values inside the row put stride below its width, so the step is a distance within x;
      // one value needs none (and a stride of any int64 times the pixel stride may overflow).
      if (row.hi - row.lo > 1) row.step = stride * g.x.spatial[2];
      if (row.lo < row.hi) {
        row.src = x + at.ic * g.x.channel + id * g.x.spatial[0] + ih * g.x.spatial[1] +
                  (first_iw + row.lo * stride) * g.x.spatial[2];
      }
    }
    row_fn(kl, row);
  }
}

// Writes a patch row of `count` values (zeros outside [lo, hi)) to a panel layout: value ow goes
// to dst[(ow / kTileCols) * panel_stride + (ow % kTileCols) * lane_stride].
inline void store_patch_row(const PatchRow<const float>& row, int64_t count, float* dst, int64_t panel_stride,
                            int64_t lane_stride) {
  for (int64_t first = 0; first < count; first += kTileCols, dst += panel_stride) {
    const int64_t last = std::min<int64_t>(first + kTileCols, count);
    const int64_t lo = std::clamp(row.lo, first, last), hi = std::clamp(row.hi, lo, last);
    for (int64_t ow = first; ow < lo; ++ow) dst[(ow - first) * lane_stride] = 0.0f;
    if (lo < hi) {  // only then is the pointer inside the row (lo < row.lo before it)
      const float* src = row.src + (lo - row.lo) * row.step;
      if (lane_stride == 1 && row.step == 1) {
        std::copy(src, src + (hi - lo), dst + (lo - first));
      } else {
        // Indexed, not a pointer stepped past the last value (a stride may be any int64).
        for (int64_t ow = lo; ow < hi; ++ow) dst[(ow - first) * lane_stride] = src[(ow - lo) * row.step];
      }
    }
    for (int64_t ow = hi; ow < last; ++ow) dst[(ow - first) * lane_stride] = 0.0f;
  }
}

}  // namespace convjit::detail
