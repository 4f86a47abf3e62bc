// The weights of a packing kernel's tile (jit/abi/conv_tile_abi.h: packs_weights), k-major:
// packed[k * oc_block + j] = w[j][k] for the oc_count <= oc_block channels at w, zeros for the
// rest of the block. A transpose in registers (lib/kernels/transpose.hpp): read a value at a time,
// the block's weight rows, reduction floats apart, share few L1 sets when the reduction is a
// multiple of 1 KiB of floats and evict each other before their lines are used up
// (bench/RESULTS.md, "Session 8": resnet_3x3_7 NHWC spent 46% of its time here).
#pragma once

#include <cstdint>

#include "geometry.hpp"

namespace convjit::detail {

void pack_weights_k_major(const ConvGeometry& g, const float* w, int64_t oc_count, int64_t oc_block, float* packed);

// A backward data problem's own weights as the NHWC forward g it runs as (lib/rewrite/
// backward_as_forward.hpp; the forward's twin where the problem is NCHW) reads them: g's input
// channels are the problem's output channels oc', g's output channels its input channels ic', and
// element (oc', tap, ic') of a group is at w[oc' * taps * ic' count + tap * tap_step + ic' * ic_step],
// taps in the same order: OHWI (an NHWC problem) tap_step = the ic' count, ic_step = 1; OIHW
// (NCHW) tap_step = 1, ic_step = taps.
struct BackwardWeights {
  const float* w = nullptr;
  int64_t tap_step = 0, ic_step = 0;
};
BackwardWeights backward_weights(const ConvGeometry& backward, const float* w);

// pack_weights_k_major for the block of g's output channels from first_oc, from backward weights:
// a packed row (tap, oc') is the run of ic' from first_oc's at (oc', tap) (a copy where ic_step is
// 1); the transposed weights are never formed.
void pack_weights_k_major_from_backward(const ConvGeometry& g, const BackwardWeights& w, int64_t first_oc,
                                        int64_t oc_count, int64_t oc_block, float* packed);
// And that block's [oc][k] rows (what pack_weights_k_major reads), for a segment the generic tile
// takes.
void weight_rows_from_backward(const ConvGeometry& g, const BackwardWeights& w, int64_t first_oc, int64_t oc_count,
                               float* rows);

}  // namespace convjit::detail
