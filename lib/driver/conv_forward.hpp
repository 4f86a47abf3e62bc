// The forward driver, shared by every tier: tiling, threads, and the input views of row kernels.
#pragma once

#include <string>

#include "conv_tile_abi.h"
#include "forward_kernels.hpp"
#include "geometry.hpp"
#include "packed_weights.hpp"

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

// The NHWC forward a backward data problem runs as (lib/rewrite/backward_as_forward.hpp; its twin
// where the problem is NCHW), on that problem's own weights, without the transposed weights: where
// the kernel that runs packs its weights (a compiled NHWC row kernel), each block is packed from
// them in place (lib/driver/packed_weights.hpp), and a segment that goes to the generic tile gets
// its block's rows formed from them. No bias, no relu (a backward has neither).
bool packs_backward_weights_in_place(const ConvGeometry& g, const ForwardKernels& kernels);
void run_conv_forward_on_backward_weights(const ConvGeometry& g, const ForwardKernels& kernels, int threads,
                                          const float* x, const BackwardWeights& w_backward, float* y);

}  // namespace convjit::detail
