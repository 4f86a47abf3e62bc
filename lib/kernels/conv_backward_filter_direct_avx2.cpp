#include "conv_backward_filter_direct_impl.hpp"
#include "isa.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

bool backward_filter_direct_supported(const ConvGeometry& g, DirectFilterScope scope) {
  return jit::host_has(jit::Isa::Avx2Fma) && backward_filter_direct_fits(g, scope);
}

void backward_filter_direct(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  run_backward_filter_direct<Avx2Floats, Avx2Floats, Avx2Floats, Avx2Floats>(g, threads, x, dy, dw);
}

}  // namespace convjit::detail::avx2
