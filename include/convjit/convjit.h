/* convjit C ABI: one signature for every shape, usable from C99 and through FFI.
 *
 * Every function validates its arguments before touching any output: on a status other than
 * CONVJIT_OK no output byte has been written and convjit_last_error() names the parameter,
 * its value and the rule it breaks. Nothing here aborts the process on bad input.
 *
 * Tensors are dense, row-major float32. Activations are NCHW (CONVJIT_NCHW; NCW / NCDHW for
 * rank 1 / 3) or channels-last (CONVJIT_NHWC); weights are OIHW ([O][I/groups][KD][KH][KW])
 * with NCHW and OHWI ([O][KD][KH][KW][I/groups]) with NHWC. Spatial entries are outermost
 * first; only the first `rank` entries of each array are read. */
#ifndef CONVJIT_CONVJIT_H
#define CONVJIT_CONVJIT_H

#include <stdint.h>

#include "convjit/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CONVJIT_OK = 0, CONVJIT_EINVAL = 1, CONVJIT_ENOMEM = 2, CONVJIT_EINTERNAL = 3 } convjit_status;
typedef enum { CONVJIT_NCHW = 0, CONVJIT_NHWC = 1 } convjit_layout;            /* weights: OIHW / channels-last */
typedef enum { CONVJIT_CROSS_CORRELATION = 0, CONVJIT_CONVOLUTION = 1 } convjit_mode;
typedef enum { CONVJIT_ACT_IDENTITY = 0, CONVJIT_ACT_RELU = 1 } convjit_activation;

typedef struct {
  int32_t rank;                 /* spatial dims: 1, 2 or 3 */
  int32_t layout;               /* convjit_layout */
  int32_t mode;                 /* convjit_mode */
  int64_t batch, in_channels, out_channels, groups;
  int64_t in_size[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];  /* first `rank` entries used, outermost first */
} convjit_conv_params;

