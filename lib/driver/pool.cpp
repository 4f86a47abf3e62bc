// Pooling, forward and backward, for every rank and layout. A task owns a block of channels of
// one image and walks its output pixels; per pixel, the window is clipped to the real input once
// and the taps are visited in row-major order with the channel block innermost (contiguous in
// NHWC, so the compiler vectorizes it). Backward tasks own their dx block, so overlapping
// windows accumulate without races and in an order independent of the thread count.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "geometry.hpp"
#include "ops_internal.hpp"
#include "pool_nchw.hpp"
#include "pool_nchw_whole_rows.hpp"
#include "pool_nhwc.hpp"
#include "pool_window.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

// Channels a task walks together: each output pixel's window is clipped once for all of them. In
// NCHW they are planes apart, so fewer: their window rows must stay in L1 between pixels.
constexpr int64_t kNhwcChannelBlock = kNhwcPoolChannelBlock;
constexpr int64_t kNchwChannelBlock = 16;

struct ChannelBlocks {
  int64_t size, count;
};

ChannelBlocks channel_blocks(const PoolGeometry& g) {
  const int64_t size = std::min(g.channels, g.layout == Layout::NCHW ? kNchwChannelBlock : kNhwcChannelBlock);
  return {size, (g.channels + size - 1) / size};
}

// The ISA kernels of NHWC max and mean pooling (pool_nhwc.hpp), or null: the widest the host has.
using NhwcForward = void (*)(const PoolGeometry&, PoolOp, const float*, float*, int64_t, int64_t, int64_t,
                             const OutputBox*);
using NhwcBackward = void (*)(const PoolGeometry&, PoolOp, const float*, const float*, const float*, float*, int64_t,
                              int64_t, int64_t, const CompiledPoolRows*);

NhwcForward nhwc_forward_kernel(const PoolGeometry& g, PoolOp op) {
#if defined(__x86_64__)
  if (avx512::pool_nhwc_supported(g, op)) return avx512::pool_nhwc_forward;
  if (avx2::pool_nhwc_supported(g, op)) return avx2::pool_nhwc_forward;
#endif
  (void)g;
  (void)op;
  return nullptr;
}

NhwcBackward nhwc_backward_kernel(const PoolGeometry& g, PoolOp op) {
#if defined(__x86_64__)
  if (avx512::pool_nhwc_supported(g, op)) return avx512::pool_nhwc_backward;
  if (avx2::pool_nhwc_supported(g, op)) return avx2::pool_nhwc_backward;
#endif
  (void)g;
  (void)op;
  return nullptr;
}

// The ISA kernels of NCHW max and mean pooling (pool_nchw.hpp) and their walk along W; none: null
// functions (backward also where a max's window has more taps than it routes).
struct NchwKernels {
  void (*forward)(const PoolGeometry&, PoolOp, const NchwPoolWalk&, const NchwPoolRow*, int64_t, const float*, float*,
                  int64_t, int64_t, float*) = nullptr;
  void (*backward)(const PoolGeometry&, PoolOp, const NchwPoolWalk&, const NchwPoolRow*, int64_t, const float*,
                   const float*, const float*, float*, int64_t, int64_t, float*) = nullptr;
  NchwPoolWalk walk;
};

NchwKernels nchw_kernels(const PoolGeometry& g, PoolOp op) {
  NchwKernels k;
#if defined(__x86_64__)
  if (avx512::pool_nchw_supported(g, op) && make_nchw_pool_walk(g, avx512::kPoolNchwLanes, &k.walk)) {
    k.forward = avx512::pool_nchw_forward;
    k.backward = avx512::pool_nchw_backward;
  } else if (avx2::pool_nchw_supported(g, op) && make_nchw_pool_walk(g, avx2::kPoolNchwLanes, &k.walk)) {
    k.forward = avx2::pool_nchw_forward;
    k.backward = avx2::pool_nchw_backward;
  }
  if (op == PoolOp::Max && window_taps(g) > float(kPoolNchwMaxRoutedTaps)) k.backward = nullptr;
#endif
  (void)g;
  (void)op;
  return k;
}

