// The tiered runtime. Per forward call: validate, find the configuration's detector slot (no
// lock), count the call, and run the slot's specialized kernel if one has arrived for this
// specialization key, else the generic tier; the call that makes a configuration hot requests
// its compile (once: the slot's state moves Cold -> Queued by compare-and-swap).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "convjit/error.hpp"
#include "backward_as_forward.hpp"
#include "conv_forward.hpp"
#include "describe.hpp"
#include "nhwc_as_nchw.hpp"
#include "ops_internal.hpp"
#include "perf_map.hpp"
#include "runtime_impl.hpp"
#include "select_tier.hpp"
#include "stats_json.hpp"
#include "threads.hpp"
#include "warm_start.hpp"

namespace convjit {
namespace {

using Clock = std::chrono::steady_clock;
using detail::ConfigSlot;
using detail::SlotState;

// One call in kSampleEvery of each tier is timed (steady_clock costs ~20 ns); the mean of the
// samples stands for all.
constexpr int64_t kSampleEvery = 16;

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

std::unique_ptr<jit::Backend> select_backend(Backend wanted, std::string* reason) {
  if (wanted == Backend::None) {
    *reason = "CONVJIT_BACKEND=none";
    return nullptr;
  }
  // Auto: Xbyak where it runs (microsecond compiles), else LLVM (portable, millisecond compiles).
  std::string reasons;
  auto usable = [&](std::unique_ptr<jit::Backend> backend) -> std::unique_ptr<jit::Backend> {
    const std::string why = backend->unavailable_reason();
    if (why.empty()) return backend;
    reasons += (reasons.empty() ? "" : "; ") + std::string(backend->name()) + ": " + why;
    return nullptr;
  };
  if (wanted == Backend::Xbyak || wanted == Backend::Auto) {
#if defined(CONVJIT_HAVE_XBYAK)
    if (auto backend = usable(jit::make_xbyak_backend())) return backend;
#else
    reasons += "built without Xbyak";
#endif
  }
  if (wanted == Backend::Llvm || wanted == Backend::Auto) {
#if defined(CONVJIT_HAVE_LLVM)
    if (auto backend = usable(jit::make_llvm_backend())) return backend;
#else
    reasons += std::string(reasons.empty() ? "" : "; ") + "built without LLVM";
#endif
  }
  *reason = reasons;
  return nullptr;
}

Runtime::Impl::Impl(const Policy& p, std::unique_ptr<jit::Backend> backend, std::string unavailable_reason)
    : policy(p),
      backend_(std::move(backend)),
      backend_unavailable_reason_(std::move(unavailable_reason)),
      table_(p.max_configurations) {
  if (backend_ && !policy.cache_dir.empty()) start_warm();
}

void Runtime::Impl::start_warm() {
  for (const detail::HotConfiguration& c : detail::load_hot_configurations(policy.cache_dir)) {
    detail::ConvGeometry g;
    if (!detail::make_conv_geometry(c.params, &g).ok()) continue;
    const jit::SpecKey key = jit::make_spec_key(g, c.params.rank, c.activation == CONVJIT_ACT_RELU, jit::Isa::Avx2Fma,
                                                policy.specialize_sizes);
    // A saved configuration this version would decline (the file may come from another) is left to
    // the detector, which declines it when it gets hot.
    if (policy.decline_slower && !detail::jit_declined_because(g, *backend_, key).empty()) continue;
    const uint64_t id = detail::configuration_id(c.params, c.activation, c.has_bias);
    bool inserted = false;
    ConfigSlot& slot = table_.find_or_insert(id, c.params, c.activation, c.has_bias, &inserted);
    warm_pending_.fetch_add(1);
    request_compile(slot, id, key, /*warm=*/true);
  }
}

void Runtime::Impl::save_hot_configurations() {
  std::vector<detail::HotConfiguration> hot;
  table_.for_each([&](ConfigSlot& slot) {
    if (slot.state.load(std::memory_order_relaxed) == int(SlotState::Compiled)) {
      hot.push_back({slot.details->params, slot.details->activation, slot.details->has_bias});
    }
  });
  if (!detail::save_hot_configurations(policy.cache_dir, hot)) {
    std::fprintf(stderr, "convjit: CONVJIT_CACHE_DIR: cannot write %s\n",
                 detail::hot_configurations_path(policy.cache_dir).c_str());
  }
}

Runtime::Impl::~Impl() {
  if (backend_ && !policy.cache_dir.empty()) {
    wait_for_compiles();
    save_hot_configurations();
  }
  {
    std::lock_guard<std::mutex> lock(compile_mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
}

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
  if (backend_) {
    // The key only where a kernel is asked for or checked: calls that stay generic skip it.
    auto key_of_call = [&] {
      return jit::make_spec_key(g, params->rank, relu, jit::Isa::Avx2Fma, policy.specialize_sizes);
    };
    const jit::CompiledKernel* kernel = slot.kernel.load(std::memory_order_acquire);
    if (!kernel && calls >= policy.hot_threshold &&
        slot.state.load(std::memory_order_relaxed) == int(SlotState::Cold)) {
      const jit::SpecKey key = key_of_call();
      if (std::string reason = policy.decline_slower ? detail::jit_declined_because(g, *backend_, key) : std::string(); !reason.empty()) {
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
    if (kernel && kernel->key == key_of_call()) specialized = &kernel->kernel;  // else a recycled slot's
  }

  // Each tier's first call and every kSampleEvery-th after it are timed.
  const int64_t tier_call = specialized ? slot.calls_jit.fetch_add(1, std::memory_order_relaxed) + 1
                                        : calls - slot.calls_jit.load(std::memory_order_relaxed);
  const bool sampled = tier_call % kSampleEvery == 1;
  const Clock::time_point start = sampled ? Clock::now() : Clock::time_point{};
  detail::run_conv_forward(g, detail::select_tier(g, specialized), threads, x, w, bias, relu, y);
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

int64_t Runtime::Impl::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started_).count();
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
  if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  queue_.push_back(request);
  ++in_flight_;
  work_ready_.notify_one();
}

void Runtime::Impl::worker_loop() {
  std::unique_lock<std::mutex> lock(compile_mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const CompileRequest request = queue_.front();
    queue_.pop_front();
    lock.unlock();
    compile(request);
    lock.lock();
  }
}

void Runtime::Impl::compile(const CompileRequest& request) {
  // Serialized: sixteen threads making one key hot cause one compile; the others find it cached.
  std::string failure;
  double compile_us = 0;
  const jit::CompiledKernel* kernel = cache_.find(request.key);
  bool compiled_now = false;  // by this request, not found in the cache
  if (!kernel) {
    std::lock_guard<std::mutex> serial(compile_serial_);
    kernel = cache_.find(request.key);
    if (!kernel) {
      compiled_now = true;
      auto fresh = std::make_unique<jit::CompiledKernel>();
      const Clock::time_point start = Clock::now();
      bool ok = false;
      if (cache_.code_bytes() >= policy.code_budget_bytes) {
        failure = "code budget of " + std::to_string(policy.code_budget_bytes) + " bytes exhausted";
      } else {
        ok = backend_->compile(request.key, fresh.get(), &failure);
      }
      compile_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      if (ok) {
        kernel = cache_.insert(std::move(fresh));
        if (policy.perf_map) {
          detail::append_to_perf_map(reinterpret_cast<const void*>(kernel->kernel.compute), kernel->code_bytes,
                                     "convjit::" + kernel->name + " [" + backend_->name() + "]");
        }
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
        const std::string what =
            detail::describe_conv(slot.details->params, slot.details->activation, slot.details->has_bias);
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
  work_done_.notify_all();  // waiters for all compiles, and for one slot's
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
  work_done_.wait(lock, [&] { return slot.state.load(std::memory_order_acquire) != int(SlotState::Queued); });
}

void Runtime::Impl::wait_for_compiles() {
  std::unique_lock<std::mutex> lock(compile_mutex_);
  work_done_.wait(lock, [this] { return in_flight_ == 0; });
}

RuntimeStats Runtime::Impl::stats() {
  RuntimeStats s;
  s.backend = backend_ ? backend_->name() : "none";
  s.backend_unavailable_reason = backend_unavailable_reason_;
  table_.for_each([&](ConfigSlot& slot) {
    ConfigStats c;
    c.dims = ConvDims::from_c(slot.details->params);
    c.activation = Activation(slot.details->activation);
    c.has_bias = slot.details->has_bias;
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
  std::lock_guard<std::mutex> lock(compile_mutex_);
  s.compiles = compiles_;
  s.compile_failures = compile_failures_;
  return s;
}

Runtime::Runtime(const Policy& policy) {
  std::string reason;
  std::unique_ptr<jit::Backend> backend = select_backend(policy.backend, &reason);
  impl_ = std::make_unique<Impl>(policy, std::move(backend), reason);
}

Runtime::~Runtime() = default;

namespace {

// CONVJIT_STATS=path: the default runtime's stats, written when the process exits normally.
// Registered after the runtime is built, so it runs before the runtime is destroyed.
void write_default_stats_at_exit() {
  const char* path = std::getenv("CONVJIT_STATS");
  if (!path || !*path) return;
  try {
    Runtime::process_default().write_stats(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convjit: CONVJIT_STATS: %s\n", e.what());
  }
}

}  // namespace

Runtime& Runtime::process_default() {
  static Runtime runtime(Policy::from_environment());
  static const bool stats_at_exit = std::atexit(write_default_stats_at_exit) == 0;
  (void)stats_at_exit;
  return runtime;
}

void Runtime::write_stats(const std::string& path) {
  wait_for_compiles();
  const std::string json = detail::stats_to_json(stats(), policy());
  FILE* file = std::fopen(path.c_str(), "w");
  if (!file) throw Error(CONVJIT_EINVAL, "cannot write stats to " + path + ": " + std::strerror(errno));
  const bool written = std::fwrite(json.data(), 1, json.size(), file) == json.size();
  if (std::fclose(file) != 0 || !written) throw Error(CONVJIT_EINTERNAL, "writing stats to " + path + " failed");
}

void Runtime::conv_forward(const ConvDims& dims, const float* x, const float* w, const float* bias,
                           Activation activation, float* y) {
  const convjit_conv_params params = dims.to_c();
  const detail::Status status = impl_->conv_forward(&params, x, w, bias, int32_t(activation), y);
  if (!status.ok()) throw Error(status.code, status.message);
}

void Runtime::conv_backward_data(const ConvDims& dims, const float* dy, const float* w, float* dx) {
  const convjit_conv_params params = dims.to_c();
  const detail::Status status = impl_->conv_backward_data(&params, dy, w, dx);
  if (!status.ok()) throw Error(status.code, status.message);
}

const Policy& Runtime::policy() const {
  return impl_->policy;
}
RuntimeStats Runtime::stats() const {
  return impl_->stats();
}
void Runtime::wait_for_compiles() {
  impl_->wait_for_compiles();
}

}  // namespace convjit
