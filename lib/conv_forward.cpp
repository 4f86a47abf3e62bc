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

// Tiles are runs of consecutive pixels of one output plane (n, od), so small images still fill
// whole 16-column panels.
struct ForwardTiling {
  int64_t pixel_tile, pixel_tiles, oc_chunk, oc_chunks;
  int64_t tasks() const { return pixel_tiles * oc_chunks; }  // per (n, group, od)
};

ForwardTiling plan_forward(const ConvGeometry& g) {
  ForwardTiling t{};
  const int64_t pixels = g.out[1] * g.out[2];
  const int64_t panels = (pixels + kTileCols - 1) / kTileCols;
  // Enough tiles that one tile's packed panels stay near kPackedFloatsTarget ...
  int64_t tiles = std::max<int64_t>(1, (pixels * g.reduction + kPackedFloatsTarget - 1) / kPackedFloatsTarget);
  // ... and that every thread has some, when the planes are few.
  const int64_t planes = g.batch * g.groups * g.out[0];
  const int64_t wanted = 4 * int64_t(thread_count());
  if (planes * tiles < wanted) tiles = (wanted + planes - 1) / planes;
  tiles = std::min(tiles, panels);
  t.pixel_tile = (panels + tiles - 1) / tiles * kTileCols;
  t.pixel_tiles = (pixels + t.pixel_tile - 1) / t.pixel_tile;
  // Still few tiles (one small plane): split the channels too.
  t.oc_chunks = 1;
  if (planes * t.pixel_tiles < wanted) {
    t.oc_chunks = std::min((wanted + planes * t.pixel_tiles - 1) / (planes * t.pixel_tiles),
                           (g.oc_per_group + kTileRows - 1) / kTileRows);
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
  const int64_t pixels = g.out[1] * g.out[2];
  const convjit_conv_tile_fn kernel = conv_tile_generic;
  parallel_for(g.batch * g.groups * g.out[0] * tiling.tasks(), g.flops(), [&](int64_t task) {
    const int64_t oc_chunk = task % tiling.oc_chunks;
    const int64_t pixel_tile = task / tiling.oc_chunks % tiling.pixel_tiles;
    int64_t plane = task / tiling.tasks();
    const int64_t od = plane % g.out[0];
    plane /= g.out[0];
    const int64_t group = plane % g.groups, n = plane / g.groups;

    const int64_t oc = group * g.oc_per_group + oc_chunk * tiling.oc_chunk;
    const int64_t first_pixel = pixel_tile * tiling.pixel_tile;
    convjit_conv_tile tile;
    tile.x = x + n * g.x.batch + group * g.ic_per_group * g.x.channel;
    tile.w = w + oc * g.reduction;
    tile.bias = bias ? bias + oc : nullptr;
    tile.y = y + n * g.y.batch + oc * g.y.channel + od * g.y.spatial[0] + first_pixel * g.y.spatial[2];
    tile.oc_count = std::min(tiling.oc_chunk, (group + 1) * g.oc_per_group - oc);
    tile.od = od;
    tile.oh = first_pixel / g.out[2];
    tile.ow = first_pixel % g.out[2];
    tile.pixel_count = std::min(tiling.pixel_tile, pixels - first_pixel);
    tile.relu = activation == CONVJIT_ACT_RELU;
    tile.scratch_floats = int64_t(kScratchFloats);
    tile.scratch = thread_scratch(kScratchFloats);
    kernel(&g, &tile);
  });
  return Status::success();
}

}  // namespace convjit::detail
