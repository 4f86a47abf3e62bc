// Tier 0's NCHW depthwise forward (conv_depthwise_nchw.hpp), written once over a vector type F
// (simd_avx2.hpp, simd_avx512.hpp): F::kLanes output pixels per vector. Include from one file per
// ISA, compiled with its flags; internal linkage (lib/README.md, "One kernel, several ISAs").
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <type_traits>

#include "conv_depthwise_nchw.hpp"
#include "lane_columns.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

constexpr int64_t kMaxExtent = 5;  // kernel rows and columns

// Output rows in flight at once (each vector of a row is one chain of taps, and a chain alone
// waits on the FMA latency): 6 where a kernel has over 9 taps (a 5x5 kernel's 25-step chains),
// else 4.
constexpr int group_rows(int64_t taps) {
  return taps > 9 ? 6 : 4;
}

// The kernel keeps a channel's taps broadcast in registers with a group's accumulators and an
// input vector: AVX2's 16 hold up to 9 taps, AVX-512's 32 up to 25 (5x5), kernels of at most 5
// rows and columns. (At W stride 2 the even loads' temporaries spill a few on AVX-512's 5x5:
// measured still faster than the twin.) Other kernels run as their NHWC twin instead where its
// flops pay for the copies (lib/rewrite/nhwc_as_nchw.cpp), else on the row and tile kernels.
template <typename F>
constexpr bool taps_fit_registers(int64_t taps) {
  return taps + group_rows(taps) + 1 <= F::kRegisters;
}

// The extents with code: up to 3x3, and square and one-row kernels up to kMaxExtent, the shapes of
// depthwise layers. Other extents go as those that do not fit: code for every extent up to 5x5
// was 2.5 times the instantiations, more than clang's sanitized build of the fuzz test
// (tests/fuzz) could compile in its time.
constexpr bool has_code(int64_t kh, int64_t kw) {
  return (kh <= 3 && kw <= 3) || kh == kw || kh == 1;
}

// A channel's input rows, padding included: rows outside the plane read kZeroRow, so every output
// row takes all its taps in one code path (their products are zero, which the numbers contract
// allows: README, "Numbers"). Skipping them instead took a per-row tap range, and the set-up of
// each short row cost more than its taps (bench/RESULTS.md, session 29). Planes whose rows are
// longer than kZeroRow and that read padding rows go to other kernels.
alignas(64) const float kZeroRow[4096] = {};

struct PlaneRows {
  const float* plane;
  int64_t height, pitch;
  const float* operator()(int64_t ih) const { return ih >= 0 && ih < height ? plane + ih * pitch : kZeroRow; }
};

// At W stride 2, kernels up to 3 wide take a shared input row's taps from one span of 3 vectors
// from the vector's lowest input (lo, hi, next): the even and the odd lanes of lo and hi, and the
// even ones moved by one lane with next's first. Tap by tap, each took two loads, and the loads
// bounded the rows of depthwise_s2 (bench/RESULTS.md, session 29). Only at a unit W step (not
// dilated), where the span's taps are the kernel's in W order: in weight order, or reversed where
// flipped.
template <typename F, int KW, int Stride>
constexpr bool kSpanTaps = Stride == 2 && KW <= 3 && F::kLanes == 16;

template <typename F, int KW>
struct RowTaps {  // a row's tap vectors (span_taps: in W order)
  typename F::Vec tap[KW];
};

// A span's taps in W order. load(q): its vector q (0: lo, 1: hi, 2: next), only those the kernel's
// width needs (next's first float lies past the row where the kernel is narrower).
template <typename F, int KW, typename Load>
inline __attribute__((always_inline)) RowTaps<F, KW> span_taps(Load&& load) {
  const typename F::Vec lo = load(0), hi = load(1), even = F::even_lanes(lo, hi);
  if constexpr (KW == 1) return {{even}};
  else if constexpr (KW == 2) return {{even, F::odd_lanes(lo, hi)}};
  else
    return {{even, F::odd_lanes(lo, hi), F::template lanes_after<1>(even, load(2))}};
}

