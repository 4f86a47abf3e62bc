// The forward driver, shared by every tier: tiling, threads, and the input views of row kernels.
#pragma once

#include <string>

#include "conv_tile_abi.h"
#include "geometry.hpp"

namespace convjit::detail {

// Output channels per group up to which tier 0 takes the direct tile (and an NHWC problem runs as
// NCHW, lib/rewrite/nhwc_as_nchw.hpp). Packing a patch costs the same whatever the output channels,
// so with few of them per group (the seed network's 2-3, depthwise's 1) the direct tile wins; with
// more, the register tile over packed patches does (bench/RESULTS.md, "Why the tier rules ...").
inline constexpr int64_t kDirectMaxOutputChannels = 8;

// Validates everything a forward call reads; on success *g describes the problem.
Status validate_conv_forward(const convjit_conv_params* params, const float* x, const float* w, int32_t activation,
                             const float* y, ConvGeometry* g);

// Non-empty when tier 0 runs g on a kernel of its own (depthwise, channels or taps in the vector
// lanes) that the backends' row kernels do not beat (bench/RESULTS.md, "Why the tier rules ..."):
// why the runtime declines to compile it, for every backend.
std::string generic_kernel_wins(const ConvGeometry& g);

// Runs the forward convolution with `specialized` (null: the generic tier only).
void run_conv_forward(const ConvGeometry& g, const convjit_conv_kernel* specialized, int threads, const float* x,
                      const float* w, const float* bias, bool relu, float* y);

}  // namespace convjit::detail
