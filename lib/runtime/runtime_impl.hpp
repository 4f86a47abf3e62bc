// Runtime internals: the detector, the kernel cache, the compile worker and the per-call
// dispatch. Tests construct runtimes with their own backend (fault injection) through here.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "backend.hpp"
#include "backward_as_forward.hpp"
#include "config_table.hpp"
#include "convjit/runtime.hpp"
#include "forward_kernels.hpp"
#include "geometry.hpp"
#include "grace_periods.hpp"
#include "kernel_cache.hpp"
#include "thread_choice.hpp"

namespace convjit {

struct Runtime::Impl {
  // backend null: the generic tier only, for unavailable_reason.
  Impl(const Policy& policy, std::unique_ptr<jit::Backend> backend, std::string unavailable_reason);
  ~Impl();

  // Every op: validated before any output is touched, counted as its configuration, run on the
  // tier dispatch.cpp picks with this runtime's threads.
  detail::Status conv_forward(const convjit_conv_params* params, const float* x, const float* w, const float* bias,
                              int32_t activation, float* y);
  // As a forward convolution where it can be (lib/rewrite/backward_as_forward.hpp), else generic.
  detail::Status conv_backward_data(const convjit_conv_params* params, const float* dy, const float* w, float* dx);
  detail::Status conv_backward_filter(const convjit_conv_params* params, const float* x, const float* dy, float* dw);
  detail::Status pool_forward(detail::PoolOp op, const convjit_pool_params* params, float p, const float* x, float* y);
  // x and y are read by Max and LpNorm only.
  detail::Status pool_backward(detail::PoolOp op, const convjit_pool_params* params, float p, const float* x,
                               const float* y, const float* dy, float* dx);
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

  int threads() const;  // the policy's, else the process setting
  // A convolution's: threads(), and whether adapt_threads chooses them as a small call's
  // (thread_choice.hpp: kSmallCallFlops).
  detail::CallThreads threads_for(const detail::ConvGeometry& g) const;
  // The slot of configuration c (inserted on first sight) with this call counted: *id is its
  // configuration id, *calls the call's number.
  detail::ConfigSlot& count_call(const detail::Configuration& c, uint64_t* id, int64_t* calls);
  // Runs a forward convolution g (the problem as given: `params`) for configuration c: the
  // compiled kernel of what runs (g, or its NCHW twin) once one has arrived, else tier 0; then
  // after(threads) on the threads it ran with (a rewrite's pass over y), within the call's time.
  // Defined in dispatch.cpp, where all its callers are.
  template <typename After>
  void run_forward(const detail::Configuration& c, const detail::ConvGeometry& g, const convjit_conv_params& params,
                   const float* x, const detail::ForwardWeights& w, const float* bias, bool relu, float* y,
                   After&& after);
  // Backward data g (params) of configuration c as the forward convolutions of its phases
  // (lib/rewrite/backward_as_forward.hpp), one call counted: each kernel size among the phases
  // has a slot (c's for phase 0's, a companion configuration's, c with its phase field, for each
  // other), whose compiled kernel runs the phases of that size with its key, tier 0 the rest.
  void run_backward_data_phases(const detail::Configuration& c, const detail::ConvGeometry& g,
                                const convjit_conv_params& params, const detail::BackwardDataPhases& phases,
                                const float* dy, const float* w, float* dx);
  // The compiled kernel of key_of_call() in the slot, requesting it when the configuration turns
  // hot (or declining it: declined_because(key) non-empty); null while none has arrived. *reading
  // is held from before the kernel is read until the call has run it.
  // compiled() in two steps, for a call that runs several slots' kernels under one grace period:
  // whether the slot's kernel has arrived (requesting or declining it when the configuration
  // turns hot, waiting for a warm-start compile: no reader may be held meanwhile), and the
  // kernel for key, read with *reading held (taken if it is not yet).
  template <typename KeyOf, typename DeclinedBecause>
  bool arrived(detail::ConfigSlot& slot, uint64_t id, int64_t calls, KeyOf&& key_of_call,
               DeclinedBecause&& declined_because);
  const jit::CompiledKernel* published(detail::ConfigSlot& slot, const jit::SpecKey& key,
                                       std::optional<detail::GracePeriods::Reader>* reading);
  template <typename KeyOf, typename DeclinedBecause>
  const jit::CompiledKernel* compiled(detail::ConfigSlot& slot, uint64_t id, int64_t calls, KeyOf&& key_of_call,
                                      DeclinedBecause&& declined_because,
                                      std::optional<detail::GracePeriods::Reader>* reading);
  // The compiled kernel for g in configuration c's slot, requesting or declining it when the
  // configuration turns hot; null while none has arrived. *reading is held from before the kernel
  // is read until the call has run it.
  const convjit_conv_kernel* compiled_kernel(detail::ConfigSlot& slot, uint64_t id, int64_t calls,
                                             const detail::ConvGeometry& g, int32_t rank, bool relu,
                                             std::optional<detail::GracePeriods::Reader>* reading);
  // Max or mean pooling (forward or backward: code) of configuration c: counted, and run by
  // run(threads, compiled rows or null) with the compiled rows once they have arrived (tier 0
  // alone where the backend compiles none for the op).
  template <typename Run>
  void run_pool(const detail::Configuration& c, detail::PoolOp op, int32_t code, int32_t rank, Run&& run);
  // Counts a call of c and runs run(threads, its compiled kernel or null): the kernel of
  // key_of_call() once c is hot and declined_because(key) is empty (the policy permitting).
  // call_threads: what the call may use (threads(), or threads_for a convolution).
  template <typename KeyOf, typename DeclinedBecause, typename Run>
  void run_counted(const detail::Configuration& c, detail::CallThreads call_threads, KeyOf&& key_of_call,
                   DeclinedBecause&& declined_because, Run&& run);
  // A configuration no backend compiles: counted, declined when hot (saying why, else that no
  // backend compiles its op), run by run(threads) on tier 0.
  template <typename Run>
  void run_on_tier0(const detail::Configuration& c, detail::CallThreads call_threads, Run&& run,
                    const std::string& why = {});
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
  // The key of the compiled pooling rows (op: max or mean forward) that run `runs` (NHWC).
  jit::SpecKey pool_spec_key(const detail::PoolGeometry& runs, int32_t op, int32_t rank) const;
  // The key of g's compiled backward-filter rows.
  jit::SpecKey filter_spec_key(const detail::ConvGeometry& g, int32_t rank) const;

  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<jit::Backend> backend_;  // null: generic tier only
  const jit::Isa isa_cap_;                 // policy.max_isa: the compiled kernels' and tier 0's rows' cap
  std::string backend_unavailable_reason_;
  detail::ConfigTable table_;
  detail::KernelCache cache_;
  detail::GracePeriods grace_;  // every call that runs a compiled kernel reads it inside one
  std::atomic<int64_t> kernel_evictions_{0};
  detail::SmallCalls small_calls_;  // thread_choice.hpp: their windows and their side

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
