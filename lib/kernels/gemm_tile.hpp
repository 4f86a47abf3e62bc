// The register tile every generic kernel reduces to: C (m x n, m <= kTileRows, n <= kTileCols)
// = A (m x k) * B (k x n). Each row of B is kTileCols floats, either packed one after another or
// found through a table of row pointers (so rows that already lie contiguous in the input are
// read in place, unpacked).
//
// Numbers: each C element is one chain of fused multiply-adds over r = 0..k-1 in order, started
// from 0 (or from C when accumulating), then + bias, then relu. Splitting k across calls with
// `accumulate` continues the same chain, so results do not depend on the blocking.
#pragma once

#include <cstdint>

namespace convjit::detail {

inline constexpr int kTileRows = 6;
inline constexpr int kTileCols = 16;

struct GemmTile {
  int64_t k;       // reduction length
  const float* a;  // A(i, r) = a[i * a_row_stride + r * a_step]
  int64_t a_row_stride, a_step;
  const float* b;              // B(r, j) = b[r * kTileCols + j] when b_rows is null
  const float* const* b_rows;  // else B(r, j) = b_rows[r][j]; columns >= n are read, ignored
  float* c;                    // C(i, j) = c[i * c_row_stride + j * c_col_stride]
  int64_t c_row_stride, c_col_stride;
  int rows, cols;     // valid m and n
  bool accumulate;    // C += A*B instead of C = A*B
  const float* bias;  // per row, or null
  bool relu;
};

void gemm_tile(const GemmTile& tile);  // the widest build the host has (gemm_tile.cpp)
// The portable build, for hosts without AVX2/FMA: the same chain per element, with std::fma (every
// ISA's build gives its bits).
void gemm_tile_portable(const GemmTile& tile);

// The register tile over all of an m x n block of C: rows in steps of kTileRows, columns in panels
// of kTileCols, panel by panel within each step (AVX-512: up to four panels at once). `first` is
// the tile of block (0, 0) (its rows and cols are set here); panel p reads B at b + p *
// b_panel_stride (or b_rows + p * b_panel_stride).
void gemm_blocks(const GemmTile& first, int64_t m, int64_t n, int64_t b_panel_stride);

namespace avx2 {
void gemm_tile(const GemmTile& tile);
}  // namespace avx2
namespace avx512 {
void gemm_tile(const GemmTile& tile);
// 2-4 panels at once, the last maybe partial (C contiguous; tile.cols up to panels * kTileCols):
// B of panel q at b (or b_rows) + q * panel_stride.
void gemm_tile_panels(const GemmTile& tile, int panels, int64_t panel_stride);
}  // namespace avx512

}  // namespace convjit::detail
