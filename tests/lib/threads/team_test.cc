// lib/threads/team.cpp: every task runs exactly once, on the caller and the workers, for every
// thread count, claim size and caller count, nested calls included, and over calls back to back;
// the workers do take part.
#include "team.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "threads.hpp"

namespace convjit::detail {
namespace {

struct Counts {
  std::vector<std::atomic<int>> runs;
  explicit Counts(int64_t tasks) : runs(size_t(tasks)) {}
  void expect_each_once(const char* what) const {
    for (size_t t = 0; t < runs.size(); ++t) {
      ASSERT_EQ(runs[t].load(), 1) << what << ": task " << t << " of " << runs.size();
    }
  }
};

void count_task(void* context, int64_t task) {
  static_cast<Counts*>(context)->runs[size_t(task)].fetch_add(1);
}

TEST(Team, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t tasks : {0, 1, 2, 7, 64, 1000}) {
      for (double work : {1.0, 1e5 * double(tasks), 1e9}) {  // claims of many tasks, of a few, of one
        Counts counts(tasks);
        run_on_team(threads, tasks, work, count_task, &counts);
        const std::string what =
            "threads " + std::to_string(threads) + " tasks " + std::to_string(tasks) + " work " + std::to_string(work);
        counts.expect_each_once(what.c_str());
      }
    }
  }
}

// Calls back to back whose contexts share one address and whose task counts grow: a worker still
// reading the last call's fields must not pair the new context and count with the old call's
// last claim (it ran tasks twice and returned calls early; ThreadSanitizer saw it in CI).
TEST(Team, BackToBackCallsOfGrowingSizeRunEachTaskOnce) {
  for (int call = 0; call < 4000; ++call) {
    const int64_t tasks = call % 2 ? 97 : 3;
    Counts counts(tasks);
    run_on_team(2, tasks, 1e9, count_task, &counts);
    counts.expect_each_once(("call " + std::to_string(call)).c_str());
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// A worker that was slow once (an earlier test's, under a sanitizer) sends calls to their own
// thread for up to 200 ms at a time, so this tries for up to two seconds.
TEST(Team, WorkersTakePart) {
  std::mutex mutex;
  std::set<std::thread::id> ran_on;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (ran_on.size() < 2 && std::chrono::steady_clock::now() < give_up) {
    parallel_for(2, 16, 1e9, [&](int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // long enough for a worker to claim
      std::lock_guard<std::mutex> lock(mutex);
      ran_on.insert(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(ran_on.size(), 2u) << "calls of 16 tasks of 1 ms on 2 threads ran on one thread for 2 s";
}

TEST(Team, ConcurrentCallersAndNestedCalls) {
  constexpr int kCallers = 4, kCalls = 200;
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int call = 0; call < kCalls; ++call) {
        const int64_t tasks = 1 + (c * 31 + call * 17) % 97;
        Counts outer(tasks);
        std::vector<Counts> inner;
        inner.reserve(size_t(tasks));
        for (int64_t t = 0; t < tasks; ++t) inner.emplace_back(5);
        parallel_for(2, tasks, 1e9, [&](int64_t t) {
          outer.runs[size_t(t)].fetch_add(1);
          run_on_team(2, 5, 1e9, count_task, &inner[size_t(t)]);  // from inside a task: its own thread
        });
        for (int64_t t = 0; t < tasks; ++t) {
          if (outer.runs[size_t(t)].load() != 1) failures.fetch_add(1);
          for (const auto& r : inner[size_t(t)].runs) {
            if (r.load() != 1) failures.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace convjit::detail
