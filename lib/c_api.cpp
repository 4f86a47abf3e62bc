// The extern "C" shim: forwards to the Status-returning ops, records the thread's message, and
// lets no exception cross into C.
#include <exception>
#include <new>
#include <string>

#include "convjit/convjit.h"
#include "lib/geometry.hpp"
#include "lib/ops_internal.hpp"
#include "lib/threads.hpp"

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

}  // namespace

Status require_pointers(std::initializer_list<std::pair<const void*, const char*>> pointers) {
  for (const auto& [pointer, name] : pointers) {
    if (pointer == nullptr) return Status::invalid(std::string(name) + " is NULL");
  }
  return Status::success();
}

}  // namespace convjit::detail

using convjit::detail::guarded;
using convjit::detail::PoolOp;
using convjit::detail::Status;
namespace detail = convjit::detail;

extern "C" convjit_status convjit_conv_output_size(const convjit_conv_params* params, int64_t out_size[3]) {
  return guarded([&] {
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{params, "params"}}));
    detail::ConvGeometry g;
    CONVJIT_RETURN_IF_ERROR(detail::make_conv_geometry(*params, &g));
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{out_size, "out_size"}}));
    for (int d = 0; d < 3; ++d) out_size[d] = d < params->rank ? g.out[d + 3 - params->rank] : 1;
    return Status::success();
  });
}

extern "C" convjit_status convjit_conv_forward(const convjit_conv_params* params, const float* x, const float* w,
                                                const float* bias, int32_t activation, float* y) {
  return guarded([&] { return detail::conv_forward(params, x, w, bias, activation, y); });
}

extern "C" convjit_status convjit_conv_backward_data(const convjit_conv_params* params, const float* dy,
                                                      const float* w, float* dx) {
  return guarded([&] { return detail::conv_backward_data(params, dy, w, dx); });
}

extern "C" convjit_status convjit_conv_backward_filter(const convjit_conv_params* params, const float* x,
                                                        const float* dy, float* dw) {
  return guarded([&] { return detail::conv_backward_filter(params, x, dy, dw); });
}

extern "C" convjit_status convjit_pool_output_size(const convjit_pool_params* params, int64_t out_size[3]) {
  return guarded([&] {
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{params, "params"}}));
    detail::PoolGeometry g;
    CONVJIT_RETURN_IF_ERROR(detail::make_pool_geometry(*params, &g));
    CONVJIT_RETURN_IF_ERROR(detail::require_pointers({{out_size, "out_size"}}));
    for (int d = 0; d < 3; ++d) out_size[d] = d < params->rank ? g.out[d + 3 - params->rank] : 1;
    return Status::success();
  });
}

extern "C" convjit_status convjit_maxpool_forward(const convjit_pool_params* params, const float* x, float* y) {
  return guarded([&] { return detail::pool_forward(PoolOp::Max, params, 0.0f, x, y); });
}

extern "C" convjit_status convjit_meanpool_forward(const convjit_pool_params* params, const float* x, float* y) {
  return guarded([&] { return detail::pool_forward(PoolOp::Mean, params, 0.0f, x, y); });
}

extern "C" convjit_status convjit_lpnormpool_forward(const convjit_pool_params* params, float p, const float* x,
                                                      float* y) {
  return guarded([&] { return detail::pool_forward(PoolOp::LpNorm, params, p, x, y); });
}

extern "C" convjit_status convjit_maxpool_backward(const convjit_pool_params* params, const float* x, const float* y,
                                                    const float* dy, float* dx) {
  return guarded([&] { return detail::pool_backward(PoolOp::Max, params, 0.0f, x, y, dy, dx); });
}

extern "C" convjit_status convjit_meanpool_backward(const convjit_pool_params* params, const float* dy, float* dx) {
  return guarded([&] { return detail::pool_backward(PoolOp::Mean, params, 0.0f, nullptr, nullptr, dy, dx); });
}

extern "C" convjit_status convjit_lpnormpool_backward(const convjit_pool_params* params, float p, const float* x,
                                                       const float* y, const float* dy, float* dx) {
  return guarded([&] { return detail::pool_backward(PoolOp::LpNorm, params, p, x, y, dy, dx); });
}

extern "C" const char* convjit_last_error(void) { return detail::last_error.c_str(); }

extern "C" convjit_status convjit_set_num_threads(int32_t num_threads) {
  return guarded([&] {
    if (num_threads < 0) {
      return Status::invalid("num_threads = " + std::to_string(num_threads) + ": must be >= 0 (0 = default)");
    }
    detail::set_thread_count(num_threads);
    return Status::success();
  });
}

extern "C" int32_t convjit_get_num_threads(void) { return detail::thread_count(); }
