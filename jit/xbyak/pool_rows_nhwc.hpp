// Xbyak generator of NHWC max and mean pooling rows, forward and backward (jit/abi/pool_row_abi.h):
// for each block of a pixel's channels, every output of the run, its window's taps unrolled in
// row-major order with the window, stride and dilation of the key. One emitter for every ISA and
// both directions: it reads the plan, and the plan reads the key (whose ISA gives the traits).
#pragma once

#include <cstddef>
#include <string>

#include "backend.hpp"
#include "isa_traits.hpp"

namespace convjit::jit::xbyak {

// Everything the emitter decides before it emits. Vector registers, forward: one accumulator per
// vector of the channel block, AVX2's max one lane mask per vector for "a number was met" (AVX-512
// keeps those in opmask registers), then a loaded value, a compare result and the constants;
// backward: the output's gradient per vector (mean: its share), max its y per vector (NaN in the
// lanes already routed) and a NaN, then three temporaries. AVX2's lane mask of the last vector is
// the last of those 16; backward's carried columns follow.
struct PoolPlan {
  IsaTraits isa;
  bool max = false;  // else mean
  bool backward = false;
  // Backward rows whose windows cover x (pool_row_abi.h): the taps from first_reached on along
  // every dim (window - stride; set only then) write dx without reading it.
  bool writes_first_reached = false;
  int first_reached[3] = {0, 0, 0};
  int block_vectors = 0;    // vectors of channels per block: full blocks, then a tail block of 1..this
  // Backward over overlapping windows: the window's first columns of taps whose dx the last
  // output's taps left in registers (per row of taps and vector), not read from dx; 0 for none.
  int carried_columns = 0;
  int64_t taps = 0;         // the window's, all unrolled
  size_t code_bytes = 0;    // the code buffer: frame + an upper bound per unrolled tap
  int vector_registers_used = 0;
  std::string unsupported;  // why the key is not generated, or empty
  int block_channels() const { return isa.lanes * block_vectors; }
};
PoolPlan plan_pool_nhwc(const SpecKey& key);

bool generate_pool_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error);

}  // namespace convjit::jit::xbyak
