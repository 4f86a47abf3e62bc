// Tier 0's forward for NCHW depthwise convolution (one input and one output channel per group)
// with kernels up to 3x3, square 4x4 and 5x5, and 1x4 and 1x5, whose taps fit in registers (AVX2:
// 9 taps, AVX-512: 25; taps_fit_registers and has_code in the implementation): a channel's taps
// stay broadcast in registers for its whole plane, so each tap of each vector of pixels is one load
// and one FMA (the general direct tile reloads the weight for every tap of every pixel block). Each output is the chain
// of jit/abi/conv_tile_abi.h (taps in weight order from 0.0f, then bias, then relu); taps in the padding are masked
// lanes or a row of zeros (zero products). One kernel (conv_depthwise_nchw_impl.hpp) built for AVX2/FMA and AVX-512.
#pragma once

#include "depthwise_rows_abi.h"
#include "geometry.hpp"

namespace convjit::detail {

namespace avx2 {
bool depthwise_nchw_supported(const ConvGeometry& g);
void depthwise_nchw(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                    float* y, convjit_depthwise_row_fn /*compiled_rows: none for NCHW*/);
}  // namespace avx2

namespace avx512 {
bool depthwise_nchw_supported(const ConvGeometry& g);
void depthwise_nchw(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                    float* y, convjit_depthwise_row_fn /*compiled_rows: none for NCHW*/);
}  // namespace avx512

}  // namespace convjit::detail
