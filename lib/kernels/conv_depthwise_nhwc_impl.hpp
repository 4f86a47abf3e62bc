// Tier 0's NHWC depthwise forward (conv_depthwise_nhwc.hpp), written once over a vector type F
// (simd_avx2.hpp, simd_avx512.hpp): the groups fill F's lanes. Include from one file per ISA,
// compiled with that ISA's flags (conv_depthwise_nhwc_avx2.cpp, conv_depthwise_nhwc_avx512.cpp).
// Everything here has internal linkage: no function compiled for one ISA can stand in, at link
// time, for the same inline function of another file (nor does this file instantiate a standard
// container: the weights' buffer lives in conv_depthwise_nhwc.cpp, compiled for any x86-64).
#pragma once

#include <algorithm>
#include <cstdint>

#include "conv_depthwise_nhwc.hpp"
#include "patch_pack.hpp"
#include "steps.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

// A block keeps 8 FMA chains in flight (two per FMA unit's 4-cycle latency): inside a row, 4
// output pixels of 2 vectors of channels; at the row's edges, where pixels have their own taps, one
// pixel of 4 vectors. (8 pixels of one AVX2 vector measured slower: at stride 2 and 256 channels its
// 8 input streams, 2 KB apart, share a few L1 sets.)
constexpr int kPixels = 4;
constexpr int kVectors = 2;
constexpr int kEdgeVectors = 4;

// The real taps of some output pixels, in weight order: per tap, the offset of its input row
// (D and H), its input column seen from output pixel 0 (-pad + kw * dilation; output pixel ow
// reads column ow * stride + that, a column inside the input for a real tap, so offsets are
// formed only for those) and the tap's weights, every channel side by side.
struct RowTaps {
  int64_t count = 0;
  int64_t row_offset[kDepthwiseNhwcMaxTaps];
  int64_t column[kDepthwiseNhwcMaxTaps];
  const float* weights[kDepthwiseNhwcMaxTaps];
};

// Channels [c, c + lanes * Vectors) of `Pixels` consecutive output pixels from ow, every W tap of
// each real (with Tail, one vector masked by `lanes` for the channel tail); the kd/kh taps outside
// the input are already left out.
template <typename F, int Pixels, int Vectors, bool Tail>
inline void pixel_block(const ConvGeometry& g, const RowTaps& taps, const float* image, int64_t ow, int64_t c,
                        typename F::Mask lanes, const float* bias, bool relu, float* y_row) {
  static_assert(!Tail || Vectors == 1);
  using Vec = typename F::Vec;
  constexpr int kLanes = F::kLanes;
  auto load = [&](const float* from) { return Tail ? F::load(from, lanes) : F::load(from); };
  Vec acc[Pixels][Vectors];
  for (int p = 0; p < Pixels; ++p) {
    for (int v = 0; v < Vectors; ++v) acc[p][v] = F::zero();
  }
  // Several pixels are all real only where the stride is below the input's width.
  const int64_t pixel_step = Pixels > 1 ? g.stride[2] * g.x.spatial[2] : 0;
  const int64_t first_column = ow * g.stride[2];
  for (int64_t t = 0; t < taps.count; ++t) {
    const float* w_tap = taps.weights[t] + c;
    const float* in = image + taps.row_offset[t] + (first_column + taps.column[t]) * g.x.spatial[2] + c;
#pragma GCC unroll 4
    for (int v = 0; v < Vectors; ++v) {
      const Vec wv = load(w_tap + kLanes * v);
#pragma GCC unroll 8
      for (int p = 0; p < Pixels; ++p) acc[p][v] = F::fma(load(in + p * pixel_step + kLanes * v), wv, acc[p][v]);
    }
  }
  for (int v = 0; v < Vectors; ++v) {
    const Vec b = bias ? load(bias + c + kLanes * v) : F::zero();
    for (int p = 0; p < Pixels; ++p) {
      Vec out = bias ? F::add(acc[p][v], b) : acc[p][v];
      if (relu) out = F::relu(out);
      float* to = y_row + (ow + p) * g.y.spatial[2] + c + kLanes * v;
      if (Tail)
        F::store(to, out, lanes);
      else
        F::store(to, out);
    }
  }
}

template <typename F, int Pixels, int Vectors>
void all_channels(const ConvGeometry& g, const RowTaps& taps, const float* image, int64_t ow, const float* bias,
                  bool relu, float* y_row) {
  constexpr int kLanes = F::kLanes;
  const int64_t channels = g.groups;
  int64_t c = 0;
  for (; c + kLanes * Vectors <= channels; c += kLanes * Vectors)
    pixel_block<F, Pixels, Vectors, false>(g, taps, image, ow, c, F::all_lanes(), bias, relu, y_row);
  for (; c + kLanes <= channels; c += kLanes)
    pixel_block<F, Pixels, 1, false>(g, taps, image, ow, c, F::all_lanes(), bias, relu, y_row);
  if (c < channels)
    pixel_block<F, Pixels, 1, true>(g, taps, image, ow, c, F::first_lanes(channels - c), bias, relu, y_row);
}

