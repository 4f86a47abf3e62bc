#include "select_tier.hpp"

namespace convjit::detail {

ForwardKernels select_tier(const ConvGeometry& g, const convjit_conv_kernel* compiled, jit::Isa max_isa) {
  if (compiled) return {&generic_forward_kernel(g, RowKind::Tile, max_isa), compiled};
  return {&generic_forward_kernel(g, RowKind::Any, max_isa), nullptr};
}

std::string jit_declined_because(const ConvGeometry& g, const jit::Backend& backend, const jit::SpecKey& key) {
  if (const char* why = generic_forward_kernel(g).jit_loses_because) return why;
  return backend.decline_reason(g, key);
}

}  // namespace convjit::detail
