// The per-call path of the tiered runtime: validate, find the configuration's detector slot (no
// lock), count the call, and run the slot's specialized kernel if one has arrived for this
// specialization key, else the generic tier; the call that makes a configuration hot requests
// its compile (once: the slot's state moves Cold -> Queued by compare-and-swap) or declines it.
#include <chrono>
#include <cstdio>
#include <optional>

#include "backward_as_forward.hpp"
#include "conv_forward.hpp"
#include "describe.hpp"
#include "nhwc_as_nchw.hpp"
#include "ops_internal.hpp"
#include "runtime_impl.hpp"
#include "select_tier.hpp"
#include "threads.hpp"

namespace convjit {
namespace {

using Clock = std::chrono::steady_clock;
using detail::ConfigSlot;
using detail::SlotState;

// One call in kSampleEvery of each tier is timed (steady_clock costs ~20 ns); the mean of the
// samples stands for all.
constexpr int64_t kSampleEvery = 16;

}  // namespace

detail::Status Runtime::Impl::conv_forward(const convjit_conv_params* params, const float* x, const float* w,
                                           const float* bias, int32_t activation, float* y) {
  detail::ConvGeometry g;
  CONVJIT_RETURN_IF_ERROR(detail::validate_conv_forward(params, x, w, activation, y, &g));
  const bool relu = activation == CONVJIT_ACT_RELU;
  const int threads = policy.num_threads > 0 ? policy.num_threads : detail::thread_count();
  if (detail::nhwc_runs_as_nchw(g)) {
    const detail::NchwCopies nchw = detail::copy_to_nchw(g, *params, x, w, threads);
    CONVJIT_RETURN_IF_ERROR(conv_forward(&nchw.params, nchw.x, nchw.w, bias, activation, nchw.y));
    detail::copy_output_to_nhwc(g, nchw, y, threads);
    return detail::Status::success();
  }

  const uint64_t id = detail::configuration_id(*params, activation, bias != nullptr);
  bool inserted = false;  // a first call is told by the call count: the warm start inserts slots too
  ConfigSlot& slot = table_.find_or_insert(id, *params, activation, bias != nullptr, &inserted);
  const int64_t calls = slot.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  // The first call, also of a slot the warm start made before any call.
  if (calls == 1) slot.first_call_ns.store(now_ns(), std::memory_order_relaxed);
  if (calls == 1 && policy.verbose) {
    std::fprintf(stderr, "convjit: first call of conv_fwd %s: generic\n",
                 detail::describe_conv(*params, activation, bias != nullptr).c_str());
  }

  const convjit_conv_kernel* specialized = nullptr;
  // From before the kernel is read until it has returned (an eviction waits for it); never held
  // while waiting for a compile, so an eviction never waits for a call that waits for it.
  std::optional<detail::GracePeriods::Reader> reading;
  if (backend_) {
    // The key only where a kernel is asked for or checked: calls that stay generic skip it.
    auto key_of_call = [&] { return spec_key(g, params->rank, relu); };
    const jit::CompiledKernel* kernel = slot.kernel.load(std::memory_order_acquire);
    if (!kernel && calls - slot.calls_at_cold.load(std::memory_order_relaxed) >= policy.hot_threshold &&
        slot.state.load(std::memory_order_relaxed) == int(SlotState::Cold)) {
      const jit::SpecKey key = key_of_call();
      if (std::string reason = policy.decline_slower ? detail::jit_declined_because(g, *backend_, key) : std::string();
          !reason.empty()) {
        decline(slot, id, reason);
      } else {
        request_compile(slot, id, key);
        kernel = slot.kernel.load(std::memory_order_acquire);  // arrived already if compiled inline
      }
    }
    if (!kernel && warm_pending_.load(std::memory_order_relaxed) > 0 &&
        slot.state.load(std::memory_order_acquire) == int(SlotState::Queued)) {
      wait_for_slot(slot);  // its warm-start compile is on the way: tens of microseconds
      kernel = slot.kernel.load(std::memory_order_acquire);
    }
    if (kernel) {
      reading.emplace(grace_);
      kernel = slot.kernel.load(std::memory_order_seq_cst);                       // not evicted meanwhile
      if (kernel && kernel->key == key_of_call()) specialized = &kernel->kernel;  // else a recycled slot's
    }
  }

  // Each tier's first call and every kSampleEvery-th after it are timed.
  const int64_t tier_call = specialized ? slot.calls_jit.fetch_add(1, std::memory_order_relaxed) + 1
                                        : calls - slot.calls_jit.load(std::memory_order_relaxed);
  const bool sampled = tier_call % kSampleEvery == 1;
  const Clock::time_point start = sampled ? Clock::now() : Clock::time_point{};
  detail::run_conv_forward(g, detail::select_tier(g, specialized, isa_cap_), threads, x, w, bias, relu, y);
  if (sampled) {
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    (specialized ? slot.sampled_ns_jit : slot.sampled_ns_generic).fetch_add(ns, std::memory_order_relaxed);
    (specialized ? slot.samples_jit : slot.samples_generic).fetch_add(1, std::memory_order_relaxed);
  }
  return detail::Status::success();
}

detail::Status Runtime::Impl::conv_backward_data(const convjit_conv_params* params, const float* dy, const float* w,
                                                 float* dx) {
  CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{params, "params"}}));
  detail::ConvGeometry g;
  CONVJIT_RETURN_IF_ERROR(detail::make_conv_geometry(*params, &g));
  CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{dy, "dy"}, {w, "w"}, {dx, "dx"}}));
  convjit_conv_params forward;
  if (!detail::backward_data_as_forward(g, *params, &forward)) return detail::conv_backward_data(params, dy, w, dx);
  float* w_t = detail::thread_operands(size_t(g.out_channels * g.reduction));
  detail::transpose_weights(g, w, w_t);
  return conv_forward(&forward, dy, w_t, nullptr, CONVJIT_ACT_IDENTITY, dx);
}

void Runtime::Impl::decline(ConfigSlot& slot, uint64_t id, const std::string& reason) {
  int expected = int(SlotState::Cold);
  if (!slot.state.compare_exchange_strong(expected, int(SlotState::Declined), std::memory_order_acq_rel)) return;
  slot.hot_ns.store(now_ns(), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(table_.mutex());
  if (slot.id.load(std::memory_order_relaxed) != id) {  // recycled meanwhile: not ours to decline
    expected = int(SlotState::Declined);
    slot.state.compare_exchange_strong(expected, int(SlotState::Cold), std::memory_order_acq_rel);
    return;
  }
  slot.details->failure = reason;
  if (policy.verbose) {
    const ConfigSlot::Details& d = *slot.details;
    std::fprintf(stderr, "convjit: stays generic: %s: %s\n",
                 detail::describe_conv(d.params, d.activation, d.has_bias).c_str(), reason.c_str());
  }
}

}  // namespace convjit
