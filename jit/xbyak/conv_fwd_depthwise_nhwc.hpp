// Xbyak generator of NHWC depthwise forward rows (jit/abi/depthwise_rows_abi.h), one emitter for
// AVX2 and AVX-512: per block of output pixels along W and vector of channels, every real tap row
// (a runtime loop), each W tap's weights held in registers and each input column loaded once for
// every output pixel and tap that reads it. The plan reads the key (its ISA gives the traits); the
// emitter reads the plan.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backend.hpp"
#include "isa_traits.hpp"

namespace convjit::jit::xbyak {

// One input column of a pixel block: its column, in pixels from the block's first output's
// leftmost tap, and the (output pixel, W tap) pairs that read it.
struct DepthwiseColumn {
  int64_t column = 0;
  std::vector<std::pair<int, int>> reads;  // (pixel, kw), kw in weight order
};

// Everything the emitter decides before it emits. Vector registers: one accumulator per pixel of
// the block, one weight per W tap, one input column, and AVX2's lane mask of the channel tail.
struct DepthwisePlan {
  IsaTraits isa;
  int64_t channels = 0;          // the pixel pitch of x and y: the key's groups
  int64_t taps_w = 0;            // W taps, each in a register
  int64_t full_vectors = 0;      // whole vectors of channels
  int64_t tail_lanes = 0;        // channels of a last, masked vector (0: none)
  std::vector<int> block_pixels;  // the widest block first, then the powers of two below it
  // Per block size (same order), the input columns in the order the emitter loads them: each
  // output's taps then come in weight order (ascending columns; descending in convolution mode).
  std::vector<std::vector<DepthwiseColumn>> columns;
  int vector_registers_used = 0;
  size_t code_bytes = 0;
  std::string unsupported;  // why the key is not generated, or empty
};
DepthwisePlan plan_depthwise_nhwc(const SpecKey& key);

bool generate_conv_fwd_depthwise_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error);

}  // namespace convjit::jit::xbyak
