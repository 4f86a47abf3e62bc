// The runtime's stats as JSON, for CONVJIT_STATS=path (written at exit), Runtime::write_stats and
// convjit_runtime_write_stats. Schema "convjit-stats", version 2 (version 1 had conv_fwd rows only,
// with the same fields):
//
// { "schema": "convjit-stats", "version": 2,
//   "host": {"isa": "avx512" | "avx2" | "portable"}, "isa": the widest its kernels use (max_isa caps it),
//   "policy": {"backend", "hot_threshold", "async", "num_threads", "adapt_threads", "specialize_sizes",
//              "decline_slower", "max_configurations", "code_budget_bytes", "max_isa": "auto" | "avx2" | "avx512"},
//   "backend": "xbyak" | "none", "backend_unavailable_reason": "...",
//   "totals": {"configurations", "calls_generic", "calls_jit", "compiles", "compile_failures", "kernels",
//              "code_bytes", "evictions" (detector slots recycled), "kernel_evictions" (kernels the
//              code budget evicted), "mapped_bytes" (executable memory the kernels hold)},
//   "configurations": [ {"op": "conv_fwd" | "conv_bwd_data" | "conv_bwd_filter" | "maxpool_fwd" |
//       "meanpool_fwd" | "lpnormpool_fwd" | "maxpool_bwd" | "meanpool_bwd" | "lpnormpool_bwd",
//       the conv ops: "rank", "layout": "nchw"|"nhwc", "mode": "cross_correlation"|"convolution",
//       "batch", "in_channels", "out_channels", "groups", "in_size": [..rank], "kernel", "stride",
//       "dilation", "pad_begin", "pad_end", "activation": "identity"|"relu", "bias": bool;
//       pooling: "rank", "layout", "batch", "channels", "in_size", "window", "stride", "dilation",
//       "pad_begin", "pad_end", "exclude_padding": bool, and "p" for Lp-norm pooling;
//       then every op: "calls": {"generic", "jit"}, "mean_ns": {"generic", "jit"} (sampled; 0 = no sample),
//       "state": "cold"|"queued"|"jit"|"failed"|"declined", "jit_kernel": name or "", "backend",
//       "compile_us", "code_bytes", "reason": why it is not on the JIT tier, or "",
//       "timeline_us": {"first_call", "hot", "kernel"}: microseconds since the runtime started
//       (its first call, when it went hot or was declined, when its kernel arrived; -1: not yet) } ] }
#pragma once

#include <string>

#include "convjit/runtime.hpp"

namespace convjit::detail {

std::string stats_to_json(const RuntimeStats& stats, const Policy& policy);

}  // namespace convjit::detail
