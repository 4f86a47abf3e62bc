// Tier 0's backward data for NHWC depthwise convolution (one input and one output channel per
// group) when it runs neither as a forward convolution nor as the forwards of its phases
// (driver/depthwise_backward_data_phases.hpp: dilated strided dims, kernels shorter than their
// stride, too many taps): the groups are a pixel's
// contiguous channels, so they fill the vector lanes. It adds the same contributions to dx in the
// same order as the register-tile path (conv_backward_data.cpp): output row by output row (a row
// in tiles of ow_tile pixels), tap by tap in weight order, pixel by pixel, each contribution w * dy
// as the tile's one-term FMA chain from 0. So its bits are that path's. One kernel
// (conv_depthwise_backward_data_impl.hpp) built for AVX2 and for AVX-512.
#pragma once

#include <cstdint>

#include "geometry.hpp"

namespace convjit::detail {

namespace avx2 {
bool depthwise_backward_data_supported(const ConvGeometry& g);
// w_taps: the weights tap-major ([tap][channel], depthwise_nhwc_taps_major); ow_tile: the
// register-tile path's row tile, whose order this keeps.
void depthwise_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w_taps, int64_t ow_tile,
                             float* dx);
}  // namespace avx2

namespace avx512 {
bool depthwise_backward_data_supported(const ConvGeometry& g);
void depthwise_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w_taps, int64_t ow_tile,
                             float* dx);
}  // namespace avx512

}  // namespace convjit::detail
