// The forward driver: validates, splits y into row tiles over threads, and runs the tile kernel
// of the tier in force on each (today tier 0, conv_tile_generic).
#include <algorithm>

#include "lib/conv_tile_generic.hpp"
#include "lib/gemm_tile.hpp"
#include "lib/geometry.hpp"
#include "lib/ops_internal.hpp"
#include "lib/threads.hpp"

namespace convjit::detail {
namespace {

// Packed panels of one tile should stay in L2 next to the weights they meet.
constexpr int64_t kPackedFloatsTarget = 32 * 1024;

struct ForwardTiling {
  int64_t ow_tile, ow_tiles, oc_chunk, oc_chunks;
  int64_t tasks() const { return ow_tiles * oc_chunks; }  // per (n, group, od, oh)
};

ForwardTiling plan_forward(const ConvGeometry& g) {
  ForwardTiling t{};
  const int64_t ow = g.out[2];
  t.ow_tiles = std::max<int64_t>(1, (ow * g.reduction + kPackedFloatsTarget - 1) / kPackedFloatsTarget);
  t.ow_tiles = std::min(t.ow_tiles, (ow + kTileCols - 1) / kTileCols);
  t.ow_tile = ((ow + t.ow_tiles - 1) / t.ow_tiles + kTileCols - 1) / kTileCols * kTileCols;
  t.ow_tiles = (ow + t.ow_tile - 1) / t.ow_tile;
  // Few rows (small images, batch 1): split the channels too, so every thread gets work.
  const int64_t rows = g.batch * g.groups * g.out[0] * g.out[1] * t.ow_tiles;
  const int64_t wanted = 4 * int64_t(thread_count());
  t.oc_chunks = 1;
  if (rows < wanted) {
    t.oc_chunks = std::min((wanted + rows - 1) / rows, (g.oc_per_group + kTileRows - 1) / kTileRows);
  }
  t.oc_chunk = ((g.oc_per_group + t.oc_chunks - 1) / t.oc_chunks + kTileRows - 1) / kTileRows * kTileRows;
  t.oc_chunks = (g.oc_per_group + t.oc_chunk - 1) / t.oc_chunk;
  return t;
}

}  // namespace

Status conv_forward(const convjit_conv_params* params, const float* x, const float* w, const float* bias,
                    int32_t activation, float* y) {
  CONVJIT_RETURN_IF_ERROR(require_pointers({{params, "params"}}));
  ConvGeometry g;
  CONVJIT_RETURN_IF_ERROR(make_conv_geometry(*params, &g));
  CONVJIT_RETURN_IF_ERROR(require_pointers({{x, "x"}, {w, "w"}, {y, "y"}}));
  if (activation != CONVJIT_ACT_IDENTITY && activation != CONVJIT_ACT_RELU) {
    return Status::invalid("activation = " + std::to_string(activation) +
                           ": must be CONVJIT_ACT_IDENTITY (0) or CONVJIT_ACT_RELU (1)");
  }

  const ForwardTiling tiling = plan_forward(g);
  const int64_t rows_per_image = g.groups * g.out[0] * g.out[1];
  const convjit_conv_tile_fn kernel = conv_tile_generic;
  parallel_for(g.batch * rows_per_image * tiling.tasks(), g.flops(), [&](int64_t task) {
    const int64_t oc_chunk = task % tiling.oc_chunks;
    const int64_t ow_tile = task / tiling.oc_chunks % tiling.ow_tiles;
    int64_t row = task / tiling.tasks();
    const int64_t oh = row % g.out[1];
    row /= g.out[1];
    const int64_t od = row % g.out[0];
    row /= g.out[0];
    const int64_t group = row % g.groups, n = row / g.groups;

    const int64_t oc = group * g.oc_per_group + oc_chunk * tiling.oc_chunk;
    const int64_t ow = ow_tile * tiling.ow_tile;
    convjit_conv_tile tile;
    tile.x = x + n * g.x.batch + group * g.ic_per_group * g.x.channel;
    tile.w = w + oc * g.reduction;
    tile.bias = bias ? bias + oc : nullptr;
    tile.y = y + n * g.y.batch + oc * g.y.channel + od * g.y.spatial[0] + oh * g.y.spatial[1] + ow * g.y.spatial[2];
    tile.oc_count = std::min(tiling.oc_chunk, (group + 1) * g.oc_per_group - oc);
    tile.od = od;
    tile.oh = oh;
    tile.ow_begin = ow;
    tile.ow_count = std::min(tiling.ow_tile, g.out[2] - ow);
    tile.relu = activation == CONVJIT_ACT_RELU;
    tile.scratch_floats = int64_t(kScratchFloats);
    tile.scratch = thread_scratch(kScratchFloats);
    kernel(&g, &tile);
  });
  return Status::success();
}

}  // namespace convjit::detail
