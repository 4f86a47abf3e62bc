#include "conv_depthwise_backward_filter_impl.hpp"
#include "kernel_isa.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

bool depthwise_backward_filter_supported(const ConvGeometry& g) {
  return jit::host_has(jit::Isa::Avx2Fma) && g.layout == CONVJIT_NHWC && g.ic_per_group == 1 && g.oc_per_group == 1 &&
         g.taps <= kDepthwiseFilterMaxTaps;
}

void depthwise_backward_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  run_depthwise_backward_filter<Avx2Floats>(g, threads, x, dy, dw);
}

}  // namespace convjit::detail::avx2
