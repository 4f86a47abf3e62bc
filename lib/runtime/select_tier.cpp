#include "select_tier.hpp"

namespace convjit::detail {
namespace {

// The first tile row of tier 0 that takes g: what a compiled row kernel falls back to.
const GenericForwardKernel& generic_forward_tile(const ConvGeometry& g) {
  for (const GenericForwardKernel& k : generic_forward_kernels()) {
    if (k.tile && host_has(k.isa) && k.takes(g)) return k;
  }
  return generic_forward_kernels().back();  // the register tile takes every problem
}

}  // namespace

ForwardKernels select_tier(const ConvGeometry& g, const convjit_conv_kernel* compiled) {
  if (compiled) return {&generic_forward_tile(g), compiled};
  return {&generic_forward_kernel(g), nullptr};
}

std::string jit_declined_because(const ConvGeometry& g, const jit::Backend& backend, const jit::SpecKey& key) {
  if (const char* why = generic_forward_kernel(g).jit_loses_because) return why;
  return backend.decline_reason(g, key);
}

}  // namespace convjit::detail
