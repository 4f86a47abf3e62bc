// lib/runtime/runtime.cpp under fault injection: README.md ("How a call runs") says a failed compile
// "leaves the configuration on the generic tier, is counted and reported, and never fails the call". The
// runtime is built through Runtime::Impl's constructor with a backend whose compile() fails,
// always or on every other specialization key (the others go to the real Xbyak backend), with
// compiles inline and in the background. Every call must succeed, match the oracle and be
// bitwise equal to a generic-only runtime; the stats must say "failed" with the injected
// message, count each failure once, and show no JIT call for the failed configurations.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "backend.hpp"
#include "jit_support.hpp"
#include "runtime_impl.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing::jit {
namespace {

constexpr const char* kInjected = "injected failure";

constexpr const char* kDeclined = "injected decline";

// Fails every compile, or (every_other) the keys with an even index in order of first request;
// the others are compiled by `real`. Records what it was asked and what it answered. With
// `declines`, it declines every problem instead (runtime policy decline_slower).
class FailingBackend : public convjit::jit::Backend {
 public:
  FailingBackend(bool every_other, std::unique_ptr<convjit::jit::Backend> real, bool declines = false)
      : every_other_(every_other), declines_(declines), real_(std::move(real)) {}

  const char* name() const override { return "failing"; }
  std::string unavailable_reason() const override { return {}; }
  convjit::jit::Isa isa_for(const convjit_conv_problem& problem, convjit::jit::Isa cap) const override {
    return real_ ? real_->isa_for(problem, cap) : convjit::jit::Isa::Avx2Fma;
  }
  std::string decline_reason(const convjit_conv_problem&, const convjit::jit::SpecKey& key) const override {
    return declines_ ? std::string(kDeclined) + " (" + key.name() + ")" : std::string();
  }

  bool compile(const convjit::jit::SpecKey& key, convjit::jit::CompiledKernel* out, std::string* error) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++compile_calls_;
    const std::string name = key.name();
    const size_t index = first_seen_.emplace(name, first_seen_.size()).first->second;
    if (!every_other_ || index % 2 == 0) {
      *error = std::string(kInjected) + " (" + name + ")";
      errors_.insert(*error);
      injected_.insert(name);
      return false;
    }
    if (!real_ || !real_->compile(key, out, error)) {  // the real backend may refuse a key too
      errors_.insert(*error);
      return false;
    }
    compiled_.insert(name);
    return true;
  }

  int64_t compile_calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return compile_calls_;
  }
  std::set<std::string> errors() {
    std::lock_guard<std::mutex> lock(mutex_);
    return errors_;
  }
  std::set<std::string> injected() {
    std::lock_guard<std::mutex> lock(mutex_);
    return injected_;
  }
  std::set<std::string> compiled() {
    std::lock_guard<std::mutex> lock(mutex_);
    return compiled_;
  }

 private:
  const bool every_other_, declines_;
  std::unique_ptr<convjit::jit::Backend> real_;
  std::mutex mutex_;
  int64_t compile_calls_ = 0;
  std::map<std::string, size_t> first_seen_;
  std::set<std::string> errors_, injected_, compiled_;
};

std::unique_ptr<convjit::jit::Backend> real_backend() {
#if defined(CONVJIT_HAVE_XBYAK)
  std::unique_ptr<convjit::jit::Backend> b = convjit::jit::make_xbyak_backend();
  if (b && b->unavailable_reason().empty()) return b;
#endif
  return nullptr;
}

std::string real_backend_missing() {
#if defined(CONVJIT_HAVE_XBYAK)
  return convjit::jit::make_xbyak_backend()->unavailable_reason();
#else
  return "built without Xbyak";
#endif
}

std::vector<float> run_impl(Runtime::Impl& impl, const Problem& p, detail::Status* status) {
  std::vector<float> y = nan_buffer(p.outputs());
  const convjit_conv_params params = p.dims.to_c();
  *status = impl.conv_forward(&params, p.x.data(), p.w.data(), p.bias_ptr(), int32_t(p.activation), y.data());
  return y;
}

