// lib/runtime/runtime.cpp: the tiered runtime through explicit Runtime objects. Every tier agrees with
// the oracle and (as runtime.hpp promises) bit for bit with the generic tier; a compile that is
// refused or fails never changes a result; weights are read at every call on every tier; the
// hot threshold, async compiles, concurrent callers and evicted configurations all keep results
// right. A host without a usable backend skips only the tests that need one.
#include "convjit/runtime.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

struct Problem {
  ConvDims dims;
  std::vector<float> x, w, bias;
  Activation activation;
  std::vector<double> want;

  Problem(const ConvDims& d, uint64_t seed) : dims(d) {
    Rng rng(seed);
    x = random_floats(rng, ref::conv_input_elements(d));
    w = random_floats(rng, ref::conv_weight_elements(d));
    bias = rng.chance(0.5) ? random_floats(rng, d.out_channels) : std::vector<float>{};
    activation = rng.chance(0.5) ? Activation::Relu : Activation::Identity;
    want = ref::conv_forward(d, x.data(), w.data(), bias_ptr(), activation);
  }
  const float* bias_ptr() const { return bias.empty() ? nullptr : bias.data(); }
  int64_t reduction() const {
    int64_t taps = 1;
    for (int k = 0; k < dims.rank; ++k) taps *= dims.kernel[k];
    return (dims.in_channels / dims.groups) * taps;
  }
  std::vector<float> run(Runtime& runtime) const {
    std::vector<float> y = nan_buffer(int64_t(want.size()));
    runtime.conv_forward(dims, x.data(), w.data(), bias_ptr(), activation, y.data());
    return y;
  }
  ::testing::AssertionResult matches_reference(const std::vector<float>& y, const std::string& what) const {
    return all_close(what, y.data(), want, conv_output_shape(dims), reduction(), describe(dims));
  }
};

Policy generic_policy() {
  Policy p;
  p.backend = Backend::None;
  return p;
}

Policy eager_policy(bool specialize_sizes = false) {
  Policy p;
  p.backend = Backend::Auto;
  p.hot_threshold = 0;
  p.async = false;
  p.specialize_sizes = specialize_sizes;
  p.decline_slower = false;  // compile every configuration: kernel coverage, not speed
  p.max_isa = Policy::from_environment().max_isa;  // CONVJIT_MAX_ISA=avx2 reruns the suite on AVX2 kernels
  return p;
}

// A copy: the stats are often a temporary.
std::optional<ConfigStats> find_config(const RuntimeStats& stats, const ConvDims& dims) {
  for (const ConfigStats& c : stats.configurations) {
    if (describe(c.dims) == describe(dims)) return c;
  }
  return std::nullopt;
}

int64_t count_state(const RuntimeStats& stats, const std::string& state) {
  int64_t n = 0;
  for (const ConfigStats& c : stats.configurations) n += c.state == state;
  return n;
}

#define SKIP_WITHOUT_BACKEND(runtime)                                                                           \
  do {                                                                                                          \
    const RuntimeStats s_ = (runtime).stats();                                                                  \
    if (s_.backend == "none") GTEST_SKIP() << "no JIT backend on this host: " << s_.backend_unavailable_reason; \
  } while (0)

TEST(Runtime, GenericPolicyNeverCompiles) {
  Runtime generic(generic_policy());
  const std::vector<ConvDims> shapes = random_conv_sweep(0x4E01, 24);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Problem p(shapes[i], case_seed(0x4E01, i));
    for (int call = 0; call < 3; ++call) EXPECT_TRUE(p.matches_reference(p.run(generic), "generic y"));
  }
  const RuntimeStats stats = generic.stats();
  EXPECT_EQ(stats.backend, "none");
  EXPECT_EQ(stats.compiles, 0);
  for (const ConfigStats& c : stats.configurations) EXPECT_EQ(c.calls_jit, 0) << describe(c.dims);
}

