#include "select_tier.hpp"

#include "backward_as_forward.hpp"
#include "conv_depthwise_nhwc.hpp"
#include "describe.hpp"
#include "nhwc_as_nchw.hpp"
#include "ops_internal.hpp"

namespace convjit::detail {
namespace {

bool is_pool_forward(int32_t code) {
  return code == CONVJIT_OP_MAXPOOL_FORWARD || code == CONVJIT_OP_MEANPOOL_FORWARD;
}

// NCHW max or mean pooling (code) that keeps tier 0's NCHW kernel on every tier.
bool nchw_pool_stays_on_tier0(const PoolGeometry& g, int32_t code, PoolOp op) {
  if (g.layout != Layout::NCHW) return false;
  return is_pool_forward(code) ? nchw_pool_forward_beats_twin(g, op) : nchw_pool_backward_beats_twin(g, op);
}

}  // namespace

ForwardKernels select_tier(const ConvGeometry& g, const convjit_conv_kernel* compiled, jit::Isa max_isa) {
  if (compiled && compiled->depthwise_row) {  // keyed only where tier 0's NHWC depthwise kernel runs g
    const GenericForwardKernel& depthwise = generic_forward_kernel(g, RowKind::Any, max_isa);
    return {&depthwise, depthwise.whole_call ? compiled : nullptr};
  }
  if (compiled) return {&generic_forward_kernel(g, RowKind::Tile, max_isa), compiled};
  return {&generic_forward_kernel(g, RowKind::Any, max_isa), nullptr};
}

bool runs_depthwise_rows(const ConvGeometry& g) {
  return depthwise_nhwc_fits(g);
}

bool compiled_forward_problem(const Configuration& c, jit::Isa max_isa, ConvGeometry* g) {
  if (c.op != CONVJIT_OP_CONV_FORWARD && c.op != CONVJIT_OP_CONV_BACKWARD_DATA) return false;
  if (!make_conv_geometry(c.conv, g).ok()) return false;
  convjit_conv_params forward = c.conv;
  bool backward_weights = false;  // the forward runs on the backward problem's weights
  if (c.op == CONVJIT_OP_CONV_BACKWARD_DATA) {
    // dispatch.cpp's order: strided pointwise, the phases (c.phase's kernel), stride 1.
    bool as_forward = strided_pointwise_backward_data_as_forward(*g, c.conv, &forward);
    BackwardDataPhases phases;
    if (!as_forward && strided_backward_data_phases(*g, c.conv, &phases)) {
      if (c.phase >= phases.count) return false;
      forward = phases.phase[c.phase].forward;
      as_forward = true;
    } else {
      as_forward = as_forward || backward_data_as_forward(*g, c.conv, &forward);
      backward_weights = true;
    }
    if (!as_forward || !make_conv_geometry(forward, g).ok()) return false;
  }
  if (forward_runs_as_twin(*g, max_isa, backward_weights)) *g = forward_twin(forward);
  return true;
}

std::vector<Configuration> with_phase_companions(const Configuration& c) {
  std::vector<Configuration> all{c};
  ConvGeometry g;
  convjit_conv_params pointwise;
  BackwardDataPhases phases;
  if (c.op != CONVJIT_OP_CONV_BACKWARD_DATA || c.phase != 0 || !make_conv_geometry(c.conv, &g).ok() ||
      strided_pointwise_backward_data_as_forward(g, c.conv, &pointwise) ||
      !strided_backward_data_phases(g, c.conv, &phases)) {
    return all;
  }
  for (int i = 1; i < phases.count; ++i) {
    if (phases.kernel_of(i) != i) continue;
    all.push_back(c);
    all.back().phase = i;
  }
  return all;
}

bool pool_rows_op(int32_t code, PoolOp* op) {
  const bool max = code == CONVJIT_OP_MAXPOOL_FORWARD || code == CONVJIT_OP_MAXPOOL_BACKWARD;
  const bool mean = code == CONVJIT_OP_MEANPOOL_FORWARD || code == CONVJIT_OP_MEANPOOL_BACKWARD;
  *op = max ? PoolOp::Max : PoolOp::Mean;
  return max || mean;
}

bool pool_rows_geometry(const Configuration& c, PoolGeometry* runs) {
  PoolOp op;
  if (!pool_rows_op(c.op, &op) || !make_pool_geometry(c.pool, runs).ok()) return false;
  // The twin wherever it can run, but where tier 0's NCHW vector kernel beats the twin's compiled
  // rows and layout copies (bench/RESULTS.md, "Session 18").
  if (!nchw_pool_stays_on_tier0(*runs, c.op, op) && nchw_pool_can_run_as_nhwc(*runs, c.pool, op)) {
    *runs = pool_nhwc_twin(c.pool);
  }
  return true;
}

std::string pool_jit_declined_because(const PoolGeometry& g, PoolOp op, const jit::Backend& backend,
                                      const jit::SpecKey& key) {
  if (g.layout != Layout::NHWC) {
    if (nchw_pool_stays_on_tier0(g, key.op, op)) {
      if (is_pool_forward(key.op)) {
        return nchw_pool_forward_runs_whole_rows(g, op)
                   ? "NCHW forward over windows of whole rows: tier 0's whole-rows kernel"
                   : "NCHW forward at W stride 2 on rows of a vector or more: tier 0's NCHW vector kernel";
      }
      return nchw_pool_backward_runs_whole_rows(g, op)
                 ? "NCHW mean backward over windows of whole rows: tier 0's whole-rows kernel"
                 : "NCHW backward with windows tiling x, or few channels: tier 0's NCHW vector kernel";
    }
    return "NCHW without an NHWC twin (too large to copy, or no vector kernel)";
  }
  if (!pool_runs_compiled_rows(g, op)) return "no output's window lies wholly inside the input";
  return backend.rows_decline_reason(key);
}

std::string filter_rows_problem(const ConvGeometry& g, const convjit_conv_params& params, ConvGeometry* runs) {
  const std::string op = op_name(CONVJIT_OP_CONV_BACKWARD_FILTER);
  if (g.layout == CONVJIT_NCHW) {
    if (backward_filter_runs_direct(g, DirectFilterScope::FewChannels)) {
      return op + " with few channels per group: tier 0's direct kernel";
    }
    if (!nchw_backward_filter_can_run_as_nhwc(g)) {
      return "NCHW " + op + ": copies to its NHWC twin too large, or too costly for its flops";
    }
    *runs = backward_filter_nhwc_twin(params);
  } else if (nhwc_backward_filter_runs_as_nchw(g, params)) {
    return op + " with few channels per group: tier 0's direct kernel on its NCHW twin";
  } else {
    *runs = g;
  }
  return {};
}

std::string jit_declined_because(const ConvGeometry& g, jit::Isa max_isa, const jit::Backend& backend,
                                 const jit::SpecKey& key) {
  if (key.depthwise_groups) return backend.rows_decline_reason(key);
  if (const char* why = generic_forward_kernel(g, RowKind::Any, max_isa).jit_loses_because) return why;
  return backend.decline_reason(g, key);
}

}  // namespace convjit::detail
