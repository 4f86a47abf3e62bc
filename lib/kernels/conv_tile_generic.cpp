#include "conv_tile_generic.hpp"

#include <algorithm>

#include "gemm_tile.hpp"
#include "patch_pack.hpp"

namespace convjit::detail {
namespace {

constexpr int64_t kPointerFloats = (sizeof(void*) + sizeof(float) - 1) / sizeof(float);

// Fills the row tables of all panels of a tile for k in [k0, k0 + kc): panel p's row k is at
// rows[p * kc + k]. Columns are the tile's consecutive output pixels, walked one output row (run)
// at a time. A panel row whose 16 inputs lie contiguous and real in x (NCHW, stride 1, inside
// one run, away from the padding) is read in place; the others are packed, 16 floats each, at
// packed + (p * kc + k) * 16.
void fill_panels(const ConvGeometry& g, const convjit_conv_tile& t, int64_t k0, int64_t kc, float* packed,
                 const float** rows) {
  int64_t oh = t.oh, ow = t.ow;
  for (int64_t column = 0; column < t.pixel_count; column += g.out[2] - ow, ow = 0, ++oh) {
    const int64_t run = std::min(t.pixel_count - column, g.out[2] - ow);
    const int64_t first_panel = column / kTileCols, last_panel = (column + run - 1) / kTileCols;
    for_each_patch_row(g, t.x, t.od, oh, ow, run, k0, kc, [&](int64_t k, const PatchRow<const float>& row) {
      for (int64_t p = first_panel; p <= last_panel; ++p) {
        const int64_t lo = std::max(column, p * kTileCols) - column;              // run-local columns
        const int64_t hi = std::min(column + run, (p + 1) * kTileCols) - column;  // in this panel
        if (hi - lo == kTileCols && row.step == 1 && row.lo <= lo && hi <= row.hi) {
          rows[p * kc + k] = row.src + (lo - row.lo);
          continue;
        }
        float* dst = packed + (p * kc + k) * kTileCols;
        PatchRow<const float> part{row.src, row.step, std::clamp<int64_t>(row.lo - lo, 0, hi - lo),
                                   std::clamp<int64_t>(row.hi - lo, 0, hi - lo)};
        if (part.lo < part.hi) part.src += std::max<int64_t>(0, lo - row.lo) * row.step;  // only inside the row
        store_patch_row(part, hi - lo, dst + (column + lo - p * kTileCols), 0, 1);
        rows[p * kc + k] = dst;
      }
    });
  }
}

}  // namespace

void conv_tile_generic(const convjit_conv_problem* problem, const convjit_conv_tile* t) {
  const ConvGeometry& g = static_cast<const ConvGeometry&>(*problem);
  const int64_t panels = (t->pixel_count + kTileCols - 1) / kTileCols;
  // Per k and panel: one packed row of 16 floats and one row pointer.
  const int64_t scratch_per_k = panels * (kTileCols + kPointerFloats);
  // Reduction block: as much of k as fits scratch; blocks continue each output's FMA chain.
  const int64_t k_block = std::max<int64_t>(1, t->scratch_floats / scratch_per_k);
  float* packed = t->scratch;
  const int64_t pixel_step = g.y.spatial[2];  // consecutive pixels of a plane are uniformly spaced in y

  for (int64_t k0 = 0; k0 < g.reduction; k0 += k_block) {
    const int64_t kc = std::min(k_block, g.reduction - k0);
    const bool last_block = k0 + kc == g.reduction;
    // Panel p: packed rows at packed + (p * kc + k) * 16, row pointers at rows[p * kc + k].
    const float** rows = reinterpret_cast<const float**>(packed + panels * kc * kTileCols);
    if (t->pixel_count % kTileCols != 0) {  // keep the last panel's tail lanes finite
      float* last = packed + (panels - 1) * kc * kTileCols;
      std::fill(last, last + kc * kTileCols, 0.0f);
    }
    fill_panels(g, *t, k0, kc, packed, rows);
    GemmTile tile{};
    tile.k = kc;
    tile.a = t->w + k0;
    tile.a_row_stride = g.reduction;
    tile.a_step = 1;
    tile.b_rows = rows;
    tile.c = t->y;
    tile.c_row_stride = g.y.channel;
    tile.c_col_stride = pixel_step;
    tile.accumulate = k0 > 0;
    tile.bias = last_block ? t->bias : nullptr;
    tile.relu = last_block && t->relu;
    gemm_blocks(tile, t->oc_count, t->pixel_count, kc);
  }
}

}  // namespace convjit::detail
