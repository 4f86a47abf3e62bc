// The ISA as part of the specialization: on an AVX-512 host the runtime really runs AVX-512
// kernels (their names in the stats), and they agree with the oracle and bitwise with the AVX2
// kernels and the generic tier; a cap at AVX2 (policy, environment, C) keeps every kernel AVX2.
// A host without AVX-512 skips the tests that need it, saying so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "convjit/convjit.h"
#include "jit_support.hpp"

namespace convjit::testing::jit {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The randomized sweep plus rows long enough for AVX-512's NCHW blocks (32 pixels) and wide
// channel counts for its NHWC blocks.
std::vector<ConvDims> isa_sweep() {
  std::vector<ConvDims> shapes = random_conv_sweep(0x15A0, 240);
  ShapeLimits long_rows = wide_channel_limits();
  long_rows.max_in_size[0] = 200;
  long_rows.max_in_size[1] = 72;
  long_rows.max_multiply_adds = 1500000;
  for (const ConvDims& d : random_conv_sweep(0x15A1, 240, long_rows)) shapes.push_back(d);
  return shapes;
}

Policy capped_policy(Isa max_isa) {
  Policy p = eager_policy();
  p.max_isa = max_isa;
  return p;
}

// Every problem of the sweep on `runtime`: close to the oracle, and bitwise the same on each other
// runtime (stops after 10 failing problems).
void expect_agreement(Runtime& runtime, const std::vector<std::pair<Runtime*, std::string>>& others, uint64_t seed) {
  const std::vector<ConvDims> shapes = isa_sweep();
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < 10; ++i) {
    const Problem p(shapes[i], case_seed(seed, i));
    const std::vector<float> y = p.run(runtime);
    const auto close = p.matches_reference(y, "y");
    EXPECT_TRUE(close) << "case " << i;
    bool agreed = bool(close);
    for (const auto& [other, what] : others) {
      const auto same = p.same_bits(y, p.run(*other), what);
      EXPECT_TRUE(same) << "case " << i;
      agreed = agreed && bool(same);
    }
    failures += !agreed;
  }
}

struct KernelCounts {
  int avx512 = 0, avx2 = 0;
};
KernelCounts kernel_counts(const RuntimeStats& stats) {
  KernelCounts n;
  for (const ConfigStats& c : stats.configurations) {
    n.avx512 += ends_with(c.kernel, "__avx512");
    n.avx2 += ends_with(c.kernel, "__avx2");
  }
  return n;
}

TEST(Isa, Avx512KernelsRunAndMatchAvx2AndGenericBitwise) {
  if (kernel_isa(Isa::Auto) != "avx512")
    GTEST_SKIP() << "this host lacks AVX-512 (F, BW, DQ, VL): no AVX-512 kernel can run";
  Runtime widest(capped_policy(Isa::Auto));
  Runtime avx2(capped_policy(Isa::Avx2));
  Runtime generic(generic_policy());
  CONVJIT_SKIP_WITHOUT_BACKEND(widest);
  expect_agreement(widest, {{&avx2, "widest vs avx2"}, {&generic, "widest vs generic"}}, 0x15A0);
  const KernelCounts widest_kernels = kernel_counts(widest.stats());
  const KernelCounts avx2_kernels = kernel_counts(avx2.stats());
  EXPECT_GE(widest_kernels.avx512, 60) << "too few configurations ran AVX-512 kernels for the comparison to mean much";
  EXPECT_EQ(avx2_kernels.avx512, 0) << "a runtime capped at AVX2 ran an AVX-512 kernel";
  EXPECT_GE(avx2_kernels.avx2, widest_kernels.avx512);
  EXPECT_EQ(widest.stats().isa, "avx512");
  EXPECT_EQ(avx2.stats().isa, "avx2");
}

// Tier 0 alone: a runtime without a backend runs the AVX-512 rows of tier 0's table (direct tile,
// NHWC depthwise), one capped at AVX2 their AVX2 twins: bitwise the same.
TEST(Isa, Tier0RowsOfBothIsasGiveTheSameBits) {
  if (kernel_isa(Isa::Auto) != "avx512") GTEST_SKIP() << "this host lacks AVX-512 (F, BW, DQ, VL)";
  Policy widest = generic_policy(), avx2 = generic_policy();
  widest.max_isa = Isa::Auto;
  avx2.max_isa = Isa::Avx2;
  Runtime widest_runtime(widest), avx2_runtime(avx2);
  expect_agreement(widest_runtime, {{&avx2_runtime, "tier 0: widest vs avx2"}}, 0x15A2);
}

