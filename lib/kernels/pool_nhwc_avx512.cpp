#include "kernel_isa.hpp"
#include "pool_nhwc_impl.hpp"
#include "simd_avx512.hpp"

namespace convjit::detail::avx512 {

bool pool_nhwc_supported(const PoolGeometry& g, PoolOp op) {
  return process_may_use(jit::Isa::Avx512) && g.layout == Layout::NHWC && op != PoolOp::LpNorm;
}

void pool_nhwc_forward(const PoolGeometry& g, PoolOp op, const float* x, float* y, int64_t n, int64_t c0, int64_t c1,
                       const OutputBox* skip) {
  run_pool_nhwc_forward<Avx512Floats>(g, op, x, y, n, c0, c1, skip);
}

void pool_nhwc_backward(const PoolGeometry& g, PoolOp op, const float* x, const float* y, const float* dy, float* dx,
                        int64_t n, int64_t c0, int64_t c1, const CompiledPoolRows* compiled) {
  run_pool_nhwc_backward<Avx512Floats>(g, op, x, y, dy, dx, n, c0, c1, compiled);
}

}  // namespace convjit::detail::avx512