// Each configuration compiled on first sight, with and without size specialization.
TEST(Runtime, CompiledTiersMatchReferenceAndGenericBitwise) {
  Runtime generic(generic_policy());
  Runtime eager(eager_policy());
  Runtime sized(eager_policy(true));
  SKIP_WITHOUT_BACKEND(eager);
  const std::vector<ConvDims> shapes = random_conv_sweep(0x4E02, 360);
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < 10; ++i) {
    const Problem p(shapes[i], case_seed(0x4E02, i));
    const std::vector<float> y_generic = p.run(generic);
    for (Runtime* r : {&eager, &sized}) {
      const char* name = r == &eager ? "eager" : "sized";
      const std::vector<float> y = p.run(*r);
      const auto close = p.matches_reference(y, std::string(name) + " y");
      const auto same =
          bitwise_equal(std::string(name) + " vs generic", y, y_generic, conv_output_shape(p.dims), describe(p.dims));
      EXPECT_TRUE(close) << "case " << i;
      EXPECT_TRUE(same) << "case " << i;
      failures += !close || !same;
    }
  }
  // The comparison means something only if many configurations really ran compiled code.
  for (Runtime* r : {&eager, &sized}) {
    const RuntimeStats stats = r->stats();
    int64_t jit_calls = 0;
    for (const ConfigStats& c : stats.configurations) jit_calls += c.calls_jit;
    EXPECT_GE(jit_calls, int64_t(shapes.size()) / 3)
        << "compiled " << stats.compiles << ", failed " << stats.compile_failures;
  }
}

// Training updates weights in place: a compiled kernel must read them again at every call.
// Each backend on its own, every configuration compiled on first sight: the kernels it takes
// (NCHW for LLVM) agree with the reference and bitwise with the generic tier, and it did compile.
// A build or host without the backend skips.
class RuntimeBackend : public ::testing::TestWithParam<Backend> {};

TEST_P(RuntimeBackend, CompiledKernelsMatchReferenceAndGenericBitwise) {
  Policy policy = eager_policy();
  policy.backend = GetParam();
  Runtime runtime(policy);
  Runtime generic(generic_policy());
  SKIP_WITHOUT_BACKEND(runtime);
  const std::vector<ConvDims> shapes = random_conv_sweep(0x4E0D, 90);
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < 10; ++i) {
    const Problem p(shapes[i], case_seed(0x4E0D, i));
    const std::vector<float> y = p.run(runtime);
    const auto close = p.matches_reference(y, "jit y");
    const auto same = bitwise_equal("jit vs generic", y, p.run(generic), conv_output_shape(p.dims), describe(p.dims));
    EXPECT_TRUE(close) << "case " << i;
    EXPECT_TRUE(same) << "case " << i;
    failures += !close || !same;
  }
  const RuntimeStats stats = runtime.stats();
  int64_t jit_calls = 0;
  for (const ConfigStats& c : stats.configurations) jit_calls += c.calls_jit;
  EXPECT_GE(jit_calls, int64_t(shapes.size()) / 4)
      << stats.backend << ": compiled " << stats.compiles << ", failed " << stats.compile_failures;
}

INSTANTIATE_TEST_SUITE_P(Backends, RuntimeBackend, ::testing::Values(Backend::Xbyak, Backend::Llvm),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::Xbyak ? "Xbyak" : "Llvm";
                         });

