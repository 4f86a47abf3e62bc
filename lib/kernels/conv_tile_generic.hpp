// Tier 0's forward tile: packs the tile's im2col block into 16-wide panels in scratch and runs
// the register tile over them. Correct for every problem; JIT tiers replace it per key.
#pragma once

#include <cstdint>

#include "conv_tile_abi.h"

namespace convjit::detail {

void conv_tile_generic(const convjit_conv_problem* problem, const convjit_conv_tile* tile);

}  // namespace convjit::detail
