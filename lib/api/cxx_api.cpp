// The C++ API: the same ops as the C ABI, throwing convjit::Error instead of returning a status.
#include "convjit/ops.hpp"
#include "convjit/runtime.hpp"
#include "ops_internal.hpp"
#include "threads.hpp"

namespace convjit {
namespace {

void throw_if_error(const detail::Status& status) {
  if (!status.ok()) throw Error(status.code, status.message);
}

}  // namespace

void conv_forward(const ConvDims& dims, const float* x, const float* w, const float* bias, Activation activation,
                  float* y) {
  Runtime::process_default().conv_forward(dims, x, w, bias, activation, y);
}

void conv_backward_data(const ConvDims& dims, const float* dy, const float* w, float* dx) {
  Runtime::process_default().conv_backward_data(dims, dy, w, dx);
}

void conv_backward_filter(const ConvDims& dims, const float* x, const float* dy, float* dw) {
  const convjit_conv_params params = dims.to_c();
  throw_if_error(detail::conv_backward_filter(&params, x, dy, dw));
}

void maxpool_forward(const PoolDims& dims, const float* x, float* y) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(detail::pool_forward(detail::PoolOp::Max, &params, 0.0f, x, y));
}

void meanpool_forward(const PoolDims& dims, const float* x, float* y) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(detail::pool_forward(detail::PoolOp::Mean, &params, 0.0f, x, y));
}

void lpnormpool_forward(const PoolDims& dims, float p, const float* x, float* y) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(detail::pool_forward(detail::PoolOp::LpNorm, &params, p, x, y));
}

void maxpool_backward(const PoolDims& dims, const float* x, const float* y, const float* dy, float* dx) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(detail::pool_backward(detail::PoolOp::Max, &params, 0.0f, x, y, dy, dx));
}

void meanpool_backward(const PoolDims& dims, const float* dy, float* dx) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(detail::pool_backward(detail::PoolOp::Mean, &params, 0.0f, nullptr, nullptr, dy, dx));
}

void lpnormpool_backward(const PoolDims& dims, float p, const float* x, const float* y, const float* dy, float* dx) {
  const convjit_pool_params params = dims.to_c();
  throw_if_error(detail::pool_backward(detail::PoolOp::LpNorm, &params, p, x, y, dy, dx));
}

void set_num_threads(int num_threads) {
  if (num_threads < 0) {
    throw Error(CONVJIT_EINVAL, "num_threads = " + std::to_string(num_threads) + ": must be >= 0 (0 = default)");
  }
  detail::set_thread_count(num_threads);
}

int num_threads() {
  return detail::thread_count();
}

}  // namespace convjit
