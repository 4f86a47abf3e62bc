// The C++ API's free functions: the ops on the process's default runtime (convjit::Error on bad input).
#include "convjit/ops.hpp"
#include "convjit/runtime.hpp"
#include "threads.hpp"

namespace convjit {
void conv_forward(const ConvDims& dims, const float* x, const float* w, const float* bias, Activation activation,
                  float* y) {
  Runtime::process_default().conv_forward(dims, x, w, bias, activation, y);
}

void conv_backward_data(const ConvDims& dims, const float* dy, const float* w, float* dx) {
  Runtime::process_default().conv_backward_data(dims, dy, w, dx);
}

void conv_backward_filter(const ConvDims& dims, const float* x, const float* dy, float* dw) {
  Runtime::process_default().conv_backward_filter(dims, x, dy, dw);
}

void maxpool_forward(const PoolDims& dims, const float* x, float* y) {
  Runtime::process_default().maxpool_forward(dims, x, y);
}

void meanpool_forward(const PoolDims& dims, const float* x, float* y) {
  Runtime::process_default().meanpool_forward(dims, x, y);
}

void lpnormpool_forward(const PoolDims& dims, float p, const float* x, float* y) {
  Runtime::process_default().lpnormpool_forward(dims, p, x, y);
}

void maxpool_backward(const PoolDims& dims, const float* x, const float* y, const float* dy, float* dx) {
  Runtime::process_default().maxpool_backward(dims, x, y, dy, dx);
}

void meanpool_backward(const PoolDims& dims, const float* dy, float* dx) {
  Runtime::process_default().meanpool_backward(dims, dy, dx);
}

void lpnormpool_backward(const PoolDims& dims, float p, const float* x, const float* y, const float* dy, float* dx) {
  Runtime::process_default().lpnormpool_backward(dims, p, x, y, dy, dx);
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