// NCHW pooling over windows of whole input rows (pool_nchw_whole_rows.hpp), where an ISA kernel
// takes g and op.
using WholeRowsForward = void (*)(const PoolGeometry&, PoolOp, const float*, float*, int64_t, int64_t);
using WholeRowsBackward = void (*)(const PoolGeometry&, const float*, float*, int64_t, int64_t);

// Forward where a window has a tile's worth of taps (16, AVX-512's lanes) or more: each output pays
// a tile transpose (the measured windows had 18-3136 taps; a 2 x 2 x 2 window stays with the twin).
WholeRowsForward whole_rows_forward(const PoolGeometry& g, PoolOp op) {
  if (window_taps(g) < 16) return nullptr;
#if defined(__x86_64__)
  if (avx512::pool_nchw_whole_rows_forward_supported(g, op)) return avx512::pool_nchw_whole_rows_forward;
  if (avx2::pool_nchw_whole_rows_forward_supported(g, op)) return avx2::pool_nchw_whole_rows_forward;
#endif
  (void)g;
  (void)op;
  return nullptr;
}

// Backward only for one window per plane (global pooling): where a plane holds several windows of
// a few vectors, the masked store ending each stalled the loads after it and the twin won
// (bench/RESULTS.md, "Session 19").
WholeRowsBackward whole_rows_backward(const PoolGeometry& g, PoolOp op) {
  if (g.out[0] * g.out[1] != 1) return nullptr;
#if defined(__x86_64__)
  if (avx512::pool_nchw_whole_rows_backward_supported(g, op)) return avx512::pool_nchw_mean_backward_whole_rows;
  if (avx2::pool_nchw_whole_rows_backward_supported(g, op)) return avx2::pool_nchw_mean_backward_whole_rows;
#endif
  (void)g;
  (void)op;
  return nullptr;
}

// Planes in tasks of kNchwChannelBlock: run(first plane, end plane, this thread's scratch of
// `scratch_floats`, or null).
template <typename Run>
void for_plane_blocks(const PoolGeometry& g, int threads, int64_t scratch_floats, Run&& run) {
  const int64_t planes = g.batch * g.channels;
  const double taps =
      double(g.out[0] * g.out[1] * g.out[2]) * double(g.window[0]) * double(g.window[1]) * double(g.window[2]);
  parallel_for(threads, (planes + kNchwChannelBlock - 1) / kNchwChannelBlock, taps * double(planes), [&](int64_t task) {
    const int64_t first = task * kNchwChannelBlock;
    run(first, std::min(planes, first + kNchwChannelBlock),
        scratch_floats > 0 ? thread_scratch(size_t(scratch_floats)) : nullptr);
  });
}

// Per task: body.begin(n, c0, c1), then body.whole_task(n, c0, c1) (true: an ISA kernel ran the
// task), else body.pixel(n, c0, c1, y offset, window) for every output pixel.
template <typename Body>
void for_each_output(const PoolGeometry& g, int threads, Body&& body) {
  const ChannelBlocks blocks = channel_blocks(g);
  const int64_t out_pixels = g.out[0] * g.out[1] * g.out[2];
  const double taps = double(g.window[0]) * double(g.window[1]) * double(g.window[2]);
  parallel_for(threads, g.batch * blocks.count, double(g.batch) * g.channels * out_pixels * taps, [&](int64_t task) {
    const int64_t n = task / blocks.count, c0 = task % blocks.count * blocks.size;
    const int64_t c1 = std::min(g.channels, c0 + blocks.size);
    body.begin(n, c0, c1);
    if (body.whole_task(n, c0, c1)) return;
    int64_t o[3];
    for (o[0] = 0; o[0] < g.out[0]; ++o[0]) {
      for (o[1] = 0; o[1] < g.out[1]; ++o[1]) {
        for (o[2] = 0; o[2] < g.out[2]; ++o[2]) {
          const int64_t y_offset =
              n * g.y.batch + o[0] * g.y.spatial[0] + o[1] * g.y.spatial[1] + o[2] * g.y.spatial[2];
          body.pixel(n, c0, c1, y_offset, clip_window(g, o));
        }
      }
    }
  });
}

