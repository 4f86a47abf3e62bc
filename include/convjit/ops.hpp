// The C++ entry points: one non-template signature per op, for every shape. Each validates its
// dims and pointers first and throws convjit::Error without writing any output byte.
#pragma once

#include "convjit/dims.hpp"
#include "convjit/error.hpp"

namespace convjit {

// y = activation(conv(x, w) + bias); bias (length out_channels) may be null.
CONVJIT_PUBLIC void conv_forward(const ConvDims& dims, const float* x, const float* w, const float* bias,
                                 Activation activation, float* y);
inline void conv_forward(const ConvDims& dims, const float* x, const float* w, float* y) {
  conv_forward(dims, x, w, nullptr, Activation::Identity, y);
}
// dx = d(loss)/dx given dy (before any fused activation: apply its derivative to dy first).
CONVJIT_PUBLIC void conv_backward_data(const ConvDims& dims, const float* dy, const float* w, float* dx);
// dw = d(loss)/dw, in the layout of w.
CONVJIT_PUBLIC void conv_backward_filter(const ConvDims& dims, const float* x, const float* dy, float* dw);

CONVJIT_PUBLIC void maxpool_forward(const PoolDims& dims, const float* x, float* y);
CONVJIT_PUBLIC void meanpool_forward(const PoolDims& dims, const float* x, float* y);
CONVJIT_PUBLIC void lpnormpool_forward(const PoolDims& dims, float p, const float* x, float* y);
CONVJIT_PUBLIC void maxpool_backward(const PoolDims& dims, const float* x, const float* y, const float* dy, float* dx);
CONVJIT_PUBLIC void meanpool_backward(const PoolDims& dims, const float* dy, float* dx);
CONVJIT_PUBLIC void lpnormpool_backward(const PoolDims& dims, float p, const float* x, const float* y, const float* dy,
                                        float* dx);

// Threads used by later calls; 0 restores the default (CONVJIT_NUM_THREADS, else the CPUs this
// process may run on).
CONVJIT_PUBLIC void set_num_threads(int num_threads);
CONVJIT_PUBLIC int num_threads();

}  // namespace convjit
