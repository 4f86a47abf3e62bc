// The seed network of DESIGN.md: six 3x3 stride-1 unpadded convolutions with relu (channels
// 1->2->2->3->3->3->3, 28x28 -> 16x16), flatten to 768, dense 768->10, softmax, cross-entropy.
// Every convolution, forward and backward, goes through convjit's public C++ API; the dense
// head is plain C++.
#pragma once

#include <convjit/convjit.hpp>

#include <cstdint>
#include <random>
#include <vector>

namespace seednet {

struct ConvLayer {
  convjit::ConvDims dims;
  std::vector<float> w, b, y;    // weights, bias, relu output
  std::vector<float> dw, db, dy;  // gradients; dy is d(loss)/d(pre-activation)
};

class SeedNetwork {
 public:
  static constexpr int kLayers = 6, kClasses = 10;

  SeedNetwork(int64_t batch, uint32_t seed);  // He initialization

  // Returns the mean cross-entropy of the batch; x is [batch][1][28][28], labels in 0..9.
  float forward(const float* x, const int32_t* labels);
  // After forward: every layer's dw, db and the dense gradients (and d(loss)/dx internally).
  void backward(const float* x);

  const std::vector<float>& probabilities() const { return probabilities_; }
  ConvLayer& layer(int i) { return layers_[i]; }
  int64_t batch() const { return batch_; }

  std::vector<float> dense_w, dense_b, dense_dw, dense_db;

 private:
  int64_t batch_;
  ConvLayer layers_[kLayers];
  std::vector<float> probabilities_, logits_grad_, dx_scratch_;
  std::vector<int32_t> labels_;
  int64_t features_ = 0;
};

}  // namespace seednet
