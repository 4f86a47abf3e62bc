/* The pooling row ABI: the contract between the pooling driver (lib/driver/pool.cpp) and a
 * compiled max or mean pooling kernel. C-compatible so generated code can read the structs by
 * offset.
 *
 * The driver gives the kernel one run of consecutive outputs along W of one output row of one
 * image (NHWC: a pixel's channels contiguous), all of whose windows lie wholly inside x, and a
 * range of channels; the outputs with windows that reach into padding go to tier 0. Numbers, as
 * every pooling path's (lib/kernels/pool_nhwc.hpp): taps in row-major order; max from -inf with
 * (v > acc) ? v : acc, so NaN never enters, and NaN where no tap held a number; mean a sum from
 * +0 in that order, divided once by the problem's divisor. Backward adds each output's gradient
 * into dx, output after output along the run (the driver calls the runs in output order, between
 * tier 0's outputs, so every dx element gets its terms in output order): mean dy / divisor to
 * every tap, max dy to the first tap, row-major, whose x equals y (compared ordered: NaN equals
 * nothing). Where the windows cover x (convjit_pool_windows_cover: dilation 1, stride at most the
 * window, so no element between windows is skipped), an output's taps from window - stride on
 * along every dim reach elements no earlier output reached (in output order): backward rows write
 * those without reading them, +0 + the gradient where one goes, else +0, the bits of adding into
 * a zeroed dx, and add into the rest; tier 0's backward kernel, which zeroes the rest of dx before
 * the rows run, leaves the first-reached elements of the compiled outputs alone. Where the windows
 * tile x (stride = window) that is every tap. */
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
  const float* x;   /* tap (0, 0, 0) of the run's first output, at its first channel (not read by mean backward) */
  float* y;         /* the run's first output, at its first channel (written by forward; only read by max backward) */
  const float* dy;  /* backward: the run's first output's gradient (y's strides) */
  float* dx;        /* backward: as x, in the gradient (x's strides) */
  int64_t outputs;  /* along W */
  int64_t channels; /* from the first */
} convjit_pool_row;

typedef void (*convjit_pool_row_fn)(const convjit_pool_problem* problem, const convjit_pool_row* row);

/* Whether the windows of (window, stride, dilation) cover the input without gaps along every dim:
 * stride at most the window, dilation 1. */
static inline int convjit_pool_windows_cover(const int64_t window[3], const int64_t stride[3],
                                             const int64_t dilation[3]) {
  for (int d = 0; d < 3; ++d) {
    if (stride[d] > window[d] || dilation[d] != 1) return 0;
  }
  return 1;
}

/* Along a dim whose windows cover x: an output's first tap (from its window's start) that no
 * earlier output reaches. */
static inline int64_t convjit_pool_first_reached_tap(int64_t window, int64_t stride) {
  return window - stride;
}

#ifdef __cplusplus
}
#endif

#endif /* CONVJIT_JIT_POOL_ROW_ABI_H */
