#include "gemm_tile.hpp"

#include <algorithm>
#include <cmath>

#include "kernel_isa.hpp"

namespace convjit::detail {
namespace {

using GemmTileFn = void (*)(const GemmTile&);

// The widest the host has within CONVJIT_MAX_ISA (kernel_isa.hpp): every ISA's tile gives the same bits.
GemmTileFn select_gemm_tile() {
#if defined(__x86_64__)
  if (process_may_use(jit::Isa::Avx512)) return avx512::gemm_tile;
  if (jit::host_has(jit::Isa::Avx2Fma)) return avx2::gemm_tile;
#endif
  return gemm_tile_portable;
}

}  // namespace

void gemm_tile_portable(const GemmTile& t) {
  for (int i = 0; i < t.rows; ++i) {
    const float* a_row = t.a + i * t.a_row_stride;
    for (int j = 0; j < t.cols; ++j) {
      float* c = t.c + i * t.c_row_stride + j * t.c_col_stride;
      float acc = t.accumulate ? *c : 0.0f;
      for (int64_t r = 0; r < t.k; ++r) {
        const float b = t.b_rows ? t.b_rows[r][j] : t.b[r * kTileCols + j];
        acc = std::fma(a_row[r * t.a_step], b, acc);
      }
      if (t.bias) acc += t.bias[i];
      if (t.relu) acc = std::max(acc, 0.0f);
      *c = acc;
    }
  }
}

void gemm_tile(const GemmTile& tile) {
  static const GemmTileFn fn = select_gemm_tile();
  fn(tile);
}

void gemm_blocks(const GemmTile& first, int64_t m, int64_t n, int64_t b_panel_stride) {
  static const bool several_panels = [] {
#if defined(__x86_64__)
    return process_may_use(jit::Isa::Avx512);
#else
    return false;
#endif
  }();
  const int64_t panels = (n + kTileCols - 1) / kTileCols;
  for (int64_t i = 0; i < m; i += kTileRows) {
    for (int64_t p = 0; p < panels;) {
      GemmTile tile = first;
      tile.a += i * first.a_row_stride;
      if (first.b_rows)
        tile.b_rows += p * b_panel_stride;
      else
        tile.b += p * b_panel_stride;
      tile.c += i * first.c_row_stride + p * kTileCols * first.c_col_stride;
      if (first.bias) tile.bias += i;
      tile.rows = int(std::min<int64_t>(kTileRows, m - i));
      const int64_t cols_left = n - p * kTileCols;
      tile.cols = int(std::min<int64_t>(kTileCols, cols_left));
#if defined(__x86_64__)
      // Up to four panels, the last maybe partial, share each broadcast of A (the same chain per
      // element as one at a time).
      if (several_panels && first.c_col_stride == 1 && cols_left > kTileCols) {
        const int panels_now = int(std::min<int64_t>(4, (cols_left + kTileCols - 1) / kTileCols));
        tile.cols = int(std::min<int64_t>(panels_now * kTileCols, cols_left));
        avx512::gemm_tile_panels(tile, panels_now, b_panel_stride);
        p += panels_now;
        continue;
      }
#endif
      gemm_tile(tile);
      ++p;
    }
  }
}

}  // namespace convjit::detail
