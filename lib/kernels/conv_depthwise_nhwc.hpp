// Tier 0's forward for NHWC depthwise convolution (one input and one output channel per group):
// the groups are the contiguous channels of a pixel, so they fill the vector lanes, where the
// per-group tiles of the driver would see one channel each. Each output is the chain of
// jit/abi/conv_tile_abi.h (taps in weight order from 0.0f, then bias, then relu); taps in the padding
// are skipped (zero products). One kernel (conv_depthwise_nhwc_impl.hpp) built for AVX2/FMA and for
// AVX-512: the two give the same bits. Given a configuration's compiled rows
// (jit/abi/depthwise_rows_abi.h: the same chains), it calls them for each output row's outputs whose
// W taps are all real and computes the rest itself.
#pragma once

#include <cstdint>

#include "depthwise_rows_abi.h"
#include "geometry.hpp"

namespace convjit::detail {

inline constexpr int64_t kDepthwiseNhwcMaxTaps = 512;
bool depthwise_nhwc_fits(const ConvGeometry& g);  // any ISA: the layout and the taps
// g's weights tap-major ([tap][channel]), in the calling thread's buffer (kept: steady-state calls
// allocate nothing); every thread of the call reads them.
const float* depthwise_nhwc_taps_major(const ConvGeometry& g, const float* w);

namespace avx2 {
bool depthwise_nhwc_supported(const ConvGeometry& g);
void depthwise_nhwc(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                    float* y, convjit_depthwise_row_fn compiled_rows);
// The same with the weights already tap-major (depthwise_nhwc_taps_major's layout).
void depthwise_nhwc_tap_major(const ConvGeometry& g, int threads, const float* x, const float* w_taps, const float* bias,
                              bool relu, float* y, convjit_depthwise_row_fn compiled_rows);
}  // namespace avx2

namespace avx512 {
bool depthwise_nhwc_supported(const ConvGeometry& g);
void depthwise_nhwc(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                    float* y, convjit_depthwise_row_fn compiled_rows);
void depthwise_nhwc_tap_major(const ConvGeometry& g, int threads, const float* x, const float* w_taps, const float* bias,
                              bool relu, float* y, convjit_depthwise_row_fn compiled_rows);
}  // namespace avx512

}  // namespace convjit::detail
