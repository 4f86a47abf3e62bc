// Xbyak generator of NHWC forward tiles: per block of output pixels of one row, a block of output
// channels in ymm vectors per pixel; inputs broadcast from x (channels contiguous), weights read
// from a [k][oc_block] repacking that the kernel's prepare makes once per channel block.
#pragma once

#include <cstdint>
#include <string>

#include "backend.hpp"
#include "vector.hpp"

namespace convjit::jit::xbyak {

// Register blocking of the NHWC kernel, by the key's channel class: 6 pixels x 16 channels, or,
// for 32 or more channels per group, 3 pixels x 32 channels. Both fill 12 accumulators; the wide
// block broadcasts 3 inputs per 12 FMAs instead of 6 (bench/RESULTS.md, "Why the tier rules ...").
struct NhwcPlan {
  int pixels, vectors;
  int oc_block() const { return kVectorFloats * vectors; }
};
NhwcPlan plan_nhwc(const SpecKey& key);

std::string nhwc_unsupported_reason(const SpecKey& key);
bool generate_conv_fwd_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error);

}  // namespace convjit::jit::xbyak
