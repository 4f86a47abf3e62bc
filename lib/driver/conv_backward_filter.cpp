// dw = dy X^T: for every output row, the register tile adds dy[oc][ow] * X(k, ow) over the row's
// pixels into dw[oc][k]. A task owns a block of dw (group, output channels, k panels) and visits
// every image and output row in order, so each dw element is one FMA chain whose order does not
// depend on the thread count. A compiled kernel (jit/abi/filter_rows_abi.h) keeps that chain and
// reads x in place: the driver gives it runs of rows with the same real taps.
#include <algorithm>
#include <cstdint>

#include "conv_backward_filter_direct.hpp"
#include "conv_depthwise_backward_filter.hpp"
#include "conv_depthwise_nchw_backward_filter.hpp"
#include "gemm_tile.hpp"
#include "geometry.hpp"
#include "ops_internal.hpp"
#include "patch_pack.hpp"
#include "patch_panel.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

constexpr int64_t kMaxPanelsPerTask = 4;

// a * b where a step of `a` (a stride or dilation) can separate two real inputs along a dim of
// `in`, else 0: no call then takes that step, and the product may not fit.
int64_t step_between_real(int64_t a, int64_t in, int64_t b) {
  return a < in ? a * b : 0;
}

// The real taps along dim d of output coordinate o: [*begin, *end), empty when begin == end.
void real_taps(const ConvGeometry& g, int d, int64_t o, int64_t* begin, int64_t* end) {
  const int64_t base = o * g.stride[d] - g.pad_begin[d], in = g.in[d], dilation = g.dilation[d];
  const int64_t first = base >= 0 ? 0 : -base / dilation + (-base % dilation != 0);
  const int64_t last = base > in - 1 ? -1 : (in - 1 - base) / dilation;  // the last tap inside, if any
  *begin = std::min(first, g.kernel[d]);
  *end = std::max(*begin, std::min(last + 1, g.kernel[d]));
}

// Per tap along W: the outputs in [o0, o1) whose tap is real, where the first one's input lies in
// the row, and how far it is from output o0.
void real_columns(const ConvGeometry& g, int64_t o0, int64_t o1, convjit_filter_column* columns) {
  const int64_t in = g.in[2], stride = g.stride[2];
  for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
    const int64_t shift = kw * g.dilation[2] - g.pad_begin[2];  // output 0's input of the tap
    const int64_t first = std::max(o0, shift >= 0 ? 0 : -shift / stride + (-shift % stride != 0));
    const int64_t end = std::max(first, std::min(o1, shift > in - 1 ? 0 : (in - 1 - shift) / stride + 1));
    const int64_t count = end - first;
    columns[kw] = {count, count > 0 ? (first * stride + shift) * g.x.spatial[2] : 0,
                   count > 0 ? (first - o0) * g.y.spatial[2] : 0, 0, 0};
  }
}

// Kernels with columns_at_once: the call's interior along W (the outputs of [o0, o0 + n) whose every tap is
// real, where the columns' runs overlap) and each column's outputs before and after it.
void split_at_interior(const ConvGeometry& g, int64_t o0, convjit_filter_column* columns, convjit_filter_rows* call) {
  int64_t lo = 0, hi = INT64_MAX;  // the interior, from o0
  for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
    const int64_t first = columns[kw].dy_offset / g.y.spatial[2];
    lo = std::max(lo, first);
    hi = std::min(hi, columns[kw].count > 0 ? first + columns[kw].count : 0);
  }
  const bool interior = lo < hi;
  for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
    convjit_filter_column& c = columns[kw];
    const int64_t first = c.dy_offset / g.y.spatial[2];
    c.before = interior ? lo - first : c.count;
    c.after = interior ? first + c.count - hi : 0;
  }
  call->interior_count = interior ? hi - lo : 0;
  call->interior_x_offset = interior ? ((o0 + lo) * g.stride[2] - g.pad_begin[2]) * g.x.spatial[2] : 0;
  call->interior_dy_offset = interior ? lo * g.y.spatial[2] : 0;
}

// At most this many output pixels per compiled call (several short rows, or a segment of a long
// one): the call's inputs and gradients stay in the caches while every block of its channels
// reads them.
constexpr int64_t kFilterPixelsPerCall = 128;

}  // namespace

static_assert(CONVJIT_FILTER_MAX_PANEL_FLOATS <= kScratchFloats, "a range's panels fit the thread's scratch");

