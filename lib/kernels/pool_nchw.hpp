// Tier 0's NCHW max and mean pooling forward for the outputs of a row whose taps along W are all
// real: the row's outputs fill the vector lanes (W stride 1 or 2: one load, or two and their even
// lanes, per tap); each output's taps in row-major order, as every pooling path visits them, so
// the bits are the scalar path's. One kernel (pool_nchw_impl.hpp) built for AVX2 and for AVX-512.
#pragma once

#include <cstdint>

#include "geometry.hpp"

namespace convjit::detail {

namespace avx2 {
inline constexpr int64_t kPoolNchwLanes = 8;
bool pool_nchw_supported(const PoolGeometry& g, PoolOp op);
// Outputs [first, first + count) of output row (o0, o1) of plane (n, c), count a multiple of
// kPoolNchwLanes, every tap of theirs along W real; y_row is that output row.
void pool_nchw_interior(const PoolGeometry& g, PoolOp op, const float* plane, int64_t o0, int64_t o1, int64_t first,
                        int64_t count, float* y_row);
}  // namespace avx2

namespace avx512 {
inline constexpr int64_t kPoolNchwLanes = 16;
bool pool_nchw_supported(const PoolGeometry& g, PoolOp op);
void pool_nchw_interior(const PoolGeometry& g, PoolOp op, const float* plane, int64_t o0, int64_t o1, int64_t first,
                        int64_t count, float* y_row);
}  // namespace avx512

}  // namespace convjit::detail
