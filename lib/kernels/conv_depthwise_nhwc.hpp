// Tier 0's forward for NHWC depthwise convolution (one input and one output channel per group):
// the groups are the contiguous channels of a pixel, so they fill the vector lanes, where the
// per-group tiles of the driver would see one channel each. Each output is the chain of
// jit/abi/conv_tile_abi.h (taps in weight order from 0.0f, then bias, then relu); taps in the padding
// are skipped (zero products). AVX2/FMA only.
#pragma once

#include "geometry.hpp"

namespace convjit::detail::avx2 {

bool depthwise_nhwc_supported(const ConvGeometry& g);
void depthwise_nhwc(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                    float* y);

}  // namespace convjit::detail::avx2
