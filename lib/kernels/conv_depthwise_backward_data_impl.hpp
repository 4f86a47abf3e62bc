// conv_depthwise_backward_data.hpp's kernel over a vector type F (simd_avx2.hpp, simd_avx512.hpp).
// Include only from files compiled for F's ISA; everything here has internal linkage.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "conv_depthwise_backward_data.hpp"
#include "conv_depthwise_nhwc.hpp"
#include "patch_pack.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

// Channels an NHWC task owns: dx of different channels never meet, so tasks need no order.
constexpr int64_t kDepthwiseBackwardChannels = 64;

// dx[pixel][c0, c1) += w_tap * dy[pixel'][c0, c1) for one tap and one output pixel.
template <typename F>
inline __attribute__((always_inline)) void add_contribution(const float* w_tap, const float* dy_pixel, float* dx_pixel,
                                                            int64_t c0, int64_t c1) {
  int64_t c = c0;
  for (; c + F::kLanes <= c1; c += F::kLanes) {
    const typename F::Vec product = F::fma(F::load(w_tap + c), F::load(dy_pixel + c), F::zero());
    F::store(dx_pixel + c, F::add(F::load(dx_pixel + c), product));
  }
  if (c < c1) {
    const typename F::Mask lanes = F::first_lanes(c1 - c);
    const typename F::Vec product = F::fma(F::load(w_tap + c, lanes), F::load(dy_pixel + c, lanes), F::zero());
    F::store(dx_pixel + c, F::add(F::load(dx_pixel + c, lanes), product), lanes);
  }
}

template <typename F>
void run_depthwise_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w_taps,
                                 int64_t ow_tile, float* dx) {
  const int64_t blocks = (g.groups + kDepthwiseBackwardChannels - 1) / kDepthwiseBackwardChannels;
  const int64_t in_pixels = g.in[0] * g.in[1] * g.in[2];
  parallel_for(
      threads, g.batch * blocks, 2.0 * double(g.batch) * double(g.x.batch) * double(g.taps), [&](int64_t task) {
        const int64_t n = task / blocks, c0 = task % blocks * kDepthwiseBackwardChannels;
        const int64_t c1 = std::min(g.groups, c0 + kDepthwiseBackwardChannels);
        float* dx_image = dx + n * g.x.batch;
        const float* dy_image = dy + n * g.y.batch;
        for (int64_t p = 0; p < in_pixels; ++p) {
          std::memset(dx_image + p * g.x.spatial[2] + c0, 0, sizeof(float) * size_t(c1 - c0));
        }
        for (int64_t od = 0; od < g.out[0]; ++od) {
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            for (int64_t ow0 = 0; ow0 < g.out[2]; ow0 += ow_tile) {
              const int64_t owc = std::min(ow_tile, g.out[2] - ow0);
              WeightCursor at(g, 0);
              for (int64_t k = 0; k < g.taps; ++k, at.advance()) {
                const int64_t id = input_coordinate(g, 0, od, at.kd), ih = input_coordinate(g, 1, oh, at.kh);
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) continue;
                const int64_t first_iw = input_coordinate(g, 2, ow0, at.kw);
                const StepRange inside = steps_inside(first_iw, g.stride[2], g.in[2], owc);
                for (int64_t ow = ow0 + inside.lo; ow < ow0 + inside.hi; ++ow) {
                  const int64_t iw = first_iw + (ow - ow0) * g.stride[2];
                  add_contribution<F>(
                      w_taps + k * g.groups, dy_image + od * g.y.spatial[0] + oh * g.y.spatial[1] + ow * g.y.spatial[2],
                      dx_image + id * g.x.spatial[0] + ih * g.x.spatial[1] + iw * g.x.spatial[2], c0, c1);
                }
              }
            }
          }
        }
        F::leave();
      });
}

}  // namespace
}  // namespace convjit::detail
