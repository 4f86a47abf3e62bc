// The extern "C" shim: forwards to the Status-returning ops, records the thread's message, and
// lets no exception cross into C.
#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <tuple>

#include "convjit/convjit.h"
#include "convjit/error.hpp"
#include "convjit/runtime.hpp"
#include "geometry.hpp"
#include "runtime_impl.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

thread_local std::string last_error;

template <typename Call>
convjit_status guarded(Call&& call) noexcept {
  Status status;
  try {
    status = call();
  } catch (const std::bad_alloc&) {
    status = {CONVJIT_ENOMEM, "out of memory"};
  } catch (const std::exception& e) {
    status = {CONVJIT_EINTERNAL, std::string("internal error: ") + e.what()};
  } catch (...) {
    status = {CONVJIT_EINTERNAL, "internal error: unknown exception"};
  }
  last_error = status.ok() ? std::string() : status.message;
  return status.code;
}

// out_size of a conv or pool problem: its first `rank` entries, then 1s.
template <typename Params, typename Geometry>
Status output_size(const Params* params, Status (*make_geometry)(const Params&, Geometry*), int64_t out_size[3]) {
  CONVJIT_RETURN_IF_ERROR(require_pointers({{params, "params"}}));
  Geometry g;
  CONVJIT_RETURN_IF_ERROR(make_geometry(*params, &g));
  CONVJIT_RETURN_IF_ERROR(require_pointers({{out_size, "out_size"}}));
  for (int d = 0; d < 3; ++d) out_size[d] = d < params->rank ? g.out[d + 3 - params->rank] : 1;
  return Status::success();
}

convjit::Runtime::Impl& default_runtime() {
  return convjit::Runtime::process_default().impl();
}

}  // namespace
}  // namespace convjit::detail

using convjit::detail::default_runtime;
using convjit::detail::guarded;
using convjit::detail::PoolOp;
using convjit::detail::Status;
namespace detail = convjit::detail;

extern "C" convjit_status convjit_conv_output_size(const convjit_conv_params* params, int64_t out_size[3]) {
  return guarded([&] { return detail::output_size(params, detail::make_conv_geometry, out_size); });
}

extern "C" convjit_status convjit_conv_forward(const convjit_conv_params* params, const float* x, const float* w,
                                               const float* bias, int32_t activation, float* y) {
  return guarded([&] { return default_runtime().conv_forward(params, x, w, bias, activation, y); });
}

extern "C" convjit_status convjit_conv_backward_data(const convjit_conv_params* params, const float* dy, const float* w,
                                                     float* dx) {
  return guarded([&] { return default_runtime().conv_backward_data(params, dy, w, dx); });
}

extern "C" convjit_status convjit_conv_backward_filter(const convjit_conv_params* params, const float* x,
                                                       const float* dy, float* dw) {
  return guarded([&] { return default_runtime().conv_backward_filter(params, x, dy, dw); });
}

extern "C" convjit_status convjit_pool_output_size(const convjit_pool_params* params, int64_t out_size[3]) {
  return guarded([&] { return detail::output_size(params, detail::make_pool_geometry, out_size); });
}

extern "C" convjit_status convjit_maxpool_forward(const convjit_pool_params* params, const float* x, float* y) {
  return guarded([&] { return default_runtime().pool_forward(PoolOp::Max, params, 0.0f, x, y); });
}

extern "C" convjit_status convjit_meanpool_forward(const convjit_pool_params* params, const float* x, float* y) {
  return guarded([&] { return default_runtime().pool_forward(PoolOp::Mean, params, 0.0f, x, y); });
}

extern "C" convjit_status convjit_lpnormpool_forward(const convjit_pool_params* params, float p, const float* x,
                                                     float* y) {
  return guarded([&] { return default_runtime().pool_forward(PoolOp::LpNorm, params, p, x, y); });
}

extern "C" convjit_status convjit_maxpool_backward(const convjit_pool_params* params, const float* x, const float* y,
                                                   const float* dy, float* dx) {
  return guarded([&] { return default_runtime().pool_backward(PoolOp::Max, params, 0.0f, x, y, dy, dx); });
}

extern "C" convjit_status convjit_meanpool_backward(const convjit_pool_params* params, const float* dy, float* dx) {
  return guarded([&] { return default_runtime().pool_backward(PoolOp::Mean, params, 0.0f, nullptr, nullptr, dy, dx); });
}

extern "C" convjit_status convjit_lpnormpool_backward(const convjit_pool_params* params, float p, const float* x,
                                                      const float* y, const float* dy, float* dx) {
  return guarded([&] { return default_runtime().pool_backward(PoolOp::LpNorm, params, p, x, y, dy, dx); });
}

extern "C" const char* convjit_last_error(void) {
  return detail::last_error.c_str();
}

extern "C" convjit_status convjit_set_num_threads(int32_t num_threads) {
  return guarded([&] {
    if (num_threads < 0) {
      return Status::invalid("num_threads = " + std::to_string(num_threads) + ": must be >= 0 (0 = default)");
    }
    detail::set_thread_count(num_threads);
    return Status::success();
  });
}

