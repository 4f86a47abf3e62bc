// The tiered runtime: every op goes through it. It counts calls per configuration (op and
// problem), compiles a specialized kernel for a configuration once it is hot, and runs it from
// then on, with no change to any type or signature. Results are bitwise identical on every tier
// and for every thread count. Compiled kernels exist so far for forward convolution (and
// backward data, which runs as forwards, but not strided depthwise) and max and mean pooling
// forward (Xbyak); the other ops' hot configurations show as "declined", with the reason.
//
// The free functions of ops.hpp use Runtime::process_default(), configured by the environment
// (CONVJIT_BACKEND, CONVJIT_HOT_THRESHOLD, CONVJIT_ASYNC, CONVJIT_NUM_THREADS, CONVJIT_VERBOSE,
// CONVJIT_SPECIALIZE_SIZES, CONVJIT_DECLINE_SLOWER, CONVJIT_MAX_CONFIGURATIONS, CONVJIT_CODE_BUDGET,
// CONVJIT_PERF_MAP, CONVJIT_MAX_ISA, CONVJIT_CACHE_DIR; CONVJIT_STATS=path writes its stats as JSON at exit). Apps that
// want their own policy create Runtime objects; every method is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "convjit/dims.hpp"
#include "convjit/error.hpp"
#include "convjit/export.h"

namespace convjit {

enum class Backend : int32_t { Auto = 0, Xbyak = 1, Llvm = 2, None = 3 };
// The widest instruction set compiled kernels may use; within it the backend picks per kernel what
// runs faster on this CPU. Auto: no cap. A cap above the host's ISA is the host's.
enum class Isa : int32_t { Auto = 0, Avx2 = 1, Avx512 = 2 };

struct CONVJIT_PUBLIC Policy {
  Backend backend = Backend::Auto;       // Auto: the best available on this host
  int64_t hot_threshold = 2;             // calls before a configuration is compiled; 0 or 1: on first sight
  bool async = true;                     // compile on a background thread; false: in the calling thread
  int num_threads = 0;                   // 0: the process setting (convjit::set_num_threads)
  bool adapt_threads = true;             // a configuration whose timed calls ran faster on one thread
                                         // lately runs on one; convolutions under 4 MFLOP are timed in
                                         // probe windows of the runtime's small calls, each window on
                                         // one side (the same results; README "Threads")
  bool verbose = false;                  // one line per compile and per first call of a configuration
  bool specialize_sizes = false;         // also specialize on channel counts and spatial sizes
  bool decline_slower = true;            // keep generic the configurations a backend expects to lose on;
                                         // false compiles every hot one (tests use it for coverage)
  int64_t max_configurations = 4096;     // detector table size; cold configurations age out
  int64_t code_budget_bytes = 64 << 20;  // executable memory of the kernels; when full, the least used are evicted
  bool perf_map = false;                 // append every emitted kernel to /tmp/perf-PID.map for `perf report`
  Isa max_isa = Isa::Auto;               // CONVJIT_MAX_ISA=avx2|avx512
  std::string cache_dir;                 // warm start: save the hot configurations here when the runtime
                                         // ends, compile them in the background when the next one starts

  static Policy from_environment();  // defaults overridden by the CONVJIT_* variables
};

enum class Op : int32_t {
  ConvForward = CONVJIT_OP_CONV_FORWARD,
  ConvBackwardData = CONVJIT_OP_CONV_BACKWARD_DATA,
  ConvBackwardFilter = CONVJIT_OP_CONV_BACKWARD_FILTER,
  MaxPoolForward = CONVJIT_OP_MAXPOOL_FORWARD,
  MeanPoolForward = CONVJIT_OP_MEANPOOL_FORWARD,
  LpNormPoolForward = CONVJIT_OP_LPNORMPOOL_FORWARD,
  MaxPoolBackward = CONVJIT_OP_MAXPOOL_BACKWARD,
  MeanPoolBackward = CONVJIT_OP_MEANPOOL_BACKWARD,
  LpNormPoolBackward = CONVJIT_OP_LPNORMPOOL_BACKWARD,
};
// "conv_fwd", "conv_bwd_data", "conv_bwd_filter", "maxpool_fwd", ..., "lpnormpool_bwd": the stats' names.
CONVJIT_PUBLIC const char* op_name(Op op);
inline bool is_pool(Op op) {
  return op >= Op::MaxPoolForward;
}

// Per configuration (op, dims, layout, mode, post-op).
struct ConfigStats {
  Op op = Op::ConvForward;
  ConvDims dims;       // the conv ops'
  PoolDims pool_dims;  // the pooling ops'
  float p = 0;         // Lp-norm pooling's
  Activation activation = Activation::Identity;
  bool has_bias = false;
  int64_t calls_generic = 0, calls_jit = 0;
  double mean_ns_generic = 0, mean_ns_jit = 0;  // sampled
  std::string state;   // "cold", "queued", "jit", "failed", "declined" (the generic tier is faster)
  std::string kernel;  // specialized kernel name, once compiled
  std::string backend;
  std::string failure;  // why the compile failed or was declined
  double compile_us = 0;
  int64_t code_bytes = 0;
  // Timeline, microseconds since the runtime started; -1: not (yet) happened.
  double first_call_us = -1, hot_us = -1, kernel_us = -1;
};

struct RuntimeStats {
  std::string backend;  // in force ("none" when no backend is usable)
  std::string isa;      // the widest ISA its kernels use: the host's ("avx512", "avx2", "portable"), capped by max_isa
  std::string backend_unavailable_reason;
  std::vector<ConfigStats> configurations;
  int64_t compiles = 0, compile_failures = 0, kernels = 0, code_bytes = 0;
  // configurations the detector's full table recycled (a strided backward data's phases of
  // another kernel size than phase 0's hold slots of their own, in no row: their kernels,
  // compiles and failures count in these totals, and their slots in the table)
  int64_t evictions = 0;
  int64_t kernel_evictions = 0;  // kernels the full code budget evicted (their configurations went back to tier 0)
  int64_t mapped_bytes = 0;      // executable memory the kernels hold (what the code budget bounds)
};

class CONVJIT_PUBLIC Runtime {
 public:
  explicit Runtime(const Policy& policy = Policy::from_environment());
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  static Runtime& process_default();

  void conv_forward(const ConvDims& dims, const float* x, const float* w, const float* bias, Activation activation,
                    float* y);
  // With stride 1 it runs as a forward convolution of dy (its configuration's kernel is that
  // forward's), so it too reaches the JIT tier.
  void conv_backward_data(const ConvDims& dims, const float* dy, const float* w, float* dx);
  void conv_backward_filter(const ConvDims& dims, const float* x, const float* dy, float* dw);
  void maxpool_forward(const PoolDims& dims, const float* x, float* y);
  void meanpool_forward(const PoolDims& dims, const float* x, float* y);
  void lpnormpool_forward(const PoolDims& dims, float p, const float* x, float* y);
  void maxpool_backward(const PoolDims& dims, const float* x, const float* y, const float* dy, float* dx);
  void meanpool_backward(const PoolDims& dims, const float* dy, float* dx);
  void lpnormpool_backward(const PoolDims& dims, float p, const float* x, const float* y, const float* dy, float* dx);
  const Policy& policy() const;
  RuntimeStats stats() const;
  void wait_for_compiles();  // until every requested compile has finished
  // The stats as JSON (schema in lib/runtime/stats_json.hpp and the README); throws convjit::Error if the
  // file cannot be written. CONVJIT_STATS=path does this for the default runtime at exit.
  void write_stats(const std::string& path);

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace convjit
