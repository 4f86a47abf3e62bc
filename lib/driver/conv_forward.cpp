// The forward driver: splits y into tiles over threads and runs the kernels select_tier chose on
// each: tier 0's tile kernel, or a JIT row kernel over input views (lib/driver/row_views.hpp), segment by
// segment, channel blocks or rows outside, or several rows flattened into one segment.
#include "conv_forward.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <utility>

#include "backend.hpp"
#include "geometry.hpp"
#include "packed_weights.hpp"
#include "row_views.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

// Packed panels of one tile should stay in L2 next to the weights they meet.
constexpr int64_t kPackedFloatsTarget = 32 * 1024;

// Tiles are runs of consecutive pixels of one output plane (n, od), so small images still fill
// whole 16-column panels.
struct ForwardTiling {
  int64_t pixel_tile, pixel_tiles;
  // A group's output channels in oc_chunks chunks of whole granules (the last granule may be
  // short), the granules shared out evenly: chunks of the rounded-up size with the rest in a last
  // one keep a thread at work while the other waits (256 channels in 8: seven of 36 and one of 4).
  int64_t oc_granule, oc_granules, oc_chunks;
  int64_t oc_chunk;                                          // the largest chunk's channels
  int64_t tasks() const { return pixel_tiles * oc_chunks; }  // per (n, group, od)
  // Chunk c's channels of a group of oc_per_group: [first, end).
  std::pair<int64_t, int64_t> oc_range(int64_t c, int64_t oc_per_group) const {
    // chunk * oc_granules / oc_chunks without the product (chunk < oc_chunks, a few per thread)
    const int64_t whole = oc_granules / oc_chunks, rest = oc_granules % oc_chunks;
    auto first = [&](int64_t chunk) {
      return std::min(oc_per_group, (chunk * whole + chunk * rest / oc_chunks) * oc_granule);
    };
    return {first(c), first(c + 1)};
  }
};

// What the kernel that runs asks of its tiles.
struct TileNeeds {
  // The tile packs im2col panels (so tiles are sized to keep them in L2); other tiles (direct,
  // row kernels) take whole planes unless their input or the threads need more tiles.
  bool packs_patches;
  // Pixel tiles are multiples of it (the tile's panel width), unless rounded to whole rows below.
  int64_t pixel_granule;
  // Channel chunks are multiples of it (the register tile's rows, or a packing kernel's block).
  int64_t oc_granule;
  // Tiles start and end at row boundaries (flattened row kernels).
  bool whole_rows;
  // The tile runs row by row, segments shorter than the kernel's smallest block on tier 0's tile
  // (row kernels): a tile of a row or more ends where a row ends, so no segment is a sliver.
  bool row_segments;
  // The tile packs its channels' weights (a packing row kernel): more tiles pack them again, and
  // the size of its input does not cut a plane into tiles.
  bool packs_weights;
  // The tile copies its input rows into a band (make_band: at most half the scratch; packing row
  // kernels reading padding along W, and flattened ones): tiles of few enough rows that it holds
  // them.
  bool banded;
  // The threads' tasks come from channel chunks before pixel tiles (a packing kernel's tiles pack their
  // weights per tile: more pixel tiles pack them again, more chunks do not).
  bool channels_first;
};