// relu keeps NaN (and -0) on every tier: an input NaN reaches every output whose window reads it,
// with the same bits whichever kernel runs. Covers the direct tiles, the register tile, the NHWC
// depthwise kernel, NHWC run as NCHW, and each layout's JIT kernel.
TEST(Runtime, ReluKeepsNaNOnEveryTier) {
  Runtime generic(generic_policy());
  Runtime eager(eager_policy());
  SKIP_WITHOUT_BACKEND(eager);
  auto dims = [](Layout layout, int64_t channels, int64_t out_channels, int64_t groups) {
    return conv(2, layout, 1, channels, out_channels, groups, {12, 21, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0});
  };
  for (const ConvDims& d : {dims(Layout::NHWC, 16, 16, 16), dims(Layout::NCHW, 16, 16, 16), dims(Layout::NCHW, 3, 5, 1),
                            dims(Layout::NHWC, 3, 5, 1), dims(Layout::NHWC, 8, 24, 1), dims(Layout::NCHW, 8, 24, 1)}) {
    Rng rng(0x4E0E);
    std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
    x[x.size() / 2] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> y[2];
    Runtime* runtimes[2] = {&generic, &eager};
    for (int r = 0; r < 2; ++r) {
      y[r] = nan_buffer(ref::conv_output_elements(d));
      y[r].assign(y[r].size(), 1.0f);
      runtimes[r]->conv_forward(d, x.data(), w.data(), nullptr, Activation::Relu, y[r].data());
    }
    int64_t nans = 0;
    for (float v : y[0]) nans += std::isnan(v);
    EXPECT_GT(nans, 0) << describe(d) << ": relu turned the NaN into a number";
    EXPECT_TRUE(bitwise_equal("jit vs generic", y[1], y[0], conv_output_shape(d), describe(d)));
  }
}

