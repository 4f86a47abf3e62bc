// When an evicted kernel may be unmapped: a call holds a Reader from before it reads a slot's
// kernel until the kernel has returned; an eviction first unlinks the kernel from every slot and
// the cache, then ends the current grace period and waits until no reader of it is left (calls
// never wait for a compile while they hold one, so the wait is bounded by the calls in flight).
// Readers count themselves in one of a few cache-line-sized shards, chosen per thread, so calls on
// many threads do not contend on one counter.
#pragma once

#include <atomic>
#include <cstdint>

namespace convjit::detail {

class GracePeriods {
 public:
  class Reader {
   public:
    explicit Reader(GracePeriods& periods);
    ~Reader() { counter_->fetch_sub(1, std::memory_order_release); }
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

   private:
    std::atomic<int64_t>* counter_;
  };

  // Ends the current period and returns once every reader that began in it has left; readers
  // that begin meanwhile see whatever was unlinked before the call.
  void wait_for_readers();

 private:
  static constexpr int kShards = 16;
  struct alignas(64) Shard {
    std::atomic<int64_t> readers[2] = {0, 0};  // by period parity
  };
  Shard shards_[kShards];
  std::atomic<uint64_t> period_{0};
};

}  // namespace convjit::detail
