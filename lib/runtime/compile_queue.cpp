// Compiles: requested once per hot configuration, run by one background worker (or inline when
// the policy says so), one backend compile at a time; the kernel is published to the slot and
// the cache, and a failure leaves the configuration generic.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "perf_map.hpp"
#include "runtime_impl.hpp"

namespace convjit {
namespace {

using Clock = std::chrono::steady_clock;
using detail::ConfigSlot;
using detail::SlotState;

}  // namespace

void Runtime::Impl::request_compile(ConfigSlot& slot, uint64_t id, const jit::SpecKey& key, bool warm) {
  int expected = int(SlotState::Cold);
  if (!slot.state.compare_exchange_strong(expected, int(SlotState::Queued), std::memory_order_acq_rel)) {
    if (warm) warm_pending_.fetch_sub(1);
    return;
  }
  slot.hot_ns.store(now_ns(), std::memory_order_relaxed);
  const CompileRequest request{key, &slot, id, warm};
  std::unique_lock<std::mutex> lock(compile_mutex_);
  if (!policy.async) {
    ++in_flight_;
    lock.unlock();
    compile(request);
    return;
  }
  if (!worker_) worker_ = std::make_unique<std::thread>([this] { worker_loop(); });
  queue_.push_back(request);
  ++in_flight_;
  work_ready_->notify_one();
}

void Runtime::Impl::worker_loop() {
  std::unique_lock<std::mutex> lock(compile_mutex_);
  for (;;) {
    work_ready_->wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const CompileRequest request = queue_.front();
    queue_.pop_front();
    lock.unlock();
    compile(request);
    lock.lock();
  }
}

void Runtime::Impl::compile(const CompileRequest& request) {
  // Serialized, publication included: sixteen threads making one key hot cause one compile (the
  // others find it cached), and no eviction runs between finding a kernel and publishing it.
  std::string failure;
  double compile_us = 0;
  std::lock_guard<std::mutex> serial(compile_serial_);
  const jit::CompiledKernel* kernel = cache_.find(request.key);
  const bool compiled_now = !kernel;  // by this request, not found in the cache
  if (!kernel) {
    auto fresh = std::make_unique<jit::CompiledKernel>();
    const Clock::time_point start = Clock::now();
    // The budget bounds the executable memory the kernels hold: room is made (evicting the least
    // used kernels) before the new one is mapped where the backend knows its size (Xbyak), and
    // checked again with its own size after (LLVM maps inside its linker; `fresh` is freed if
    // it does not fit).
    bool ok = false;
    auto too_large = [&](int64_t bytes) {
      return "code budget of " + std::to_string(policy.code_budget_bytes) + " bytes cannot hold " +
             (bytes > 0 ? "this kernel of " + std::to_string(bytes) + " bytes" : std::string("any kernel"));
    };
    const int64_t known = int64_t(backend_->mapped_bytes_before_compile(request.key));
    if (!evict_to_fit(std::max<int64_t>(known, 1))) {
      failure = too_large(known);
    } else if (backend_->compile(request.key, fresh.get(), &failure)) {
      ok = evict_to_fit(int64_t(fresh->mapped_bytes));
      if (!ok) failure = too_large(int64_t(fresh->mapped_bytes));
    }
    compile_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (ok) {
      kernel = cache_.insert(std::move(fresh));
      if (policy.perf_map) {
        detail::append_to_perf_map(kernel->entry(), kernel->code_bytes,
                                   "convjit::" + kernel->name + " [" + backend_->name() + "]");
      }
    }
  }

  {
    std::lock_guard<std::mutex> table_lock(table_.mutex());
    ConfigSlot& slot = *request.slot;
    if (slot.id.load(std::memory_order_relaxed) != request.slot_id) {
      // Recycled meanwhile: a stale request may have queued the new configuration's slot; hand
      // it back so it compiles when it gets hot itself (waiters on the slot wake below).
      int queued = int(SlotState::Queued);
      slot.state.compare_exchange_strong(queued, int(SlotState::Cold), std::memory_order_acq_rel);
    } else {
      slot.details->compile_us = compile_us;
      if (kernel) {
        slot.kernel_ns.store(now_ns(), std::memory_order_relaxed);
        slot.kernel.store(kernel, std::memory_order_release);
        slot.state.store(int(SlotState::Compiled), std::memory_order_release);
      } else {
        slot.details->failure = failure;
        slot.state.store(int(SlotState::Failed), std::memory_order_release);
      }
      if (policy.verbose) {
        const std::string what = detail::describe_configuration(slot.details->configuration);
        if (kernel) {
          std::fprintf(stderr, "convjit: %s %s (%s, %zu bytes, %.1f us) for %s\n", compiled_now ? "compiled" : "reused",
                       kernel->name.c_str(), backend_->name(), kernel->code_bytes, compile_us, what.c_str());
        } else {
          std::fprintf(stderr, "convjit: compile failed for %s: %s (stays generic)\n", what.c_str(), failure.c_str());
        }
      }
    }
  }
  std::lock_guard<std::mutex> lock(compile_mutex_);
  if (kernel && compiled_now) ++compiles_;
  if (!kernel && compiled_now) ++compile_failures_;
  if (request.warm) warm_pending_.fetch_sub(1);
  --in_flight_;
  work_done_->notify_all();  // waiters for all compiles, and for one slot's
}

void Runtime::Impl::wait_for_slot(ConfigSlot& slot) {
  std::unique_lock<std::mutex> lock(compile_mutex_);
  // Compile it next if it is still queued.
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->slot == &slot) {
      std::rotate(queue_.begin(), it, it + 1);
      break;
    }
  }
  work_done_->wait(lock, [&] { return slot.state.load(std::memory_order_acquire) != int(SlotState::Queued); });
}

void Runtime::Impl::wait_for_compiles() {
  std::unique_lock<std::mutex> lock(compile_mutex_);
  work_done_->wait(lock, [this] { return in_flight_ == 0; });
}

}  // namespace convjit
