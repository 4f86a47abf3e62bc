// Backward filter for NCHW with few channels (the seed network's 1-3; more where the register tile
// would be the only other kernel: DirectFilterScope) and kernels up to 7 wide: a task per (group,
// block of output channels, ic) keeps a vector accumulator per tap of the block's kernel rows (all
// of them where they fit, else one at a time) in registers and runs over every image and output
// row, so no patch is packed; a thread's range of tasks goes a chunk of images at a time (each
// chunk's x and dy held in the L2), the accumulators stored whole between chunks. Deterministic:
// each dw element has one owner and a fixed order (lanes accumulate pixels ow = lane mod 8, then a
// fixed horizontal sum). One kernel (conv_backward_filter_direct_impl.hpp) built for AVX2 and for
// AVX-512 on 8 lanes, the same bits.
#pragma once

#include "geometry.hpp"

namespace convjit::detail {

// The problems the kernel takes: NCHW with few channel pairs per group, or, where the only other
// kernel is the register tile over packed patches (no compiled twin may run), more of them.
enum class DirectFilterScope { FewChannels, InsteadOfTile };

namespace avx2 {
bool backward_filter_direct_supported(const ConvGeometry& g, DirectFilterScope scope);
void backward_filter_direct(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw);
}  // namespace avx2

namespace avx512 {
bool backward_filter_direct_supported(const ConvGeometry& g, DirectFilterScope scope);
void backward_filter_direct(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw);
}  // namespace avx512

}  // namespace convjit::detail
