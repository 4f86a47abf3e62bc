#include "nhwc_as_nchw.hpp"

#include <algorithm>

#include "backend.hpp"
#include "conv_depthwise_nchw.hpp"
#include "conv_depthwise_nhwc.hpp"
#include "conv_forward.hpp"
#include "ops_internal.hpp"
#include "threads.hpp"
#include "transpose.hpp"

namespace convjit::detail {
namespace {

// The copies live in a per-thread buffer that is kept for later calls; beyond this many floats
// (x, w and y together: 64 MiB) a problem stays NHWC rather than hold that much per thread.
constexpr int64_t kMaxCopiedFloats = int64_t(16) << 20;

// Images between [pixel][channel] and [channel][pixel]: a task per image with few channels (the
// count a compile-time constant, kernels/transpose.hpp), else the blocked matrix transpose in
// blocks of pixels (with 128 channels a pixel is 512 bytes on, and a channel-by-channel walk over
// a block's rows fell into a few of L1's sets: bench/RESULTS.md, "Session 5").
void transpose_images(int64_t images, int64_t pixels, int64_t channels, const float* src, float* dst, bool to_nchw,
                      int threads) {
  const int64_t image = pixels * channels;
  if (channels <= kMaxFewChannels) {
    parallel_for(threads, images, double(images * image), [&](int64_t n) {
      transpose_few_channels(channels, pixels, src + n * image, dst + n * image, to_nchw);
    });
    return;
  }
  // Runtime counts: fewer images than threads share them out in blocks of pixels (a first layer's
  // one image copied its output on one thread).
  constexpr int64_t kMinBlockPixels = 256;
  const int64_t wanted_blocks = (tasks_wanted(threads) + images - 1) / images;
  const int64_t blocks = std::clamp<int64_t>(wanted_blocks, 1, (pixels + kMinBlockPixels - 1) / kMinBlockPixels);
  const int64_t block = (pixels + blocks - 1) / blocks;
  parallel_for(threads, images * blocks, double(images * image), [&](int64_t task) {
    const int64_t n = task / blocks, first = task % blocks * block, count = std::min(block, pixels - first);
    if (count <= 0) return;
    const float* image_src = src + n * image;
    float* image_dst = dst + n * image;
    if (to_nchw) {
      transpose_matrix(count, channels, {image_src + first * channels, channels}, {image_dst + first, pixels});
    } else {
      transpose_matrix(channels, count, {image_src + first, pixels}, {image_dst + first * channels, channels});
    }
  });
}

// The problem of `params` in `layout`: valid, as only the layout differs from a valid problem.
ConvGeometry conv_twin(const convjit_conv_params& params, int32_t layout) {
  convjit_conv_params twin = params;
  twin.layout = layout;
  ConvGeometry g;
  make_conv_geometry(twin, &g);
  return g;
}

// Floats of x and y together: what a layout twin copies of the activations.
int64_t activation_floats(const ConvGeometry& g) {
  return g.batch * (g.in_channels * g.in[0] * g.in[1] * g.in[2] + g.out_channels * g.out_pixels());
}

// Backward filter of g on its twin in the other layout: x and dy transposed into copies, then
// run(x copy, dy copy, dw copy) on the twin, whose dw goes back per output channel (OHWI's
// [tap][ic] <-> OIHW's [ic][tap]).
template <typename Run>
void backward_filter_on_twin(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw,
                             Run&& run) {
  const bool to_nchw = g.layout == CONVJIT_NHWC;
  const int64_t in_pixels = g.in[0] * g.in[1] * g.in[2], out_pixels = g.out_pixels();
  const int64_t x_floats = g.batch * g.in_channels * in_pixels, dy_floats = g.batch * g.out_channels * out_pixels;
  float* x_twin = thread_layout_copies(size_t(x_floats + dy_floats + g.out_channels * g.reduction));
  float* dy_twin = x_twin + x_floats;
  float* dw_twin = dy_twin + dy_floats;
  transpose_images(g.batch, in_pixels, g.in_channels, x, x_twin, to_nchw, threads);
  transpose_images(g.batch, out_pixels, g.out_channels, dy, dy_twin, to_nchw, threads);
  run(x_twin, dy_twin, dw_twin);
  transpose_images(g.out_channels, g.taps, g.ic_per_group, dw_twin, dw, !to_nchw, threads);
}

// The copies cost their floats, the twin saves a part of the flops. Backward filter: the twin's
// rows beat NCHW's register tile from 200 flops per copied float on this host, below it (ResNet's
// 1x1 and 7x7 layers, whose weights outweigh their activations) the copies lost it
// (bench/RESULTS.md, "Session 10"). Forward at W stride > 1, where the NCHW kernels ran at a third
// to a half of the twin's speed, from 50 (a 3-channel stem at 39 lost 13%; "Session 17"); at W
// stride 1 from 200, as backward filter.
constexpr double kMinFlopsPerCopiedFloat = 200;
constexpr double kMinStridedForwardFlopsPerCopiedFloat = 50;
// NCHW depthwise forward without NCHW's own depthwise kernel (extents other than up to 3x3, 4x4,
// 5x5, 1x4 and 1x5; over 9 taps where only AVX2 runs; 3D; W stride over 2) ran on the row and
// tile kernels at under half the speed of NHWC's channels-in-lanes ones (5x5: 44 vs
// 110 GFLOP/s); from 16 flops per copied float (a 4x4 kernel) the twin wins ("Session 17").
constexpr double kMinDepthwiseFlopsPerCopiedFloat = 16;

int64_t copied_floats(const ConvGeometry& g) {
  return activation_floats(g) + g.out_channels * g.reduction;
}

}  // namespace

bool nhwc_runs_as_nchw(const ConvGeometry& g) {
#if defined(__x86_64__)
  // Depthwise with one channel per group has an NHWC kernel of its own (lanes across groups); the
  // NCHW direct kernels take stride 1 or 2 along W.
  const bool depthwise = g.ic_per_group == 1 && g.oc_per_group == 1;
  return g.layout == CONVJIT_NHWC && g.oc_per_group <= kDirectMaxOutputChannels && !depthwise &&
         (g.stride[2] == 1 || g.stride[2] == 2) && copied_floats(g) <= kMaxCopiedFloats;
#else
  (void)g;
  return false;
#endif
}

bool nchw_runs_as_nhwc(const ConvGeometry& g, jit::Isa max_isa, bool backward_weights) {
#if defined(__x86_64__)
  const int64_t copied = copied_floats(g);
  if (g.layout != CONVJIT_NCHW || copied > kMaxCopiedFloats) return false;
  // Depthwise: where NCHW has no depthwise kernel of its own, NHWC's (the groups in the lanes).
  // Its chains are NCHW's (one input channel: the taps in weight order), so the bits are too.
  if (g.ic_per_group == 1 && g.oc_per_group == 1) {
    const bool nchw_kernel_takes = (max_isa >= jit::Isa::Avx512 && avx512::depthwise_nchw_supported(g)) ||
                                   (max_isa >= jit::Isa::Avx2Fma && avx2::depthwise_nchw_supported(g));
    return !nchw_kernel_takes && g.taps <= kDepthwiseNhwcMaxTaps &&
           g.flops() >= kMinDepthwiseFlopsPerCopiedFloat * double(copied);
  }
  // NCHW row kernels put output pixels along W in the lanes. Not where the twin would run as NCHW
  // again (few output channels).
  if (g.oc_per_group <= kDirectMaxOutputChannels) return false;
  const int64_t twin_copies = backward_weights ? activation_floats(g) : copied;
  // At W stride 1, short rows (those some ISA's row kernels would flatten) whose kernel's W span
  // would make over a fifth of a flattened grid junk columns: NCHW's kernels then either compute
  // those columns, or run the rows one by one in partial vectors or on the generic tier, where
  // NHWC blocks channels whatever the row length. A grid of less junk stays NCHW: there the twin's
  // copies, each reading what the other core wrote, lost on two threads (bench/RESULTS.md,
  // "Session 25").
  if (g.stride[2] == 1) {
    return g.out[2] < jit::kFlatRowsBelowVectors * jit::kWidestRowLanes && !jit::flat_grid_mostly_real(g) &&
           g.flops() >= kMinFlopsPerCopiedFloat * double(twin_copies);
  }
  // At W stride s each vector's inputs are every s-th element, deinterleaved for each W tap, where
  // NHWC's channels are contiguous. (A single W tap is not: the register tile's packing reads each
  // input once.)
  return g.kernel[2] > 1 && g.flops() >= kMinStridedForwardFlopsPerCopiedFloat * double(twin_copies);
#else
  (void)g;
  (void)max_isa;
  (void)backward_weights;
  return false;
#endif
}

bool forward_runs_as_twin(const ConvGeometry& g, jit::Isa max_isa, bool backward_weights) {
  return nhwc_runs_as_nchw(g) || nchw_runs_as_nhwc(g, max_isa, backward_weights);
}

ConvGeometry forward_twin(const convjit_conv_params& params) {
  return conv_twin(params, params.layout == CONVJIT_NHWC ? CONVJIT_NCHW : CONVJIT_NHWC);
}

ConvGeometry nchw_twin(const convjit_conv_params& params) {
  return conv_twin(params, CONVJIT_NCHW);
}

TwinCopies copy_to_twin(const ConvGeometry& g, const convjit_conv_params& params, const float* x, const float* w,
                        int threads) {
  const bool to_nchw = g.layout == CONVJIT_NHWC;
  const int64_t in_pixels = g.in[0] * g.in[1] * g.in[2], out_pixels = g.out_pixels();
  const int64_t x_floats = g.batch * g.in_channels * in_pixels, w_floats = w ? g.out_channels * g.reduction : 0;
  float* copies = thread_layout_copies(size_t(x_floats + w_floats + g.batch * g.out_channels * out_pixels));
  float* x_twin = copies;
  float* w_twin = copies + x_floats;
  transpose_images(g.batch, in_pixels, g.in_channels, x, x_twin, to_nchw, threads);
  // Weights per output channel: [tap][ic] (OHWI) <-> [ic][tap] (OIHW).
  if (w) transpose_images(g.out_channels, g.taps, g.ic_per_group, w, w_twin, to_nchw, threads);
  TwinCopies c{params, x_twin, w ? w_twin : nullptr, w_twin + w_floats};
  c.params.layout = to_nchw ? CONVJIT_NCHW : CONVJIT_NHWC;
  return c;
}

void copy_output_from_twin(const ConvGeometry& g, const TwinCopies& copies, float* y, int threads) {
  transpose_images(g.batch, g.out_pixels(), g.out_channels, copies.y, y, g.layout == CONVJIT_NCHW, threads);
}

bool nhwc_backward_filter_runs_as_nchw(const ConvGeometry& g, const convjit_conv_params& params) {
  return g.layout == CONVJIT_NHWC && copied_floats(g) <= kMaxCopiedFloats &&
         !backward_filter_runs_channels_in_lanes(g) &&
         backward_filter_runs_direct(nchw_twin(params), DirectFilterScope::FewChannels);
}

void backward_filter_as_nchw(const ConvGeometry& g, const convjit_conv_params& params, int threads, const float* x,
                             const float* dy, float* dw) {
  backward_filter_on_twin(g, threads, x, dy, dw, [&](const float* tx, const float* tdy, float* tdw) {
    run_conv_backward_filter(nchw_twin(params), DirectFilterScope::FewChannels, threads, tx, tdy, tdw);
  });
}

bool nchw_backward_filter_can_run_as_nhwc(const ConvGeometry& g) {
  const int64_t copied = copied_floats(g);
  return g.layout == CONVJIT_NCHW && copied <= kMaxCopiedFloats &&
         g.flops() >= kMinFlopsPerCopiedFloat * double(copied);
}

ConvGeometry backward_filter_nhwc_twin(const convjit_conv_params& params) {
  return conv_twin(params, CONVJIT_NHWC);
}

void backward_filter_as_nhwc(const ConvGeometry& g, const ConvGeometry& runs, int threads, const float* x,
                             const float* dy, float* dw, const convjit_filter_kernel& compiled) {
  backward_filter_on_twin(g, threads, x, dy, dw, [&](const float* tx, const float* tdy, float* tdw) {
    run_conv_backward_filter_rows(runs, threads, tx, tdy, tdw, compiled);
  });
}

bool nchw_depthwise_backward_data_runs_as_nhwc(const ConvGeometry& g, const convjit_conv_params& params) {
  return g.layout == CONVJIT_NCHW && activation_floats(g) <= kMaxCopiedFloats &&
         !backward_data_runs_depthwise_kernel(g) &&
         backward_data_runs_depthwise_kernel(conv_twin(params, CONVJIT_NHWC));
}

void depthwise_backward_data_as_nhwc(const ConvGeometry& g, const convjit_conv_params& params, int threads,
                                     const float* dy, const float* w, float* dx) {
  const int64_t in_pixels = g.in[0] * g.in[1] * g.in[2], out_pixels = g.out_pixels();
  const int64_t dy_floats = g.batch * g.out_channels * out_pixels, dx_floats = g.batch * g.in_channels * in_pixels;
  float* copies = thread_layout_copies(size_t(dy_floats + dx_floats));
  float* dy_nhwc = copies;
  float* dx_nhwc = copies + dy_floats;
  transpose_images(g.batch, out_pixels, g.out_channels, dy, dy_nhwc, false, threads);
  // Depthwise weights are [channel][tap] in OIHW and in OHWI alike.
  run_depthwise_backward_data(conv_twin(params, CONVJIT_NHWC), threads, dy_nhwc, w, backward_data_row_tile(g), dx_nhwc);
  transpose_images(g.batch, in_pixels, g.in_channels, dx_nhwc, dx, true, threads);
}

PoolGeometry pool_nhwc_twin(const convjit_pool_params& params) {
  convjit_pool_params nhwc = params;
  nhwc.layout = CONVJIT_NHWC;
  PoolGeometry g;
  make_pool_geometry(nhwc, &g);  // valid: only the layout differs from a valid problem
  return g;
}

bool nchw_pool_can_run_as_nhwc(const PoolGeometry& g, const convjit_pool_params& params, PoolOp op) {
  const int64_t x_floats = g.batch * g.channels * g.in[0] * g.in[1] * g.in[2];
  const int64_t y_floats = g.batch * g.channels * g.out[0] * g.out[1] * g.out[2];
  return g.layout == Layout::NCHW && 2 * (x_floats + y_floats) <= kMaxCopiedFloats &&
         pool_runs_channels_in_lanes(pool_nhwc_twin(params), op);
}

bool nchw_pool_backward_runs_as_nhwc(const PoolGeometry& g, const convjit_pool_params& params, PoolOp op) {
  return nchw_pool_can_run_as_nhwc(g, params, op) && !nchw_pool_backward_beats_twin(g, op);
}

void pool_backward_as_nhwc(PoolOp op, const PoolGeometry& g, const convjit_pool_params& params, int threads,
                           const float* x, const float* y, const float* dy, float* dx, convjit_pool_row_fn compiled) {
  const int64_t in_pixels = g.in[0] * g.in[1] * g.in[2], out_pixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t x_floats = g.batch * g.channels * in_pixels, y_floats = g.batch * g.channels * out_pixels;
  const bool max = op == PoolOp::Max;  // mean reads dy alone
  float* copies = thread_layout_copies(size_t(2 * x_floats + (max ? 2 : 1) * y_floats));
  float* dx_nhwc = copies;
  float* dy_nhwc = dx_nhwc + x_floats;
  float* x_nhwc = max ? dy_nhwc + y_floats : nullptr;
  float* y_nhwc = max ? x_nhwc + x_floats : nullptr;
  transpose_images(g.batch, out_pixels, g.channels, dy, dy_nhwc, false, threads);
  if (max) {
    transpose_images(g.batch, in_pixels, g.channels, x, x_nhwc, false, threads);
    transpose_images(g.batch, out_pixels, g.channels, y, y_nhwc, false, threads);
  }
  run_pool_backward(op, pool_nhwc_twin(params), threads, 0.0f, x_nhwc, y_nhwc, dy_nhwc, dx_nhwc, compiled);
  transpose_images(g.batch, in_pixels, g.channels, dx_nhwc, dx, true, threads);
}

bool nchw_pool_forward_runs_as_nhwc(const PoolGeometry& g, const convjit_pool_params& params, PoolOp op) {
  return nchw_pool_can_run_as_nhwc(g, params, op) && !nchw_pool_forward_beats_twin(g, op);
}

void pool_forward_as_nhwc(PoolOp op, const PoolGeometry& g, const convjit_pool_params& params, int threads,
                          const float* x, float* y, convjit_pool_row_fn compiled) {
  const int64_t in_pixels = g.in[0] * g.in[1] * g.in[2], out_pixels = g.out[0] * g.out[1] * g.out[2];
  const int64_t x_floats = g.batch * g.channels * in_pixels, y_floats = g.batch * g.channels * out_pixels;
  float* x_nhwc = thread_layout_copies(size_t(x_floats + y_floats));
  float* y_nhwc = x_nhwc + x_floats;
  transpose_images(g.batch, in_pixels, g.channels, x, x_nhwc, false, threads);
  run_pool_forward(op, pool_nhwc_twin(params), threads, 0.0f, x_nhwc, y_nhwc, compiled);
  transpose_images(g.batch, out_pixels, g.channels, y_nhwc, y, true, threads);
}

}  // namespace convjit::detail