// NHWC kernels and NCHW ones with rows that fill AVX-512's blocks take it; NCHW rows of 16-31
// pixels that the driver cannot flatten keep AVX2's kernel, which takes them.
TEST(Isa, NarrowNchwRowsKeepAvx2Kernels) {
  if (kernel_isa(Isa::Auto) != "avx512") GTEST_SKIP() << "this host lacks AVX-512 (F, BW, DQ, VL)";
  Runtime runtime(capped_policy(Isa::Auto));
  CONVJIT_SKIP_WITHOUT_BACKEND(runtime);
  const ConvDims long_rows = conv(2, Layout::NCHW, 1, 4, 8, 1, {6, 40, 1}, {3, 3, 1});
  const ConvDims stride2_rows = conv(2, Layout::NCHW, 1, 4, 8, 1, {6, 50, 1}, {3, 3, 1}, {2, 2, 1});  // 24 pixels
  const ConvDims nhwc = conv(2, Layout::NHWC, 1, 4, 40, 1, {6, 14, 1}, {3, 3, 1});
  for (const ConvDims& d : {long_rows, stride2_rows, nhwc}) Problem(d, 1, false, Activation::Identity).run(runtime);
  const RuntimeStats stats = runtime.stats();
  auto kernel_of = [&](const ConvDims& d) {
    const std::optional<ConfigStats> c = find_config(stats, d);
    return c ? c->kernel : std::string("(no configuration)");
  };
  EXPECT_EQ(kernel_of(long_rows), "conv2d_fwd_f32_k3x3_s1__avx512");
  EXPECT_EQ(kernel_of(stride2_rows), "conv2d_fwd_f32_k3x3_s2__avx2");
  EXPECT_EQ(kernel_of(nhwc), "conv2d_fwd_f32_k3x3_s1_nhwc_oc32up__avx512");
}

// The runtime declines a configuration where tier 0's kernel at its cap beats a compiled one: an
// NCHW depthwise 5x5 (too few flops per copied float for the NHWC twin) has tier 0's own NCHW
// depthwise kernel with AVX-512 (25 taps in registers) and not with AVX2 (9), whose runtime
// compiles it instead of declining for a kernel the cap does not let it run.
TEST(Isa, DeclinesWeighTier0AtTheCap) {
  if (kernel_isa(Isa::Auto) != "avx512") GTEST_SKIP() << "this host lacks AVX-512 (F, BW, DQ, VL)";
  const ConvDims d = conv(2, Layout::NCHW, 1, 24, 24, 24, {40, 40, 1}, {5, 5, 1}, {2, 2, 1}, {2, 2, 0});
  for (const Isa cap : {Isa::Auto, Isa::Avx2}) {
    Policy policy = capped_policy(cap);
    policy.decline_slower = true;
    Runtime runtime(policy);
    CONVJIT_SKIP_WITHOUT_BACKEND(runtime);
    const Problem p(d, 0x15A3);
    EXPECT_TRUE(p.matches_reference(p.run(runtime), "y"));
    const std::optional<ConfigStats> c = find_config(runtime.stats(), d);
    ASSERT_TRUE(c.has_value());
    if (cap == Isa::Auto) {
      EXPECT_EQ(c->state, "declined") << c->kernel;
      EXPECT_NE(c->failure.find("depthwise NCHW"), std::string::npos) << c->failure;
    } else {
      EXPECT_EQ(c->state, "jit") << c->failure;
      EXPECT_TRUE(ends_with(c->kernel, "__avx2")) << c->kernel;
    }
  }
}

// CONVJIT_MAX_ISA sets the cap; a value it does not know is ignored (the default: no cap).
TEST(Isa, TheCapComesFromTheEnvironment) {
  const char* before = std::getenv("CONVJIT_MAX_ISA");
  const std::string saved = before ? before : "";
  for (auto [text, want] : {std::pair{"avx2", Isa::Avx2}, std::pair{"avx512", Isa::Avx512},
                            std::pair{"auto", Isa::Auto}, std::pair{"sse2", Isa::Auto}}) {
    setenv("CONVJIT_MAX_ISA", text, 1);
    EXPECT_EQ(int(Policy::from_environment().max_isa), int(want)) << text;
    convjit_policy c;
    convjit_policy_from_environment(&c);
    EXPECT_EQ(c.max_isa, int32_t(want)) << text;
  }
  if (before)
    setenv("CONVJIT_MAX_ISA", saved.c_str(), 1);
  else
    unsetenv("CONVJIT_MAX_ISA");
}

TEST(Isa, TheCApiTakesTheCapAndRejectsUnknownIsas) {
  convjit_policy policy;
  convjit_policy_from_environment(&policy);
  policy.max_isa = CONVJIT_ISA_AVX2;
  convjit_runtime* runtime = nullptr;
  ASSERT_EQ(convjit_runtime_create(&policy, &runtime), CONVJIT_OK) << convjit_last_error();
  convjit_runtime_destroy(runtime);
  for (int32_t bad : {-1, 3}) {
    policy.max_isa = bad;
    runtime = nullptr;
    EXPECT_EQ(convjit_runtime_create(&policy, &runtime), CONVJIT_EINVAL) << bad;
    EXPECT_NE(std::string(convjit_last_error()).find("policy.max_isa"), std::string::npos) << convjit_last_error();
    EXPECT_EQ(runtime, nullptr);
  }
}

}  // namespace
}  // namespace convjit::testing::jit