void run_conv_backward_filter_rows(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw,
                                   const convjit_filter_kernel& kernel) {
  convjit_filter_problem problem{};
  problem.x_tap_step[0] = step_between_real(g.dilation[0], g.in[0], g.x.spatial[0]);
  problem.x_tap_step[1] = step_between_real(g.dilation[1], g.in[1], g.x.spatial[1]);
  problem.x_tap_step[2] = step_between_real(g.dilation[2], g.in[2], g.x.spatial[2]);
  problem.x_row_step = step_between_real(g.stride[1], g.in[1], g.x.spatial[1]);
  problem.x_output_step = step_between_real(g.stride[2], g.in[2], g.x.spatial[2]);
  problem.dy_row_step = g.y.spatial[1];
  problem.dy_output_step = g.y.spatial[2];
  // Several rows per call, or a row in segments (one row per call then, so each dw element still
  // sums a row's outputs in order before the next row's).
  const int64_t rows_per_call = std::max<int64_t>(1, kFilterPixelsPerCall / g.out[2]);
  const int64_t segment = std::min(g.out[2], kFilterPixelsPerCall);

  // Tasks: (group, a range of whole register blocks of output channels, a range of H taps), enough
  // to keep every thread busy; each reads the group's whole x, in image and row order. The taps
  // split only where the threads outnumber the channel blocks (a first layer's one or two), as each
  // range of them reads dy once more.
  // A depthwise kernel takes the groups as one group of that many output channels.
  const int64_t groups = kernel.depthwise ? 1 : g.groups, oc_per_group = kernel.depthwise ? g.groups : g.oc_per_group;
  const int64_t oc_blocks = (oc_per_group + kernel.oc_block - 1) / kernel.oc_block;
  const int64_t wanted = tasks_wanted(threads);
  // And enough that a task's dw fits half the L2: each call of a task's rows reads and writes all
  // of it, and a run of rows with other real taps (a padded first or last row) comes back to it.
  const int64_t cache_chunks =
      int64_t(double(oc_per_group) * double(g.reduction) * sizeof(float) / double(l2_cache_bytes() / 2)) + 1;
  // The blocks shared out evenly: chunks of the rounded-up size with the rest in a last one left a
  // thread with a sliver (resnet_3x3_14: seven chunks of 6 blocks and one of 1).
  const int64_t oc_chunks = std::clamp<int64_t>(std::max((wanted + groups - 1) / groups, cache_chunks), 1, oc_blocks);
  const int64_t wanted_tap_chunks =
      groups * oc_chunks >= threads
          ? 1
          : std::clamp<int64_t>((wanted + groups * oc_chunks - 1) / (groups * oc_chunks), 1, g.kernel[1]);
  const int64_t chunk_taps = (g.kernel[1] + wanted_tap_chunks - 1) / wanted_tap_chunks;
  const int64_t tap_chunks = (g.kernel[1] + chunk_taps - 1) / chunk_taps;
  // The dw elements of a task's taps [h0, h1) (input order) among a channel's: per D tap, the
  // weights of those H taps (reversed in convolution mode) with every W tap and input channel,
  // consecutive in OHWI.
  auto for_each_tap_span = [&](int64_t h0, int64_t h1, auto&& span) {
    const int64_t w0 = g.flip ? g.kernel[1] - h1 : h0, w1 = g.flip ? g.kernel[1] - h0 : h1;
    const int64_t per_h_tap = g.kernel[2] * g.ic_per_group;
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
      span((kd * g.kernel[1] + w0) * per_h_tap, (kd * g.kernel[1] + w1) * per_h_tap);
  };
  parallel_for(threads, groups * oc_chunks * tap_chunks, g.flops(), [&](int64_t task) {
    const int64_t tap_chunk = task % tap_chunks, oc_chunk = task / tap_chunks % oc_chunks;
    const int64_t group = task / tap_chunks / oc_chunks;
    const int64_t oc0 = oc_chunk * oc_blocks / oc_chunks * kernel.oc_block;
    const int64_t oc1 = std::min(oc_per_group, (oc_chunk + 1) * oc_blocks / oc_chunks * kernel.oc_block);
    const int64_t h0 = tap_chunk * chunk_taps, h1 = std::min(g.kernel[1], h0 + chunk_taps);
    float* dw_range = dw + (group * oc_per_group + oc0) * g.reduction;
    // A transposed kernel's dw^T panels: one per block of the range, [tap][ic][oc_block].
    const int64_t panel = kernel.oc_block * g.reduction;
    const int64_t panels = kernel.transposed ? (oc1 - oc0 + kernel.oc_block - 1) / kernel.oc_block * panel : 0;
    float* sums = kernel.transposed ? thread_scratch(size_t(panels)) : dw_range;
    if (kernel.transposed) {
      std::fill(sums, sums + panels, 0.0f);
    } else {
      for (int64_t oc = 0; oc < oc1 - oc0; ++oc) {
        for_each_tap_span(h0, h1, [&](int64_t k0, int64_t k1) {
          std::fill(sums + oc * g.reduction + k0, sums + oc * g.reduction + k1, 0.0f);
        });
      }
    }
    convjit_filter_column columns[CONVJIT_FILTER_MAX_COLUMNS];
    convjit_filter_rows call{};
    call.dw = sums;
    call.columns = columns;
    call.out_channels = oc1 - oc0;
    for (int64_t n = 0; n < g.batch; ++n) {
      call.x = x + n * g.x.batch + (kernel.depthwise ? oc0 : group * g.ic_per_group) * g.x.channel;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        real_taps(g, 0, od, &call.tap_begin[0], &call.tap_end[0]);
        if (call.tap_begin[0] == call.tap_end[0]) continue;
        const int64_t input_plane = od * g.stride[0] - g.pad_begin[0] + call.tap_begin[0] * g.dilation[0];
        for (int64_t oh = 0; oh < g.out[1]; oh += call.rows) {
          // The task's real taps along H of output row oh.
          auto task_taps = [&](int64_t row, int64_t* begin, int64_t* end) {
            real_taps(g, 1, row, begin, end);
            *begin = std::max(*begin, h0);
            *end = std::max(*begin, std::min(*end, h1));
          };
          task_taps(oh, &call.tap_begin[1], &call.tap_end[1]);
          // The rows after oh with the same taps along H, up to rows_per_call.
          call.rows = 1;
          for (int64_t begin, end; call.rows < rows_per_call && oh + call.rows < g.out[1]; ++call.rows) {
            task_taps(oh + call.rows, &begin, &end);
            if (begin != call.tap_begin[1] || end != call.tap_end[1]) break;
          }
          if (call.tap_begin[1] == call.tap_end[1]) continue;
          const int64_t input_row = oh * g.stride[1] - g.pad_begin[1] + call.tap_begin[1] * g.dilation[1];
          call.x_origin = input_plane * g.x.spatial[0] + input_row * g.x.spatial[1];
          const float* dy_row = dy + n * g.y.batch + (group * oc_per_group + oc0) * g.y.channel + od * g.y.spatial[0] +
                                oh * g.y.spatial[1];
          for (int64_t o0 = 0; o0 < g.out[2]; o0 += segment) {
            real_columns(g, o0, std::min(g.out[2], o0 + segment), columns);
            if (kernel.columns_at_once) split_at_interior(g, o0, columns, &call);
            call.dy = dy_row + o0 * g.y.spatial[2];
            kernel.compute(&problem, &call);
          }
        }
      }
    }
    for (int64_t oc = 0; kernel.transposed && oc < oc1 - oc0; ++oc) {
      const float* column = sums + oc / kernel.oc_block * panel + oc % kernel.oc_block;
      for_each_tap_span(h0, h1, [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1; ++k) dw_range[oc * g.reduction + k] = column[k * kernel.oc_block];
      });
    }
  });
}

