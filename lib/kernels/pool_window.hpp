// A pooling output's window clipped to the real input, and its taps in row-major order: the
// order every pooling kernel visits them in (the results' numbers depend on it). Internal
// linkage: included by the driver and by the ISA-specific kernels (lib/README.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "geometry.hpp"
#include "steps.hpp"

namespace convjit::detail {
namespace {

// NHWC tasks walk this many channels of an image: each output pixel's window is clipped once for
// all of them.
constexpr int64_t kNhwcPoolChannelBlock = 64;

// The window's taps, padding included, as a float (mean pooling's divisor). In double: a window
// reaching far into huge padding may have more taps than int64 holds.
inline float window_taps(const PoolGeometry& g) {
  return float(double(g.window[0]) * double(g.window[1]) * double(g.window[2]));
}

// The outputs whose windows lie wholly inside the input (every tap real), a box.
inline OutputBox interior_outputs(const PoolGeometry& g) {
  OutputBox box;
  for (int d = 0; d < 3; ++d) {
    // o * stride - pad >= 0, and o * stride - pad + (window - 1) * dilation <= in - 1 (each term
    // fits int64: validated).
    const int64_t last_origin = g.in[d] - 1 - (g.window[d] - 1) * g.dilation[d] + g.pad_begin[d];
    box.lo[d] = std::min(g.out[d], ceil_div(g.pad_begin[d], g.stride[d]));
    box.hi[d] = last_origin < 0 ? box.lo[d] : std::clamp(last_origin / g.stride[d] + 1, box.lo[d], g.out[d]);
  }
  return box;
}
inline bool is_empty(const OutputBox& box) {
  return box.lo[0] >= box.hi[0] || box.lo[1] >= box.hi[1] || box.lo[2] >= box.hi[2];
}

// Where the run of output row (od, oh) from box.lo[2] starts in image n at channel c (elements):
// its first window's tap (0, 0, 0) in x (and dx), its first output in y (and dy). A compiled row's
// pointers.
struct RunStart {
  int64_t window, output;
};
inline RunStart run_start(const PoolGeometry& g, const OutputBox& box, int64_t n, int64_t od, int64_t oh, int64_t c) {
  const int64_t ow = box.lo[2];
  return {n * g.x.batch + (od * g.stride[0] - g.pad_begin[0]) * g.x.spatial[0] +
              (oh * g.stride[1] - g.pad_begin[1]) * g.x.spatial[1] +
              (ow * g.stride[2] - g.pad_begin[2]) * g.x.spatial[2] + c,
          n * g.y.batch + od * g.y.spatial[0] + oh * g.y.spatial[1] + ow * g.y.spatial[2] + c};
}

// Zeroes channels [c0, c1) of the NHWC pixels [first, end) of an image (one run when [c0, c1) is
// every channel).
inline void zero_nhwc_pixels(float* image, int64_t channels, int64_t first, int64_t end, int64_t c0, int64_t c1) {
  if (c1 - c0 == channels) {
    std::memset(image + first * channels, 0, sizeof(float) * size_t((end - first) * channels));
    return;
  }
  for (int64_t q = first; q < end; ++q) std::fill(image + q * channels + c0, image + q * channels + c1, 0.0f);
}

// The real taps of one output pixel: index t of dim d is real for t in [lo[d], hi[d]).
struct Window {
  int64_t origin[3];  // input coordinate of tap 0
  int64_t lo[3], hi[3];
  int64_t real_taps() const { return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }
};

inline Window clip_window(const PoolGeometry& g, const int64_t o[3]) {
  Window win;
  for (int d = 0; d < 3; ++d) {
    win.origin[d] = o[d] * g.stride[d] - g.pad_begin[d];
    const StepRange inside = steps_inside(win.origin[d], g.dilation[d], g.in[d], g.window[d]);
    win.lo[d] = inside.lo;
    win.hi[d] = inside.hi;
  }
  return win;
}

// Calls tap(offset of the tap's element in the image's first channel) in row-major order.
template <typename Tap>
inline void for_each_tap(const PoolGeometry& g, const Window& win, Tap&& tap) {
  for (int64_t a = win.lo[0]; a < win.hi[0]; ++a) {
    const int64_t plane = (win.origin[0] + a * g.dilation[0]) * g.x.spatial[0];
    for (int64_t b = win.lo[1]; b < win.hi[1]; ++b) {
      const int64_t row = plane + (win.origin[1] + b * g.dilation[1]) * g.x.spatial[1];
      for (int64_t c = win.lo[2]; c < win.hi[2]; ++c) tap(row + (win.origin[2] + c * g.dilation[2]) * g.x.spatial[2]);
    }
  }
}

// Calls pixel(y offset of the pixel's first channel, its window) for every output pixel of one
// image, in output order, but those in `skip` (when given: what a compiled kernel computes);
// skipped(od, oh) where a row's skipped run would have been, in that order; row(od, oh) before
// each output row.
struct NoRowCall {
  void operator()(int64_t, int64_t) const {}
};
template <typename Pixel, typename Skipped = NoRowCall, typename Row = NoRowCall>
inline void for_each_output_pixel(const PoolGeometry& g, int64_t n, const OutputBox* skip, Pixel&& pixel,
                                  Skipped&& skipped = {}, Row&& row = {}) {
  int64_t o[3];
  for (o[0] = 0; o[0] < g.out[0]; ++o[0]) {
    for (o[1] = 0; o[1] < g.out[1]; ++o[1]) {
      row(o[0], o[1]);
      const bool skips_in_row = skip && skip->lo[0] <= o[0] && o[0] < skip->hi[0] && skip->lo[1] <= o[1] &&
                                o[1] < skip->hi[1] && skip->lo[2] < skip->hi[2];
      for (o[2] = 0; o[2] < g.out[2]; ++o[2]) {
        if (skips_in_row && o[2] == skip->lo[2]) {
          skipped(o[0], o[1]);
          o[2] = skip->hi[2];
        }
        if (o[2] == g.out[2]) break;
        pixel(n * g.y.batch + o[0] * g.y.spatial[0] + o[1] * g.y.spatial[1] + o[2] * g.y.spatial[2], clip_window(g, o));
      }
    }
  }
}

}  // namespace
}  // namespace convjit::detail
