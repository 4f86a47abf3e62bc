// Human-readable configuration names for verbose lines and stats, in NNlib-like notation:
// "3x3 s1 p1 64->64 56x56 n1 nchw relu".
#pragma once

#include <string>

#include "convjit/convjit.h"

namespace convjit::detail {

std::string describe_conv(const convjit_conv_params& params, int32_t activation, bool has_bias);

}  // namespace convjit::detail