float lp_root(float sum, float p) {
  return p == 1.0f ? sum : p == 2.0f ? std::sqrt(sum) : std::pow(sum, 1.0f / p);
}
float lp_power(float magnitude, float p) {
  return p == 1.0f ? magnitude : p == 2.0f ? magnitude * magnitude : std::pow(magnitude, p);
}

// One pooling output in the making: the running max (NaN never wins, but a window of NaNs gives
// NaN: `seen` says a number was met) or the running sum of values or of |v|^p.
template <PoolOp Op>
inline void accumulate(float value, float p, float& acc, int32_t& seen) {
  if constexpr (Op == PoolOp::Max) {
    acc = value > acc ? value : acc;
    seen |= int32_t(value == value);
  } else if constexpr (Op == PoolOp::Mean) {
    acc += value;
  } else {
    acc += lp_power(std::fabs(value), p);
  }
}

template <PoolOp Op>
inline float pool_result(float acc, int32_t seen, int64_t real_taps, float divisor, float p) {
  if constexpr (Op == PoolOp::Max) return real_taps == 0 ? -FLT_MAX : seen ? acc : NAN;
  if constexpr (Op == PoolOp::Mean) return real_taps == 0 ? 0.0f : acc / divisor;
  return lp_root(acc, p);
}

template <PoolOp Op>
struct ForwardBody {
  const PoolGeometry& g;
  float p;
  const float* x;
  float* y;
  convjit_pool_row_fn compiled;  // or null
  NhwcForward nhwc = nhwc_forward_kernel(g, Op);
  // Only for compiled rows (a body is made per NCHW plane too).
  OutputBox interior = compiled ? interior_outputs(g) : OutputBox{};
  convjit_pool_problem problem = compiled ? compiled_pool_problem(g) : convjit_pool_problem{};

  // Whether the compiled rows take every output (every window wholly real): tier 0's kernel has
  // none to form.
  bool interior_is_everything = interior.lo[0] == 0 && interior.lo[1] == 0 && interior.lo[2] == 0 &&
                                interior.hi[0] == g.out[0] && interior.hi[1] == g.out[1] && interior.hi[2] == g.out[2];

  // The compiled kernel takes the outputs whose windows are wholly real, a run of each row at a
  // time; tier 0's kernel the rest.
  bool whole_task(int64_t n, int64_t c0, int64_t c1) {
    if (!nhwc) return false;
    const bool runs_compiled = !is_empty(interior);  // empty without compiled rows
    if (runs_compiled) {
      for (int64_t od = interior.lo[0]; od < interior.hi[0]; ++od) {
        for (int64_t oh = interior.lo[1]; oh < interior.hi[1]; ++oh) {
          const RunStart at = run_start(g, interior, n, od, oh, c0);
          const convjit_pool_row row{x + at.window, y + at.output, nullptr, nullptr, interior.hi[2] - interior.lo[2],
                                     c1 - c0};
          compiled(&problem, &row);
        }
      }
    }
    if (!runs_compiled || !interior_is_everything) nhwc(g, Op, x, y, n, c0, c1, runs_compiled ? &interior : nullptr);
    return true;
  }

  float divisor(const Window& win) const { return g.exclude_padding ? float(win.real_taps()) : window_taps(g); }

  void begin(int64_t, int64_t, int64_t) {}
  void pixel(int64_t n, int64_t c0, int64_t c1, int64_t y_offset, const Window& win) {
    float acc[kNhwcChannelBlock];
    int32_t seen[kNhwcChannelBlock];
    const int64_t cs = g.x.channel, count = c1 - c0;
    const float* image = x + n * g.x.batch + c0 * cs;
    std::fill(acc, acc + count, Op == PoolOp::Max ? -INFINITY : 0.0f);
    std::fill(seen, seen + count, 0);
    for_each_tap(g, win, [&](int64_t offset) {
      const float* v = image + offset;
      for (int64_t c = 0; c < count; ++c) accumulate<Op>(v[c * cs], p, acc[c], seen[c]);
    });
    float* out = y + y_offset + c0 * g.y.channel;
    const float d = divisor(win);
    for (int64_t c = 0; c < count; ++c) out[c * g.y.channel] = pool_result<Op>(acc[c], seen[c], win.real_taps(), d, p);
  }
};

