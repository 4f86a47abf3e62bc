// pool_nchw_whole_rows.hpp's kernel over a vector type F (simd_avx2.hpp, simd_avx512.hpp).
// Include only from files compiled for F's ISA; internal linkage (lib/README.md, "One kernel,
// several ISAs").
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "pool_lanes.hpp"
#include "pool_nchw_whole_rows.hpp"
#include "pool_window.hpp"

namespace convjit::detail {
namespace {

// Windows of whole input rows along W: the window is the row, no padding there, one output.
inline bool whole_rows_fit(const PoolGeometry& g) {
  return g.layout == Layout::NCHW && g.window[2] == g.in[2] && g.pad_begin[2] == 0 && g.dilation[2] == 1 &&
         g.out[2] == 1;
}

// Backward also needs windows that never overlap along D and H (each dx element gets at most one
// share: written, not added to what the plane holds); one window along a dim overlaps none.
// (window - 1) * dilation fits int64: validated.
inline bool windows_never_overlap(const PoolGeometry& g) {
  for (int d = 0; d < 2; ++d) {
    if (g.out[d] > 1 && g.stride[d] <= (g.window[d] - 1) * g.dilation[d]) return false;
  }
  return true;
}

// A window's real taps as runs of consecutive floats: rows_d x rows_h runs of `run` floats from
// first_tap, step_d and step_h apart; H rows that follow each other are one run. For a window with
// a real tap only: its first real coordinates, and a step only where two real rows make it
// smaller than the plane (a dilation of any size times x's strides need not fit int64).
struct WindowRuns {
  int64_t first_tap, rows_d, rows_h, run, step_d, step_h;
};
inline WindowRuns window_runs(const PoolGeometry& g, const Window& win) {
  WindowRuns r;
  r.rows_d = win.hi[0] - win.lo[0];
  r.rows_h = win.hi[1] - win.lo[1];
  r.step_d = r.rows_d > 1 ? g.dilation[0] * g.x.spatial[0] : 0;
  r.step_h = r.rows_h > 1 ? g.dilation[1] * g.x.spatial[1] : 0;
  r.first_tap = (win.origin[0] + win.lo[0] * g.dilation[0]) * g.x.spatial[0] +
                (win.origin[1] + win.lo[1] * g.dilation[1]) * g.x.spatial[1];
  r.run = g.in[2];
  if (r.rows_h > 1 && r.step_h == g.in[2]) {
    r.run *= r.rows_h;
    r.rows_h = 1;
  }
  return r;
}

// Forward, kLanes planes at a time with the planes in the lanes: each tile of kLanes taps of their
// runs is transposed in registers, and its taps go into the outputs in window order (pool_lanes.hpp:
// the scalar path's operations lane by lane).
template <typename F, bool Max>
void whole_rows_forward(const PoolGeometry& g, const float* x, float* y, int64_t first_plane, int64_t end_plane) {
  constexpr int kLanes = F::kLanes;
  const float padded_divisor = window_taps(g);
  int64_t n = first_plane / g.channels, c = first_plane % g.channels;
  for (int64_t p0 = first_plane; p0 < end_plane; p0 += kLanes) {
    const int64_t planes = std::min<int64_t>(kLanes, end_plane - p0);
    const float* x_planes[kLanes];
    float* y_planes[kLanes];
    for (int64_t i = 0; i < planes; ++i) {
      x_planes[i] = x + n * g.x.batch + c * g.x.channel;
      y_planes[i] = y + n * g.y.batch + c * g.y.channel;
      if (++c == g.channels) {
        c = 0;
        ++n;
      }
    }
    int64_t o[3] = {0, 0, 0};
    for (o[0] = 0; o[0] < g.out[0]; ++o[0]) {
      for (o[1] = 0; o[1] < g.out[1]; ++o[1]) {
        const Window win = clip_window(g, o);
        const bool any_tap = win.real_taps() > 0;
        const WindowRuns runs = any_tap ? window_runs(g, win) : WindowRuns{};
        PoolLanes<F, Max> lanes;
        for (int64_t a = 0; a < runs.rows_d; ++a) {
          for (int64_t b = 0; b < runs.rows_h; ++b) {
            const int64_t offset = runs.first_tap + a * runs.step_d + b * runs.step_h;
            for (int64_t t = 0; t < runs.run; t += kLanes) {
              const int64_t count = std::min<int64_t>(kLanes, runs.run - t);
              typename F::Vec tile[kLanes];
              if (planes == kLanes && count == kLanes) {  // the common case: unmasked, unrolled
#pragma GCC unroll 16
                for (int i = 0; i < kLanes; ++i) tile[i] = F::load(x_planes[i] + offset + t);
                F::transpose(tile);
#pragma GCC unroll 16
                for (int j = 0; j < kLanes; ++j) lanes.add(tile[j]);
                continue;
              }
              const typename F::Mask taps = F::first_lanes(count);
#pragma GCC unroll 16
              for (int i = 0; i < kLanes; ++i)
                tile[i] = i < planes ? F::load(x_planes[i] + offset + t, taps) : F::zero();
              F::transpose(tile);
              for (int64_t j = 0; j < count; ++j) lanes.add(tile[j]);
            }
          }
        }
        const float divisor = g.exclude_padding ? float(win.real_taps()) : padded_divisor;
        alignas(64) float out[kLanes];
        F::store(out, lanes.result(any_tap, divisor));
        const int64_t y_offset = o[0] * g.y.spatial[0] + o[1] * g.y.spatial[1];
        for (int64_t i = 0; i < planes; ++i) y_planes[i][y_offset] = out[i];
      }
    }
  }
  F::leave();
}

template <typename F>
void run_whole_rows_forward(const PoolGeometry& g, PoolOp op, const float* x, float* y, int64_t first_plane,
                            int64_t end_plane) {
  if (op == PoolOp::Max) return whole_rows_forward<F, true>(g, x, y, first_plane, end_plane);
  whole_rows_forward<F, false>(g, x, y, first_plane, end_plane);
}

// Whether the windows cover every input element (along W they are the rows; along D and H they
// tile the plane: no padding, stride = window, the outputs reach the end): nothing to zero.
inline bool windows_cover_plane(const PoolGeometry& g) {
  for (int d = 0; d < 2; ++d) {
    if (g.pad_begin[d] != 0 || g.stride[d] != g.window[d] || g.dilation[d] != 1 || g.out[d] * g.stride[d] != g.in[d])
      return false;
  }
  return true;
}

// `count` floats from `at` set to v: whole vectors, then one masked store for the rest.
template <typename F>
inline __attribute__((always_inline)) void fill_run(float* at, int64_t count, typename F::Vec v) {
  int64_t t = 0;
  for (; t + F::kLanes < count; t += F::kLanes) F::store(at + t, v);
  F::store(at + t, v, F::first_lanes(count - t));
}

// The planes zeroed where the windows leave elements uncovered (consecutive in dx: one run), then
// output by output (each window clipped once for every plane), each plane's window gets 0 + share
// in each real tap (+0 + -0 is +0): one run for the window's consecutive rows (global pooling: a
// plane in one run), or a run per row where H is dilated.
template <typename F>
void run_mean_backward_whole_rows(const PoolGeometry& g, const float* dy, float* dx, int64_t first_plane,
                                  int64_t end_plane) {
  const int64_t plane_floats = g.in[0] * g.in[1] * g.in[2], channels = g.channels;
  const int64_t x_batch = g.x.batch, x_channel = g.x.channel, y_batch = g.y.batch, y_channel = g.y.channel;
  if (!windows_cover_plane(g)) {
    std::memset(dx + first_plane * plane_floats, 0, sizeof(float) * size_t((end_plane - first_plane) * plane_floats));
  }
  const float padded_divisor = window_taps(g);
  const typename F::Vec zero = F::zero();
  int64_t o[3] = {0, 0, 0};
  for (o[0] = 0; o[0] < g.out[0]; ++o[0]) {
    for (o[1] = 0; o[1] < g.out[1]; ++o[1]) {
      const Window win = clip_window(g, o);
      if (win.real_taps() == 0) continue;
      const float divisor = g.exclude_padding ? float(win.real_taps()) : padded_divisor;
      const WindowRuns runs = window_runs(g, win);
      const int64_t y_offset = o[0] * g.y.spatial[0] + o[1] * g.y.spatial[1];
      int64_t n = first_plane / channels, c = first_plane % channels;
      for (int64_t plane = first_plane; plane < end_plane; ++plane) {
        float* window = dx + n * x_batch + c * x_channel + runs.first_tap;
        const typename F::Vec share = F::add(zero, F::set1(dy[n * y_batch + c * y_channel + y_offset] / divisor));
        for (int64_t a = 0; a < runs.rows_d; ++a) {
          for (int64_t b = 0; b < runs.rows_h; ++b) {
            fill_run<F>(window + a * runs.step_d + b * runs.step_h, runs.run, share);
          }
        }
        if (++c == channels) {
          c = 0;
          ++n;
        }
      }
    }
  }
  F::leave();
}

}  // namespace
}  // namespace convjit::detail