struct Variant {
  bool async;
  bool every_other;
};
void PrintTo(const Variant& v, std::ostream* os) {
  *os << (v.async ? "async" : "inline") << (v.every_other ? ", fails every other key" : ", always fails");
}

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  return std::string(info.param.async ? "Async" : "Inline") + (info.param.every_other ? "EveryOtherKey" : "Always");
}

class FaultInjection : public ::testing::TestWithParam<Variant> {};

TEST_P(FaultInjection, FailedCompilesStayGenericCorrectAndReported) {
  const Variant v = GetParam();
  std::unique_ptr<convjit::jit::Backend> real;
  if (v.every_other) {
    real = real_backend();
    if (!real) GTEST_SKIP() << "no real backend for the keys that do not fail: " << real_backend_missing();
  }
  Policy policy = eager_policy();
  policy.async = v.async;
  auto owned = std::make_unique<FailingBackend>(v.every_other, std::move(real));
  FailingBackend* backend = owned.get();
  Runtime::Impl faulty(policy, std::move(owned), "");
  Runtime::Impl generic(policy, nullptr, "test: generic tier only");

  constexpr int kRounds = 3;
  const uint64_t seed = 0xFA17 + (v.async ? 1 : 0) + (v.every_other ? 2 : 0);
  const std::vector<ConvDims> shapes = long_row_sweep(seed, 48, 400000);  // long rows: kernels run
  std::vector<Problem> problems;
  std::vector<std::vector<float>> y_generic;
  for (size_t i = 0; i < shapes.size(); ++i) {
    problems.emplace_back(shapes[i], case_seed(seed, i));
    detail::Status status;
    y_generic.push_back(run_impl(generic, problems.back(), &status));
    ASSERT_TRUE(status.ok()) << status.message;
    ASSERT_TRUE(problems.back().matches_reference(y_generic.back(), "generic y")) << "case " << i;
  }

  int failures = 0;
  for (int round = 0; round < kRounds && failures < 10; ++round) {
    for (size_t i = 0; i < problems.size() && failures < 10; ++i) {
      detail::Status status;
      const std::vector<float> y = run_impl(faulty, problems[i], &status);
      EXPECT_TRUE(status.ok()) << "case " << i << " round " << round << ": " << status.message;
      const auto close = problems[i].matches_reference(y, "y, round " + std::to_string(round));
      const auto same = problems[i].same_bits(y, y_generic[i], "vs generic, round " + std::to_string(round));
      EXPECT_TRUE(close) << "case " << i;
      EXPECT_TRUE(same) << "case " << i;
      failures += !status.ok() || !close || !same;
    }
    if (round == 0) faulty.wait_for_compiles();
  }
  ASSERT_EQ(failures, 0);

  const RuntimeStats stats = faulty.stats();
  EXPECT_EQ(stats.backend, "failing");
  ASSERT_EQ(stats.configurations.size(), shapes.size()) << "the sweep's configurations should be distinct";
  const std::set<std::string> errors = backend->errors();
  const std::set<std::string> compiled = backend->compiled();
  int64_t failed = 0, jit = 0;
  for (const ConfigStats& c : stats.configurations) {
    EXPECT_EQ(c.calls_generic + c.calls_jit, kRounds) << describe(c.dims);
    if (c.state == "failed") {
      ++failed;
      EXPECT_EQ(c.calls_jit, 0) << describe(c.dims);
      EXPECT_TRUE(c.kernel.empty()) << describe(c.dims) << ": " << c.kernel;
      EXPECT_EQ(c.code_bytes, 0) << describe(c.dims);
      EXPECT_TRUE(errors.count(c.failure))
          << describe(c.dims) << ": failure '" << c.failure << "' is not a message the backend gave";
      if (!v.every_other) {
        EXPECT_EQ(c.failure.rfind(kInjected, 0), 0u) << c.failure;
      }
    } else {
      ++jit;
      EXPECT_TRUE(v.every_other) << describe(c.dims) << " is " << c.state << " though every compile fails";
      EXPECT_EQ(c.state, "jit") << describe(c.dims);
      EXPECT_TRUE(compiled.count(c.kernel)) << describe(c.dims) << ": " << c.kernel;
      EXPECT_TRUE(c.failure.empty()) << describe(c.dims) << ": " << c.failure;
      // Inline: compiled at the first call, which runs it. Async: at the latest after round 0.
      EXPECT_GE(c.calls_jit, v.async ? kRounds - 1 : kRounds) << describe(c.dims);
    }
  }
  // Never retried: a failure is final for its configuration, and a key compiled once is reused.
  // So the backend saw one request per failed configuration and one per kernel.
  EXPECT_EQ(backend->compile_calls(), failed + int64_t(compiled.size()));
  EXPECT_EQ(stats.compile_failures, failed);
  EXPECT_EQ(stats.compiles, int64_t(compiled.size()));
  EXPECT_EQ(stats.kernels, int64_t(compiled.size()));
  if (v.every_other) {
    EXPECT_GE(int64_t(backend->injected().size()), 2);
    EXPECT_GE(jit, int64_t(shapes.size()) / 4) << "too few configurations reached the real backend";
    EXPECT_GT(stats.code_bytes, 0);
  } else {
    EXPECT_EQ(failed, int64_t(shapes.size()));
    EXPECT_EQ(stats.code_bytes, 0);
  }

  const RuntimeStats generic_stats = generic.stats();
  EXPECT_EQ(generic_stats.backend, "none");
  EXPECT_EQ(generic_stats.backend_unavailable_reason, "test: generic tier only");
  EXPECT_EQ(generic_stats.compiles + generic_stats.compile_failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, FaultInjection,
                         ::testing::Values(Variant{false, false}, Variant{true, false}, Variant{false, true},
                                           Variant{true, true}),
                         variant_name);

// A backend that declines every problem (policy decline_slower, the default): nothing is
// compiled, every configuration says "declined" with the backend's reason (or, for depthwise
// problems that tier 0 runs on a kernel of its own, the runtime's, given before any backend is
// asked), nothing counts as a compile failure, and results are the generic tier's. With
// decline_slower off the same backend is asked to compile.
TEST(FaultInjection, DeclinedConfigurationsStayGenericWithTheReason) {
  Policy policy = eager_policy();
  policy.decline_slower = true;
  auto owned = std::make_unique<FailingBackend>(false, nullptr, /*declines=*/true);
  FailingBackend* backend = owned.get();
  Runtime::Impl declining(policy, std::move(owned), "");
  Runtime::Impl generic(policy, nullptr, "test: generic tier only");
  const std::vector<ConvDims> shapes = random_conv_sweep(0xFA30, 24);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Problem p(shapes[i], case_seed(0xFA30, i));
    for (int call = 0; call < 2; ++call) {
      detail::Status status, generic_status;
      const std::vector<float> y = run_impl(declining, p, &status);
      ASSERT_TRUE(status.ok()) << status.message;
      EXPECT_TRUE(p.same_bits(y, run_impl(generic, p, &generic_status), "declined vs generic")) << "case " << i;
    }
  }
  const RuntimeStats stats = declining.stats();
  EXPECT_EQ(backend->compile_calls(), 0);
  EXPECT_EQ(stats.compiles + stats.compile_failures + stats.kernels, 0);
  ASSERT_EQ(stats.configurations.size(), shapes.size());
  for (const ConfigStats& c : stats.configurations) {
    EXPECT_EQ(c.state, "declined") << describe(c.dims);
    const bool by_backend = c.failure.rfind(std::string(kDeclined) + " (conv", 0) == 0;
    const bool depthwise = c.dims.groups == c.dims.in_channels && c.dims.groups == c.dims.out_channels;
    const bool by_runtime = depthwise && c.failure.find("the generic kernel") != std::string::npos;
    EXPECT_TRUE(by_backend || by_runtime) << describe(c.dims) << ": " << c.failure;
    EXPECT_EQ(c.calls_jit, 0) << describe(c.dims);
    EXPECT_EQ(c.calls_generic, 2) << describe(c.dims);
  }

  policy.decline_slower = false;
  auto owned_again = std::make_unique<FailingBackend>(false, nullptr, /*declines=*/true);
  FailingBackend* asked = owned_again.get();
  Runtime::Impl not_declining(policy, std::move(owned_again), "");
  const Problem p(shapes[0], case_seed(0xFA30, 0));
  detail::Status status;
  run_impl(not_declining, p, &status);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(asked->compile_calls(), 1);
  EXPECT_EQ(not_declining.stats().configurations.at(0).state, "failed");
}

