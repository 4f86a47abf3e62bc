// A matrix transpose, dst[c][r] = src[r][c] for an r x c row-major src: the layout copies of the
// rewrite rules (NHWC <-> NCHW images, per image [pixel][channel] <-> [channel][pixel]) and the
// driver's k-major weights for packing row kernels (lib/driver/packed_weights.hpp). In blocks
// transposed in registers: 16 x 16 on AVX-512 (the edges masked), 8 x 8 on AVX2 (the edges element
// by element); images of few channels
// with the channel count a constant (transpose_few_channels_impl.hpp). Copies, so every build
// gives the same result.
#pragma once

#include <cstdint>

namespace convjit::detail {

// Rows of a matrix within a larger one: row r at data + r * stride (stride >= the row's length;
// the floats between rows are neither read nor written).
struct ConstRows {
  const float* data;
  int64_t stride;
};
struct Rows {
  float* data;
  int64_t stride;
};

// The widest build the host has (transpose.cpp): dst[c][r] = src[r][c] for r < rows, c < cols.
void transpose_matrix(int64_t rows, int64_t cols, ConstRows src, Rows dst);
inline void transpose_matrix(int64_t rows, int64_t cols, const float* src, float* dst) {
  transpose_matrix(rows, cols, {src, cols}, {dst, rows});
}

// One image of 1 to kMaxFewChannels channels between [pixel][channel] and [channel][pixel]
// (to_nchw: from the first), src and dst apart: the widest build the host has.
inline constexpr int64_t kMaxFewChannels = 8;
void transpose_few_channels(int64_t channels, int64_t pixels, const float* src, float* dst, bool to_nchw);

namespace avx2 {
void transpose_matrix(int64_t rows, int64_t cols, ConstRows src, Rows dst);
void transpose_few_channels(int64_t channels, int64_t pixels, const float* src, float* dst, bool to_nchw);
}  // namespace avx2

namespace avx512 {
void transpose_matrix(int64_t rows, int64_t cols, ConstRows src, Rows dst);
void transpose_few_channels(int64_t channels, int64_t pixels, const float* src, float* dst, bool to_nchw);
}  // namespace avx512

}  // namespace convjit::detail
