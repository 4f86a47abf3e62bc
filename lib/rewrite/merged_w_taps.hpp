// NHWC backward filter with few input channels runs as a problem with one tap along W: with one
// group, no flip, no dilation along W and every output's W taps inside the input, a pixel's taps
// along W and their channels are one run of kernel[2] x channels floats in x (this pixel's
// channels, the next pixel's, ...) and in dw (OHWI: [kw][ic] inside a kernel row). The merged
// problem reads and writes the same memory with vectors of that run, which waste fewer lanes
// than vectors of 3 channels. Each dw element keeps its chain (the images and outputs in order).
#pragma once

#include "geometry.hpp"

namespace convjit::detail {

// Input channels below which the merge is worth it: fewer than an AVX2 vector, where the compiled
// rows decline the problem as it is.
inline constexpr int64_t kMergedWTapsBelowChannels = 8;

bool backward_filter_merges_w_taps(const ConvGeometry& g);
// g with its W taps merged into the channels (valid where backward_filter_merges_w_taps(g)).
ConvGeometry with_w_taps_merged(const ConvGeometry& g);

}  // namespace convjit::detail
