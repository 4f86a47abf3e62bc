// convjit_seed_bench: one training step of the seed network (README.md; batch 32, the seednet
// default, and 5, the design's benchmark batch) on convjit's tiers and on oneDNN's primitives. The dense head, softmax,
// relu masks and bias gradients are the same plain C++ (tools/seed_network.cpp) in every variant; only the convolutions
// differ. The step is forward, then every parameter's gradient (no input gradient), as seednet trains; the optimizer
// update is left out: it is the same for all and weights that stay put keep the relu patterns, and so the work,
// identical across iterations.
//
//   convjit_seed_bench [--threads=N] [Google Benchmark flags]
//
// seed_step/<variant>/<batch>: steady state. generic is a Runtime without a backend; auto is the process
// policy (CONVJIT_BACKEND etc.) after its hot threshold and compiles; llvm the same with the LLVM
// backend; onednn is plain NCHW oneDNN.
// seed_first_step/<variant>: a fresh Runtime (or fresh oneDNN primitives) each iteration, timed
// to the first loss and to the first gradient: what an app pays before its first result.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "onednn_seed_ops.hpp"
#include "seed_network.hpp"

namespace {

// Multiply-adds of one image's forward pass through the six convolutions, times two for FLOPs.
int64_t forward_flops_per_image() {
  seednet::SeedNetwork shape_only(1, 1, nullptr);
  int64_t flops = 0;
  for (int i = 0; i < seednet::SeedNetwork::kLayers; ++i) {
    const convjit::ConvDims& d = shape_only.layer(i).dims;
    flops += 2 * d.output_elements() * d.in_channels * d.kernel[0] * d.kernel[1];
  }
  return flops;
}

// Forward, backward filter of all six layers, backward data of layers 2-6.
int64_t training_step_flops(int64_t batch) {
  seednet::SeedNetwork shape_only(1, 1, nullptr);
  const convjit::ConvDims& first = shape_only.layer(0).dims;
  const int64_t first_layer = 2 * first.output_elements() * first.in_channels * 9;
  return batch * (3 * forward_flops_per_image() - first_layer);
}

using OpsFactory = std::function<std::unique_ptr<seednet::ConvOps>(std::unique_ptr<convjit::Runtime>&)>;

// The process policy (CONVJIT_* variables), with the given backend unless that is Auto.
std::unique_ptr<seednet::ConvOps> convjit_ops(std::unique_ptr<convjit::Runtime>& runtime, convjit::Backend backend) {
  convjit::Policy p = convjit::Policy::from_environment();
  if (backend != convjit::Backend::Auto) p.backend = backend;
  runtime = std::make_unique<convjit::Runtime>(p);
  return std::make_unique<seednet::ConvjitOps>(*runtime);
}

void step(seednet::SeedNetwork& net, const seednet::Batch& b) {
  benchmark::DoNotOptimize(net.forward(b.x.data(), b.labels.data(), b.size));
  net.backward(b.x.data(), false);
  benchmark::ClobberMemory();
}

void bm_seed_step(benchmark::State& st, OpsFactory make) {
  std::unique_ptr<convjit::Runtime> runtime;
  std::unique_ptr<seednet::ConvOps> ops = make(runtime);
  if (!ops) {
    st.SkipWithError("not built with this library");
    return;
  }
  const int64_t batch = st.range(0);
  seednet::SeedNetwork net(batch, 1, ops.get());
  const seednet::Batch b = seednet::random_batch(batch, 7);
  const int64_t warm = runtime ? std::max<int64_t>(2, runtime->policy().hot_threshold + 1) : 2;
  for (int64_t i = 0; i < warm; ++i) step(net, b);
  if (runtime) runtime->wait_for_compiles();
  step(net, b);
  for (auto _ : st) step(net, b);
  st.SetItemsProcessed(st.iterations() * batch);  // images/s
  st.counters["GFLOP/s"] = benchmark::Counter(double(training_step_flops(batch)) * double(st.iterations()) * 1e-9,
                                              benchmark::Counter::kIsRate);
  if (runtime) {
    int64_t jit_calls = 0, all_calls = 0;
    for (const convjit::ConfigStats& c : runtime->stats().configurations) {
      jit_calls += c.calls_jit;
      all_calls += c.calls_generic + c.calls_jit;
    }
    st.counters["jit_share"] = all_calls ? double(jit_calls) / double(all_calls) : 0.0;
  }
}

// Manual time: a fresh library state per iteration, to the first loss ("first_forward_ms") and
// to the first gradient ("first_gradient_ms", forward included), as a user's first call sees.
void bm_seed_first_step(benchmark::State& st, OpsFactory make) {
  const seednet::Batch b = seednet::random_batch(5, 7);  // the design's first-result batch
  double forward_ms = 0, gradient_ms = 0;
  for (auto _ : st) {
    std::unique_ptr<convjit::Runtime> runtime;
    std::unique_ptr<seednet::ConvOps> ops = make(runtime);
    if (!ops) {
      st.SkipWithError("not built with this library");
      return;
    }
    seednet::SeedNetwork net(b.size, 1, ops.get());
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(net.forward(b.x.data(), b.labels.data(), b.size));
    const auto forward_done = std::chrono::steady_clock::now();
    net.backward(b.x.data(), false);
    const auto gradient_done = std::chrono::steady_clock::now();
    const double f = std::chrono::duration<double, std::milli>(forward_done - start).count();
    const double g = std::chrono::duration<double, std::milli>(gradient_done - start).count();
    forward_ms += f;
    gradient_ms += g;
    st.SetIterationTime(g * 1e-3);
  }
  st.counters["first_forward_ms"] = forward_ms / double(st.iterations());
  st.counters["first_gradient_ms"] = gradient_ms / double(st.iterations());
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      char* end = nullptr;
      const long t = std::strtol(argv[i] + 10, &end, 10);
      if (end == argv[i] + 10 || *end != '\0' || t < 1 || t > 1024) {
        std::fprintf(stderr, "convjit_seed_bench: --threads wants a positive integer, got '%s'\n", argv[i] + 10);
        return 2;
      }
      threads = int(t);
    } else {
      rest.push_back(argv[i]);
    }
  }
  convjit::set_num_threads(threads);
  omp_set_num_threads(threads);  // oneDNN's OpenMP runtime

  const std::pair<const char*, OpsFactory> factories[] = {
      {"generic", [](auto& rt) { return convjit_ops(rt, convjit::Backend::None); }},
      {"auto", [](auto& rt) { return convjit_ops(rt, convjit::Backend::Auto); }},
      {"llvm", [](auto& rt) { return convjit_ops(rt, convjit::Backend::Llvm); }},
      {"onednn", [](auto&) { return convjit_bench::make_onednn_seed_ops(); }},
  };
  for (const auto& [name, make] : factories) {
    benchmark::RegisterBenchmark((std::string("seed_step/") + name).c_str(), bm_seed_step, make)
        ->Arg(seednet::kDesignBatch)
        ->Arg(32);
    benchmark::RegisterBenchmark((std::string("seed_first_step/") + name).c_str(), bm_seed_first_step, make)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }

  int bargc = int(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&bargc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, rest.data())) return 2;
  benchmark::AddCustomContext("convjit_bench_threads", std::to_string(threads));
  benchmark::AddCustomContext("step_gflop_per_image", std::to_string(double(training_step_flops(1)) * 1e-9));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
