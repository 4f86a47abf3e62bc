#include <immintrin.h>

#include "transpose.hpp"
#include "transpose_8x8_avx2.hpp"
#include "transpose_few_channels_impl.hpp"

namespace convjit::detail::avx2 {
namespace {

// The 8 x 8 block at src (row stride src_stride) into dst (row stride dst_stride), transposed.
inline void transpose_block(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  store_transposed_8x8(r, dst, dst_stride);
}

}  // namespace

void transpose_matrix(int64_t rows, int64_t cols, ConstRows src, Rows dst) {
  // Sixteen columns of src at a time (a cache line of each row), down all its rows, so each
  // destination row is written front to back; eight when destination rows are a multiple of 4 KiB
  // apart (32 x 32 images): sixteen such rows share one L1 set, more than its ways.
  const int64_t strip_columns = (dst.stride * int64_t(sizeof(float))) % 4096 == 0 ? 8 : 16;
  int64_t c = 0;
  for (; c + 8 <= cols; c += 16) {
    const int64_t strips = c + strip_columns <= cols ? strip_columns / 8 : 1;
    int64_t r = 0;
    for (; r + 8 <= rows; r += 8) {
      // Each row's line four strips on, into L2: a strip's rows are more streams than the
      // hardware prefetchers follow (a weight packing's 32 output channels), and rows a multiple
      // of 2 KiB apart (18 KiB for resnet_3x3_7) fall in two L1 sets, which cannot hold them all.
      for (int i = 0; i < 8; ++i) {
        _mm_prefetch(reinterpret_cast<const char*>(src.data + (r + i) * src.stride + c + 4 * strip_columns),
                     _MM_HINT_T1);
      }
      for (int64_t s = 0; s < strips; ++s) {
        transpose_block(src.data + r * src.stride + c + 8 * s, src.stride, dst.data + (c + 8 * s) * dst.stride + r,
                        dst.stride);
      }
    }
    for (; r < rows; ++r) {
      for (int64_t j = c; j < c + 8 * strips; ++j) dst.data[j * dst.stride + r] = src.data[r * src.stride + j];
    }
    if (strips == 1) c -= 8;  // 8 columns done, not 16
  }
  for (; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) dst.data[c * dst.stride + r] = src.data[r * src.stride + c];
  }
  _mm256_zeroupper();
}

void transpose_few_channels(int64_t channels, int64_t pixels, const float* src, float* dst, bool to_nchw) {
  run_transpose_few_channels(channels, pixels, src, dst, to_nchw);
  _mm256_zeroupper();
}

}  // namespace convjit::detail::avx2
