// How the kernels use threads: the team (team.hpp) over independent tasks, each task owning its
// outputs, so results never depend on the thread count or on which thread ran a task. Small
// problems stay on the calling thread, where waking a team costs more than the work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "team.hpp"

namespace convjit::detail {

int thread_count();                  // the setting in force (>= 1)
void set_thread_count(int threads);  // 0 = default: CONVJIT_NUM_THREADS, else the CPUs this process may use

// The L2 cache of one core, in bytes: the OS's figure (sysconf), else 1 MiB; read once.
int64_t l2_cache_bytes();

// Below this much work (in flops or element visits) a call runs on one thread.
inline constexpr double kParallelWorkThreshold = 2e5;

// How many tasks a call splits into for `threads` threads: a few per thread, so that tasks of
// uneven cost, and a thread the OS has descheduled, still balance.
inline constexpr int64_t kTasksPerThread = 4;
inline int64_t tasks_wanted(int threads) {
  return kTasksPerThread * int64_t(threads);
}

// Runs body(task) for task in [0, tasks) on up to `threads` threads, tasks claimed a few at a time.
template <typename Body>
void parallel_for(int threads, int64_t tasks, double work, Body&& body) {
  if (threads <= 1 || tasks <= 1 || work < kParallelWorkThreshold) {
    for (int64_t t = 0; t < tasks; ++t) body(t);
    return;
  }
  using B = std::remove_reference_t<Body>;
  run_on_team(
      threads, tasks, work, [](void* context, int64_t task) { (*static_cast<B*>(context))(task); },
      const_cast<void*>(static_cast<const void*>(&body)));
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
// scratch): transposed weights, a kernel's per-call plan. Same rules: allocated on first use, then reused.
float* thread_operands(size_t floats);
// A third, for a call's operands copied into another layout (lib/rewrite/nhwc_as_nchw.hpp), which may
// themselves be transposed weights in thread_operands.
float* thread_layout_copies(size_t floats);
// A fourth, for the output a rewritten problem computes before it is spread into the caller's
// (lib/rewrite/backward_as_forward.hpp), while the others may hold its operands.
float* thread_rewrite_outputs(size_t floats);
// A fifth, for the map of a call's flattened grids (lib/driver/conv_forward.cpp), which the team's
// threads read while the calling thread's scratch holds its own tiles.
float* thread_grid_maps(size_t floats);

}  // namespace convjit::detail
