// A matrix transpose, dst[c][r] = src[r][c] for an r x c row-major src: the layout copies of the
// rewrite rules (NHWC <-> NCHW images, per image [pixel][channel] <-> [channel][pixel]) and the
// driver's k-major weights for packing row kernels (lib/driver/packed_weights.hpp). In 8 x 8
// blocks transposed in registers (AVX2), the edges element by element; a copy, so every build
// gives the same result.
#pragma once

#include <cstdint>

namespace convjit::detail {

// The widest build the host has (transpose.cpp). dst rows are dst_stride >= rows floats apart
// (the floats between them are left alone).
void transpose_matrix(int64_t rows, int64_t cols, const float* src, float* dst, int64_t dst_stride);
inline void transpose_matrix(int64_t rows, int64_t cols, const float* src, float* dst) {
  transpose_matrix(rows, cols, src, dst, rows);
}

namespace avx2 {
void transpose_matrix(int64_t rows, int64_t cols, const float* src, float* dst, int64_t dst_stride);
}  // namespace avx2

}  // namespace convjit::detail
