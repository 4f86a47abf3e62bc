// The tiered runtime's lifecycle and public face: a runtime is made with the backend its policy
// asks for (backend_selection.cpp), warm-starts from its cache directory, and at the end waits for
// its compiles and saves its hot configurations. The per-call path is dispatch.cpp, compiles
// compile_queue.cpp, stats runtime_stats.cpp.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "convjit/error.hpp"
#include "fork.hpp"
#include "ops_internal.hpp"
#include "runtime_impl.hpp"
#include "select_tier.hpp"
#include "stats_json.hpp"
#include "warm_start.hpp"

namespace convjit {
namespace {

using detail::ConfigSlot;
using detail::SlotState;

}  // namespace

Runtime::Impl::Impl(const Policy& p, std::unique_ptr<jit::Backend> backend, std::string unavailable_reason)
    : policy(p),
      backend_(std::move(backend)),
      isa_cap_(p.max_isa == Isa::Avx2 ? jit::Isa::Avx2Fma : jit::Isa::Avx512),
      backend_unavailable_reason_(std::move(unavailable_reason)),
      table_(p.max_configurations) {
  detail::register_for_fork(this);
  if (backend_ && !policy.cache_dir.empty()) start_warm();
}

jit::SpecKey Runtime::Impl::spec_key(const detail::ConvGeometry& g, int32_t rank, bool relu) const {
  if (detail::runs_depthwise_rows(g) && backend_->compiles_depthwise_rows()) {
    return jit::make_depthwise_spec_key(g, rank, relu, backend_->rows_isa_for(isa_cap_));
  }
  return jit::make_spec_key(g, rank, relu, backend_->isa_for(g, isa_cap_), policy.specialize_sizes);
}

jit::SpecKey Runtime::Impl::pool_spec_key(const detail::PoolGeometry& runs, int32_t op, int32_t rank) const {
  const convjit_pool_problem problem = detail::compiled_pool_problem(runs);
  return jit::make_pool_spec_key(problem, op, rank, backend_->rows_isa_for(isa_cap_));
}

jit::SpecKey Runtime::Impl::filter_spec_key(const detail::ConvGeometry& g, int32_t rank) const {
  return jit::make_filter_spec_key(g, rank, backend_->rows_isa_for(isa_cap_));
}

void Runtime::Impl::start_warm() {
  std::vector<detail::Configuration> configurations;
  for (const detail::Configuration& saved : detail::load_hot_configurations(policy.cache_dir)) {
    for (const detail::Configuration& c : detail::with_phase_companions(saved)) configurations.push_back(c);
  }
  for (const detail::Configuration& c : configurations) {
    // The key and why this version would decline it (the file may come from another version:
    // such a configuration is left to the detector, which declines it when it gets hot).
    jit::SpecKey key;
    std::string declined;
    detail::ConvGeometry g;
    detail::PoolGeometry runs;
    if (detail::compiled_forward_problem(c, isa_cap_, &g)) {
      key = spec_key(g, c.conv.rank, c.activation == CONVJIT_ACT_RELU);
      declined = detail::jit_declined_because(g, isa_cap_, *backend_, key);
    } else if (detail::pool_rows_geometry(c, &runs) && backend_->compiles(c.op)) {
      key = pool_spec_key(runs, c.op, c.pool.rank);
      detail::PoolOp op;
      detail::pool_rows_op(c.op, &op);
      declined = detail::pool_jit_declined_because(runs, op, *backend_, key);
    } else if (detail::ConvGeometry called; c.op == CONVJIT_OP_CONV_BACKWARD_FILTER && backend_->compiles(c.op) &&
                                            detail::make_conv_geometry(c.conv, &called).ok() &&
                                            detail::filter_rows_problem(called, c.conv, &g).empty()) {
      key = filter_spec_key(g, c.conv.rank);
      declined = backend_->rows_decline_reason(key);
    } else {
      continue;
    }
    if (policy.decline_slower && !declined.empty()) continue;
    const uint64_t id = detail::configuration_id(c);
    bool inserted = false;
    ConfigSlot& slot = table_.find_or_insert(id, c, &inserted);
    warm_pending_.fetch_add(1);
    request_compile(slot, id, key, /*warm=*/true);
  }
}

void Runtime::Impl::save_hot_configurations() {
  std::vector<detail::Configuration> hot;
  table_.for_each([&](ConfigSlot& slot) {
    // Companions come back with their configuration (with_phase_companions).
    if (slot.state.load(std::memory_order_relaxed) == int(SlotState::Compiled) &&
        slot.details->configuration.phase == 0) {
      hot.push_back(slot.details->configuration);
    }
  });
  if (!detail::save_hot_configurations(policy.cache_dir, hot)) {
    std::fprintf(stderr, "convjit: CONVJIT_CACHE_DIR: cannot write %s\n",
                 detail::hot_configurations_path(policy.cache_dir).c_str());
  }
}

Runtime::Impl::~Impl() {
  detail::unregister_for_fork(this);
  if (backend_ && !policy.cache_dir.empty()) {
    wait_for_compiles();
    save_hot_configurations();
  }
  {
    std::lock_guard<std::mutex> lock(compile_mutex_);
    stopping_ = true;
  }
  work_ready_->notify_all();
  if (worker_) worker_->join();
}

int64_t Runtime::Impl::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started_).count();
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

namespace {

void throw_if_error(const detail::Status& status) {
  if (!status.ok()) throw Error(status.code, status.message);
}

}  // namespace

void Runtime::conv_forward(const ConvDims& dims, const float* x, const float* w, const float* bias,
                           Activation activation, float* y) {
  const convjit_conv_params params = dims.to_c();
  throw_if_error(impl_->conv_forward(&params, x, w, bias, int32_t(activation), y));
}

void Runtime::conv_backward_data(const ConvDims& dims, const float* dy, const float* w, float* dx) {
  const convjit_conv_params params = dims.to_c();
  throw_if_error(impl_->conv_backward_data(&params, dy, w, dx));
}

void Runtime::conv_backward_filter(const ConvDims& dims, const float* x, const float* dy, float* dw) {
  const convjit_conv_params params = dims.to_c();
  throw_if_error(impl_->conv_backward_filter(&params, x, dy, dw));
}

void Runtime::maxpool_forward(const PoolDims& dims, const float* x, float* y) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(impl_->pool_forward(detail::PoolOp::Max, &params, 0.0f, x, y));
}

void Runtime::meanpool_forward(const PoolDims& dims, const float* x, float* y) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(impl_->pool_forward(detail::PoolOp::Mean, &params, 0.0f, x, y));
}

void Runtime::lpnormpool_forward(const PoolDims& dims, float p, const float* x, float* y) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(impl_->pool_forward(detail::PoolOp::LpNorm, &params, p, x, y));
}

void Runtime::maxpool_backward(const PoolDims& dims, const float* x, const float* y, const float* dy, float* dx) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(impl_->pool_backward(detail::PoolOp::Max, &params, 0.0f, x, y, dy, dx));
}

void Runtime::meanpool_backward(const PoolDims& dims, const float* dy, float* dx) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(impl_->pool_backward(detail::PoolOp::Mean, &params, 0.0f, nullptr, nullptr, dy, dx));
}

void Runtime::lpnormpool_backward(const PoolDims& dims, float p, const float* x, const float* y, const float* dy,
                                  float* dx) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(impl_->pool_backward(detail::PoolOp::LpNorm, &params, p, x, y, dy, dx));
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
