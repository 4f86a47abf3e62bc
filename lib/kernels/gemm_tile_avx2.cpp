// The register tile for AVX2/FMA (gemm_tile_impl.hpp): 2 ymm accumulators per row. This file
// alone is compiled with -mavx2 -mfma; the library calls it only when the host has both.
#include "gemm_tile.hpp"
#include "gemm_tile_impl.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

void gemm_tile(const GemmTile& t) {
  RegisterTile<Avx2Floats>::run(t);
}

}  // namespace convjit::detail::avx2
