#include "lib/avx2_rows.hpp"
#include "lib/conv_backward_filter_direct.hpp"
#include "lib/gemm_tile.hpp"
#include "lib/threads.hpp"

namespace convjit::detail::avx2 {
namespace {

constexpr int64_t kMaxWidth = 7;          // kernel widths with a register-blocked variant
constexpr int64_t kMaxChannelPairs = 64;  // oc x ic per group; beyond, packing patches pays

float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_shuffle_ps(quarter, quarter, 1)));
}

// dw[oc][ic][kd][kh0..kh0+Rows)[0..KW) for one group: Rows x KW accumulators stay in registers
// while every image and output row streams by, each dy vector loaded once for all of them; each
// accumulator sees its pixels in the same order whatever the blocking.
template <int Rows, int KW, int Stride>
void channel_pair(const ConvGeometry& g, const float* x, const float* dy, int64_t group, int64_t oc, int64_t ic,
                  float* dw) {
  const float* x_channel = x + (group * g.ic_per_group + ic) * g.x.channel;
  const float* dy_channel = dy + (group * g.oc_per_group + oc) * g.y.channel;
  float* out = dw + (group * g.oc_per_group + oc) * g.reduction + ic * g.taps;
  const int64_t step_w = g.flip ? -g.dilation[2] : g.dilation[2];
  const int64_t reach_w = (KW - 1) * g.dilation[2];  // input positions one pixel's taps span
  auto input = [&](int d, int64_t o, int64_t t) {
    return o * g.stride[d] - g.pad_begin[d] + (g.flip ? g.kernel[d] - 1 - t : t) * g.dilation[d];
  };
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    for (int64_t kh0 = 0; kh0 < g.kernel[1]; kh0 += Rows) {
      __m256 acc[Rows][KW];
      for (int r = 0; r < Rows; ++r) {
        for (int kw = 0; kw < KW; ++kw) acc[r][kw] = _mm256_setzero_ps();
      }
      for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = input(0, od, kd);
          if (id < 0 || id >= g.in[0]) continue;  // padding: zero products
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            // Input rows of the block's taps; a row in the padding reads zeros (masked, below).
            const float* rows[Rows];
            bool all_real = true;
            for (int r = 0; r < Rows; ++r) {
              const int64_t ih = input(1, oh, kh0 + r);
              const bool real = ih >= 0 && ih < g.in[1];
              rows[r] = real ? x_channel + n * g.x.batch + id * g.x.spatial[0] + ih * g.x.spatial[1] : nullptr;
              all_real &= real;
            }
            const float* dy_row = dy_channel + n * g.y.batch + od * g.y.spatial[0] + oh * g.y.spatial[1];
            for (int64_t ow = 0; ow < g.out[2]; ow += 8) {
              const int64_t count = std::min<int64_t>(8, g.out[2] - ow);
              const int64_t first_w = input(2, ow, 0);  // tap 0 in weight order
              const int64_t lowest = first_w - (g.flip ? reach_w : 0);
              const bool inside = all_real && count == 8 && lowest >= 0 && lowest + reach_w + Stride * 8 <= g.in[2];
              const __m256 grad =
                  inside ? _mm256_loadu_ps(dy_row + ow) : _mm256_maskload_ps(dy_row + ow, lanes_inside(0, count));
#pragma GCC unroll 4
              for (int r = 0; r < Rows; ++r) {
                if (!inside && !rows[r]) continue;  // zero products
#pragma GCC unroll 8
                for (int kw = 0; kw < KW; ++kw) {
                  const int64_t first = first_w + kw * step_w;
                  __m256 in;
                  if (inside) {
                    in = Stride == 1 ? _mm256_loadu_ps(rows[r] + first)
                                     : load_inputs<Stride>(rows[r], first, INT64_MAX, INT64_MAX);
                  } else {  // padding or the row's last pixels: masked lanes are zero products
                    in = load_inputs<Stride>(rows[r], first, g.in[2], first + Stride * (count - 1) + 1);
                  }
                  acc[r][kw] = _mm256_fmadd_ps(grad, in, acc[r][kw]);
                }
              }
            }
          }
        }
      }
      for (int r = 0; r < Rows && kh0 + r < g.kernel[1]; ++r) {
        for (int kw = 0; kw < KW; ++kw) out[(kd * g.kernel[1] + kh0 + r) * KW + kw] = horizontal_sum(acc[r][kw]);
      }
    }
  }
}

// Kernel rows per block: all of them when they fit 12 accumulators with the row's taps, else one.
template <int KW, int Stride>
void channel_pair_rows(const ConvGeometry& g, const float* x, const float* dy, int64_t group, int64_t oc, int64_t ic,
                       float* dw) {
  if constexpr (3 * KW <= 12) {
    if (g.kernel[1] == 3) return channel_pair<3, KW, Stride>(g, x, dy, group, oc, ic, dw);
  }
  if constexpr (2 * KW <= 12) {
    if (g.kernel[1] == 2) return channel_pair<2, KW, Stride>(g, x, dy, group, oc, ic, dw);
  }
  channel_pair<1, KW, Stride>(g, x, dy, group, oc, ic, dw);
}

template <int Stride>
void channel_pair_any_width(const ConvGeometry& g, const float* x, const float* dy, int64_t group, int64_t oc,
                            int64_t ic, float* dw) {
  switch (g.kernel[2]) {
    case 1: return channel_pair_rows<1, Stride>(g, x, dy, group, oc, ic, dw);
    case 2: return channel_pair_rows<2, Stride>(g, x, dy, group, oc, ic, dw);
    case 3: return channel_pair_rows<3, Stride>(g, x, dy, group, oc, ic, dw);
    case 4: return channel_pair_rows<4, Stride>(g, x, dy, group, oc, ic, dw);
    case 5: return channel_pair_rows<5, Stride>(g, x, dy, group, oc, ic, dw);
    case 6: return channel_pair_rows<6, Stride>(g, x, dy, group, oc, ic, dw);
    default: return channel_pair_rows<7, Stride>(g, x, dy, group, oc, ic, dw);
  }
}

}  // namespace

bool backward_filter_direct_supported(const ConvGeometry& g) {
  return g.layout == CONVJIT_NCHW && (g.stride[2] == 1 || g.stride[2] == 2) && g.kernel[2] <= kMaxWidth &&
         g.oc_per_group * g.ic_per_group <= kMaxChannelPairs && g.in[2] < (int64_t(1) << 30) && supported();
}

void backward_filter_direct(const ConvGeometry& g, const float* x, const float* dy, float* dw) {
  const int64_t pairs = g.oc_per_group * g.ic_per_group;
  parallel_for(g.groups * pairs, g.flops(), [&](int64_t task) {
    const int64_t group = task / pairs, oc = task % pairs / g.ic_per_group, ic = task % g.ic_per_group;
    if (g.stride[2] == 1)
      channel_pair_any_width<1>(g, x, dy, group, oc, ic, dw);
    else
      channel_pair_any_width<2>(g, x, dy, group, oc, ic, dw);
  });
  _mm256_zeroupper();
}

}  // namespace convjit::detail::avx2
