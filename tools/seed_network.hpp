// The seed network (README.md, "The two commands"): six 3x3 stride-1 unpadded convolutions with relu (channels
// 1->2->2->3->3->3->3, 28x28 -> 16x16), flatten to 768, dense 768->10, softmax, cross-entropy.
// Every convolution, forward and backward, goes through convjit's public C++ API; the dense
// head is plain C++.
#pragma once

#include <convjit/convjit.hpp>
#include <convjit/runtime.hpp>
#include <cstdint>
#include <random>
#include <vector>

// The training step's element-by-element loops (the dense head's and the relu's gradients, the
// optimizer): each element's arithmetic is the same at any vector width, so they are built for the
// widest the host has (ifunc clones) and give the default build's bits, as long as no multiply and
// add are fused: AVX-512F has FMA instructions, and what includes this header builds with
// -ffp-contract=off (tools/CMakeLists.txt: convjit_seednet's public option).
#if defined(__x86_64__)
#define SEEDNET_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SEEDNET_VECTOR_CLONES
#endif

namespace seednet {

// The three convolutions of a training step. convjit's (a Runtime's) by default; bench/ plugs in
// another library's primitives to time the same network, dense head and all, on them.
class ConvOps {
 public:
  virtual ~ConvOps() = default;
  virtual void forward_relu(int layer, const convjit::ConvDims& dims, const float* x, const float* w, const float* b,
                            float* y) = 0;
  virtual void backward_filter(int layer, const convjit::ConvDims& dims, const float* x, const float* dy,
                               float* dw) = 0;
  virtual void backward_data(int layer, const convjit::ConvDims& dims, const float* dy, const float* w, float* dx) = 0;
};

class ConvjitOps final : public ConvOps {
 public:
  explicit ConvjitOps(convjit::Runtime& runtime = convjit::Runtime::process_default()) : runtime_(runtime) {}
  void forward_relu(int, const convjit::ConvDims& dims, const float* x, const float* w, const float* b,
                    float* y) override {
    runtime_.conv_forward(dims, x, w, b, convjit::Activation::Relu, y);
  }
  void backward_filter(int, const convjit::ConvDims& dims, const float* x, const float* dy, float* dw) override {
    runtime_.conv_backward_filter(dims, x, dy, dw);
  }
  void backward_data(int, const convjit::ConvDims& dims, const float* dy, const float* w, float* dx) override {
    runtime_.conv_backward_data(dims, dy, w, dx);
  }

 private:
  convjit::Runtime& runtime_;
};

struct ConvLayer {
  convjit::ConvDims dims;
  std::vector<float> w, b, y;     // weights, bias, relu output
  std::vector<float> dw, db, dy;  // gradients; dy is d(loss)/d(pre-activation)
};

class SeedNetwork {
 public:
  static constexpr int kLayers = 6, kClasses = 10, kImageSize = 28;

  // He initialization; ops (which must outlive the network) runs the convolutions, convjit's
  // default runtime when null.
  SeedNetwork(int64_t max_batch, uint32_t seed, ConvOps* ops = nullptr);
  SeedNetwork(const SeedNetwork&) = delete;  // ops_ may refer to this object's own default_ops_
  SeedNetwork& operator=(const SeedNetwork&) = delete;

  // Mean cross-entropy of a batch (<= max_batch images); x is [batch][1][28][28], labels 0..9.
  // The batch size is a runtime value of every layer's dims: no shape is ever fixed.
  float forward(const float* x, const int32_t* labels, int64_t batch);
  // After forward, on the same batch: every parameter's gradient, and d(loss)/d(input) unless
  // input_gradient is false (training does not need it).
  void backward(const float* x, bool input_gradient = true);

  const std::vector<float>& probabilities() const { return probabilities_; }  // [batch][10]
  ConvLayer& layer(int i) { return layers_[i]; }
  int64_t batch() const { return batch_; }

  struct Parameter {
    std::vector<float>* value;
    std::vector<float>* gradient;
  };
  std::vector<Parameter> parameters();

  std::vector<float> dense_w, dense_b, dense_dw, dense_db;

 private:
  ConvjitOps default_ops_;
  ConvOps& ops_;
  int64_t batch_ = 0, max_batch_;
  ConvLayer layers_[kLayers];
  std::vector<float> probabilities_, logits_grad_, dx_scratch_;
  std::vector<int32_t> labels_;
  int64_t features_ = 0;
};

// The design's benchmark input: a batch of 5 random 28x28 images with random labels.
inline constexpr int64_t kDesignBatch = 5;
struct Batch {
  int64_t size;
  std::vector<float> x;  // [size][1][28][28], uniform in [0, 1)
  std::vector<int32_t> labels;
};
Batch random_batch(int64_t size, uint32_t seed);

}  // namespace seednet
