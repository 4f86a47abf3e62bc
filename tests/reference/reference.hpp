// The naive double-precision oracle every convjit kernel is checked against.
//
// Written straight from the definitions in README.md ("Semantics"): plain nested loops, one
// code path for every rank (a missing outer spatial dim is a dim of size 1 with kernel, stride
// and dilation 1 and no padding) and both layouts. It reads only the fields of ConvDims and
// PoolDims and computes every size itself, so it does not link, and cannot share a bug with,
// lib/. Inputs are the float buffers given to the library (or doubles, for finite
// differences); results are double. Dims must be valid: invalid ones throw
// std::invalid_argument (the oracle is not a validator; tests of validation use the library).
#pragma once

#include <cstdint>
#include <vector>

#include "convjit/dims.hpp"

namespace convjit::ref {

// Output spatial sizes (the first `rank` entries; the rest are 1), from
// out = floor((in + pad_begin + pad_end - dilation*(k-1) - 1) / stride) + 1.
Extent conv_output_size(const ConvDims& dims);
Extent pool_output_size(const PoolDims& dims);  // stride 0 means "the window", as in the C++ API

int64_t conv_input_elements(const ConvDims& dims);   // x, dx
int64_t conv_weight_elements(const ConvDims& dims);  // w, dw
int64_t conv_output_elements(const ConvDims& dims);  // y, dy
int64_t pool_input_elements(const PoolDims& dims);
int64_t pool_output_elements(const PoolDims& dims);

// y = activation(conv(x, w) + bias); bias may be null.
std::vector<double> conv_forward(const ConvDims& dims, const float* x, const float* w, const float* bias,
                                 Activation activation);
std::vector<double> conv_forward(const ConvDims& dims, const double* x, const double* w, const double* bias,
                                 Activation activation);
// The adjoints of conv_forward without bias and activation: dx = dL/dx, dw = dL/dw (layout of w).
std::vector<double> conv_backward_data(const ConvDims& dims, const float* dy, const float* w);
std::vector<double> conv_backward_data(const ConvDims& dims, const double* dy, const double* w);
std::vector<double> conv_backward_filter(const ConvDims& dims, const float* x, const float* dy);
std::vector<double> conv_backward_filter(const ConvDims& dims, const double* x, const double* dy);

// Max pooling: padded taps are skipped; NaN taps are ignored unless every real tap is NaN
// (then the result is NaN); a window without a real tap yields -FLT_MAX.
std::vector<double> maxpool_forward(const PoolDims& dims, const float* x);
std::vector<double> maxpool_forward(const PoolDims& dims, const double* x);
// Mean pooling divides by the window size (padding counts as zeros) or, with exclude_padding,
// by the number of real taps (a window without one yields 0).
std::vector<double> meanpool_forward(const PoolDims& dims, const float* x);
std::vector<double> meanpool_forward(const PoolDims& dims, const double* x);
// y = (sum over real taps of |x|^p)^(1/p).
std::vector<double> lpnormpool_forward(const PoolDims& dims, double p, const float* x);
std::vector<double> lpnormpool_forward(const PoolDims& dims, double p, const double* x);

// The gradient of each window goes to the first real tap, in row-major scan order, whose value
// equals the window's y; overlapping windows accumulate.
std::vector<double> maxpool_backward(const PoolDims& dims, const float* x, const float* y, const float* dy);
std::vector<double> maxpool_backward(const PoolDims& dims, const double* x, const double* y, const double* dy);
std::vector<double> meanpool_backward(const PoolDims& dims, const float* dy);
std::vector<double> meanpool_backward(const PoolDims& dims, const double* dy);
// dx += dy * |x|^(p-1) * sign(x) / y^(p-1) for every real tap; nothing where y == 0 or x == 0.
std::vector<double> lpnormpool_backward(const PoolDims& dims, double p, const float* x, const float* y,
                                        const float* dy);
std::vector<double> lpnormpool_backward(const PoolDims& dims, double p, const double* x, const double* y,
                                        const double* dy);

}  // namespace convjit::ref