// The inputs at src[i * Stride] into outputs i of [0, count); Stride 0: a runtime stride.
template <PoolOp Op, int Stride>
void accumulate_run(const float* src, int64_t stride, int64_t count, float p, float* acc, int32_t* seen) {
  const int64_t step = Stride ? Stride : stride;
  for (int64_t i = 0; i < count; ++i) accumulate<Op>(src[i * step], p, acc[i], seen[i]);
}

// NCHW forward of one (image, channel) plane without an ISA kernel: the outputs of a row whose taps
// along W are all real share one clipped window, tap by tap, each tap a strided run of one input
// row that vectorizes; the few pixels at the rows' ends go one by one.
template <PoolOp Op>
struct NchwForwardPlanes {
  ForwardBody<Op> body;
  int64_t interior_begin, interior_end;  // the outputs along W whose taps are all real (or none)

  NchwForwardPlanes(const PoolGeometry& g, float p, const float* x, float* y) : body{g, p, x, y, nullptr} {
    const OutputBox whole_windows = interior_outputs(g);
    interior_begin = whole_windows.lo[2];
    interior_end = whole_windows.hi[2];
    if (interior_end - interior_begin < 8) interior_end = interior_begin;  // under a vector's worth: one by one
  }

  void plane(int64_t n, int64_t c) {
    constexpr int64_t kRun = 256;  // pixels formed at once
    const PoolGeometry& g = body.g;
    const float* x_plane = body.x + n * g.x.batch + c * g.x.channel;
    const int64_t s = g.stride[2];
    int64_t o[3];
    for (o[0] = 0; o[0] < g.out[0]; ++o[0]) {
      for (o[1] = 0; o[1] < g.out[1]; ++o[1]) {
        const int64_t y_row = n * g.y.batch + c * g.y.channel + o[0] * g.y.spatial[0] + o[1] * g.y.spatial[1];
        auto one_pixel = [&](int64_t ow) {
          o[2] = ow;
          body.pixel(n, c, c + 1, y_row - c * g.y.channel + ow, clip_window(g, o));
        };
        for (int64_t ow = 0; ow < interior_begin; ++ow) one_pixel(ow);
        for (int64_t first = interior_begin; first < interior_end; first += kRun) {
          const int64_t count = std::min(kRun, interior_end - first);
          o[2] = first;
          const Window win = clip_window(g, o);  // along W every tap is real: the same for the whole run
          float acc[kRun];
          int32_t seen[kRun];
          std::fill(acc, acc + count, Op == PoolOp::Max ? -INFINITY : 0.0f);
          std::fill(seen, seen + count, 0);
          for (int64_t a = win.lo[0]; a < win.hi[0]; ++a) {
            for (int64_t b = win.lo[1]; b < win.hi[1]; ++b) {
              const float* row = x_plane + (win.origin[0] + a * g.dilation[0]) * g.x.spatial[0] +
                                 (win.origin[1] + b * g.dilation[1]) * g.x.spatial[1] + win.origin[2];
              for (int64_t t = 0; t < g.window[2]; ++t) {
                const float* src = row + t * g.dilation[2];
                if (s == 1)
                  accumulate_run<Op, 1>(src, s, count, body.p, acc, seen);
                else if (s == 2)
                  accumulate_run<Op, 2>(src, s, count, body.p, acc, seen);
                else
                  accumulate_run<Op, 0>(src, s, count, body.p, acc, seen);
              }
            }
          }
          const float d = body.divisor(win);
          for (int64_t i = 0; i < count; ++i)
            body.y[y_row + first + i] = pool_result<Op>(acc[i], seen[i], win.real_taps(), d, body.p);
        }
        for (int64_t ow = std::max(interior_begin, interior_end); ow < g.out[2]; ++ow) one_pixel(ow);
      }
    }
  }
};

