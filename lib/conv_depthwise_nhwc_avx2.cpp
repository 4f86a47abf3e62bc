#include <immintrin.h>

#include <algorithm>

#include "lib/avx2_rows.hpp"
#include "lib/conv_depthwise_nhwc.hpp"
#include "lib/gemm_tile.hpp"
#include "lib/threads.hpp"

namespace convjit::detail::avx2 {
namespace {

constexpr int kPixels = 4;  // output pixels a block keeps in registers, per 8 channels

constexpr int64_t kMaxTaps = 512;

// The real taps of some output pixels, in weight order: per tap, the input offset seen from
// output pixel 0 (along W, as if every tap were real) and, in the packed weights, the tap's
// channels side by side.
struct RowTaps {
  int64_t count = 0;
  int64_t offset[kMaxTaps];
};

// Channels [c, c + 8) of `pixels` consecutive output pixels from ow, every W tap of each real (or
// masked by `lanes` for the channel tail); the kd/kh taps outside the input are already left out.
template <int Pixels, bool Tail>
inline void pixel_block(const ConvGeometry& g, const RowTaps& taps, const float* image, const float* wt, int64_t ow,
                        int64_t c, __m256i lanes, const float* bias, bool relu, float* y_row) {
  __m256 acc[Pixels];
  for (int p = 0; p < Pixels; ++p) acc[p] = _mm256_setzero_ps();
  const int64_t pixel_step = g.stride[2] * g.x.spatial[2];
  const float* base = image + ow * pixel_step + c;
  for (int64_t t = 0; t < taps.count; ++t) {
    const float* w_tap = wt + t * g.groups + c;
    const __m256 wv = Tail ? _mm256_maskload_ps(w_tap, lanes) : _mm256_loadu_ps(w_tap);
    const float* in = base + taps.offset[t];
#pragma GCC unroll 8
    for (int p = 0; p < Pixels; ++p) {
      const __m256 xv = Tail ? _mm256_maskload_ps(in + p * pixel_step, lanes) : _mm256_loadu_ps(in + p * pixel_step);
      acc[p] = _mm256_fmadd_ps(xv, wv, acc[p]);
    }
  }
  const __m256 b =
      bias ? (Tail ? _mm256_maskload_ps(bias + c, lanes) : _mm256_loadu_ps(bias + c)) : _mm256_setzero_ps();
  for (int p = 0; p < Pixels; ++p) {
    __m256 v = bias ? _mm256_add_ps(acc[p], b) : acc[p];
    if (relu) v = _mm256_max_ps(_mm256_setzero_ps(), v);  // vmaxps returns its 2nd operand: keeps NaN and -0
    float* out = y_row + (ow + p) * g.y.spatial[2] + c;
    if (Tail)
      _mm256_maskstore_ps(out, lanes, v);
    else
      _mm256_storeu_ps(out, v);
  }
}

template <int Pixels>
void all_channels(const ConvGeometry& g, const RowTaps& taps, const float* image, const float* wt, int64_t ow,
                  const float* bias, bool relu, float* y_row) {
  const int64_t channels = g.groups;
  int64_t c = 0;
  for (; c + 8 <= channels; c += 8)
    pixel_block<Pixels, false>(g, taps, image, wt, ow, c, _mm256_setzero_si256(), bias, relu, y_row);
  if (c < channels)
    pixel_block<Pixels, true>(g, taps, image, wt, ow, c, lanes_inside(0, channels - c), bias, relu, y_row);
}

// The taps of output row (od, oh) whose kd, kh input exists and whose kw is in [kw_begin,
// kw_end), in weight order, with their weights packed tap-major into wt ([tap][channel]).
void pack_taps(const ConvGeometry& g, const float* w, int64_t od, int64_t oh, int64_t kw_begin, int64_t kw_end,
               float* wt, RowTaps* taps) {
  int64_t kd0, kd1, kh0, kh1;
  valid_taps(od, g.stride[0], g.pad_begin[0], g.dilation[0], g.kernel[0], g.in[0], g.flip, &kd0, &kd1);
  valid_taps(oh, g.stride[1], g.pad_begin[1], g.dilation[1], g.kernel[1], g.in[1], g.flip, &kh0, &kh1);
  taps->count = 0;
  for (int64_t kd = kd0; kd < kd1; ++kd) {
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      for (int64_t kw = kw_begin; kw < kw_end; ++kw) {
        const int64_t t = taps->count++;
        taps->offset[t] = input_coordinate(g, 0, od, kd) * g.x.spatial[0] +
                          input_coordinate(g, 1, oh, kh) * g.x.spatial[1] +
                          input_coordinate(g, 2, 0, kw) * g.x.spatial[2];
        const float* w_tap = w + (kd * g.kernel[1] + kh) * g.kernel[2] + kw;
        for (int64_t c = 0; c < g.groups; ++c) wt[t * g.groups + c] = w_tap[c * g.taps];
      }
    }
  }
}

}  // namespace

bool depthwise_nhwc_supported(const ConvGeometry& g) {
  return g.layout == CONVJIT_NHWC && g.ic_per_group == 1 && g.oc_per_group == 1 && g.taps <= kMaxTaps &&
         g.taps * g.groups <= int64_t(kScratchFloats) && supported();
}

void depthwise_nhwc(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                    float* y) {
  // Output columns whose W taps are all real: a run, the same for every row. They go in blocks of
  // kPixels; the columns around it one at a time, each with its own taps.
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
    float* wt = thread_scratch(size_t(g.taps * g.groups));
    const float* image = x + n * g.x.batch;
    float* y_row = y + n * g.y.batch + od * g.y.spatial[0] + oh * g.y.spatial[1];
    RowTaps taps;
    auto edge_pixel = [&](int64_t ow) {
      int64_t kw0, kw1;
      valid_taps(ow, g.stride[2], g.pad_begin[2], g.dilation[2], g.kernel[2], g.in[2], g.flip, &kw0, &kw1);
      pack_taps(g, w, od, oh, kw0, kw1, wt, &taps);
      all_channels<1>(g, taps, image, wt, ow, bias, relu, y_row);
    };
    for (int64_t ow = 0; ow < interior_begin; ++ow) edge_pixel(ow);
    if (interior_begin < interior_end) {
      pack_taps(g, w, od, oh, 0, g.kernel[2], wt, &taps);
      int64_t ow = interior_begin;
      for (; ow + kPixels <= interior_end; ow += kPixels)
        all_channels<kPixels>(g, taps, image, wt, ow, bias, relu, y_row);
      for (; ow < interior_end; ++ow) all_channels<1>(g, taps, image, wt, ow, bias, relu, y_row);
    }
    for (int64_t ow = interior_end; ow < g.out[2]; ++ow) edge_pixel(ow);
  });
  _mm256_zeroupper();
}

}  // namespace convjit::detail::avx2
