// NHWC forward convolutions with few output channels per group run as NCHW ones on transposed
// copies. The direct kernels of both tiers vectorize along output rows, which NHWC's interleaved
// channels deny them: with 1-8 channels per pixel, NHWC kernels that vector over channels compute
// mostly zeros (bench/RESULTS.md, "Why the tier rules ..."). One pass over x and one over y
// cost less. The NCHW problem goes through the runtime like any other, so its configuration is
// the one counted, compiled and reported, and its numbers (the chain order of NCHW, (ic, kd, kh,
// kw)) are the same on every tier.
#pragma once

#include "convjit/convjit.h"
#include "geometry.hpp"

namespace convjit::detail {

bool nhwc_runs_as_nchw(const ConvGeometry& g);

// Copies of an NHWC problem's operands in NCHW (x, OIHW weights) and room for its NCHW output.
struct NchwCopies {
  convjit_conv_params params;
  const float* x;
  const float* w;
  float* y;
};
NchwCopies copy_to_nchw(const ConvGeometry& g, const convjit_conv_params& params, const float* x, const float* w,
                        int threads);
void copy_output_to_nhwc(const ConvGeometry& g, const NchwCopies& copies, float* y, int threads);

}  // namespace convjit::detail
