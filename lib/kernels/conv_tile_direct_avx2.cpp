#include "conv_tile_direct_impl.hpp"
#include "isa.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

bool conv_tile_direct_supported(const convjit_conv_problem& g) {
  return jit::host_has(jit::Isa::Avx2Fma) && conv_tile_direct_fits(g);
}

void conv_tile_direct(const convjit_conv_problem* problem, const convjit_conv_tile* tile) {
  run_conv_tile_direct<Avx2Floats>(problem, tile);
}

}  // namespace convjit::detail::avx2
