// oneDNN f32 backward primitives, created outside the timed loop, for the backward benchmarks:
// convolution backward data and backward weights with format_tag::any everywhere (the inputs are
// reordered into oneDNN's chosen layouts once, outside the timed loop, and the output stays in its
// layout: oneDNN's best steady state, reorders excluded, as onednn.hpp's Blocked), and pooling
// backward in the user's layout (max pooling reads the workspace of a training forward run once
// before the timed loop).
#pragma once

#include <memory>
#include <string>

#include "shapes.hpp"

namespace convjit_bench {

enum class ConvBackward { Data, Filter };

class OnednnConvBackward {
 public:
  // Data: a = dy, b = w, out = dx. Filter: a = x, b = dy, out = dw. User layout NCHW/OIHW or
  // NHWC/OHWI (the reorders' source); they must outlive the object. Filter is oneDNN's backward weights. Throws std::runtime_error if
  // oneDNN has no implementation.
  OnednnConvBackward(const ConvShape& s, ConvBackward which, bool nhwc, const float* a, const float* b, float* out);
  ~OnednnConvBackward();
  void run();
  std::string impl() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class OnednnPoolBackward {
 public:
  // x (and a forward's y) in the user layout; dx = the gradient for dy.
  OnednnPoolBackward(const PoolShape& s, bool nhwc, const float* x, const float* dy, float* dx);
  ~OnednnPoolBackward();
  void run();
  std::string impl() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace convjit_bench
