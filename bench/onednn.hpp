// oneDNN f32 forward direct convolution and pooling, primitives created outside the timed loop.
//  - Plain:   memory descriptors with the user's format tags (nchw/oihw or nhwc/ohwi, grouped
//             goihw/gohwi); oneDNN picks whatever implementation it has for plain memory. This
//             is what a user holding tensors in that layout pays per call.
//  - Blocked: format_tag::any for src, weights and dst; inputs are reordered to the chosen
//             layouts once, outside the timed loop, and the output stays blocked: oneDNN's best
//             steady state, the reorders excluded.
//  - NhwcAnyWeights: nhwc activations in and out, weights format_tag::any reordered once outside
//             the timed loop: oneDNN's channels-last inference path (its plain nhwc + ohwi weights
//             primitive is the reference implementation).
#pragma once

#include <memory>
#include <string>

#include "shapes.hpp"

namespace convjit_bench {

bool have_onednn();

enum class DnnlConvKind { PlainNCHW, PlainNHWC, Blocked, NhwcAnyWeights };

class OnednnConv {
 public:
  // x, w, y in the user layout of the kind (NCHW/OIHW for Blocked); they must outlive the object.
  // Throws std::runtime_error if oneDNN has no implementation.
  OnednnConv(const ConvShape& s, DnnlConvKind kind, const float* x, const float* w, float* y);
  ~OnednnConv();
  void run();              // execute and wait
  void output_to_user();   // Blocked: reorder the blocked result into y (no-op for the plain kinds)
  std::string impl() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class OnednnPool {
 public:
  OnednnPool(const PoolShape& s, bool nhwc, const float* x, float* y);
  ~OnednnPool();
  void run();
  std::string impl() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace convjit_bench
