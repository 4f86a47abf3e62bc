// pool_nhwc.hpp's kernels over a vector type F (simd_avx2.hpp, simd_avx512.hpp). Include only
// from files compiled for F's ISA; everything here has internal linkage.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "pool_lanes.hpp"
#include "pool_nhwc.hpp"
#include "pool_window.hpp"

namespace convjit::detail {
namespace {

// Vectors of channels a pixel's taps are walked with at once.
constexpr int kPoolVectors = 4;

// A window's taps as offsets from its origin element, in row-major order, for the windows wholly
// inside the input (no tap to clip); count < 0 when the window has more taps than are listed.
struct TapList {
  static constexpr int64_t kMaxTaps = 64;
  int64_t count = -1;
  int64_t offset[kMaxTaps];
};

inline TapList list_taps(const PoolGeometry& g) {
  TapList list;
  if (double(g.window[0]) * double(g.window[1]) * double(g.window[2]) > double(TapList::kMaxTaps)) return list;
  // Where no window fits inside the input, none is unclipped, and the offsets (a dilation of any
  // size times x's strides) need not fit.
  for (int d = 0; d < 3; ++d) {
    if ((g.window[d] - 1) * g.dilation[d] >= g.in[d]) return list;
  }
  list.count = 0;
  for (int64_t a = 0; a < g.window[0]; ++a) {
    for (int64_t b = 0; b < g.window[1]; ++b) {
      for (int64_t c = 0; c < g.window[2]; ++c) {
        list.offset[list.count++] = a * g.dilation[0] * g.x.spatial[0] + b * g.dilation[1] * g.x.spatial[1] +
                                    c * g.dilation[2] * g.x.spatial[2];
      }
    }
  }
  return list;
}

// Calls tap(offset) for the real taps of win in row-major order: from the list when no tap is
// clipped, else walking the clipped window.
template <typename Tap>
inline __attribute__((always_inline)) void for_each_real_tap(const PoolGeometry& g, const TapList& list,
                                                             const Window& win, Tap&& tap) {
  if (list.count >= 0 && win.real_taps() == list.count) {  // a listed window has at most kMaxTaps
    const int64_t origin =
        win.origin[0] * g.x.spatial[0] + win.origin[1] * g.x.spatial[1] + win.origin[2] * g.x.spatial[2];
    for (int64_t t = 0; t < list.count; ++t) tap(origin + list.offset[t]);
    return;
  }
  for_each_tap(g, win, tap);
}

// Channels [c, c + Vecs * kLanes) of one output pixel (the last vector's lanes `tail`).
template <typename F, bool Max, int Vecs>
inline __attribute__((always_inline)) void forward_channels(const PoolGeometry& g, const TapList& list,
                                                            const Window& win, const float* image, float* out,
                                                            int64_t c, typename F::Mask tail, float divisor) {
  PoolLanes<F, Max> lanes[Vecs];
  for_each_real_tap(g, list, win, [&](int64_t offset) {
    const float* at = image + offset + c;
    for (int v = 0; v < Vecs; ++v) {
      const typename F::Vec value = v == Vecs - 1 ? F::load(at + v * F::kLanes, tail) : F::load(at + v * F::kLanes);
      lanes[v].add(value);
    }
  });
  const bool any_tap = win.real_taps() > 0;
  for (int v = 0; v < Vecs; ++v) {
    const typename F::Vec result = lanes[v].result(any_tap, divisor);
    if (v == Vecs - 1) {
      F::store(out + c + v * F::kLanes, result, tail);
    } else {
      F::store(out + c + v * F::kLanes, result);
    }
  }
}

// Runs body(vectors, c, tail) over [c0, c1) (vectors: an integral_constant): blocks of
// kPoolVectors vectors, the last block as many as are left, its last vector with its lanes, so
// each pixel's taps are walked once per block.
template <typename F, typename Body>
inline __attribute__((always_inline)) void over_channels(int64_t c0, int64_t c1, Body&& body) {
  constexpr int64_t kBlock = kPoolVectors * F::kLanes;
  int64_t c = c0;
  for (; c + kBlock <= c1; c += kBlock) body(std::integral_constant<int, kPoolVectors>{}, c, F::all_lanes());
  if (c == c1) return;
  const int64_t left = c1 - c, vectors = (left + F::kLanes - 1) / F::kLanes;
  const typename F::Mask tail = F::first_lanes(left - (vectors - 1) * F::kLanes);
  static_assert(kPoolVectors == 4, "the cases below");
  switch (vectors) {
    case 1: return body(std::integral_constant<int, 1>{}, c, tail);
    case 2: return body(std::integral_constant<int, 2>{}, c, tail);
    case 3: return body(std::integral_constant<int, 3>{}, c, tail);
    default: return body(std::integral_constant<int, 4>{}, c, tail);
  }
}

// A block of channels at a time, every output pixel of the image for it: the block's vector count
// and the op are fixed for the pixel loop (each output's taps, and each dx element's outputs, in
// the same order as pixel by pixel).
template <typename F>
void run_pool_nhwc_forward(const PoolGeometry& g, PoolOp op, const float* x, float* y, int64_t n, int64_t c0,
                           int64_t c1, const OutputBox* skip) {
  const float* image = x + n * g.x.batch;
  const TapList list = list_taps(g);
  const float window_size = window_taps(g);
  auto pixels = [&](auto vectors, auto max, int64_t c, typename F::Mask tail) {
    for_each_output_pixel(g, n, skip, [&](int64_t y_offset, const Window& win) {
      const float divisor = g.exclude_padding ? float(win.real_taps()) : window_size;
      forward_channels<F, decltype(max)::value, decltype(vectors)::value>(g, list, win, image, y + y_offset, c, tail,
                                                                          divisor);
    });
  };
  over_channels<F>(c0, c1, [&](auto vectors, int64_t c, typename F::Mask tail) {
    if (op == PoolOp::Max) {
      pixels(vectors, std::true_type{}, c, tail);
    } else {
      pixels(vectors, std::false_type{}, c, tail);
    }
  });
  F::leave();
}

// One output pixel's gradient into dx: max routes each lane's to the first tap whose x equals y,
// mean adds grad / divisor to every real tap.
template <typename F, bool Max, int Vecs>
inline __attribute__((always_inline)) void backward_channels(const PoolGeometry& g, const TapList& list,
                                                             const Window& win, const float* x_image,
                                                             const float* y_pixel, const float* dy_pixel,
                                                             float* dx_image, int64_t c, typename F::Mask tail,
                                                             float divisor) {
  auto load = [&](const float* p, int v) { return v == Vecs - 1 ? F::load(p, tail) : F::load(p); };
  auto store = [&](float* p, typename F::Vec value, int v) {
    if (v == Vecs - 1) {
      F::store(p, value, tail);
    } else {
      F::store(p, value);
    }
  };
  typename F::Vec grad[Vecs], y_value[Vecs];
  typename F::Mask routed[Vecs];
  for (int v = 0; v < Vecs; ++v) {
    grad[v] = load(dy_pixel + c + v * F::kLanes, v);
    if constexpr (Max) {
      y_value[v] = load(y_pixel + c + v * F::kLanes, v);
      routed[v] = F::no_lanes();
    } else {
      grad[v] = divisor == 0 ? F::zero() : F::div(grad[v], F::set1(divisor));  // the share of each tap
    }
  }
  for_each_real_tap(g, list, win, [&](int64_t offset) {
    for (int v = 0; v < Vecs; ++v) {
      float* at = dx_image + offset + c + v * F::kLanes;
      if constexpr (Max) {
        const typename F::Mask here =
            route_to_first_equal<F>(load(x_image + offset + c + v * F::kLanes, v), y_value[v], routed[v]);
        store(at, F::add_where(here, load(at, v), grad[v]), v);
      } else {
        store(at, F::add(load(at, v), grad[v]), v);
      }
    }
  });
}

// The compiled run of output row (od, oh) for channels [c, c + count) of image n.
inline void run_compiled_row(const PoolGeometry& g, const CompiledPoolRows& rows, const float* x, const float* y,
                             const float* dy, float* dx, int64_t n, int64_t od, int64_t oh, int64_t c, int64_t count) {
  const RunStart at = run_start(g, rows.box, n, od, oh, c);
  // y is only read by backward rows (the ABI's one row type serves both directions).
  const convjit_pool_row row{x ? x + at.window : nullptr,
                             y ? const_cast<float*>(y) + at.output : nullptr,
                             dy + at.output,
                             dx + at.window,
                             rows.box.hi[2] - rows.box.lo[2],
                             count};
  rows.run(rows.problem, &row);
}

// A backward task's dx block (channels [c0, c1) of one image) set to zero lazily, a D x H row of
// inputs at a time in flattened order, just before the first output row that reaches it: the
// rows are still in cache when the gradients are added. The inputs that `keep`'s rows reach first
// (and write without reading) are left alone.
class LazyZeroing {
 public:
  LazyZeroing(const PoolGeometry& g, float* image, int64_t c0, int64_t c1, const CompiledPoolRows* keep)
      : g_(g), image_(image), c0_(c0), c1_(c1) {
    if (!keep || !keep->writes_first_reached) return;
    // Output o's window starts at o * stride - pad and reaches the inputs from its first-reached
    // tap to its end first (dilation 1, stride <= window): the box's outputs those of
    // [lo * stride - pad + first-reached tap, (hi - 1) * stride - pad + window).
    for (int d = 0; d < 3; ++d) {
      keep_lo_[d] = keep->box.lo[d] * g.stride[d] - g.pad_begin[d] +
                    convjit_pool_first_reached_tap(g.window[d], g.stride[d]);
      keep_hi_[d] = (keep->box.hi[d] - 1) * g.stride[d] - g.pad_begin[d] + g.window[d];
    }
  }

