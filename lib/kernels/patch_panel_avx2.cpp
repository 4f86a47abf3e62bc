#include <immintrin.h>

#include "patch_panel.hpp"
#include "patch_panel_values.hpp"
#include "transpose_8x8_avx2.hpp"

namespace convjit::detail::avx2 {
namespace {

// Pixels [p0, p0 + 8) of patch row k into *v, where they are padding (zeros) or wholly real with
// stride 1 (one load) or 2 (the even elements of src[0, 8) and of src[7, 15): nothing past the
// last value is read). False otherwise: the block goes value by value (gathered into a vector,
// 8 scalar stores and a load that cannot be forwarded from them ran slower).
bool load_block_row(const PatchRow<const float>* rows, int64_t row_count, int64_t k, int64_t p0, __m256* v) {
  if (k >= row_count || rows[k].hi <= p0 || rows[k].lo >= p0 + 8) {
    *v = _mm256_setzero_ps();
    return true;
  }
  const PatchRow<const float>& row = rows[k];
  if (row.lo > p0 || p0 + 8 > row.hi || row.step > 2) return false;
  const float* src = row.src + (p0 - row.lo) * row.step;
  if (row.step == 1) {
    *v = _mm256_loadu_ps(src);
    return true;
  }
  // [s0 s2 s8 s10 | s4 s6 s12 s14], then its 64-bit pairs in order.
  const __m256 even = _mm256_shuffle_ps(_mm256_loadu_ps(src), _mm256_loadu_ps(src + 7), 0xD8);
  *v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8));
  return true;
}

}  // namespace

void pack_patch_panel(const PatchRow<const float>* rows, int64_t row_count, int64_t count, float* dst) {
  if (rows_are_one_pixel_run(rows, row_count)) {  // NHWC: a pixel's 16 channels are consecutive
    const PatchRow<const float>& run = rows[0];
    for (int64_t p = 0; p < count; ++p) {
      __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
      if (p >= run.lo && p < run.hi) {
        lo = _mm256_loadu_ps(run.src + (p - run.lo) * run.step);
        hi = _mm256_loadu_ps(run.src + (p - run.lo) * run.step + 8);
      }
      _mm256_storeu_ps(dst + p * kTileCols, lo);
      _mm256_storeu_ps(dst + p * kTileCols + 8, hi);
    }
    _mm256_zeroupper();
    return;
  }
  int64_t p0 = 0;
  for (; p0 + 8 <= count; p0 += 8) {
    for (int64_t j0 = 0; j0 < kTileCols; j0 += 8) {
      __m256 v[8];
      bool vectors = true;
      for (int j = 0; j < 8 && vectors; ++j) vectors = load_block_row(rows, row_count, j0 + j, p0, &v[j]);
      if (vectors) {
        store_transposed_8x8(v, dst + p0 * kTileCols + j0, kTileCols);
      } else {
        pack_values(rows, row_count, p0, p0 + 8, j0, j0 + 8, dst);
      }
    }
  }
  pack_values(rows, row_count, p0, count, 0, kTileCols, dst);
  _mm256_zeroupper();
}

}  // namespace convjit::detail::avx2
