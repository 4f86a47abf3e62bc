// Tier 0's NCHW mean pooling backward for windows of whole input rows (W: the window is the row,
// no padding; along D and H the windows never overlap): global pooling, a 7 x 7 plane's one
// output. The planes are zeroed where no window covers them, then each output's share (dy /
// divisor, plus +0) is stored into its window, whose real rows are one run of consecutive floats
// (or a run per row where H is dilated): whole vector stores and one masked store; no dx element
// is read back. Each dx element so holds +0 plus its one share, as on every pooling path. Windows
// of short row pieces lose to the NHWC twin (masked stores then loads stall: bench/RESULTS.md,
// session 19). One kernel (pool_nchw_whole_rows_impl.hpp) built for AVX2 and for AVX-512.
#pragma once

#include <cstdint>

#include "geometry.hpp"

namespace convjit::detail {

namespace avx2 {
bool pool_nchw_whole_rows_supported(const PoolGeometry& g, PoolOp op);
// Every dx element of planes [first_plane, end_plane) (plane p: image p / C, channel p % C).
void pool_nchw_mean_backward_whole_rows(const PoolGeometry& g, const float* dy, float* dx, int64_t first_plane,
                                        int64_t end_plane);
}  // namespace avx2

namespace avx512 {
bool pool_nchw_whole_rows_supported(const PoolGeometry& g, PoolOp op);
void pool_nchw_mean_backward_whole_rows(const PoolGeometry& g, const float* dy, float* dx, int64_t first_plane,
                                        int64_t end_plane);
}  // namespace avx512

}  // namespace convjit::detail