typedef struct {
  int32_t rank, layout;
  int32_t exclude_padding;      /* mean pooling: 0 = divide by the window size (NNlib default), 1 = by the real taps */
  int64_t batch, channels;
  int64_t in_size[3], window[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
} convjit_pool_params;

CONVJIT_PUBLIC convjit_status convjit_conv_output_size(const convjit_conv_params*, int64_t out_size[3]);
CONVJIT_PUBLIC convjit_status convjit_conv_forward(const convjit_conv_params*, const float* x, const float* w,
                                   const float* bias /* NULL: none */, int32_t activation, float* y);
CONVJIT_PUBLIC convjit_status convjit_conv_backward_data(const convjit_conv_params*, const float* dy, const float* w, float* dx);
CONVJIT_PUBLIC convjit_status convjit_conv_backward_filter(const convjit_conv_params*, const float* x, const float* dy, float* dw);
CONVJIT_PUBLIC convjit_status convjit_pool_output_size(const convjit_pool_params*, int64_t out_size[3]);
CONVJIT_PUBLIC convjit_status convjit_maxpool_forward(const convjit_pool_params*, const float* x, float* y);
CONVJIT_PUBLIC convjit_status convjit_meanpool_forward(const convjit_pool_params*, const float* x, float* y);
CONVJIT_PUBLIC convjit_status convjit_maxpool_backward(const convjit_pool_params*, const float* x, const float* y, const float* dy, float* dx);
CONVJIT_PUBLIC convjit_status convjit_meanpool_backward(const convjit_pool_params*, const float* dy, float* dx);
CONVJIT_PUBLIC convjit_status convjit_lpnormpool_forward(const convjit_pool_params*, float p, const float* x, float* y);
CONVJIT_PUBLIC convjit_status convjit_lpnormpool_backward(const convjit_pool_params*, float p, const float* x, const float* y,
                                           const float* dy, float* dx);
CONVJIT_PUBLIC const char*    convjit_last_error(void);            /* this thread's last error message */

/* Runtime knobs beyond the design's fixed list. */

/* Threads used by later calls of this process; 0 restores the default (CONVJIT_NUM_THREADS,
 * else the CPUs in this process's affinity mask). Negative is CONVJIT_EINVAL. */
CONVJIT_PUBLIC convjit_status convjit_set_num_threads(int32_t num_threads);
CONVJIT_PUBLIC int32_t        convjit_get_num_threads(void);

/* The tiered runtime (see convjit/runtime.hpp). The functions above run on the process-wide
 * default runtime, configured by the CONVJIT_* environment variables; apps may create their own. */
typedef enum {
  CONVJIT_BACKEND_AUTO = 0, CONVJIT_BACKEND_XBYAK = 1, CONVJIT_BACKEND_LLVM = 2, CONVJIT_BACKEND_NONE = 3
} convjit_backend;

/* The widest instruction set compiled kernels may use (like oneDNN's ONEDNN_MAX_CPU_ISA); within it
 * the backend picks per kernel what runs faster on this CPU. A cap above the host's is the host's. */
typedef enum { CONVJIT_ISA_AUTO = 0, CONVJIT_ISA_AVX2 = 1, CONVJIT_ISA_AVX512 = 2 } convjit_isa;

typedef struct {
  int32_t backend;              /* convjit_backend */
  int32_t async;                /* 1: compile on a background thread; 0: in the calling thread */
  int32_t num_threads;          /* 0: the process setting */
  int32_t verbose;              /* 1: one stderr line per compile and per first call of a configuration */
  int32_t specialize_sizes;     /* 1: also specialize on channel counts and spatial sizes */
  int32_t decline_slower;       /* 1: keep generic what a backend expects to lose on (default) */
  int64_t hot_threshold;        /* calls before a configuration is compiled; 0 or 1: first sight */
  int64_t max_configurations;   /* detector table size */
  int64_t code_budget_bytes;    /* executable memory of compiled kernels; when full, the least used are evicted */
  int32_t perf_map;             /* 1: append emitted kernels to /tmp/perf-PID.map */
  int32_t max_isa;              /* convjit_isa; CONVJIT_ISA_AUTO: no cap (CONVJIT_MAX_ISA) */
  const char* cache_dir;        /* warm start directory, or NULL (read when the runtime is created) */
  int32_t adapt_threads;        /* 1: a configuration that ran faster on one thread lately runs on one; convolutions
                                   under 4 MFLOP are timed in probe windows of the runtime's small calls, each
                                   window on one side (default) */
} convjit_policy;

typedef struct convjit_runtime convjit_runtime;

/* The ops, as a runtime counts them (convjit_config_stats.op; the stats' "op" names them). */
typedef enum {
  CONVJIT_OP_CONV_FORWARD = 0, CONVJIT_OP_CONV_BACKWARD_DATA = 1, CONVJIT_OP_CONV_BACKWARD_FILTER = 2,
  CONVJIT_OP_MAXPOOL_FORWARD = 3, CONVJIT_OP_MEANPOOL_FORWARD = 4, CONVJIT_OP_LPNORMPOOL_FORWARD = 5,
  CONVJIT_OP_MAXPOOL_BACKWARD = 6, CONVJIT_OP_MEANPOOL_BACKWARD = 7, CONVJIT_OP_LPNORMPOOL_BACKWARD = 8
} convjit_op;

/* evictions: configurations the detector's full table recycled; kernel_evictions: kernels the full
 * code budget evicted; mapped_bytes: the executable memory the kernels hold (what the budget bounds).
 * A strided backward data's phases of another kernel size than phase 0's have slots of their own,
 * counted in compiles, compile_failures, kernels and evictions but not in configurations. */
typedef struct {
  int64_t configurations, calls_generic, calls_jit, compiles, compile_failures, kernels, code_bytes, evictions;
  int64_t kernel_evictions, mapped_bytes;
} convjit_runtime_totals;

/* One configuration: an op and its problem as the caller gave it (params for the conv ops,
 * pool_params and p for pooling). The last three fields came with the op field: rebuild against this header. */
typedef struct {
  convjit_conv_params params;
  int32_t activation, has_bias;
  int64_t calls_generic, calls_jit, code_bytes;
  double mean_ns_generic, mean_ns_jit, compile_us;   /* mean times are sampled */
  char state[16];               /* "cold", "queued", "jit", "failed", "declined" */
  char kernel[96];              /* the specialized kernel's name, once compiled */
  char failure[128];            /* why its compile failed or was declined */
  int32_t op;                   /* convjit_op */
  float p;                      /* Lp-norm pooling's p; 0 otherwise */
  convjit_pool_params pool_params;
} convjit_config_stats;

CONVJIT_PUBLIC void           convjit_policy_from_environment(convjit_policy* policy);
CONVJIT_PUBLIC convjit_status convjit_runtime_create(const convjit_policy* policy, convjit_runtime** runtime);
CONVJIT_PUBLIC void           convjit_runtime_destroy(convjit_runtime* runtime);
CONVJIT_PUBLIC convjit_runtime* convjit_default_runtime(void);
CONVJIT_PUBLIC convjit_status convjit_runtime_conv_forward(convjit_runtime* runtime, const convjit_conv_params* params,
                                                           const float* x, const float* w, const float* bias,
                                                           int32_t activation, float* y);
/* Every op through a runtime of its own (the functions without a runtime argument use the default one). */
CONVJIT_PUBLIC convjit_status convjit_runtime_conv_backward_data(convjit_runtime* runtime, const convjit_conv_params* params,
                                                                 const float* dy, const float* w, float* dx);
CONVJIT_PUBLIC convjit_status convjit_runtime_conv_backward_filter(convjit_runtime* runtime,
                                                                   const convjit_conv_params* params, const float* x,
                                                                   const float* dy, float* dw);
CONVJIT_PUBLIC convjit_status convjit_runtime_maxpool_forward(convjit_runtime* runtime, const convjit_pool_params* params,
                                                              const float* x, float* y);
CONVJIT_PUBLIC convjit_status convjit_runtime_meanpool_forward(convjit_runtime* runtime, const convjit_pool_params* params,
                                                               const float* x, float* y);
CONVJIT_PUBLIC convjit_status convjit_runtime_lpnormpool_forward(convjit_runtime* runtime,
                                                                 const convjit_pool_params* params, float p,
                                                                 const float* x, float* y);
CONVJIT_PUBLIC convjit_status convjit_runtime_maxpool_backward(convjit_runtime* runtime, const convjit_pool_params* params,
                                                               const float* x, const float* y, const float* dy,
                                                               float* dx);
CONVJIT_PUBLIC convjit_status convjit_runtime_meanpool_backward(convjit_runtime* runtime,
                                                                const convjit_pool_params* params, const float* dy,
                                                                float* dx);
CONVJIT_PUBLIC convjit_status convjit_runtime_lpnormpool_backward(convjit_runtime* runtime,
                                                                  const convjit_pool_params* params, float p,
                                                                  const float* x, const float* y, const float* dy,
                                                                  float* dx);
CONVJIT_PUBLIC convjit_status convjit_runtime_wait(convjit_runtime* runtime);   /* for queued compiles */
CONVJIT_PUBLIC convjit_status convjit_runtime_get_totals(convjit_runtime* runtime, convjit_runtime_totals* totals);
/* The stats as JSON (schema "convjit-stats" version 2, see the README). */
CONVJIT_PUBLIC convjit_status convjit_runtime_write_stats(convjit_runtime* runtime, const char* path);
/* Writes up to capacity configurations to out and their total number to *count. */
CONVJIT_PUBLIC convjit_status convjit_runtime_get_config_stats(convjit_runtime* runtime, convjit_config_stats* out,
                                                               int64_t capacity, int64_t* count);

#ifdef __cplusplus
}
#endif

#endif /* CONVJIT_CONVJIT_H */
