// convjit-workload: the README's main job. Runs real work through the library in a fresh
// process and prints what a user of the tiers wants to know: time to first result, steady state,
// and where the time goes per layer.
//
//   convjit-workload [--threads N] [--steps N] [--shapes PATH] [--no-shapes]
#include <algorithm>
#include <chrono>
#include <convjit/convjit.hpp>
#include <convjit/runtime.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "seed_network.hpp"
#include "shapes.hpp"
#include "tier_table.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Median seconds per call of fn over `repeats` timed runs.
double median_seconds(int repeats, const std::function<void()>& fn) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    fn();
    times.push_back(seconds_since(start));
  }
  std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
  return times[size_t(repeats / 2)];
}

std::string format_us(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%10.1f us", seconds * 1e6);
  return text;
}

struct Options {
  int threads = 0;
  int steps = 200;
  std::string shapes_path;
  bool run_shapes = true;
};

int usage(const char* message) {
  if (message) std::fprintf(stderr, "convjit-workload: %s\n", message);
  std::fprintf(message ? stderr : stdout,
               "usage: convjit-workload [--threads N] [--steps N] [--shapes PATH] [--no-shapes]\n"
               "  Runs the seed network (forward and gradient) and the shapes of bench/shapes.json\n"
               "  through convjit, printing time to first result and steady-state timings.\n");
  return message ? 2 : 0;
}

void run_seed_network(const Options& options) {
  const seednet::Batch batch = seednet::random_batch(seednet::kDesignBatch, 7);
  const int64_t kBatch = batch.size;
  const std::vector<float>& x = batch.x;
  const std::vector<int32_t>& labels = batch.labels;

  seednet::SeedNetwork net(kBatch, 42);
  auto start = Clock::now();
  const float first_loss = net.forward(x.data(), labels.data(), kBatch);
  const double first_forward = seconds_since(start);
  start = Clock::now();
  net.backward(x.data());
  const double first_gradient = seconds_since(start);

  std::printf("seed network: input [5,1,28,28], six 3x3 convs + relu (1->2->2->3->3->3->3), dense 768->10\n");
  std::printf("  time to first forward result  %s   (loss %.4f)\n", format_us(first_forward).c_str(), first_loss);
  std::printf("  time to first gradient        %s   (all six layers' dx and dw)\n", format_us(first_gradient).c_str());
  const double forward = median_seconds(options.steps, [&] { net.forward(x.data(), labels.data(), kBatch); });
  const double step = median_seconds(options.steps, [&] {
    net.forward(x.data(), labels.data(), kBatch);
    net.backward(x.data());
  });
  std::printf("  steady forward (median)       %s\n", format_us(forward).c_str());
  std::printf("  steady training step (median) %s   (forward + gradient)\n", format_us(step).c_str());

  std::printf("  per layer, median of %d calls:\n", options.steps);
  std::printf("    %-6s %-22s %13s %13s %13s\n", "layer", "shape", "forward", "backward dx", "backward dw");
  const float* input = x.data();
  std::vector<float> dx;
  for (int i = 0; i < seednet::SeedNetwork::kLayers; ++i) {
    seednet::ConvLayer& l = net.layer(i);
    dx.resize(size_t(l.dims.input_elements()));
    const double f = median_seconds(options.steps, [&] {
      convjit::conv_forward(l.dims, input, l.w.data(), l.b.data(), convjit::Activation::Relu, l.y.data());
    });
    const double bd =
        median_seconds(options.steps, [&] { convjit::conv_backward_data(l.dims, l.dy.data(), l.w.data(), dx.data()); });
    const double bf =
        median_seconds(options.steps, [&] { convjit::conv_backward_filter(l.dims, input, l.dy.data(), l.dw.data()); });
    char shape[64];
    std::snprintf(shape, sizeof shape, "3x3 %lld->%lld %lldx%lld", (long long)l.dims.in_channels,
                  (long long)l.dims.out_channels, (long long)l.dims.in_size[0], (long long)l.dims.in_size[1]);
    std::printf("    conv%-2d %-22s %s %s %s\n", i + 1, shape, format_us(f).c_str(), format_us(bd).c_str(),
                format_us(bf).c_str());
    input = l.y.data();
  }
}

void run_shapes(const Options& options) {
  const convjit_bench::ShapeSet shapes = convjit_bench::load_shapes(options.shapes_path);
  std::printf("\nshapes of %s, forward, NCHW:\n", convjit_bench::shapes_origin(options.shapes_path).c_str());
  std::printf("  %-15s %13s %13s %10s\n", "shape", "first call", "steady", "GFLOP/s");
  for (const convjit_bench::ConvShape& s : shapes.conv) {
    const convjit::ConvDims dims = s.dims(convjit::Layout::NCHW);
    convjit_bench::Buffer x(size_t(s.x_elements())), w(size_t(s.w_elements())), y(size_t(s.y_elements()));
    convjit_bench::fill_random(x, 1);
    convjit_bench::fill_random(w, 2);
    auto start = Clock::now();
    convjit::conv_forward(dims, x.data(), w.data(), y.data());
    const double first = seconds_since(start);
    const int repeats = std::clamp(int(2e9 / s.flops()), 3, 200);
    const double steady = median_seconds(repeats, [&] { convjit::conv_forward(dims, x.data(), w.data(), y.data()); });
    std::printf("  %-15s %s %s %10.1f\n", s.name.c_str(), format_us(first).c_str(), format_us(steady).c_str(),
                s.flops() / steady * 1e-9);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  const char* env_shapes = std::getenv("CONVJIT_SHAPES");
  options.shapes_path = env_shapes ? env_shapes : "";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--help" || arg == "-h") return usage(nullptr);
    if (arg == "--no-shapes") {
      options.run_shapes = false;
    } else if (arg == "--threads" || arg == "--steps" || arg == "--shapes") {
      const char* v = value();
      if (!v) return usage(("missing value for " + arg).c_str());
      if (arg == "--shapes") {
        options.shapes_path = v;
        continue;
      }
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (*end != '\0' || n < (arg == "--threads" ? 0 : 1)) return usage(("bad value for " + arg + ": " + v).c_str());
      (arg == "--threads" ? options.threads : options.steps) = int(n);
    } else {
      return usage(("unknown option " + arg).c_str());
    }
  }
  try {
    convjit::set_num_threads(options.threads);
    const convjit::Policy& policy = convjit::Runtime::process_default().policy();
    std::printf("convjit-workload: %d thread(s), hot threshold %lld, %s compiles\n\n", convjit::num_threads(),
                (long long)policy.hot_threshold, policy.async ? "background" : "inline");
    run_seed_network(options);
    if (options.run_shapes) run_shapes(options);
    seednet::print_tier_table(convjit::Runtime::process_default());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convjit-workload: %s\n", e.what());
    return 1;
  }
  return 0;
}
