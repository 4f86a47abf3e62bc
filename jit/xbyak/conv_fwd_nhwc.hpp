// Xbyak generator of NHWC forward tiles: per block of 6 output pixels of one row, 16 output
// channels in two ymm per pixel; inputs broadcast from x (channels contiguous), weights read
// from a [k][16] repacking that the kernel's prepare makes once per 16 channels.
#pragma once

#include <string>

#include "jit/backend.hpp"

namespace convjit::jit::xbyak {

inline constexpr int kNhwcPixelBlock = 6;
inline constexpr int kNhwcOcBlock = 16;

std::string nhwc_unsupported_reason(const SpecKey& key);
bool generate_conv_fwd_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error);

}  // namespace convjit::jit::xbyak