// CONVJIT_VERBOSE's line for a failed compile names the configuration and the backend's message.
// Depthwise problems that tier 0 runs on a kernel of its own stay generic whatever the backend
// would do: a backend that never declines, and compiles no depthwise rows, is not asked to compile
// them (its tiles would split the groups' lanes).
TEST(FaultInjection, RuntimeDeclinesDepthwiseBeforeAnyBackend) {
  Policy policy = eager_policy();
  policy.decline_slower = true;
  auto owned = std::make_unique<FailingBackend>(false, nullptr);
  FailingBackend* backend = owned.get();
  Runtime::Impl runtime(policy, std::move(owned), "");
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    const Problem p(conv(2, layout, 1, 16, 16, 16, {20, 24, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}), 0xFA40, true,
                    Activation::Relu);
    detail::Status status;
    const std::vector<float> y = run_impl(runtime, p, &status);
    ASSERT_TRUE(status.ok()) << status.message;
    EXPECT_TRUE(p.matches_reference(y, "y"));
  }
  EXPECT_EQ(backend->compile_calls(), 0);
  const RuntimeStats stats = runtime.stats();
  ASSERT_EQ(stats.configurations.size(), 2u);
  for (const ConfigStats& c : stats.configurations) {
    EXPECT_EQ(c.state, "declined") << describe(c.dims);
    EXPECT_NE(c.failure.find("the generic kernel"), std::string::npos) << describe(c.dims) << ": " << c.failure;
  }
}

