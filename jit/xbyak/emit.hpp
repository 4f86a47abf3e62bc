// What every Xbyak generator shares: the key limits of all kernel families, and turning a
// finished CodeGenerator into a CompiledKernel (code made read+execute, Xbyak's exceptions
// caught here so none leaves jit/xbyak).
#pragma once

#include <xbyak/xbyak.h>

#include <cstdint>
#include <memory>
#include <string>

#include "backend.hpp"

namespace convjit::jit::xbyak {

// Empty when the key's extents fit the generators' immediates and unrolling budget.
inline std::string common_unsupported_reason(const SpecKey& key) {
  for (int d = 0; d < 3; ++d) {
    if (key.kernel[d] * key.dilation[d] > (1 << 16) || key.stride[d] > (1 << 16)) return "kernel extent too large";
  }
  if (key.kernel[0] * key.kernel[1] * key.kernel[2] > 512) return "more than 512 taps";
  return {};
}

// Kernel heights from which a generator loops over the kernel rows at run time instead of
// unrolling them: a 5x5 or 7x7 kernel then emits within a compile's 50 us (and its smaller code ran
// faster); 3x3 kernels stay unrolled (looping them cost NHWC 15%).
inline constexpr int64_t kRolledKernelRows = 5;

// make() builds the generator (emitting the code); kernel holds everything but `compute`.
template <typename Make>
bool emit_kernel(const SpecKey& key, convjit_conv_kernel kernel, Make&& make, CompiledKernel* out, std::string* error) {
  try {
    std::shared_ptr<Xbyak::CodeGenerator> generator = make();
    generator->setProtectModeRE();  // written while read+write, executable only from here on
    kernel.compute = generator->getCode<convjit_conv_tile_fn>();
    out->kernel = kernel;
    out->key = key;
    out->name = key.name();
    out->code_bytes = generator->getSize();
    out->code = generator;
    return true;
  } catch (const Xbyak::Error& e) {
    *error = std::string("xbyak: ") + e.what();
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return false;
}

}  // namespace convjit::jit::xbyak
