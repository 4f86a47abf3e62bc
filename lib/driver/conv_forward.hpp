// The forward driver, shared by every tier: tiling, threads, and the input views of row kernels.
#pragma once

#include <string>

#include "conv_tile_abi.h"
#include "geometry.hpp"

namespace convjit::detail {

// Output channels per group up to which tier 0 takes the direct tile (and an NHWC problem runs as
// NCHW, lib/rewrite/nhwc_as_nchw.hpp). Packing a patch costs the same whatever the output channels, so
// with few of them per group (the seed network's 2-3, depthwise's 1) the direct tile wins; with
// more, the register tile over packed patches does (callgrind, instructions per call: 150K vs
// 500K on seed_chain_1, 12M vs 32M on depthwise_3x3, but 94M vs 18M on resnet_1x1_56).
inline constexpr int64_t kDirectMaxOutputChannels = 8;

// Validates everything a forward call reads; on success *g describes the problem.
Status validate_conv_forward(const convjit_conv_params* params, const float* x, const float* w, int32_t activation,
                             const float* y, ConvGeometry* g);

// Non-empty when tier 0 runs g on a kernel of its own (depthwise, channels or taps in the vector
// lanes) that the backends' row kernels do not beat (measured: Xbyak 22 vs 27 GFLOP/s on
// depthwise_3x3 NCHW, 3 vs 10 on depthwise_s2, 1 vs 32 NHWC; LLVM 21 vs 27): why the runtime
// declines to compile it, for every backend.
std::string generic_kernel_wins(const ConvGeometry& g);

// Runs the forward convolution with `specialized` (null: the generic tier only).
void run_conv_forward(const ConvGeometry& g, const convjit_conv_kernel* specialized, int threads, const float* x,
                      const float* w, const float* bias, bool relu, float* y);

}  // namespace convjit::detail