template <PoolOp Op>
void forward(const PoolGeometry& g, int threads, float p, const float* x, float* y, convjit_pool_row_fn compiled) {
  if (g.layout == Layout::NCHW) {
    if (const WholeRowsForward whole_rows = whole_rows_forward(g, Op)) {
      for_plane_blocks(g, threads, 0, [&](int64_t first, int64_t end, float*) { whole_rows(g, Op, x, y, first, end); });
      return;
    }
    const NchwKernels kernel = nchw_kernels(g, Op);
    if (kernel.forward) {
      const std::vector<NchwPoolRow> rows = nchw_pool_rows(g);
      for_plane_blocks(g, threads, kernel.walk.padded_floats, [&](int64_t first, int64_t end, float* padded) {
        kernel.forward(g, Op, kernel.walk, rows.data(), int64_t(rows.size()), x, y, first, end, padded);
      });
      return;
    }
    const ChannelBlocks blocks = channel_blocks(g);
    const double taps =
        double(g.out[0] * g.out[1] * g.out[2]) * double(g.window[0]) * double(g.window[1]) * double(g.window[2]);
    NchwForwardPlanes<Op> planes(g, p, x, y);
    parallel_for(threads, g.batch * blocks.count, taps * double(g.batch * g.channels), [&](int64_t task) {
      const int64_t n = task / blocks.count, c0 = task % blocks.count * blocks.size;
      for (int64_t c = c0; c < std::min(g.channels, c0 + blocks.size); ++c) planes.plane(n, c);
    });
    return;
  }
  for_each_output(g, threads, ForwardBody<Op>{g, p, x, y, compiled});
}

struct BackwardBody {
  const PoolGeometry& g;
  PoolOp op;
  float p;
  const float *x, *y, *dy;
  float* dx;
  convjit_pool_row_fn compiled;  // or null
  NhwcBackward nhwc = nhwc_backward_kernel(g, op);
  convjit_pool_problem problem = compiled ? compiled_pool_problem(g) : convjit_pool_problem{};
  OutputBox interior = compiled != nullptr && nhwc != nullptr ? interior_outputs(g) : OutputBox{};

  // The tier-0 kernel runs the compiled rows between its own outputs, in output order; where the
  // windows cover x, the rows write the inputs their outputs reach first without reading them.
  bool whole_task(int64_t n, int64_t c0, int64_t c1) {
    if (!nhwc) return false;
    const CompiledPoolRows rows{compiled, &problem, interior,
                                convjit_pool_windows_cover(g.window, g.stride, g.dilation) != 0};
    nhwc(g, op, x, y, dy, dx, n, c0, c1, is_empty(interior) ? nullptr : &rows);
    return true;
  }

  // The pixel path's dx block starts at zero (the ISA kernel writes all of its own).
  void begin(int64_t n, int64_t c0, int64_t c1) {
    if (nhwc) return;
    float* image = dx + n * g.x.batch;
    const int64_t pixels = g.in[0] * g.in[1] * g.in[2];
    if (g.layout == Layout::NCHW) {
      std::memset(image + c0 * g.x.channel, 0, sizeof(float) * size_t((c1 - c0) * pixels));
    } else {
      zero_nhwc_pixels(image, g.channels, 0, pixels, c0, c1);
    }
  }

  void pixel(int64_t n, int64_t c0, int64_t c1, int64_t y_offset, const Window& win) {
    const int64_t cs = g.x.channel;
    const int64_t image = n * g.x.batch + c0 * cs;
    for (int64_t c = 0; c < c1 - c0; ++c) {
      const int64_t yc = y_offset + (c0 + c) * g.y.channel;
      const float grad = dy[yc];
      if (op == PoolOp::Max) {
        bool routed = false;  // to the first tap equal to the output, in row-major order
        for_each_tap(g, win, [&](int64_t offset) {
          if (!routed && x[image + offset + c * cs] == y[yc]) {
            dx[image + offset + c * cs] += grad;
            routed = true;
          }
        });
      } else if (op == PoolOp::Mean) {
        const float divisor = g.exclude_padding ? float(win.real_taps()) : window_taps(g);
        const float share = divisor == 0 ? 0.0f : grad / divisor;
        for_each_tap(g, win, [&](int64_t offset) { dx[image + offset + c * cs] += share; });
      } else {
        const float norm = y[yc];
        if (norm == 0.0f) continue;  // every tap is 0: the subgradient 0
        const float scale = grad / lp_power(norm, p - 1.0f);
        for_each_tap(g, win, [&](int64_t offset) {
          const float v = x[image + offset + c * cs];
          // d|v|^p/dv = p |v|^(p-1) sign(v), with sign(0) = 0 (also the subgradient for p <= 1)
          if (v != 0.0f) dx[image + offset + c * cs] += scale * std::copysign(lp_power(std::fabs(v), p - 1.0f), v);
        });
      }
    }
  }
};

}  // namespace

