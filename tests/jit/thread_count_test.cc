// README "Threads": every op gives bitwise-identical results for any thread count, and
// runtime.hpp: "Results are bitwise identical on every tier and for every thread count". Here on
// the JIT tier: each configuration compiled on first sight, inline, with policy num_threads 1, 2
// and 3 (other tilings of the same work: plan_forward sizes tiles by the thread count), against
// a generic-only runtime and the oracle. Rows are widened so the row kernels run on most of
// each output.
#include <gtest/gtest.h>

#include <vector>

#include "jit_support.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing::jit {
namespace {

// lib/threads/threads.hpp's kParallelWorkThreshold (2e5 flops): smaller calls stay on one thread.
constexpr int64_t kParallelMultiplyAdds = 100000;

// Every call on the policy's threads (the adapting default may run a call on one).
Policy all_threads(Policy p, int threads) {
  p.num_threads = threads;
  p.adapt_threads = false;
  return p;
}

TEST(JitThreadCount, BitwiseIdenticalForOneTwoAndThreeThreads) {
  Runtime one(all_threads(eager_policy(), 1)), two(all_threads(eager_policy(), 2)),
      three(all_threads(eager_policy(), 3));
  const Policy generic_p = all_threads(generic_policy(), 2);
  Runtime generic(generic_p);
  CONVJIT_SKIP_WITHOUT_BACKEND(one);

  // Long output rows, so the compiled row kernels really run (shorter segments go generic).
  std::vector<ConvDims> shapes = long_row_sweep(0x7C01, 88);
  for (const ConvDims& d : larger_conv_shapes()) shapes.push_back(d);

  int failures = 0;
  int64_t parallel_sized = 0;
  for (size_t i = 0; i < shapes.size() && failures < 10; ++i) {
    const Problem p(shapes[i], case_seed(0x7C01, i));
    parallel_sized += p.multiply_adds() >= kParallelMultiplyAdds;
    const std::vector<float> y1 = p.run(one), y2 = p.run(two), y3 = p.run(three), yg = p.run(generic);
    const auto close = p.matches_reference(y1, "1 thread");
    const auto same2 = p.same_bits(y2, y1, "2 threads vs 1");
    const auto same3 = p.same_bits(y3, y1, "3 threads vs 1");
    const auto same_generic = p.same_bits(y1, yg, "JIT vs generic");
    EXPECT_TRUE(close) << "case " << i;
    EXPECT_TRUE(same2) << "case " << i;
    EXPECT_TRUE(same3) << "case " << i;
    EXPECT_TRUE(same_generic) << "case " << i;
    failures += !close || !same2 || !same3 || !same_generic;
  }
  // The comparison means something only if many calls were big enough to be split over threads
  // and really ran compiled code.
  EXPECT_GE(parallel_sized, 30) << "too few shapes above the parallel threshold";
  for (Runtime* r : {&one, &two, &three}) {
    const RuntimeStats stats = r->stats();
    int64_t jit_calls = 0;
    for (const ConfigStats& c : stats.configurations) jit_calls += c.calls_jit;
    EXPECT_GE(jit_calls, int64_t(shapes.size()) / 2)
        << "threads " << r->policy().num_threads << ": compiled " << stats.compiles << ", failed "
        << stats.compile_failures;
  }
}

}  // namespace
}  // namespace convjit::testing::jit
