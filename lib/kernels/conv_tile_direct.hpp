// Tier 0's forward tile for NCHW with stride 1 or 2 along W: direct convolution along output
// rows, a vector of pixels at a time (8 per ymm, 16 per zmm), weights broadcast straight from OIHW,
// no packing. Taps in the padding are masked lanes (zero products) or skipped rows; for finite
// inputs both add exactly nothing, so the numbers are those of jit/abi/conv_tile_abi.h. One kernel
// (conv_tile_direct_impl.hpp) built for AVX2/FMA and for AVX-512: check *_supported() first.
#pragma once

#include "conv_tile_abi.h"

namespace convjit::detail {

namespace avx2 {
bool conv_tile_direct_supported(const convjit_conv_problem& problem);
void conv_tile_direct(const convjit_conv_problem* problem, const convjit_conv_tile* tile);
}  // namespace avx2

namespace avx512 {
bool conv_tile_direct_supported(const convjit_conv_problem& problem);
void conv_tile_direct(const convjit_conv_problem* problem, const convjit_conv_tile* tile);
}  // namespace avx512

}  // namespace convjit::detail
