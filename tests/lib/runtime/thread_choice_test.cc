// lib/runtime/thread_choice: which calls of a configuration run on one thread. Until both sides
// are timed the team runs, but every other timed call tries one thread; the calls between timed
// ones follow the faster side; a side that lost by far, both sides timed a few times, is tried only
// every kRareProbe-th timed call; one outlier does not turn the choice; the means follow new times.
// Small convolutions stay on one thread.
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

// A convolution under kMinTeamFlops runs on one thread where the runtime adapts its threads; a
// larger one, or any one where it does not, may use them all.
TEST(ThreadChoice, SmallConvolutionsRunOnOneThreadWhereThreadsAdapt) {
  using detail::conv_call_threads;
  using detail::kMinTeamFlops;
  EXPECT_EQ(conv_call_threads(2, true, kMinTeamFlops / 2), 1);
  EXPECT_EQ(conv_call_threads(3, true, kMinTeamFlops - 1), 1);
  EXPECT_EQ(conv_call_threads(2, true, kMinTeamFlops), 2);
  EXPECT_EQ(conv_call_threads(3, true, 1e9), 3);
  EXPECT_EQ(conv_call_threads(2, false, kMinTeamFlops / 2), 2);
  EXPECT_EQ(conv_call_threads(1, true, 1e9), 1);
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