// The bias is read only at the channels a kernel computes: a partial channel block (5 channels,
// blocks of 4) with the bias ending at an inaccessible page must not fault.
TEST(Runtime, BiasIsReadOnlyForRealChannels) {
  Runtime eager(eager_policy());
  Runtime generic(generic_policy());
  SKIP_WITHOUT_BACKEND(eager);
  const long page = sysconf(_SC_PAGESIZE);
  void* pages = mmap(nullptr, size_t(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(mprotect(static_cast<char*>(pages) + page, size_t(page), PROT_NONE), 0);
  const ConvDims d = conv(2, Layout::NCHW, 1, 2, 5, 1, {6, 47, 1}, {1, 3, 1});
  float* bias = reinterpret_cast<float*>(static_cast<char*>(pages) + page) - d.out_channels;  // ends at the guard
  Rng rng(0x4E0F);
  for (int64_t c = 0; c < d.out_channels; ++c) bias[c] = float(c) - 2.0f;
  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
  const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
  std::vector<float> y_jit = nan_buffer(ref::conv_output_elements(d)), y_generic = y_jit;
  eager.conv_forward(d, x.data(), w.data(), bias, Activation::Identity, y_jit.data());
  generic.conv_forward(d, x.data(), w.data(), bias, Activation::Identity, y_generic.data());
  EXPECT_TRUE(bitwise_equal("jit vs generic", y_jit, y_generic, conv_output_shape(d), describe(d)));
  EXPECT_EQ(eager.stats().configurations.at(0).state, "jit");
  munmap(pages, size_t(2 * page));
}

// NHWC with few output channels per group runs as the NCHW problem on transposed copies
// (lib/rewrite/nhwc_as_nchw.hpp): the stats show the NHWC configuration as called, with the NCHW
// twin's kernel, it reaches the JIT tier, and every tier gives the same bits.
TEST(Runtime, NhwcWithFewChannelsRunsAsNchwOnEveryTier) {
  Runtime generic(generic_policy());
  Runtime eager(eager_policy());
  SKIP_WITHOUT_BACKEND(eager);
  ConvDims nhwc = conv(2, Layout::NHWC, 2, 3, 5, 1, {17, 29, 1}, {3, 3, 1}, {1, 1, 1}, {1, 2, 0});
  nhwc.pad_end = {0, 1, 0};  // asymmetric
  const Problem p(nhwc, 0x4E0C);
  const std::vector<float> y_generic = p.run(generic);
  const std::vector<float> y_jit = p.run(eager);
  EXPECT_TRUE(p.matches_reference(y_generic, "generic y"));
  EXPECT_TRUE(p.matches_reference(y_jit, "jit y"));
  EXPECT_TRUE(bitwise_equal("jit vs generic", y_jit, y_generic, conv_output_shape(nhwc), describe(nhwc)));
  const RuntimeStats stats = eager.stats();
  ASSERT_EQ(stats.configurations.size(), 1u);
  const ConfigStats& c = stats.configurations[0];
  EXPECT_EQ(c.op, Op::ConvForward);
  EXPECT_EQ(c.dims.layout, Layout::NHWC);
  EXPECT_FALSE(c.kernel.empty());
  EXPECT_EQ(c.kernel.find("_nhwc"), std::string::npos) << "not the NCHW twin's kernel: " << c.kernel;
  EXPECT_EQ(c.dims.in_channels, 3);
  EXPECT_EQ(c.dims.out_channels, 5);
  EXPECT_EQ(c.calls_jit, 1);
  EXPECT_EQ(c.state, "jit");
}

// And the other way: NCHW at W stride > 1 with a W kernel and more output channels, NCHW at W
// stride 1 whose rows are too short for their kernel's W span to be flattened (over a fifth of
// the grid junk), and NCHW depthwise that NCHW's depthwise kernel does not take, run as their
// NHWC twins where their flops pay for the copies: the stats show the NCHW configuration with the
// twin's kernel, it reaches the JIT tier, and every tier gives the same bits. A 1x1 kernel (each
// input read once), layers of few flops per copied float, a flattened grid of 15% junk, long rows
// and a 3x3 depthwise layer (NCHW's own kernel) stay NCHW; a 5x5 depthwise layer too where the
// runtime runs AVX-512 (its kernel holds 25 taps in registers there, 9 with AVX2).
TEST(Runtime, NchwRunsAsItsNhwcTwinOnEveryTierWhereItPaysForTheCopies) {
  struct Case {
    ConvDims dims;
    bool as_nhwc;
  };
  const bool avx512 = Runtime(eager_policy()).stats().isa == "avx512";
  ConvDims strided = conv(2, Layout::NCHW, 2, 32, 32, 1, {31, 29, 1}, {5, 3, 1}, {2, 2, 1}, {2, 1, 0});
  strided.pad_end = {1, 2, 0};  // asymmetric
  ConvDims grouped = conv(1, Layout::NCHW, 3, 48, 64, 2, {301, 1, 1}, {7, 1, 1}, {3, 1, 1}, {3, 0, 0});
  grouped.mode = Mode::Convolution;
  ConvDims short_rows = conv(2, Layout::NCHW, 1, 40, 48, 1, {13, 11, 1}, {7, 7, 1}, {1, 1, 1}, {3, 3, 0});
  short_rows.pad_end = {2, 4, 0};  // 12 columns, 6 of junk a grid row
  const ConvDims dilated_short_rows = conv(2, Layout::NCHW, 2, 32, 32, 1, {20, 23, 1}, {3, 3, 1}, {1, 1, 1}, {4, 4, 0},
                                           {4, 4, 1}, Mode::Convolution);  // 23 columns, 8 of junk
  const Case cases[] = {
      {strided, true},
      {grouped, true},
      {short_rows, true},
      {dilated_short_rows, true},
      {conv(2, Layout::NCHW, 1, 8, 16, 1, {13, 11, 1}, {7, 7, 1}, {1, 1, 1}, {3, 3, 0}), false},  // 185 flops a float
      {conv(2, Layout::NCHW, 1, 64, 64, 1, {33, 33, 1}, {3, 3, 1}, {1, 1, 1}, {3, 3, 0}, {3, 3, 1}),
       false},  // 15% junk
      {conv(1, Layout::NCHW, 1, 64, 64, 1, {300, 1, 1}, {7, 1, 1}, {1, 1, 1}, {60, 0, 0}, {20, 1, 1}),
       false},  // rows of 300: never flattened, whatever the span
      {conv(2, Layout::NCHW, 1, 64, 96, 1, {28, 28, 1}, {1, 1, 1}, {2, 2, 1}), false},  // 1x1
      {conv(2, Layout::NCHW, 1, 3, 32, 1, {65, 65, 1}, {3, 3, 1}, {2, 2, 1}), false},   // 3 channels: 39 flops a float
      {conv(2, Layout::NCHW, 1, 16, 4, 1, {40, 40, 1}, {3, 3, 1}, {2, 2, 1}), false},   // 4 output channels
      {conv(2, Layout::NCHW, 2, 40, 40, 40, {21, 21, 1}, {7, 7, 1}, {1, 1, 1}, {3, 3, 0}), true},     // depthwise 7x7
      {conv(2, Layout::NCHW, 2, 40, 40, 40, {21, 21, 1}, {5, 5, 1}, {1, 1, 1}, {2, 2, 0}), !avx512},  // depthwise 5x5
      {conv(2, Layout::NCHW, 2, 40, 40, 40, {21, 21, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}), false},    // depthwise 3x3
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(describe(k.dims));
    Runtime generic(generic_policy());
    Runtime eager(eager_policy());
    SKIP_WITHOUT_BACKEND(eager);
    const Problem p(k.dims, 0x4E0D);
    const std::vector<float> y_generic = p.run(generic);
    const std::vector<float> y_jit = p.run(eager);
    EXPECT_TRUE(p.matches_reference(y_generic, "generic y"));
    EXPECT_TRUE(p.matches_reference(y_jit, "jit y"));
    EXPECT_TRUE(bitwise_equal("jit vs generic", y_jit, y_generic, conv_output_shape(k.dims), describe(k.dims)));
    const RuntimeStats stats = eager.stats();
    ASSERT_EQ(stats.configurations.size(), 1u);
    const ConfigStats& c = stats.configurations[0];
    EXPECT_EQ(c.dims.layout, Layout::NCHW);
    if (!k.as_nhwc) {
      EXPECT_EQ(c.kernel.find("_nhwc"), std::string::npos) << "the NHWC twin's kernel: " << c.kernel;
      continue;
    }
    EXPECT_NE(c.kernel.find("_nhwc"), std::string::npos) << "not the NHWC twin's kernel: " << c.kernel;
    EXPECT_EQ(c.calls_jit, 1);
    EXPECT_EQ(c.state, "jit");
  }
}

TEST(Runtime, CompiledTierReadsWeightsUpdatedInPlace) {
  Runtime eager(eager_policy());
  SKIP_WITHOUT_BACKEND(eager);
  const ConvDims d = conv(2, Layout::NCHW, 1, 3, 8, 1, {9, 12, 1}, {3, 3, 1});
  Problem p(d, 0x4E03);
  for (int step = 0; step < 4; ++step) {
    p.want = ref::conv_forward(d, p.x.data(), p.w.data(), p.bias_ptr(), p.activation);
    EXPECT_TRUE(p.matches_reference(p.run(eager), "step " + std::to_string(step)));
    for (float& v : p.w) v = 0.5f * v + 0.125f;
    for (float& v : p.x) v = -v;
  }
  const std::optional<ConfigStats> c = find_config(eager.stats(), d);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->state, "jit") << c->failure;
  EXPECT_EQ(c->calls_jit, 4);
}

TEST(Runtime, HotThresholdDelaysTheCompile) {
  Policy policy = eager_policy();
  policy.hot_threshold = 3;
  Runtime runtime(policy);
  SKIP_WITHOUT_BACKEND(runtime);
  const ConvDims d = conv(2, Layout::NCHW, 1, 2, 4, 1, {10, 10, 1}, {3, 3, 1});
  const Problem p(d, 0x4E04);
  EXPECT_TRUE(p.matches_reference(p.run(runtime), "call 1"));
  const std::optional<ConfigStats> first = find_config(runtime.stats(), d);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->state, "cold");
  EXPECT_EQ(first->calls_generic, 1);
  EXPECT_EQ(first->calls_jit, 0);
  for (int call = 2; call <= 6; ++call) {
    EXPECT_TRUE(p.matches_reference(p.run(runtime), "call " + std::to_string(call)));
  }
  const RuntimeStats stats = runtime.stats();
  const std::optional<ConfigStats> later = find_config(stats, d);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->state, "jit") << later->failure;
  EXPECT_EQ(later->calls_generic + later->calls_jit, 6);
  EXPECT_GE(later->calls_generic, 2);  // at least the calls below the threshold
  EXPECT_GE(later->calls_jit, 1);
  EXPECT_EQ(stats.compiles, 1);
}

