// Xbyak generator of NCHW forward tiles: direct convolution along one output row, 8 pixels per
// ymm lane group, weights broadcast straight from OIHW (no packing).
#pragma once

#include <cstdint>
#include <string>

#include "backend.hpp"

namespace convjit::jit::xbyak {

// Register blocking of the NCHW kernel: oc_block output channels (the key's channel class)
// x vectors ymm of 8 pixels, at most 12 accumulators (and inputs, at stride 2).
struct NchwPlan {
  int oc_block, vectors;
};
NchwPlan plan_nchw(const SpecKey& key);
// Shorter row segments go to the generic tile (it packs several rows per panel and wins there).
int64_t nchw_min_row_pixels(const NchwPlan& plan);

// Empty when the key can be generated, else why not.
std::string nchw_unsupported_reason(const SpecKey& key);
bool generate_conv_fwd_nchw(const SpecKey& key, CompiledKernel* out, std::string* error);

}  // namespace convjit::jit::xbyak