// Output rows [oh, oh + Rows) of one channel, each vector of Rows rows in flight at once (a chain
// per row: one 9-tap chain alone waits on the FMA latency). RowStep 0: each row reads its own input
// rows. RowStep 1 or 2, H's stride with dilation 1: the rows share input rows, input row j of the
// group (oh * RowStep - pad + j) being tap row j - RowStep * r of output row r, and each input
// vector is loaded once for all of them (at stride 2, 9 input rows for the 12 tap rows of 4 output
// rows). Each output still meets its taps in weight order: rows by ascending kh, each row's kw in
// order. Flipped, output row r meets input row j at tap KH - 1 - (j - RowStep * r), and taps in
// weight order mean descending j: the same loop over the input rows and the output rows both taken
// last first (j' = kSharedRows - 1 - j, r' = Rows - 1 - r meet at tap j' - RowStep * r').
// Flipped: g.flip, where spans need it known (kSpanTaps at RowStep 2), else false.
template <typename F, int KH, int KW, int Stride, int Rows, int RowStep, bool Flipped, typename Finish>
inline void row_group(const ConvGeometry& g, const ColumnPlan<F, KW, Stride>& columns, const PlaneRows& input,
                      const typename F::Vec (&weight)[KH][KW], int64_t oh, Finish&& finish, float* y_plane) {
  const int64_t step_w = g.flip ? -g.dilation[2] : g.dilation[2];
  using Vec = typename F::Vec;
  constexpr bool kShared = RowStep > 0;
  constexpr int kSharedRows = RowStep * (Rows - 1) + KH;
  const bool reversed = kShared && g.flip;
  const float* rows[Rows][KH] = {};
  const float* input_rows[kSharedRows] = {};
  if constexpr (kShared) {
    const int64_t first_row = oh * RowStep - g.pad_begin[1];
    for (int j = 0; j < kSharedRows; ++j) input_rows[j] = input(first_row + (reversed ? kSharedRows - 1 - j : j));
  } else {
    for (int r = 0; r < Rows; ++r) {
      for (int kh = 0; kh < KH; ++kh) rows[r][kh] = input(input_coordinate(g, 1, oh + r, kh));
    }
  }
  // The group's vector at column ow: load(row, position) gives a tap's F::kLanes inputs, span(row)
  // a row's taps (kSpanTaps, at RowStep 2). acc[r] is output row r, or Rows - 1 - r where reversed.
  auto vector_at = [&](int64_t ow, auto&& load, auto&& span) {
    const int64_t first_w = first_input_column(g, ow);
    Vec acc[Rows];
    for (int r = 0; r < Rows; ++r) acc[r] = F::zero();
    if constexpr (RowStep == 2 && kSpanTaps<F, KW, Stride>) {
      assert(g.flip == Flipped && g.dilation[2] == 1);
      const int64_t lowest_w = ow * Stride - g.pad_begin[2];
#pragma GCC unroll 9  // 2 * (group_rows - 1) + 3 shared input rows
      for (int j = 0; j < kSharedRows; ++j) {
        const RowTaps<F, KW> in = span(input_rows[j] + lowest_w);
#pragma GCC unroll 3
        for (int kw = 0; kw < KW; ++kw) {
#pragma GCC unroll 4
          for (int r = 0; r < Rows; ++r) {
            const int kh = j - RowStep * r;
            if (kh >= 0 && kh < KH) acc[r] = F::fma(in.tap[Flipped ? KW - 1 - kw : kw], weight[kh][kw], acc[r]);
          }
        }
      }
    } else if constexpr (kShared) {
#pragma GCC unroll 15  // 2 * (group_rows - 1) + kMaxExtent shared input rows
      for (int j = 0; j < kSharedRows; ++j) {
#pragma GCC unroll 5
        for (int kw = 0; kw < KW; ++kw) {
          const Vec in = load(input_rows[j] + first_w + kw * step_w, kw);
#pragma GCC unroll 6
          for (int r = 0; r < Rows; ++r) {
            const int kh = j - RowStep * r;
            if (kh >= 0 && kh < KH) acc[r] = F::fma(in, weight[kh][kw], acc[r]);
          }
        }
      }
    } else {
#pragma GCC unroll 5
      for (int kh = 0; kh < KH; ++kh) {
#pragma GCC unroll 5
        for (int kw = 0; kw < KW; ++kw) {
#pragma GCC unroll 6
          for (int r = 0; r < Rows; ++r)
            acc[r] = F::fma(load(rows[r][kh] + first_w + kw * step_w, kw), weight[kh][kw], acc[r]);
        }
      }
    }
    return std::to_array(acc);
  };
  float* const y_first = y_plane + (reversed ? oh + Rows - 1 : oh) * g.y.spatial[1];
  const int64_t y_step = reversed ? -g.y.spatial[1] : g.y.spatial[1];
  for (int64_t ow = columns.body_begin; ow < columns.body_end; ow += F::kLanes) {
    const auto acc = vector_at(
        ow, [](const float* at, int) { return load_real_inputs<F, Stride>(at, 0); },
        [](const auto* at) {  // generic: instantiated only where called (kSpanTaps)
          return span_taps<F, KW>(
              [at](int q) { return q < 2 ? F::load(at + q * F::kLanes) : F::broadcast(at + q * F::kLanes); });
        });
    for (int r = 0; r < Rows; ++r) F::store(y_first + r * y_step + ow, finish(acc[r]));
  }
  for (int e = 0; e < columns.edge_count; ++e) {
    const auto& edge = columns.edges[e];
    const auto acc = vector_at(
        edge.ow, [&](const float* at, int kw) { return load_edge_inputs<F, KW, Stride>(edge, at, kw); },
        [&](const auto* at) {
          return span_taps<F, KW>([&](int q) { return F::load(at + q * F::kLanes, edge.span[q]); });
        });
    for (int r = 0; r < Rows; ++r) F::store(y_first + r * y_step + edge.ow, finish(acc[r]), edge.lanes);
  }
}

