// seednet: trains the seed network (README.md, "The two commands") on Fashion-MNIST, every
// convolution (forward and both gradients) through convjit's public C++ API, the dense head and
// the optimizer in plain C++.
//
//   seednet [--data DIR] [--epochs N] [--batch N] [--optimizer adam|sgd] [--lr X] [--threads N]
//           [--limit N] [--seed N] [--log-every N] [--loss-trace FILE]
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <convjit/convjit.hpp>
#include <convjit/runtime.hpp>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "idx.hpp"
#include "seed_network.hpp"
#include "tier_table.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Options {
  std::string data = "/usr/share/datasets/fashion-mnist";
  int epochs = 1;
  int batch = 32;
  std::string optimizer = "adam";
  double lr = -1;  // per optimizer: Adam 1e-3, SGD with momentum 0.9: 1e-2
  int threads = 0;
  int64_t limit = 0;  // training images used (0: all)
  uint32_t seed = 1;
  int log_every = 200;
  std::string loss_trace;
};

int usage(const std::string& error) {
  FILE* out = error.empty() ? stdout : stderr;
  if (!error.empty()) std::fprintf(stderr, "seednet: %s\n", error.c_str());
  std::fprintf(out,
               "usage: seednet [options]\n"
               "Trains the seed network (six 3x3 convs with relu, 1->2->2->3->3->3->3, dense 768->10, softmax,\n"
               "cross-entropy) on Fashion-MNIST through convjit.\n"
               "  --data DIR         IDX files {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (default %s)\n"
               "  --epochs N         passes over the training set (default 1)\n"
               "  --batch N          mini-batch size (default 32)\n"
               "  --optimizer NAME   adam (default, lr 1e-3) or sgd (momentum 0.9, lr 1e-2)\n"
               "  --lr X             learning rate\n"
               "  --threads N        convjit threads (default: CONVJIT_NUM_THREADS or all cores)\n"
               "  --limit N          use only the first N training images\n"
               "  --seed N           initialization and shuffling seed (default 1)\n"
               "  --log-every N      a progress line every N batches (default 200)\n"
               "  --loss-trace FILE  write every step's loss, exactly (hex float), one per line\n",
               Options{}.data.c_str());
  return error.empty() ? 0 : 2;
}

bool parse(int argc, char** argv, Options* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return false;
    if (i + 1 >= argc) {
      *error = arg.rfind("--", 0) == 0 ? "missing value for " + arg : "unexpected argument " + arg;
      return false;
    }
    const std::string value = argv[++i];
    // Integers must parse whole and fit; the learning rate is the one real number.
    auto integer = [&](int64_t minimum, int64_t maximum) {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno != 0 || v < minimum || v > maximum) {
        *error = "bad value for " + arg + ": " + value + " (an integer in " + std::to_string(minimum) + ".." +
                 std::to_string(maximum) + ")";
      }
      return int64_t(v);
    };
    auto real = [&]() {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(v > 0) || !std::isfinite(v))
        *error = "bad value for " + arg + ": " + value;
      return v;
    };
    constexpr int64_t kIntMax = int64_t(1) << 30;
    if (arg == "--data")
      o->data = value;
    else if (arg == "--epochs")
      o->epochs = int(integer(1, kIntMax));
    else if (arg == "--batch")
      o->batch = int(integer(1, 1 << 20));
    else if (arg == "--optimizer")
      o->optimizer = value;
    else if (arg == "--lr")
      o->lr = real();
    else if (arg == "--threads")
      o->threads = int(integer(0, 1024));
    else if (arg == "--limit")
      o->limit = integer(0, INT64_MAX);
    else if (arg == "--seed")
      o->seed = uint32_t(integer(0, UINT32_MAX));
    else if (arg == "--log-every")
      o->log_every = int(integer(1, kIntMax));
    else if (arg == "--loss-trace")
      o->loss_trace = value;
    else
      *error = "unknown option " + arg;
    if (!error->empty()) return false;
  }
  if (o->optimizer != "adam" && o->optimizer != "sgd") *error = "unknown optimizer " + o->optimizer;
  if (o->lr < 0) o->lr = o->optimizer == "adam" ? 1e-3 : 1e-2;
  return error->empty();
}

struct Dataset {
  std::vector<float> images;  // [count][1][28][28], pixels scaled to [0, 1]
  std::vector<int32_t> labels;
  int64_t count = 0;
};

