// The hot-shape detector's table: one slot per configuration (op, dims, layout, mode, post-op),
// found without a lock on every call. Bounded: when a configuration's probe window is full, the
// slot with the fewest recent calls is recycled, so a stream of distinct shapes cannot grow it.
//
// A recycled slot may be read by a racing call for the old configuration: it then counts one call
// on the new one. Results never depend on the table: a slot's kernel is used only after its
// specialization key is checked against the call's own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "backend.hpp"
#include "convjit/convjit.h"
#include "thread_choice.hpp"

namespace convjit::detail {

enum class SlotState : int { Cold = 0, Queued = 1, Compiled = 2, Failed = 3, Declined = 4 };

// What a slot counts: an op and its problem as the caller gave it (conv for the conv ops, pool
// and p for pooling; the other struct stays zero).
struct Configuration {
  int32_t op = CONVJIT_OP_CONV_FORWARD;  // convjit_op
  convjit_conv_params conv{};
  convjit_pool_params pool{};
  float p = 0;
  int32_t activation = CONVJIT_ACT_IDENTITY;
  bool has_bias = false;
  // A strided backward data's phases of another kernel size than phase 0's have slots of their
  // own, for their compiled kernels: the index of the first phase of that size
  // (lib/rewrite/backward_as_forward.hpp). 0: the call's own configuration.
  int32_t phase = 0;

  bool is_pool() const { return op >= CONVJIT_OP_MAXPOOL_FORWARD; }
};
Configuration conv_configuration(int32_t op, const convjit_conv_params& params, int32_t activation = 0,
                                 bool has_bias = false);
Configuration pool_configuration(int32_t op, const convjit_pool_params& params, float p);
// "conv_fwd 3x3 s1 p1 64->64 56x56 n1 nchw relu": the op's name and its problem's description.
std::string describe_configuration(const Configuration& configuration);

struct ConfigSlot {
  std::atomic<uint64_t> id{0};  // configuration hash, never 0; 0 = empty
  std::atomic<int64_t> calls{0}, calls_jit{0};
  std::atomic<int64_t> sampled_ns_generic{0}, samples_generic{0}, sampled_ns_jit{0}, samples_jit{0};
  ThreadTimes thread_times_generic, thread_times_jit;  // one thread against the team, per tier
  std::atomic<const jit::CompiledKernel*> kernel{nullptr};
  std::atomic<int> state{int(SlotState::Cold)};
  std::atomic<int64_t> calls_at_aging{0};  // recent calls = calls - calls_at_aging
  // Kernel eviction: calls when the last eviction looked (its use since then), and when its
  // kernel was evicted (it goes hot again after hot_threshold more calls).
  std::atomic<int64_t> calls_at_sweep{0}, calls_at_cold{0};
  // Tier timeline, nanoseconds since the runtime started; -1: not yet.
  std::atomic<int64_t> first_call_ns{-1}, hot_ns{-1}, kernel_ns{-1};

  // What stats and verbose lines read: written and read under the table's mutex only, and
  // allocated when the slot is first used, so an empty table costs little memory to create.
  struct Details {
    Configuration configuration;
    std::string failure;
    double compile_us = 0;
  };
  std::unique_ptr<Details> details;
};

class ConfigTable {
 public:
  explicit ConfigTable(int64_t capacity);

  // The configuration's slot, inserting it (and recycling a cold one) if needed. *inserted tells
  // whether this call created it.
  ConfigSlot& find_or_insert(uint64_t id, const Configuration& configuration, bool* inserted);

  // Runs fn(slot) for every occupied slot, under the mutex (fn may read the non-atomic fields).
  template <typename Fn>
  void for_each(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t i = 0; i < capacity_; ++i) {
      if (slots_[i].id.load(std::memory_order_acquire) != 0) fn(slots_[i]);
    }
  }
  std::mutex& mutex() { return mutex_; }
  int64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  static constexpr int64_t kProbeWindow = 8;
  ConfigSlot* find(uint64_t id);

  int64_t capacity_, mask_;
  std::unique_ptr<ConfigSlot[]> slots_;
  std::mutex mutex_;
  std::atomic<int64_t> evictions_{0};
};

// Hash of everything that makes a configuration (entries beyond rank ignored); never 0.
uint64_t configuration_id(const Configuration& configuration);

}  // namespace convjit::detail
