#include "conv_depthwise_nhwc.hpp"

#include <vector>

namespace convjit::detail {

bool depthwise_nhwc_fits(const ConvGeometry& g) {
  return g.layout == CONVJIT_NHWC && g.ic_per_group == 1 && g.oc_per_group == 1 && g.taps <= kDepthwiseNhwcMaxTaps;
}

// Once per call: per row they cost a third of depthwise_3x3's time. (A lambda names a
// thread_local as the running thread's own: the workers get the pointer.)
const float* depthwise_nhwc_taps_major(const ConvGeometry& g, const float* w) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < size_t(g.taps * g.groups)) buffer.resize(size_t(g.taps * g.groups));
  float* wt = buffer.data();
  for (int64_t c = 0; c < g.groups; ++c) {
    for (int64_t t = 0; t < g.taps; ++t) wt[t * g.groups + c] = w[c * g.taps + t];
  }
  return wt;
}

}  // namespace convjit::detail
