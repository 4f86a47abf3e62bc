#include "seed_network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace seednet {
namespace {

constexpr int64_t kChannels[SeedNetwork::kLayers + 1] = {1, 2, 2, 3, 3, 3, 3};

void he_init(std::vector<float>& v, int64_t fan_in, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / float(fan_in)));
  for (float& x : v) x = normal(rng);
}

// to[i] += scale[t * scale_step] * rows[t * row_step + i] for each of `terms` rows, t ascending:
// the bits of one pass per row, with a block of `to` held in registers across the rows.
constexpr int64_t kRowBlock = 64;

SEEDNET_VECTOR_CLONES void add_scaled_rows(const float* scale, int64_t scale_step, const float* rows, int64_t row_step,
                                           int64_t terms, float* to, int64_t count) {
  int64_t i = 0;
  for (; i + kRowBlock <= count; i += kRowBlock) {
    float sum[kRowBlock];
    for (int64_t l = 0; l < kRowBlock; ++l) sum[l] = to[i + l];
    for (int64_t t = 0; t < terms; ++t) {
      const float g = scale[t * scale_step];
      const float* row = rows + t * row_step + i;
      for (int64_t l = 0; l < kRowBlock; ++l) sum[l] += g * row[l];
    }
    for (int64_t l = 0; l < kRowBlock; ++l) to[i + l] = sum[l];
  }
  for (int64_t t = 0; t < terms; ++t) {
    for (int64_t j = i; j < count; ++j) to[j] += scale[t * scale_step] * rows[t * row_step + j];
  }
}

// The sums of the dense head and the bias gradients: term(f) goes to partial sum f mod kChains,
// and the partial sums are added in halves. The association is the same at any vector width, so
// the build for each host gives the same bits, and 64 sums keep several vector chains in flight.
constexpr int kChains = 64;

template <typename Term>
inline __attribute__((always_inline)) float sum_in_chains(int64_t count, Term&& term) {
  float chain[kChains] = {};
  int64_t f = 0;
  for (; f + kChains <= count; f += kChains) {
    for (int l = 0; l < kChains; ++l) chain[l] += term(f + l);
  }
  for (int l = 0; f < count; ++f, ++l) chain[l] += term(f);
  for (int width = kChains / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) chain[l] += chain[l + width];
  }
  return chain[0];
}

SEEDNET_VECTOR_CLONES float dot(const float* a, const float* b, int64_t count) {
  return sum_in_chains(
      count, [&](int64_t f) __attribute__((always_inline)) { return a[f] * b[f]; });
}

// Through the relu: dy passes where y was positive. Returns the sum of what passed.
SEEDNET_VECTOR_CLONES float pass_where_positive(const float* y, float* dy, int64_t count) {
  return sum_in_chains(
      count, [&](int64_t f) __attribute__((always_inline)) { return dy[f] = y[f] > 0.0f ? dy[f] : 0.0f; });
}

}  // namespace

SeedNetwork::SeedNetwork(int64_t max_batch, uint32_t seed, ConvOps* ops)
    : ops_(ops ? *ops : default_ops_), max_batch_(max_batch) {
  const int64_t batch = max_batch;
  std::mt19937 rng(seed);
  int64_t size = kImageSize;
  for (int i = 0; i < kLayers; ++i) {
    ConvLayer& l = layers_[i];
    l.dims.rank = 2;
    l.dims.batch = batch;
    l.dims.in_channels = kChannels[i];
    l.dims.out_channels = kChannels[i + 1];
    l.dims.in_size = {size, size, 1};
    l.dims.kernel = {3, 3, 1};
    size -= 2;
    l.w.resize(size_t(l.dims.weight_elements()));
    he_init(l.w, kChannels[i] * 9, rng);
    l.b.assign(size_t(kChannels[i + 1]), 0.0f);
    l.y.resize(size_t(l.dims.output_elements()));
    l.dw.resize(l.w.size());
    l.db.resize(l.b.size());
    l.dy.resize(l.y.size());
  }
  features_ = kChannels[kLayers] * size * size;  // 3 * 16 * 16 = 768
  dense_w.resize(size_t(kClasses * features_));
  he_init(dense_w, features_, rng);
  dense_b.assign(kClasses, 0.0f);
  dense_dw.resize(dense_w.size());
  dense_db.resize(dense_b.size());
  probabilities_.resize(size_t(batch * kClasses));
  logits_grad_.resize(probabilities_.size());
  dx_scratch_.resize(size_t(batch * kImageSize * kImageSize));
}