ForwardTiling plan_tiling(const ConvGeometry& g, int threads, const TileNeeds& needs) {
  const int64_t oc_granule = needs.oc_granule, pixel_granule = needs.pixel_granule;
  ForwardTiling t{};
  const int64_t pixels = g.out[1] * g.out[2];
  const int64_t panels = (pixels + pixel_granule - 1) / pixel_granule;
  const int64_t planes = g.batch * g.groups * g.out[0];
  // One thread takes a plane in as few tiles as keep a tile's data near the kernel across its
  // channel blocks (a tile's channel blocks each read its input, and each tile reads its chunk's
  // weights again); more threads want a few tasks each.
  const int64_t wanted = threads <= 1 ? 1 : tasks_wanted(threads);
  const int64_t granules = (g.oc_per_group + oc_granule - 1) / oc_granule;
  t.oc_chunks = needs.channels_first && planes < wanted ? std::min((wanted + planes - 1) / planes, granules) : 1;
  // Enough tiles that one tile's packed panels stay near kPackedFloatsTarget, or that a tile's
  // input stays in half of L2 for kernels that read it once per channel block (a packing row
  // kernel takes a plane whole on one thread: more tiles would pack its weights again) ...
  int64_t tiles = 1;
  if (needs.packs_patches) {
    tiles = std::max<int64_t>(1, (pixels * g.reduction + kPackedFloatsTarget - 1) / kPackedFloatsTarget);
  } else if (!needs.packs_weights) {
    // In double: the plane's input bytes with a dilation of any int64 may not fit one.
    const double input_bytes = double(g.ic_per_group) * double((g.kernel[0] - 1) * g.dilation[0] + 1) *
                               double(g.in[1]) * double(g.in[2]) * double(sizeof(float));
    tiles = int64_t(std::min(double(panels), std::ceil(input_bytes / double(l2_cache_bytes() / 2))));
  }
  // ... and that every thread has some, when the planes are few.
  const int64_t parts = planes * t.oc_chunks;
  if (parts * tiles < wanted) tiles = (wanted + parts - 1) / parts;
  tiles = std::min(tiles, panels);
  t.pixel_tile = (panels + tiles - 1) / tiles * pixel_granule;
  if (needs.whole_rows || (needs.row_segments && t.pixel_tile >= g.out[2]))
    t.pixel_tile = (t.pixel_tile + g.out[2] - 1) / g.out[2] * g.out[2];
  if (needs.banded) {  // few enough output rows that the tile's band holds their input rows
    const int64_t pitch = (g.out[2] - 1) * g.stride[2] + (g.kernel[2] - 1) * g.dilation[2] + 1;
    const int64_t band_row = g.ic_per_group * ((g.kernel[0] - 1) * g.dilation[0] + 1) * pitch;
    const int64_t input_rows = (int64_t(kScratchFloats) / 2 - 16) / band_row - (g.kernel[1] - 1) * g.dilation[1];
    const int64_t rows = input_rows >= 1 ? (input_rows - 1) / g.stride[1] + 1 : 0;
    // A tile of more than rows - 1 rows' pixels that is not whole rows spans rows + 1: whole rows.
    if (rows >= 1 && t.pixel_tile > (rows - 1) * g.out[2]) t.pixel_tile = rows * g.out[2];
  }
  t.pixel_tiles = (pixels + t.pixel_tile - 1) / t.pixel_tile;
  // Still few tiles (one small plane): split the channels too.
  if (planes * t.oc_chunks * t.pixel_tiles < wanted) {
    t.oc_chunks = std::min((wanted + planes * t.pixel_tiles - 1) / (planes * t.pixel_tiles), granules);
  }
  t.oc_granule = oc_granule;
  t.oc_granules = granules;
  t.oc_chunk = (granules + t.oc_chunks - 1) / t.oc_chunks * oc_granule;
  return t;
}

// The grid map (conv_tile_abi.h) of a call's flattened tiles, for a kernel that compacts grids into
// y's dense rows: made once per call, for its largest tile (a tile of fewer rows reads a prefix),
// in the calling thread's buffer, which the team's threads read. Null `real`: no map.
struct GridMap {
  const uint8_t* real = nullptr;
  const int32_t* outputs = nullptr;
  int64_t pitch = 0;  // floats from one grid row to the next
};

GridMap make_grid_map(const ConvGeometry& g, const convjit_conv_kernel& specialized, int64_t rows) {
  // The tiles' rows are x's, or a band's padded rows where W's windows read padding.
  const int64_t width = g.out[2],
                pitch = g.windows_read_padding(2) ? width + (g.kernel[2] - 1) * g.dilation[2] : g.x.spatial[1];
  if (!specialized.compacts_grid || g.y.spatial[2] != 1 || g.y.spatial[1] != width || rows * pitch > INT32_MAX) {
    return {};
  }
  const int64_t pixels = rows * pitch, real_floats = (pixels + 63) / 64 * 16;  // whole 64-byte lines of bytes
  float* buffer = thread_grid_maps(size_t(real_floats + pixels));
  uint8_t* real = reinterpret_cast<uint8_t*>(buffer);
  int32_t* outputs = reinterpret_cast<int32_t*>(buffer + real_floats);
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(real + r * pitch, real + r * pitch + width, uint8_t(0x80));
    std::fill(real + r * pitch + width, real + (r + 1) * pitch, uint8_t(0));
    for (int64_t c = 0; c < width; ++c) outputs[r * pitch + c] = int32_t(r * width + c);
    std::fill(outputs + r * pitch + width, outputs + (r + 1) * pitch, int32_t((r + 1) * width));
  }
  return {real, outputs, pitch};
}