  // Every input row output row (od, oh) reaches is zero.
  void before_output_row(int64_t od, int64_t oh) {
    auto last_reached = [&](int d, int64_t o) {
      return std::min(g_.in[d] - 1, o * g_.stride[d] - g_.pad_begin[d] + (g_.window[d] - 1) * g_.dilation[d]);
    };
    const int64_t d = last_reached(0, od), h = last_reached(1, oh);
    if (d >= 0 && h >= 0) zero_rows_before(d * g_.in[1] + h + 1);
  }
  void finish() { zero_rows_before(g_.in[0] * g_.in[1]); }

 private:
  void zero_rows_before(int64_t end) {
    for (; next_row_ < end; ++next_row_) {
      const int64_t d = next_row_ / g_.in[1], h = next_row_ % g_.in[1], first = next_row_ * g_.in[2];
      const bool kept_row = keep_lo_[0] <= d && d < keep_hi_[0] && keep_lo_[1] <= h && h < keep_hi_[1];
      if (!kept_row) {
        zero_pixels(first, first + g_.in[2]);
        continue;
      }
      zero_pixels(first, first + keep_lo_[2]);
      zero_pixels(first + keep_hi_[2], first + g_.in[2]);
    }
  }
  void zero_pixels(int64_t first, int64_t end) { zero_nhwc_pixels(image_, g_.channels, first, end, c0_, c1_); }

