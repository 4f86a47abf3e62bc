/* The backward-filter row ABI: the contract between the backward-filter driver
 * (lib/driver/conv_backward_filter.cpp) and a compiled NHWC backward-filter kernel. C-compatible so
 * generated code can read the structs by offset.
 *
 * dw[oc][kd][kh][kw][ic] (OHWI, per group) is the sum over images and output pixels of
 * dy[oc] x[ic] at the tap's input. The driver gives the kernel a few consecutive output rows of one
 * image and D plane, whose real taps along D and H are the same rectangle (or a segment of one long
 * row), a range of output channels (whole blocks of the kernel's, then at most the group's tail)
 * and per tap column the run of the call's outputs along W whose tap is real; the kernel adds, for every dw element of
 * the range and every tap in the rectangle, the products of those rows in row order, each row's outputs in W order.
 * Taps outside the input are skipped: with finite dy that adds exactly what tier 0's zero products add. So each dw
 * element is one FMA chain over (image, od, oh, ow) in order, the chain of tier 0's backward filter
 * (lib/driver/conv_backward_filter.cpp), which the driver starts from a zeroed dw. Spatial taps are counted in input
 * order; in convolution mode (flip) tap k's weight is kernel - 1 - k along every dim, which the kernel applies. Every
 * offset below is in elements and names a real input (the driver forms no pointer outside x). */
#ifndef CONVJIT_JIT_FILTER_ROWS_ABI_H
#define CONVJIT_JIT_FILTER_ROWS_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Taps along W a kernel takes (the driver's columns live on its stack). */
enum { CONVJIT_FILTER_MAX_COLUMNS = 64 };

/* What every call of a problem shares: x's and dy's element strides as the kernel steps them. */
typedef struct convjit_filter_problem {
  int64_t x_tap_step[3];  /* between the inputs of consecutive D, H and W taps */
  int64_t x_row_step;     /* between the inputs of consecutive output rows (stride along H) */
  int64_t x_output_step;  /* between the inputs of consecutive outputs along W (stride along W) */
  int64_t dy_row_step;    /* between consecutive output rows of dy */
  int64_t dy_output_step; /* between consecutive outputs along W of dy */
} convjit_filter_problem;

/* Tap kw along W: the `count` consecutive outputs of the call, in every row, whose tap kw is real. */
typedef struct convjit_filter_column {
  int64_t count;
  int64_t x_offset;  /* from a row's input at W 0 to tap kw of the first of them */
  int64_t dy_offset; /* from a row's first output of the call to the first of them */
  int64_t before, after; /* kernels with columns_at_once: of the count, those before the call's interior and after it */
} convjit_filter_column;

typedef struct convjit_filter_rows {
  const float* x;                       /* the image, at the group's first input channel */
  const float* dy; /* the first row's first output of the call, at the range's first output channel */
  float* dw;       /* the range's first output channel's weights (transposed: its first panel) */
  int64_t x_origin;                     /* from x to the first row's input of tap (tap_begin[0], tap_begin[1]) at W 0 */
  int64_t rows;                         /* >= 1 */
  int64_t tap_begin[2], tap_end[2];     /* the real D and H taps of every row: [begin, end), not empty */
  const convjit_filter_column* columns; /* kernel[2] entries */
  int64_t out_channels;                 /* of the range */
  /* Kernels with columns_at_once: the call's outputs along W whose every tap is real (the interior: count 0,
   * none; then every column's outputs come before it), from a row's input at W 0 to the first
   * one's input of tap 0, and from the row's first output of the call to it. */
  int64_t interior_count, interior_x_offset, interior_dy_offset;
} convjit_filter_rows;

typedef void (*convjit_filter_rows_fn)(const convjit_filter_problem* problem, const convjit_filter_rows* rows);

/* dw^T panels that transposed kernels accumulate in: at most this many floats per range. */
enum { CONVJIT_FILTER_MAX_PANEL_FLOATS = 1 << 17 };

typedef struct convjit_filter_kernel {
  convjit_filter_rows_fn compute;
  int64_t oc_block; /* output channels per register block: ranges start at multiples of it */
  /* 1: the kernel keeps the output channels in the lanes (few input channels) and accumulates
   * into dw^T panels, not dw: rows->dw is the range's first panel, one per block of oc_block
   * output channels, [tap (layout order)][input channel][oc_block] floats (a tail block's lanes
   * beyond the group unused); the driver zeroes the panels and transposes them into dw. */
  int32_t transposed;
  /* 1 (transposed too): a depthwise problem's kernel (one input and one output channel per group).
   * Its output channels are the problem's groups, and lane l of a block reads x at the block's
   * channel l (the same channel as dy's), not a broadcast: rows->x is at the range's first channel,
   * and the driver treats the groups as one group of that many output channels. x is dense (its
   * pixels the groups' channels apart). */
  int32_t depthwise;
  /* 1 (depthwise kernels, and transposed ones where every W tap's accumulators fit): every W tap of
   * a D and H tap is summed at once over a row's interior, and each column's outputs before and
   * after it on their own, so each chain still goes over the outputs in order. The driver sets
   * the columns' before and after and the rows' interior. */
  int32_t columns_at_once;
} convjit_filter_kernel;

#ifdef __cplusplus
}
#endif

#endif /* CONVJIT_JIT_FILTER_ROWS_ABI_H */
