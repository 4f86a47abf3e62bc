/* The NHWC depthwise forward row ABI: the contract between tier 0's NHWC depthwise driver
 * (lib/kernels/conv_depthwise_nhwc_impl.hpp) and a compiled depthwise row kernel. C-compatible so
 * generated code can read the struct by offset.
 *
 * Depthwise: one input and one output channel per group, so a pixel's groups are its contiguous
 * channels and fill the vector lanes. The kernel is specialized on the channel count (the pixel
 * pitch of x and y, dense NHWC), the kernel size, stride and dilation along W, the mode and relu
 * (jit/abi/spec_key.hpp: depthwise_groups). The driver gives it one run of consecutive outputs
 * along W of one output row, every W tap of which lies inside x, and that row's real tap rows (the
 * (kd, kh) whose input row exists) in weight order; the outputs at the row's ends, whose W taps
 * reach into padding, are tier 0's.
 *
 * Numbers, as tier 0's kernel: each output is one FMA chain over its real taps in weight order
 * (kd, kh, kw) from 0.0f, then + bias, then relu (max(0, v), v where NaN). Padded taps are left
 * out, as tier 0 leaves them out. */
#ifndef CONVJIT_JIT_DEPTHWISE_ROWS_ABI_H
#define CONVJIT_JIT_DEPTHWISE_ROWS_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A real tap row: where its inputs lie from `x`, and its first weight from `w`, in floats. */
typedef struct convjit_depthwise_tap_row {
  int64_t x_offset, w_offset;
} convjit_depthwise_tap_row;

typedef struct convjit_depthwise_row {
  const float* x;      /* the run's first output's leftmost W tap (input column ow * stride - pad), row 0, channel 0 */
  const float* w;      /* the weights tap-major: w[tap][channel], taps (kd, kh, kw) in weight order */
  const float* bias;   /* per channel, or NULL */
  float* y;            /* the run's first output, channel 0 */
  const convjit_depthwise_tap_row* tap_rows;  /* in weight order */
  int64_t tap_row_count;                      /* may be 0: the outputs are then bias and relu of 0 */
  int64_t outputs;                            /* along W, at least 1 */
} convjit_depthwise_row;

typedef void (*convjit_depthwise_row_fn)(const convjit_depthwise_row* row);

#ifdef __cplusplus
}
#endif

#endif /* CONVJIT_JIT_DEPTHWISE_ROWS_ABI_H */
