// The runtime's stats: totals and one row per configuration, read without stopping calls.
#include <algorithm>

#include "describe.hpp"
#include "forward_kernels.hpp"
#include "runtime_impl.hpp"

namespace convjit {
namespace {

using detail::ConfigSlot;
using detail::SlotState;

const char* state_name(SlotState s) {
  switch (s) {
    case SlotState::Cold: return "cold";
    case SlotState::Queued: return "queued";
    case SlotState::Compiled: return "jit";
    case SlotState::Failed: return "failed";
    case SlotState::Declined: return "declined";
  }
  return "?";
}

}  // namespace

const char* op_name(Op op) {
  return detail::op_name(int32_t(op));
}

RuntimeStats Runtime::Impl::stats() {
  RuntimeStats s;
  s.backend = backend_ ? backend_->name() : "none";
  s.backend_unavailable_reason = backend_unavailable_reason_;
  s.isa = jit::isa_name(std::min(jit::widest_host_isa(), isa_cap_));
  table_.for_each([&](ConfigSlot& slot) {
    const detail::Configuration& config = slot.details->configuration;
    // A strided backward data's companion slots (its phases' other kernel sizes) are not
    // configurations of their own: their kernels count in the totals below.
    if (config.phase != 0) return;
    ConfigStats c;
    c.op = Op(config.op);
    if (config.is_pool()) {
      c.pool_dims = PoolDims::from_c(config.pool);
      c.p = config.p;
    } else {
      c.dims = ConvDims::from_c(config.conv);
      c.activation = Activation(config.activation);
      c.has_bias = config.has_bias;
    }
    const int64_t calls = slot.calls.load(std::memory_order_relaxed);
    c.calls_jit = slot.calls_jit.load(std::memory_order_relaxed);
    c.calls_generic = calls - c.calls_jit;
    auto mean = [](const std::atomic<int64_t>& ns, const std::atomic<int64_t>& samples) {
      const int64_t n = samples.load(std::memory_order_relaxed);
      return n ? double(ns.load(std::memory_order_relaxed)) / double(n) : 0.0;
    };
    c.mean_ns_generic = mean(slot.sampled_ns_generic, slot.samples_generic);
    c.mean_ns_jit = mean(slot.sampled_ns_jit, slot.samples_jit);
    c.state = state_name(SlotState(slot.state.load(std::memory_order_relaxed)));
    if (const jit::CompiledKernel* k = slot.kernel.load(std::memory_order_acquire)) {
      c.kernel = k->name;
      c.code_bytes = int64_t(k->code_bytes);
      c.backend = backend_ ? backend_->name() : "";
    }
    c.failure = slot.details->failure;
    c.compile_us = slot.details->compile_us;
    auto us = [](const std::atomic<int64_t>& ns) {
      const int64_t v = ns.load(std::memory_order_relaxed);
      return v < 0 ? -1.0 : double(v) * 1e-3;
    };
    c.first_call_us = us(slot.first_call_ns);
    c.hot_us = us(slot.hot_ns);
    c.kernel_us = us(slot.kernel_ns);
    s.configurations.push_back(std::move(c));
  });
  s.kernels = cache_.kernels();
  s.code_bytes = cache_.code_bytes();
  s.evictions = table_.evictions();
  s.kernel_evictions = kernel_evictions_.load(std::memory_order_relaxed);
  s.mapped_bytes = cache_.mapped_bytes();
  std::lock_guard<std::mutex> lock(compile_mutex_);
  s.compiles = compiles_;
  s.compile_failures = compile_failures_;
  return s;
}

}  // namespace convjit
