// How the kernels use threads: an OpenMP team over independent tasks, each task owning its
// outputs, so results never depend on the thread count. Small problems stay on the calling
// thread, where waking a team costs more than the work.
#pragma once

#include <cstddef>
#include <cstdint>

namespace convjit::detail {

int thread_count();                  // the setting in force (>= 1)
void set_thread_count(int threads);  // 0 = default: CONVJIT_NUM_THREADS, else OpenMP's

// Below this much work (in flops or element visits) a call runs on one thread.
inline constexpr double kParallelWorkThreshold = 2e5;

// How many tasks a call splits into for `threads` threads: a few per thread, so that tasks of
// uneven cost still balance over a static schedule.
inline constexpr int64_t kTasksPerThread = 4;
inline int64_t tasks_wanted(int threads) { return kTasksPerThread * int64_t(threads); }

// After fork() in a process that had started an OpenMP team, the child holds libgomp's pool
// state but none of its threads, and a team would wait for them forever: there every call runs on
// its calling thread (the same bits: each task owns its outputs).
bool teams_unusable_after_fork();
void note_team_started();

// Runs body(task) for task in [0, tasks) on up to `threads` threads. Tasks are split statically
// into contiguous ranges.
template <typename Body>
void parallel_for(int threads, int64_t tasks, double work, Body&& body) {
  if (threads <= 1 || tasks <= 1 || work < kParallelWorkThreshold || teams_unusable_after_fork()) {
    for (int64_t t = 0; t < tasks; ++t) body(t);
    return;
  }
  note_team_started();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < tasks; ++t) body(t);
}

template <typename Body>
void parallel_for(int64_t tasks, double work, Body&& body) {
  parallel_for(thread_count(), tasks, work, body);
}

// This thread's scratch: allocated on first use, reused by every later call on the thread, so
// steady-state calls allocate nothing. 64-byte aligned. Grows only for problems whose smallest
// tile does not fit the default size (1 MiB).
inline constexpr size_t kScratchFloats = (size_t(1) << 20) / sizeof(float);
float* thread_scratch(size_t floats);
// A second per-thread buffer, for operands a call prepares before its kernels run (and use their
// scratch): transposed weights. Same rules: allocated on first use, then reused.
float* thread_operands(size_t floats);
// A third, for a call's operands copied into another layout (lib/rewrite/nhwc_as_nchw.hpp), which may
// themselves be transposed weights in thread_operands.
float* thread_layout_copies(size_t floats);

}  // namespace convjit::detail