// One output plane of one channel: x_plane and y_plane at the channel's (n, od) plane. The rows go
// group_rows at a time, then 2, then 1 for the rest (a group moved back to recompute rows cost
// depthwise_s2, 13 such rows, 10%), sharing their input rows where the H step allows.
template <typename F, int KH, int KW, int Stride>
void channel_plane(const ConvGeometry& g, const ColumnPlan<F, KW, Stride>& columns, const float* x_plane,
                   const float* w, const float* bias, bool relu, float* y_plane) {
  using Vec = typename F::Vec;
  Vec weight[KH][KW];
  for (int kh = 0; kh < KH; ++kh) {
    for (int kw = 0; kw < KW; ++kw) weight[kh][kw] = F::broadcast(w + kh * KW + kw);
  }
  const Vec bias_v = bias ? F::broadcast(bias) : F::zero();
  auto finish = [&](Vec acc) {
    if (bias) acc = F::add(acc, bias_v);
    return relu ? F::relu(acc) : acc;
  };
  const PlaneRows input{x_plane, g.in[1], g.x.spatial[1]};
  auto all_rows = [&](auto row_step, auto flipped) {
    constexpr int RowStep = decltype(row_step)::value;
    constexpr bool Flipped = decltype(flipped)::value;
    constexpr int kRows = group_rows(KH * KW);
    int64_t oh = 0;
    for (; oh + kRows <= g.out[1]; oh += kRows)
      row_group<F, KH, KW, Stride, kRows, RowStep, Flipped>(g, columns, input, weight, oh, finish, y_plane);
    if (oh + 2 <= g.out[1]) {
      row_group<F, KH, KW, Stride, 2, RowStep, Flipped>(g, columns, input, weight, oh, finish, y_plane);
      oh += 2;
    }
    for (; oh < g.out[1]; ++oh)
      row_group<F, KH, KW, Stride, 1, 0, false>(g, columns, input, weight, oh, finish, y_plane);
  };
  // Rows share input rows where H's stride is W's (the shapes of depthwise layers; code for each
  // pair of strides was more instantiations than the sanitized builds compile in their time) and
  // H's dilation 1. Where kSpanTaps, shared rows take their taps from spans, flipped or not, and a
  // W-dilated problem, which cannot, runs each row on its own rows: a shared variant without spans
  // would be more instantiations again.
  if constexpr (KH > 1) {
    if (g.stride[1] == Stride && g.dilation[1] == 1) {
      constexpr std::integral_constant<int, Stride> kShareRows;
      if constexpr (!kSpanTaps<F, KW, Stride>) {
        return all_rows(kShareRows, std::false_type{});
      } else if (g.dilation[2] == 1) {
        return g.flip ? all_rows(kShareRows, std::true_type{}) : all_rows(kShareRows, std::false_type{});
      }
    }
  }
  all_rows(std::integral_constant<int, 0>{}, std::false_type{});
}

