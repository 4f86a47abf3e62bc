// One Runtime, eight threads (runtime.hpp: "every method is thread-safe"; README.md, "How a call
// runs": the fast path "takes no global lock"). Each thread loops over a mixed set of configurations
// (both layouts, ranks 1-3, several kernel sizes and strides, relu and convolution mode) while
// the detector makes them hot (threshold 2) and the background worker compiles them, and checks
// every result bitwise against the generic tier computed beforehand. Configurations are grouped
// by the specialization key they should share (channels, batch and image size are runtime
// values), so the stats can be checked too: one compile per key, every call counted once.
//
// Built a second time under ThreadSanitizer by tests/jit/run_tsan_test.sh (ctest label "tsan").
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <latch>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "jit_support.hpp"

namespace convjit::testing::jit {
namespace {

struct Entry {
  char key_group;  // configurations with the same letter share a specialization key
  ConvDims dims;
  bool bias;
  Activation activation;
};

std::vector<Entry> mixed_configurations() {
  constexpr Layout C = Layout::NCHW, L = Layout::NHWC;
  constexpr Activation Id = Activation::Identity, Relu = Activation::Relu;
  const Extent s1{1, 1, 1}, s2{2, 2, 1}, p0{0, 0, 0}, p1{1, 1, 0}, p2{2, 2, 0}, d1{1, 1, 1};
  const Extent k1{1, 1, 1}, k3{3, 3, 1}, k5{5, 5, 1}, k7{7, 7, 1};
  // Rows are long enough for the row kernels to run (and not be declined), except in the entry
  // marked "declined": the backend expects the generic tier to win there, so it stays generic
  // under the default policy (exercising that path concurrently too).
  return {
      // A: NCHW 3x3 stride 1, 4+ output channels per group.
      {'A', conv(2, C, 1, 3, 4, 1, {12, 24, 1}, k3, s1, p1), false, Id},
      {'A', conv(2, C, 2, 5, 8, 1, {9, 30, 1}, k3, s1, p0), true, Id},
      {'A', conv(2, C, 1, 4, 9, 1, {14, 20, 1}, k3, s1, p1), false, Id},
      {'A', conv(2, C, 1, 3, 4, 1, {10, 9, 1}, k3, s1, p0), false, Id},  // declined: rows of 7
      // B: NHWC 3x3 stride 1 (channels never in the key): dense, with and without bias.
      // (NHWC with 8 or fewer output channels per group runs as NCHW: lib/rewrite/nhwc_as_nchw.hpp.)
      {'B', conv(2, L, 1, 3, 16, 1, {12, 24, 1}, k3, s1, p1), false, Id},
      {'B', conv(2, L, 1, 3, 16, 1, {12, 24, 1}, k3, s1, p1), true, Id},
      {'B', conv(2, L, 2, 8, 12, 1, {10, 20, 1}, k3, s1, p0), false, Id},
      {'B', conv(2, L, 1, 2, 18, 2, {11, 20, 1}, k3, s1, p1), true, Id},
      // C: NCHW 1x1.
      {'C', conv(2, C, 1, 16, 16, 1, {8, 24, 1}, k1), false, Id},
      {'C', conv(2, C, 2, 6, 12, 1, {7, 20, 1}, k1), true, Id},
      // D: NHWC 5x5 stride 2.
      {'D', conv(2, L, 1, 4, 12, 1, {15, 30, 1}, k5, s2, p2), false, Id},
      {'D', conv(2, L, 1, 3, 17, 1, {13, 34, 1}, k5, s2, p2), true, Id},
      // E: NCHW 3x3 stride 2 with relu.
      {'E', conv(2, C, 1, 3, 8, 1, {15, 40, 1}, k3, s2, p1), true, Relu},
      {'E', conv(2, C, 2, 2, 4, 1, {11, 38, 1}, k3, s2, p1), false, Relu},
      // F: NCHW depthwise 7x7 (one output channel per group: its own channel class; its NHWC twin's
      // depthwise kernel is compiled; smaller kernels may be the generic tier's NCHW one's, declined).
      {'F', conv(2, C, 1, 6, 6, 6, {12, 36, 1}, k7, s1, {3, 3, 0}), false, Id},
      // G: NCHW 3x3 in convolution mode (flipped).
      {'G', conv(2, C, 1, 4, 8, 1, {10, 24, 1}, k3, s1, p1, d1, Mode::Convolution), false, Id},
      // H, I: 1D kernel 5, each layout.
      {'H', conv(1, C, 2, 4, 8, 1, {60, 1, 1}, {5, 1, 1}, s1, {2, 0, 0}), false, Id},
      {'I', conv(1, L, 2, 4, 12, 1, {60, 1, 1}, {5, 1, 1}, s1, {2, 0, 0}), true, Id},
      // J: 3D NHWC 3x3x3.
      {'J', conv(3, L, 1, 3, 12, 1, {6, 7, 16}, {3, 3, 3}, s1, {1, 1, 1}), false, Id},
      // K: NCHW stride 3 (the NCHW generator may refuse it: then both stay generic, "failed").
      {'K', conv(2, C, 1, 3, 4, 1, {14, 60, 1}, k3, {3, 3, 1}, p1), false, Id},
      {'K', conv(2, C, 1, 2, 5, 1, {17, 50, 1}, k3, {3, 3, 1}, p0), true, Id},
      // L: NHWC 7x7 stride 2, a stem.
      {'L', conv(2, L, 1, 3, 16, 1, {20, 40, 1}, k7, s2, {3, 3, 0}), false, Id},
      // M: NHWC depthwise 3x3 over 8 channels: the depthwise rows, whose key has the groups.
      {'M', conv(2, L, 1, 8, 8, 8, {11, 20, 1}, k3, s1, p1), true, Id},
  };
}

std::string config_name(const ConvDims& dims, bool bias, Activation activation) {
  return describe(dims) + (bias ? " +bias" : "") + (activation == Activation::Relu ? " relu" : "");
}

// Each entry's problem (inputs from `seed`) and its generic-tier result, checked against the oracle.
void prepare(const std::vector<Entry>& entries, uint64_t seed, std::vector<Problem>* problems,
             std::vector<std::vector<float>>* expected) {
  Runtime generic(generic_policy());
  for (size_t i = 0; i < entries.size(); ++i) {
    problems->emplace_back(entries[i].dims, case_seed(seed, i), entries[i].bias, entries[i].activation);
    expected->push_back(problems->back().run(generic));
    ASSERT_TRUE(problems->back().matches_reference(expected->back(), "generic y")) << "entry " << i;
  }
}

struct Mismatch {
  int thread, round;
  size_t entry;
};

TEST(Concurrency, EightThreadsOneRuntimeBitwiseAndCountedOnce) {
  constexpr int kThreads = 8, kRounds = 6;
  Policy policy;
  policy.backend = Backend::Auto;
  policy.async = true;
  policy.hot_threshold = 2;
  policy.num_threads = 0;        // the process setting (CONVJIT_NUM_THREADS=2 under TSan)
  policy.adapt_threads = false;  // every call on them: small convolutions too
  Runtime runtime(policy);
  CONVJIT_SKIP_WITHOUT_BACKEND(runtime);

  const std::vector<Entry> entries = mixed_configurations();
  std::vector<Problem> problems;
  std::vector<std::vector<float>> expected;
  ASSERT_NO_FATAL_FAILURE(prepare(entries, 0xC0C0, &problems, &expected));

  std::vector<std::vector<Mismatch>> mismatches(kThreads);
  std::atomic<int64_t> stats_reads{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::vector<float>> y(problems.size());
      for (size_t i = 0; i < problems.size(); ++i) y[i].resize(size_t(problems[i].outputs()));
      start.arrive_and_wait();
      int64_t calls = 0;
      for (int round = 0; round < kRounds; ++round) {
        for (size_t k = 0; k < problems.size(); ++k) {
          const size_t i = (k + size_t(t) * 3) % problems.size();  // each thread its own order
          const Problem& p = problems[i];
          std::fill(y[i].begin(), y[i].end(), std::numeric_limits<float>::quiet_NaN());
          runtime.conv_forward(p.dims, p.x.data(), p.w.data(), p.bias_ptr(), p.activation, y[i].data());
          if (!same_bytes(y[i], expected[i])) mismatches[size_t(t)].push_back({t, round, i});
          // Half of the threads also read the stats while the others call and the worker compiles.
          if (t % 2 == 0 && ++calls % 7 == 0) stats_reads += int64_t(runtime.stats().configurations.size()) > 0;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  runtime.wait_for_compiles();

  int64_t wrong = 0;
  for (const auto& list : mismatches) {
    for (const Mismatch& m : list) {
      if (++wrong <= 10) {
        ADD_FAILURE() << "thread " << m.thread << " round " << m.round << ": not bitwise equal to generic: "
                      << config_name(entries[m.entry].dims, entries[m.entry].bias, entries[m.entry].activation);
      }
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(stats_reads.load(), 0);

  // One more call of each from here: whatever compiled has arrived, so these run it.
  for (size_t i = 0; i < problems.size(); ++i) {
    EXPECT_TRUE(problems[i].same_bits(problems[i].run(runtime), expected[i], "after the compiles")) << "entry " << i;
  }

  const RuntimeStats stats = runtime.stats();
  ASSERT_EQ(stats.configurations.size(), entries.size());
  std::map<std::string, const ConfigStats*> by_name;
  for (const ConfigStats& c : stats.configurations) by_name[config_name(c.dims, c.has_bias, c.activation)] = &c;
  ASSERT_EQ(by_name.size(), entries.size());

  std::map<char, std::set<std::string>> kernels_of_group;  // compiled kernel names per key group
  std::set<std::string> kernel_names;
  int64_t failed = 0, jit_calls = 0, total_calls = 0;
  for (const Entry& e : entries) {
    const std::string name = config_name(e.dims, e.bias, e.activation);
    ASSERT_TRUE(by_name.count(name)) << "no stats for " << name;
    const ConfigStats& c = *by_name[name];
    EXPECT_EQ(c.calls_generic + c.calls_jit, kThreads * kRounds + 1) << name;
    jit_calls += c.calls_jit;
    total_calls += c.calls_generic + c.calls_jit;
    if (c.state == "jit") {
      EXPECT_GE(c.calls_jit, 1) << name;
      EXPECT_FALSE(c.kernel.empty()) << name;
      kernel_names.insert(c.kernel);
      kernels_of_group[e.key_group].insert(c.kernel);
    } else {
      // Every configuration was called past the threshold: compiled, failed or declined.
      EXPECT_TRUE(c.state == "failed" || c.state == "declined") << name << ": " << c.state;
      EXPECT_EQ(c.calls_jit, 0) << name;
      EXPECT_TRUE(c.kernel.empty()) << name << ": " << c.kernel;
      EXPECT_FALSE(c.failure.empty()) << name << " is " << c.state << " without a reason";
      failed += c.state == "failed";
    }
  }
  // Same key, same kernel; different keys, different kernels.
  std::map<std::string, char> group_of_kernel;
  for (const auto& [group, names] : kernels_of_group) {
    EXPECT_EQ(names.size(), 1u) << "key group " << group << " got " << names.size() << " different kernels";
    for (const std::string& n : names) {
      const auto [it, fresh] = group_of_kernel.emplace(n, group);
      EXPECT_TRUE(fresh) << "key groups " << it->second << " and " << group << " share kernel " << n;
    }
  }
  std::printf("%zu configurations: %zu kernels, %lld jit, %lld failed, %lld declined; %lld JIT calls of %lld\n",
              entries.size(), kernel_names.size(), (long long)count_state(stats, "jit"), (long long)failed,
              (long long)count_state(stats, "declined"), (long long)jit_calls, (long long)total_calls);
  EXPECT_GE(kernel_names.size(), 10u) << "too few configurations compiled for the test to mean much";
  EXPECT_EQ(stats.kernels, int64_t(kernel_names.size()));
  EXPECT_EQ(stats.compiles, stats.kernels) << "a specialization key was compiled more than once";
  EXPECT_EQ(stats.compile_failures, failed);
  EXPECT_GT(stats.code_bytes, 0);
  EXPECT_EQ(count_state(stats, "queued") + count_state(stats, "cold"), 0);
}

// Eviction under pressure: a code budget that holds a few kernels, the mixed
// configurations' dozen keys hot on eight threads at once (threshold 1, compiles in the
// background), so kernels are evicted and compiled again while other threads run them. Every
// result stays bitwise the generic tier's, and the kernels never hold more than the budget
// (sampled by a ninth thread). Under AddressSanitizer a kernel unmapped while running would fault,
// and ThreadSanitizer (run_tsan_test.sh) checks the slots' and the grace periods' ordering.
TEST(Concurrency, EvictionUnderPressureKeepsEveryResultBitwise) {
  constexpr int kThreads = 8, kRounds = 12;
  constexpr int64_t kBudget = 6 * 4096;
  Policy policy;
  policy.backend = Backend::Auto;
  policy.async = true;
  policy.hot_threshold = 1;
  policy.decline_slower = false;
  policy.code_budget_bytes = kBudget;
  Runtime runtime(policy);
  CONVJIT_SKIP_WITHOUT_BACKEND(runtime);

  const std::vector<Entry> entries = mixed_configurations();
  std::vector<Problem> problems;
  std::vector<std::vector<float>> expected;
  ASSERT_NO_FATAL_FAILURE(prepare(entries, 0xE71C, &problems, &expected));

  std::atomic<int64_t> wrong{0}, over_budget{0};
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done.load()) {
      if (runtime.stats().mapped_bytes > kBudget) over_budget.fetch_add(1);
      std::this_thread::yield();
    }
  });
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> y;
      start.arrive_and_wait();
      for (int round = 0; round < kRounds; ++round) {
        for (size_t k = 0; k < problems.size(); ++k) {
          const size_t i = (k + size_t(t) * 5) % problems.size();
          const Problem& p = problems[i];
          y.assign(size_t(p.outputs()), std::numeric_limits<float>::quiet_NaN());
          runtime.conv_forward(p.dims, p.x.data(), p.w.data(), p.bias_ptr(), p.activation, y.data());
          if (!same_bytes(y, expected[i])) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  runtime.wait_for_compiles();
  done.store(true);
  sampler.join();

  const RuntimeStats stats = runtime.stats();
  EXPECT_EQ(wrong.load(), 0) << "results not bitwise the generic tier's";
  EXPECT_EQ(over_budget.load(), 0) << "the kernels held more than the budget";
  EXPECT_LE(stats.mapped_bytes, kBudget);
  EXPECT_GE(stats.kernel_evictions, 1) << "the budget was never full: the test proves nothing";
  EXPECT_EQ(stats.compiles, stats.kernels + stats.kernel_evictions) << "every kernel compiled is held or was evicted";
  std::printf(
      "%lld compiles, %lld kernels evicted, %lld kernels left (%lld bytes mapped); %lld JIT calls\n",
      (long long)stats.compiles, (long long)stats.kernel_evictions, (long long)stats.kernels,
      (long long)stats.mapped_bytes, (long long)[&] {
        int64_t jit = 0;
        for (const ConfigStats& c : stats.configurations) jit += c.calls_jit;
        return jit;
      }());
}

}  // namespace
}  // namespace convjit::testing::jit
