#include "kernel_isa.hpp"
#include "pool_nchw_whole_rows_impl.hpp"
#include "simd_avx512.hpp"

namespace convjit::detail::avx512 {
namespace {

bool host_runs_this_build() {
  return process_may_use(jit::Isa::Avx512);
}

}  // namespace

bool pool_nchw_whole_rows_forward_supported(const PoolGeometry& g, PoolOp op) {
  return host_runs_this_build() && whole_rows_fit(g) && op != PoolOp::LpNorm;
}

bool pool_nchw_whole_rows_backward_supported(const PoolGeometry& g, PoolOp op) {
  return host_runs_this_build() && whole_rows_fit(g) && windows_never_overlap(g) && op == PoolOp::Mean;
}

void pool_nchw_whole_rows_forward(const PoolGeometry& g, PoolOp op, const float* x, float* y, int64_t first_plane,
                                  int64_t end_plane) {
  run_whole_rows_forward<Avx512Floats>(g, op, x, y, first_plane, end_plane);
}

void pool_nchw_mean_backward_whole_rows(const PoolGeometry& g, const float* dy, float* dx, int64_t first_plane,
                                        int64_t end_plane) {
  run_mean_backward_whole_rows<Avx512Floats>(g, dy, dx, first_plane, end_plane);
}

}  // namespace convjit::detail::avx512
