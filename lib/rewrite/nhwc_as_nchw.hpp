// Forward convolutions that run as their twin in the other layout, on transposed copies of x and
// w, y transposed back. NHWC with few output channels per group runs as NCHW: the direct kernels
// of both tiers vectorize along output rows, which NHWC's interleaved channels deny them: with
// 1-8 channels per pixel, NHWC kernels that vector over channels compute mostly zeros
// (bench/RESULTS.md, "Why the tier rules ..."). NCHW at W stride > 1 with more output channels
// runs as NHWC where its flops pay for the copies: NCHW kernels would gather every s-th input
// along W into their lanes; so does NCHW depthwise that NCHW's own depthwise kernel at the
// runtime's ISA cap does not take (extents it has no code for, taps that do not fit its registers,
// 3D, W stride over 2): NHWC's has the groups in the lanes (bench/RESULTS.md, "Session 17"); and
// so does NCHW at W stride 1 whose short rows would make a flattened grid over a fifth junk
// ("Session 25"). One pass over x and one over y cost less. The runtime counts and reports the
// configuration as called, and compiles (and names) the twin's kernel for it; the numbers (the
// twin's chain order: NCHW's (ic, kd, kh, kw), NHWC's (kd, kh, kw, ic)) are the same on every tier.
#pragma once

#include "convjit/convjit.h"
#include "filter_rows_abi.h"
#include "geometry.hpp"
#include "isa.hpp"
#include "pool_row_abi.h"

namespace convjit::detail {

bool nhwc_runs_as_nchw(const ConvGeometry& g);
// max_isa: the runtime's cap (the kernels NCHW has at it decide some rules). backward_weights: g
// is the forward a backward data problem runs as, on that problem's weights, which the twin's
// compiled kernels pack in place (lib/driver/conv_forward.hpp): they are not among the copies.
bool nchw_runs_as_nhwc(const ConvGeometry& g, jit::Isa max_isa, bool backward_weights);
bool forward_runs_as_twin(const ConvGeometry& g, jit::Isa max_isa, bool backward_weights);  // either of them
// The twin of a valid problem in the other layout: what runs when forward_runs_as_twin.
ConvGeometry forward_twin(const convjit_conv_params& params);
// The NCHW twin of a valid NHWC problem.
ConvGeometry nchw_twin(const convjit_conv_params& params);

// Copies of a problem's operands in its twin's layout (x, and the weights unless w is null: a
// backward problem's that the twin packs in place) and room for the twin's output.
struct TwinCopies {
  convjit_conv_params params;  // the twin's
  const float* x;
  const float* w;
  float* y;
};
TwinCopies copy_to_twin(const ConvGeometry& g, const convjit_conv_params& params, const float* x, const float* w,
                        int threads);
void copy_output_from_twin(const ConvGeometry& g, const TwinCopies& copies, float* y, int threads);

// Backward filter the same way: an NHWC problem whose NCHW twin runs on the direct kernel (few
// channels per group, depthwise: the register tile over NHWC patches reaches 1-7 GFLOP/s there)
// runs as the twin on NCHW copies of x and dy, and its OIHW dw is transposed back to OHWI.
bool nhwc_backward_filter_runs_as_nchw(const ConvGeometry& g, const convjit_conv_params& params);
void backward_filter_as_nchw(const ConvGeometry& g, const convjit_conv_params& params, int threads, const float* x,
                             const float* dy, float* dw);

// And the other way: an NCHW backward filter whose NHWC twin runs on compiled rows runs as that
// twin on NHWC copies of x and dy, its OHWI dw transposed back to OIHW, where the copies fit and
// cost little next to its flops. Each dw element is the chain of NCHW's register tile (over the
// images and output pixels in order): the same bits. Tier 0 runs the NCHW problem itself.
bool nchw_backward_filter_can_run_as_nhwc(const ConvGeometry& g);
ConvGeometry backward_filter_nhwc_twin(const convjit_conv_params& params);
// runs: the twin (backward_filter_nhwc_twin), as the caller built it to key the kernel.
void backward_filter_as_nhwc(const ConvGeometry& g, const ConvGeometry& runs, int threads, const float* x,
                             const float* dy, float* dw, const convjit_filter_kernel& compiled);

// The other way for depthwise backward data that does not run as a forward: where NCHW's own
// kernel (W stride 2) does not take it, the vector kernels are NHWC's (the channels in the lanes:
// the phases of driver/depthwise_backward_data_phases.hpp, else the scatter kernel), so an NCHW
// one runs as its NHWC twin on a transposed copy of dy, and dx is transposed back: the twin's
// bits (one input channel per group, so the NCHW problem's chains too).
bool nchw_depthwise_backward_data_runs_as_nhwc(const ConvGeometry& g, const convjit_conv_params& params);
void depthwise_backward_data_as_nhwc(const ConvGeometry& g, const convjit_conv_params& params, int threads,
                                     const float* dy, const float* w, float* dx);

// NCHW max and mean pooling can run the same way (its copies fit, the twin has NHWC's vector
// kernel with the channels in the lanes): on transposed copies of x, y and dy, dx transposed
// back; each window is routed or shared and each dx element summed in output order as on the
// NCHW path, so the bits are its.
bool nchw_pool_can_run_as_nhwc(const PoolGeometry& g, const convjit_pool_params& params, PoolOp op);
// Backward does where it can, unless the NCHW vector kernel beats it (windows tiling x in place,
// or few channels).
bool nchw_pool_backward_runs_as_nhwc(const PoolGeometry& g, const convjit_pool_params& params, PoolOp op);
// And forward, unless the NCHW vector kernel beats it (W stride 2, rows of a vector or more): x transposed, y
// transposed back (each output's taps in the same order: the same bits). compiled: the twin's
// compiled row kernel, or null.
bool nchw_pool_forward_runs_as_nhwc(const PoolGeometry& g, const convjit_pool_params& params, PoolOp op);
void pool_forward_as_nhwc(PoolOp op, const PoolGeometry& g, const convjit_pool_params& params, int threads,
                          const float* x, float* y, convjit_pool_row_fn compiled);
// The NHWC twin of a valid NCHW pooling problem.
PoolGeometry pool_nhwc_twin(const convjit_pool_params& params);
void pool_backward_as_nhwc(PoolOp op, const PoolGeometry& g, const convjit_pool_params& params, int threads,
                           const float* x, const float* y, const float* dy, float* dx, convjit_pool_row_fn compiled);

}  // namespace convjit::detail
