// convjit_bench: per shape of shapes.json, convjit's forward conv and pooling against a naive loop
// nest, im2col + OpenBLAS (NNlib's method) and oneDNN, plus the cost of a configuration's first call.
//
//   convjit_bench [--shapes=PATH] [--threads=N] [--check | --check-only] [Google Benchmark flags]
//
// --shapes   shapes file (else $CONVJIT_SHAPES, else bench/shapes.json as built in)
// --threads  threads for every library in the run: convjit::set_num_threads, omp_set_num_threads
//            (oneDNN's OpenMP runtime) and openblas_set_num_threads (else $CONVJIT_BENCH_THREADS,
//            else 1). The naive loops are single-threaded whatever N is.
// --check    before timing, compare every method with a double-precision oracle and print the
//            errors; --check-only exits after that (status 1 if anything is off).
//
// Benchmark names: conv_fwd/<shape>/<nchw|nhwc>/<method>, first_call/<shape>,
// pool_fwd/<shape>/<nchw|nhwc>/<method>, and the gradients' (bench/backward.cpp):
// conv_bwd_data/..., conv_bwd_filter/..., pool_bwd/.... bench/summarize.py turns the JSON output
// into tables.
//
// convjit's tiers: `generic` runs a Runtime whose policy has no backend (tier 0 only); `xbyak` and
// `llvm` run a Runtime of that backend that compiles on first sight, inline, and never declines
// (so the specialized kernel itself is timed, compiled before the timed loop); `auto` is the free
// function on the process default runtime (CONVJIT_* environment), after its hot threshold and
// compile: what a user gets in steady state, including any "declined, generic is faster" choice.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <convjit/convjit.hpp>
#include <convjit/runtime.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backward.hpp"
#include "fma_peak.hpp"
#include "im2col_openblas.hpp"
#include "naive.hpp"
#include "onednn.hpp"
#include "shapes.hpp"

namespace cb = convjit_bench;
using convjit::Layout;