// A tile of whole stride-1 rows through a row kernel as one segment over its flattened input
// (jit::flattens_rows): outputs on the input's grid (the columns between rows are junk, their
// taps real inputs of neighbouring rows), the real ones straight into y where the kernel compacts
// grids with the call's map, else into scratch, channel block by channel block, and copied to y.
// Each real output is the row kernel's chain: the generic tier's numbers. False, with nothing
// written, when the input or the grid does not fit (the tile then goes row by row). grid_g is g
// with y.channel = the scratch floats per channel of the largest tile's grid.
bool run_flat_rows(const ConvGeometry& g, const ConvGeometry& grid_g, const GridMap& map,
                   const convjit_conv_kernel& specialized, const convjit_conv_tile& tile, const InputBand& band,
                   int64_t first_oc, int64_t end_oc, const float* w, const float* bias, float* y_tile) {
  const int64_t rows = tile.pixel_count / g.out[2];
  convjit_conv_tile flat = tile;
  int64_t pitch = 0;
  if (!flat_view(g, band, tile, &flat, &pitch)) return false;
  flat.ow = 0;
  flat.pixel_count = (rows - 1) * pitch + g.out[2];
  if (flat.pixel_count < specialized.min_row_pixels) return false;
  flat.scratch = tile.scratch + band.floats;
  flat.scratch_floats = tile.scratch_floats - band.floats;
  flat.w = w + first_oc * g.reduction;
  flat.bias = bias ? bias + first_oc : nullptr;
  flat.oc_count = end_oc - first_oc;
  if (map.real && map.pitch == pitch) {  // straight into y
    flat.grid_real = map.real;
    flat.grid_outputs = map.outputs;
    flat.y = y_tile + first_oc * g.y.channel;
    specialized.compute(&g, &flat);
    return true;
  }
  const int64_t grid_floats = grid_g.y.channel;
  const int64_t block = std::min(end_oc - first_oc, flat.scratch_floats / grid_floats);
  if (block < 1 || rows * pitch > grid_floats) return false;
  float* grid = flat.scratch;
  flat.scratch += block * grid_floats;
  flat.scratch_floats -= block * grid_floats;
  for (int64_t oc = first_oc; oc < end_oc; oc += block) {
    flat.w = w + oc * g.reduction;
    flat.bias = bias ? bias + oc : nullptr;
    flat.y = grid;
    flat.oc_count = std::min(block, end_oc - oc);
    specialized.compute(&grid_g, &flat);
    for (int64_t c = 0; c < flat.oc_count; ++c) {
      for (int64_t r = 0; r < rows; ++r) {
        const float* from = grid + c * grid_floats + r * pitch;
        std::copy(from, from + g.out[2], y_tile + (oc + c) * g.y.channel + r * g.y.spatial[1]);
      }
    }
  }
  return true;
}

// Whether some tap reads padding: only then are some row views copies.
bool any_tap_reads_padding(const ConvGeometry& g) {
  int64_t origin[3], extent[3];
  for (int d = 0; d < 3; ++d) {
    origin[d] = -g.pad_begin[d];
    extent[d] = (g.out[d] - 1) * g.stride[d] + (g.kernel[d] - 1) * g.dilation[d] + 1;
  }
  return reads_padding(g, origin, extent);
}

// A row kernel that packs no weights takes any channel count and loops over channel blocks inside each
// row, so a tile writes every channel's plane a row at a time: many interleaved write streams. With
// few FMAs per output those writes are the bottleneck, and the tile goes kFewStreamsChannels
// channels at a time over all its rows instead (its input, re-read per block, is small then too);
// with more FMAs a row's input kept in L1 across the channel blocks matters more
// (bench/RESULTS.md, "Why the tier rules ...").
constexpr int64_t kFewStreamsChannels = 4;
constexpr int64_t kFewStreamsMaxReduction = 64;

bool writes_few_streams(const ConvGeometry& g, const convjit_conv_kernel* specialized) {
  return specialized && specialized->row_kernel && !specialized->packs_weights &&
         g.reduction <= kFewStreamsMaxReduction;
}

// A channel block's [oc][k] weight rows for the generic tile: w's own, or, where the call packs a
// backward problem's weights in place (no w), formed into `room` the first time a segment of the
// block needs them.
class BlockRows {
 public:
  BlockRows(const ConvGeometry& g, const float* w, const BackwardWeights& w_backward, float* room, int64_t first_oc,
            int64_t oc_count)
      : g_(g), w_(w), w_backward_(w_backward), room_(room), first_oc_(first_oc), oc_count_(oc_count) {}
  const float* get() {
    if (w_) return w_ + first_oc_ * g_.reduction;
    if (!formed_) weight_rows_from_backward(g_, w_backward_, first_oc_, oc_count_, room_);
    formed_ = true;
    return room_;
  }

