// The forward driver, shared by every tier: tiling, threads, and the input views of row kernels.
#pragma once

#include "jit/conv_tile_abi.h"
#include "lib/geometry.hpp"

namespace convjit::detail {

// Validates everything a forward call reads; on success *g describes the problem.
Status validate_conv_forward(const convjit_conv_params* params, const float* x, const float* w, int32_t activation,
                             const float* y, ConvGeometry* g);

// Runs the forward convolution with `specialized` (null: the generic tier only).
void run_conv_forward(const ConvGeometry& g, const convjit_conv_kernel* specialized, int threads, const float* x,
                      const float* w, const float* bias, bool relu, float* y);

}  // namespace convjit::detail
