#include "im2col_openblas.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#ifdef CONVJIT_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace convjit_bench {
namespace {

// Calls at(row of col, output pixel index, input element index) for every tap inside the image.
template <typename At>
void for_each_inside(const ConvShape& s, At&& at) {
  const Ext3 in = s.in3(), k = s.k3(), st = s.stride3(), pd = s.pad3(), dl = s.dilation3(), o = s.out3();
  const int64_t plane = in[0] * in[1] * in[2];
  int64_t row = 0;
  for (int64_t c = 0; c < s.ic; ++c)
    for (int64_t kd = 0; kd < k[0]; ++kd)
      for (int64_t kh = 0; kh < k[1]; ++kh)
        for (int64_t kw = 0; kw < k[2]; ++kw, ++row) {
          int64_t p = 0;
          for (int64_t od = 0; od < o[0]; ++od)
            for (int64_t oh = 0; oh < o[1]; ++oh)
              for (int64_t ow = 0; ow < o[2]; ++ow, ++p) {
                const int64_t id = od * st[0] - pd[0] + kd * dl[0], ih = oh * st[1] - pd[1] + kh * dl[1],
                              iw = ow * st[2] - pd[2] + kw * dl[2];
                if (id >= 0 && id < in[0] && ih >= 0 && ih < in[1] && iw >= 0 && iw < in[2])
                  at(row, p, c * plane + (id * in[1] + ih) * in[2] + iw);
              }
        }
}

// dx[c][id][ih][iw] += col[row][pixel] over the taps that read it (col2im).
void col2im(const ConvShape& s, const float* col, float* dx) {
  const int64_t P = s.out_spatial();
  for_each_inside(s, [&](int64_t row, int64_t p, int64_t i) { dx[i] += col[row * P + p]; });
}

// col[((c * KD + kd) * KH + kh) * KW + kw][(od * OH + oh) * OW + ow] = x[c][id][ih][iw] or 0.
void im2col(const ConvShape& s, const float* x, float* col) {
  const Ext3 in = s.in3(), k = s.k3(), st = s.stride3(), pd = s.pad3(), dl = s.dilation3(), o = s.out3();
  const int64_t P = o[0] * o[1] * o[2];
  for (int64_t c = 0; c < s.ic; ++c) {
    const float* xc = x + c * in[0] * in[1] * in[2];
    for (int64_t kd = 0; kd < k[0]; ++kd)
      for (int64_t kh = 0; kh < k[1]; ++kh)
        for (int64_t kw = 0; kw < k[2]; ++kw) {
          float* row = col + (((c * k[0] + kd) * k[1] + kh) * k[2] + kw) * P;
          // Output columns whose input column is inside the image: ow in [lo, hi).
          const int64_t off = kw * dl[2] - pd[2];
          int64_t lo = off >= 0 ? 0 : (-off + st[2] - 1) / st[2];
          int64_t hi = in[2] - off <= 0 ? 0 : (in[2] - off - 1) / st[2] + 1;
          lo = std::min(lo, o[2]);
          hi = std::max(std::min(hi, o[2]), lo);
          for (int64_t od = 0; od < o[0]; ++od) {
            const int64_t id = od * st[0] - pd[0] + kd * dl[0];
            for (int64_t oh = 0; oh < o[1]; ++oh) {
              float* dst = row + (od * o[1] + oh) * o[2];
              const int64_t ih = oh * st[1] - pd[1] + kh * dl[1];
              if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1]) {
                std::memset(dst, 0, sizeof(float) * o[2]);
                continue;
              }
              const float* src = xc + (id * in[1] + ih) * in[2] + off;
              for (int64_t ow = 0; ow < lo; ++ow) dst[ow] = 0.0f;
              if (st[2] == 1)
                std::memcpy(dst + lo, src + lo, sizeof(float) * (hi - lo));
              else
                for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * st[2]];
              for (int64_t ow = hi; ow < o[2]; ++ow) dst[ow] = 0.0f;
            }
          }
        }
  }
}

}  // namespace

#ifdef CONVJIT_BENCH_HAVE_OPENBLAS
bool have_openblas() { return true; }
void set_openblas_threads(int threads) { openblas_set_num_threads(threads); }
#else
bool have_openblas() { return false; }
void set_openblas_threads(int) {}
#endif

Im2colConv::Im2colConv(const ConvShape& s) : s_(s), col_(static_cast<std::size_t>(s.ic * s.k_spatial() * s.out_spatial())) {}

void Im2colConv::run(const float* x, const float* w, float* y) {
#ifdef CONVJIT_BENCH_HAVE_OPENBLAS
  const int64_t P = s_.out_spatial();
  const int64_t icg = s_.ic / s_.groups, ocg = s_.oc / s_.groups;
  const int64_t K = icg * s_.k_spatial();
  for (int64_t n = 0; n < s_.n; ++n) {
    im2col(s_, x + n * s_.ic * s_.in_spatial(), col_.data());
    for (int64_t g = 0; g < s_.groups; ++g)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(ocg), static_cast<int>(P),
                  static_cast<int>(K), 1.0f, w + g * ocg * K, static_cast<int>(K), col_.data() + g * K * P,
                  static_cast<int>(P), 0.0f, y + (n * s_.oc + g * ocg) * P, static_cast<int>(P));
  }
#else
  (void)x;
  (void)w;
  (void)y;
  (void)im2col;
  throw std::runtime_error("built without OpenBLAS");
#endif
}

void Im2colConv::backward_data(const float* dy, const float* w, float* dx) {
#ifdef CONVJIT_BENCH_HAVE_OPENBLAS
  const int64_t P = s_.out_spatial();
  const int64_t icg = s_.ic / s_.groups, ocg = s_.oc / s_.groups;
  const int64_t K = icg * s_.k_spatial();
  std::memset(dx, 0, sizeof(float) * size_t(s_.x_elements()));
  for (int64_t n = 0; n < s_.n; ++n) {
    for (int64_t g = 0; g < s_.groups; ++g)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(K), static_cast<int>(P),
                  static_cast<int>(ocg), 1.0f, w + g * ocg * K, static_cast<int>(K), dy + (n * s_.oc + g * ocg) * P,
                  static_cast<int>(P), 0.0f, col_.data() + g * K * P, static_cast<int>(P));
    col2im(s_, col_.data(), dx + n * s_.ic * s_.in_spatial());
  }
#else
  (void)dy;
  (void)w;
  (void)dx;
  (void)col2im;
  throw std::runtime_error("built without OpenBLAS");
#endif
}

void Im2colConv::backward_filter(const float* x, const float* dy, float* dw) {
#ifdef CONVJIT_BENCH_HAVE_OPENBLAS
  const int64_t P = s_.out_spatial();
  const int64_t icg = s_.ic / s_.groups, ocg = s_.oc / s_.groups;
  const int64_t K = icg * s_.k_spatial();
  for (int64_t n = 0; n < s_.n; ++n) {
    im2col(s_, x + n * s_.ic * s_.in_spatial(), col_.data());
    for (int64_t g = 0; g < s_.groups; ++g)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(ocg), static_cast<int>(K),
                  static_cast<int>(P), 1.0f, dy + (n * s_.oc + g * ocg) * P, static_cast<int>(P),
                  col_.data() + g * K * P, static_cast<int>(P), n == 0 ? 0.0f : 1.0f, dw + g * ocg * K,
                  static_cast<int>(K));
  }
#else
  (void)x;
  (void)dy;
  (void)dw;
  throw std::runtime_error("built without OpenBLAS");
#endif
}

}  // namespace convjit_bench
