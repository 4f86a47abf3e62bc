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

// The same for an NHWC forward g that a backward data problem runs as (lib/rewrite/
// backward_as_forward.hpp), from that problem's own OHWI weights w_backward, [oc'][tap][ic'] per
// group, whose ic' are g's output channels and oc' g's input channels, taps in the same order: a
// packed row (tap, oc') of the block from first_oc is the run at w_backward[oc'][tap][first_oc's
// ic'], a copy; the transposed weights are never formed.
void pack_weights_k_major_from_backward(const ConvGeometry& g, const float* w_backward, int64_t first_oc,
                                        int64_t oc_count, int64_t oc_block, float* packed);
// And that block's [oc][k] rows (what pack_weights_k_major reads), for a segment the generic tile
// takes: per tap a transpose.
void weight_rows_from_backward(const ConvGeometry& g, const float* w_backward, int64_t first_oc, int64_t oc_count,
                               float* rows);

}  // namespace convjit::detail