template <typename F, int KH, int KW, int Stride>
void all_planes(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                float* y) {
  const ColumnPlan<F, KW, Stride> columns = plan_columns<F, KW, Stride>(g);
  parallel_for(threads, g.batch * g.groups, g.flops(), [&](int64_t task) {
    const int64_t n = task / g.groups, c = task % g.groups;
    channel_plane<F, KH, KW, Stride>(g, columns, x + n * g.x.batch + c * g.x.channel, w + c * g.taps,
                                     bias ? bias + c : nullptr, relu, y + n * g.y.batch + c * g.y.channel);
  });
}

template <typename F, int Stride>
void any_extent(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                float* y) {
  // No code for kernels that do not fit (depthwise_nchw_fits refuses them).
  auto run = [&](auto kh, auto kw) {
    constexpr int KH = decltype(kh)::value, KW = decltype(kw)::value;
    if constexpr (taps_fit_registers<F>(KH * KW) && has_code(KH, KW))
      all_planes<F, KH, KW, Stride>(g, threads, x, w, bias, relu, y);
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  using Three = std::integral_constant<int, 3>;
  using Four = std::integral_constant<int, 4>;
  using Five = std::integral_constant<int, 5>;
  auto by_width = [&](auto kh) {
    switch (g.kernel[2]) {
      case 1: return run(kh, One{});
      case 2: return run(kh, Two{});
      case 3: return run(kh, Three{});
      case 4: return run(kh, Four{});
      default: return run(kh, Five{});
    }
  };
  switch (g.kernel[1]) {
    case 1: return by_width(One{});
    case 2: return by_width(Two{});
    case 3: return by_width(Three{});
    case 4: return by_width(Four{});
    default: return by_width(Five{});
  }
}

// 1D and 2D: one input and output plane along D, the output's reading the input's (no D padding
// before it), stride 1 or 2 along W; at most kMaxEdgeVectors edge vectors of F::kLanes a row.
template <typename F>
bool depthwise_nchw_fits(const ConvGeometry& g) {
  return g.layout == CONVJIT_NCHW && g.ic_per_group == 1 && g.oc_per_group == 1 && g.in[0] == 1 && g.out[0] == 1 &&
         g.kernel[0] == 1 && g.pad_begin[0] == 0 && g.kernel[1] <= kMaxExtent && g.kernel[2] <= kMaxExtent &&
         taps_fit_registers<F>(g.kernel[1] * g.kernel[2]) && has_code(g.kernel[1], g.kernel[2]) &&
         (g.stride[2] == 1 || g.stride[2] == 2) && w_positions_fit_lanes(g) &&
         edge_vectors(g, F::kLanes) <= kMaxEdgeVectors &&
         (g.in[2] <= int64_t(std::size(kZeroRow)) || !g.windows_read_padding(1));
}

template <typename F>
void run_depthwise_nchw(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias,
                        bool relu, float* y) {
  if (g.stride[2] == 1)
    any_extent<F, 1>(g, threads, x, w, bias, relu, y);
  else
    any_extent<F, 2>(g, threads, x, w, bias, relu, y);
  F::leave();
}

}  // namespace
}  // namespace convjit::detail
