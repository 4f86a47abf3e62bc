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

}  // namespace convjit::detail
