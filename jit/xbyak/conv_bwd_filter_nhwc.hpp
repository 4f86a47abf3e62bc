// Xbyak generator of NHWC backward-filter rows (jit/abi/filter_rows_abi.h): dw in register blocks
// of output channels by vectors of input channels, each block summed over the rows' outputs of
// every real tap, x read in place (no packed patches), dy's channels broadcast. One emitter for
// every ISA: it reads the plan, and the plan reads the key (its ISA gives the traits; its channel
// counts per group the blocks and their tails).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backend.hpp"
#include "isa_traits.hpp"

namespace convjit::jit::xbyak {

// Everything the emitter decides before it emits. Two orientations of the register block: the
// input channels in the lanes (rows: output channels, each dy channel broadcast), or, where they
// would fill under half a vector, the output channels in the lanes (rows: every input channel,
// each x channel broadcast), accumulating dw^T panels (filter_rows_abi.h); a depthwise problem is
// the latter with one row, its groups the output channels and x loaded at dy's channels.
// Transposed, the block holds every W tap's rows at once where they fit and outnumber one tap's
// (depthwise: always), and a depthwise block every H tap's too where they fit. The vector register
// map: block_rows() x block_vectors() accumulators, then the loaded vectors of one output, then the
// broadcast (none where it is broadcast inside the FMA), then AVX2's tail lane mask.
struct FilterPlan {
  IsaTraits isa;
  int64_t taps[3] = {0, 0, 0};  // the kernel's D, H, W
  bool flip = false;
  int64_t in_channels = 0, out_channels = 0;  // per group
  bool transposed = false;                    // the output channels in the lanes
  bool depthwise = false;                     // transposed, the groups' channels in the lanes (x loaded)
  int64_t depthwise_tap_bytes = 0;            // depthwise: between the inputs of consecutive W taps
  bool columns_at_once = false;  // transposed: every W tap's rows at once (filter_rows_abi.h's columns_at_once)
  int depthwise_h_taps = 1;  // depthwise: H taps whose accumulators the block holds at once (KD 1, KH <= 5), or 1
  int oc_block = 0;                           // output channels per register block (<= out_channels unless transposed)
  int oc_tail = 0;                            // output channels of the group's last block, 0: none
  int ic_vectors = 0;                         // not transposed: vectors of input channels per full block
  int64_t ic_full_blocks = 0;
  int ic_tail_vectors = 0;  // vectors of the block after the full ones, 0: none
  int ic_tail_lanes = 0;    // lanes of that block's last vector (its others are full)
  int oc_vectors = 0;       // transposed: vectors of output channels per full block
  int oc_tail_vectors = 0;  // transposed: vectors of the tail block, and its last vector's lanes
  int oc_tail_lanes = 0;
  bool embedded_broadcast = false;  // one vector: each broadcast inside its FMA (AVX-512)
  size_t code_bytes = 0;            // the code buffer: frame + an upper bound per emitted block
  int vector_registers_used = 0;
  std::string unsupported;  // why the key is not generated, or empty
  int64_t reduction() const { return taps[0] * taps[1] * taps[2] * in_channels; }
  // Transposed: accumulator rows per tap, the input channels (depthwise: one).
  int tap_rows() const { return depthwise ? 1 : int(in_channels); }
  // Accumulator rows: output channels, or transposed a tap's rows for every tap held at once.
  int block_rows() const {
    return transposed ? tap_rows() * (columns_at_once ? depthwise_h_taps * int(taps[2]) : 1) : oc_block;
  }
  int block_vectors() const { return transposed ? oc_vectors : ic_vectors; }
  int tail_lanes() const { return transposed ? oc_tail_lanes : ic_tail_lanes; }  // the lane mask's
  bool lane_tail() const {
    return transposed ? oc_tail_vectors > 0 && oc_tail_lanes < isa.lanes
                      : ic_tail_vectors > 0 && ic_tail_lanes < isa.lanes;
  }
};
FilterPlan plan_filter_nhwc(const SpecKey& key);

bool generate_conv_bwd_filter_nhwc(const SpecKey& key, CompiledKernel* out, std::string* error);

}  // namespace convjit::jit::xbyak