extern "C" int32_t convjit_get_num_threads(void) {
  return detail::thread_count();
}

namespace {

convjit::Runtime* as_runtime(convjit_runtime* runtime) {
  return reinterpret_cast<convjit::Runtime*>(runtime);
}

template <size_t N>
void copy_text(char (&dst)[N], const std::string& src) {
  const size_t n = std::min(N - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace

extern "C" void convjit_policy_from_environment(convjit_policy* out) {
  if (!out) return;
  const convjit::Policy p = convjit::Policy::from_environment();
  *out = {};
  out->backend = int32_t(p.backend);
  out->async = p.async;
  out->num_threads = p.num_threads;
  out->verbose = p.verbose;
  out->specialize_sizes = p.specialize_sizes;
  out->decline_slower = p.decline_slower;
  out->hot_threshold = p.hot_threshold;
  out->max_configurations = p.max_configurations;
  out->code_budget_bytes = p.code_budget_bytes;
  out->perf_map = p.perf_map;
  out->max_isa = int32_t(p.max_isa);
  out->adapt_threads = p.adapt_threads;
  // The environment's string outlives the policy; NULL when unset.
  out->cache_dir = p.cache_dir.empty() ? nullptr : std::getenv("CONVJIT_CACHE_DIR");
}

extern "C" convjit_status convjit_runtime_create(const convjit_policy* policy, convjit_runtime** runtime) {
  return guarded([&] {
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{policy, "policy"}, {runtime, "runtime"}}));
    if (policy->backend < CONVJIT_BACKEND_AUTO || policy->backend > CONVJIT_BACKEND_NONE) {
      return Status::invalid("policy.backend = " + std::to_string(policy->backend) + ": must be a convjit_backend");
    }
    if (policy->max_isa < CONVJIT_ISA_AUTO || policy->max_isa > CONVJIT_ISA_AVX512) {
      return Status::invalid("policy.max_isa = " + std::to_string(policy->max_isa) + ": must be a convjit_isa");
    }
    for (auto [value, name, minimum] :
         {std::tuple{int64_t(policy->num_threads), "policy.num_threads", int64_t(0)},
          std::tuple{policy->hot_threshold, "policy.hot_threshold", int64_t(0)},
          std::tuple{policy->max_configurations, "policy.max_configurations", int64_t(1)},
          std::tuple{policy->code_budget_bytes, "policy.code_budget_bytes", int64_t(0)}}) {
      if (value < minimum) {
        return Status::invalid(std::string(name) + " = " + std::to_string(value) +
                               ": must be >= " + std::to_string(minimum));
      }
    }
    convjit::Policy p;
    p.backend = convjit::Backend(policy->backend);
    p.async = policy->async != 0;
    p.num_threads = policy->num_threads;
    p.verbose = policy->verbose != 0;
    p.specialize_sizes = policy->specialize_sizes != 0;
    p.decline_slower = policy->decline_slower != 0;
    p.hot_threshold = policy->hot_threshold;
    p.max_configurations = policy->max_configurations;
    p.code_budget_bytes = policy->code_budget_bytes;
    p.perf_map = policy->perf_map != 0;
    p.max_isa = convjit::Isa(policy->max_isa);
    p.adapt_threads = policy->adapt_threads != 0;
    if (policy->cache_dir) p.cache_dir = policy->cache_dir;
    *runtime = reinterpret_cast<convjit_runtime*>(new convjit::Runtime(p));
    return Status::success();
  });
}

extern "C" void convjit_runtime_destroy(convjit_runtime* runtime) {
  if (runtime && as_runtime(runtime) != &convjit::Runtime::process_default()) delete as_runtime(runtime);
}

extern "C" convjit_runtime* convjit_default_runtime(void) {
  return reinterpret_cast<convjit_runtime*>(&convjit::Runtime::process_default());
}

// A runtime's op: the runtime checked, then the op's own validation.
template <typename Call>
convjit_status on_runtime(convjit_runtime* runtime, Call&& call) {
  return guarded([&] {
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{runtime, "runtime"}}));
    return call(as_runtime(runtime)->impl());
  });
}

extern "C" convjit_status convjit_runtime_conv_forward(convjit_runtime* runtime, const convjit_conv_params* params,
                                                       const float* x, const float* w, const float* bias,
                                                       int32_t activation, float* y) {
  return on_runtime(runtime,
                    [&](convjit::Runtime::Impl& r) { return r.conv_forward(params, x, w, bias, activation, y); });
}

extern "C" convjit_status convjit_runtime_conv_backward_data(convjit_runtime* runtime,
                                                             const convjit_conv_params* params, const float* dy,
                                                             const float* w, float* dx) {
  return on_runtime(runtime, [&](convjit::Runtime::Impl& r) { return r.conv_backward_data(params, dy, w, dx); });
}

extern "C" convjit_status convjit_runtime_conv_backward_filter(convjit_runtime* runtime,
                                                               const convjit_conv_params* params, const float* x,
                                                               const float* dy, float* dw) {
  return on_runtime(runtime, [&](convjit::Runtime::Impl& r) { return r.conv_backward_filter(params, x, dy, dw); });
}

