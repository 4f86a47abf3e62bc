// Backward filter's panels: up to kTileCols patch rows (weights k0 .. k0 + rows - 1) of `count`
// output pixels laid out pixel by pixel, value (k, p) at dst[p * kTileCols + k - k0], zeros for the
// rows past `rows` and outside each row's real pixels: the B operand of the register tile. A
// transpose of the patch rows, in register blocks (8 x 8 AVX2, 16 x 16 AVX-512) where each of the
// block's rows is wholly padding or wholly real with stride 1 or 2, element by element elsewhere;
// a copy, so every build gives the same panel.
#pragma once

#include <cstdint>

#include "patch_pack.hpp"

namespace convjit::detail {

// The widest build the host has (patch_panel.cpp).
void pack_patch_panel(const PatchRow<const float>* rows, int64_t row_count, int64_t count, float* dst);

namespace avx2 {
void pack_patch_panel(const PatchRow<const float>* rows, int64_t row_count, int64_t count, float* dst);
}  // namespace avx2
namespace avx512 {
void pack_patch_panel(const PatchRow<const float>* rows, int64_t row_count, int64_t count, float* dst);
}  // namespace avx512

}  // namespace convjit::detail