namespace {

int g_threads = 1;
// A convjit tier: its backend, and the ISA cap of its kernels (Auto: the host's widest).
struct Tier {
  convjit::Backend backend;
  convjit::Isa max_isa = convjit::Isa::Auto;
};
std::vector<Tier> g_tiers{{convjit::Backend::None}};  // plus the usable JIT backends

const char* layout_name(Layout l) { return l == Layout::NHWC ? "nhwc" : "nchw"; }

const char* backend_name(convjit::Backend b) {
  switch (b) {
    case convjit::Backend::None: return "generic";
    case convjit::Backend::Xbyak: return "xbyak";
    case convjit::Backend::Llvm: return "llvm";
    default: return "auto";
  }
}

// "generic", "xbyak", "llvm"; a tier capped below the host's ISA adds it: "xbyak_avx2".
std::string tier_name(const Tier& t) {
  const char* cap = t.max_isa == convjit::Isa::Avx2 ? "_avx2" : t.max_isa == convjit::Isa::Avx512 ? "_avx512" : "";
  return backend_name(t.backend) + std::string(cap);
}

// One runtime per tier for the whole process. Backend::None is tier 0 only.
convjit::Runtime& tier_runtime(const Tier& t) {
  static std::map<std::pair<int, int>, std::unique_ptr<convjit::Runtime>> runtimes;
  auto& r = runtimes[{int(t.backend), int(t.max_isa)}];
  if (!r) {
    convjit::Policy p = convjit::Policy::from_environment();
    p.backend = t.backend;
    if (t.max_isa != convjit::Isa::Auto) p.max_isa = t.max_isa;  // else CONVJIT_MAX_ISA's
    p.hot_threshold = 0;
    p.async = false;
    p.decline_slower = false;
    p.num_threads = 0;
    r = std::make_unique<convjit::Runtime>(p);
  }
  return *r;
}

// "" when the backend is usable on this host and build, else why not.
std::string tier_unavailable(const Tier& t) {
  const convjit::RuntimeStats st = tier_runtime(t).stats();
  if (st.backend != "none" && !st.backend.empty()) return {};
  return st.backend_unavailable_reason.empty() ? std::string("not available") : st.backend_unavailable_reason;
}

// The runtime's record of a forward configuration (identity activation, no bias), if any.
bool find_config(const convjit::Runtime& rt, const convjit::ConvDims& dims, convjit::ConfigStats* out) {
  for (const convjit::ConfigStats& c : rt.stats().configurations)
    if (c.op == convjit::Op::ConvForward && cb::same_dims(c.dims, dims) &&
        c.activation == convjit::Activation::Identity && !c.has_bias) {
      *out = c;
      return true;
    }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Data: random once per (shape, layout) and kept while the benchmarks of that shape run (they are
// registered consecutively), so memory stays bounded by the largest shape.

struct ConvData {
  std::string key;
  cb::Buffer x, w, b, y;
};

ConvData& conv_data(const cb::ConvShape& s, Layout l) {
  static ConvData d;
  const std::string key = s.name + "/" + layout_name(l);
  if (d.key != key) {
    d = ConvData{};
    d.key = key;
    d.x = cb::Buffer(s.x_elements());
    d.w = cb::Buffer(s.w_elements());
    d.b = cb::Buffer(s.oc);
    d.y = cb::Buffer(s.y_elements());
    cb::fill_random(d.x, cb::seed_of(key + "/x"));
    cb::fill_random(d.w, cb::seed_of(key + "/w"));
    cb::fill_random(d.b, cb::seed_of(key + "/b"));
  }
  return d;
}

struct PoolData {
  std::string key;
  cb::Buffer x, y;
};

PoolData& pool_data(const cb::PoolShape& s, Layout l) {
  static PoolData d;
  const std::string key = s.name + "/" + layout_name(l);
  if (d.key != key) {
    d = PoolData{};
    d.key = key;
    d.x = cb::Buffer(s.x_elements());
    d.y = cb::Buffer(s.y_elements());
    cb::fill_random(d.x, cb::seed_of(key + "/x"));
  }
  return d;
}

void conv_counters(benchmark::State& st, const cb::ConvShape& s) {
  st.counters["GFLOP/s"] = benchmark::Counter(s.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["MFLOP"] = benchmark::Counter(s.flops() * 1e-6);
  st.SetItemsProcessed(st.iterations() * s.y_elements());
}

void pool_counters(benchmark::State& st, const cb::PoolShape& s) {
  st.SetItemsProcessed(st.iterations() * s.y_elements());
  st.SetBytesProcessed(st.iterations() * (s.x_elements() + s.y_elements()) * int64_t(sizeof(float)));
}

// ---------------------------------------------------------------------------------------------
// Conv forward.

void bm_conv_tier(benchmark::State& st, const cb::ConvShape* s, Layout l, Tier t) {
  ConvData& d = conv_data(*s, l);
  const convjit::ConvDims dims = s->dims(l);
  convjit::Runtime& rt = tier_runtime(t);
  try {
    rt.conv_forward(dims, d.x.data(), d.w.data(), nullptr, convjit::Activation::Identity, d.y.data());  // compiles
    rt.wait_for_compiles();
    rt.conv_forward(dims, d.x.data(), d.w.data(), nullptr, convjit::Activation::Identity, d.y.data());  // warm-up
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  if (t.backend != convjit::Backend::None) {
    convjit::ConfigStats c;
    if (!find_config(rt, dims, &c)) {
      st.SkipWithError("configuration missing from the runtime's stats");
      return;
    }
    if (c.state != "jit") {
      st.SkipWithError((tier_name(t) + ": " + c.state + (c.failure.empty() ? "" : ": " + c.failure)).c_str());
      return;
    }
    st.SetLabel(c.kernel);
  }
  for (auto _ : st) {
    rt.conv_forward(dims, d.x.data(), d.w.data(), nullptr, convjit::Activation::Identity, d.y.data());
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  conv_counters(st, *s);
}

// The free function on the process default runtime, past its hot threshold and compile.
void bm_conv_auto(benchmark::State& st, const cb::ConvShape* s, Layout l) {
  ConvData& d = conv_data(*s, l);
  const convjit::ConvDims dims = s->dims(l);
  convjit::Runtime& rt = convjit::Runtime::process_default();
  try {
    const int64_t warm = std::max<int64_t>(2, rt.policy().hot_threshold + 1);
    for (int64_t i = 0; i < warm; ++i) convjit::conv_forward(dims, d.x.data(), d.w.data(), d.y.data());
    rt.wait_for_compiles();
    convjit::conv_forward(dims, d.x.data(), d.w.data(), d.y.data());
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  convjit::ConfigStats c;
  if (find_config(rt, dims, &c)) st.SetLabel(c.state == "jit" ? c.kernel : c.state);
  for (auto _ : st) {
    convjit::conv_forward(dims, d.x.data(), d.w.data(), d.y.data());
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  conv_counters(st, *s);
}

void bm_conv_naive(benchmark::State& st, const cb::ConvShape* s) {
  ConvData& d = conv_data(*s, Layout::NCHW);
  for (auto _ : st) {
    cb::naive_conv_forward(*s, d.x.data(), d.w.data(), d.y.data());
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  conv_counters(st, *s);
}

void bm_conv_im2col(benchmark::State& st, const cb::ConvShape* s) {
  ConvData& d = conv_data(*s, Layout::NCHW);
  cb::Im2colConv conv(*s);
  conv.run(d.x.data(), d.w.data(), d.y.data());
  for (auto _ : st) {
    conv.run(d.x.data(), d.w.data(), d.y.data());
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  conv_counters(st, *s);
}

void bm_conv_onednn(benchmark::State& st, const cb::ConvShape* s, cb::DnnlConvKind kind) {
  const bool nhwc = kind == cb::DnnlConvKind::PlainNHWC || kind == cb::DnnlConvKind::NhwcAnyWeights;
  ConvData& d = conv_data(*s, nhwc ? Layout::NHWC : Layout::NCHW);
  std::unique_ptr<cb::OnednnConv> conv;
  try {
    conv = std::make_unique<cb::OnednnConv>(*s, kind, d.x.data(), d.w.data(), d.y.data());
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  // oneDNN has no fast path for plain nhwc activations with ohwi weights: it falls back to its
  // reference kernel (~0.1 GFLOP/s). Timing that on the big shapes costs minutes and says nothing new.
  if (conv->impl().rfind("ref", 0) == 0 && s->flops() > 2e7) {
    st.SkipWithError(("oneDNN chose " + conv->impl() + "; not timed above 20 MFLOP").c_str());
    return;
  }
  conv->run();
  for (auto _ : st) {
    conv->run();
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  st.SetLabel(conv->impl());
  conv_counters(st, *s);
}

// The first call of a configuration this process has not seen, timed alone, against the median of
// the calls right after it. Each repetition takes a fresh configuration: the shape with one of the
// 7 post-op / mode variants the steady-state benchmarks never use (bit 0: convolution mode,
// bit 1: relu, bit 2: bias); after 7 repetitions the label says the configuration was seen before.
void bm_first_call(benchmark::State& st, const cb::ConvShape* s) {
  static std::unordered_map<std::string, int> used;
  const int v = used[s->name]++;
  const bool fresh = v < 7;
  const int code = fresh ? v + 1 : 7;
  ConvData& d = conv_data(*s, Layout::NCHW);
  const convjit::ConvDims dims =
      s->dims(Layout::NCHW, (code & 1) ? convjit::Mode::Convolution : convjit::Mode::CrossCorrelation);
  const convjit::Activation act = (code & 2) ? convjit::Activation::Relu : convjit::Activation::Identity;
  const float* bias = (code & 4) ? d.b.data() : nullptr;
  using clock = std::chrono::steady_clock;
  double first = 0, later = 0;
  for (auto _ : st) {
    try {
      const auto t0 = clock::now();
      convjit::conv_forward(dims, d.x.data(), d.w.data(), bias, act, d.y.data());
      const auto t1 = clock::now();
      first = std::chrono::duration<double>(t1 - t0).count();
      std::vector<double> times;
      const auto start = clock::now();
      while (times.size() < 3 ||
             (times.size() < 50 && std::chrono::duration<double>(clock::now() - start).count() < 0.2)) {
        const auto a = clock::now();
        convjit::conv_forward(dims, d.x.data(), d.w.data(), bias, act, d.y.data());
        times.push_back(std::chrono::duration<double>(clock::now() - a).count());
      }
      std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
      later = times[times.size() / 2];
    } catch (const std::exception& e) {
      st.SkipWithError(e.what());
      break;
    }
    st.SetIterationTime(first);
  }
  st.counters["first_us"] = first * 1e6;
  st.counters["later_us"] = later * 1e6;
  st.counters["first_over_later"] = later > 0 ? first / later : 0.0;
  if (!fresh) st.SetLabel("configuration seen before");
}

// ---------------------------------------------------------------------------------------------
// Pooling.

// generic: tier 0's runtime; auto: the process default runtime in steady state (its compiled
// rows where the backend compiles them), labelled with its kernel or state.
void bm_pool_convjit(benchmark::State& st, const cb::PoolShape* s, Layout l, bool auto_tier) {
  PoolData& d = pool_data(*s, l);
  const convjit::PoolDims dims = s->dims(l);
  const bool max = s->op == "max";
  convjit::Runtime& rt = auto_tier ? convjit::Runtime::process_default() : tier_runtime({convjit::Backend::None});
  auto run = [&] {
    if (max)
      rt.maxpool_forward(dims, d.x.data(), d.y.data());
    else
      rt.meanpool_forward(dims, d.x.data(), d.y.data());
  };
  try {
    const int64_t warm = std::max<int64_t>(2, rt.policy().hot_threshold + 1);
    for (int64_t i = 0; i < warm; ++i) run();
    rt.wait_for_compiles();
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  if (auto_tier) {
    st.SetLabel(cb::pool_runtime_label(rt, max ? convjit::Op::MaxPoolForward : convjit::Op::MeanPoolForward, dims));
  }
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  pool_counters(st, *s);
}

void bm_pool_naive(benchmark::State& st, const cb::PoolShape* s) {
  PoolData& d = pool_data(*s, Layout::NCHW);
  const bool max = s->op == "max";
  for (auto _ : st) {
    if (max)
      cb::naive_maxpool_forward(*s, d.x.data(), d.y.data());
    else
      cb::naive_meanpool_forward(*s, d.x.data(), d.y.data());
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  pool_counters(st, *s);
}

void bm_pool_onednn(benchmark::State& st, const cb::PoolShape* s, Layout l) {
  PoolData& d = pool_data(*s, l);
  std::unique_ptr<cb::OnednnPool> pool;
  try {
    pool = std::make_unique<cb::OnednnPool>(*s, l == Layout::NHWC, d.x.data(), d.y.data());
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  pool->run();
  for (auto _ : st) {
    pool->run();
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  st.SetLabel(pool->impl());
  pool_counters(st, *s);
}

// ---------------------------------------------------------------------------------------------
// --check: every method against the oracle.

struct Checker {
  int failures = 0;
  std::vector<Tier> tiers;  // generic plus the usable JIT backends

  // max |got - ref| / max |ref|, with the tolerance of the design (1e-4, scaled for long reductions).
  void compare(const std::string& what, const float* got, const float* ref, int64_t count, int64_t reduction) {
    double max_ref = 0, max_err = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < count; ++i) {
      max_ref = std::max(max_ref, std::fabs(double(ref[i])));
      const double e = std::isnan(got[i]) ? INFINITY : std::fabs(double(got[i]) - double(ref[i]));
      if (e > max_err) {
        max_err = e;
        worst = i;
      }
    }
    const double rel = max_err / std::max(max_ref, 1e-30);
    const double tol = 1e-4 * std::max(1.0, std::sqrt(double(reduction)) / 10.0);
    const bool ok = rel <= tol;
    if (!ok) ++failures;
    std::printf("  %-44s rel.err %.2e (tol %.1e) %s", what.c_str(), rel, tol, ok ? "ok" : "FAIL");
    if (!ok) std::printf("  worst at %lld: got %g want %g", (long long)worst, double(got[worst]), double(ref[worst]));
    std::printf("\n");
    std::fflush(stdout);
  }

  template <typename F>
  void guarded(const std::string& what, F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      ++failures;
      std::printf("  %-44s ERROR %s\n", what.c_str(), e.what());
    }
  }

  void conv(const cb::ConvShape& s) {
    std::printf("%s (%.1f MFLOP)\n", s.name.c_str(), s.flops() * 1e-6);
    const int64_t K = (s.ic / s.groups) * s.k_spatial();
    const int64_t sp_in = s.in_spatial(), sp_out = s.out_spatial(), sp_k = s.k_spatial();
    cb::Buffer x(s.x_elements()), w(s.w_elements()), b(s.oc), ref(s.y_elements()), y(s.y_elements());
    cb::fill_random(x, 1);
    cb::fill_random(w, 2);
    cb::fill_random(b, 3);
    cb::reference_conv_forward(s, false, x.data(), w.data(), nullptr, false, ref.data());
    cb::Buffer xl(s.x_elements()), wl(s.w_elements()), yl(s.y_elements());
    cb::to_channels_last(x.data(), s.n, s.ic, sp_in, xl.data());
    cb::to_channels_last(w.data(), s.oc, s.ic / s.groups, sp_k, wl.data());
    auto reset = [&] { std::fill(y.data(), y.data() + y.size(), NAN); };

    for (const Tier& t : tiers)
      for (Layout l : {Layout::NCHW, Layout::NHWC}) {
        const std::string what = tier_name(t) + " " + layout_name(l);
        guarded(what, [&] {
          convjit::Runtime& rt = tier_runtime(t);
          const bool nhwc = l == Layout::NHWC;
          cb::Buffer& out = nhwc ? yl : y;
          std::fill(out.data(), out.data() + out.size(), NAN);
          rt.conv_forward(s.dims(l), nhwc ? xl.data() : x.data(), nhwc ? wl.data() : w.data(), nullptr,
                          convjit::Activation::Identity, out.data());
          rt.wait_for_compiles();
          if (t.backend != convjit::Backend::None) {  // the first call may have run generic while compiling
            std::fill(out.data(), out.data() + out.size(), NAN);
            rt.conv_forward(s.dims(l), nhwc ? xl.data() : x.data(), nhwc ? wl.data() : w.data(), nullptr,
                            convjit::Activation::Identity, out.data());
          }
          if (nhwc) cb::from_channels_last(yl.data(), s.n, s.oc, sp_out, y.data());
          std::string label = what;
          convjit::ConfigStats c;
          if (t.backend != convjit::Backend::None && find_config(rt, s.dims(l), &c))
            label += " [" + (c.state == "jit" ? c.kernel : c.state) + "]";
          compare(label, y.data(), ref.data(), y.size(), K);
        });
      }
    guarded("naive", [&] {
      reset();
      cb::naive_conv_forward(s, x.data(), w.data(), y.data());
      compare("naive (float loop nest)", y.data(), ref.data(), y.size(), K);
    });
    if (cb::have_openblas())
      guarded("im2col_openblas", [&] {
        reset();
        cb::Im2colConv conv(s);
        conv.run(x.data(), w.data(), y.data());
        compare("im2col_openblas", y.data(), ref.data(), y.size(), K);
      });
    if (cb::have_onednn()) {
      guarded("onednn_plain nchw", [&] {
        reset();
        cb::OnednnConv conv(s, cb::DnnlConvKind::PlainNCHW, x.data(), w.data(), y.data());
        conv.run();
        compare("onednn_plain nchw [" + conv.impl() + "]", y.data(), ref.data(), y.size(), K);
      });
      guarded("onednn_plain nhwc", [&] {
        std::fill(yl.data(), yl.data() + yl.size(), NAN);
        cb::OnednnConv conv(s, cb::DnnlConvKind::PlainNHWC, xl.data(), wl.data(), yl.data());
        conv.run();
        cb::from_channels_last(yl.data(), s.n, s.oc, sp_out, y.data());
        compare("onednn_plain nhwc [" + conv.impl() + "]", y.data(), ref.data(), y.size(), K);
      });
      guarded("onednn_wany nhwc", [&] {
        std::fill(yl.data(), yl.data() + yl.size(), NAN);
        cb::OnednnConv conv(s, cb::DnnlConvKind::NhwcAnyWeights, xl.data(), wl.data(), yl.data());
        conv.run();
        cb::from_channels_last(yl.data(), s.n, s.oc, sp_out, y.data());
        compare("onednn_wany nhwc [" + conv.impl() + "]", y.data(), ref.data(), y.size(), K);
      });
      guarded("onednn_blocked", [&] {
        reset();
        cb::OnednnConv conv(s, cb::DnnlConvKind::Blocked, x.data(), w.data(), y.data());
        conv.run();
        conv.output_to_user();
        compare("onednn_blocked [" + conv.impl() + "]", y.data(), ref.data(), y.size(), K);
      });
    }
    // The fused post-ops and convolution mode, on every tier.
    if (s.flops() < 4e8) {
      cb::reference_conv_forward(s, true, x.data(), w.data(), b.data(), true, ref.data());
      for (const Tier& tier : tiers)
        for (Layout l : {Layout::NCHW, Layout::NHWC}) {
          const std::string what = tier_name(tier) + " " + layout_name(l) + " conv-mode+bias+relu";
          guarded(what, [&] {
            convjit::Runtime& rt = tier_runtime(tier);
            const bool nhwc = l == Layout::NHWC;
            cb::Buffer& out = nhwc ? yl : y;
            const convjit::ConvDims dims = s.dims(l, convjit::Mode::Convolution);
            for (int call = 0; call < 2; ++call) {
              std::fill(out.data(), out.data() + out.size(), NAN);
              rt.conv_forward(dims, nhwc ? xl.data() : x.data(), nhwc ? wl.data() : w.data(), b.data(),
                              convjit::Activation::Relu, out.data());
              rt.wait_for_compiles();
            }
            if (nhwc) cb::from_channels_last(yl.data(), s.n, s.oc, sp_out, y.data());
            compare(what, y.data(), ref.data(), y.size(), K);
          });
        }
    }
  }

  void pool(const cb::PoolShape& s) {
    std::printf("%s\n", s.name.c_str());
    const bool max = s.op == "max";
    const int64_t sp_in = s.in_spatial(), sp_out = s.out_spatial();
    cb::Buffer x(s.x_elements()), ref(s.y_elements()), y(s.y_elements()), xl(s.x_elements()), yl(s.y_elements());
    cb::fill_random(x, 4);
    cb::to_channels_last(x.data(), s.n, s.c, sp_in, xl.data());
    if (max)
      cb::naive_maxpool_forward(s, x.data(), ref.data());
    else
      cb::naive_meanpool_forward(s, x.data(), ref.data());
    guarded("generic nchw", [&] {
      std::fill(y.data(), y.data() + y.size(), NAN);
      if (max)
        convjit::maxpool_forward(s.dims(Layout::NCHW), x.data(), y.data());
      else
        convjit::meanpool_forward(s.dims(Layout::NCHW), x.data(), y.data());
      compare("generic nchw", y.data(), ref.data(), y.size(), 1);
    });
    guarded("generic nhwc", [&] {
      std::fill(yl.data(), yl.data() + yl.size(), NAN);
      if (max)
        convjit::maxpool_forward(s.dims(Layout::NHWC), xl.data(), yl.data());
      else
        convjit::meanpool_forward(s.dims(Layout::NHWC), xl.data(), yl.data());
      cb::from_channels_last(yl.data(), s.n, s.c, sp_out, y.data());
      compare("generic nhwc", y.data(), ref.data(), y.size(), 1);
    });
    if (cb::have_onednn())
      for (Layout l : {Layout::NCHW, Layout::NHWC})
        guarded(std::string("onednn ") + layout_name(l), [&] {
          const bool nhwc = l == Layout::NHWC;
          cb::Buffer& out = nhwc ? yl : y;
          std::fill(out.data(), out.data() + out.size(), NAN);
          cb::OnednnPool p(s, nhwc, nhwc ? xl.data() : x.data(), out.data());
          p.run();
          if (nhwc) cb::from_channels_last(yl.data(), s.n, s.c, sp_out, y.data());
          compare(std::string("onednn ") + layout_name(l) + " [" + p.impl() + "]", y.data(), ref.data(), y.size(), 1);
        });
  }
};

// ---------------------------------------------------------------------------------------------

// convjit_bench's own flags; Google Benchmark's follow (benchmark::Initialize prints them).
void print_usage() {
  std::printf(
      "convjit_bench [--shapes=PATH] [--threads=N] [--check | --check-only] [Google Benchmark flags]\n"
      "  --shapes      shapes file (else $CONVJIT_SHAPES, else bench/shapes.json as built in)\n"
      "  --threads     threads for convjit, oneDNN and OpenBLAS (else $CONVJIT_BENCH_THREADS, else 1)\n"
      "  --check       compare every method with a double-precision oracle before timing\n"
      "  --check-only  only that; exit status 1 if anything is off\n"
      "Benchmarks: conv_fwd/<shape>/<nchw|nhwc>/<method>, first_call/<shape>, pool_fwd/<shape>/<layout>/<method>,\n"
      "conv_bwd_data/<shape>/<layout>/<method>, conv_bwd_filter/..., pool_bwd/...\n"
      "(e.g. --benchmark_filter='^conv_fwd/seed_chain_1/').\n\n");
}

bool take_flag(const char* arg, const char* name, std::string* value) {
  const std::size_t len = std::strlen(name);
  if (std::strncmp(arg, name, len) != 0) return false;
  if (arg[len] == '=') {
    *value = arg + len + 1;
    return true;
  }
  if (arg[len] == '\0') {
    value->clear();
    return true;
  }
  return false;
}

void register_all(const cb::ShapeSet& set) {
  static std::vector<cb::ConvShape> conv;
  static std::vector<cb::PoolShape> pool;
  conv = set.conv;
  pool = set.pool;
  for (const cb::ConvShape& s : conv) {
    const std::string base = "conv_fwd/" + s.name + "/";
    benchmark::RegisterBenchmark(("first_call/" + s.name).c_str(), bm_first_call, &s)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    auto convjit_tiers = [&](Layout l) {
      for (const Tier& t : g_tiers)
        benchmark::RegisterBenchmark((base + layout_name(l) + "/" + tier_name(t)).c_str(), bm_conv_tier, &s, l, t)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((base + layout_name(l) + "/auto").c_str(), bm_conv_auto, &s, l)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    };
    convjit_tiers(Layout::NCHW);
    benchmark::RegisterBenchmark((base + "nchw/naive").c_str(), bm_conv_naive, &s)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    if (cb::have_openblas())
      benchmark::RegisterBenchmark((base + "nchw/im2col_openblas").c_str(), bm_conv_im2col, &s)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    if (cb::have_onednn()) {
      benchmark::RegisterBenchmark((base + "nchw/onednn_plain").c_str(), bm_conv_onednn, &s,
                                   cb::DnnlConvKind::PlainNCHW)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((base + "any/onednn_blocked").c_str(), bm_conv_onednn, &s,
                                   cb::DnnlConvKind::Blocked)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    convjit_tiers(Layout::NHWC);
    if (cb::have_onednn()) {
      benchmark::RegisterBenchmark((base + "nhwc/onednn_plain").c_str(), bm_conv_onednn, &s,
                                   cb::DnnlConvKind::PlainNHWC)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((base + "nhwc/onednn_wany").c_str(), bm_conv_onednn, &s,
                                   cb::DnnlConvKind::NhwcAnyWeights)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  cb::register_backward_benchmarks(set);
  for (const cb::PoolShape& s : pool) {
    const std::string base = "pool_fwd/" + s.name + "/";
    for (Layout l : {Layout::NCHW, Layout::NHWC}) {
      const std::string lb = base + layout_name(l) + "/";
      for (bool auto_tier : {false, true}) {
        benchmark::RegisterBenchmark((lb + (auto_tier ? "auto" : "generic")).c_str(), bm_pool_convjit, &s, l, auto_tier)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
      if (l == Layout::NCHW)
        benchmark::RegisterBenchmark((lb + "naive").c_str(), bm_pool_naive, &s)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      if (cb::have_onednn())
        benchmark::RegisterBenchmark((lb + "onednn_plain").c_str(), bm_pool_onednn, &s, l)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes_path, threads_arg, dummy;
  bool check = false, check_only = false;
  if (const char* e = std::getenv("CONVJIT_SHAPES"); e && *e) shapes_path = e;
  if (const char* e = std::getenv("CONVJIT_BENCH_THREADS"); e && *e) threads_arg = e;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) print_usage();
    if (take_flag(argv[i], "--shapes", &v))
      shapes_path = v;
    else if (take_flag(argv[i], "--threads", &v))
      threads_arg = v;
    else if (take_flag(argv[i], "--check-only", &dummy))
      check = check_only = true;
    else if (take_flag(argv[i], "--check", &dummy))
      check = true;
    else
      rest.push_back(argv[i]);
  }
  if (!threads_arg.empty()) {
    char* end = nullptr;
    const long t = std::strtol(threads_arg.c_str(), &end, 10);
    if (end == threads_arg.c_str() || *end != '\0' || t < 1 || t > 1024) {
      std::fprintf(stderr, "convjit_bench: --threads wants a positive integer, got '%s'\n", threads_arg.c_str());
      return 2;
    }
    g_threads = static_cast<int>(t);
  }

  cb::ShapeSet set;
  try {
    set = cb::load_shapes(shapes_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convjit_bench: %s\n", e.what());
    return 2;
  }

  convjit::set_num_threads(g_threads);
  omp_set_num_threads(g_threads);
  cb::set_openblas_threads(g_threads);

  // Start the thread pools before anything is timed: the first OpenMP region of the process is
  // not the cost of any configuration.
  {
    cb::ConvShape warm;
    warm.name = "warm";
    warm.in = {8, 8, 1};
    warm.k = {3, 3, 1};
    cb::Buffer x(warm.x_elements()), w(warm.w_elements()), y(warm.y_elements());
    convjit::conv_forward(warm.dims(Layout::NHWC), x.data(), w.data(), y.data());
  }

  std::string tier_notes;
  for (convjit::Backend b : {convjit::Backend::Xbyak, convjit::Backend::Llvm}) {
    const std::string why = tier_unavailable({b});
    if (why.empty())
      g_tiers.push_back({b});
    else
      tier_notes += std::string(tier_notes.empty() ? "" : "; ") + backend_name(b) + ": " + why;
  }
  // On an AVX-512 host, Xbyak's kernels capped at AVX2 too: the same code for the narrower ISA.
  if (tier_unavailable({convjit::Backend::Xbyak}).empty() && tier_runtime({convjit::Backend::Xbyak}).stats().isa == "avx512") {
    g_tiers.push_back({convjit::Backend::Xbyak, convjit::Isa::Avx2});
  }

  if (check) {
    std::printf("convjit_bench --check: %d thread(s), shapes from %s%s%s\n", g_threads,
                cb::shapes_origin(shapes_path).c_str(),
                tier_notes.empty() ? "" : "; not checked: ", tier_notes.c_str());
    Checker c;
    c.tiers = g_tiers;
    for (const auto& s : set.conv) c.conv(s);
    for (const auto& s : set.pool) c.pool(s);
    std::printf("check: %d failure(s)\n", c.failures);
    if (check_only) return c.failures == 0 ? 0 : 1;
  }

  int bargc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&bargc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, rest.data())) return 2;
  benchmark::AddCustomContext("convjit_bench_threads", std::to_string(g_threads));
  benchmark::AddCustomContext("convjit_num_threads", std::to_string(convjit::num_threads()));
  benchmark::AddCustomContext("shapes_file", cb::shapes_origin(shapes_path));
  // The FMA peak of one core, measured now: "% peak" in summarize.py is over the ISA convjit's
  // kernels run (AVX2); the AVX-512 figure is what oneDNN may reach on this host.
  const double peak_avx2 = cb::fma_peak_gflops_avx2(), peak_avx512 = cb::fma_peak_gflops_avx512();
  benchmark::AddCustomContext("fma_peak_gflops_per_core", std::to_string(peak_avx2));
  benchmark::AddCustomContext("fma_peak_gflops_avx2", std::to_string(peak_avx2));
  benchmark::AddCustomContext("fma_peak_gflops_avx512", peak_avx512 > 0 ? std::to_string(peak_avx512) : "no AVX-512");
  {
    std::string tiers;
    for (const Tier& t : g_tiers) tiers += std::string(tiers.empty() ? "" : ",") + tier_name(t);
    benchmark::AddCustomContext("convjit_tiers", tiers);
    if (!tier_notes.empty()) benchmark::AddCustomContext("convjit_tiers_unavailable", tier_notes);
    benchmark::AddCustomContext("convjit_default_backend", convjit::Runtime::process_default().stats().backend);
  }
  benchmark::AddCustomContext("openblas", cb::have_openblas() ? "yes" : "no");
  benchmark::AddCustomContext("onednn", cb::have_onednn() ? "yes" : "no");
  for (const char* var : {"CONVJIT_BACKEND", "CONVJIT_HOT_THRESHOLD", "ONEDNN_MAX_CPU_ISA", "OMP_WAIT_POLICY"})
    if (const char* v = std::getenv(var)) benchmark::AddCustomContext(var, v);
  register_all(set);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
