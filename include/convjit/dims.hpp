// Runtime-valued problem descriptions. Every field is a plain value: one type serves every shape,
// so no call site is ever specialized (or recompiled) on a shape.
#pragma once

#include <array>
#include <cstdint>

#include "convjit/convjit.h"

namespace convjit {

enum class Layout : int32_t { NCHW = CONVJIT_NCHW, NHWC = CONVJIT_NHWC };
enum class Mode : int32_t { CrossCorrelation = CONVJIT_CROSS_CORRELATION, Convolution = CONVJIT_CONVOLUTION };
enum class Activation : int32_t { Identity = CONVJIT_ACT_IDENTITY, Relu = CONVJIT_ACT_RELU };

// Spatial sizes, outermost first (D, H, W); only the first `rank` entries are read.
using Extent = std::array<int64_t, 3>;

// A convolution. Unlike the C ABI, stride and dilation default to 1 here.
struct CONVJIT_PUBLIC ConvDims {
  int32_t rank = 2;
  Layout layout = Layout::NCHW;
  Mode mode = Mode::CrossCorrelation;
  int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
  Extent in_size{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1};
  Extent pad_begin{0, 0, 0}, pad_end{0, 0, 0};

  // Throws convjit::Error when the dims are invalid.
  Extent output_size() const;
  int64_t input_elements() const;   // x and dx
  int64_t weight_elements() const;  // w and dw
  int64_t output_elements() const;  // y and dy

  convjit_conv_params to_c() const;
  static ConvDims from_c(const convjit_conv_params& params);
};

// A pooling window. Unlike the C ABI, a stride entry of 0 means "the window" (NNlib's default)
// and dilation defaults to 1.
struct CONVJIT_PUBLIC PoolDims {
  int32_t rank = 2;
  Layout layout = Layout::NCHW;
  bool exclude_padding = false;  // mean pooling: divide by the real taps instead of the window size
  int64_t batch = 1, channels = 1;
  Extent in_size{1, 1, 1}, window{1, 1, 1}, stride{0, 0, 0}, dilation{1, 1, 1};
  Extent pad_begin{0, 0, 0}, pad_end{0, 0, 0};

  Extent output_size() const;
  int64_t input_elements() const;
  int64_t output_elements() const;

  // Resolves the stride defaults, so the result is what the C ABI expects.
  convjit_pool_params to_c() const;
  static PoolDims from_c(const convjit_pool_params& params);
};

}  // namespace convjit
