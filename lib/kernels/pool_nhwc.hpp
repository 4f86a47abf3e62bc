// Tier 0's max and mean pooling for NHWC, forward and backward: the channels of a pixel are
// contiguous, so they fill the vector lanes; each output pixel's window is clipped once and its
// taps visited in row-major order (pool_window.hpp), as every pooling path does, so the results
// are the scalar path's bits: a running max from -inf that NaN never enters (a window of NaN gives
// NaN, one without a real tap -FLT_MAX), a sum divided once, and gradients added to dx in output
// order (max: to the first tap equal to y). One kernel (pool_nhwc_impl.hpp) built for AVX2 and
// for AVX-512. A call covers channels [c0, c1) of image n: the driver's task; forward leaves out
// the outputs in `skip` (when given: a compiled kernel's).
#pragma once

#include <cstdint>

#include "geometry.hpp"
#include "pool_row_abi.h"

namespace convjit::detail {

// Compiled backward rows (jit/abi/pool_row_abi.h) for the outputs in `box`, whose windows are
// wholly real: the backward kernel runs each row's run of them where its output order reaches it,
// for its block of channels, so every dx element still gets its terms in output order.
struct CompiledPoolRows {
  convjit_pool_row_fn run;
  const convjit_pool_problem* problem;
  OutputBox box;
  bool writes_first_reached;  // the windows cover x: the rows write their first-reached dx unread (pool_row_abi.h)
};

namespace avx2 {
bool pool_nhwc_supported(const PoolGeometry& g, PoolOp op);
void pool_nhwc_forward(const PoolGeometry& g, PoolOp op, const float* x, float* y, int64_t n, int64_t c0, int64_t c1,
                       const OutputBox* skip);
// Writes dx's channels [c0, c1) of image n (every element); x and y are read by Max only;
// compiled: null or the rows for the outputs of its box.
void pool_nhwc_backward(const PoolGeometry& g, PoolOp op, const float* x, const float* y, const float* dy, float* dx,
                        int64_t n, int64_t c0, int64_t c1, const CompiledPoolRows* compiled);
}  // namespace avx2

namespace avx512 {
bool pool_nhwc_supported(const PoolGeometry& g, PoolOp op);
void pool_nhwc_forward(const PoolGeometry& g, PoolOp op, const float* x, float* y, int64_t n, int64_t c0, int64_t c1,
                       const OutputBox* skip);
void pool_nhwc_backward(const PoolGeometry& g, PoolOp op, const float* x, const float* y, const float* dy, float* dx,
                        int64_t n, int64_t c0, int64_t c1, const CompiledPoolRows* compiled);
}  // namespace avx512

}  // namespace convjit::detail