// The code budget bounds the executable memory the kernels hold (whole pages each: at least one),
// the newest kernel included: with room for a few pages, the least used kernels are evicted to
// make room, the kernels never hold more than the budget, and every result is still right.
TEST(Runtime, TheCodeBudgetEvictsTheLeastUsedKernels) {
  constexpr int64_t kPage = 4096, kPages = 6;
  Policy policy = eager_policy();
  policy.code_budget_bytes = kPages * kPage;
  Runtime runtime(policy);
  SKIP_WITHOUT_BACKEND(runtime);
  const std::vector<ConvDims> shapes = random_conv_sweep(0xB0D6, 60);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Problem p(shapes[i], case_seed(0xB0D6, i));
    EXPECT_TRUE(p.matches_reference(p.run(runtime), "budget y"));
    const RuntimeStats stats = runtime.stats();
    ASSERT_LE(stats.mapped_bytes, kPages * kPage) << "after " << describe(shapes[i]);
    ASSERT_LE(stats.kernels, kPages) << "kernels hold at least a page each";
  }
  const RuntimeStats stats = runtime.stats();
  EXPECT_GE(stats.kernels, 1);
  EXPECT_GE(stats.kernel_evictions, 1);
  EXPECT_EQ(stats.compiles, stats.kernels + stats.kernel_evictions);
  for (const ConfigStats& c : stats.configurations) {  // refused only where one kernel is larger than the budget
    if (c.failure.find("code budget") != std::string::npos) {
      EXPECT_NE(c.failure.find("cannot hold this kernel"), std::string::npos) << describe(c.dims) << ": " << c.failure;
    }
  }
}

