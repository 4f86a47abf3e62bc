// Tier choice, in one place: which kernels run a forward call and why a configuration stays on
// tier 0. The runtime applies the rewrite rules first (an NHWC problem with few output channels
// runs as its NCHW twin, stride-1 backward data as a forward convolution: lib/rewrite/), and the
// rewritten problem gets its own choice here. What runs is read from the registered kernels:
// tier 0's rows (lib/kernels/forward_kernels.hpp) and the compiled kernel of the configuration.
#pragma once

#include <string>
#include <vector>

#include "backend.hpp"
#include "config_table.hpp"
#include "conv_forward.hpp"
#include "geometry.hpp"

namespace convjit::detail {

// What runs g: tier 0's kernel for it, or `compiled` (null while none has arrived) with tier 0's
// tile for what the compiled row kernel cannot view, or, for compiled NHWC depthwise rows, with tier
// 0's NHWC depthwise kernel, which calls them for the outputs whose W taps are all real.
// Tier 0's rows are of ISAs up to max_isa (the runtime's cap).
ForwardKernels select_tier(const ConvGeometry& g, const convjit_conv_kernel* compiled,
                           jit::Isa max_isa = jit::Isa::Avx512);

// Whether a compiled kernel of g is NHWC depthwise rows (the runtime keys it with
// jit::make_depthwise_spec_key where its backend compiles them): where tier 0 runs g on its NHWC
// depthwise kernel, which has the groups in the vector lanes and calls the rows.
bool runs_depthwise_rows(const ConvGeometry& g);

// The forward problem whose compiled kernel runs configuration c, after the rewrite rules: a
// forward convolution or a backward data that runs as one (stride 1, strided pointwise, or its
// phase c.phase: a configuration's slot compiles its phase 0's kernel, and each other kernel size
// among its phases has a slot of its own), NHWC problems with few channels as their NCHW twin.
// dispatch.cpp applies the same rules, in this order. False when no compiled kernel can run c
// (its op has none, or it is invalid).
bool compiled_forward_problem(const Configuration& c, jit::Isa max_isa, ConvGeometry* g);
// c and its companions: a strided backward data's configurations for the kernel sizes of its
// phases other than phase 0's (what the warm start compiles for it); else c alone.
std::vector<Configuration> with_phase_companions(const Configuration& c);

// The pooling op of an op code that compiled rows run (max or mean, forward or backward), or false.
bool pool_rows_op(int32_t code, PoolOp* op);

// The NHWC problem whose compiled pooling rows run configuration c (max or mean pooling, forward
// or backward: itself, or the NHWC twin of an NCHW problem where the twin can run, but not where
// tier 0's NCHW vector kernel beats it: forward at W stride 2 on rows of a vector or more,
// backward with windows tiling x or few channels); false when c is no such op or invalid.
bool pool_rows_geometry(const Configuration& c, PoolGeometry* runs);

// Why a pooling configuration that runs g (NHWC, or the NHWC twin of NCHW) should not be compiled
// for `key`, or empty: an NCHW problem without a twin, no window is wholly real (the compiled rows
// take only those), or the backend does not generate the key.
std::string pool_jit_declined_because(const PoolGeometry& g, PoolOp op, const jit::Backend& backend,
                                      const jit::SpecKey& key);

// The NHWC problem whose compiled backward-filter rows run g (g itself, or the NHWC twin of an
// NCHW g on transposed copies: lib/rewrite/nhwc_as_nchw.hpp), or why none gives tier 0's bits:
// the rows keep the chain of tier 0's register tile and of its NHWC depthwise kernel (each dw
// element over the output pixels in order), while few channels run tier 0's direct kernel (on
// NCHW or the NCHW twin), which sums in another order; an NCHW problem's copies may also be too
// large or too costly. Such a configuration stays on tier 0 whatever the policy.
std::string filter_rows_problem(const ConvGeometry& g, const convjit_conv_params& params, ConvGeometry* runs);

// Why a configuration of g should not be compiled for `key` (the reason its stats show as
// "declined"), or empty: tier 0's kernel for g (at the runtime's cap, max_isa) beats every compiled one, or the backend
// expects to lose (jit::Backend::decline_reason).
std::string jit_declined_because(const ConvGeometry& g, jit::Isa max_isa, const jit::Backend& backend,
                                 const jit::SpecKey& key);

}  // namespace convjit::detail
