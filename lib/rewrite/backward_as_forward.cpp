#include "backward_as_forward.hpp"

#include <algorithm>

#include "threads.hpp"
#include "transpose.hpp"

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
  for (int64_t group = 0; group < g.groups; ++group) {
    const float* src = w + group * ocg * g.reduction;
    float* dst = w_t + group * icg * ocg * taps;
    if (g.layout == CONVJIT_NHWC || taps == 1) {  // per tap an [oc][ic] -> [ic][oc] transpose
      for (int64_t t = 0; t < taps; ++t) {
        transpose_matrix(ocg, icg, {src + t * icg, g.reduction}, {dst + t * ocg, ocg * taps});
      }
      continue;
    }
    // NCHW: runs of taps, contiguous on both sides.
    for (int64_t oc = 0; oc < ocg; ++oc) {
      for (int64_t ic = 0; ic < icg; ++ic) {
        for (int64_t t = 0; t < taps; ++t) dst[ic * ocg * taps + oc * taps + t] = src[oc * g.reduction + ic * taps + t];
      }
    }
  }
}

bool strided_pointwise_backward_data_as_forward(const ConvGeometry& g, const convjit_conv_params& p,
                                                convjit_conv_params* forward) {
  if (g.taps != 1 || g.out_channels * g.reduction > kMaxTransposedWeights) return false;
  bool strided = false;
  for (int d = 0; d < p.rank; ++d) strided |= p.stride[d] > 1;
  if (!strided) return false;
  convjit_conv_params f = p;
  for (int d = 0; d < p.rank; ++d) {
    f.in_size[d] = g.out[d + 3 - p.rank];
    f.stride[d] = f.dilation[d] = 1;
    f.pad_begin[d] = f.pad_end[d] = 0;
  }
  f.in_channels = p.out_channels;
  f.out_channels = p.in_channels;
  *forward = f;
  return true;
}

void spread_strided_pointwise(const ConvGeometry& g, const float* grid, float* dx, int threads) {
  // The grid is the forward's output: g's output pixels, g's input channels, in g's layout.
  const bool nchw = g.layout == CONVJIT_NCHW;
  const int64_t out_pixels = g.out_pixels(), grid_image = g.in_channels * out_pixels;
  parallel_for(threads, g.batch, double(g.batch) * double(g.x.batch), [&](int64_t n) {
    float* dx_image = dx + n * g.x.batch;
    std::fill(dx_image, dx_image + g.x.batch, 0.0f);
    const float* grid_image_start = grid + n * grid_image;
    int64_t o[3];
    for (o[0] = 0; o[0] < g.out[0]; ++o[0]) {
      for (o[1] = 0; o[1] < g.out[1]; ++o[1]) {
        for (o[2] = 0; o[2] < g.out[2]; ++o[2]) {
          int64_t i[3];
          bool inside = true;
          for (int d = 0; d < 3; ++d) {
            i[d] = o[d] * g.stride[d] - g.pad_begin[d];
            inside &= i[d] >= 0 && i[d] < g.in[d];
          }
          if (!inside) continue;  // the offset only then: huge padding times a stride would overflow
          const int64_t at = i[0] * g.x.spatial[0] + i[1] * g.x.spatial[1] + i[2] * g.x.spatial[2];
          const int64_t pixel = (o[0] * g.out[1] + o[1]) * g.out[2] + o[2];
          for (int64_t c = 0; c < g.in_channels; ++c) {
            const float v =
                nchw ? grid_image_start[c * out_pixels + pixel] : grid_image_start[pixel * g.in_channels + c];
            dx_image[at + c * g.x.channel] = 0.0f + v;
          }
        }
      }
    }
  });
}

}  // namespace convjit::detail
