// Tier 0's NCHW max and mean pooling for windows of whole input rows (W: the window is the row,
// no padding: one output per row of outputs): global pooling, a 7 x 7 plane's one output. A
// window's real taps are runs of consecutive floats (one run for consecutive rows).
// Forward: kLanes planes at a time in the lanes, each tile of kLanes taps of their runs transposed
// in registers, the taps going into the outputs in window order with the scalar path's
// operations lane by lane (pool_lanes.hpp), so its bits.
// Mean backward, where the windows never overlap along D and H: the planes are zeroed where no
// window covers them, then each output's share (dy / divisor, plus +0) is stored into its
// window's runs, whole vector stores and one masked store each; no dx element is read back, and
// each holds +0 plus its one share, as on every pooling path. (Windows of short row pieces lost
// to the NHWC twin with this store pattern: bench/RESULTS.md, session 19.) One kernel
// (pool_nchw_whole_rows_impl.hpp) built for AVX2 and for AVX-512.
#pragma once

#include <cstdint>

#include "geometry.hpp"

namespace convjit::detail {

namespace avx2 {
// NCHW windows of whole input rows and a host that runs this build: forward takes max and mean,
// backward mean over windows that never overlap.
bool pool_nchw_whole_rows_forward_supported(const PoolGeometry& g, PoolOp op);
bool pool_nchw_whole_rows_backward_supported(const PoolGeometry& g, PoolOp op);
// Every output of planes [first_plane, end_plane) (plane p: image p / C, channel p % C).
void pool_nchw_whole_rows_forward(const PoolGeometry& g, PoolOp op, const float* x, float* y, int64_t first_plane,
                                  int64_t end_plane);
// Every dx element of those planes.
void pool_nchw_mean_backward_whole_rows(const PoolGeometry& g, const float* dy, float* dx, int64_t first_plane,
                                        int64_t end_plane);
}  // namespace avx2

namespace avx512 {
bool pool_nchw_whole_rows_forward_supported(const PoolGeometry& g, PoolOp op);
bool pool_nchw_whole_rows_backward_supported(const PoolGeometry& g, PoolOp op);
void pool_nchw_whole_rows_forward(const PoolGeometry& g, PoolOp op, const float* x, float* y, int64_t first_plane,
                                  int64_t end_plane);
void pool_nchw_mean_backward_whole_rows(const PoolGeometry& g, const float* dy, float* dx, int64_t first_plane,
                                        int64_t end_plane);
}  // namespace avx512

}  // namespace convjit::detail
