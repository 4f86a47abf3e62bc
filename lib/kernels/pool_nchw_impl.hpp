// pool_nchw.hpp's kernel over a vector type F (simd_avx2.hpp, simd_avx512.hpp). Include only from
// files compiled for F's ISA; everything here has internal linkage.
#pragma once

#include <algorithm>
#include <cstdint>

#include "pool_lanes.hpp"
#include "pool_nchw.hpp"
#include "pool_window.hpp"

namespace convjit::detail {
namespace {

// Vectors of a row's outputs formed at once.
constexpr int kPoolRowVectors = 4;
// Input rows (D x H taps) of a window the kernel lists; larger windows are not supported.
constexpr int64_t kPoolNchwMaxWindowRows = 256;

// The real input rows of an output row's window, as offsets from its first tap in the plane, in
// row-major order; rebuilt only when the clipped window changes (rows whose windows are whole in
// D and H share one list).
struct WindowRows {
  int64_t offset[kPoolNchwMaxWindowRows];
  int64_t count = -1;
  int64_t lo[2] = {0, 0}, hi[2] = {-1, -1};

  void update(const PoolGeometry& g, const Window& win) {
    if (count >= 0 && win.lo[0] == lo[0] && win.hi[0] == hi[0] && win.lo[1] == lo[1] && win.hi[1] == hi[1]) return;
    count = 0;
    for (int64_t a = win.lo[0]; a < win.hi[0]; ++a) {
      for (int64_t b = win.lo[1]; b < win.hi[1]; ++b) {
        offset[count++] = a * g.dilation[0] * g.x.spatial[0] + b * g.dilation[1] * g.x.spatial[1];
      }
    }
    lo[0] = win.lo[0], hi[0] = win.hi[0], lo[1] = win.lo[1], hi[1] = win.hi[1];
  }
};

// Which floats of the loads a run's vectors read: every lane, or the first `outputs` lanes of the
// one vector of a row's tail. A tap alone reads the even lanes of its pair (`low`, `high`: the
// float past its last even lane masked off unless the whole run's pairs lie in the plane); two
// consecutive taps (Stride 2, W dilation 1) share one pair, its odd lanes the second tap's: each
// float of it is a real tap (`shared_low`, `shared_high`).
template <typename F, int Stride>
struct RunLoads {
  typename F::Mask low, high, shared_low, shared_high, outputs;
  static RunLoads whole(bool whole_pairs) {
    const typename F::Mask all = F::all_lanes();
    return {all, whole_pairs ? all : F::first_lanes(F::kLanes - 1), all, all, all};
  }
  static RunLoads tail(int64_t outputs) {
    const int64_t floats = Stride == 1 ? outputs : 2 * outputs - 1;
    return {F::first_lanes(std::min<int64_t>(floats, F::kLanes)),
            F::first_lanes(std::max<int64_t>(floats - F::kLanes, 0)),
            F::first_lanes(std::min<int64_t>(floats + 1, F::kLanes)),
            F::first_lanes(std::max<int64_t>(floats + 1 - F::kLanes, 0)), F::first_lanes(outputs)};
  }
};

// Outputs [0, Vecs * kLanes) of a run whose first window's tap (0, 0, 0) is element `window` of
// the plane (in the padding when clipped): each tap a load (Stride 1), or the even lanes of a pair
// of loads, or two taps the even and the odd lanes of one pair; in row-major order. Masked: every
// load and the store by `loads`; else only the second load of a lone tap's pair, by loads.high.
template <typename F, bool Max, int Stride, bool Masked, int Vecs>
inline __attribute__((always_inline)) void nchw_outputs(const float* plane, int64_t window, const WindowRows& rows,
                                                        int64_t taps_w, int64_t dilation_w,
                                                        const RunLoads<F, Stride>& loads, bool any_tap, float divisor,
                                                        float* out) {
  PoolLanes<F, Max> lanes[Vecs];
  const bool taps_share_pairs = Stride == 2 && dilation_w == 1;
  for (int64_t r = 0; r < rows.count; ++r) {
    const float* row = plane + (window + rows.offset[r]);
    for (int64_t t = 0; t < taps_w; ++t) {
      const float* src = row + t * dilation_w;
      if constexpr (Stride == 1) {
        for (int v = 0; v < Vecs; ++v) {
          lanes[v].add(Masked ? F::load(src + v * F::kLanes, loads.low) : F::load(src + v * F::kLanes));
        }
      } else if (taps_share_pairs && t + 1 < taps_w) {
        for (int v = 0; v < Vecs; ++v) {
          const float* pair = src + 2 * v * F::kLanes;
          const typename F::Vec low = Masked ? F::load(pair, loads.shared_low) : F::load(pair);
          const typename F::Vec high =
              Masked ? F::load(pair + F::kLanes, loads.shared_high) : F::load(pair + F::kLanes);
          lanes[v].add(F::even_lanes(low, high));
          lanes[v].add(F::odd_lanes(low, high));
        }
        ++t;
      } else {
        for (int v = 0; v < Vecs; ++v) {
          const float* pair = src + 2 * v * F::kLanes;
          const typename F::Vec low = Masked ? F::load(pair, loads.low) : F::load(pair);
          lanes[v].add(F::even_lanes(low, F::load(pair + F::kLanes, loads.high)));
        }
      }
    }
  }
  for (int v = 0; v < Vecs; ++v) {
    const typename F::Vec result = lanes[v].result(any_tap, divisor);
    if constexpr (Masked) {
      F::store(out + v * F::kLanes, result, loads.outputs);
    } else {
      F::store(out + v * F::kLanes, result);
    }
  }
}

// One output row's run of `count` outputs: blocks of vectors, then one vector, then a masked tail.
template <typename F, bool Max, int Stride>
inline __attribute__((always_inline)) void nchw_row(const float* plane, int64_t window, const WindowRows& rows,
                                                    int64_t taps_w, int64_t dilation_w, bool whole_pairs, bool any_tap,
                                                    float divisor, int64_t count, float* out) {
  const RunLoads<F, Stride> whole = RunLoads<F, Stride>::whole(whole_pairs);
  int64_t i = 0;
  for (; i + kPoolRowVectors * F::kLanes <= count; i += kPoolRowVectors * F::kLanes) {
    nchw_outputs<F, Max, Stride, false, kPoolRowVectors>(plane, window + i * Stride, rows, taps_w, dilation_w, whole,
                                                         any_tap, divisor, out + i);
  }
  for (; i + F::kLanes <= count; i += F::kLanes) {
    nchw_outputs<F, Max, Stride, false, 1>(plane, window + i * Stride, rows, taps_w, dilation_w, whole, any_tap,
                                           divisor, out + i);
  }
  if (i < count) {
    nchw_outputs<F, Max, Stride, true, 1>(plane, window + i * Stride, rows, taps_w, dilation_w,
                                          RunLoads<F, Stride>::tail(count - i), any_tap, divisor, out + i);
  }
}

// Outputs [first, first + count) of every output row of one plane, a row at a time: called once
// per plane, so a row costs its window's input rows and its vectors, not a call; the D and H clips
// are the only per-row geometry.
template <typename F, bool Max, int Stride>
void nchw_interior(const PoolGeometry& g, const float* plane, int64_t first, int64_t count, float* y_plane) {
  const float padded_divisor = window_taps(g);
  const int64_t taps_w = g.window[2], dilation_w = g.dilation[2];
  const int64_t plane_size = g.in[0] * g.x.spatial[0];
  const int64_t first_w = first * Stride - g.pad_begin[2];
  WindowRows rows;
  Window win;
  win.origin[2] = first_w;
  win.lo[2] = 0;
  win.hi[2] = taps_w;
  for (int64_t od = 0; od < g.out[0]; ++od) {
    win.origin[0] = od * g.stride[0] - g.pad_begin[0];
    const StepRange d = steps_inside(win.origin[0], g.dilation[0], g.in[0], g.window[0]);
    win.lo[0] = d.lo, win.hi[0] = d.hi;
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      win.origin[1] = oh * g.stride[1] - g.pad_begin[1];
      const StepRange h = steps_inside(win.origin[1], g.dilation[1], g.in[1], g.window[1]);
      win.lo[1] = h.lo, win.hi[1] = h.hi;
      rows.update(g, win);
      const bool any_tap = win.real_taps() > 0;
      const float divisor = g.exclude_padding ? float(win.real_taps()) : padded_divisor;
      const int64_t window = win.origin[0] * g.x.spatial[0] + win.origin[1] * g.x.spatial[1] + first_w;
      float* out = y_plane + od * g.y.spatial[0] + oh * g.y.spatial[1] + first;
      // The last pair's second load ends 2 * count floats after the last row's last tap.
      const bool whole_pairs =
          rows.count == 0 || window + rows.offset[rows.count - 1] + (taps_w - 1) * dilation_w + 2 * count <= plane_size;
      nchw_row<F, Max, Stride>(plane, window, rows, taps_w, dilation_w, whole_pairs, any_tap, divisor, count, out);
    }
  }
  F::leave();
}

template <typename F>
void run_pool_nchw_interior(const PoolGeometry& g, PoolOp op, const float* plane, int64_t first, int64_t count,
                            float* y_plane) {
  const bool max = op == PoolOp::Max;
  if (g.stride[2] == 1) {
    (max ? nchw_interior<F, true, 1> : nchw_interior<F, false, 1>)(g, plane, first, count, y_plane);
  } else {
    (max ? nchw_interior<F, true, 2> : nchw_interior<F, false, 2>)(g, plane, first, count, y_plane);
  }
}

}  // namespace
}  // namespace convjit::detail
