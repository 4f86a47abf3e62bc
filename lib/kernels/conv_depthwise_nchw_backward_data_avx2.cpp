#include "conv_depthwise_nchw_backward_data_impl.hpp"
#include "kernel_isa.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

bool depthwise_nchw_backward_data_supported(const ConvGeometry& g) {
  return jit::host_has(jit::Isa::Avx2Fma) &&
         depthwise_nchw_backward_data_fits<Avx2Floats>(g);  // the host first: fits plans in its ISA
}

void depthwise_nchw_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w, float* dx) {
  run_depthwise_nchw_backward_data<Avx2Floats>(g, threads, dy, w, dx);
}

}  // namespace convjit::detail::avx2
