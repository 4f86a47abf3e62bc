#include "kernel_isa.hpp"
#include "pool_nchw_impl.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

bool pool_nchw_supported(const PoolGeometry& g, PoolOp op) {
  return g.layout == Layout::NCHW && op != PoolOp::LpNorm && (g.stride[2] == 1 || g.stride[2] == 2) &&
         g.window[0] * g.window[1] <= kPoolNchwMaxWindowRows && jit::host_has(jit::Isa::Avx2Fma);
}

void pool_nchw_interior(const PoolGeometry& g, PoolOp op, const float* plane, int64_t first, int64_t count,
                        float* y_plane) {
  run_pool_nchw_interior<Avx2Floats>(g, op, plane, first, count, y_plane);
}

}  // namespace convjit::detail::avx2
