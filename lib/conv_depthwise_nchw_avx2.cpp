#include <immintrin.h>

#include <algorithm>

#include "lib/avx2_columns.hpp"
#include "lib/avx2_rows.hpp"
#include "lib/conv_depthwise_nchw.hpp"
#include "lib/gemm_tile.hpp"
#include "lib/threads.hpp"

namespace convjit::detail::avx2 {
namespace {

constexpr int64_t kMaxExtent = 3;  // kernel rows and columns kept in registers

// One output plane of one channel: x_plane and y_plane at the channel's (n, od) plane.
template <int KH, int KW, int Stride>
void channel_plane(const ConvGeometry& g, const ColumnPlan<KW, Stride>& columns, const float* x_plane, const float* w,
                   const float* bias, bool relu, float* y_plane) {
  __m256 weight[KH][KW];
  for (int kh = 0; kh < KH; ++kh) {
    for (int kw = 0; kw < KW; ++kw) weight[kh][kw] = _mm256_broadcast_ss(w + kh * KW + kw);
  }
  const __m256 bias_v = bias ? _mm256_broadcast_ss(bias) : _mm256_setzero_ps();
  const int64_t step_w = g.flip ? -g.dilation[2] : g.dilation[2];
  auto finish = [&](__m256 acc) {
    if (bias) acc = _mm256_add_ps(acc, bias_v);
    return relu ? _mm256_max_ps(_mm256_setzero_ps(), acc) : acc;  // vmaxps keeps NaN and -0 (2nd operand)
  };
  for (int64_t oh = 0; oh < g.out[1]; ++oh) {
    // The kernel rows whose input row exists (the others are padding: zero products, skipped).
    int64_t kh_begin, kh_end;
    valid_taps(oh, g.stride[1], g.pad_begin[1], g.dilation[1], KH, g.in[1], g.flip, &kh_begin, &kh_end);
    const float* rows[KH] = {};
    for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
      rows[kh] = x_plane + input_coordinate(g, 1, oh, kh) * g.x.spatial[1];
    }
    float* y_row = y_plane + oh * g.y.spatial[1];
    for (int64_t ow = columns.body_begin; ow < columns.body_end; ow += 8) {
      const int64_t first_w = first_input_column(g, ow);
      __m256 acc = _mm256_setzero_ps();
      for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
#pragma GCC unroll 3
        for (int kw = 0; kw < KW; ++kw) {
          acc = _mm256_fmadd_ps(load_real_inputs<Stride>(rows[kh], first_w + kw * step_w), weight[kh][kw], acc);
        }
      }
      _mm256_storeu_ps(y_row + ow, finish(acc));
    }
    for (int e = 0; e < columns.edge_count; ++e) {
      const auto& edge = columns.edges[e];
      const int64_t first_w = first_input_column(g, edge.ow);
      __m256 acc = _mm256_setzero_ps();
      for (int64_t kh = kh_begin; kh < kh_end; ++kh) {
#pragma GCC unroll 3
        for (int kw = 0; kw < KW; ++kw) {
          const float* at = rows[kh] + first_w + kw * step_w;
          __m256 in = _mm256_maskload_ps(at, edge.taps[kw][0]);
          if constexpr (Stride == 2) in = even_lanes(in, _mm256_maskload_ps(at + 8, edge.taps[kw][1]));
          acc = _mm256_fmadd_ps(in, weight[kh][kw], acc);
        }
      }
      _mm256_maskstore_ps(y_row + edge.ow, edge.lanes, finish(acc));
    }
  }
}

template <int KH, int KW, int Stride>
void all_planes(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                float* y) {
  const ColumnPlan<KW, Stride> columns = plan_columns<KW, Stride>(g);
  parallel_for(threads, g.batch * g.groups, g.flops(), [&](int64_t task) {
    const int64_t n = task / g.groups, c = task % g.groups;
    channel_plane<KH, KW, Stride>(g, columns, x + n * g.x.batch + c * g.x.channel, w + c * g.taps,
                                  bias ? bias + c : nullptr, relu, y + n * g.y.batch + c * g.y.channel);
  });
}

template <int Stride>
void any_extent(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                float* y) {
  auto run = [&](auto kh, auto kw) {
    all_planes<decltype(kh)::value, decltype(kw)::value, Stride>(g, threads, x, w, bias, relu, y);
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

}  // namespace

bool depthwise_nchw_supported(const ConvGeometry& g) {
  // 1D and 2D: one input and output plane along D, the output's reading the input's (no D padding
  // before it), stride 1 or 2 along W.
  return g.layout == CONVJIT_NCHW && g.ic_per_group == 1 && g.oc_per_group == 1 && g.in[0] == 1 && g.out[0] == 1 &&
         g.kernel[0] == 1 && g.pad_begin[0] == 0 && g.kernel[1] <= kMaxExtent && g.kernel[2] <= kMaxExtent &&
         (g.stride[2] == 1 || g.stride[2] == 2) && g.in[2] < (int64_t(1) << 30) && edge_vectors(g) <= kMaxEdgeVectors &&
         supported();
}

void depthwise_nchw(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                    float* y) {
  if (g.stride[2] == 1)
    any_extent<1>(g, threads, x, w, bias, relu, y);
  else
    any_extent<2>(g, threads, x, w, bias, relu, y);
  _mm256_zeroupper();
}

}  // namespace convjit::detail::avx2
