// fork() in a process that has used convjit (lib/runtime/fork.cpp, lib/threads/threads.hpp): the
// child must not hang. Before forking, the parent runs calls big enough for an OpenMP team and has
// compiles queued on its background worker; the child then runs a call that would use several
// threads (same bits as the parent's), makes a new configuration hot and gets it compiled, waits
// for its compiles, and exits through the runtimes' destructors. Each child has a deadline; one
// that has not exited by then is killed and the test fails.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "convjit/convjit.h"
#include "convjit/runtime.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

constexpr int kChildSeconds = 60;

// A problem well above the parallel threshold.
ConvDims big_problem() { return conv(2, Layout::NCHW, 2, 16, 32, 1, {40, 40, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}); }

std::vector<float> run(Runtime& runtime, const ConvDims& d, uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> x = random_floats(rng, d.input_elements()), w = random_floats(rng, d.weight_elements());
  std::vector<float> y(size_t(d.output_elements()));
  runtime.conv_forward(d, x.data(), w.data(), nullptr, Activation::Relu, y.data());
  return y;
}

// Runs child() in a forked process; its return value is the exit status (0: all held). The parent
// waits at most kChildSeconds.
template <typename Child>
::testing::AssertionResult in_child(Child&& child) {
  const pid_t pid = fork();
  if (pid < 0) return ::testing::AssertionFailure() << "fork failed: " << std::strerror(errno);
  if (pid == 0) {
    alarm(kChildSeconds + 5);  // a hung child must not outlive the test run
    std::exit(child());        // exit, not _exit: the runtimes' destructors and atexit handlers run
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kChildSeconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return ::testing::AssertionFailure() << "the child hung (killed after " << kChildSeconds << " s)";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFSIGNALED(status)) return ::testing::AssertionFailure() << "the child died of signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) != 0) return ::testing::AssertionFailure() << "the child failed check " << WEXITSTATUS(status);
  return ::testing::AssertionSuccess();
}

Policy async_policy() {
  Policy p = Policy::from_environment();
  p.hot_threshold = 1;
  p.async = true;
  p.num_threads = 2;
  return p;
}

TEST(Fork, TheChildComputesCompilesWaitsAndExits) {
  Runtime runtime(async_policy());
  const ConvDims big = big_problem();
  const std::vector<float> before = run(runtime, big, 1);  // an OpenMP team has run
  // Compiles queued on the worker at the moment of the fork.
  for (int64_t c = 1; c <= 12; ++c) run(runtime, conv(2, Layout::NCHW, 1, c, 8, 1, {20, 20, 1}, {3, 3, 1}), 7);

  EXPECT_TRUE(in_child([&] {
    const std::vector<float> again = run(runtime, big, 1);
    if (std::memcmp(again.data(), before.data(), before.size() * sizeof(float)) != 0) return 1;
    // A configuration new to the child: hot at its first call, compiled by a fresh worker.
    const ConvDims fresh = conv(2, Layout::NCHW, 1, 5, 8, 1, {24, 24, 1}, {5, 5, 1});
    run(runtime, fresh, 3);
    runtime.wait_for_compiles();
    const RuntimeStats stats = runtime.stats();
    if (stats.backend != "none" && stats.kernels == 0) return 2;
    if (convjit_runtime_wait(convjit_default_runtime()) != CONVJIT_OK) return 3;
    return 0;
  }));
  // The parent goes on as before.
  const std::vector<float> after = run(runtime, big, 1);
  EXPECT_EQ(std::memcmp(after.data(), before.data(), before.size() * sizeof(float)), 0);
  runtime.wait_for_compiles();
}

// The process-wide default runtime, destroyed at the child's exit, with its worker started in the
// parent (the configurations made hot by calling them past the threshold).
TEST(Fork, AChildThatNeverCallsTheLibraryExits) {
  Runtime& runtime = Runtime::process_default();
  run(runtime, big_problem(), 2);
  for (int64_t c = 1; c <= 12; ++c) {
    for (int64_t call = 0; call <= runtime.policy().hot_threshold; ++call) {
      run(runtime, conv(2, Layout::NHWC, 1, c, 40, 1, {20, 20, 1}, {3, 3, 1}), 9);
    }
  }
  EXPECT_TRUE(in_child([] { return 0; }));
  runtime.wait_for_compiles();
}

}  // namespace
}  // namespace convjit::testing
