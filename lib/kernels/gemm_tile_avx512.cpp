// The register tile for AVX-512 (gemm_tile_impl.hpp): 1 zmm accumulator per row. Compiled with
// the AVX-512 flags; the library calls it only when the host has them.
#include "gemm_tile.hpp"
#include "gemm_tile_impl.hpp"
#include "simd_avx512.hpp"

namespace convjit::detail::avx512 {

void gemm_tile(const GemmTile& t) {
  RegisterTile<Avx512Floats>::run(t);
}

void gemm_tile_pair(const GemmTile& t, int64_t panel_stride) {
  RegisterTile<Avx512Floats>::run_pair(t, panel_stride);
}

void gemm_tile_quad(const GemmTile& t, int64_t panel_stride) {
  RegisterTile<Avx512Floats>::run_quad(t, panel_stride);
}

}  // namespace convjit::detail::avx512
