// The register tile for AVX-512 (gemm_tile_impl.hpp): 1 zmm accumulator per row. Compiled with
// the AVX-512 flags; the library calls it only when the host has them.
#include <cassert>

#include "gemm_tile.hpp"
#include "gemm_tile_impl.hpp"
#include "simd_avx512.hpp"

namespace convjit::detail::avx512 {

void gemm_tile(const GemmTile& t) {
  RegisterTile<Avx512Floats>::run(t);
}

void gemm_tile_panels(const GemmTile& t, int panels, int64_t panel_stride) {
  assert(panels >= 2 && panels <= 4);
  switch (panels) {
    case 2: return RegisterTile<Avx512Floats>::run_panels<2>(t, panel_stride);
    case 3: return RegisterTile<Avx512Floats>::run_panels<3>(t, panel_stride);
    case 4: return RegisterTile<Avx512Floats>::run_panels<4>(t, panel_stride);
  }
}

}  // namespace convjit::detail::avx512
