#include "transpose.hpp"

#include "isa.hpp"
#include "kernel_isa.hpp"
#include "transpose_few_channels_impl.hpp"

namespace convjit::detail {
namespace {

void transpose_portable(int64_t rows, int64_t cols, ConstRows src, Rows dst) {
  constexpr int64_t kTile = 16;  // 16 strided rows stay in L1
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = r0 + kTile < rows ? r0 + kTile : rows;
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = c0 + kTile < cols ? c0 + kTile : cols;
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) dst.data[c * dst.stride + r] = src.data[r * src.stride + c];
      }
    }
  }
}

}  // namespace

void transpose_matrix(int64_t rows, int64_t cols, ConstRows src, Rows dst) {
#if defined(__x86_64__)
  // 16-row blocks store 16 destination rows at once: where those are a multiple of 4 KiB apart
  // they share one L1 set, more than its ways. AVX2's 8-column strips (8 such rows) take them, as
  // they did before the AVX-512 build (not timed against it there).
  const bool rows_share_a_set = dst.stride * int64_t(sizeof(float)) % 4096 == 0;
  if (process_may_use(jit::Isa::Avx512) && !rows_share_a_set) return avx512::transpose_matrix(rows, cols, src, dst);
  if (jit::host_has(jit::Isa::Avx2Fma)) return avx2::transpose_matrix(rows, cols, src, dst);
#endif
  transpose_portable(rows, cols, src, dst);
}

void transpose_few_channels(int64_t channels, int64_t pixels, const float* src, float* dst, bool to_nchw) {
#if defined(__x86_64__)
  if (process_may_use(jit::Isa::Avx512)) return avx512::transpose_few_channels(channels, pixels, src, dst, to_nchw);
  if (jit::host_has(jit::Isa::Avx2Fma)) return avx2::transpose_few_channels(channels, pixels, src, dst, to_nchw);
#endif
  run_transpose_few_channels(channels, pixels, src, dst, to_nchw);
}

}  // namespace convjit::detail
