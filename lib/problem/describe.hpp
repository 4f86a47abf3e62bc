// Human-readable configuration names for verbose lines, jit-stats and errors, in NNlib-like
// notation: "3x3 s1x1 p1x1 64->64 56x56 n1 nchw relu".
#pragma once

#include <string>

#include "convjit/convjit.h"

namespace convjit::detail {

std::string describe_conv(const convjit_conv_params& params, int32_t activation, bool has_bias);
// "2x2 s2x2 p0x0 64 56x56 n1 nchw" (window, stride, padding, dilation, channels, size, batch, layout),
// then " exclude_padding" and " p=3" where they apply.
std::string describe_pool(const convjit_pool_params& params, float p, bool lp_norm);
// A convjit_op's name: "conv_fwd", "conv_bwd_data", "conv_bwd_filter", "maxpool_fwd", ...; "?" for others.
const char* op_name(int32_t op);

}  // namespace convjit::detail
