// Backward data as a forward convolution. With stride 1, dx is the forward convolution of dy
// with the weights transposed (in <-> out channels per group) and flipped (the other mode), under
// padding dilation*(k-1) - pad on each side. That lets backward data run on the forward path,
// JIT tier included, whose numbers are the same on every tier.
#pragma once

#include "convjit/convjit.h"
#include "geometry.hpp"

namespace convjit::detail {

// Weights beyond this many floats (16 MiB) are not transposed: the copy lives in a per-thread
// buffer, kept for later calls, and costs a pass over the weights at every call.
inline constexpr int64_t kMaxTransposedWeights = int64_t(1) << 22;

// True when backward data of g can run as a forward convolution: fills *forward (the problem
// whose input is dy and output dx) and says how many floats the transposed weights take.
bool backward_data_as_forward(const ConvGeometry& g, const convjit_conv_params& params, convjit_conv_params* forward);

// w_t = the weights of `forward` (see above) from the weights w of g.
void transpose_weights(const ConvGeometry& g, const float* w, float* w_t);

// With a 1x1 kernel and stride > 1 (strided pointwise, as ResNet's downsampling shortcuts), each
// input element is met by at most one output pixel and no other tap: dx is zero except at the
// inputs the outputs sit on, where it is the 1x1 forward convolution of dy with the transposed
// weights (the same one-chain-per-element sum over output channels as the register-tile path).
// True when g is one: fills *forward (dy -> the dense grid of those inputs, stride 1, no padding).
bool strided_pointwise_backward_data_as_forward(const ConvGeometry& g, const convjit_conv_params& params,
                                                convjit_conv_params* forward);
// dx of g from `grid`, the output of that forward: zeros, and 0 + grid at the inputs it covers
// (the register-tile path's sum onto a zeroed dx).
void spread_strided_pointwise(const ConvGeometry& g, const float* grid, float* dx, int threads);

}  // namespace convjit::detail
