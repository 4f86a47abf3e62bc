#include "forward_kernels.hpp"

#include "conv_depthwise_nchw.hpp"
#include "conv_depthwise_nhwc.hpp"
#include "conv_tile_direct.hpp"
#include "conv_tile_generic.hpp"
#include "gemm_tile.hpp"

namespace convjit::detail {
namespace {

bool takes_every_problem(const ConvGeometry&) { return true; }

#if defined(__x86_64__)
template <bool (*supported)(const convjit_conv_problem&)>
bool takes_few_channels_direct(const ConvGeometry& g) {
  return g.oc_per_group <= kDirectMaxOutputChannels && supported(g);
}
// The AVX-512 build where its rows fill no fewer lanes than AVX2's (rows of 24 pixels are 3 ymm
// but 2 zmm, one half empty: seed_chain_2 ran 0.74x; bench/RESULTS.md, "Why the tier rules ...").
bool takes_few_channels_direct_wide(const ConvGeometry& g) {
  const auto rounded = [&](int64_t lanes) { return (g.out[2] + lanes - 1) / lanes * lanes; };
  return rounded(16) == rounded(8) && takes_few_channels_direct<avx512::conv_tile_direct_supported>(g);
}
#endif

constexpr const char* kDepthwiseNchwWins = "depthwise NCHW: the generic kernel keeps the taps in registers";
// For the tile kernels of every backend; a backend that compiles depthwise rows runs them through
// this kernel instead (lib/runtime/select_tier.hpp: runs_depthwise_rows).
constexpr const char* kDepthwiseNhwcWins = "depthwise NHWC: the generic kernel has the groups in the vector lanes";

// Row makers: the register tile's granules are every tile row's, the whole-call kernels' too
// (they matter only when a compiled kernel falls back to a tile).
enum class Packing { InPlace, Patches };
constexpr GenericForwardKernel tile_row(const char* name, jit::Isa isa, bool (*takes)(const ConvGeometry&),
                                        convjit_conv_tile_fn tile, Packing packing) {
  return {name, isa, takes, tile, nullptr, packing == Packing::Patches, kTileCols, kTileRows, nullptr};
}
constexpr GenericForwardKernel whole_call_row(const char* name, jit::Isa isa, bool (*takes)(const ConvGeometry&),
                                              ConvForwardOpFn whole_call, const char* jit_loses_because) {
  return {name, isa, takes, nullptr, whole_call, false, kTileCols, kTileRows, jit_loses_because};
}

constexpr GenericForwardKernel kRows[] = {
#if defined(__x86_64__)
    whole_call_row("conv_fwd_f32_depthwise_nhwc__avx512", jit::Isa::Avx512, avx512::depthwise_nhwc_supported,
                   avx512::depthwise_nhwc, kDepthwiseNhwcWins),
    whole_call_row("conv_fwd_f32_depthwise_nhwc__avx2", jit::Isa::Avx2Fma, avx2::depthwise_nhwc_supported,
                   avx2::depthwise_nhwc, kDepthwiseNhwcWins),
    whole_call_row("conv_fwd_f32_depthwise_nchw__avx512", jit::Isa::Avx512, avx512::depthwise_nchw_supported,
                   avx512::depthwise_nchw, kDepthwiseNchwWins),
    whole_call_row("conv_fwd_f32_depthwise_nchw__avx2", jit::Isa::Avx2Fma, avx2::depthwise_nchw_supported,
                   avx2::depthwise_nchw, kDepthwiseNchwWins),
    tile_row("conv_fwd_f32_direct_oc8__avx512", jit::Isa::Avx512, takes_few_channels_direct_wide,
             avx512::conv_tile_direct, Packing::InPlace),
    tile_row("conv_fwd_f32_direct_oc8__avx2", jit::Isa::Avx2Fma,
             takes_few_channels_direct<avx2::conv_tile_direct_supported>, avx2::conv_tile_direct, Packing::InPlace),
#endif
    // Last: takes every problem (its 6x16 tile picks AVX2 or portable code itself, lib/kernels/gemm_tile.cpp).
    tile_row("conv_fwd_f32_packed_6x16", jit::Isa::Portable, takes_every_problem, conv_tile_generic, Packing::Patches),
};

}  // namespace

std::span<const GenericForwardKernel> generic_forward_kernels() { return kRows; }

const GenericForwardKernel& generic_forward_kernel(const ConvGeometry& g, RowKind kind, jit::Isa max_isa) {
  for (const GenericForwardKernel& k : kRows) {
    if ((kind == RowKind::Any || k.tile) && k.isa <= max_isa && jit::host_has(k.isa) && k.takes(g)) return k;
  }
  return kRows[std::size(kRows) - 1];  // the register tile takes every problem
}

}  // namespace convjit::detail
