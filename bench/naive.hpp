// The baselines every user writes first, and the double-precision oracle the --check mode uses.
#pragma once

#include <cstdint>

#include "shapes.hpp"

namespace convjit_bench {

// The toy loop nest in float: NCHW x, OIHW w, cross-correlation, no bias. Rank 2 is the plain
// 7-deep nest (n, oc, oh, ow, ic, kh, kw) with a bounds test per tap; ranks 1 and 3 run the
// same nest with a depth loop added (1D as a 1 x 1 x W volume).
void naive_conv_forward(const ConvShape& s, const float* x, const float* w, float* y);

// Oracle: double accumulation, either mode, optional bias (may be null) and relu. NCHW / OIHW.
void reference_conv_forward(const ConvShape& s, bool convolution_mode, const float* x, const float* w,
                            const float* bias, bool relu, float* y);

// Pooling, NCHW, the plain 6-deep nest. Max: padded taps skipped, -FLT_MAX if none is real.
// Mean: sum of the real taps / window size (padding counted as zeros, NNlib's default).
void naive_maxpool_forward(const PoolShape& s, const float* x, float* y);
void naive_meanpool_forward(const PoolShape& s, const float* x, float* y);

// [n][c][spatial] <-> [n][spatial][c]; with n = out channels and c = in channels / groups this
// also turns OIHW weights into OHWI.
void to_channels_last(const float* src, int64_t n, int64_t c, int64_t spatial, float* dst);
void from_channels_last(const float* src, int64_t n, int64_t c, int64_t spatial, float* dst);

}  // namespace convjit_bench