// Two configurations of different keys and a budget for one of their kernels: each call evicts
// the other's kernel, the evicted configuration goes back to tier 0 and compiles again when hot,
// and each call runs its own kernel, right.
TEST(Runtime, EvictedConfigurationsCompileAgainWhenHot) {
  const ConvDims a = conv(2, Layout::NCHW, 1, 3, 8, 1, {9, 40, 1}, {3, 3, 1});
  const ConvDims b = conv(2, Layout::NCHW, 1, 3, 8, 1, {9, 40, 1}, {5, 5, 1});
  Runtime probe(eager_policy());
  SKIP_WITHOUT_BACKEND(probe);
  const Problem pa(a, 0xE01), pb(b, 0xE02);
  EXPECT_TRUE(pa.matches_reference(pa.run(probe), "a"));
  EXPECT_TRUE(pb.matches_reference(pb.run(probe), "b"));
  const RuntimeStats sizes = probe.stats();
  ASSERT_EQ(sizes.kernels, 2);
  Policy policy = eager_policy();
  policy.code_budget_bytes = sizes.mapped_bytes - 1;  // not both
  Runtime runtime(policy);
  for (int round = 1; round <= 3; ++round) {
    for (const Problem* p : {&pa, &pb}) {
      EXPECT_TRUE(p->matches_reference(p->run(runtime), "round " + std::to_string(round)));
      const std::optional<ConfigStats> c = find_config(runtime.stats(), p->dims);
      ASSERT_TRUE(c.has_value());
      EXPECT_EQ(c->state, "jit") << c->failure;
      EXPECT_EQ(c->calls_jit, round) << describe(p->dims);
    }
  }
  const RuntimeStats stats = runtime.stats();
  EXPECT_EQ(stats.kernels, 1);
  EXPECT_EQ(stats.kernel_evictions, 5);
  EXPECT_EQ(stats.compiles, 6);
  EXPECT_LE(stats.mapped_bytes, policy.code_budget_bytes);
}

