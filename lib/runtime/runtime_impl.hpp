// Runtime internals: the detector, the kernel cache, the compile worker and the per-call
// dispatch. Tests construct runtimes with their own backend (fault injection) through here.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "convjit/runtime.hpp"
#include "backend.hpp"
#include "config_table.hpp"
#include "forward_kernels.hpp"
#include "grace_periods.hpp"
#include "geometry.hpp"
#include "kernel_cache.hpp"

namespace convjit {

struct Runtime::Impl {
  // backend null: the generic tier only, for unavailable_reason.
  Impl(const Policy& policy, std::unique_ptr<jit::Backend> backend, std::string unavailable_reason);
  ~Impl();

  detail::Status conv_forward(const convjit_conv_params* params, const float* x, const float* w, const float* bias,
                              int32_t activation, float* y);
  // As a forward convolution where it can be (lib/rewrite/backward_as_forward.hpp), else generic.
  detail::Status conv_backward_data(const convjit_conv_params* params, const float* dy, const float* w, float* dx);
  RuntimeStats stats();
  void wait_for_compiles();

  // fork() (lib/runtime/fork.cpp): every lock taken before, released after in the parent; in the
  // child, where only the forking thread lives, the compile worker and its queue are forgotten
  // and configurations whose compile was queued or running go back to cold.
  void lock_for_fork();
  void unlock_after_fork();
  void reset_in_forked_child();

  const Policy policy;

 private:
  struct CompileRequest {
    jit::SpecKey key;
    detail::ConfigSlot* slot;
    uint64_t slot_id;
    bool warm;  // requested by the warm start, not by a call
  };

  void request_compile(detail::ConfigSlot& slot, uint64_t id, const jit::SpecKey& key, bool warm = false);
  void start_warm();
  void wait_for_slot(detail::ConfigSlot& slot);  // until its queued compile has finished
  void save_hot_configurations();
  // Why a hot configuration stays generic (policy decline_slower), or empty: tier 0's own kernel
  // wins, whatever the backend, or the backend expects to lose.
  void decline(detail::ConfigSlot& slot, uint64_t id, const std::string& reason);
  void compile(const CompileRequest& request);  // in the worker, or inline
  // With compile_serial_ held: evicts kernels until `bytes` more fit the code budget (whether
  // they do; a kernel larger than the budget never fits).
  bool evict_to_fit(int64_t bytes);
  void worker_loop();

  int64_t now_ns() const;  // since the runtime started: the timeline's clock
  // The key of g's kernel, for the ISA the backend picks within the policy's cap.
  jit::SpecKey spec_key(const detail::ConvGeometry& g, int32_t rank, bool relu) const;

  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<jit::Backend> backend_;  // null: generic tier only
  const jit::Isa isa_cap_;                 // policy.max_isa: the compiled kernels' and tier 0's rows' cap
  std::string backend_unavailable_reason_;
  detail::ConfigTable table_;
  detail::KernelCache cache_;
  detail::GracePeriods grace_;  // every call that runs a compiled kernel reads it inside one
  std::atomic<int64_t> kernel_evictions_{0};

  std::mutex compile_serial_;  // one backend compile at a time
  std::mutex compile_mutex_;   // guards the queue and the counters below
  // Replaced, never destroyed, in a forked child: threads of the parent may be registered as their
  // waiters, and glibc's destroy (and broadcast) wait for waiters that are not in the child.
  std::unique_ptr<std::condition_variable> work_ready_ = std::make_unique<std::condition_variable>();
  std::unique_ptr<std::condition_variable> work_done_ = std::make_unique<std::condition_variable>();
  std::deque<CompileRequest> queue_;
  int64_t in_flight_ = 0, compiles_ = 0, compile_failures_ = 0;
  std::atomic<int64_t> warm_pending_{0};  // warm-start compiles not finished
  bool stopping_ = false;
  std::unique_ptr<std::thread> worker_;  // started by the first queued compile
};

// The backend a policy asks for, or null with the reason.
std::unique_ptr<jit::Backend> select_backend(Backend wanted, std::string* reason);

}  // namespace convjit
