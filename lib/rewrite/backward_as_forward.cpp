#include "backward_as_forward.hpp"

namespace convjit::detail {

bool backward_data_as_forward(const ConvGeometry& g, const convjit_conv_params& p, convjit_conv_params* forward) {
  if (g.out_channels * g.reduction > kMaxTransposedWeights) return false;
  convjit_conv_params f = p;
  for (int d = 0; d < p.rank; ++d) {
    const int64_t halo = p.dilation[d] * (p.kernel[d] - 1);
    if (p.stride[d] != 1 || p.pad_begin[d] > halo || p.pad_end[d] > halo) return false;
    f.in_size[d] = g.out[d + 3 - p.rank];
    f.pad_begin[d] = halo - p.pad_begin[d];
    f.pad_end[d] = halo - p.pad_end[d];
  }
  f.in_channels = p.out_channels;
  f.out_channels = p.in_channels;
  f.mode = p.mode == CONVJIT_CONVOLUTION ? CONVJIT_CROSS_CORRELATION : CONVJIT_CONVOLUTION;
  *forward = f;
  return true;
}

void transpose_weights(const ConvGeometry& g, const float* w, float* w_t) {
  // w: [group][oc][k] with k = (ic, tap) or (tap, ic); w_t: [group][ic][k'] with k' = (oc, tap)
  // or (tap, oc). Taps keep their index: the flip comes from the mode.
  const int64_t icg = g.ic_per_group, ocg = g.oc_per_group, taps = g.taps;
  const bool nchw = g.layout == CONVJIT_NCHW;
  for (int64_t group = 0; group < g.groups; ++group) {
    const float* src = w + group * ocg * g.reduction;
    float* dst = w_t + group * icg * ocg * taps;
    for (int64_t oc = 0; oc < ocg; ++oc) {
      for (int64_t ic = 0; ic < icg; ++ic) {
        for (int64_t t = 0; t < taps; ++t) {
          const float v = src[oc * g.reduction + (nchw ? ic * taps + t : t * icg + ic)];
          dst[ic * ocg * taps + (nchw ? oc * taps + t : t * ocg + oc)] = v;
        }
      }
    }
  }
}

}  // namespace convjit::detail
