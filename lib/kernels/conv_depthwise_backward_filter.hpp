// Tier 0's backward filter for NHWC depthwise convolution (one input and one output channel per
// group): the groups are a pixel's contiguous channels, so they fill the vector lanes, and each
// tap's accumulators stay in registers while every image's output pixels stream by. Each dw
// element is one FMA chain over the output pixels in order from 0, as on the register-tile path
// (conv_backward_filter.cpp; taps in the padding are skipped: their zero products leave a sum
// that is never -0 unchanged), so its bits are that path's. One kernel
// (conv_depthwise_backward_filter_impl.hpp) built for AVX2 and for AVX-512.
#pragma once

#include <cstdint>

#include "geometry.hpp"

namespace convjit::detail {

inline constexpr int64_t kDepthwiseFilterMaxTaps = 16;  // accumulators per channel vector
inline constexpr int64_t kDepthwiseFilterVectorsPerTask = 8;  // channel vectors a task walks row by row

namespace avx2 {
bool depthwise_backward_filter_supported(const ConvGeometry& g);
void depthwise_backward_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw);
}  // namespace avx2

namespace avx512 {
bool depthwise_backward_filter_supported(const ConvGeometry& g);
void depthwise_backward_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw);
}  // namespace avx512

}  // namespace convjit::detail