extern "C" convjit_status convjit_runtime_maxpool_forward(convjit_runtime* runtime, const convjit_pool_params* params,
                                                          const float* x, float* y) {
  return on_runtime(runtime,
                    [&](convjit::Runtime::Impl& r) { return r.pool_forward(PoolOp::Max, params, 0.0f, x, y); });
}

extern "C" convjit_status convjit_runtime_meanpool_forward(convjit_runtime* runtime, const convjit_pool_params* params,
                                                           const float* x, float* y) {
  return on_runtime(runtime,
                    [&](convjit::Runtime::Impl& r) { return r.pool_forward(PoolOp::Mean, params, 0.0f, x, y); });
}

extern "C" convjit_status convjit_runtime_lpnormpool_forward(convjit_runtime* runtime,
                                                             const convjit_pool_params* params, float p, const float* x,
                                                             float* y) {
  return on_runtime(runtime,
                    [&](convjit::Runtime::Impl& r) { return r.pool_forward(PoolOp::LpNorm, params, p, x, y); });
}

extern "C" convjit_status convjit_runtime_maxpool_backward(convjit_runtime* runtime, const convjit_pool_params* params,
                                                           const float* x, const float* y, const float* dy, float* dx) {
  return on_runtime(
      runtime, [&](convjit::Runtime::Impl& r) { return r.pool_backward(PoolOp::Max, params, 0.0f, x, y, dy, dx); });
}

extern "C" convjit_status convjit_runtime_meanpool_backward(convjit_runtime* runtime, const convjit_pool_params* params,
                                                            const float* dy, float* dx) {
  return on_runtime(runtime, [&](convjit::Runtime::Impl& r) {
    return r.pool_backward(PoolOp::Mean, params, 0.0f, nullptr, nullptr, dy, dx);
  });
}

extern "C" convjit_status convjit_runtime_lpnormpool_backward(convjit_runtime* runtime,
                                                              const convjit_pool_params* params, float p,
                                                              const float* x, const float* y, const float* dy,
                                                              float* dx) {
  return on_runtime(
      runtime, [&](convjit::Runtime::Impl& r) { return r.pool_backward(PoolOp::LpNorm, params, p, x, y, dy, dx); });
}

extern "C" convjit_status convjit_runtime_wait(convjit_runtime* runtime) {
  return guarded([&] {
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{runtime, "runtime"}}));
    as_runtime(runtime)->wait_for_compiles();
    return Status::success();
  });
}

extern "C" convjit_status convjit_runtime_get_totals(convjit_runtime* runtime, convjit_runtime_totals* totals) {
  return guarded([&] {
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{runtime, "runtime"}, {totals, "totals"}}));
    const convjit::RuntimeStats s = as_runtime(runtime)->stats();
    *totals = {};
    totals->configurations = int64_t(s.configurations.size());
    for (const convjit::ConfigStats& c : s.configurations) {
      totals->calls_generic += c.calls_generic;
      totals->calls_jit += c.calls_jit;
    }
    totals->compiles = s.compiles;
    totals->compile_failures = s.compile_failures;
    totals->kernels = s.kernels;
    totals->code_bytes = s.code_bytes;
    totals->evictions = s.evictions;
    totals->kernel_evictions = s.kernel_evictions;
    totals->mapped_bytes = s.mapped_bytes;
    return Status::success();
  });
}

extern "C" convjit_status convjit_runtime_get_config_stats(convjit_runtime* runtime, convjit_config_stats* out,
                                                           int64_t capacity, int64_t* count) {
  return guarded([&] {
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{runtime, "runtime"}, {count, "count"}}));
    if (capacity > 0) CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{out, "out"}}));
    const convjit::RuntimeStats s = as_runtime(runtime)->stats();
    *count = int64_t(s.configurations.size());
    for (int64_t i = 0; i < capacity && i < *count; ++i) {
      const convjit::ConfigStats& c = s.configurations[size_t(i)];
      convjit_config_stats& o = out[i];
      o = {};
      o.op = int32_t(c.op);
      if (convjit::is_pool(c.op)) {
        o.pool_params = c.pool_dims.to_c();
        o.p = c.p;
      } else {
        o.params = c.dims.to_c();
        o.activation = int32_t(c.activation);
        o.has_bias = c.has_bias;
      }
      o.calls_generic = c.calls_generic;
      o.calls_jit = c.calls_jit;
      o.code_bytes = c.code_bytes;
      o.mean_ns_generic = c.mean_ns_generic;
      o.mean_ns_jit = c.mean_ns_jit;
      o.compile_us = c.compile_us;
      copy_text(o.state, c.state);
      copy_text(o.kernel, c.kernel);
      copy_text(o.failure, c.failure);
    }
    return Status::success();
  });
}

extern "C" convjit_status convjit_runtime_write_stats(convjit_runtime* runtime, const char* path) {
  return guarded([&] {
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{runtime, "runtime"}, {path, "path"}}));
    try {
      as_runtime(runtime)->write_stats(path);
    } catch (const convjit::Error& e) {
      return Status{e.status(), e.what()};
    }
    return Status::success();
  });
}
