// Inline compiles racing on one specialization key (lib/runtime/runtime.cpp, Impl::compile: "sixteen
// threads making one key hot cause one compile; the others find it cached"). With async
// compiles a single worker serializes everything; inline, each calling thread compiles for its
// own configuration, so several configurations sharing a key can reach compile() at once. A
// backend that takes its time (100 ms, then the real Xbyak backend) makes the overlap certain:
// the first thread holds the compile lock while the others wait behind it.
//
// Expected: one backend compile, one kernel, and RuntimeStats::compiles == 1 (compiles counts
// kernels generated, so compiles == kernels), every configuration on that kernel, every result
// equal to the generic tier's.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "jit_support.hpp"
#include "runtime_impl.hpp"

namespace convjit::testing::jit {
namespace {

class SlowBackend : public convjit::jit::Backend {
 public:
  explicit SlowBackend(std::unique_ptr<convjit::jit::Backend> real) : real_(std::move(real)) {}
  const char* name() const override { return "slow"; }
  std::string unavailable_reason() const override { return {}; }
  convjit::jit::Isa isa_for(const convjit_conv_problem& problem, convjit::jit::Isa cap) const override {
    return real_ ? real_->isa_for(problem, cap) : convjit::jit::Isa::Avx2Fma;
  }
  std::string decline_reason(const convjit_conv_problem&, const convjit::jit::SpecKey&) const override { return {}; }
  bool compile(const convjit::jit::SpecKey& key, convjit::jit::CompiledKernel* out, std::string* error) override {
    calls_.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return real_->compile(key, out, error);
  }
  int64_t calls() const { return calls_.load(); }

 private:
  std::unique_ptr<convjit::jit::Backend> real_;
  std::atomic<int64_t> calls_{0};
};

TEST(CompileRace, InlineCompilesOfOneKeyCountOneCompile) {
#if defined(CONVJIT_HAVE_XBYAK)
  std::unique_ptr<convjit::jit::Backend> real = convjit::jit::make_xbyak_backend();
  if (const std::string reason = real->unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
#else
  GTEST_SKIP() << "built without Xbyak";
  std::unique_ptr<convjit::jit::Backend> real;
#endif
  auto owned = std::make_unique<SlowBackend>(std::move(real));
  SlowBackend* backend = owned.get();
  Runtime::Impl runtime(eager_policy(1), std::move(owned), "");  // threshold 0, inline
  Runtime generic(generic_policy());

  // Four configurations of one key (NHWC 3x3 stride 1: channels and sizes are runtime values).
  constexpr int kThreads = 4;
  std::vector<Problem> problems;
  for (int t = 0; t < kThreads; ++t) {
    problems.emplace_back(conv(2, Layout::NHWC, 1, 3 + t, 9 + t, 1, {6 + t, 20, 1}, {3, 3, 1}), case_seed(0xACE, t),
                          false, Activation::Identity);
  }
  std::vector<std::vector<float>> y(kThreads);
  std::vector<bool> ok(kThreads, false);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Problem& p = problems[size_t(t)];
      y[size_t(t)] = nan_buffer(p.outputs());
      const convjit_conv_params params = p.dims.to_c();
      start.arrive_and_wait();
      ok[size_t(t)] = runtime.conv_forward(&params, p.x.data(), p.w.data(), nullptr, 0, y[size_t(t)].data()).ok();
    });
  }
  for (std::thread& t : threads) t.join();

  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(ok[size_t(t)]) << "thread " << t;
    EXPECT_TRUE(problems[size_t(t)].same_bits(y[size_t(t)], problems[size_t(t)].run(generic), "vs generic"));
  }
  const RuntimeStats stats = runtime.stats();
  EXPECT_EQ(backend->calls(), 1) << "the key was generated more than once";
  EXPECT_EQ(stats.kernels, 1);
  EXPECT_EQ(stats.compiles, stats.kernels) << "compiles counts a kernel generated once as " << stats.compiles;
  ASSERT_EQ(stats.configurations.size(), size_t(kThreads));
  for (const ConfigStats& c : stats.configurations) {
    EXPECT_EQ(c.state, "jit") << describe(c.dims);
    EXPECT_EQ(c.kernel, "conv2d_fwd_f32_k3x3_s1_nhwc__" + kernel_isa()) << describe(c.dims);
    EXPECT_EQ(c.calls_jit, 1) << describe(c.dims);
  }
}

}  // namespace
}  // namespace convjit::testing::jit
