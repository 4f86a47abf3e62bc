#include "conv_depthwise_backward_data_impl.hpp"
#include "kernel_isa.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

bool depthwise_backward_data_supported(const ConvGeometry& g) {
  return jit::host_has(jit::Isa::Avx2Fma) && g.layout == CONVJIT_NHWC && g.ic_per_group == 1 && g.oc_per_group == 1;
}

void depthwise_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w_taps, int64_t ow_tile,
                             float* dx) {
  run_depthwise_backward_data<Avx2Floats>(g, threads, dy, w_taps, ow_tile, dx);
}

}  // namespace convjit::detail::avx2
