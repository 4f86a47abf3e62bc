// The output columns of a row in vectors of F::kLanes, planned once per call for the direct
// kernels that walk rows with pixels in the lanes (backward filter, NCHW depthwise): the body, a
// run of full vectors whose taps are all real, loads plainly; the few edge vectors (padding, the
// row's last pixels) load through lane masks made here. W geometry is the same for every row, and
// rows are short (the seed network's are 2-3 vectors), so per-row planning would dominate. Include
// only from files compiled for F's ISA; internal linkage, as lane_rows.hpp.
#pragma once

#include <algorithm>
#include <cstdint>

#include "geometry.hpp"
#include "lane_rows.hpp"

namespace convjit::detail {
namespace {

constexpr int kMaxEdgeVectors = 6;

template <typename F, int KW, int Stride>
struct ColumnPlan {
  struct Edge {
    int64_t ow;
    typename F::Mask lanes;             // the vector's real pixels
    typename F::Mask taps[KW][Stride];  // per tap, the real inputs of its (Stride) loads
    // At stride 2: the real inputs of 3 vectors from the vector's lowest input, which hold every
    // tap's inputs at a unit step, flipped or not (conv_depthwise_nchw_impl.hpp's spans); unset at
    // stride 1.
    typename F::Mask span[3];
  };
  int64_t body_begin = 0, body_end = 0;  // columns of the body vectors
  int edge_count = 0;
  Edge edges[kMaxEdgeVectors];
};

inline int64_t first_input_column(const ConvGeometry& g, int64_t ow) {  // tap 0 in weight order
  return input_coordinate(g, 2, ow, 0);
}

// Vectors of `lanes` pixels of one output row that are not full or read a padded input, given a
// W geometry.
inline int64_t edge_vectors(const ConvGeometry& g, int64_t lanes) {
  const int64_t reach_w = (g.kernel[2] - 1) * g.dilation[2], stride = g.stride[2];
  int64_t edges = 0;
  for (int64_t ow = 0; ow < g.out[2]; ow += lanes) {
    const int64_t lowest = ow * stride - g.pad_begin[2];
    edges += ow + lanes > g.out[2] || lowest < 0 || lowest + reach_w + stride * lanes > g.in[2];
  }
  return edges;
}

// Tap kw's inputs for an edge vector whose tap 0 reads from `at`: zero where not real.
template <typename F, int KW, int Stride>
inline __attribute__((always_inline)) typename F::Vec load_edge_inputs(
    const typename ColumnPlan<F, KW, Stride>::Edge& edge, const float* at, int kw) {
  if constexpr (Stride == 1) return F::load(at, edge.taps[kw][0]);
  return F::load_even(at, edge.taps[kw][0], edge.taps[kw][1]);
}

template <typename F, int KW, int Stride>
ColumnPlan<F, KW, Stride> plan_columns(const ConvGeometry& g) {
  constexpr int kLanes = F::kLanes;
  const int64_t reach_w = (KW - 1) * g.dilation[2];
  const int64_t step_w = g.flip ? -g.dilation[2] : g.dilation[2];
  ColumnPlan<F, KW, Stride> plan;
  plan.body_begin = plan.body_end = g.out[2];
  for (int64_t ow = 0; ow < g.out[2]; ow += kLanes) {
    const int64_t count = std::min<int64_t>(kLanes, g.out[2] - ow);
    const int64_t first_w = first_input_column(g, ow);
    const int64_t lowest = ow * Stride - g.pad_begin[2];
    if (count == kLanes && lowest >= 0 && lowest + reach_w + Stride * kLanes <= g.in[2]) {
      plan.body_begin = std::min(plan.body_begin, ow);
      plan.body_end = ow + kLanes;
      continue;
    }
    auto& edge = plan.edges[plan.edge_count++];
    edge.ow = ow;
    edge.lanes = lanes_inside<F>(0, count);
    for (int kw = 0; kw < KW; ++kw) {
      const int64_t first = first_w + kw * step_w;
      const int64_t end = std::min(g.in[2], first + Stride * (count - 1) + 1);
      for (int half = 0; half < Stride; ++half) edge.taps[kw][half] = lanes_inside<F>(first + kLanes * half, end);
    }
    if constexpr (Stride == 2) {
      const int64_t span_end = std::min(g.in[2], lowest + Stride * (count - 1) + reach_w + 1);
      for (int q = 0; q < 3; ++q) edge.span[q] = lanes_inside<F>(lowest + kLanes * q, span_end);
    }
  }
  return plan;
}

}  // namespace
}  // namespace convjit::detail
