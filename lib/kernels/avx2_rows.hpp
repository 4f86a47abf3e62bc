// Pieces of the direct AVX2 kernels (forward tile, backward filter): masked loads of input rows
// with padding and stride, and the taps of a window that land inside the input. Include only
// from files compiled with -mavx2 -mfma.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "patch_pack.hpp"

namespace convjit::detail::avx2 {

// Lanes l of a vector whose position first + l lies in [0, end), compared in int32: first and end
// must lie within 2^31 - 8 of zero (the kernels take only problems whose W positions do:
// w_positions_fit_lanes).
inline __m256i lanes_between(int64_t first, int64_t end) {
  const __m256i position =
      _mm256_add_epi32(_mm256_set1_epi32(int32_t(first)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i at_least_zero = _mm256_cmpgt_epi32(position, _mm256_set1_epi32(-1));
  const __m256i below_end = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(end)), position);
  return _mm256_and_si256(at_least_zero, below_end);
}

// The same for any first: a vector wholly outside [0, end) (deep in huge padding, say) has no lane
// inside, and positions that may not fit int32.
inline __m256i lanes_inside(int64_t first, int64_t end) {
  if (first >= end || first <= -8) return _mm256_setzero_si256();
  return lanes_between(first, end);
}

// The even lanes of a and b, in order: a0 a2 a4 a6 b0 b2 b4 b6.
inline __m256 even_lanes(__m256 a, __m256 b) {
  const __m256 even = _mm256_shuffle_ps(a, b, 0x88);  // a0 a2 b0 b2 | a4 a6 b4 b6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8));
}

// 8 inputs at positions first + Stride*l of a row, all of them real.
template <int Stride>
inline __attribute__((always_inline)) __m256 load_real_inputs(const float* row, int64_t first) {
  if constexpr (Stride == 1) return _mm256_loadu_ps(row + first);
  return even_lanes(_mm256_loadu_ps(row + first), _mm256_loadu_ps(row + first + 8));
}

// Whether every W position a row of g reaches (padding and the last output's last tap included)
// lies within 2^30 of zero, as the int32 lane arithmetic of these kernels needs.
inline bool w_positions_fit_lanes(const convjit_conv_problem& g) {
  constexpr int64_t kLimit = int64_t(1) << 30;
  int64_t last_output, last_tap;
  return g.in[2] < kLimit && g.pad_begin[2] < kLimit && !__builtin_mul_overflow(g.out[2] - 1, g.stride[2], &last_output) &&
         !__builtin_mul_overflow(g.kernel[2] - 1, g.dilation[2], &last_tap) && last_output < kLimit && last_tap < kLimit;
}

// 8 inputs at positions first + Stride*l of one input row (of `width` real elements, positions
// beyond `limit` unwanted), zero where outside.
template <int Stride>
inline __attribute__((always_inline)) __m256 load_inputs(const float* row, int64_t first, int64_t width,
                                                         int64_t limit) {
  const int64_t end = std::min(width, limit);
  if (first >= 0 && first + Stride * 8 <= end) return load_real_inputs<Stride>(row, first);
  const __m256 a = _mm256_maskload_ps(row + first, lanes_between(first, end));
  if constexpr (Stride == 1) return a;
  return even_lanes(a, _mm256_maskload_ps(row + first + 8, lanes_between(first + 8, end)));
}

}  // namespace convjit::detail::avx2
