// The process's thread team: the calling thread and up to threads-1 persistent workers claim a
// call's tasks, a few at a time, from a shared counter, and the call returns when every task is
// done. Nothing waits for a worker that has not claimed a task (an OpenMP region ends in a barrier
// over all of its threads, so a thread the OS has descheduled stalls every call), and a caller that
// has waited a scheduler slice for a worker's claim runs its calls alone for a while: a busy
// neighbour core costs one stall now and then. A second caller that finds the team busy, and a
// task that calls parallel_for, run their tasks on their own thread. After fork() the child gets
// a new team, started when it first needs one.
#pragma once

#include <cstdint>

namespace convjit::detail {

using TaskFn = void (*)(void* context, int64_t task);

// Runs fn(context, t) for every t in [0, tasks) on this thread and up to threads-1 workers, each
// task exactly once, and returns when all have returned. `work` (the call's flops or element
// visits) sizes the claims.
void run_on_team(int threads, int64_t tasks, double work, TaskFn fn, void* context);

}  // namespace convjit::detail
