// dx = W^T dy, row by row: for each output row, the register tile computes the im2col gradient
// dX(k, ow) = sum over oc of w[oc][k] * dy[oc][ow], which is then scattered into dx (col2im).
// A task owns the dx of one (image, group, input-channel chunk) and visits every output row in
// order, so no two threads touch one dx element and the sums never depend on the thread count.
#include <algorithm>
#include <cstring>

#include "conv_depthwise_backward_data.hpp"
#include "conv_depthwise_nchw_backward_data.hpp"
#include "conv_depthwise_nhwc.hpp"
#include "depthwise_backward_data_phases.hpp"
#include "gemm_tile.hpp"
#include "geometry.hpp"
#include "ops_internal.hpp"
#include "patch_pack.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

// Zeroes channels [ic0, ic1) of one image's dx.
void zero_channels(const ConvGeometry& g, float* dx_image, int64_t ic0, int64_t ic1) {
  const int64_t pixels = g.in[0] * g.in[1] * g.in[2];
  if (g.layout == CONVJIT_NCHW) {
    std::memset(dx_image + ic0 * g.x.channel, 0, sizeof(float) * size_t((ic1 - ic0) * pixels));
    return;
  }
  for (int64_t p = 0; p < pixels; ++p)
    std::fill(dx_image + p * g.in_channels + ic0, dx_image + p * g.in_channels + ic1, 0.0f);
}

}  // namespace

int64_t backward_data_row_tile(const ConvGeometry& g) {
  // The tile orders each dx element's sum (row tile by row tile, then tap by tap), so it is sized
  // for the longest run of dX rows, whatever the channel chunks the thread count makes: the same
  // for every count.
  const int64_t longest_run = g.layout == CONVJIT_NCHW ? g.ic_per_group * g.taps : g.ic_per_group;
  const int64_t ow_tile = int64_t(kScratchFloats) / (g.oc_per_group + longest_run) / kTileCols * kTileCols;
  return std::clamp<int64_t>(ow_tile, kTileCols, (g.out[2] + kTileCols - 1) / kTileCols * kTileCols);
}

#if defined(__x86_64__)
namespace {

// NCHW's kernel at W stride 2 where the NHWC twin's phases run, whose chains it keeps (a problem
// they decline goes to the scatter kernel, which sums in another order).
bool runs_nchw_kernel(const ConvGeometry& g) {
  return (avx512::depthwise_nchw_backward_data_supported(g) || avx2::depthwise_nchw_backward_data_supported(g)) &&
         depthwise_data_phases_run(g);
}

}  // namespace
#endif

bool backward_data_runs_depthwise_kernel(const ConvGeometry& g) {
#if defined(__x86_64__)
  return avx512::depthwise_backward_data_supported(g) || avx2::depthwise_backward_data_supported(g) ||
         runs_nchw_kernel(g);
#else
  (void)g;
  return false;
#endif
}

bool run_depthwise_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w, int64_t ow_tile,
                                 float* dx) {
#if defined(__x86_64__)
  // The phases where they run (depthwise_backward_data_phases.hpp), else the scatter kernel.
  auto run = [&](auto scatter, DepthwiseForwardFn forward) {
    if (!run_depthwise_backward_data_phases(g, threads, dy, w, dx, forward)) {
      scatter(g, threads, dy, depthwise_nhwc_taps_major(g, w), ow_tile, dx);
    }
    return true;
  };
  if (runs_nchw_kernel(g)) {
    if (avx512::depthwise_nchw_backward_data_supported(g)) {
      avx512::depthwise_nchw_backward_data(g, threads, dy, w, dx);
    } else {
      avx2::depthwise_nchw_backward_data(g, threads, dy, w, dx);
    }
    return true;
  }
  if (avx512::depthwise_backward_data_supported(g)) {
    return run(avx512::depthwise_backward_data, avx512::depthwise_nhwc_tap_major);
  }
  if (avx2::depthwise_backward_data_supported(g)) return run(avx2::depthwise_backward_data, avx2::depthwise_nhwc_tap_major);
#endif
  (void)g, (void)threads, (void)dy, (void)w, (void)ow_tile, (void)dx;
  return false;
}

