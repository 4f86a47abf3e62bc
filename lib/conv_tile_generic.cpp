#include "lib/conv_tile_generic.hpp"

#include <algorithm>

#include "lib/gemm_tile.hpp"
#include "lib/patch_pack.hpp"

namespace convjit::detail {

void conv_tile_generic(const convjit_conv_problem* problem, const convjit_conv_tile* t) {
  const ConvGeometry& g = static_cast<const ConvGeometry&>(*problem);
  const int64_t panels = (t->ow_count + kTileCols - 1) / kTileCols;
  const int64_t panel_floats_per_k = panels * kTileCols;
  // Reduction block: as much of k as fits scratch; blocks continue each output's FMA chain.
  const int64_t k_block = std::max<int64_t>(1, t->scratch_floats / panel_floats_per_k);
  float* packed = t->scratch;

  for (int64_t k0 = 0; k0 < g.reduction; k0 += k_block) {
    const int64_t kc = std::min(k_block, g.reduction - k0);
    const bool last_block = k0 + kc == g.reduction;
    // Panel p holds X(k, 16p .. 16p+15) as kc rows of 16; the ow tail is zero-filled.
    for_each_patch_row(g, t->x, t->od, t->oh, t->ow_begin, t->ow_count, k0, kc,
                       [&](int64_t k, const PatchRow<const float>& row) {
                         store_patch_row(row, panel_floats_per_k, packed + k * kTileCols, kc * kTileCols, 1);
                       });
    for (int64_t oc = 0; oc < t->oc_count; oc += kTileRows) {
      for (int64_t p = 0; p < panels; ++p) {
        GemmTile tile;
        tile.k = kc;
        tile.a = t->w + oc * g.reduction + k0;
        tile.a_row_stride = g.reduction;
        tile.a_step = 1;
        tile.b = packed + p * kc * kTileCols;
        tile.c = t->y + oc * g.y.channel + p * kTileCols * g.y.spatial[2];
        tile.c_row_stride = g.y.channel;
        tile.c_col_stride = g.y.spatial[2];
        tile.rows = int(std::min<int64_t>(kTileRows, t->oc_count - oc));
        tile.cols = int(std::min<int64_t>(kTileCols, t->ow_count - p * kTileCols));
        tile.accumulate = k0 > 0;
        tile.bias = last_block && t->bias ? t->bias + oc : nullptr;
        tile.relu = last_block && t->relu;
        gemm_tile(tile);
      }
    }
  }
}

}  // namespace convjit::detail
