#include "thread_choice.hpp"

#include <algorithm>

namespace convjit::detail {

bool runs_alone(const ThreadTimes& times, int64_t sample) {
  const int64_t alone = times.mean_ns[0].load(std::memory_order_relaxed);
  const int64_t team = times.mean_ns[1].load(std::memory_order_relaxed);
  const bool alone_wins = alone > 0 && team > 0 && alone < team;
  if (sample < 0) return alone_wins;
  // Timed calls: the winning side (the team until both are timed), and every other one the other
  // side, or every kRareProbe-th where it lost by far.
  const int64_t winner = alone_wins ? alone : team, loser = alone_wins ? team : alone;
  const bool settled = times.samples[0].load(std::memory_order_relaxed) >= kSettled &&
                       times.samples[1].load(std::memory_order_relaxed) >= kSettled;
  const bool far = settled && double(loser) > kFarSlower * double(winner);
  const bool probe = sample % (far ? kRareProbe : 2) == 1;
  return probe != alone_wins;
}

CallThreads conv_call_threads(int threads, double flops) {
  return {threads, flops < kSmallCallFlops};
}

int small_call_probe(int64_t n, bool rare) {
  const int64_t cycle = n / (kWindowCalls * kCycleWindows);
  if (rare && cycle % kRareProbe != 0) return -1;
  // splitmix64's finalizer of the cycle's number: where its probes start, and which side first.
  uint64_t mix = uint64_t(cycle) + 0x9E3779B97F4A7C15ull;
  mix = (mix ^ (mix >> 30)) * 0xBF58476D1CE4E5B9ull;
  mix = (mix ^ (mix >> 27)) * 0x94D049BB133111EBull;
  mix ^= mix >> 31;
  const int64_t first_probe = int64_t(mix % uint64_t(kCycleWindows - kProbeWindows + 1));
  const int64_t probe = n / kWindowCalls % kCycleWindows - first_probe;
  if (probe < 0 || probe >= kProbeWindows) return -1;
  return int((probe + int64_t(mix >> 63)) % 2);
}

CallChoice choose_call_threads(const ThreadTimes& times, bool adapt, int64_t small_call, int64_t sample,
                               SmallSide small) {
  if (!adapt) return {false, false};
  if (small_call < 0) return {runs_alone(times, sample), sample >= 0};
  const int probe = small_call_probe(small_call, small.rare);
  if (probe < 0) return {small.side >= 0 ? small.side == 1 : runs_alone(times, -1), false};
  return {probe == 1, true};
}

SmallSide SmallCalls::side() const {
  return {side_.load(std::memory_order_relaxed), rare_.load(std::memory_order_relaxed)};
}

void SmallCalls::add_probe(const ThreadTimes& times) {
  const int64_t alone = times.mean_ns[0].load(std::memory_order_relaxed);
  const int64_t team = times.mean_ns[1].load(std::memory_order_relaxed);
  if (alone <= 0 || team <= 0) return;
  probe_ns_[0].fetch_add(alone, std::memory_order_relaxed);
  probe_ns_[1].fetch_add(team, std::memory_order_relaxed);
}

void SmallCalls::decide() {
  const int64_t alone = probe_ns_[0].exchange(0, std::memory_order_relaxed);
  const int64_t team = probe_ns_[1].exchange(0, std::memory_order_relaxed);
  if (alone <= 0 || team <= 0) return;
  side_.store(alone < team ? 1 : 0, std::memory_order_relaxed);
  rare_.store(double(std::max(alone, team)) > kFarSlower * double(std::min(alone, team)), std::memory_order_relaxed);
}

void ThreadTimes::clear() {
  for (auto* value : {&mean_ns[0], &mean_ns[1], &samples[0], &samples[1]}) value->store(0, std::memory_order_relaxed);
}

void record_time(ThreadTimes& times, bool alone, int64_t ns) {
  std::atomic<int64_t>& mean = times.mean_ns[alone ? 0 : 1];
  const int64_t old = mean.load(std::memory_order_relaxed);
  mean.store(old == 0 ? ns : old + (std::min(ns, 2 * old) - old) / 4, std::memory_order_relaxed);
  times.samples[alone ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace convjit::detail
