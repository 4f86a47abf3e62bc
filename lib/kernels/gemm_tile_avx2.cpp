// The AVX2/FMA register tile: rows x 16 outputs in up to 12 ymm accumulators (two per row),
// one broadcast of A per row and two loads of B per reduction step. This file alone is compiled
// with -mavx2 -mfma; the library calls it only when the host has both.
#include <immintrin.h>

#include "gemm_tile.hpp"

namespace convjit::detail::avx2 {
namespace {

// Lane mask for the first `cols` of 8 columns starting at `first`.
__m256i column_mask(int cols, int first) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - first), lane);
}

template <int Rows, bool IndirectB>
void tile(const GemmTile& t) {
  __m256 acc[Rows][2];
  const __m256i mask_lo = column_mask(t.cols, 0), mask_hi = column_mask(t.cols, 8);
  const bool contiguous = t.c_col_stride == 1;

#pragma GCC unroll 6
  for (int i = 0; i < Rows; ++i) {
    if (!t.accumulate) {
      acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    } else if (contiguous) {
      acc[i][0] = _mm256_maskload_ps(t.c + i * t.c_row_stride, mask_lo);
      acc[i][1] = _mm256_maskload_ps(t.c + i * t.c_row_stride + 8, mask_hi);
    } else {
      alignas(32) float row[kTileCols] = {};
      for (int j = 0; j < t.cols; ++j) row[j] = t.c[i * t.c_row_stride + j * t.c_col_stride];
      acc[i][0] = _mm256_load_ps(row);
      acc[i][1] = _mm256_load_ps(row + 8);
    }
  }

  // Locals, so the compiler keeps the accumulators in registers instead of re-reading t.
  const float* a_rows[Rows];
#pragma GCC unroll 6
  for (int i = 0; i < Rows; ++i) a_rows[i] = t.a + i * t.a_row_stride;
  const float* b = t.b;
  const int64_t k = t.k, a_step = t.a_step;
  const float* const* b_rows = t.b_rows;
  for (int64_t r = 0; r < k; ++r) {
    const float* b_row = IndirectB ? b_rows[r] : b + r * kTileCols;  // b is null with row pointers
    const __m256 b_lo = _mm256_loadu_ps(b_row), b_hi = _mm256_loadu_ps(b_row + 8);
#pragma GCC unroll 6
    for (int i = 0; i < Rows; ++i) {
      const __m256 a = _mm256_broadcast_ss(a_rows[i] + r * a_step);
      acc[i][0] = _mm256_fmadd_ps(a, b_lo, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(a, b_hi, acc[i][1]);
    }
  }

#pragma GCC unroll 6
  for (int i = 0; i < Rows; ++i) {
    if (t.bias) {
      const __m256 bias = _mm256_broadcast_ss(t.bias + i);
      acc[i][0] = _mm256_add_ps(acc[i][0], bias);
      acc[i][1] = _mm256_add_ps(acc[i][1], bias);
    }
    if (t.relu) {  // max(0, NaN) keeps the NaN: vmaxps returns its second operand on unordered
      acc[i][0] = _mm256_max_ps(_mm256_setzero_ps(), acc[i][0]);
      acc[i][1] = _mm256_max_ps(_mm256_setzero_ps(), acc[i][1]);
    }
    float* c = t.c + i * t.c_row_stride;
    if (contiguous && t.cols == kTileCols) {  // plain stores: masked ones cost AMD cores many cycles
      _mm256_storeu_ps(c, acc[i][0]);
      _mm256_storeu_ps(c + 8, acc[i][1]);
    } else if (contiguous) {
      _mm256_maskstore_ps(c, mask_lo, acc[i][0]);
      _mm256_maskstore_ps(c + 8, mask_hi, acc[i][1]);
    } else {
      alignas(32) float row[kTileCols];
      _mm256_store_ps(row, acc[i][0]);
      _mm256_store_ps(row + 8, acc[i][1]);
      for (int j = 0; j < t.cols; ++j) c[j * t.c_col_stride] = row[j];
    }
  }
  _mm256_zeroupper();
}

}  // namespace

bool supported() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

template <bool IndirectB>
void dispatch_rows(const GemmTile& t) {
  switch (t.rows) {
    case 1: return tile<1, IndirectB>(t);
    case 2: return tile<2, IndirectB>(t);
    case 3: return tile<3, IndirectB>(t);
    case 4: return tile<4, IndirectB>(t);
    case 5: return tile<5, IndirectB>(t);
    default: return tile<6, IndirectB>(t);
  }
}

void gemm_tile(const GemmTile& t) {
  return t.b_rows ? dispatch_rows<true>(t) : dispatch_rows<false>(t);
}

}  // namespace convjit::detail::avx2
