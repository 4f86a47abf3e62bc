// dw = dy X^T: for every output row, the register tile adds dy[oc][ow] * X(k, ow) over the row's
// pixels into dw[oc][k]. A task owns a block of dw (group, output channels, k panels) and visits
// every image and output row in order, so each dw element is one FMA chain whose order does not
// depend on the thread count.
#include <algorithm>

#include "conv_backward_filter_direct.hpp"
#include "conv_depthwise_backward_filter.hpp"
#include "gemm_tile.hpp"
#include "geometry.hpp"
#include "ops_internal.hpp"
#include "patch_pack.hpp"
#include "patch_panel.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

constexpr int64_t kMaxPanelsPerTask = 4;

}  // namespace

bool backward_filter_runs_channels_in_lanes(const ConvGeometry& g) {
#if defined(__x86_64__)
  return avx512::depthwise_backward_filter_supported(g) || avx2::depthwise_backward_filter_supported(g);
#else
  (void)g;
  return false;
#endif
}

bool backward_filter_runs_direct(const ConvGeometry& g) {
#if defined(__x86_64__)
  return avx2::backward_filter_direct_supported(g);
#else
  (void)g;
  return false;
#endif
}

void run_conv_backward_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
#if defined(__x86_64__)
  if (avx512::depthwise_backward_filter_supported(g)) return avx512::depthwise_backward_filter(g, threads, x, dy, dw);
  if (avx2::depthwise_backward_filter_supported(g)) return avx2::depthwise_backward_filter(g, threads, x, dy, dw);
  if (avx2::backward_filter_direct_supported(g)) {
    avx2::backward_filter_direct(g, threads, x, dy, dw);
    return;
  }
#endif

  const int64_t k_panels = (g.reduction + kTileCols - 1) / kTileCols;
  const int64_t oc_blocks = (g.oc_per_group + kTileRows - 1) / kTileRows;
  // Up to kMaxPanelsPerTask panels per task; fewer when that leaves threads idle.
  const int64_t panels_per_task =
      std::clamp<int64_t>(g.groups * k_panels / tasks_wanted(threads), 1, kMaxPanelsPerTask);
  const int64_t k_chunks = (k_panels + panels_per_task - 1) / panels_per_task;
  const int64_t oc_chunks = g.groups * k_chunks >= 2 * threads ? 1 : std::min<int64_t>(oc_blocks, 2 * threads);
  const int64_t oc_chunk = (oc_blocks + oc_chunks - 1) / oc_chunks * kTileRows;
  // A gemm reduces over a chunk of an image's output pixels: whole rows (consecutive in dy and in
  // the pixel order) up to kChunkPixels, or a piece of one longer row. One row per gemm left
  // short rows (7, 14 pixels) loading and storing their dw block for every few FMAs.
  constexpr int64_t kChunkPixels = 512;
  const int64_t rows = g.out[0] * g.out[1];
  const int64_t ow_tile = std::min<int64_t>(g.out[2], kChunkPixels);
  const int64_t rows_per_chunk = std::max<int64_t>(1, kChunkPixels / g.out[2]);
  const size_t scratch_floats = size_t(panels_per_task * kTileCols * rows_per_chunk * ow_tile);

  parallel_for(threads, g.groups * k_chunks * oc_chunks, g.flops(), [&](int64_t task) {
    const int64_t oc_chunk_index = task % oc_chunks, k_chunk = task / oc_chunks % k_chunks;
    const int64_t group = task / oc_chunks / k_chunks;
    const int64_t oc0 = oc_chunk_index * oc_chunk, oc1 = std::min(g.oc_per_group, oc0 + oc_chunk);
    const int64_t k0 = k_chunk * panels_per_task * kTileCols;
    const int64_t kc = std::min(panels_per_task * kTileCols, g.reduction - k0);
    if (oc0 >= oc1) return;
    const int64_t panels = (kc + kTileCols - 1) / kTileCols;
    float* packed = thread_scratch(scratch_floats);
    float* dw_block = dw + (group * g.oc_per_group) * g.reduction;
    bool first = true;

    for (int64_t n = 0; n < g.batch; ++n) {
      const float* x_group = x + n * g.x.batch + group * g.ic_per_group * g.x.channel;
      for (int64_t r0 = 0; r0 < rows; r0 += rows_per_chunk) {
        const int64_t chunk_rows = std::min(rows_per_chunk, rows - r0);
        for (int64_t ow0 = 0; ow0 < g.out[2]; ow0 += ow_tile) {
          const int64_t owc = std::min(ow_tile, g.out[2] - ow0), pixels = chunk_rows * owc;
          // Panel p holds X(k0 + 16p .. +15, pixel) as `pixels` rows of 16, the chunk's output rows
          // one after another; the k tail is zero-filled.
          for (int64_t q = 0; q < chunk_rows; ++q) {
            const int64_t od = (r0 + q) / g.out[1], oh = (r0 + q) % g.out[1];
            PatchRow<const float> patch_rows[kMaxPanelsPerTask * kTileCols];
            for_each_patch_row(g, x_group, od, oh, ow0, owc, k0, kc,
                               [&](int64_t k, const PatchRow<const float>& row) { patch_rows[k] = row; });
            for (int64_t p = 0; p < panels; ++p) {
              pack_patch_panel(patch_rows + p * kTileCols, std::min<int64_t>(kTileCols, kc - p * kTileCols), owc,
                               packed + p * pixels * kTileCols + q * owc * kTileCols);
            }
          }
          // The chunk's pixels are consecutive in dy (dense rows): one step apart.
          const float* dy_chunk = dy + n * g.y.batch + (group * g.oc_per_group) * g.y.channel +
                                  (r0 / g.out[1]) * g.y.spatial[0] + (r0 % g.out[1]) * g.y.spatial[1] +
                                  ow0 * g.y.spatial[2];
          GemmTile tile{};
          tile.k = pixels;
          tile.a = dy_chunk + oc0 * g.y.channel;
          tile.a_row_stride = g.y.channel;
          tile.a_step = g.y.spatial[2];
          tile.b = packed;
          tile.c = dw_block + oc0 * g.reduction + k0;
          tile.c_row_stride = g.reduction;
          tile.c_col_stride = 1;
          tile.accumulate = !first;
          gemm_blocks(tile, oc1 - oc0, kc, pixels * kTileCols);
          first = false;
        }
      }
    }
  });
}

}  // namespace convjit::detail
