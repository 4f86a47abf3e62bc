// Pieces of the direct kernels that walk rows with output pixels in the vector lanes (forward
// tile, NCHW depthwise, backward filter), over a vector type F (simd_avx2.hpp, simd_avx512.hpp):
// masked loads of input rows with padding and stride. Include only from files compiled for F's
// ISA; everything here has internal linkage (lib/README.md, "One kernel, several ISAs").
#pragma once

#include <algorithm>
#include <cstdint>

#include "patch_pack.hpp"

namespace convjit::detail {
namespace {

// F::lanes_between for any first: a vector wholly outside [0, end) (deep in huge padding, say)
// has no lane inside, and positions that may not fit int32.
template <typename F>
typename F::Mask lanes_inside(int64_t first, int64_t end) {
  if (first >= end || first <= -F::kLanes) return F::no_lanes();
  return F::lanes_between(first, end);
}

// kLanes inputs at positions first + Stride*l of a row, all of them real.
template <typename F, int Stride>
inline __attribute__((always_inline)) typename F::Vec load_real_inputs(const float* row, int64_t first) {
  if constexpr (Stride == 1) return F::load(row + first);
  return F::load_even(row + first);
}

// Whether every W position a row of g reaches (padding and the last output's last tap included)
// lies within 2^30 of zero, as the int32 lane arithmetic of these kernels needs.
inline bool w_positions_fit_lanes(const convjit_conv_problem& g) {
  constexpr int64_t kLimit = int64_t(1) << 30;
  int64_t last_output, last_tap;
  return g.in[2] < kLimit && g.pad_begin[2] < kLimit &&
         !__builtin_mul_overflow(g.out[2] - 1, g.stride[2], &last_output) &&
         !__builtin_mul_overflow(g.kernel[2] - 1, g.dilation[2], &last_tap) && last_output < kLimit &&
         last_tap < kLimit;
}

// kLanes inputs at positions first + Stride*l of one input row (of `width` real elements,
// positions beyond `limit` unwanted), zero where outside.
template <typename F, int Stride>
inline __attribute__((always_inline)) typename F::Vec load_inputs(const float* row, int64_t first, int64_t width,
                                                                  int64_t limit) {
  const int64_t end = std::min(width, limit);
  if (first >= 0 && first + Stride * F::kLanes <= end) return load_real_inputs<F, Stride>(row, first);
  if constexpr (Stride == 1) return F::load(row + first, F::lanes_between(first, end));
  return F::load_even(row + first, F::lanes_between(first, end), F::lanes_between(first + F::kLanes, end));
}

}  // namespace
}  // namespace convjit::detail
