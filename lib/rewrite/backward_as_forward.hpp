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

// w_t = the weights of `forward` (see above) from the weights w of g, on up to `threads` threads.
void transpose_weights(const ConvGeometry& g, const float* w, float* w_t, int threads);
// Those weights: w itself where one input and one output channel per group make the transpose the
// identity (depthwise), else the transpose in the calling thread's operand buffer.
const float* weights_of_the_forward(const ConvGeometry& g, const float* w, int threads);

// A forward call's weights: a forward convolution's own ([oc][k] rows), or those of the backward
// data problem that runs as the forward (`backward`, its weights `backward_w`), transposed into
// rows only for the kernels that read rows: a compiled NHWC kernel packs its blocks from them in
// place (lib/driver/conv_forward.hpp: run_conv_forward_on_backward_weights), so at its steady
// state the transpose is never made (bench/RESULTS.md, "Session 32").
struct ForwardWeights {
  const float* rows = nullptr;
  const ConvGeometry* backward = nullptr;
  const float* backward_w = nullptr;
  const float* as_rows(int threads) const {
    return rows ? rows : weights_of_the_forward(*backward, backward_w, threads);
  }
};

// With a 1x1 kernel and stride > 1 (strided pointwise, as ResNet's downsampling shortcuts), each
// input element is met by at most one output pixel and no other tap: dx is zero except at the
// inputs the outputs sit on, where it is the 1x1 forward convolution of dy with the transposed
// weights (the same one-chain-per-element sum over output channels as the register-tile path).
// True when g is one: fills *forward (dy -> the dense grid of those inputs, stride 1, no padding).
bool strided_pointwise_backward_data_as_forward(const ConvGeometry& g, const convjit_conv_params& params,
                                                convjit_conv_params* forward);

// Backward data with stride > 1, dilation 1 along the strided dims and kernels at least as long
// as the stride there, as stride-1 forward convolutions, one per phase of dx: along a dim of
// stride s, the inputs i = s * q + r (residue r) are met only by the taps kh = kh0 + j * s with
// kh0 = (r + pad) mod s, from outputs q + c - j, c = (r + pad - kh0) / s. So the phase is the
// forward convolution of dy with those ceil((k - kh0) / s) taps (channels transposed, taps
// reversed) under padding k' - 1 - c, into a dense grid of its inputs, which is then spread onto
// dx. k' is that count, or c + 1 where padding puts an output's first tap before it (the taps
// past the kernel as zero weights: exactly nothing for finite dy, the forward's chain starts at
// +0), at most ceil(k / s). Phases differ in k' where s does not divide k (a 5x5 at stride 2: 3x3,
// 3x2, 2x3 and 2x2 kernels), so a configuration has one compiled kernel per kernel size among its
// phases (lib/runtime/dispatch.cpp); every tier runs the same chains.
inline constexpr int kMaxBackwardDataPhases = 64;
inline constexpr int64_t kMaxPhaseKernel = 64;  // taps of a phase's kernel per dim
struct BackwardDataPhase {
  convjit_conv_params forward;  // dy -> the phase's grid
  int64_t residue[3];           // r along D, H, W (normalized: 0 along unstrided dims)
  int64_t first_tap[3];         // kh0 along each dim (0 along unstrided dims)
  int64_t taps[3];              // k' along each dim (k along unstrided dims)
  int64_t grid[3];              // the grid's size: the phase's inputs along each dim
};
struct BackwardDataPhases {
  int count = 0;
  BackwardDataPhase phase[kMaxBackwardDataPhases];
  // The first phase whose forward has phase i's kernel size: the one whose compiled kernel phase
  // i runs.
  int kernel_of(int i) const;
};
// True when g (params) can run so: fills *phases (phases with no inputs, where dx is shorter
// than the stride, are left out). Not depthwise problems that tier 0's depthwise kernels take:
// they run their own phases there (driver/depthwise_backward_data_phases.hpp; NCHW at W stride 2
// both W phases of a row at once), the same chains without the zero taps and the grid.
bool strided_backward_data_phases(const ConvGeometry& g, const convjit_conv_params& params, BackwardDataPhases* phases);
// The weights of phase's forward from g's weights w.
void phase_weights(const ConvGeometry& g, const BackwardDataPhase& phase, const float* w, float* w_phase);

// dx of g from a grid of its inputs, in g's layout with g's input channels: grid position q goes
// to input stride * q + origin (per dim; positions outside dx are dropped), as 0 + grid (the
// register-tile path's sum onto a zeroed dx). zero_first: dx is zeroed before (where the grid
// does not cover it all).
struct GridPlacement {
  int64_t size[3];
  int64_t origin[3];
};
void spread_grid(const ConvGeometry& g, const GridPlacement& placement, const float* grid, float* dx, bool zero_first,
                 int threads);
// Strided pointwise's grid: g's output pixels, at the inputs they sit on; the rest of dx zero.
inline GridPlacement strided_pointwise_placement(const ConvGeometry& g) {
  return {{g.out[0], g.out[1], g.out[2]}, {-g.pad_begin[0], -g.pad_begin[1], -g.pad_begin[2]}};
}

}  // namespace convjit::detail
