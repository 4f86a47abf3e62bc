// Tier 0's backward filter for NCHW depthwise convolution (one input and one output channel per
// group) at W stride 2, the strided layers of depthwise networks, on AVX-512. The direct kernel
// (conv_backward_filter_direct.hpp) loads and permutes every tap's inputs once per output row that
// reads them; here a vector holds two groups (one per 256-bit half), each input row is walked once
// against the dy rows it meets through each kernel row, and its inputs are split once per vector
// into even and odd columns: tap j's inputs are the even (j even) or odd ones j / 2 columns on,
// one permute of two such vectors at most. An image's dy vectors are gathered once per pair.
//
// Numbers: the direct kernel's, which is what runs without AVX-512. Each lane's chain takes the
// pixels ow = lane mod 8 in its order (images, output rows, then the row's vectors: its body, then
// its edges) and the same horizontal sum; lanes past a row's end take no FMA, where the direct
// kernel adds 0 * 0 (a sum from +0 is never -0, so nothing changes). It takes only problems the
// direct kernel takes.
#pragma once

#include "geometry.hpp"

namespace convjit::detail::avx512 {

bool depthwise_nchw_backward_filter_supported(const ConvGeometry& g);
void depthwise_nchw_backward_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw);

}  // namespace convjit::detail::avx512