void run_conv_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w, float* dx) {
  // k runs with consecutive indices in w, per channel chunk: NCHW's (ic, tap) order makes the
  // chunk one run; NHWC's (tap, ic) order gives one run of the chunk's channels per tap.
  const int64_t images = g.batch * g.groups;
  const int64_t wanted = tasks_wanted(threads);
  const int64_t ic_chunks = images >= wanted ? 1 : std::min(g.ic_per_group, (wanted + images - 1) / images);
  const int64_t ic_chunk = (g.ic_per_group + ic_chunks - 1) / ic_chunks;
  const bool nchw = g.layout == CONVJIT_NCHW;
  const int64_t run_length = nchw ? ic_chunk * g.taps : ic_chunk;

  // Per ow tile: the packed dy panels (oc_per_group x tile) and one run of dX (run x tile).
  const int64_t ow_tile = backward_data_row_tile(g);
  // Depthwise: the same sums in the same order on a vector kernel.
  if (run_depthwise_backward_data(g, threads, dy, w, ow_tile, dx)) return;
  const int64_t floats_per_column = g.oc_per_group + run_length;
  const int64_t scratch_floats = floats_per_column * ow_tile;

  parallel_for(threads, images * ic_chunks, 2.0 * g.batch * g.x.batch * g.oc_per_group * g.taps, [&](int64_t task) {
    const int64_t chunk = task % ic_chunks, group = task / ic_chunks % g.groups, n = task / ic_chunks / g.groups;
    const int64_t ic0 = chunk * ic_chunk, ic1 = std::min(g.ic_per_group, ic0 + ic_chunk);
    if (ic0 >= ic1) return;
    float* dx_group = dx + n * g.x.batch + group * g.ic_per_group * g.x.channel;
    zero_channels(g, dx + n * g.x.batch, group * g.ic_per_group + ic0, group * g.ic_per_group + ic1);

    float* packed_dy = thread_scratch(size_t(scratch_floats));
    float* dcol = packed_dy + g.oc_per_group * ow_tile;
    const float* w_group = w + group * g.oc_per_group * g.reduction;
    const int64_t runs = nchw ? 1 : g.taps;
    const int64_t run_rows = nchw ? (ic1 - ic0) * g.taps : ic1 - ic0;

    for (int64_t od = 0; od < g.out[0]; ++od) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        for (int64_t ow0 = 0; ow0 < g.out[2]; ow0 += ow_tile) {
          const int64_t owc = std::min(ow_tile, g.out[2] - ow0);
          const int64_t panels = (owc + kTileCols - 1) / kTileCols;
          const float* dy_row = dy + n * g.y.batch + group * g.oc_per_group * g.y.channel + od * g.y.spatial[0] +
                                oh * g.y.spatial[1] + ow0 * g.y.spatial[2];
          for (int64_t oc = 0; oc < g.oc_per_group; ++oc) {
            for (int64_t ow = 0; ow < panels * kTileCols; ++ow) {
              packed_dy[(ow / kTileCols) * g.oc_per_group * kTileCols + oc * kTileCols + ow % kTileCols] =
                  ow < owc ? dy_row[oc * g.y.channel + ow * g.y.spatial[2]] : 0.0f;
            }
          }
          for (int64_t run = 0; run < runs; ++run) {
            const int64_t k0 = nchw ? ic0 * g.taps : run * g.ic_per_group + ic0;
            GemmTile tile{};
            tile.k = g.oc_per_group;
            tile.a = w_group + k0;
            tile.a_row_stride = 1;
            tile.a_step = g.reduction;
            tile.b = packed_dy;
            tile.c = dcol;
            tile.c_row_stride = ow_tile;
            tile.c_col_stride = 1;
            gemm_blocks(tile, run_rows, owc, g.oc_per_group * kTileCols);
            for_each_patch_row(g, dx_group, od, oh, ow0, owc, k0, run_rows, [&](int64_t k, const PatchRow<float>& row) {
              const float* gradient = dcol + k * ow_tile;
              for (int64_t ow = row.lo; ow < row.hi; ++ow) row.src[(ow - row.lo) * row.step] += gradient[ow];
            });
          }
        }
      }
    }
  });
}

}  // namespace convjit::detail
