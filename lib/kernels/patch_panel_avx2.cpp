#include <immintrin.h>

#include "patch_panel.hpp"
#include "patch_panel_values.hpp"
#include "transpose_8x8_avx2.hpp"

namespace convjit::detail::avx2 {

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
      // Each of the block's rows wholly real with unit step (a load) or wholly padding (zeros).
      __m256 v[8];
      bool vectors = true;
      for (int j = 0; j < 8 && vectors; ++j) {
        const int64_t k = j0 + j;
        if (k >= row_count || rows[k].hi <= p0 || rows[k].lo >= p0 + 8) {
          v[j] = _mm256_setzero_ps();
        } else if (rows[k].step == 1 && rows[k].lo <= p0 && p0 + 8 <= rows[k].hi) {
          v[j] = _mm256_loadu_ps(rows[k].src + (p0 - rows[k].lo));
        } else {
          vectors = false;
        }
      }
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
