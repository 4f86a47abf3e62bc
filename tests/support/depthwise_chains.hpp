// The numbers contract of depthwise backward data, in float, for the internal suites of the
// kernels that keep it (lib/driver/depthwise_backward_data_phases, the NCHW kernel at W stride 2):
// each dx element is std::fma over the dy elements that reach it, outputs in order (D, H, W),
// from 0.0f. Written from the definition of convolution, independently of lib/.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "geometry.hpp"

namespace convjit::testing {

// g depthwise, either layout (its strides say where each element lies).
inline std::vector<float> depthwise_chains_in_dy_order(const detail::ConvGeometry& g, const float* dy, const float* w) {
  std::vector<float> dx(size_t(g.batch * g.x.batch));
  auto tap_reaching = [&](int d, int64_t i, int64_t o) {  // kernel position, or -1
    const int64_t span = i + g.pad_begin[d] - o * g.stride[d];
    if (span < 0 || span % g.dilation[d] != 0 || span / g.dilation[d] >= g.kernel[d]) return int64_t(-1);
    const int64_t k = span / g.dilation[d];
    return g.flip ? g.kernel[d] - 1 - k : k;
  };
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.groups; ++c) {
      for (int64_t id = 0; id < g.in[0]; ++id) {
        for (int64_t ih = 0; ih < g.in[1]; ++ih) {
          for (int64_t iw = 0; iw < g.in[2]; ++iw) {
            float acc = 0.0f;
            for (int64_t od = 0; od < g.out[0]; ++od) {
              const int64_t kd = tap_reaching(0, id, od);
              for (int64_t oh = 0; kd >= 0 && oh < g.out[1]; ++oh) {
                const int64_t kh = tap_reaching(1, ih, oh);
                for (int64_t ow = 0; kh >= 0 && ow < g.out[2]; ++ow) {
                  const int64_t kw = tap_reaching(2, iw, ow);
                  if (kw < 0) continue;
                  const float wv = w[c * g.taps + (kd * g.kernel[1] + kh) * g.kernel[2] + kw];
                  acc = std::fma(wv,
                                 dy[n * g.y.batch + c * g.y.channel + od * g.y.spatial[0] + oh * g.y.spatial[1] +
                                    ow * g.y.spatial[2]],
                                 acc);
                }
              }
            }
            dx[size_t(n * g.x.batch + c * g.x.channel + id * g.x.spatial[0] + ih * g.x.spatial[1] +
                      iw * g.x.spatial[2])] = acc;
          }
        }
      }
    }
  }
  return dx;
}

}  // namespace convjit::testing
