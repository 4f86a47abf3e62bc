#include "conv_depthwise_nhwc_impl.hpp"
#include "isa.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

bool depthwise_nhwc_supported(const ConvGeometry& g) {
  return jit::host_has(jit::Isa::Avx2Fma) && depthwise_nhwc_fits(g);
}

void depthwise_nhwc(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias, bool relu,
                    float* y, convjit_depthwise_row_fn compiled_rows) {
  run_depthwise_nhwc<Avx2Floats>(g, threads, x, depthwise_nhwc_taps_major(g, w), bias, relu, y, compiled_rows);
}

void depthwise_nhwc_tap_major(const ConvGeometry& g, int threads, const float* x, const float* w_taps, const float* bias,
                              bool relu, float* y, convjit_depthwise_row_fn compiled_rows) {
  run_depthwise_nhwc<Avx2Floats>(g, threads, x, w_taps, bias, relu, y, compiled_rows);
}

}  // namespace convjit::detail::avx2
