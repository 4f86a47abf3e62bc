// Validated problems, normalized for the kernels: every rank becomes 3 spatial dims (D, H, W),
// the missing outer ones of size 1, and every tensor is addressed through element strides, so
// one kernel serves 1D/2D/3D and both layouts.
#pragma once

#include <cstdint>

#include "convjit/dims.hpp"
#include "conv_tile_abi.h"
#include "status.hpp"

namespace convjit::detail {

// The normalized convolution problem is the tile ABI's struct; lib/ only adds helpers.
struct ConvGeometry : convjit_conv_problem {
  // Weights of output channel oc are w[oc * reduction + k]; k enumerates (ic, tap) in OIHW
  // order for NCHW and (tap, ic) in OHWI order for NHWC.
  int64_t ic_of(int64_t k) const { return layout == CONVJIT_NCHW ? k / taps : k % ic_per_group; }
  int64_t tap_of(int64_t k) const { return layout == CONVJIT_NCHW ? k % taps : k / ic_per_group; }
  int64_t out_pixels() const { return out[0] * out[1] * out[2]; }
  double flops() const { return 2.0 * double(batch) * double(out_channels) * double(out_pixels()) * double(reduction); }
  // Whether the output's windows along dim d (normalized D, H, W) reach into the padding, before
  // the input or past it.
  bool windows_read_padding(int d) const {
    return pad_begin[d] > 0 || (out[d] - 1) * stride[d] + (kernel[d] - 1) * dilation[d] - pad_begin[d] >= in[d];
  }
};

// Element strides of one activation tensor, as in convjit_conv_problem.
struct TensorStrides {
  int64_t batch, channel, spatial[3];
};

struct PoolGeometry {
  Layout layout;
  bool exclude_padding;
  int64_t batch, channels;
  int64_t in[3], out[3], window[3], stride[3], dilation[3], pad_begin[3];
  TensorStrides x, y;
};

// Pooling outputs o with lo[d] <= o[d] < hi[d] along every dim (normalized D, H, W).
struct OutputBox {
  int64_t lo[3], hi[3];
};

// Validate and normalize; the only place that decides whether a problem is well-formed.
Status make_conv_geometry(const convjit_conv_params& params, ConvGeometry* geometry);
Status make_pool_geometry(const convjit_pool_params& params, PoolGeometry* geometry);

// Each validates everything its op reads and writes, before any output is touched; on success
// *g describes the problem.
Status validate_conv_forward(const convjit_conv_params* params, const float* x, const float* w, int32_t activation,
                             const float* y, ConvGeometry* g);
Status validate_conv_backward_data(const convjit_conv_params* params, const float* dy, const float* w, const float* dx,
                                   ConvGeometry* g);
Status validate_conv_backward_filter(const convjit_conv_params* params, const float* x, const float* dy,
                                     const float* dw, ConvGeometry* g);

enum class PoolOp { Max, Mean, LpNorm };
// Forward reads x and writes y; backward reads dy (Max and LpNorm also x and y) and writes dx.
Status validate_pool_forward(PoolOp op, const convjit_pool_params* params, float p, const float* x, const float* y,
                             PoolGeometry* g);
Status validate_pool_backward(PoolOp op, const convjit_pool_params* params, float p, const float* x, const float* y,
                              const float* dy, const float* dx, PoolGeometry* g);

}  // namespace convjit::detail