float SeedNetwork::forward(const float* x, const int32_t* labels, int64_t batch) {
  if (batch < 1 || batch > max_batch_) throw std::invalid_argument("batch " + std::to_string(batch) + " out of range");
  batch_ = batch;
  const float* input = x;
  for (int i = 0; i < kLayers; ++i) {
    ConvLayer& l = layers_[i];
    l.dims.batch = batch;
    ops_.forward_relu(i, l.dims, input, l.w.data(), l.b.data(), l.y.data());
    input = l.y.data();
  }
  labels_.assign(labels, labels + batch_);
  double loss = 0.0;
  for (int64_t n = 0; n < batch_; ++n) {
    const float* features = input + n * features_;
    float* p = &probabilities_[size_t(n * kClasses)];
    for (int c = 0; c < kClasses; ++c) {
      p[c] = dot(&dense_w[size_t(c * features_)], features, features_) + dense_b[size_t(c)];
    }
    const float top = *std::max_element(p, p + kClasses);
    float sum = 0.0f;
    for (int c = 0; c < kClasses; ++c) sum += p[c] = std::exp(p[c] - top);
    for (int c = 0; c < kClasses; ++c) p[c] /= sum;
    loss -= std::log(std::max(p[labels[n]], 1e-30f));
  }
  return float(loss / double(batch_));
}

void SeedNetwork::backward(const float* x, bool input_gradient) {
  // Softmax + cross-entropy: d(loss)/d(logits) = (p - onehot) / batch.
  for (int64_t n = 0; n < batch_; ++n) {
    for (int c = 0; c < kClasses; ++c) {
      const size_t i = size_t(n * kClasses + c);
      logits_grad_[i] = (probabilities_[i] - (c == labels_[size_t(n)] ? 1.0f : 0.0f)) / float(batch_);
    }
  }
  // Dense layer: its gradients, and d(loss)/d(features) into the last conv layer's dy.
  ConvLayer& last = layers_[kLayers - 1];
  std::fill(dense_dw.begin(), dense_dw.end(), 0.0f);
  std::fill(dense_db.begin(), dense_db.end(), 0.0f);
  std::fill(last.dy.begin(), last.dy.end(), 0.0f);
  for (int c = 0; c < kClasses; ++c) {
    for (int64_t n = 0; n < batch_; ++n) dense_db[size_t(c)] += logits_grad_[size_t(n * kClasses + c)];
    add_scaled_rows(&logits_grad_[size_t(c)], kClasses, last.y.data(), features_, batch_,
                    &dense_dw[size_t(c * features_)], features_);
  }
  for (int64_t n = 0; n < batch_; ++n) {
    add_scaled_rows(&logits_grad_[size_t(n * kClasses)], 1, dense_w.data(), features_, kClasses,
                    last.dy.data() + n * features_, features_);
  }
  for (int i = kLayers - 1; i >= 0; --i) {
    ConvLayer& l = layers_[i];
    // Through the relu, plane by plane; the bias gradient sums each channel's planes in image order.
    const int64_t pixels = l.dims.output_elements() / (batch_ * l.dims.out_channels);
    std::fill(l.db.begin(), l.db.end(), 0.0f);
    for (int64_t n = 0; n < batch_; ++n) {
      for (int64_t c = 0; c < l.dims.out_channels; ++c) {
        const int64_t plane = (n * l.dims.out_channels + c) * pixels;
        l.db[size_t(c)] += pass_where_positive(l.y.data() + plane, l.dy.data() + plane, pixels);
      }
    }
    const float* input = i == 0 ? x : layers_[i - 1].y.data();
    ops_.backward_filter(i, l.dims, input, l.dy.data(), l.dw.data());
    if (i == 0 && !input_gradient) break;
    float* dx = i == 0 ? dx_scratch_.data() : layers_[i - 1].dy.data();
    ops_.backward_data(i, l.dims, l.dy.data(), l.w.data(), dx);
  }
}

Batch random_batch(int64_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  Batch b{size, std::vector<float>(size_t(size * SeedNetwork::kImageSize * SeedNetwork::kImageSize)),
          std::vector<int32_t>(size_t(size))};
  for (float& v : b.x) v = pixel(rng);
  for (int32_t& l : b.labels) l = int32_t(rng() % SeedNetwork::kClasses);
  return b;
}

std::vector<SeedNetwork::Parameter> SeedNetwork::parameters() {
  std::vector<Parameter> p;
  for (ConvLayer& l : layers_) {
    p.push_back({&l.w, &l.dw});
    p.push_back({&l.b, &l.db});
  }
  p.push_back({&dense_w, &dense_dw});
  p.push_back({&dense_b, &dense_db});
  return p;
}

}  // namespace seednet