bool backward_filter_runs_channels_in_lanes(const ConvGeometry& g) {
#if defined(__x86_64__)
  return avx512::depthwise_backward_filter_supported(g) || avx2::depthwise_backward_filter_supported(g);
#else
  (void)g;
  return false;
#endif
}

bool backward_filter_runs_direct(const ConvGeometry& g, DirectFilterScope scope) {
#if defined(__x86_64__)
  return avx512::backward_filter_direct_supported(g, scope) || avx2::backward_filter_direct_supported(g, scope);
#else
  (void)g;
  return false;
#endif
}

void run_conv_backward_filter(const ConvGeometry& g, DirectFilterScope direct, int threads, const float* x,
                              const float* dy, float* dw) {
#if defined(__x86_64__)
  if (avx512::depthwise_backward_filter_supported(g)) return avx512::depthwise_backward_filter(g, threads, x, dy, dw);
  if (avx2::depthwise_backward_filter_supported(g)) return avx2::depthwise_backward_filter(g, threads, x, dy, dw);
  if (avx512::depthwise_nchw_backward_filter_supported(g)) {
    return avx512::depthwise_nchw_backward_filter(g, threads, x, dy, dw);
  }
  if (avx512::backward_filter_direct_supported(g, direct)) return avx512::backward_filter_direct(g, threads, x, dy, dw);
  if (avx2::backward_filter_direct_supported(g, direct)) return avx2::backward_filter_direct(g, threads, x, dy, dw);
#else
  (void)direct;
#endif

  const int64_t k_panels = (g.reduction + kTileCols - 1) / kTileCols;
  const int64_t oc_blocks = (g.oc_per_group + kTileRows - 1) / kTileRows;
  // Tasks of up to kMaxPanelsPerTask panels (side by side in the register tile, sharing each
  // broadcast of dy), spread evenly; output channels split only where that leaves a thread idle,
  // since each chunk of them packs its patches again, and then the panels too if still needed.
  int64_t k_chunks = (k_panels + kMaxPanelsPerTask - 1) / kMaxPanelsPerTask;
  const int64_t k_tasks = g.groups * k_chunks;
  const int64_t oc_chunks = k_tasks >= threads ? 1 : std::min<int64_t>(oc_blocks, (threads + k_tasks - 1) / k_tasks);
  const int64_t oc_chunk = (oc_blocks + oc_chunks - 1) / oc_chunks * kTileRows;
  const int64_t other_tasks = g.groups * ((oc_blocks + oc_chunk / kTileRows - 1) / (oc_chunk / kTileRows));
  if (other_tasks * k_chunks < threads) k_chunks = std::min(k_panels, (threads + other_tasks - 1) / other_tasks);
  const int64_t panels_per_task = (k_panels + k_chunks - 1) / k_chunks;
  k_chunks = (k_panels + panels_per_task - 1) / panels_per_task;
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