// A warm-start file (lib/runtime/warm_start.hpp) may list configurations this version declines (it may
// come from another version): they are not compiled from it; the others are.
TEST(FaultInjection, WarmStartSkipsDeclinedConfigurations) {
  char dir[] = "/tmp/convjit-warm-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  {
    std::ofstream file(std::string(dir) + "/hot-configurations");
    file << "convjit-hot-configurations 1\n";
    // rank layout mode batch in out groups, in_size kernel stride dilation pad_begin pad_end, relu bias
    file << "2 0 0 1 16 16 16 20 24 3 3 1 1 1 1 1 1 1 1 0 0\n";  // NCHW depthwise 3x3: tier 0's own kernel
    file << "2 0 0 1 4 8 1 20 24 3 3 1 1 1 1 1 1 1 1 0 0\n";     // dense: compiled
  }
  Policy policy = eager_policy();
  policy.decline_slower = true;
  policy.cache_dir = dir;
  auto owned = std::make_unique<FailingBackend>(false, nullptr);
  FailingBackend* backend = owned.get();
  Runtime::Impl runtime(policy, std::move(owned), "");
  // A call of the dense configuration waits for its warm compile, requested after the depthwise
  // one would have been.
  const Problem dense(conv(2, Layout::NCHW, 1, 4, 8, 1, {20, 24, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}), 0xFA50, false,
                      Activation::Identity);
  detail::Status status;
  const std::vector<float> y = run_impl(runtime, dense, &status);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_TRUE(dense.matches_reference(y, "y"));
  // Asked for the dense key only (from the file, maybe again by the call after that failed).
  EXPECT_EQ(backend->injected(), std::set<std::string>{"conv2d_fwd_f32_k3x3_s1__avx2"});
  std::filesystem::remove_all(dir);
}

TEST(FaultInjection, VerboseLineReportsTheFailure) {
  Policy policy = eager_policy();
  policy.verbose = true;
  Runtime::Impl faulty(policy, std::make_unique<FailingBackend>(false, nullptr), "");
  const Problem p(conv(2, Layout::NHWC, 1, 3, 12, 1, {7, 8, 1}, {3, 3, 1}), 0xFA20, false, Activation::Relu);
  ::testing::internal::CaptureStderr();
  detail::Status status;
  const std::vector<float> y = run_impl(faulty, p, &status);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_TRUE(p.matches_reference(y, "y"));
  EXPECT_NE(err.find("compile failed"), std::string::npos) << err;
  EXPECT_NE(err.find(std::string(kInjected) + " (conv2d_fwd_f32_k3x3_s1_nhwc_relu__avx2)"), std::string::npos) << err;
  EXPECT_NE(err.find("stays generic"), std::string::npos) << err;
}

}  // namespace
}  // namespace convjit::testing::jit