// No code budget: every compile is refused, every configuration stays generic and correct.
TEST(Runtime, RefusedCompilesStayGenericAndCorrect) {
  Policy policy = eager_policy();
  policy.code_budget_bytes = 0;
  Runtime runtime(policy);
  SKIP_WITHOUT_BACKEND(runtime);
  const std::vector<ConvDims> shapes = random_conv_sweep(0x4E05, 36);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Problem p(shapes[i], case_seed(0x4E05, i));
    for (int call = 0; call < 2; ++call) EXPECT_TRUE(p.matches_reference(p.run(runtime), "refused y"));
  }
  const RuntimeStats stats = runtime.stats();
  EXPECT_EQ(stats.compiles, 0);
  EXPECT_EQ(stats.code_bytes, 0);
  EXPECT_GE(stats.compile_failures, 1);
  for (const ConfigStats& c : stats.configurations) {
    EXPECT_EQ(c.calls_jit, 0) << describe(c.dims);
    EXPECT_EQ(c.state, "failed") << describe(c.dims);
  }
}

// Background compiles: results are right before, during and after the kernel arrives.
TEST(Runtime, AsyncCompilesArriveAndAgree) {
  Policy policy = eager_policy();
  policy.async = true;
  Runtime runtime(policy);
  Runtime generic(generic_policy());
  SKIP_WITHOUT_BACKEND(runtime);
  const std::vector<ConvDims> shapes = random_conv_sweep(0x4E06, 48);
  std::vector<Problem> problems;
  for (size_t i = 0; i < shapes.size(); ++i) problems.emplace_back(shapes[i], case_seed(0x4E06, i));
  for (const Problem& p : problems) EXPECT_TRUE(p.matches_reference(p.run(runtime), "first call"));
  runtime.wait_for_compiles();
  EXPECT_EQ(count_state(runtime.stats(), "queued"), 0);
  for (const Problem& p : problems) {
    const std::vector<float> y = p.run(runtime);
    EXPECT_TRUE(
        bitwise_equal("after compile vs generic", y, p.run(generic), conv_output_shape(p.dims), describe(p.dims)));
  }
  EXPECT_GE(count_state(runtime.stats(), "jit"), int64_t(shapes.size()) / 3);
}

// Several threads making one configuration hot at once: one compile, every result right.
TEST(Runtime, ConcurrentCallersShareOneCompile) {
  Policy policy = eager_policy();
  policy.async = true;
  policy.hot_threshold = 5;
  policy.num_threads = 1;
  Runtime runtime(policy);
  SKIP_WITHOUT_BACKEND(runtime);
  const ConvDims d = conv(2, Layout::NHWC, 2, 8, 16, 1, {12, 12, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0});
  const Problem p(d, 0x4E07);
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int call = 0; call < 25; ++call) bad[t] += !p.matches_reference(p.run(runtime), "y");
    });
  }
  for (std::thread& t : threads) t.join();
  runtime.wait_for_compiles();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t << " got wrong results";
  const RuntimeStats stats = runtime.stats();
  EXPECT_EQ(stats.compiles, 1);
  EXPECT_EQ(stats.kernels, 1);
  const std::optional<ConfigStats> c = find_config(stats, d);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->calls_generic + c->calls_jit, 100);
}

// More configurations than the detector holds: cold ones age out, results never change.
TEST(Runtime, EvictedConfigurationsStayCorrect) {
  Policy policy = eager_policy();
  policy.max_configurations = 16;
  Runtime runtime(policy);
  const std::vector<ConvDims> shapes = random_conv_sweep(0x4E08, 80);
  std::vector<Problem> problems;
  for (size_t i = 0; i < shapes.size(); ++i) problems.emplace_back(shapes[i], case_seed(0x4E08, i));
  int failures = 0;
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < problems.size() && failures < 10; ++i) {
      const auto r = problems[i].matches_reference(problems[i].run(runtime), "round " + std::to_string(round));
      EXPECT_TRUE(r) << "case " << i;
      failures += !r;
    }
  }
  const RuntimeStats stats = runtime.stats();
  EXPECT_LE(int64_t(stats.configurations.size()), 16);
  EXPECT_GT(stats.evictions, 0);
}

}  // namespace
}  // namespace convjit::testing
