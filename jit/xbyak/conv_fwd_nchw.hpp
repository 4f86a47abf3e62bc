// Xbyak generator of NCHW forward tiles: direct convolution along one output row, isa.lanes
// pixels per vector, weights broadcast straight from OIHW (no packing). One emitter for every ISA:
// it reads the plan, and the plan reads the key (whose ISA gives the traits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend.hpp"
#include "isa_traits.hpp"

namespace convjit::jit::xbyak {

// Everything the emitter decides before it emits. The vector register map: oc_block * vectors
// accumulators, then `vectors` inputs, then the fixed roles (Fixed in the emitter).
struct NchwPlan {
  IsaTraits isa;
  int oc_block = 0, vectors = 0;  // register block: oc_block channels x vectors of isa.lanes pixels
  std::vector<int> block_vectors; // the blocks the pixel loop emits, widest (= vectors) first
  bool rolled_rows = false;       // kernel rows in a run-time loop (tall kernels), else unrolled
  int64_t min_row_pixels = 0;     // the smallest block: shorter segments go to the generic tile
  bool compacts_grid = false;     // flattened segments' real outputs straight into y (opmasks, stride 1)
  size_t code_bytes = 0;          // the code buffer: frame + an upper bound per unrolled tap block
  int vector_registers_used = 0;  // within isa.vector_registers
  std::string unsupported;        // why the key is not generated, or empty
};
NchwPlan plan_nchw(const SpecKey& key);
// The plans' smallest block (the backend's ISA choice reads it without planning).
int64_t nchw_min_row_pixels(Isa isa);

bool generate_conv_fwd_nchw(const SpecKey& key, CompiledKernel* out, std::string* error);

}  // namespace convjit::jit::xbyak
