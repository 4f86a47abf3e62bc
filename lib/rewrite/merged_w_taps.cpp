#include "merged_w_taps.hpp"

namespace convjit::detail {

bool backward_filter_merges_w_taps(const ConvGeometry& g) {
  // The last output's last tap along W: stride * (out - 1) + kernel - 1 fits, as a real input of
  // a valid problem does where pad_begin is 0.
  return g.layout == CONVJIT_NHWC && g.groups == 1 && !g.flip && g.ic_per_group < kMergedWTapsBelowChannels &&
         g.kernel[2] > 1 && g.dilation[2] == 1 && g.pad_begin[2] == 0 &&
         (g.out[2] - 1) * g.stride[2] + g.kernel[2] - 1 <= g.in[2] - 1;
}

ConvGeometry with_w_taps_merged(const ConvGeometry& g) {
  ConvGeometry m = g;
  m.in_channels = m.ic_per_group = g.kernel[2] * g.ic_per_group;
  m.in[2] = g.in[2] - (g.kernel[2] - 1);  // where a run of kernel[2] pixels starts
  m.kernel[2] = 1;
  m.taps = g.kernel[0] * g.kernel[1];
  return m;  // x's strides stay: a run starts at every pixel, and reaches into the next ones
}

}  // namespace convjit::detail
