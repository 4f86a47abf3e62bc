#include "kernel_isa.hpp"
#include "pool_nchw_impl.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

bool pool_nchw_supported(const PoolGeometry& g, PoolOp op) {
  return jit::host_has(jit::Isa::Avx2Fma) && g.layout == Layout::NCHW && op != PoolOp::LpNorm;
}

void pool_nchw_forward(const PoolGeometry& g, PoolOp op, const NchwPoolWalk& walk, const NchwPoolRow* rows,
                       int64_t row_count, const float* x, float* y, int64_t first_plane, int64_t end_plane,
                       float* padded) {
  run_pool_nchw_forward<Avx2Floats>(g, op, walk, rows, row_count, x, y, first_plane, end_plane, padded);
}

void pool_nchw_backward(const PoolGeometry& g, PoolOp op, const NchwPoolWalk& walk, const NchwPoolRow* rows,
                        int64_t row_count, const float* x, const float* y, const float* dy, float* dx,
                        int64_t first_plane, int64_t end_plane, float* padded) {
  run_pool_nchw_backward<Avx2Floats>(g, op, walk, rows, row_count, x, y, dy, dx, first_plane, end_plane, padded);
}

}  // namespace convjit::detail::avx2
