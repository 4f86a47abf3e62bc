#include "naive.hpp"

#include <algorithm>
#include <cfloat>

namespace convjit_bench {
namespace {

void naive_conv2d(const ConvShape& s, const float* x, const float* w, float* y) {
  const int64_t H = s.in[0], W = s.in[1];
  const int64_t KH = s.k[0], KW = s.k[1];
  const int64_t SH = s.stride[0], SW = s.stride[1];
  const int64_t PH = s.pad[0], PW = s.pad[1];
  const int64_t DH = s.dilation[0], DW = s.dilation[1];
  const Ext3 o = s.out();
  const int64_t OH = o[0], OW = o[1];
  const int64_t icg = s.ic / s.groups, ocg = s.oc / s.groups;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t oc = 0; oc < s.oc; ++oc) {
      const int64_t g = oc / ocg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float acc = 0.0f;
          for (int64_t ic = 0; ic < icg; ++ic)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * SH - PH + kh * DH;
                const int64_t iw = ow * SW - PW + kw * DW;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += x[((n * s.ic + g * icg + ic) * H + ih) * W + iw] * w[((oc * icg + ic) * KH + kh) * KW + kw];
              }
          y[((n * s.oc + oc) * OH + oh) * OW + ow] = acc;
        }
    }
}

// Rank 1-3 through the (D, H, W) view; Acc = float for the baseline, double for the oracle.
template <typename Acc>
void conv3d(const ConvShape& s, bool flip, const float* x, const float* w, const float* bias, bool relu, float* y) {
  const Ext3 in = s.in3(), k = s.k3(), st = s.stride3(), pd = s.pad3(), dl = s.dilation3(), o = s.out3();
  const int64_t icg = s.ic / s.groups, ocg = s.oc / s.groups;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t oc = 0; oc < s.oc; ++oc) {
      const int64_t g = oc / ocg;
      for (int64_t od = 0; od < o[0]; ++od)
        for (int64_t oh = 0; oh < o[1]; ++oh)
          for (int64_t ow = 0; ow < o[2]; ++ow) {
            Acc acc = bias ? Acc(bias[oc]) : Acc(0);
            for (int64_t ic = 0; ic < icg; ++ic)
              for (int64_t kd = 0; kd < k[0]; ++kd)
                for (int64_t kh = 0; kh < k[1]; ++kh)
                  for (int64_t kw = 0; kw < k[2]; ++kw) {
                    const int64_t id = od * st[0] - pd[0] + kd * dl[0];
                    const int64_t ih = oh * st[1] - pd[1] + kh * dl[1];
                    const int64_t iw = ow * st[2] - pd[2] + kw * dl[2];
                    if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                    const int64_t wd = flip ? k[0] - 1 - kd : kd;
                    const int64_t wh = flip ? k[1] - 1 - kh : kh;
                    const int64_t ww = flip ? k[2] - 1 - kw : kw;
                    acc += Acc(x[(((n * s.ic + g * icg + ic) * in[0] + id) * in[1] + ih) * in[2] + iw]) *
                           Acc(w[(((oc * icg + ic) * k[0] + wd) * k[1] + wh) * k[2] + ww]);
                  }
            if (relu && acc < Acc(0)) acc = Acc(0);
            y[(((n * s.oc + oc) * o[0] + od) * o[1] + oh) * o[2] + ow] = static_cast<float>(acc);
          }
    }
}

template <bool Max>
void pool3d(const PoolShape& s, const float* x, float* y) {
  const Ext3 in = s.lift(s.in, 1), k = s.lift(s.window, 1), st = s.lift(s.stride, 1), pd = s.lift(s.pad, 0);
  const Ext3 o = s.lift(s.out(), 1);
  const float inv_window = 1.0f / static_cast<float>(k[0] * k[1] * k[2]);
  for (int64_t nc = 0; nc < s.n * s.c; ++nc) {
    const float* xp = x + nc * in[0] * in[1] * in[2];
    float* yp = y + nc * o[0] * o[1] * o[2];
    for (int64_t od = 0; od < o[0]; ++od)
      for (int64_t oh = 0; oh < o[1]; ++oh)
        for (int64_t ow = 0; ow < o[2]; ++ow) {
          float acc = Max ? -FLT_MAX : 0.0f;
          for (int64_t kd = 0; kd < k[0]; ++kd)
            for (int64_t kh = 0; kh < k[1]; ++kh)
              for (int64_t kw = 0; kw < k[2]; ++kw) {
                const int64_t id = od * st[0] - pd[0] + kd;
                const int64_t ih = oh * st[1] - pd[1] + kh;
                const int64_t iw = ow * st[2] - pd[2] + kw;
                if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                const float v = xp[(id * in[1] + ih) * in[2] + iw];
                if (Max)
                  acc = v > acc ? v : acc;  // NaN taps are ignored
                else
                  acc += v;
              }
          yp[(od * o[1] + oh) * o[2] + ow] = Max ? acc : acc * inv_window;
        }
  }
}

}  // namespace

void naive_conv_forward(const ConvShape& s, const float* x, const float* w, float* y) {
  if (s.rank == 2)
    naive_conv2d(s, x, w, y);
  else
    conv3d<float>(s, false, x, w, nullptr, false, y);
}

void reference_conv_forward(const ConvShape& s, bool convolution_mode, const float* x, const float* w,
                            const float* bias, bool relu, float* y) {
  conv3d<double>(s, convolution_mode, x, w, bias, relu, y);
}

void naive_maxpool_forward(const PoolShape& s, const float* x, float* y) { pool3d<true>(s, x, y); }
void naive_meanpool_forward(const PoolShape& s, const float* x, float* y) { pool3d<false>(s, x, y); }

void to_channels_last(const float* src, int64_t n, int64_t c, int64_t spatial, float* dst) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < spatial; ++p) dst[(i * spatial + p) * c + ch] = src[(i * c + ch) * spatial + p];
}

void from_channels_last(const float* src, int64_t n, int64_t c, int64_t spatial, float* dst) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < spatial; ++p) dst[(i * c + ch) * spatial + p] = src[(i * spatial + p) * c + ch];
}

}  // namespace convjit_bench
