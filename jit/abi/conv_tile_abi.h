/* The forward-convolution tile ABI: the one contract between the driver (lib/driver/conv_forward.cpp)
 * and every tier's kernel (generic in lib/, JIT backends in jit/). C-compatible so generated code
 * can read the structs by offset.
 *
 * The driver splits y into tiles: `pixel_count` consecutive output pixels of one output plane
 * (n, od), in row-major (oh, ow) order from (oh, ow) -- a tile may span several rows -- times
 * oc_count output channels, all in one group. The generic kernel handles everything inside its
 * tile: padding (taps outside the input contribute exact zeros), row ends, the pixel and oc
 * tails, the mode's kernel flip, bias and activation. A JIT kernel is a "row kernel": the driver
 * gives it one output row segment at a time and an input VIEW in which every tap is real (x
 * itself, or a zero-padded copy of the rows the segment reads), so it never meets padding. Rows
 * of stride 1 may come several at a time as one segment over a view whose rows are one pitch
 * apart (jit/abi/backend.hpp: flattens_rows): the kernel cannot tell, its outputs land on that grid
 * in scratch (the problem's y.channel is then the grid's) and the driver keeps the real ones. A
 * kernel that compacts grids (compacts_grid) is given a map of the grid instead, where y's rows
 * are dense, and writes the real outputs straight into y; without a map it writes the grid.
 * The driver never names a backend.
 *
 * Numbers (so that every tier gives bitwise-identical results): each output is one chain of
 * fused multiply-adds over k = 0..reduction-1 in weight-layout order, (ic, kd, kh, kw) for NCHW
 * and (kd, kh, kw, ic) for NHWC, padded taps included as zero products, started from 0.0f;
 * then + bias; then the activation. (The runtime hands NHWC problems with few output channels
 * per group to the driver as NCHW ones: lib/rewrite/nhwc_as_nchw.hpp.) */
#ifndef CONVJIT_JIT_CONV_TILE_ABI_H
#define CONVJIT_JIT_CONV_TILE_ABI_H

#include <stdint.h>

#include "depthwise_rows_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A validated problem, normalized to 3 spatial dims (D, H, W; missing outer dims have size 1). */
typedef struct convjit_conv_problem {
  int32_t layout;      /* convjit_layout: strides below already encode it */
  int32_t flip;        /* 1: convolution mode, taps read reversed in every spatial dim */
  int64_t batch, groups, in_channels, out_channels, ic_per_group, oc_per_group;
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3];
  int64_t taps;        /* kernel[0] * kernel[1] * kernel[2] */
  int64_t reduction;   /* ic_per_group * taps: weights per output channel */
  /* element strides: offset = n*batch + c*channel + d*spatial[0] + h*spatial[1] + w*spatial[2] */
  struct { int64_t batch, channel, spatial[3]; } x, y;
} convjit_conv_problem;

typedef struct convjit_conv_tile {
  const float* x;      /* image n, first input channel of the tile's group */
  const float* w;      /* weights of the tile's first output channel (reduction floats each); NULL for a
                        * packing kernel whose driver packs from other weights (a backward data problem's) */
  const float* bias;   /* bias of the tile's first output channel, or NULL */
  float* y;            /* y at (n, first output channel, od, oh, ow) */
  int64_t oc_count, od, oh, ow, pixel_count;
  int32_t relu;        /* activation: 0 identity, 1 relu */
  const float* packed_weights; /* packing kernels: the tile's weights as the driver packed them, else NULL */
  float* scratch;      /* this thread's scratch, 64-byte aligned */
  int64_t scratch_floats;
  /* Row kernels only: x points at the input of tap (0,0,0) unflipped for pixel ow, input channel 0,
   * in a view with these element strides: per input channel (NCHW), per input position along W,
   * and per tap step (dilation included) along H and along D. */
  int64_t view_channel, view_position, view_tap_row, view_tap_plane;
  /* A flattened segment into y for a kernel that compacts grids, else both NULL: per grid pixel p (from the
   * segment's first), grid_real[p] is 0x80 where p is a real output and 0 where it is junk, and
   * grid_outputs[p] the offset from y of the first real output at or after p. The real outputs of
   * the grid, in order, are consecutive in y. */
  const uint8_t* grid_real;
  const int32_t* grid_outputs;
} convjit_conv_tile;

typedef void (*convjit_conv_tile_fn)(const convjit_conv_problem* problem, const convjit_conv_tile* tile);

/* What a tier registers. */
typedef struct convjit_conv_kernel {
  convjit_conv_tile_fn compute;
  /* 1: the kernel reads its tile's weights k-major, packed[k * oc_block + j] = w[j][k] for the
   * tile's channels j < oc_count and zeros up to oc_block, which the driver packs once before a
   * run of tiles of those channels (a transpose: lib/driver/packed_weights.hpp). */
  int32_t packs_weights;
  int64_t oc_block;                 /* packing kernels: output channels per tile, at most (0: any) */
  int64_t oc_granule;               /* channels per register block: tiles of multiples run no partial one (0: any) */
  int64_t min_row_pixels;           /* row kernels: shorter segments go to the generic tile */
  int64_t row_lanes;                /* row kernels: output pixels per vector (the driver's flattening reads it) */
  int32_t row_kernel;               /* 1: takes one output row segment and an input view */
  int32_t compacts_grid;            /* row kernels: 1 takes grid_real and grid_outputs (above) */
  /* Set instead of compute: NHWC depthwise rows (depthwise_rows_abi.h), which tier 0's NHWC depthwise
   * kernel calls for the outputs whose W taps are all real. */
  convjit_depthwise_row_fn depthwise_row;
} convjit_conv_kernel;

#ifdef __cplusplus
}
#endif

#endif /* CONVJIT_JIT_CONV_TILE_ABI_H */
