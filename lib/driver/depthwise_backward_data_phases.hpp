// NHWC depthwise backward data as the stride-1 depthwise forwards of its phases, each over its
// real taps only, written straight into dx (rewrite/backward_as_forward.hpp's phases, which other
// problems run through a grid spread onto dx, take zero weights where padding puts outputs before
// a phase's first tap). Along a dim of stride s, the inputs i = s * q + r (residue r) are
// met only by the taps kh = kh0 + j * s < k, kh0 = (r + pad) mod s, from the outputs q + c - j,
// c = (r + pad - kh0) / s: the forward over dy whose tap t reads kh = kh0 + (m - 1 - t) * s (m
// real taps), output q of it being dx's input s * q + r. Along a dim of stride 1 the one phase is
// the whole dim, taps reversed (backward_as_forward.hpp). Padding a phase would need below zero is
// a crop of dy instead, so a pad larger than the kernel's reach is no exception.
//
// Numbers: tier 0's depthwise forward chains, so each dx element is one FMA chain from 0.0f over
// the taps that reach it in reverse weight order: the bits every tier's phases give a depthwise
// problem (their zero weights add exact zeros for finite dy), and stride-1 backward data as a
// forward.
#pragma once

#include <cstdint>

#include "conv_depthwise_nhwc.hpp"
#include "geometry.hpp"

namespace convjit::detail {

// One phase: its forward problem (dy, cropped, to the phase's inputs of dx: x strides are dy's,
// y strides dx's times the strides), where it starts in an image of dy and of dx, and which
// weight each of its taps takes (the mode applied): tap t along dim d is g's tap
// first_tap[d] + t * tap_step[d].
struct DepthwiseDataPhase {
  ConvGeometry forward;
  int64_t dy_offset, dx_offset;
  int64_t first_tap[3], tap_step[3];
};

// Residues along each dim (normalized D, H, W): min(stride, input size).
void depthwise_data_phase_residues(const ConvGeometry& g, int64_t residues[3]);
// The phase of residues r, or false where it cannot run so: dilation along a strided dim, a
// kernel shorter than its stride (inputs no tap reaches), a phase whose every output lies past
// dy, or more taps than tier 0's depthwise forward takes.
bool depthwise_data_phase(const ConvGeometry& g, const int64_t r[3], DepthwiseDataPhase* phase);

// Whether every phase of g runs so (the NCHW kernel at W stride 2, conv_depthwise_nchw_backward_data.hpp,
// keeps the phases' chains and takes only such problems).
bool depthwise_data_phases_run(const ConvGeometry& g);

// Runs backward data of g (NHWC depthwise) so with tier 0's depthwise forward `forward` (the
// ISA's, taking tap-major weights), or returns false, having written nothing, where some phase
// cannot run so.
using DepthwiseForwardFn = void (*)(const ConvGeometry&, int, const float*, const float*, const float*, bool, float*,
                                    convjit_depthwise_row_fn);
bool run_depthwise_backward_data_phases(const ConvGeometry& g, int threads, const float* dy, const float* w, float* dx,
                                        DepthwiseForwardFn forward);

}  // namespace convjit::detail
