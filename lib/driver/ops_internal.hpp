// The drivers of the ops other than forward convolution: validated problems in (lib/problem/geometry.hpp
// validates), the thread count from the runtime that dispatches them (lib/runtime/dispatch.cpp).
// Forward convolution's driver is conv_forward.hpp.
#pragma once

#include "conv_backward_filter_direct.hpp"
#include "filter_rows_abi.h"
#include "geometry.hpp"
#include "pool_row_abi.h"

namespace convjit::detail {

void run_conv_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w, float* dx);
// The row tile of g's backward data: each dx element's sum goes row tile by row tile, then tap by
// tap, pixel by pixel.
int64_t backward_data_row_tile(const ConvGeometry& g);
// Whether backward data of g runs on a depthwise vector kernel (NHWC: the channels in the lanes;
// NCHW at W stride 2: W's two phases zipped), and that run, the NHWC scatter kernel summing in
// the order of a row tile of ow_tile; false (nothing written) when the host has no such kernel or
// g is not one.
bool backward_data_runs_depthwise_kernel(const ConvGeometry& g);
bool run_depthwise_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w, int64_t ow_tile,
                                 float* dx);
// direct: the problems the direct kernel may take; the rest run on the register tile over packed
// patches (or on a depthwise kernel).
void run_conv_backward_filter(const ConvGeometry& g, DirectFilterScope direct, int threads, const float* x,
                              const float* dy, float* dw);
// Whether backward filter of g runs on the direct kernel where it may take `scope`, not on the
// register tile over packed patches.
bool backward_filter_runs_direct(const ConvGeometry& g, DirectFilterScope scope);
// Whether it runs on a vector kernel with the channels in the lanes (NHWC depthwise).
bool backward_filter_runs_channels_in_lanes(const ConvGeometry& g);
// NHWC backward filter on a compiled kernel of g's key (jit/abi/filter_rows_abi.h): tier 0's
// chains, so the same bits.
void run_conv_backward_filter_rows(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw,
                                   const convjit_filter_kernel& kernel);

// compiled: a compiled max or mean pooling row kernel (jit/abi/pool_row_abi.h) of the op and
// direction for the outputs whose windows are wholly real, or null.
void run_pool_forward(PoolOp op, const PoolGeometry& g, int threads, float p, const float* x, float* y,
                      convjit_pool_row_fn compiled = nullptr);
// The problem a compiled pooling row kernel of g reads.
convjit_pool_problem compiled_pool_problem(const PoolGeometry& g);
// Whether run_pool_forward and run_pool_backward give some of g's outputs to a compiled row
// kernel (NHWC max and mean on tier 0's vector kernel, some window wholly real).
bool pool_runs_compiled_rows(const PoolGeometry& g, PoolOp op);
// x and y are read by Max and LpNorm only.
void run_pool_backward(PoolOp op, const PoolGeometry& g, int threads, float p, const float* x, const float* y,
                       const float* dy, float* dx, convjit_pool_row_fn compiled = nullptr);
// Whether g's pooling runs on a vector kernel with the channels in the lanes (NHWC max and mean).
bool pool_runs_channels_in_lanes(const PoolGeometry& g, PoolOp op);
// Whether g's NCHW max or mean pooling forward is faster on its own vector kernel (pool_nchw.hpp)
// than as its NHWC twin: W stride 2 and rows of a vector or more, as measured (bench/RESULTS.md,
// "Session 18"; at stride 1 and on shorter rows the twin's channels in lanes won); and over
// windows of whole input rows (nchw_pool_forward_runs_whole_rows).
bool nchw_pool_forward_beats_twin(const PoolGeometry& g, PoolOp op);
// Whether g's NCHW max or mean pooling forward runs the whole-rows kernel (pool_nchw_whole_rows.hpp):
// windows of whole input rows (global pooling); it beat the twin there (bench/RESULTS.md,
// "Session 19").
bool nchw_pool_forward_runs_whole_rows(const PoolGeometry& g, PoolOp op);
// And backward: where 2-tap windows tile x in place (each dx element written once), or with at
// most 8 channels (the twin's lanes half empty) at W stride 2 on rows of a vector or more; where
// windows overlap, the kernel's read-add-write of dx per tap lost to the twin (bench/RESULTS.md,
// "Session 18"); and mean over windows of whole input rows (nchw_pool_backward_runs_whole_rows).
bool nchw_pool_backward_beats_twin(const PoolGeometry& g, PoolOp op);
// Whether g's NCHW mean pooling backward runs the whole-rows kernel (pool_nchw_whole_rows.hpp):
// windows of whole input rows, never overlapping (global pooling); it beat the twin there
// (bench/RESULTS.md, "Session 19").
bool nchw_pool_backward_runs_whole_rows(const PoolGeometry& g, PoolOp op);

}  // namespace convjit::detail
