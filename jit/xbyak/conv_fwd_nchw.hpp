// Xbyak generator of NCHW forward tiles: direct convolution along one output row, 8 pixels per
// ymm lane group, weights broadcast straight from OIHW (no packing).
#pragma once

#include <string>

#include "jit/backend.hpp"

namespace convjit::jit::xbyak {

// Register blocking of the NCHW kernel: kOcBlock output channels x kVectors ymm of pixels.
inline constexpr int kNchwOcBlock = 4;
inline constexpr int kNchwVectors = 2;

// Empty when the key can be generated, else why not.
std::string nchw_unsupported_reason(const SpecKey& key);
bool generate_conv_fwd_nchw(const SpecKey& key, CompiledKernel* out, std::string* error);

}  // namespace convjit::jit::xbyak
