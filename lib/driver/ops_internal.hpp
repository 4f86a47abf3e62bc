// The ops as the library implements them: C structs in, Status out, no exceptions. The C ABI
// forwards here directly; the C++ API converts its dims and throws on failure. (Forward
// convolution goes through the runtime: lib/runtime/runtime_impl.hpp.)
#pragma once

#include "convjit/convjit.h"
#include "status.hpp"

namespace convjit::detail {

Status conv_backward_data(const convjit_conv_params* params, const float* dy, const float* w, float* dx);
Status conv_backward_filter(const convjit_conv_params* params, const float* x, const float* dy, float* dw);

enum class PoolOp { Max, Mean, LpNorm };
Status pool_forward(PoolOp op, const convjit_pool_params* params, float p, const float* x, float* y);
// x and y are read by Max and LpNorm only.
Status pool_backward(PoolOp op, const convjit_pool_params* params, float p, const float* x, const float* y,
                     const float* dy, float* dx);

}  // namespace convjit::detail
