// Backward filter's panels for AVX2 (patch_panel_impl.hpp): 8 x 8 blocks. Compiled with the AVX2
// flags; the library calls it only when the host has them.
#include "patch_panel.hpp"
#include "patch_panel_impl.hpp"
#include "simd_avx2.hpp"

namespace convjit::detail::avx2 {

void pack_patch_panel(const PatchRow<const float>* rows, int64_t row_count, int64_t count, float* dst) {
  pack_patch_panel_with<Avx2Floats>(rows, row_count, count, dst);
}

}  // namespace convjit::detail::avx2
