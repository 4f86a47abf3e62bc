// NNlib's CPU convolution (conv_im2col!): per image, unfold the input into a
// (ic * prod(k)) x prod(out) column buffer, then one sgemm per group:
// y[g] (oc/g x P) = w[g] (oc/g x K) * col[g] (K x P). NCHW / OIHW, cross-correlation.
// The column buffer is allocated once, outside the timed loop (NNlib allocates it per call,
// so this is the method's best case). BLAS threads = the run's thread count; images are
// processed in order, so the threading is OpenBLAS's own inside each sgemm. The gradients as
// NNlib computes them (∇conv_data!, ∇conv_filter!): backward data is col = w[g]^T dy[g], then
// col2im adds col back into dx; backward filter is dw[g] += dy[g] col[g]^T over the images.
#pragma once

#include "shapes.hpp"

namespace convjit_bench {

bool have_openblas();
void set_openblas_threads(int threads);  // no-op without OpenBLAS

class Im2colConv {
 public:
  explicit Im2colConv(const ConvShape& s);
  void run(const float* x, const float* w, float* y);
  void backward_data(const float* dy, const float* w, float* dx);
  void backward_filter(const float* x, const float* dy, float* dw);

 private:
  ConvShape s_;
  Buffer col_;
};

}  // namespace convjit_bench
