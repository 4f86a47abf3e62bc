// Tier 0's backward data for NCHW depthwise convolution (one input and one output channel per
// group) at W stride 2, the strided layers of depthwise networks: a dx row's even and odd columns
// are W's two phases, each a stride-1 pass over dy rows with F::kLanes consecutive dy columns in
// the lanes, and the two phase vectors are zipped into 2 * F::kLanes consecutive dx columns in
// registers. So every dx element is written once, from its chain, with no scatter, grid or layout
// copy (the NHWC twin this replaces spent over half its time in the two transposes). D and H take
// any stride and dilation: the (kd, kh) rows that reach each dx row are planned once per call.
//
// Numbers: each dx element is one FMA chain from 0.0f over the dy elements that reach it, in dy's
// order (D, H, then W ascending), taps in the padding adding zero products: for finite weights the
// chain of the NHWC phases (driver/depthwise_backward_data_phases.hpp) and of stride-1 backward
// data as a forward.
// One kernel (conv_depthwise_nchw_backward_data_impl.hpp) built for AVX2/FMA and AVX-512.
#pragma once

#include "geometry.hpp"

namespace convjit::detail {

namespace avx2 {
bool depthwise_nchw_backward_data_supported(const ConvGeometry& g);
void depthwise_nchw_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w, float* dx);
}  // namespace avx2

namespace avx512 {
bool depthwise_nchw_backward_data_supported(const ConvGeometry& g);
void depthwise_nchw_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w, float* dx);
}  // namespace avx512

}  // namespace convjit::detail
