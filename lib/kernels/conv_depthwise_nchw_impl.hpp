// Tier 0's NCHW depthwise forward (conv_depthwise_nchw.hpp), written once over a vector type F
// (simd_avx2.hpp, simd_avx512.hpp): F::kLanes output pixels per vector. Include from one file per
// ISA, compiled with its flags; internal linkage (lib/README.md, "One kernel, several ISAs").
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "conv_depthwise_nchw.hpp"
#include "lane_columns.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

constexpr int64_t kMaxExtent = 3;  // kernel rows and columns kept in registers

// Output rows [oh, oh + Rows) of one channel, each vector of Rows rows in flight at once (a chain
// per row: one 9-tap chain alone waits on the FMA latency). Taps kh in [kh_begin, kh_end), the
// same for every row of the group (the others read padding: zero products, skipped).
template <typename F, int KH, int KW, int Stride, int Rows, typename Finish>
inline void row_group(const ConvGeometry& g, const ColumnPlan<F, KW, Stride>& columns, const float* x_plane,
                      const typename F::Vec (&weight)[KH][KW], int64_t oh, int64_t kh_begin, int64_t kh_end,
                      Finish&& finish, float* y_plane) {
  const int64_t step_w = g.flip ? -g.dilation[2] : g.dilation[2];
  const float* rows[Rows][KH] = {};
  for (int r = 0; r < Rows; ++r) {
    for (int64_t kh = kh_begin; kh < kh_end; ++kh)
      rows[r][kh] = x_plane + input_coordinate(g, 1, oh + r, kh) * g.x.spatial[1];
  }
  using Vec = typename F::Vec;
  // Stride and dilation 1 along H with every kernel row real: input row j of the group (oh - pad
  // + j) is tap row j - r of output row r, so each input vector is loaded once for all of them.
  // Each output still meets its taps in weight order: rows by ascending kh (descending j when
  // flipped), each row's kw in order.
  constexpr int kSharedRows = Rows + KH - 1;
  const bool shared = Rows > 1 && g.stride[1] == 1 && g.dilation[1] == 1 && kh_begin == 0 && kh_end == KH;
  const float* input_rows[kSharedRows] = {};
  if (shared) {
    for (int j = 0; j < kSharedRows; ++j) input_rows[j] = x_plane + (oh - g.pad_begin[1] + j) * g.x.spatial[1];
  }
  auto shared_rows_at = [&](int64_t first_w, auto&& load, auto flipped, Vec(&acc)[Rows]) {
#pragma GCC unroll 8
    for (int step = 0; step < kSharedRows; ++step) {
      const int j = decltype(flipped)::value ? kSharedRows - 1 - step : step;
#pragma GCC unroll 3
      for (int kw = 0; kw < KW; ++kw) {
        const Vec in = load(input_rows[j] + first_w + kw * step_w, kw);
#pragma GCC unroll 4
        for (int r = 0; r < Rows; ++r) {
          const int tap = j - r;  // the input row's tap for output row r, unflipped
          if (tap < 0 || tap >= KH) continue;
          const int kh = decltype(flipped)::value ? KH - 1 - tap : tap;
          acc[r] = F::fma(in, weight[kh][kw], acc[r]);
        }
      }
    }
  };
  // The group's vector at column ow: load(row, position) gives a tap's F::kLanes inputs.
  auto vector_at = [&](int64_t ow, auto&& load) {
    const int64_t first_w = first_input_column(g, ow);
    Vec acc[Rows];
    for (int r = 0; r < Rows; ++r) acc[r] = F::zero();
    if (shared && g.flip) {
      shared_rows_at(first_w, load, std::true_type{}, acc);
    } else if (shared) {
      shared_rows_at(first_w, load, std::false_type{}, acc);
    } else {
      for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
#pragma GCC unroll 3
        for (int kw = 0; kw < KW; ++kw) {
#pragma GCC unroll 4
          for (int r = 0; r < Rows; ++r)
            acc[r] = F::fma(load(rows[r][kh] + first_w + kw * step_w, kw), weight[kh][kw], acc[r]);
        }
      }
    }
    return std::to_array(acc);
  };
  for (int64_t ow = columns.body_begin; ow < columns.body_end; ow += F::kLanes) {
    const auto acc = vector_at(ow, [](const float* at, int) { return load_real_inputs<F, Stride>(at, 0); });
    for (int r = 0; r < Rows; ++r) F::store(y_plane + (oh + r) * g.y.spatial[1] + ow, finish(acc[r]));
  }
  for (int e = 0; e < columns.edge_count; ++e) {
    const auto& edge = columns.edges[e];
    const auto acc =
        vector_at(edge.ow, [&](const float* at, int kw) { return load_edge_inputs<F, KW, Stride>(edge, at, kw); });
    for (int r = 0; r < Rows; ++r) F::store(y_plane + (oh + r) * g.y.spatial[1] + edge.ow, finish(acc[r]), edge.lanes);
  }
}

