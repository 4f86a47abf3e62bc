#include "isa.hpp"
#include "pool_nchw_whole_rows_impl.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

bool pool_nchw_whole_rows_supported(const PoolGeometry& g, PoolOp op) {
  return whole_rows_fit(g, op) && jit::host_has(jit::Isa::Avx2Fma);
}

void pool_nchw_mean_backward_whole_rows(const PoolGeometry& g, const float* dy, float* dx, int64_t first_plane,
                                        int64_t end_plane) {
  run_mean_backward_whole_rows<Avx2Floats>(g, dy, dx, first_plane, end_plane);
}

}  // namespace convjit::detail::avx2