  const PoolGeometry& g_;
  float* image_;
  int64_t c0_, c1_;
  int64_t keep_lo_[3] = {0, 0, 0}, keep_hi_[3] = {0, 0, 0};  // empty: nothing kept
  int64_t next_row_ = 0;
};

template <typename F>
void run_pool_nhwc_backward(const PoolGeometry& g, PoolOp op, const float* x, const float* y, const float* dy,
                            float* dx, int64_t n, int64_t c0, int64_t c1, const CompiledPoolRows* compiled) {
  const TapList list = list_taps(g);
  const float window_size = window_taps(g);
  const bool max = op == PoolOp::Max;
  const float* x_image = max ? x + n * g.x.batch : nullptr;
  float* dx_image = dx + n * g.x.batch;
  LazyZeroing zeroing(g, dx_image, c0, c1, compiled);
  auto pixels = [&](auto vectors, auto is_max, int64_t c, typename F::Mask tail) {
    const int64_t count = std::min<int64_t>(decltype(vectors)::value * F::kLanes, c1 - c);
    const bool first_block = c == c0;  // zeroes all of [c0, c1) as it goes
    for_each_output_pixel(
        g, n, compiled ? &compiled->box : nullptr,
        [&](int64_t y_offset, const Window& win) {
          const float divisor = g.exclude_padding ? float(win.real_taps()) : window_size;
          backward_channels<F, decltype(is_max)::value, decltype(vectors)::value>(
              g, list, win, x_image, max ? y + y_offset : nullptr, dy + y_offset, dx_image, c, tail, divisor);
        },
        [&](int64_t od, int64_t oh) {
          run_compiled_row(g, *compiled, max ? x : nullptr, max ? y : nullptr, dy, dx, n, od, oh, c, count);
        },
        [&](int64_t od, int64_t oh) {
          if (first_block) zeroing.before_output_row(od, oh);
        });
    if (first_block) zeroing.finish();
  };
  over_channels<F>(c0, c1, [&](auto vectors, int64_t c, typename F::Mask tail) {
    if (max) {
      pixels(vectors, std::true_type{}, c, tail);
    } else {
      pixels(vectors, std::false_type{}, c, tail);
    }
  });
  F::leave();
}

}  // namespace
}  // namespace convjit::detail
