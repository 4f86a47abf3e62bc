// Threads per configuration (Policy::adapt_threads). A call's results do not depend on its thread
// count, only its time does, and a small call can run slower on the team than alone: in a training
// step every layer's data moves between the cores, and a busy host slows the second vCPU
// (bench/RESULTS.md, "Session 21": the seed network's 2-thread epoch 1.4 s against 1.05 s on one).
// So the timed calls of a configuration (one in kSampleEvery per tier) alternate between one
// thread and the team, each side keeping a running mean of its times, and the calls between them
// take the side that ran faster lately. A side more than kFarSlower times slower, both sides timed
// kSettled times, is timed only every kRareProbe-th timed call, so a large call loses little to its
// probes of one thread. A time more than twice its side's mean counts as twice the mean: one
// preemption (or a cold first call) does not turn the choice.
#pragma once

#include <atomic>
#include <cstdint>

namespace convjit::detail {

struct ThreadTimes {
  std::atomic<int64_t> mean_ns[2] = {0, 0};  // [0] one thread, [1] the team; 0: not timed yet
  std::atomic<int64_t> samples[2] = {0, 0};  // times recorded per side

  void clear();  // not timed yet (a recycled detector slot)
};

// And with adapt_threads a convolution of fewer flops than this runs on its calling thread,
// whatever its own timings say. Each thread choice is timed alone, but what a team call costs
// lands partly on the calls after it: the next layer reads the planes the other core wrote, so
// in a network of small layers both sides time slow, the team a little less, and the choices
// made the whole step slower than one thread (bench/RESULTS.md, "Session 25").
inline constexpr double kMinTeamFlops = 4e6;

inline constexpr int64_t kRareProbe = 8;
inline constexpr double kFarSlower = 1.5;
inline constexpr int64_t kSettled = 3;

// The threads a convolution of `flops` may use: `threads`, or one below kMinTeamFlops where the
// runtime adapts its threads (adapt).
int conv_call_threads(int threads, bool adapt, double flops);

// Whether a call runs on one thread: `sample` is the number of a timed call of its tier (from 0),
// or -1 for a call that is not timed.
bool runs_alone(const ThreadTimes& times, int64_t sample);
// A timed call's time into its side's running mean (a quarter of the new time; races between
// callers can lose a sample, never make one up).
void record_time(ThreadTimes& times, bool alone, int64_t ns);

}  // namespace convjit::detail
