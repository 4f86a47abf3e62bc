// tools/seed_network.{hpp,cpp}: SeedNetwork::backward is the gradient of SeedNetwork::forward's
// loss, for every layer. A small batch of random images; for a few weights and biases of each of
// the six conv layers and of the dense layer, backward's gradient against the central difference
// (L(v + h) - L(v - h)) / (2h) of the loss.
//
// With the relu masks fixed, the logits are linear in any one parameter, so the loss is a smooth
// log-sum-exp of it and a central difference is accurate to O(h^2). The loss is recomputed in
// double from the last conv layer's output (forward's float softmax would add noise of ~1e-7 / h);
// it is checked to agree with forward's. A relu input within the step of zero changes a mask and
// breaks the linearity: both perturbed forwards' masks (layer output > 0) are compared with the
// unperturbed ones, the step is halved (up to 6 times) until they agree, and a parameter whose
// masks never agree is passed over for another. Each tensor must have enough parameters checked
// whose gradient is well above the rounding noise (a dead channel's zero gradient, or one lost
// in the noise, would prove nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "seed_network.hpp"

namespace convjit::testing::tools {
namespace {

using seednet::SeedNetwork;

constexpr int64_t kBatch = 3;
constexpr double kRelativeTolerance = 5e-2;
constexpr int kHalvings = 6;

struct Tensor {
  std::string name;
  std::vector<float>* value;
  std::vector<float>* gradient;
  int want;  // parameters whose gradient is clearly above the noise floor that must be checked
};

class SeedNetworkGradient : public ::testing::Test {
 protected:
  SeedNetworkGradient() : net_(kBatch, 2024) {
    std::mt19937 rng(99);
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    x_.resize(size_t(kBatch * 28 * 28));
    for (float& v : x_) v = pixel(rng);
    labels_ = {3, 7, 0};
    // Small random biases, so that checking them does not start at an exact 0 and the relu
    // inputs are not all shifted alike.
    std::normal_distribution<float> bias(0.0f, 0.05f);
    for (int i = 0; i < SeedNetwork::kLayers; ++i) {
      for (float& b : net_.layer(i).b) b = bias(rng);
    }
    for (float& b : net_.dense_b) b = bias(rng);
  }

  // Runs forward; returns its float loss and sets the relu masks of every layer.
  float forward(std::vector<uint8_t>* masks) {
    const float loss = net_.forward(x_.data(), labels_.data(), kBatch);
    masks->clear();
    for (int i = 0; i < SeedNetwork::kLayers; ++i) {
      for (float v : net_.layer(i).y) masks->push_back(v > 0.0f);
    }
    return loss;
  }

  // The loss of the last forward, from the last conv layer's output, in double.
  double precise_loss() {
    const std::vector<float>& y = net_.layer(SeedNetwork::kLayers - 1).y;
    const int64_t features = int64_t(net_.dense_w.size()) / SeedNetwork::kClasses;
    double loss = 0;
    for (int64_t n = 0; n < kBatch; ++n) {
      double logits[SeedNetwork::kClasses];
      for (int c = 0; c < SeedNetwork::kClasses; ++c) {
        double z = net_.dense_b[size_t(c)];
        for (int64_t f = 0; f < features; ++f) {
          z += double(net_.dense_w[size_t(c * features + f)]) * double(y[size_t(n * features + f)]);
        }
        logits[c] = z;
      }
      const double top = *std::max_element(logits, logits + SeedNetwork::kClasses);
      double sum = 0;
      for (double z : logits) sum += std::exp(z - top);
      loss += std::log(sum) + top - logits[labels_[size_t(n)]];
    }
    return loss / double(kBatch);
  }

  std::vector<Tensor> tensors() {
    std::vector<Tensor> t;
    for (int i = 0; i < SeedNetwork::kLayers; ++i) {
      seednet::ConvLayer& l = net_.layer(i);
      t.push_back({"conv" + std::to_string(i + 1) + ".w", &l.w, &l.dw, 6});
      t.push_back({"conv" + std::to_string(i + 1) + ".b", &l.b, &l.db, 2});  // of 2 or 3
    }
    t.push_back({"dense.w", &net_.dense_w, &net_.dense_dw, 10});
    // The classes that are neither a label nor predicted have gradients near 0 (their softmax
    // output is), below the noise floor.
    t.push_back({"dense.b", &net_.dense_b, &net_.dense_db, 3});
    return t;
  }

