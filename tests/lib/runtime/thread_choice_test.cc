// lib/runtime/thread_choice: which calls of a configuration run on one thread. Until both sides
// are timed the team runs, but every other timed call tries one thread; the calls between timed
// ones follow the faster side; a side that lost by far, both sides timed a few times, is tried only
// every kRareProbe-th timed call; one outlier does not turn the choice; the means follow new times.
// Small convolutions probe both sides in windows of a runtime's calls.
#include "thread_choice.hpp"

#include <gtest/gtest.h>

namespace convjit::testing {
namespace {

using detail::kRareProbe;
using detail::record_time;
using detail::runs_alone;
using detail::ThreadTimes;

// How many of timed calls [0, count) run alone.
int alone_among_timed(const ThreadTimes& times, int count) {
  int alone = 0;
  for (int sample = 0; sample < count; ++sample) alone += runs_alone(times, sample);
  return alone;
}

// One side timed `count` times, each taking ns.
void record_times(ThreadTimes& times, bool alone, int64_t ns, int count) {
  for (int i = 0; i < count; ++i) record_time(times, alone, ns);
}

// A convolution under kSmallCallFlops is small. Each cycle of a runtime's small calls has
// kProbeWindows consecutive probe windows, one side each, alternating (two of each); the others
// follow each configuration's faster side.
TEST(ThreadChoice, EveryCycleProbesBothSidesInConsecutiveWindows) {
  using detail::conv_call_threads;
  using detail::kCycleWindows;
  using detail::kProbeWindows;
  using detail::kSmallCallFlops;
  using detail::kWindowCalls;
  using detail::small_call_probe;
  EXPECT_TRUE(conv_call_threads(2, kSmallCallFlops - 1).small);
  EXPECT_FALSE(conv_call_threads(2, kSmallCallFlops).small);
  EXPECT_EQ(conv_call_threads(3, 1e9).threads, 3);
  EXPECT_EQ(conv_call_threads(3, 1.0).threads, 3);
  static_assert(kProbeWindows % 2 == 0 && kProbeWindows < kCycleWindows, "both sides probed as often");
  int64_t starts_seen = 0, team_first = 0;
  bool start_at[kCycleWindows] = {};
  for (int64_t cycle = 0; cycle < 64; ++cycle) {
    const int64_t first = cycle * kCycleWindows * kWindowCalls;
    int64_t probes[2] = {0, 0}, first_probe = -1, last_probe = -1;
    for (int64_t window = 0; window < kCycleWindows; ++window) {
      const int side = small_call_probe(first + window * kWindowCalls);
      for (int64_t n = first + window * kWindowCalls; n < first + (window + 1) * kWindowCalls; ++n) {
        ASSERT_EQ(small_call_probe(n), side) << "a window keeps one side: call " << n;
      }
      ASSERT_GE(side, -1);
      ASSERT_LE(side, 1);
      if (side < 0) continue;
      if (first_probe >= 0) EXPECT_NE(side, small_call_probe(first + (window - 1) * kWindowCalls)) << "alternating";
      if (first_probe < 0) first_probe = window;
      last_probe = window;
      probes[side] += kWindowCalls;
    }
    EXPECT_EQ(last_probe - first_probe + 1, kProbeWindows) << "consecutive probe windows, cycle " << cycle;
    EXPECT_EQ(probes[0], kProbeWindows / 2 * kWindowCalls);
    EXPECT_EQ(probes[1], kProbeWindows / 2 * kWindowCalls);
    starts_seen += !start_at[first_probe];
    start_at[first_probe] = true;
    team_first += small_call_probe(first + first_probe * kWindowCalls) == 0;
  }
  EXPECT_GE(starts_seen, 8) << "the probes move within the cycle";
  EXPECT_GT(team_first, 8) << "either side may go first";
  EXPECT_LT(team_first, 56);
}

// A configuration called once in every `period` small calls (a training step's layer) is probed
// on both sides within a few hundred cycles, wherever in the step it sits, for periods around and
// past the window and cycle sizes.
TEST(ThreadChoice, APeriodicCallIsProbedOnBothSides) {
  using detail::kCycleWindows;
  using detail::kWindowCalls;
  using detail::small_call_probe;
  const int64_t cycle = kCycleWindows * kWindowCalls;
  for (int64_t period : {int64_t(17), 2 * kWindowCalls, 4 * kWindowCalls, 8 * kWindowCalls, cycle / 2, cycle,
                         cycle + kWindowCalls, 3 * cycle}) {
    for (int64_t position : {int64_t(0), period / 3, period - 1}) {
      bool seen[2] = {false, false};
      for (int64_t n = position; n < 400 * cycle && !(seen[0] && seen[1]); n += period) {
        const int side = small_call_probe(n);
        if (side >= 0) seen[side] = true;
      }
      EXPECT_TRUE(seen[0] && seen[1]) << "period " << period << ", position " << position;
    }
  }
}

// A small call takes its window's side and is timed in probe windows, and follows its
// configuration's faster side untimed in the others; a larger call alternates by its timed calls;
// without adapting, every call is on the team and none is timed for the choice.
TEST(ThreadChoice, SmallCallsTakeTheirWindowsSideOthersTheirOwnAlternation) {
  using detail::choose_call_threads;
  using detail::kWindowCalls;
  ThreadTimes alone_wins, team_wins;
  record_times(alone_wins, false, 2000, 3);
  record_times(alone_wins, true, 1000, 3);
  record_times(team_wins, false, 1000, 3);
  record_times(team_wins, true, 2000, 3);
  int64_t team_probe = 0, alone_probe = 0, settled = 0;  // the first small call of each kind
  while (detail::small_call_probe(team_probe) != 0) team_probe += kWindowCalls;
  while (detail::small_call_probe(alone_probe) != 1) alone_probe += kWindowCalls;
  while (detail::small_call_probe(settled) != -1) settled += kWindowCalls;
  for (const bool faster_alone : {true, false}) {
    const ThreadTimes& t = faster_alone ? alone_wins : team_wins;
    EXPECT_FALSE(choose_call_threads(t, true, team_probe, -1).alone) << "a team window's call runs on the team";
    EXPECT_TRUE(choose_call_threads(t, true, team_probe, -1).timed);
    EXPECT_TRUE(choose_call_threads(t, true, alone_probe, 5).alone) << "one thread's alone, whatever the sample";
    EXPECT_TRUE(choose_call_threads(t, true, alone_probe, 5).timed);
    EXPECT_EQ(choose_call_threads(t, true, settled, -1).alone, faster_alone);
    EXPECT_FALSE(choose_call_threads(t, true, settled, 3).timed) << "settled windows time nothing for the choice";
    EXPECT_EQ(choose_call_threads(t, true, -1, -1).alone, faster_alone);
    EXPECT_FALSE(choose_call_threads(t, true, -1, -1).timed);
    EXPECT_TRUE(choose_call_threads(t, true, -1, 4).timed) << "a larger call's timed calls are";
    EXPECT_EQ(choose_call_threads(t, true, -1, 4).alone, faster_alone) << "the faster side on most samples";
    EXPECT_EQ(choose_call_threads(t, true, -1, 1).alone, !faster_alone) << "and the other on its probes";
    for (int64_t small_call : {int64_t(-1), team_probe, alone_probe, settled}) {
      EXPECT_FALSE(choose_call_threads(t, false, small_call, 1).alone);
      EXPECT_FALSE(choose_call_threads(t, false, small_call, 1).timed);
    }
  }
}

TEST(ThreadChoice, UntimedSidesStartOnTheTeamAndTryOneThreadEveryOtherTimedCall) {
  ThreadTimes times;
  EXPECT_FALSE(runs_alone(times, -1));
  EXPECT_FALSE(runs_alone(times, 0));
  EXPECT_TRUE(runs_alone(times, 1));
  EXPECT_EQ(alone_among_timed(times, 16), 8);
  record_time(times, false, 1000);  // only the team timed: still the team
  EXPECT_FALSE(runs_alone(times, -1));
}

TEST(ThreadChoice, UntimedCallsFollowTheFasterSide) {
  ThreadTimes times;
  record_time(times, false, 1000);
  record_time(times, true, 900);
  EXPECT_TRUE(runs_alone(times, -1));
  EXPECT_EQ(alone_among_timed(times, 16), 8) << "a close call keeps alternating";
  ThreadTimes team_wins;
  record_time(team_wins, false, 900);
  record_time(team_wins, true, 1000);
  EXPECT_FALSE(runs_alone(team_wins, -1));
  EXPECT_EQ(alone_among_timed(team_wins, 16), 8);
}

TEST(ThreadChoice, AFarSlowerSideIsTriedRarelyOnceBothAreSettled) {
  ThreadTimes team_far_slower;
  record_time(team_far_slower, false, 2000);
  record_time(team_far_slower, true, 1000);
  EXPECT_TRUE(runs_alone(team_far_slower, -1));
  EXPECT_EQ(alone_among_timed(team_far_slower, 16), 8) << "one time each: not settled, still alternating";
  record_times(team_far_slower, false, 2000, detail::kSettled);
  record_times(team_far_slower, true, 1000, detail::kSettled);
  EXPECT_EQ(alone_among_timed(team_far_slower, 8 * kRareProbe), 8 * kRareProbe - 8) << "the team every 8th";
  ThreadTimes alone_far_slower;
  record_times(alone_far_slower, false, 1000, detail::kSettled);
  record_times(alone_far_slower, true, 1600, detail::kSettled);
  EXPECT_FALSE(runs_alone(alone_far_slower, -1));
  EXPECT_EQ(alone_among_timed(alone_far_slower, 8 * kRareProbe), 8);
}

// The runtime's small calls take one side outside the probes: the one on which the probe calls
// ran faster, each counting its configuration's means on both sides (none until some
// configuration is timed on both); far slower on the other side, their cycles probe only every
// kRareProbe-th time; a decision without probes since the last keeps the side.
TEST(ThreadChoice, SmallCallsOutsideTheProbesTakeTheSideTheProbeCallsRanFasterOn) {
  detail::SmallCalls small;
  EXPECT_EQ(small.side().side, -1);
  ThreadTimes team_only, alone_twice_as_fast, team_a_bit_faster;
  record_time(team_only, false, 1000);
  record_time(alone_twice_as_fast, false, 2000);
  record_time(alone_twice_as_fast, true, 1000);
  record_time(team_a_bit_faster, false, 1000);
  record_time(team_a_bit_faster, true, 1200);
  small.add_probe(team_only);
  small.decide();
  EXPECT_EQ(small.side().side, -1) << "a configuration timed on one side says nothing";
  small.add_probe(alone_twice_as_fast);
  small.decide();
  EXPECT_EQ(small.side().side, 1);
  EXPECT_TRUE(small.side().rare);
  small.decide();
  EXPECT_EQ(small.side().side, 1) << "no probe since: the side stays";
  // Counted per probe call: six calls of a configuration a bit faster on the team outweigh one
  // twice as fast alone (6 x 1000 + 2000 on the team against 6 x 1200 + 1000 alone).
  for (int i = 0; i < 6; ++i) small.add_probe(team_a_bit_faster);
  small.add_probe(alone_twice_as_fast);
  small.decide();
  EXPECT_EQ(small.side().side, 0);
  EXPECT_FALSE(small.side().rare);

  using detail::kWindowCalls;
  int64_t settled = 0;
  while (detail::small_call_probe(settled) != -1) settled += kWindowCalls;
  for (const int side : {0, 1}) {
    for (const ThreadTimes* own : {&alone_twice_as_fast, &team_a_bit_faster}) {
      const detail::CallChoice choice = detail::choose_call_threads(*own, true, settled, -1, {side, false});
      EXPECT_EQ(choice.alone, side == 1) << "the runtime's side, whatever the configuration's own";
      EXPECT_FALSE(choice.timed);
    }
  }
  const int64_t cycle = kWindowCalls * detail::kCycleWindows;
  int probed[2] = {0, 0};  // windows of cycles 0 .. 2 kRareProbe - 1 probed, often and rarely
  for (int64_t n = 0; n < 2 * kRareProbe * cycle; n += kWindowCalls) {
    const int rare = detail::small_call_probe(n, true);
    EXPECT_TRUE(rare == -1 || rare == detail::small_call_probe(n)) << "a rare cycle probes as an ordinary one";
    if (n / cycle % kRareProbe != 0) EXPECT_EQ(rare, -1) << "cycle " << n / cycle;
    probed[0] += detail::small_call_probe(n) >= 0;
    probed[1] += rare >= 0;
  }
  EXPECT_EQ(probed[0], 2 * kRareProbe * detail::kProbeWindows);
  EXPECT_EQ(probed[1], 2 * detail::kProbeWindows);
}

TEST(ThreadChoice, OneSlowCallDoesNotTurnTheChoice) {
  ThreadTimes times;
  record_times(times, false, 1000, 4);
  record_times(times, true, 1400, 4);
  record_time(times, false, 100000);  // a preemption: counted as twice the mean
  EXPECT_EQ(times.mean_ns[1].load(), 1250);
  EXPECT_FALSE(runs_alone(times, -1));
}

TEST(ThreadChoice, MeansFollowNewTimes) {
  ThreadTimes times;
  record_time(times, false, 1000);
  record_time(times, true, 800);
  EXPECT_TRUE(runs_alone(times, -1));
  // The host changes: one thread now takes 1500 ns a call; a few timed calls turn the choice.
  record_times(times, true, 1500, 4);
  EXPECT_GT(times.mean_ns[0].load(), 1000);
  EXPECT_FALSE(runs_alone(times, -1));
}

}  // namespace
}  // namespace convjit::testing