 private:
  const ConvGeometry& g_;
  const float* w_;
  const BackwardWeights w_backward_;
  float* room_;
  int64_t first_oc_, oc_count_;
  bool formed_ = false;
};

// A tile through a row kernel, segment by segment.
void run_rows(const ConvGeometry& g, convjit_conv_tile_fn generic, const convjit_conv_kernel& specialized,
              const convjit_conv_tile& tile, const InputBand& band, BlockRows& rows) {
  for_each_viewed_segment(g, specialized, tile, band, [&](convjit_conv_tile& segment, bool viewed, int64_t done) {
    segment.y = tile.y + done * g.y.spatial[2];
    if (viewed) {
      specialized.compute(&g, &segment);
    } else {
      segment.w = rows.get();
      generic(&g, &segment);
    }
  });
}

// How one forward call runs: chosen once per call, before any task.
struct ForwardPlan {
  convjit_conv_tile_fn generic;
  const convjit_conv_kernel* specialized;
  bool packed;      // the kernel reads the weights of oc_block channels packed ahead of the scratch
  bool flat;        // tiles of whole rows go to the row kernel as one flattened segment
  bool rows_outer;  // a packing row kernel's rows outside its channel blocks
  int64_t oc_block, packed_floats;
  // Packing from a backward problem's weights (run_conv_forward_on_backward_weights), and the room
  // after the packed block for the block's rows, formed where the generic tile needs them.
  BackwardWeights w_backward;
  int64_t rows_floats = 0;
  ForwardTiling tiling;
  ConvGeometry grid_g;  // flat only: g with y.channel = the scratch floats of the largest tile's grid
  GridMap grid_map;     // flat only, for a kernel that compacts grids
};

// Packs the weights of the channel block [first_oc, first_oc + oc_count) for the plan's packing
// kernel: from w's rows, or in place from a backward problem's weights.
void pack_block(const ConvGeometry& g, const ForwardPlan& p, const float* w, int64_t first_oc, int64_t oc_count,
                float* packed) {
  if (p.w_backward.w) {
    pack_weights_k_major_from_backward(g, p.w_backward, first_oc, oc_count, p.specialized->oc_block, packed);
  } else {
    pack_weights_k_major(g, w + first_oc * g.reduction, oc_count, p.specialized->oc_block, packed);
  }
}

// A tile through a packing row kernel, rows outside: each segment's view is made once and every
// channel block of [first_oc, end_oc) runs on it, its weights packed again per segment. y_tile is
// y at (n, channel 0, od, first pixel of the tile).
void run_rows_then_channel_blocks(const ConvGeometry& g, const ForwardPlan& p, const convjit_conv_tile& tile,
                                  const InputBand& band, int64_t first_oc, int64_t end_oc, const float* w,
                                  const float* bias, float* y_tile, float* packed) {
  const convjit_conv_kernel& specialized = *p.specialized;
  for_each_viewed_segment(g, specialized, tile, band, [&](const convjit_conv_tile& segment, bool viewed, int64_t done) {
    for (int64_t oc = first_oc; oc < end_oc; oc += specialized.oc_block) {
      convjit_conv_tile block = segment;
      block.bias = bias ? bias + oc : nullptr;
      block.y = y_tile + oc * g.y.channel + done * g.y.spatial[2];
      block.oc_count = std::min(specialized.oc_block, end_oc - oc);
      BlockRows rows(g, w, p.w_backward, packed + p.packed_floats, oc, block.oc_count);
      if (viewed) {
        pack_block(g, p, w, oc, block.oc_count, packed);
        specialized.compute(&g, &block);
      } else {
        block.w = rows.get();
        p.generic(&g, &block);
      }
    }
  });
}

