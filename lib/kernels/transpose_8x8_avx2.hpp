// Eight vectors of eight floats transposed in registers and stored: dst[i * dst_stride + j] =
// r[j][i]. For files compiled with AVX2 only; internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "simd_avx2.hpp"

namespace convjit::detail {
namespace {

inline void store_transposed_8x8(__m256 (&r)[8], float* dst, int64_t dst_stride) {
  Avx2Floats::transpose(r);
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + i * dst_stride, r[i]);
}

}  // namespace
}  // namespace convjit::detail