  SeedNetwork net_;
  std::vector<float> x_;
  std::vector<int32_t> labels_;
};

TEST_F(SeedNetworkGradient, BackwardMatchesFiniteDifferencesOfForwardForEveryLayer) {
  std::vector<uint8_t> masks;
  const float forward_loss = forward(&masks);
  const double base_loss = precise_loss();
  ASSERT_NEAR(base_loss, double(forward_loss), 1e-5 * std::max(1.0, std::abs(base_loss)))
      << "the double recomputation of the loss must be forward's loss";
  // Enough units alive for the check to mean something.
  const size_t alive = size_t(std::count(masks.begin(), masks.end(), uint8_t(1)));
  ASSERT_GT(alive, masks.size() / 5) << "most relu units are dead: the network or the data is degenerate";

  net_.backward(x_.data());
  std::vector<Tensor> all = tensors();
  std::vector<std::vector<float>> gradients;
  for (const Tensor& t : all) gradients.push_back(*t.gradient);

  std::mt19937 pick(5);
  std::vector<uint8_t> plus_masks, minus_masks;
  for (size_t ti = 0; ti < all.size(); ++ti) {
    const Tensor& t = all[ti];
    std::vector<float>& value = *t.value;
    std::vector<size_t> order(value.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::shuffle(order.begin(), order.end(), pick);
    if (t.name == "dense.w") {  // weights of live features first: most features of a 768 are alive
      std::stable_partition(order.begin(), order.end(), [&](size_t i) { return gradients[ti][i] != 0.0f; });
    }
    int checked_nonzero = 0, checked_zero = 0, unstable = 0;
    std::ostringstream log;
    for (size_t index : order) {
      if (checked_nonzero >= t.want) break;
      const float original = value[index];
      double h = 1e-2 * std::max(std::abs(double(original)), 0.1);
      bool stable = false;
      double difference = 0, step = 0;
      for (int attempt = 0; attempt <= kHalvings && !stable; ++attempt, h /= 2) {
        value[index] = float(double(original) + h);
        const double up = double(value[index]);
        forward(&plus_masks);
        const double loss_plus = precise_loss();
        value[index] = float(double(original) - h);
        const double down = double(value[index]);
        forward(&minus_masks);
        const double loss_minus = precise_loss();
        value[index] = original;
        stable = plus_masks == masks && minus_masks == masks;
        step = up - down;  // the step actually taken, after rounding to float
        difference = (loss_plus - loss_minus) / step;
      }
      if (!stable) {
        ++unstable;
        continue;
      }
      const double analytic = double(gradients[ti][index]);
      // Rounding of the float forward: about 2e-7 of the loss, divided by the step.
      const double floor = 2e-7 * std::max(1.0, base_loss) / step;
      const double error = std::abs(difference - analytic);
      const double scale = std::max(std::abs(difference), std::abs(analytic));
      EXPECT_LE(error, kRelativeTolerance * scale + floor)
          << t.name << "[" << index << "] = " << original << ": backward " << analytic << ", finite difference "
          << difference << " (step " << step << ")";
      if (std::abs(analytic) > 3 * floor)
        ++checked_nonzero;
      else
        ++checked_zero;
      log << " [" << index << "] " << analytic << " vs " << difference << " (step " << step << ")";
    }
    EXPECT_GE(checked_nonzero, t.want) << t.name << ": only " << checked_nonzero
                                       << " parameters with a gradient above the noise checked (" << checked_zero
                                       << " with one near 0, " << unstable
                                       << " passed over because a relu mask changed within " << kHalvings
                                       << " halvings of the step) of " << value.size();
    std::printf("%-8s %2d checked (+%d with a gradient near 0), %d passed over:%s\n", t.name.c_str(), checked_nonzero,
                checked_zero, unstable, log.str().c_str());
  }
  // The parameters are back where they were: the loss is unchanged, bit for bit.
  EXPECT_EQ(forward(&plus_masks), forward_loss);
}

}  // namespace
}  // namespace convjit::testing::tools