ForwardPlan plan_conv_forward(const ConvGeometry& g, const ForwardKernels& kernels, int threads) {
  const convjit_conv_kernel* specialized = kernels.specialized;
  assert(kernels.generic->tile);
  ForwardPlan p{};
  p.generic = kernels.generic->tile;
  p.specialized = specialized;
  p.packed = specialized && specialized->packs_weights;
  // A problem too small to share runs on the calling thread: tile it for one, not into pieces.
  if (g.flops() < kParallelWorkThreshold) threads = 1;
  p.flat = specialized && specialized->row_kernel && !p.packed && jit::flattens_rows(g, *specialized);
  // A packing kernel's tiles each pack their channels' weights and copy the input rows they read:
  // where the weights are the larger, tasks split channels before pixels, else pixels
  // (bench/RESULTS.md, "Why the tier rules ...").
  const bool packs_more_weights =
      p.packed && g.reduction * g.oc_per_group > g.ic_per_group * g.in[0] * g.in[1] * g.in[2];
  // A flattened plane cut into pixel tiles for the threads gives the kernel short segments (two
  // rows of a 7x7 plane: 18 grid pixels for 64-pixel blocks): then the tasks split channels.
  bool short_flat_tiles = false;
  if (p.flat) {
    const int64_t planes = g.batch * g.groups * g.out[0];
    const int64_t tiles_per_plane = (tasks_wanted(threads) + planes - 1) / planes;
    const int64_t pitch = g.out[2] + (g.kernel[2] - 1) * g.dilation[2];
    const int64_t tile_grid = (g.out[1] + tiles_per_plane - 1) / tiles_per_plane * pitch;
    short_flat_tiles = tile_grid < jit::kFlatRowsBelowVectors * specialized->row_lanes;
  }
  p.tiling = plan_tiling(g, threads,
                         {.packs_patches = !specialized && kernels.generic->packs_patches,
                          .pixel_granule = kernels.generic->pixel_granule,
                          .oc_granule = p.packed                                 ? specialized->oc_block
                                        : specialized && specialized->oc_granule ? specialized->oc_granule
                                                                                 : kernels.generic->oc_granule,
                          .whole_rows = p.flat,
                          .row_segments = specialized && specialized->row_kernel,
                          .packs_weights = p.packed,
                          // A row kernel's tile copies its input into a band where W's windows read padding.
                          .banded = p.flat || (p.packed && specialized->row_kernel && g.windows_read_padding(2)),
                          .channels_first = packs_more_weights || short_flat_tiles});
  // Flattened tiles' kernels write y on the input's grid in scratch, a row pitch of x's or of the
  // band's (the padded row), whichever is longer, or compact it into y with the map. Made only for
  // them (a copy of the problem).
  if (p.flat) {
    p.grid_g = g;
    p.grid_g.y.channel =
        p.tiling.pixel_tile / g.out[2] * std::max(g.x.spatial[1], g.out[2] + (g.kernel[2] - 1) * g.dilation[2]);
    p.grid_map = make_grid_map(g, *specialized, p.tiling.pixel_tile / g.out[2]);
  }
  p.oc_block = p.packed                             ? specialized->oc_block
               : writes_few_streams(g, specialized) ? kFewStreamsChannels
                                                    : p.tiling.oc_chunk;
  // A packing row kernel's loops: channel blocks outside (each block's weights packed once, its
  // rows' padded views rebuilt per block unless the tile has a band), or rows outside (views built
  // once, weights packed per row), whichever copies less. A long padded row of many channels
  // (conv1d_audio, too long for a band) wants the latter; without padding views are never copies
  // (resnet_1x1_56 NHWC spent half its time repacking weights per row).
  // In double: a row's span with a dilation of any int64 may not fit one (only compared here).
  const double view_floats = double(g.ic_per_group) * double(g.kernel[0]) * double(g.kernel[1]) *
                             (double(g.out[2] - 1) * double(g.stride[2]) +
                              double(g.kernel[2] - 1) * double(g.dilation[2]) + 1);
  p.rows_outer = p.packed && specialized->row_kernel && any_tap_reads_padding(g) &&
                 view_floats > double(g.reduction) * double(p.oc_block);
  p.packed_floats = p.packed ? g.reduction * p.oc_block : 0;
  return p;
}