// One output plane of one channel: x_plane and y_plane at the channel's (n, od) plane. Rows whose
// kernel rows all read real input go kGroupRows at a time, then 2, then 1 for the rest of the run
// (a group moved back to recompute rows cost depthwise_s2, 13 such rows, 10%); the rows around
// them one at a time.
constexpr int kGroupRows = 4;

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
  int64_t full_begin = g.out[1], full_end = g.out[1];  // the rows with every kernel row real: a run
  for (int64_t oh = 0; oh < g.out[1]; ++oh) {
    int64_t kh_begin, kh_end;
    valid_taps(oh, g.stride[1], g.pad_begin[1], g.dilation[1], KH, g.in[1], g.flip, &kh_begin, &kh_end);
    if (kh_begin == 0 && kh_end == KH) {
      full_begin = std::min(full_begin, oh);
      full_end = oh + 1;
    }
  }
  for (int64_t oh = 0; oh < g.out[1];) {
    if (oh == full_begin) {
      for (; oh + kGroupRows <= full_end; oh += kGroupRows)
        row_group<F, KH, KW, Stride, kGroupRows>(g, columns, x_plane, weight, oh, 0, KH, finish, y_plane);
      if (oh + 2 <= full_end) {
        row_group<F, KH, KW, Stride, 2>(g, columns, x_plane, weight, oh, 0, KH, finish, y_plane);
        oh += 2;
      }
      if (oh < full_end) row_group<F, KH, KW, Stride, 1>(g, columns, x_plane, weight, oh++, 0, KH, finish, y_plane);
      continue;
    }
    int64_t kh_begin, kh_end;
    valid_taps(oh, g.stride[1], g.pad_begin[1], g.dilation[1], KH, g.in[1], g.flip, &kh_begin, &kh_end);
    row_group<F, KH, KW, Stride, 1>(g, columns, x_plane, weight, oh, kh_begin, kh_end, finish, y_plane);
    ++oh;
  }
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
  auto run = [&](auto kh, auto kw) {
    all_planes<F, decltype(kh)::value, decltype(kw)::value, Stride>(g, threads, x, w, bias, relu, y);
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  using Three = std::integral_constant<int, 3>;
  auto by_width = [&](auto kh) {
    switch (g.kernel[2]) {
      case 1: return run(kh, One{});
      case 2: return run(kh, Two{});
      default: return run(kh, Three{});
    }
  };
  switch (g.kernel[1]) {
    case 1: return by_width(One{});
    case 2: return by_width(Two{});
    default: return by_width(Three{});
  }
}

// 1D and 2D: one input and output plane along D, the output's reading the input's (no D padding
// before it), stride 1 or 2 along W; at most kMaxEdgeVectors edge vectors of F::kLanes a row.
template <typename F>
bool depthwise_nchw_fits(const ConvGeometry& g) {
  return g.layout == CONVJIT_NCHW && g.ic_per_group == 1 && g.oc_per_group == 1 && g.in[0] == 1 && g.out[0] == 1 &&
         g.kernel[0] == 1 && g.pad_begin[0] == 0 && g.kernel[1] <= kMaxExtent && g.kernel[2] <= kMaxExtent &&
         (g.stride[2] == 1 || g.stride[2] == 2) && w_positions_fit_lanes(g) &&
         edge_vectors(g, F::kLanes) <= kMaxEdgeVectors;
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
