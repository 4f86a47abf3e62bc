// Pieces of the direct AVX2 kernels (forward tile, backward filter): masked loads of input rows
// with padding and stride, and the taps of a window that land inside the input. Include only
// from files compiled with -mavx2 -mfma.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "patch_pack.hpp"

namespace convjit::detail::avx2 {

// Lanes l of a vector whose input position first + l lies in [0, end), end < 2^31 - 8. The
// lanes compare positions in int32: a vector wholly outside (huge padding or dilation) has
// positions that may not fit, and no lane inside.
inline __m256i lanes_inside(int64_t first, int64_t end) {
  if (first >= end || first <= -8) return _mm256_setzero_si256();
  const __m256i position =
      _mm256_add_epi32(_mm256_set1_epi32(int32_t(first)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i at_least_zero = _mm256_cmpgt_epi32(position, _mm256_set1_epi32(-1));
  const __m256i below_end = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(end)), position);
  return _mm256_and_si256(at_least_zero, below_end);
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

// 8 inputs at positions first + Stride*l of one input row (of `width` real elements, positions
// beyond `limit` unwanted), zero where outside.
template <int Stride>
inline __attribute__((always_inline)) __m256 load_inputs(const float* row, int64_t first, int64_t width,
                                                         int64_t limit) {
  const int64_t end = std::min(width, limit);
  if (first >= 0 && first + Stride * 8 <= end) return load_real_inputs<Stride>(row, first);
  // Wholly outside the row: zeros, without forming a pointer outside it.
  if (first >= end || first + Stride * 8 <= 0) return _mm256_setzero_ps();
  const __m256 a = _mm256_maskload_ps(row + first, lanes_inside(first, end));
  if constexpr (Stride == 1) return a;
  return even_lanes(a, _mm256_maskload_ps(row + first + 8, lanes_inside(first + 8, end)));
}

// Taps t in [0, n) (weight order) whose input coordinate o*stride - pad + t'*dilation is in
// [0, size), t' = t or n-1-t when flipped: a contiguous range.
inline void valid_taps(int64_t o, int64_t stride, int64_t pad, int64_t dilation, int64_t n, int64_t size, bool flip,
                       int64_t* begin, int64_t* end) {
  const StepRange inside = steps_inside(o * stride - pad, dilation, size, n);  // in t' order
  *begin = flip ? n - inside.hi : inside.lo;
  *end = flip ? n - inside.lo : inside.hi;
}

}  // namespace convjit::detail::avx2
