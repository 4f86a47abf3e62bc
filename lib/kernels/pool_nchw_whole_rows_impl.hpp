// pool_nchw_whole_rows.hpp's kernel over a vector type F (simd_avx2.hpp, simd_avx512.hpp).
// Include only from files compiled for F's ISA; internal linkage (lib/README.md, "One kernel,
// several ISAs").
#pragma once

#include <cstdint>
#include <cstring>

#include "pool_nchw_whole_rows.hpp"
#include "pool_window.hpp"

namespace convjit::detail {
namespace {

// Windows of whole input rows along W, never overlapping along D and H (each dx element gets at
// most one share: written, not added to what the plane holds).
inline bool whole_rows_fit(const PoolGeometry& g, PoolOp op) {
  if (g.layout != Layout::NCHW || op != PoolOp::Mean) return false;
  if (g.window[2] != g.in[2] || g.pad_begin[2] != 0 || g.dilation[2] != 1 || g.out[2] != 1) return false;
  for (int d = 0; d < 2; ++d) {
    if (g.stride[d] < (g.window[d] - 1) * g.dilation[d] + 1) return false;
  }
  return true;
}

// Whether the windows cover every input element (they tile the plane: no padding, stride =
// window, the outputs reach the end of each dim): nothing is left to zero.
inline bool windows_cover_plane(const PoolGeometry& g) {
  for (int d = 0; d < 3; ++d) {
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
  int64_t o[3];
  for (o[0] = 0; o[0] < g.out[0]; ++o[0]) {
    for (o[1] = 0; o[1] < g.out[1]; ++o[1]) {
      for (o[2] = 0; o[2] < g.out[2]; ++o[2]) {
        const Window win = clip_window(g, o);
        if (win.real_taps() == 0) continue;
        const float divisor = g.exclude_padding ? float(win.real_taps()) : padded_divisor;
        const int64_t step_d = g.dilation[0] * g.x.spatial[0], step_h = g.dilation[1] * g.x.spatial[1];
        const int64_t first_tap = (win.origin[0] + win.lo[0] * g.dilation[0]) * g.x.spatial[0] +
                                  (win.origin[1] + win.lo[1] * g.dilation[1]) * g.x.spatial[1] + win.origin[2] +
                                  win.lo[2];
        int64_t rows_d = win.hi[0] - win.lo[0], rows_h = win.hi[1] - win.lo[1], run = g.in[2];
        if (step_h == g.in[2]) {  // consecutive rows: one run
          run *= rows_h;
          rows_h = 1;
        }
        const int64_t y_offset = o[0] * g.y.spatial[0] + o[1] * g.y.spatial[1] + o[2] * g.y.spatial[2];
        int64_t n = first_plane / channels, c = first_plane % channels;
        for (int64_t plane = first_plane; plane < end_plane; ++plane) {
          float* window = dx + n * x_batch + c * x_channel + first_tap;
          const typename F::Vec share = F::add(zero, F::set1(dy[n * y_batch + c * y_channel + y_offset] / divisor));
          for (int64_t a = 0; a < rows_d; ++a) {
            for (int64_t b = 0; b < rows_h; ++b) fill_run<F>(window + a * step_d + b * step_h, run, share);
          }
          if (++c == channels) {
            c = 0;
            ++n;
          }
        }
      }
    }
  }
  F::leave();
}

}  // namespace
}  // namespace convjit::detail
