#include "conv_depthwise_nchw_impl.hpp"
#include "kernel_isa.hpp"
#include "simd_avx512.hpp"

namespace convjit::detail::avx512 {

bool depthwise_nchw_supported(const ConvGeometry& g) {
  return jit::host_has(jit::Isa::Avx512) && depthwise_nchw_fits<Avx512Floats>(g);
}

void depthwise_nchw(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                    float* y, convjit_depthwise_row_fn) {
  run_depthwise_nchw<Avx512Floats>(g, threads, x, w, bias, relu, y);
}

}  // namespace convjit::detail::avx512