// The .gz files of Debian's dataset-fashion-mnist, or uncompressed ones.
std::string find_file(const std::string& dir, const std::string& name) {
  for (const std::string& candidate : {dir + "/" + name + ".gz", dir + "/" + name}) {
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return dir + "/" + name + ".gz";  // the reader reports it missing
}

Dataset load(const std::string& dir, const std::string& split, int64_t limit) {
  const seednet::IdxImages images = seednet::read_idx_images(find_file(dir, split + "-images-idx3-ubyte"));
  const std::vector<uint8_t> labels = seednet::read_idx_labels(find_file(dir, split + "-labels-idx1-ubyte"));
  const int64_t size = seednet::SeedNetwork::kImageSize;
  if (images.rows != size || images.cols != size) {
    throw std::runtime_error(split + " images are " + std::to_string(images.rows) + "x" + std::to_string(images.cols) +
                             ", the seed network takes 28x28");
  }
  if (int64_t(labels.size()) != images.count) {
    throw std::runtime_error(split + ": " + std::to_string(images.count) + " images but " +
                             std::to_string(labels.size()) + " labels");
  }
  Dataset d;
  d.count = limit > 0 ? std::min(limit, images.count) : images.count;
  d.images.resize(size_t(d.count * size * size));
  for (size_t i = 0; i < d.images.size(); ++i) d.images[i] = float(images.pixels[i]) / 255.0f;
  d.labels.assign(labels.begin(), labels.begin() + d.count);
  return d;
}

constexpr float kAdamBeta1 = 0.9f, kAdamBeta2 = 0.999f, kAdamEpsilon = 1e-8f;

// c1, c2: the bias corrections of step t, 1 - beta^t.
SEEDNET_VECTOR_CLONES void adam_update(float lr, float c1, float c2, const float* g, float* m, float* v, float* w,
                                       size_t count) {
  const float b1 = kAdamBeta1, b2 = kAdamBeta2, eps = kAdamEpsilon;
  for (size_t j = 0; j < count; ++j) {
    m[j] = b1 * m[j] + (1 - b1) * g[j];
    v[j] = b2 * v[j] + (1 - b2) * g[j] * g[j];
    w[j] -= lr * (m[j] / c1) / (std::sqrt(v[j] / c2) + eps);
  }
}

SEEDNET_VECTOR_CLONES void momentum_update(float lr, const float* g, float* m, float* w, size_t count) {
  for (size_t j = 0; j < count; ++j) {
    m[j] = 0.9f * m[j] + g[j];
    w[j] -= lr * m[j];
  }
}

// Adam (Kingma & Ba) or SGD with momentum 0.9, over every parameter of the network.
class Optimizer {
 public:
  Optimizer(seednet::SeedNetwork& net, const Options& o)
      : params_(net.parameters()), adam_(o.optimizer == "adam"), lr_(float(o.lr)) {
    for (auto& p : params_) {
      first_.emplace_back(p.value->size(), 0.0f);
      second_.emplace_back(p.value->size(), 0.0f);
    }
  }
  void step() {
    ++t_;
    const float c1 = 1.0f - std::pow(kAdamBeta1, float(t_)), c2 = 1.0f - std::pow(kAdamBeta2, float(t_));
    for (size_t i = 0; i < params_.size(); ++i) {
      std::vector<float>& w = *params_[i].value;
      const std::vector<float>& g = *params_[i].gradient;
      std::vector<float>& m = first_[i];
      std::vector<float>& v = second_[i];
      if (adam_) {
        adam_update(lr_, c1, c2, g.data(), m.data(), v.data(), w.data(), w.size());
      } else {
        momentum_update(lr_, g.data(), m.data(), w.data(), w.size());
      }
    }
  }

 private:
  std::vector<seednet::SeedNetwork::Parameter> params_;
  std::vector<std::vector<float>> first_, second_;
  bool adam_;
  float lr_;
  int64_t t_ = 0;
};

struct Evaluation {
  double loss, accuracy;
};

Evaluation evaluate(seednet::SeedNetwork& net, const Dataset& d, int batch) {
  double loss = 0;
  int64_t correct = 0;
  const int64_t pixels = 28 * 28;
  for (int64_t first = 0; first < d.count; first += batch) {
    const int64_t n = std::min<int64_t>(batch, d.count - first);
    loss += double(net.forward(d.images.data() + first * pixels, d.labels.data() + first, n)) * double(n);
    const std::vector<float>& p = net.probabilities();
    for (int64_t i = 0; i < n; ++i) {
      const float* row = p.data() + i * seednet::SeedNetwork::kClasses;
      correct += std::max_element(row, row + seednet::SeedNetwork::kClasses) - row == d.labels[size_t(first + i)];
    }
  }
  return {loss / double(d.count), double(correct) / double(d.count)};
}

int run(const Options& o) {
  convjit::set_num_threads(o.threads);
  const Dataset train = load(o.data, "train", o.limit);
  const Dataset test = load(o.data, "t10k", 0);
  const convjit::Policy& policy = convjit::Runtime::process_default().policy();
  std::printf("seednet: %lld training / %lld test images, batch %d, %s lr %g, %d thread(s), hot threshold %lld\n",
              (long long)train.count, (long long)test.count, o.batch, o.optimizer.c_str(), o.lr, convjit::num_threads(),
              (long long)policy.hot_threshold);

  seednet::SeedNetwork net(o.batch, o.seed);
  Optimizer optimizer(net, o);
  FILE* trace = o.loss_trace.empty() ? nullptr : std::fopen(o.loss_trace.c_str(), "w");
  if (!o.loss_trace.empty() && !trace) throw std::runtime_error(o.loss_trace + ": cannot open for writing");

  const int64_t pixels = 28 * 28;
  const int64_t steps = train.count / o.batch;  // the last partial batch is dropped
  if (steps == 0) throw std::runtime_error("fewer training images than one batch");
  std::vector<int64_t> order(size_t(train.count));
  std::vector<float> x(size_t(o.batch * pixels));
  std::vector<int32_t> labels(size_t(o.batch));
  std::mt19937 rng(o.seed);
  const bool terminal = isatty(fileno(stdout));
  bool first_step = true;

  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
    for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng() % (i + 1)]);
    const Clock::time_point epoch_start = Clock::now();
    double epoch_loss = 0, window_loss = 0;
    for (int64_t step = 0; step < steps; ++step) {
      for (int64_t b = 0; b < o.batch; ++b) {
        const int64_t image = order[size_t(step * o.batch + b)];
        std::copy_n(train.images.data() + image * pixels, pixels, x.data() + b * pixels);
        labels[size_t(b)] = train.labels[size_t(image)];
      }
      const Clock::time_point t0 = Clock::now();
      const float loss = net.forward(x.data(), labels.data(), o.batch);
      const double forward_s = seconds_since(t0);
      const Clock::time_point t1 = Clock::now();
      net.backward(x.data(), /*input_gradient=*/false);
      const double gradient_s = seconds_since(t1);
      if (first_step) {
        std::printf("time to first forward result %.3f ms, to first gradient %.3f ms (fresh process, batch %d)\n",
                    forward_s * 1e3, gradient_s * 1e3, o.batch);
        first_step = false;
      }
      optimizer.step();
      if (trace) std::fprintf(trace, "%a\n", double(loss));
      epoch_loss += loss;
      window_loss += loss;
      if ((step + 1) % o.log_every == 0 || step + 1 == steps) {
        const double rate = double((step + 1) * o.batch) / seconds_since(epoch_start);
        const int window = int((step % o.log_every) + 1);
        if (terminal) {
          const int width = 30, filled = int(width * (step + 1) / steps);
          std::printf("\repoch %d [%s%s] %5.1f%%  loss %.4f  %7.0f images/s", epoch,
                      std::string(size_t(filled), '#').c_str(), std::string(size_t(width - filled), '.').c_str(),
                      100.0 * double(step + 1) / double(steps), window_loss / window, rate);
          std::fflush(stdout);
        } else {
          std::printf("epoch %d step %lld/%lld  loss %.4f  %.0f images/s\n", epoch, (long long)(step + 1),
                      (long long)steps, window_loss / window, rate);
        }
        window_loss = 0;
      }
    }
    const double epoch_s = seconds_since(epoch_start);
    const Evaluation e = evaluate(net, test, o.batch);
    std::printf("%sepoch %d: train loss %.4f, test loss %.4f, test accuracy %.4f, %.2f s (%.0f images/s)\n",
                terminal ? "\n" : "", epoch, epoch_loss / double(steps), e.loss, e.accuracy, epoch_s,
                double(steps * o.batch) / epoch_s);
  }
  if (trace) std::fclose(trace);
  seednet::print_tier_table(convjit::Runtime::process_default());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string error;
  if (!parse(argc, argv, &options, &error)) return usage(error);
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seednet: %s\n", e.what());
    return 1;
  }
}
