// Xbyak generator of NHWC forward tiles: per block of output pixels of one row, a block of output
// channels in vectors per pixel; inputs broadcast from x (channels contiguous), weights read from
// a [k][oc_block] packing that the driver makes once per channel block. One emitter
// for every ISA: it reads the plan, and the plan reads the key (whose ISA gives the traits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend.hpp"
#include "isa_traits.hpp"

namespace convjit::jit::xbyak {

// Everything the emitter decides before it emits. The vector register map: pixels * vectors
// accumulators, then the weights (held) or the inputs, then one of the other; the last two
// vectors are temporaries once the reduction is done.
struct NhwcPlan {
  IsaTraits isa;
  int pixels = 0, vectors = 0;      // register block: pixels x vectors of isa.lanes channels
  std::vector<int> block_vectors;   // the channel variants, widest (= vectors) first: a partial
                                    // channel block runs the narrowest that holds its channels
  std::vector<int> block_pixels;    // the blocks the pixel loop emits, widest (= pixels) first
  // With r pixels of the segment left, r < size(): the index in block_pixels of the block to emit
  // next; from size() on, the widest. Empty with one block size.
  std::vector<int> block_schedule;
  bool weights_held = false;        // the weight vectors stay over the block's pixels, else its inputs do
  bool embedded_broadcast = false;  // one vector: each input is used once, broadcast inside its FMA
  int pixel_groups = 0;             // input pointers, one per 3 pixels (x86 scales 1 and 2)
  bool rolled_rows = false;         // kernel rows in a run-time loop (tall kernels), else unrolled
  bool rolled_columns = false;      // a kernel row's taps in a run-time loop, else unrolled
  size_t code_bytes = 0;            // the code buffer: frame + an upper bound per unrolled tap
  int vector_registers_used = 0;    // within isa.vector_registers
  std::string unsupported;          // why the key is not generated, or empty
  int oc_block() const { return isa.lanes * vectors; }
  int64_t min_row_pixels = 0;  // the shortest segment taken: at least the smallest block
};
NhwcPlan plan_nhwc(const SpecKey& key);
// The plans' shortest segment (the backend's ISA choice reads it without planning).
int64_t nhwc_min_row_pixels(Isa isa, int32_t oc_class);

bool generate_conv_fwd_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error);

}  // namespace convjit::jit::xbyak
