#include <immintrin.h>

#include <algorithm>

#include "simd_avx512.hpp"
#include "transpose.hpp"
#include "transpose_few_channels_impl.hpp"

namespace convjit::detail::avx512 {
namespace {

using F = Avx512Floats;

// The block of up to 16 x 16 at src into dst, transposed in registers: only its own rows and
// columns are loaded and stored (masked where it is smaller, missing rows read as zeros).
template <bool Whole>
inline __attribute__((always_inline)) void transpose_block(const float* src, int64_t src_stride, float* dst,
                                                           int64_t dst_stride, int64_t rows, int64_t cols) {
  const F::Mask columns = F::first_lanes(cols), lanes = F::first_lanes(rows);
  F::Vec r[F::kLanes];
  for (int i = 0; i < F::kLanes; ++i) {
    if (Whole)
      r[i] = F::load(src + i * src_stride);
    else
      r[i] = i < rows ? F::load(src + i * src_stride, columns) : F::zero();
  }
  F::transpose_to(
      r, [&](int j, F::Vec row) __attribute__((always_inline)) {
        if (Whole)
          F::store(dst + j * dst_stride, row);
        else if (j < cols)
          F::store(dst + j * dst_stride, row, lanes);
      });
}

}  // namespace

void transpose_matrix(int64_t rows, int64_t cols, ConstRows src, Rows dst) {
  // Strips of 16 columns (a cache line of each row), down all the rows, so each destination row is
  // written front to back. Each block's rows two lines on are fetched ahead: a strip's rows are
  // more streams than the hardware prefetchers follow (a weight packing's 32 output channels).
  constexpr int64_t kAhead = 2 * F::kLanes;
  for (int64_t c = 0; c < cols; c += F::kLanes) {
    const int64_t strip = std::min<int64_t>(F::kLanes, cols - c);
    for (int64_t r = 0; r < rows; r += F::kLanes) {
      const int64_t block_rows = std::min<int64_t>(F::kLanes, rows - r);
      const float* from = src.data + r * src.stride + c;
      for (int64_t i = 0; i < block_rows; ++i) {
        _mm_prefetch(reinterpret_cast<const char*>(from + i * src.stride + kAhead), _MM_HINT_T0);
      }
      float* to = dst.data + c * dst.stride + r;
      if (strip == F::kLanes && block_rows == F::kLanes) {
        transpose_block<true>(from, src.stride, to, dst.stride, block_rows, strip);
      } else {
        transpose_block<false>(from, src.stride, to, dst.stride, block_rows, strip);
      }
    }
  }
  F::leave();
}

void transpose_few_channels(int64_t channels, int64_t pixels, const float* src, float* dst, bool to_nchw) {
  run_transpose_few_channels(channels, pixels, src, dst, to_nchw);
  _mm256_zeroupper();
}

}  // namespace convjit::detail::avx512
