#include "conv_depthwise_nchw_backward_data_impl.hpp"
#include "kernel_isa.hpp"
#include "simd_avx512.hpp"

namespace convjit::detail::avx512 {

bool depthwise_nchw_backward_data_supported(const ConvGeometry& g) {
  return process_may_use(jit::Isa::Avx512) &&
         depthwise_nchw_backward_data_fits<Avx512Floats>(g);  // the host first: fits plans in its ISA
}

void depthwise_nchw_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w, float* dx) {
  run_depthwise_nchw_backward_data<Avx512Floats>(g, threads, dy, w, dx);
}

}  // namespace convjit::detail::avx512