// One task of the plan: a pixel tile of one output plane (n, group, od) for one channel chunk.
void run_forward_task(const ConvGeometry& g, const ForwardPlan& p, int64_t task, const float* x, const float* w,
                      const float* bias, bool relu, float* y) {
  const ForwardTiling& tiling = p.tiling;
  const convjit_conv_kernel* specialized = p.specialized;
  const int64_t oc_chunk = task % tiling.oc_chunks;
  const int64_t pixel_tile = task / tiling.oc_chunks % tiling.pixel_tiles;
  int64_t plane = task / tiling.tasks();
  const int64_t od = plane % g.out[0];
  plane /= g.out[0];
  const int64_t group = plane % g.groups, n = plane / g.groups;

  const int64_t pixels = g.out[1] * g.out[2];
  const auto [chunk_first, chunk_end] = tiling.oc_range(oc_chunk, g.oc_per_group);
  const int64_t first_oc = group * g.oc_per_group + chunk_first, end_oc = group * g.oc_per_group + chunk_end;
  const int64_t first_pixel = pixel_tile * tiling.pixel_tile;
  float* scratch = thread_scratch(size_t(p.packed_floats + p.rows_floats) + kScratchFloats);
  convjit_conv_tile tile{};
  tile.x = x + n * g.x.batch + group * g.ic_per_group * g.x.channel;
  tile.od = od;
  tile.oh = first_pixel / g.out[2];
  tile.ow = first_pixel % g.out[2];
  tile.pixel_count = std::min(tiling.pixel_tile, pixels - first_pixel);
  tile.relu = relu;
  tile.packed_weights = p.packed ? scratch : nullptr;
  tile.scratch = scratch + p.packed_floats + p.rows_floats;
  tile.scratch_floats = int64_t(kScratchFloats);
  // A row kernel's tile copies its padded input once, for all its channel blocks.
  const InputBand band = specialized && specialized->row_kernel ? make_band(g, tile, p.flat) : InputBand{};
  float* y_tile = y + n * g.y.batch + od * g.y.spatial[0] + first_pixel * g.y.spatial[2];  // at channel 0
  if (p.flat && run_flat_rows(g, p.grid_g, p.grid_map, *specialized, tile, band, first_oc, end_oc, w, bias, y_tile))
    return;
  if (p.rows_outer && !band.data) {
    run_rows_then_channel_blocks(g, p, tile, band, first_oc, end_oc, w, bias, y_tile, scratch);
    return;
  }
  for (int64_t oc = first_oc; oc < end_oc; oc += p.oc_block) {
    tile.w = w ? w + oc * g.reduction : nullptr;
    tile.bias = bias ? bias + oc : nullptr;
    tile.y = y + n * g.y.batch + oc * g.y.channel + od * g.y.spatial[0] + first_pixel * g.y.spatial[2];
    tile.oc_count = std::min(p.oc_block, end_oc - oc);
    if (!specialized) {
      p.generic(&g, &tile);
      continue;
    }
    if (p.packed) pack_block(g, p, w, oc, tile.oc_count, scratch);
    if (specialized->row_kernel) {
      BlockRows rows(g, w, p.w_backward, scratch + p.packed_floats, oc, tile.oc_count);
      run_rows(g, p.generic, *specialized, tile, band, rows);
    } else {
      specialized->compute(&g, &tile);
    }
  }
}

}  // namespace

void run_conv_forward(const ConvGeometry& g, const ForwardKernels& kernels, int threads, const float* x,
                      const float* w, const float* bias, bool relu, float* y) {
  if (kernels.generic->whole_call && (!kernels.specialized || kernels.specialized->depthwise_row)) {
    kernels.generic->whole_call(g, threads, x, w, bias, relu, y,
                                kernels.specialized ? kernels.specialized->depthwise_row : nullptr);
    return;
  }
  const ForwardPlan plan = plan_conv_forward(g, kernels, threads);
  parallel_for(threads, g.batch * g.groups * g.out[0] * plan.tiling.tasks(), g.flops(),
               [&](int64_t task) { run_forward_task(g, plan, task, x, w, bias, relu, y); });
}

bool packs_backward_weights_in_place(const ConvGeometry& g, const ForwardKernels& kernels) {
  return g.layout == CONVJIT_NHWC && kernels.specialized && kernels.specialized->packs_weights &&
         kernels.specialized->row_kernel && !kernels.specialized->depthwise_row;
}

void run_conv_forward_on_backward_weights(const ConvGeometry& g, const ForwardKernels& kernels, int threads,
                                          const float* x, const BackwardWeights& w_backward, float* y) {
  assert(packs_backward_weights_in_place(g, kernels));
  ForwardPlan plan = plan_conv_forward(g, kernels, threads);
  plan.w_backward = w_backward;
  plan.rows_floats = plan.packed_floats;
  parallel_for(threads, g.batch * g.groups * g.out[0] * plan.tiling.tasks(), g.flops(),
               [&](int64_t task) { run_forward_task(g, plan, task, x, nullptr, nullptr, false, y); });
}

}  // namespace convjit::detail
