// Tier 0's NCHW max and mean pooling, forward and backward: a row's outputs fill the vector lanes (W stride 1:
// one load per tap; 2: the even lanes of two loads, or two taps the even and the odd lanes of one
// pair), each output's taps in row-major order, as every pooling path visits them, so the bits
// are the scalar path's. Where some load would leave the input row (padding, the row's tail), the
// plane is first copied into rows padded with what leaves a max or a sum as it was (NaN, 0), so
// the kernel reads every tap without masks. What every row and plane share is planned once per
// call (this file's structs, pool_nchw.cpp); one kernel (pool_nchw_impl.hpp) built for AVX2 and
// for AVX-512.
#pragma once

#include <cstdint>
#include <vector>

#include "geometry.hpp"

namespace convjit::detail {

// Along W, for vectors of `lanes` outputs, and how the kernel reads a plane: in place (pitch =
// in W, lead 0) or as padded rows (padded_floats per plane in the caller's scratch: `lead` floats
// before each row's first, the rest after it up to `pitch`, whole vectors). Vectors [whole_begin, whole_end)
// have every W tap of every lane real; the others (at most kMaxEdgeVectors) keep the real W taps
// of their lanes (0 past the row's end).
struct NchwPoolWalk {
  static constexpr int kMaxEdgeVectors = 8;
  static constexpr int kMaxLanes = 16;
  int64_t lanes = 0, vectors = 0, whole_begin = 0, whole_end = 0;
  int64_t pitch = 0, lead = 0, padded_floats = 0;  // padded_floats 0: read in place
  int64_t step_d = 0, step_h = 0;                  // input rows between a window's rows along D and H
  float edge_taps[kMaxEdgeVectors][kMaxLanes] = {};

  bool is_edge(int64_t k) const { return k < whole_begin || k >= whole_end; }
  // Row of edge_taps for edge vector k.
  const float* taps_of_edge(int64_t k) const { return edge_taps[k < whole_begin ? k : whole_begin + k - whole_end]; }
};

// One output row (od, oh) of every plane: its window's first real input row (a row number of the
// plane, D-major), how many real rows along D and H, and its first output's offset in y's plane.
struct NchwPoolRow {
  int64_t first_row, rows_d, rows_h, y;
};

// False where the kernel does not take g: W stride over 2, positions or row steps past 2^30, more
// edge vectors than kMaxEdgeVectors, a padded plane over kMaxPaddedFloats, or over 2^24 taps
// (mean's divisor a float product).
inline constexpr int64_t kMaxPaddedFloats = int64_t(1) << 20;
bool make_nchw_pool_walk(const PoolGeometry& g, int64_t lanes, NchwPoolWalk* walk);
// Max backward keeps a lane mask per tap of its window: larger windows are not taken.
inline constexpr int64_t kPoolNchwMaxRoutedTaps = 64;
std::vector<NchwPoolRow> nchw_pool_rows(const PoolGeometry& g);
// Whether g's windows tile x without padding, 2 taps along W (stride = window, dilation 1 along
// every dim), its planes read in place: backward writes each dx element once.
bool nchw_pool_windows_tile_in_place(const PoolGeometry& g, const NchwPoolWalk& walk);

namespace avx2 {
inline constexpr int64_t kPoolNchwLanes = 8;
bool pool_nchw_supported(const PoolGeometry& g, PoolOp op);
// Every output of planes [first_plane, end_plane) (plane p: image p / C, channel p % C); padded:
// walk.padded_floats of scratch, or null when that is 0.
void pool_nchw_forward(const PoolGeometry& g, PoolOp op, const NchwPoolWalk& walk, const NchwPoolRow* rows,
                       int64_t row_count, const float* x, float* y, int64_t first_plane, int64_t end_plane,
                       float* padded);
// Every dx element of planes [first_plane, end_plane), each its gradients in output order (x and y
// read by max only); padded: 2 * walk.padded_floats of scratch (dx's rows, then x's), or null.
void pool_nchw_backward(const PoolGeometry& g, PoolOp op, const NchwPoolWalk& walk, const NchwPoolRow* rows,
                        int64_t row_count, const float* x, const float* y, const float* dy, float* dx,
                        int64_t first_plane, int64_t end_plane, float* padded);
}  // namespace avx2

namespace avx512 {
inline constexpr int64_t kPoolNchwLanes = 16;
bool pool_nchw_supported(const PoolGeometry& g, PoolOp op);
void pool_nchw_forward(const PoolGeometry& g, PoolOp op, const NchwPoolWalk& walk, const NchwPoolRow* rows,
                       int64_t row_count, const float* x, float* y, int64_t first_plane, int64_t end_plane,
                       float* padded);
void pool_nchw_backward(const PoolGeometry& g, PoolOp op, const NchwPoolWalk& walk, const NchwPoolRow* rows,
                        int64_t row_count, const float* x, const float* y, const float* dy, float* dx,
                        int64_t first_plane, int64_t end_plane, float* padded);
}  // namespace avx512

}  // namespace convjit::detail
