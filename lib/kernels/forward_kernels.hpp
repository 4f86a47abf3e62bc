// Tier 0's forward kernels, registered as data: one row each, per ISA, in the order they are
// preferred (as BLIS registers an architecture's microkernels in its context and XNNPACK lists
// them per ISA). The first row whose ISA the host has and that takes the problem runs it; the last
// row takes every problem. Adding a kernel or an ISA is adding a row; the driver reads a row's
// properties and never asks which kernel it is.
#pragma once

#include <cstdint>
#include <span>

#include "conv_tile_abi.h"
#include "geometry.hpp"
#include "kernel_isa.hpp"

namespace convjit::detail {

// Output channels per group up to which tier 0 takes the direct tile (and an NHWC problem runs as
// NCHW, lib/rewrite/nhwc_as_nchw.hpp). Packing a patch costs the same whatever the output channels,
// so with few of them per group (the seed network's 2-3, depthwise's 1) the direct tile wins; with
// more, the register tile over packed patches does (bench/RESULTS.md, "Why the tier rules ...").
inline constexpr int64_t kDirectMaxOutputChannels = 8;


// A kernel that runs a whole forward call, splitting the work over threads itself (the depthwise
// kernels, whose channels or taps fill the vector lanes across the driver's tiles). compiled_rows:
// the configuration's compiled NHWC depthwise rows (jit/abi/depthwise_rows_abi.h), or null; the
// kernels that call none ignore it.
using ConvForwardOpFn = void (*)(const ConvGeometry& g, int threads, const float* x, const float* w, const float* bias,
                                 bool relu, float* y, convjit_depthwise_row_fn compiled_rows);

struct GenericForwardKernel {
  const char* name;  // op, layout or kind, then "__" and the ISA
  jit::Isa isa;
  bool (*takes)(const ConvGeometry& g);
  // Exactly one is set: a tile kernel, which the driver tiles and threads (the tile ABI of
  // jit/abi/conv_tile_abi.h), or one that runs the whole call.
  convjit_conv_tile_fn tile;
  ConvForwardOpFn whole_call;
  // A tile packs im2col panels of pixel_granule pixels, so the driver sizes tiles to keep them in
  // L2; the other tiles take whole planes unless the threads need more tasks.
  bool packs_patches;
  int64_t pixel_granule, oc_granule;  // tiles hold multiples of these (the register tile's shape)
  // Non-null where no compiled kernel beats this one: why the runtime keeps its problems on tier 0
  // (bench/RESULTS.md, "Why the tier rules ...").
  const char* jit_loses_because;
};

std::span<const GenericForwardKernel> generic_forward_kernels();
// The kernel tier 0 runs g on: the first row of an ISA the host has, at most max_isa (the
// runtime's cap, Policy::max_isa), that takes g. RowKind::Tile: the first such tile kernel (what a
// compiled row kernel falls back to for segments it cannot view).
enum class RowKind { Any, Tile };
const GenericForwardKernel& generic_forward_kernel(const ConvGeometry& g, RowKind kind = RowKind::Any,
                                                   jit::Isa max_isa = jit::Isa::Avx512);

}  // namespace convjit::detail
