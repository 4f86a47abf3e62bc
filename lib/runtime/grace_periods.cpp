#include "grace_periods.hpp"

#include <functional>
#include <thread>

namespace convjit::detail {
namespace {

int this_threads_shard(int shards) {
  thread_local const int shard = int(std::hash<std::thread::id>{}(std::this_thread::get_id()) % unsigned(shards));
  return shard;
}

}  // namespace

GracePeriods::Reader::Reader(GracePeriods& periods) {
  // Counted in the period it saw, and only if that period is still current after the count:
  // then a wait_for_readers ending it sees the count (all sequentially consistent), and every
  // period ends only once its readers are gone, so the readers of a finished period never come
  // back. A reader that lost the race counts again in the new period.
  const int shard = this_threads_shard(kShards);
  for (;;) {
    const uint64_t period = periods.period_.load(std::memory_order_seq_cst);
    counter_ = &periods.shards_[shard].readers[period & 1];
    counter_->fetch_add(1, std::memory_order_seq_cst);
    if (periods.period_.load(std::memory_order_seq_cst) == period) return;
    counter_->fetch_sub(1, std::memory_order_release);
  }
}

void GracePeriods::wait_for_readers() {
  const uint64_t ended = period_.fetch_add(1, std::memory_order_seq_cst);
  for (const Shard& shard : shards_) {
    for (int spins = 0; shard.readers[ended & 1].load(std::memory_order_acquire) != 0; ++spins) {
      if (spins > 64) std::this_thread::yield();
    }
  }
}

}  // namespace convjit::detail
