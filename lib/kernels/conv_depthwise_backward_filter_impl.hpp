// conv_depthwise_backward_filter.hpp's kernel over a vector type F (simd_avx2.hpp,
// simd_avx512.hpp). Include only from files compiled for F's ISA; everything here has internal
// linkage.
#pragma once

#include <algorithm>
#include <cstdint>

#include "conv_depthwise_backward_filter.hpp"
#include "patch_pack.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

// One vector of channels [c, c + kLanes) (the last one's lanes `lanes`): every tap's chain over
// every output pixel of every image, then dw[channel][tap].
template <typename F, int Taps>
void depthwise_filter_channels(const ConvGeometry& g, const float* x, const float* dy, float* dw, int64_t c,
                               typename F::Mask lanes, bool full) {
  typename F::Vec acc[Taps];
  for (int t = 0; t < Taps; ++t) acc[t] = F::zero();
  auto load = [&](const float* p) { return full ? F::load(p) : F::load(p, lanes); };
  int64_t tap_d[Taps], tap_h[Taps], tap_w[Taps], tap_offset[Taps];
  {
    WeightCursor at(g, 0);
    for (int t = 0; t < Taps; ++t, at.advance()) {
      tap_d[t] = at.kd;
      tap_h[t] = at.kh;
      tap_w[t] = at.kw;
      // From the input element of output pixel (0, 0, 0)'s first tap (unflipped coordinates).
      tap_offset[t] = (input_coordinate(g, 0, 0, at.kd) - input_coordinate(g, 0, 0, 0)) * g.x.spatial[0] +
                      (input_coordinate(g, 1, 0, at.kh) - input_coordinate(g, 1, 0, 0)) * g.x.spatial[1] +
                      (input_coordinate(g, 2, 0, at.kw) - input_coordinate(g, 2, 0, 0)) * g.x.spatial[2];
    }
  }
  // Output pixels along W whose every tap is real (the same for every row).
  int64_t w_lo = 0, w_hi = g.out[2];
  for (int t = 0; t < Taps; ++t) {
    while (w_lo < w_hi && input_coordinate(g, 2, w_lo, tap_w[t]) < 0) ++w_lo;
    while (w_hi > w_lo && input_coordinate(g, 2, w_hi - 1, tap_w[t]) >= g.in[2]) --w_hi;
  }
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* x_image = x + n * g.x.batch + c;
    const float* dy_image = dy + n * g.y.batch + c;
    for (int64_t od = 0; od < g.out[0]; ++od) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        bool rows_real = true;  // every tap's D and H coordinates inside the input
        for (int t = 0; t < Taps; ++t) {
          const int64_t id = input_coordinate(g, 0, od, tap_d[t]), ih = input_coordinate(g, 1, oh, tap_h[t]);
          rows_real &= id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1];
        }
        const float* dy_row = dy_image + od * g.y.spatial[0] + oh * g.y.spatial[1];
        auto checked_pixel = [&](int64_t ow) {
          const typename F::Vec grad = load(dy_row + ow * g.y.spatial[2]);
#pragma GCC unroll 16
          for (int t = 0; t < Taps; ++t) {
            const int64_t id = input_coordinate(g, 0, od, tap_d[t]), ih = input_coordinate(g, 1, oh, tap_h[t]),
                          iw = input_coordinate(g, 2, ow, tap_w[t]);
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
            acc[t] =
                F::fma(grad, load(x_image + id * g.x.spatial[0] + ih * g.x.spatial[1] + iw * g.x.spatial[2]), acc[t]);
          }
        };
        if (!rows_real) {
          for (int64_t ow = 0; ow < g.out[2]; ++ow) checked_pixel(ow);
          continue;
        }
        for (int64_t ow = 0; ow < w_lo; ++ow) checked_pixel(ow);
        // Inside: every tap real, at a fixed offset from the pixel's first tap.
        const float* first_tap =
            x_image + input_coordinate(g, 0, od, 0) * g.x.spatial[0] + input_coordinate(g, 1, oh, 0) * g.x.spatial[1];
        for (int64_t ow = w_lo; ow < w_hi; ++ow) {
          const typename F::Vec grad = load(dy_row + ow * g.y.spatial[2]);
          const float* origin = first_tap + input_coordinate(g, 2, ow, 0) * g.x.spatial[2];
#pragma GCC unroll 16
          for (int t = 0; t < Taps; ++t) acc[t] = F::fma(grad, load(origin + tap_offset[t]), acc[t]);
        }
        for (int64_t ow = std::max(w_lo, w_hi); ow < g.out[2]; ++ow) checked_pixel(ow);
      }
    }
  }
  alignas(64) float lanes_out[F::kLanes];
  const int64_t count = std::min<int64_t>(F::kLanes, g.groups - c);
  for (int t = 0; t < Taps; ++t) {
    F::store(lanes_out, acc[t]);
    for (int64_t l = 0; l < count; ++l) dw[(c + l) * g.taps + t] = lanes_out[l];
  }
}

template <typename F, int Taps>
void depthwise_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  const int64_t vectors = (g.groups + F::kLanes - 1) / F::kLanes;
  parallel_for(threads, vectors, g.flops(), [&](int64_t v) {
    const int64_t c = v * F::kLanes;
    const bool full = c + F::kLanes <= g.groups;
    depthwise_filter_channels<F, Taps>(g, x, dy, dw, c, F::first_lanes(g.groups - c), full);
    F::leave();
  });
}

template <typename F>
void run_depthwise_backward_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  switch (g.taps) {
    case 1: return depthwise_filter<F, 1>(g, threads, x, dy, dw);
    case 2: return depthwise_filter<F, 2>(g, threads, x, dy, dw);
    case 3: return depthwise_filter<F, 3>(g, threads, x, dy, dw);
    case 4: return depthwise_filter<F, 4>(g, threads, x, dy, dw);
    case 5: return depthwise_filter<F, 5>(g, threads, x, dy, dw);
    case 6: return depthwise_filter<F, 6>(g, threads, x, dy, dw);
    case 7: return depthwise_filter<F, 7>(g, threads, x, dy, dw);
    case 8: return depthwise_filter<F, 8>(g, threads, x, dy, dw);
    case 9: return depthwise_filter<F, 9>(g, threads, x, dy, dw);
    case 10: return depthwise_filter<F, 10>(g, threads, x, dy, dw);
    case 11: return depthwise_filter<F, 11>(g, threads, x, dy, dw);
    case 12: return depthwise_filter<F, 12>(g, threads, x, dy, dw);
    case 13: return depthwise_filter<F, 13>(g, threads, x, dy, dw);
    case 14: return depthwise_filter<F, 14>(g, threads, x, dy, dw);
    case 15: return depthwise_filter<F, 15>(g, threads, x, dy, dw);
    default: return depthwise_filter<F, 16>(g, threads, x, dy, dw);
  }
}

}  // namespace
}  // namespace convjit::detail
