// Tier 0's NCHW max and mean pooling forward for the outputs of a row whose taps along W are all
// real: the row's outputs fill the vector lanes, the last vector masked (W stride 1 or 2: one
// load, or two and their even lanes, per tap); each output's taps in row-major order, as every
// pooling path visits them, so the bits are the scalar path's. One kernel (pool_nchw_impl.hpp)
// built for AVX2 and for AVX-512.
#pragma once

#include <cstdint>

#include "geometry.hpp"

namespace convjit::detail {

namespace avx2 {
inline constexpr int64_t kPoolNchwLanes = 8;
bool pool_nchw_supported(const PoolGeometry& g, PoolOp op);
// Outputs [first, first + count) of every output row of plane (n, c), every tap of theirs along W
// real; y_plane is that plane of y (nothing else of it is written).
void pool_nchw_interior(const PoolGeometry& g, PoolOp op, const float* plane, int64_t first, int64_t count,
                        float* y_plane);
}  // namespace avx2

namespace avx512 {
inline constexpr int64_t kPoolNchwLanes = 16;
bool pool_nchw_supported(const PoolGeometry& g, PoolOp op);
void pool_nchw_interior(const PoolGeometry& g, PoolOp op, const float* plane, int64_t first, int64_t count,
                        float* y_plane);
}  // namespace avx512

}  // namespace convjit::detail
