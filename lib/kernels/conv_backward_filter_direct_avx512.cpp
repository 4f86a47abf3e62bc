#include "conv_backward_filter_direct_impl.hpp"
#include "kernel_isa.hpp"
#include "simd_avx512.hpp"

namespace convjit::detail::avx512 {

bool backward_filter_direct_supported(const ConvGeometry& g, DirectFilterScope scope) {
  return process_may_use(jit::Isa::Avx512) && backward_filter_direct_fits(g, scope);
}

void backward_filter_direct(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  run_backward_filter_direct<Avx512YmmFloats, Avx512ChannelPairs, Avx512ChannelTriples, Avx512GroupPairs>(g, threads, x,
                                                                                                          dy, dw);
}

}  // namespace convjit::detail::avx512
