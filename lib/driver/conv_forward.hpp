// The forward driver, shared by every tier: tiling, threads, and the input views of row kernels.
#pragma once

#include <string>

#include "conv_tile_abi.h"
#include "forward_kernels.hpp"
#include "geometry.hpp"

namespace convjit::detail {

// What a forward call runs (lib/runtime/select_tier.hpp chooses): tier 0's kernel, or a compiled
// one; with a compiled kernel, `generic` is a tile kernel that takes the segments the compiled row
// kernel cannot view.
struct ForwardKernels {
  const GenericForwardKernel* generic;
  const convjit_conv_kernel* specialized;  // or null
};

// Runs the forward convolution on `kernels`.
void run_conv_forward(const ConvGeometry& g, const ForwardKernels& kernels, int threads, const float* x,
                      const float* w, const float* bias, bool relu, float* y);

}  // namespace convjit::detail