void run_pool_forward(PoolOp op, const PoolGeometry& g, int threads, float p, const float* x, float* y,
                      convjit_pool_row_fn compiled) {
  switch (op) {
    case PoolOp::Max: forward<PoolOp::Max>(g, threads, p, x, y, compiled); break;
    case PoolOp::Mean: forward<PoolOp::Mean>(g, threads, p, x, y, compiled); break;
    case PoolOp::LpNorm: forward<PoolOp::LpNorm>(g, threads, p, x, y, nullptr); break;
  }
}

convjit_pool_problem compiled_pool_problem(const PoolGeometry& g) {
  convjit_pool_problem p{};
  p.channels = g.channels;
  for (int d = 0; d < 3; ++d) {
    p.window[d] = g.window[d];
    p.stride[d] = g.stride[d];
    p.dilation[d] = g.dilation[d];
    p.x.spatial[d] = g.x.spatial[d];
    p.y.spatial[d] = g.y.spatial[d];
  }
  p.x.batch = g.x.batch;
  p.x.channel = g.x.channel;
  p.y.batch = g.y.batch;
  p.y.channel = g.y.channel;
  p.divisor = window_taps(g);  // every window a compiled row gets is wholly real: exclude_padding's count too
  return p;
}

bool pool_runs_compiled_rows(const PoolGeometry& g, PoolOp op) {
  return nhwc_forward_kernel(g, op) != nullptr && !is_empty(interior_outputs(g));
}

bool nchw_pool_forward_runs_whole_rows(const PoolGeometry& g, PoolOp op) {
  return whole_rows_forward(g, op) != nullptr;
}

bool nchw_pool_forward_beats_twin(const PoolGeometry& g, PoolOp op) {
  if (nchw_pool_forward_runs_whole_rows(g, op)) return true;
  const NchwKernels kernel = nchw_kernels(g, op);
  return kernel.forward != nullptr && g.stride[2] == 2 && g.out[2] >= kernel.walk.lanes;
}

bool nchw_pool_backward_runs_whole_rows(const PoolGeometry& g, PoolOp op) {
  return whole_rows_backward(g, op) != nullptr;
}

bool nchw_pool_backward_beats_twin(const PoolGeometry& g, PoolOp op) {
  if (nchw_pool_backward_runs_whole_rows(g, op)) return true;
  const NchwKernels kernel = nchw_kernels(g, op);
  if (!kernel.backward) return false;
  const bool few_channels = g.channels <= 8 && g.stride[2] == 2 && g.out[2] >= kernel.walk.lanes;
  return nchw_pool_windows_tile_in_place(g, kernel.walk) || few_channels;
}

bool pool_runs_channels_in_lanes(const PoolGeometry& g, PoolOp op) {
  return nhwc_backward_kernel(g, op) != nullptr;
}

void run_pool_backward(PoolOp op, const PoolGeometry& g, int threads, float p, const float* x, const float* y,
                       const float* dy, float* dx, convjit_pool_row_fn compiled) {
  if (const WholeRowsBackward whole_rows = whole_rows_backward(g, op)) {
    for_plane_blocks(g, threads, 0, [&](int64_t first, int64_t end, float*) { whole_rows(g, dy, dx, first, end); });
    return;
  }
  const NchwKernels kernel = nchw_kernels(g, op);  // none for NHWC and Lp-norm
  if (kernel.backward) {
    const std::vector<NchwPoolRow> rows = nchw_pool_rows(g);
    for_plane_blocks(g, threads, 2 * kernel.walk.padded_floats, [&](int64_t first, int64_t end, float* padded) {
      kernel.backward(g, op, kernel.walk, rows.data(), int64_t(rows.size()), x, y, dy, dx, first, end, padded);
    });
    return;
  }
  for_each_output(g, threads, BackwardBody{g, op, p, x, y, dy, dx, compiled});
}

}  // namespace convjit::detail