// The real tap rows of output row (od, oh), in weight order: visit(row_offset, first_tap) per
// (kd, kh) whose input row exists, with its input row from the image's row 0 and its first tap's
// index (kw = 0).
template <typename Visit>
inline void for_each_real_tap_row(const ConvGeometry& g, int64_t od, int64_t oh, Visit&& visit) {
  int64_t kd0, kd1, kh0, kh1;
  valid_taps(od, g.stride[0], g.pad_begin[0], g.dilation[0], g.kernel[0], g.in[0], g.flip, &kd0, &kd1);
  valid_taps(oh, g.stride[1], g.pad_begin[1], g.dilation[1], g.kernel[1], g.in[1], g.flip, &kh0, &kh1);
  for (int64_t kd = kd0; kd < kd1; ++kd) {
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      visit(input_coordinate(g, 0, od, kd) * g.x.spatial[0] + input_coordinate(g, 1, oh, kh) * g.x.spatial[1],
            (kd * g.kernel[1] + kh) * g.kernel[2]);
    }
  }
}

// The taps of output row (od, oh) whose kd, kh input exists and whose kw is in [kw_begin,
// kw_end), in weight order; wt holds the weights tap-major ([tap][channel]).
inline void select_taps(const ConvGeometry& g, const float* wt, int64_t od, int64_t oh, int64_t kw_begin,
                        int64_t kw_end, RowTaps* taps) {
  taps->count = 0;
  for_each_real_tap_row(g, od, oh, [&](int64_t row_offset, int64_t first_tap) {
    for (int64_t kw = kw_begin; kw < kw_end; ++kw) {
      const int64_t t = taps->count++;
      taps->row_offset[t] = row_offset;
      taps->column[t] = input_coordinate(g, 2, 0, kw);
      taps->weights[t] = wt + (first_tap + kw) * g.groups;
    }
  });
}

// The real tap rows of output row (od, oh) for compiled rows (jit/abi/depthwise_rows_abi.h): per
// (kd, kh) whose input row exists, in weight order, its input row from the image's row 0 and its
// first weight in the tap-major weights. Returns their count.
inline int64_t compiled_tap_rows(const ConvGeometry& g, int64_t od, int64_t oh, convjit_depthwise_tap_row* rows) {
  int64_t count = 0;
  for_each_real_tap_row(g, od, oh,
                        [&](int64_t row_offset, int64_t first_tap) { rows[count++] = {row_offset, first_tap * g.groups}; });
  return count;
}

template <typename F>
void run_depthwise_nhwc(const ConvGeometry& g, int threads, const float* x, const float* wt, const float* bias,
                        bool relu, float* y, convjit_depthwise_row_fn compiled_rows) {
  // Output columns whose W taps are all real: a run, the same for every row. They go to the
  // compiled rows where given, else in blocks of kPixels; the columns around it one at a time, each
  // with its own taps.
  int64_t interior_begin = g.out[2], interior_end = g.out[2];
  for (int64_t ow = 0; ow < g.out[2]; ++ow) {
    int64_t kw0, kw1;
    valid_taps(ow, g.stride[2], g.pad_begin[2], g.dilation[2], g.kernel[2], g.in[2], g.flip, &kw0, &kw1);
    if (kw0 == 0 && kw1 == g.kernel[2]) {
      interior_begin = std::min(interior_begin, ow);
      interior_end = ow + 1;
    }
  }
  const int64_t rows = g.batch * g.out[0] * g.out[1];
  parallel_for(threads, rows, g.flops(), [&](int64_t task) {
    const int64_t oh = task % g.out[1], od = task / g.out[1] % g.out[0], n = task / g.out[1] / g.out[0];
    const float* image = x + n * g.x.batch;
    float* y_row = y + n * g.y.batch + od * g.y.spatial[0] + oh * g.y.spatial[1];
    RowTaps taps;
    auto edge_pixel = [&](int64_t ow) {
      int64_t kw0, kw1;
      valid_taps(ow, g.stride[2], g.pad_begin[2], g.dilation[2], g.kernel[2], g.in[2], g.flip, &kw0, &kw1);
      select_taps(g, wt, od, oh, kw0, kw1, &taps);
      all_channels<F, 1, kEdgeVectors>(g, taps, image, ow, bias, relu, y_row);
    };
    for (int64_t ow = 0; ow < interior_begin; ++ow) edge_pixel(ow);
    if (interior_begin < interior_end && compiled_rows) {
      convjit_depthwise_tap_row tap_rows[kDepthwiseNhwcMaxTaps];
      const convjit_depthwise_row row{image + (interior_begin * g.stride[2] - g.pad_begin[2]) * g.x.spatial[2],
                                      wt,
                                      bias,
                                      y_row + interior_begin * g.y.spatial[2],
                                      tap_rows,
                                      compiled_tap_rows(g, od, oh, tap_rows),
                                      interior_end - interior_begin};
      compiled_rows(&row);
    } else if (interior_begin < interior_end) {
      select_taps(g, wt, od, oh, 0, g.kernel[2], &taps);
      // Blocks of kPixels; the last, short one moved back to end at interior_end (recomputing
      // a few outputs, bitwise the same).
      for (int64_t ow = interior_begin; ow < interior_end; ow += kPixels) {
        if (interior_end - interior_begin < kPixels) {
          for (; ow < interior_end; ++ow) all_channels<F, 1, kEdgeVectors>(g, taps, image, ow, bias, relu, y_row);
          break;
        }
        all_channels<F, kPixels, kVectors>(g, taps, image, std::min(ow, interior_end - kPixels), bias, relu, y_row);
      }
    }
    for (int64_t ow = interior_end; ow < g.out[2]; ++ow) edge_pixel(ow);
  });
  F::leave();
}

}  // namespace
}  // namespace convjit::detail
