/* The pooling row ABI: the contract between the pooling driver (lib/driver/pool.cpp) and a
 * compiled max or mean pooling kernel. C-compatible so generated code can read the structs by
 * offset.
 *
 * The driver gives the kernel one run of consecutive outputs along W of one output row of one
 * image (NHWC: a pixel's channels contiguous), all of whose windows lie wholly inside x, and a
 * range of channels; the outputs with windows that reach into padding go to tier 0. Numbers, as
 * every pooling path's (lib/kernels/pool_nhwc.hpp): taps in row-major order; max from -inf with
 * (v > acc) ? v : acc, so NaN never enters, and NaN where no tap held a number; mean a sum from
 * +0 in that order, divided once by the problem's divisor. */
#ifndef CONVJIT_JIT_POOL_ROW_ABI_H
#define CONVJIT_JIT_POOL_ROW_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A validated pooling problem, normalized to 3 spatial dims (D, H, W): element strides of x and y
 * as in convjit_conv_problem (NHWC: channel stride 1). */
typedef struct convjit_pool_problem {
  int64_t channels;
  int64_t window[3], stride[3], dilation[3];
  struct {
    int64_t batch, channel, spatial[3];
  } x, y;
  float divisor; /* mean: what every window the kernel gets divides by */
} convjit_pool_problem;

typedef struct convjit_pool_row {
  const float* x;   /* tap (0, 0, 0) of the run's first output, at its first channel */
  float* y;         /* the run's first output, at its first channel */
  int64_t outputs;  /* along W */
  int64_t channels; /* from the first */
} convjit_pool_row;

typedef void (*convjit_pool_row_fn)(const convjit_pool_problem* problem, const convjit_pool_row* row);

#ifdef __cplusplus
}
#endif

#endif /* CONVJIT_JIT_POOL_ROW_ABI_H */
