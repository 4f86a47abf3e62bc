// Backward filter's panels for AVX-512 (patch_panel_impl.hpp): 16 x 16 blocks. Compiled with the
// AVX-512 flags; the library calls it only when the host has them.
#include "patch_panel.hpp"
#include "patch_panel_impl.hpp"
#include "simd_avx512.hpp"

namespace convjit::detail::avx512 {

void pack_patch_panel(const PatchRow<const float>* rows, int64_t row_count, int64_t count, float* dst) {
  pack_patch_panel_with<Avx512Floats>(rows, row_count, count, dst);
}

}  // namespace convjit::detail::avx512
