// convjit_costs: what the tiers cost beyond the kernels, per the JIT issue's targets.
//
//   compile/<kernel>        Xbyak compile latency of each kernel the shapes of shapes.json and the
//                           seed network need (µs; target <= 50)
//   dispatch/<shape>/...    one call through a Runtime (validate, configuration hash, detector
//                           lookup and counters, sampled timing) against the same work handed
//                           straight to the driver, and validation alone: runtime - driver -
//                           validate is the per-call dispatch overhead (ns; target <= 50)
//   cold/<shape>            a fresh configuration's first call, against the generic tier's
//                           steady state (target: no slower)
//
//   convjit_costs [--shapes=PATH] [Google Benchmark flags]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <convjit/convjit.hpp>
#include <convjit/runtime.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "conv_forward.hpp"
#include "select_tier.hpp"
#include "geometry.hpp"
#include "shapes.hpp"

namespace cb = convjit_bench;
using convjit::Layout;

namespace {

struct Problem {
  std::string name;
  convjit::ConvDims dims;
  cb::Buffer x, w, y;
  explicit Problem(const std::string& n, const convjit::ConvDims& d)
      : name(n),
        dims(d),
        x(size_t(d.input_elements())),
        w(size_t(d.weight_elements())),
        y(size_t(d.output_elements())) {
    cb::fill_random(x, 1);
    cb::fill_random(w, 2);
  }
};

convjit::Policy policy(convjit::Backend backend) {
  convjit::Policy p;
  p.backend = backend;
  p.hot_threshold = 0;
  p.async = false;
  p.num_threads = 1;
  return p;
}

using BackendFactory = std::unique_ptr<convjit::jit::Backend> (*)();

// The backends built in, by name.
std::vector<std::pair<std::string, BackendFactory>> built_backends() {
  std::vector<std::pair<std::string, BackendFactory>> backends;
#if defined(CONVJIT_HAVE_XBYAK)
  backends.emplace_back("xbyak", convjit::jit::make_xbyak_backend);
#endif
#if defined(CONVJIT_HAVE_LLVM)
  backends.emplace_back("llvm", convjit::jit::make_llvm_backend);
#endif
  return backends;
}

// Compile latency: a fresh backend compile of the key, every iteration (no cache involved).
void bm_compile(benchmark::State& st, BackendFactory make, convjit::jit::SpecKey key) {
  auto backend = make();
  if (std::string why = backend->unavailable_reason(); !why.empty()) {
    st.SkipWithError(why.c_str());
    return;
  }
  size_t bytes = 0;
  for (auto _ : st) {
    convjit::jit::CompiledKernel kernel;
    std::string error;
    if (!backend->compile(key, &kernel, &error)) {
      st.SkipWithError(error.c_str());
      return;
    }
    bytes = kernel.code_bytes;
    benchmark::DoNotOptimize(kernel.kernel.compute);
  }
  st.counters["code_bytes"] = double(bytes);
}

// The runtime's per-call path, or the driver alone on the kernel the runtime chose.
void bm_dispatch(benchmark::State& st, Problem* p, convjit::Backend backend, bool through_runtime) {
  convjit::Runtime runtime(policy(backend));
  runtime.conv_forward(p->dims, p->x.data(), p->w.data(), nullptr, convjit::Activation::Identity, p->y.data());
  const convjit::RuntimeStats stats = runtime.stats();
  const convjit_conv_params params = p->dims.to_c();
  convjit::detail::ConvGeometry g;
  if (!convjit::detail::make_conv_geometry(params, &g).ok()) {
    st.SkipWithError("invalid dims");
    return;
  }
  // The driver alone needs the compiled kernel: compile it the same way, outside the runtime.
  convjit::jit::CompiledKernel compiled;
  const convjit_conv_kernel* kernel = nullptr;
#if defined(CONVJIT_HAVE_XBYAK)
  if (backend != convjit::Backend::None && !stats.configurations.empty() && stats.configurations[0].state == "jit") {
    std::string error;
    const std::string& ran = stats.configurations[0].kernel;  // the ISA the runtime chose
    const bool avx512 = ran.size() > 8 && ran.compare(ran.size() - 8, 8, "__avx512") == 0;
    const auto key = convjit::jit::make_spec_key(g, params.rank, false,
                                                 avx512 ? convjit::jit::Isa::Avx512 : convjit::jit::Isa::Avx2Fma, false);
    if (convjit::jit::make_xbyak_backend()->compile(key, &compiled, &error)) kernel = &compiled.kernel;
  }
#endif
  for (auto _ : st) {
    if (through_runtime) {
      runtime.conv_forward(p->dims, p->x.data(), p->w.data(), nullptr, convjit::Activation::Identity, p->y.data());
    } else {
      convjit::detail::run_conv_forward(g, convjit::detail::select_tier(g, kernel), 1, p->x.data(), p->w.data(),
                                        nullptr, false, p->y.data());
    }
    benchmark::ClobberMemory();
  }
  st.SetLabel(kernel ? compiled.name : "generic");
}

// Validation alone, which every tier's call does too: the dispatch overhead proper is
// runtime - driver - this.
void bm_validate(benchmark::State& st, Problem* p) {
  const convjit_conv_params params = p->dims.to_c();
  for (auto _ : st) {
    convjit::detail::ConvGeometry g;
    benchmark::DoNotOptimize(convjit::detail::validate_conv_forward(&params, p->x.data(), p->w.data(),
                                                                    CONVJIT_ACT_IDENTITY, p->y.data(), &g));
  }
}

// A fresh configuration's first call (default policy: generic, compile requested in the
// background at the threshold) against the generic tier's steady state.
void bm_cold(benchmark::State& st, Problem* p) {
  using clock = std::chrono::steady_clock;
  double first = 0, steady = 0;
  for (auto _ : st) {
    convjit::Policy cold_policy = policy(convjit::Backend::Auto);
    cold_policy.hot_threshold = 2;
    cold_policy.async = true;
    convjit::Runtime cold(cold_policy), generic(policy(convjit::Backend::None));
    auto t0 = clock::now();
    cold.conv_forward(p->dims, p->x.data(), p->w.data(), nullptr, convjit::Activation::Identity, p->y.data());
    first = std::chrono::duration<double>(clock::now() - t0).count();
    generic.conv_forward(p->dims, p->x.data(), p->w.data(), nullptr, convjit::Activation::Identity, p->y.data());
    std::vector<double> times;
    for (int i = 0; i < 9; ++i) {
      t0 = clock::now();
      generic.conv_forward(p->dims, p->x.data(), p->w.data(), nullptr, convjit::Activation::Identity, p->y.data());
      times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    }
    std::nth_element(times.begin(), times.begin() + 4, times.end());
    steady = times[4];
    st.SetIterationTime(first);
  }
  st.counters["first_us"] = first * 1e6;
  st.counters["generic_steady_us"] = steady * 1e6;
  st.counters["first_over_steady"] = steady > 0 ? first / steady : 0;
}

std::vector<std::unique_ptr<Problem>> g_problems;

void register_all(const cb::ShapeSet& set) {
  // The seed network's first layer joins the shapes of shapes.json.
  convjit::ConvDims seed;
  seed.batch = 5;
  seed.in_size = {28, 28, 1};
  seed.kernel = {3, 3, 1};
  seed.out_channels = 2;
  g_problems.push_back(std::make_unique<Problem>("seed_layer1", seed));
  // Next to no work (8 outputs of a 1x1 convolution): what is left is the call's fixed cost.
  convjit::ConvDims tiny;
  tiny.rank = 1;
  tiny.in_size = {8, 1, 1};
  g_problems.push_back(std::make_unique<Problem>("tiny_1x8", tiny));
  for (const cb::ConvShape& s : set.conv) {
    for (Layout l : {Layout::NCHW, Layout::NHWC}) {
      g_problems.push_back(std::make_unique<Problem>(s.name + (l == Layout::NHWC ? "/nhwc" : "/nchw"), s.dims(l)));
    }
  }
  std::map<std::string, convjit::jit::SpecKey> keys;  // one compile benchmark per distinct kernel
  for (auto& p : g_problems) {
    convjit::detail::ConvGeometry g;
    const convjit_conv_params params = p->dims.to_c();
    if (!convjit::detail::make_conv_geometry(params, &g).ok()) continue;
    for (convjit::jit::Isa isa : {convjit::jit::Isa::Avx2Fma, convjit::jit::Isa::Avx512}) {
      const auto key = convjit::jit::make_spec_key(g, params.rank, false, isa, false);
      keys.emplace(key.name(), key);
      if (convjit::detail::runs_depthwise_rows(g)) {  // what the runtime keys for Xbyak
        const auto rows = convjit::jit::make_depthwise_spec_key(g, params.rank, false, isa);
        keys.emplace(rows.name(), rows);
      }
    }
  }
  for (const auto& [backend, make] : built_backends()) {
    for (const auto& [name, key] : keys) {
      if (backend == "llvm" && key.layout != CONVJIT_NCHW) continue;  // it generates NCHW kernels only
      if (backend == "llvm" && key.isa != convjit::jit::Isa::Avx2Fma) continue;  // and AVX2 ones
      if (backend == "llvm" && key.depthwise_groups) continue;                   // and no depthwise rows
      benchmark::RegisterBenchmark(("compile/" + backend + "/" + name).c_str(), bm_compile, make, key)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (auto& p : g_problems) {
    if (p->name != "seed_layer1" && p->name != "tiny_1x8" && p->name.rfind("seed_chain_1", 0) != 0 &&
        p->name.rfind("resnet_3x3_56", 0) != 0)
      continue;
    benchmark::RegisterBenchmark(("dispatch/" + p->name + "/validate").c_str(), bm_validate, p.get())
        ->Unit(benchmark::kNanosecond);
    for (auto [backend, tier] :
         {std::pair{convjit::Backend::None, "generic"}, std::pair{convjit::Backend::Xbyak, "xbyak"}}) {
      for (bool runtime : {true, false}) {
        const std::string name = "dispatch/" + p->name + "/" + tier + (runtime ? "/runtime" : "/driver");
        benchmark::RegisterBenchmark(name.c_str(), bm_dispatch, p.get(), backend, runtime)
            ->Unit(benchmark::kNanosecond);
      }
    }
  }
  for (auto& p : g_problems) {
    if (p->name.find("/nhwc") != std::string::npos) continue;
    benchmark::RegisterBenchmark(("cold/" + p->name).c_str(), bm_cold, p.get())
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes = std::getenv("CONVJIT_SHAPES") ? std::getenv("CONVJIT_SHAPES") : "";
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--shapes=", 9) == 0)
      shapes = argv[i] + 9;
    else
      rest.push_back(argv[i]);
  }
  int rest_argc = int(rest.size());
  try {
    register_all(cb::load_shapes(shapes));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convjit_costs: %s\n", e.what());
    return 1;
  }
  benchmark::Initialize(&rest_argc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
