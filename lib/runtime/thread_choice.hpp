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

// Small convolutions (under kSmallCallFlops) are not timed one side at a time: what a team call
// costs lands partly on the calls after it, since the next layer reads the planes the other core
// wrote, so in a network of small layers each side timed amid the other's calls misjudges both
// (bench/RESULTS.md, "Session 25"). A runtime's small calls go in windows of kWindowCalls, every
// call of a window on one side: each cycle of kCycleWindows has kProbeWindows consecutive windows
// whose calls are all timed, the team's and one thread's alternating, and the others follow the
// side the probes chose (below). Where the probes sit in a cycle and
// which side goes first are drawn per cycle (a fixed hash of its number): a training step repeats
// its calls with a period, and probes at fixed places could meet a configuration always on one
// side, or never. Whether the team pays for small layers is the host's: it did not on session 25's
// busy Zen 5 and did on session 34's Zen 4 (bench/RESULTS.md, "Session 34").
//
// Outside the probes every small call takes one side, the runtime's: the one on which its small
// calls ran faster in the probes, each probe call counting its configuration's mean time on
// either side (SmallCalls), that is the side that makes such a network's calls the faster, as far
// as the probes measure it.
// Each configuration taking its own faster side mixes the sides in a window, which no probe
// measures: on a quiet Zen 5 the seed network's step ran 6-12% slower that way on 2 threads than
// on one, and as fast as on one with every small call alone (bench/RESULTS.md, "Session 40").
// Where the other side is more than kFarSlower times slower so, a cycle probes only every
// kRareProbe-th time: an eighth of the small calls probing, half of them on a side 1.9 times
// slower, had cost the seed network's step 5% on its own.
inline constexpr double kSmallCallFlops = 4e6;
inline constexpr int64_t kWindowCalls = 128;
inline constexpr int64_t kProbeWindows = 4;
inline constexpr int64_t kCycleWindows = 32;

inline constexpr int64_t kRareProbe = 8;
inline constexpr double kFarSlower = 1.5;
inline constexpr int64_t kSettled = 3;

// The threads a call may use, and whether it is small (a convolution under kSmallCallFlops).
struct CallThreads {
  int threads;
  bool small;
};
CallThreads conv_call_threads(int threads, double flops);

// For a runtime's small call number n (from 0): the side its window probes (+1 one thread, 0 the
// team), or -1 where the window follows the small calls' side; rare: only every kRareProbe-th cycle
// probes.
int small_call_probe(int64_t n, bool rare = false);

// The side of a runtime's small calls outside the probes (1 one thread, 0 the team; -1 until
// some configuration is timed on both: each takes its own faster side), and whether they probe
// rarely (the other side far slower).
struct SmallSide {
  int side = -1;
  bool rare = false;
};
// A runtime's small calls: how many so far (their windows), their side, and what the probes
// since it was last decided say of either side.
class SmallCalls {
 public:
  int64_t next() { return count_.fetch_add(1, std::memory_order_relaxed); }  // a small call's number
  SmallSide side() const;
  // After a probe call of a configuration (its times, with that call's): its mean on either side
  // into the sums, where both are timed.
  void add_probe(const ThreadTimes& times);
  // The side from the sums since the last decision, which it clears; the side stays where the
  // sums are empty (no probe since).
  void decide();

 private:
  std::atomic<int64_t> count_{0};
  std::atomic<int> side_{-1};
  std::atomic<bool> rare_{false};
  std::atomic<int64_t> probe_ns_[2] = {0, 0};  // [0] one thread, [1] the team
};

// How a call of a configuration (its times) runs: on one thread or the team, and whether its time
// goes into the choice. adapt: the runtime adapts and the call may use more than one thread;
// small_call: its number among the runtime's small calls (-1: not small); sample: its number among
// its tier's timed calls (-1: not timed); small: the runtime's small calls' side.
struct CallChoice {
  bool alone;
  bool timed;
};
CallChoice choose_call_threads(const ThreadTimes& times, bool adapt, int64_t small_call, int64_t sample,
                               SmallSide small = {});

// Whether a call runs on one thread: `sample` is the number of a timed call of its tier (from 0),
// or -1 for a call that is not timed.
bool runs_alone(const ThreadTimes& times, int64_t sample);
// A timed call's time into its side's running mean (a quarter of the new time; races between
// callers can lose a sample, never make one up).
void record_time(ThreadTimes& times, bool alone, int64_t ns);

}  // namespace convjit::detail
