// conv_bwd_data/<shape>/<layout>/<method>, conv_bwd_filter/<shape>/<layout>/<method>,
// pool_bwd/<shape>/<layout>/<method>, and pool_fwd|pool_bwd/<shape>/<layout>/copy.
//
// Methods: `generic` (a Runtime without backend: tier 0), `auto` (the process default runtime in
// steady state, past its hot threshold and compiles: backward data runs as compiled forwards where
// it can, max and mean pooling backward on compiled rows, the rest is declined to tier 0 until
// they get kernels of their own), `onednn_any` (oneDNN's backward
// primitives, format any, inputs reordered once outside the timed loop, its best ISA),
// `im2col_openblas` (NNlib's gradients, NCHW) and, for pooling, `onednn_plain` (the same layout)
// and `copy`: one memcpy moving as many bytes as the op must (read + written), the bandwidth
// bound, in the same run.
#include "backward.hpp"

#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>

#include <convjit/convjit.hpp>
#include <convjit/runtime.hpp>

#include "im2col_openblas.hpp"
#include "onednn.hpp"
#include "onednn_backward.hpp"

namespace convjit_bench {
namespace {

using convjit::Layout;

const char* layout_name(Layout l) { return l == Layout::NHWC ? "nhwc" : "nchw"; }

convjit::Runtime& generic_runtime() {
  static convjit::Runtime runtime([] {
    convjit::Policy p = convjit::Policy::from_environment();
    p.backend = convjit::Backend::None;
    return p;
  }());
  return runtime;
}

// Random inputs once per (shape, layout), kept while that shape's benchmarks run.
struct GradientData {
  std::string key;
  Buffer x, w, dy, out;
};

GradientData& gradient_data(const ConvShape& s, Layout l, ConvBackward which) {
  static GradientData d;
  const std::string key = s.name + "/" + layout_name(l) + (which == ConvBackward::Data ? "/data" : "/filter");
  if (d.key != key) {
    d = GradientData{};
    d.key = key;
    d.x = Buffer(s.x_elements());
    d.w = Buffer(s.w_elements());
    d.dy = Buffer(s.y_elements());
    d.out = Buffer(which == ConvBackward::Data ? s.x_elements() : s.w_elements());
    fill_random(d.x, seed_of(key + "/x"));
    fill_random(d.w, seed_of(key + "/w"));
    fill_random(d.dy, seed_of(key + "/dy"));
  }
  return d;
}

void conv_counters(benchmark::State& st, const ConvShape& s) {
  st.counters["GFLOP/s"] = benchmark::Counter(s.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["MFLOP"] = benchmark::Counter(s.flops() * 1e-6);
}

template <typename Call>
void timed(benchmark::State& st, Call&& call) {
  for (auto _ : st) {
    call();
    benchmark::ClobberMemory();
  }
}

// The runtime's state for the configuration (its kernel's name once compiled), for the label.
std::string runtime_label(const convjit::Runtime& rt, convjit::Op op, const convjit::ConvDims& dims) {
  for (const convjit::ConfigStats& c : rt.stats().configurations) {
    if (c.op == op && same_dims(c.dims, dims)) return c.state == "jit" ? c.kernel : c.state;
  }
  return "?";
}

// Calls call() past rt's hot threshold and its compiles, and once more: the steady state from
// here on. False (the benchmark skipped with the error) where a call threw.
template <typename Call>
bool warmed_up(benchmark::State& st, convjit::Runtime& rt, Call&& call) {
  try {
    for (int64_t i = 0; i <= rt.policy().hot_threshold; ++i) call();
    rt.wait_for_compiles();
    call();
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return false;
  }
  return true;
}

void bm_conv_backward(benchmark::State& st, const ConvShape* s, Layout l, ConvBackward which, bool use_default) {
  GradientData& d = gradient_data(*s, l, which);
  const convjit::ConvDims dims = s->dims(l);
  convjit::Runtime& rt = use_default ? convjit::Runtime::process_default() : generic_runtime();
  auto call = [&] {
    if (which == ConvBackward::Data)
      rt.conv_backward_data(dims, d.dy.data(), d.w.data(), d.out.data());
    else
      rt.conv_backward_filter(dims, d.x.data(), d.dy.data(), d.out.data());
  };
  if (!warmed_up(st, rt, call)) return;
  if (use_default) {
    st.SetLabel(runtime_label(rt, which == ConvBackward::Data ? convjit::Op::ConvBackwardData
                                                              : convjit::Op::ConvBackwardFilter,
                              dims));
  }
  timed(st, call);
  conv_counters(st, *s);
}

void bm_conv_backward_onednn(benchmark::State& st, const ConvShape* s, Layout l, ConvBackward which) {
  GradientData& d = gradient_data(*s, l, which);
  std::unique_ptr<OnednnConvBackward> prim;
  try {
    prim = which == ConvBackward::Data
               ? std::make_unique<OnednnConvBackward>(*s, which, l == Layout::NHWC, d.dy.data(), d.w.data(),
                                                      d.out.data())
               : std::make_unique<OnednnConvBackward>(*s, which, l == Layout::NHWC, d.x.data(), d.dy.data(),
                                                      d.out.data());
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  if (prim->impl().rfind("ref", 0) == 0 && s->flops() > 2e7) {  // as onednn.cpp: minutes, nothing new
    st.SkipWithError(("oneDNN chose " + prim->impl() + "; not timed above 20 MFLOP").c_str());
    return;
  }
  prim->run();
  timed(st, [&] { prim->run(); });
  st.SetLabel(prim->impl());
  conv_counters(st, *s);
}

void bm_conv_backward_im2col(benchmark::State& st, const ConvShape* s, ConvBackward which) {
  GradientData& d = gradient_data(*s, Layout::NCHW, which);
  Im2colConv conv(*s);
  auto call = [&] {
    if (which == ConvBackward::Data)
      conv.backward_data(d.dy.data(), d.w.data(), d.out.data());
    else
      conv.backward_filter(d.x.data(), d.dy.data(), d.out.data());
  };
  call();
  timed(st, call);
  conv_counters(st, *s);
}

struct PoolGradientData {
  std::string key;
  Buffer x, y, dy, dx;
};

PoolGradientData& pool_gradient_data(const PoolShape& s, Layout l) {
  static PoolGradientData d;
  const std::string key = s.name + "/" + layout_name(l);
  if (d.key != key) {
    d = PoolGradientData{};
    d.key = key;
    d.x = Buffer(s.x_elements());
    d.y = Buffer(s.y_elements());
    d.dy = Buffer(s.y_elements());
    d.dx = Buffer(s.x_elements());
    fill_random(d.x, seed_of(key + "/x"));
    fill_random(d.dy, seed_of(key + "/dy"));
    if (s.op == "max") convjit::maxpool_forward(s.dims(l), d.x.data(), d.y.data());
  }
  return d;
}

// What a pooling op must move: forward reads x and writes y; mean backward reads dy and writes
// dx; max backward also reads x and y (it finds the argmax again).
int64_t pool_bytes(const PoolShape& s, bool backward) {
  const int64_t x = s.x_elements(), y = s.y_elements();
  if (!backward) return int64_t(sizeof(float)) * (x + y);
  return int64_t(sizeof(float)) * (s.op == "max" ? 2 * x + 2 * y : x + y);
}

void bm_pool_backward(benchmark::State& st, const PoolShape* s, Layout l, bool use_default) {
  PoolGradientData& d = pool_gradient_data(*s, l);
  const convjit::PoolDims dims = s->dims(l);
  convjit::Runtime& rt = use_default ? convjit::Runtime::process_default() : generic_runtime();
  auto call = [&] {
    if (s->op == "max")
      rt.maxpool_backward(dims, d.x.data(), d.y.data(), d.dy.data(), d.dx.data());
    else
      rt.meanpool_backward(dims, d.dy.data(), d.dx.data());
  };
  if (!warmed_up(st, rt, call)) return;
  if (use_default) {
    st.SetLabel(
        pool_runtime_label(rt, s->op == "max" ? convjit::Op::MaxPoolBackward : convjit::Op::MeanPoolBackward, dims));
  }
  timed(st, call);
  st.SetBytesProcessed(st.iterations() * pool_bytes(*s, true));
}

void bm_pool_backward_onednn(benchmark::State& st, const PoolShape* s, Layout l) {
  PoolGradientData& d = pool_gradient_data(*s, l);
  std::unique_ptr<OnednnPoolBackward> prim;
  try {
    prim = std::make_unique<OnednnPoolBackward>(*s, l == Layout::NHWC, d.x.data(), d.dy.data(), d.dx.data());
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  prim->run();
  timed(st, [&] { prim->run(); });
  st.SetLabel(prim->impl());
  st.SetBytesProcessed(st.iterations() * pool_bytes(*s, true));
}

// One memcpy of half the bytes an op moves: it reads and writes them, as many in all.
void bm_pool_copy(benchmark::State& st, const PoolShape* s, bool backward) {
  const int64_t bytes = pool_bytes(*s, backward);
  Buffer from(bytes / 2 / int64_t(sizeof(float))), to(bytes / 2 / int64_t(sizeof(float)));
  fill_random(from, 1);
  timed(st, [&] { std::memcpy(to.data(), from.data(), size_t(bytes / 2)); });
  st.SetBytesProcessed(st.iterations() * bytes);
}

void in_microseconds(benchmark::internal::Benchmark* b) {
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_backward_benchmarks(const ShapeSet& set) {
  static std::vector<ConvShape> conv;
  static std::vector<PoolShape> pool;
  conv = set.conv;
  pool = set.pool;
  for (const ConvShape& s : conv) {
    for (ConvBackward which : {ConvBackward::Data, ConvBackward::Filter}) {
      const std::string base = std::string(which == ConvBackward::Data ? "conv_bwd_data/" : "conv_bwd_filter/") +
                               s.name + "/";
      for (Layout l : {Layout::NCHW, Layout::NHWC}) {
        const std::string lb = base + layout_name(l) + "/";
        in_microseconds(benchmark::RegisterBenchmark((lb + "generic").c_str(), bm_conv_backward, &s, l, which, false));
        in_microseconds(benchmark::RegisterBenchmark((lb + "auto").c_str(), bm_conv_backward, &s, l, which, true));
        if (have_onednn())
          in_microseconds(benchmark::RegisterBenchmark((lb + "onednn_any").c_str(), bm_conv_backward_onednn, &s, l, which));
        if (l == Layout::NCHW && have_openblas())
          in_microseconds(benchmark::RegisterBenchmark((lb + "im2col_openblas").c_str(), bm_conv_backward_im2col, &s, which));
      }
    }
  }
  for (const PoolShape& s : pool) {
    for (Layout l : {Layout::NCHW, Layout::NHWC}) {
      const std::string lb = "pool_bwd/" + s.name + "/" + layout_name(l) + "/";
      in_microseconds(benchmark::RegisterBenchmark((lb + "generic").c_str(), bm_pool_backward, &s, l, false));
      in_microseconds(benchmark::RegisterBenchmark((lb + "auto").c_str(), bm_pool_backward, &s, l, true));
      if (have_onednn())
        in_microseconds(benchmark::RegisterBenchmark((lb + "onednn_plain").c_str(), bm_pool_backward_onednn, &s, l));
    }
    in_microseconds(benchmark::RegisterBenchmark(("pool_fwd/" + s.name + "/any/copy").c_str(), bm_pool_copy, &s, false));
    in_microseconds(benchmark::RegisterBenchmark(("pool_bwd/" + s.name + "/any/copy").c_str(), bm_pool_copy, &s, true));
  }
}

}  // namespace convjit_bench
