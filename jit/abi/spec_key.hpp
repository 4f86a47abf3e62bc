// The specialization key: what a compiled kernel is specialized on, the op first (forward
// convolution, backward filter, max or mean pooling forward or backward). Channels, batch and
// spatial sizes stay runtime values unless the policy asks to specialize on them too (backward
// filter: the channels always), so one kernel serves every layer with the same kernel (pooling:
// window) size and stride.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "conv_tile_abi.h"
#include "convjit/convjit.h"
#include "isa.hpp"
#include "pool_row_abi.h"

namespace convjit::jit {

inline constexpr int32_t kNhwcNarrowClass = 16;  // fewer than 32 output channels per group
inline constexpr int32_t kNhwcWideClass = 32;    // 32 or more

struct SpecKey {
  int32_t op;      // convjit_op: CONVJIT_OP_CONV_FORWARD, or max or mean pooling forward or backward
  int32_t rank;    // for the name only: 1, 2 or 3 spatial dims
  int32_t layout;  // convjit_layout
  int32_t flip;    // convolution mode
  int32_t relu;
  Isa isa;
  // Output channels per group, as a class. NCHW: 1, 2, 3, or 4 for "4 or more" (its kernels block
  // channels by up to 4). NHWC: kNhwcNarrowClass or kNhwcWideClass (its kernels block 16 or 32).
  // Pooling: 0.
  int32_t oc_class;
  // Forward (NHWC) or backward filter of a depthwise problem (one input and one output channel per
  // group): its groups, whose channels fill the lanes (saturated; the plan declines beyond its
  // limit); else 0.
  // With the above, eight 32-bit fields: no padding bytes, so memcmp compares keys.
  int32_t depthwise_groups = 0;
  int64_t kernel[3], stride[3], dilation[3];  // normalized D, H, W (pooling: the window's)
  // Sizes, when the policy specializes on them; 0 = runtime.
  int64_t ic_per_group = 0, oc_per_group = 0, in[3] = {0, 0, 0};

  bool operator==(const SpecKey& other) const { return std::memcmp(this, &other, sizeof *this) == 0; }
  uint64_t hash() const;
  // Op, type, shape and ISA, e.g. "conv2d_fwd_f32_k3x3_s1_relu__avx512", "maxpool2d_bwd_f32_k3x3_s2_nhwc__avx512",
  // "conv2d_bwd_filter_f32_k3x3_s1_nhwc_c64to64__avx512", "conv2d_bwd_filter_f32_k3x3_s1_nhwc_dw128__avx512",
  // "conv2d_fwd_f32_k3x3_s1_nhwc_dw128__avx512":
  // the JIT symbol, the verbose line, the stats and the benchmark name.
  std::string name() const;
};
static_assert(sizeof(SpecKey) == 8 * sizeof(int32_t) + 14 * sizeof(int64_t), "no padding bytes");

SpecKey make_spec_key(const convjit_conv_problem& problem, int32_t rank, bool relu, Isa isa, bool specialize_sizes);
// op: max or mean pooling, forward or backward (CONVJIT_OP_MAXPOOL_FORWARD ...); NHWC.
SpecKey make_pool_spec_key(const convjit_pool_problem& problem, int32_t op, int32_t rank, Isa isa);
// Backward filter: specialized on the channels per group always (its register block is a block of
// dw, output by input channels, so both counts' tails are code), and a depthwise problem on its
// groups (they fill the lanes); the spatial sizes stay runtime.
SpecKey make_filter_spec_key(const convjit_conv_problem& problem, int32_t rank, Isa isa);
// NHWC depthwise forward rows (depthwise_rows_abi.h): specialized on the groups too (the pixel pitch
// of x and y), e.g. "conv2d_fwd_f32_k3x3_s1_nhwc_dw128_relu__avx512".
SpecKey make_depthwise_spec_key(const convjit_conv_problem& problem, int32_t rank, bool relu, Isa isa);

}  // namespace convjit::jit
