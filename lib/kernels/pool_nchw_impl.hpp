// pool_nchw.hpp's kernel over a vector type F (simd_avx2.hpp, simd_avx512.hpp). Include only from
// files compiled for F's ISA; everything here has internal linkage.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "pool_lanes.hpp"
#include "pool_nchw.hpp"
#include "pool_window.hpp"

namespace convjit::detail {
namespace {

// Output vectors formed at once: their independent chains hide each other's latency, and the loop
// over the window's taps runs once for all of them.
constexpr int kPoolRowVectors = 4;

// A block of up to kPoolRowVectors output vectors with the same real window rows: vectors of one
// output row, or every vector (one or two) of consecutive rows; for each, its lane 0's first tap,
// its outputs and its index along the row (edge and tail).
template <int Vecs>
struct VectorBlock {
  const float* first[Vecs];
  float* out[Vecs];
  int64_t k[Vecs];
};

// value / divisor in an edge vector's lanes (taps_w: their real W taps), the divisor per lane where
// padding is excluded, 0 in lanes without a real tap.
template <typename F>
inline __attribute__((always_inline)) typename F::Vec edge_mean(const PoolGeometry& g, const NchwPoolRow& row,
                                                                typename F::Vec taps_w, float divisor,
                                                                typename F::Vec value) {
  const typename F::Vec lane_divisor =
      g.exclude_padding ? F::mul(F::set1(float(row.rows_d * row.rows_h)), taps_w) : F::set1(divisor);
  return F::select(F::equal(taps_w, F::zero()), F::zero(), F::div(value, lane_divisor));
}

// The tap vectors of a block's vectors, window row by window row, each row's taps along W in order:
// each(tap index in that order, vector v, the taps' inputs): a load per tap (Stride 1), or the even
// lanes of a pair, or two consecutive taps (W dilation 1) the even and the odd lanes of one pair.
template <typename F, int Stride, int Vecs, typename Each>
inline __attribute__((always_inline)) void for_each_tap_vector(const PoolGeometry& g, const NchwPoolWalk& walk,
                                                               const NchwPoolRow& row,
                                                               const float* const (&first)[Vecs], Each&& each) {
  const int64_t taps_w = g.window[2], dilation_w = g.dilation[2];
  const bool taps_share_pairs = Stride == 2 && dilation_w == 1;
  int64_t index = 0;
  for (int64_t i = 0; i < row.rows_d; ++i) {
    for (int64_t j = 0; j < row.rows_h; ++j) {
      const int64_t window_row = (i * walk.step_d + j * walk.step_h) * walk.pitch;
      for (int64_t t = 0; t < taps_w; ++t, ++index) {
        const bool pair_of_two = taps_share_pairs && t + 1 < taps_w;
        for (int v = 0; v < Vecs; ++v) {
          const float* at = first[v] + window_row + t * dilation_w;
          if constexpr (Stride == 1) {
            each(index, v, F::load(at));
          } else {
            const typename F::Vec low = F::load(at), high = F::load(at + F::kLanes);
            each(index, v, F::even_lanes(low, high));
            if (pair_of_two) each(index + 1, v, F::odd_lanes(low, high));
          }
        }
        if (pair_of_two) ++t, ++index;
      }
    }
  }
}

// Adds the taps of a block's vectors in row-major order.
template <typename F, bool Max, int Stride, bool Tracks, int Vecs>
inline __attribute__((always_inline)) void add_taps(const PoolGeometry& g, const NchwPoolWalk& walk,
                                                    const NchwPoolRow& row, const VectorBlock<Vecs>& block,
                                                    PoolLanes<F, Max, Tracks>* lanes) {
  for_each_tap_vector<F, Stride, Vecs>(g, walk, row, block.first,
                                       [&](int64_t, int v, typename F::Vec value) { lanes[v].add(value); });
}

// A block's vectors, their window rows real (row: the window rows of every vector). A max forms
// them without tracking numbers; only where a lane stayed -inf (all NaN, or all -inf: padding is
// NaN) does it form them again with the tracking. Edge vectors' lanes without a real W tap get
// -FLT_MAX (max) or 0 (mean), and mean's divisor is per lane where padding is excluded; the row's
// last vector stores only its tail.
template <typename F, bool Max, int Stride, int Vecs>
inline __attribute__((always_inline)) void block_vectors(const PoolGeometry& g, const NchwPoolWalk& walk,
                                                         const NchwPoolRow& row, const VectorBlock<Vecs>& block,
                                                         float divisor) {
  const int64_t last_tail = g.out[2] - (walk.vectors - 1) * F::kLanes;
  typename F::Mask valid[Vecs];
  for (int v = 0; v < Vecs; ++v) {
    valid[v] = block.k[v] + 1 == walk.vectors ? F::first_lanes(last_tail) : F::all_lanes();
  }
  PoolLanes<F, Max, false> lanes[Vecs];
  add_taps<F, Max, Stride, false, Vecs>(g, walk, row, block, lanes);
  typename F::Vec result[Vecs];
  if constexpr (Max) {
    typename F::Mask stayed = F::no_lanes();
    for (int v = 0; v < Vecs; ++v) {
      stayed = F::either(stayed, F::both(F::equal(lanes[v].acc, F::set1(-INFINITY)), valid[v]));
    }
    if (F::any(stayed)) {
      PoolLanes<F, Max, true> tracked[Vecs];
      add_taps<F, Max, Stride, true, Vecs>(g, walk, row, block, tracked);
      for (int v = 0; v < Vecs; ++v) result[v] = tracked[v].result(true, 0.0f);
    } else {
      for (int v = 0; v < Vecs; ++v) result[v] = lanes[v].acc;
    }
  }
  for (int v = 0; v < Vecs; ++v) {
    const bool edge = walk.is_edge(block.k[v]);
    if constexpr (Max) {
      if (edge) {
        const typename F::Mask no_tap = F::equal(F::load(walk.taps_of_edge(block.k[v])), F::zero());
        result[v] = F::select(no_tap, F::set1(-FLT_MAX), result[v]);
      }
    } else if (edge) {
      const typename F::Vec taps_w = F::load(walk.taps_of_edge(block.k[v]));
      result[v] = edge_mean<F>(g, row, taps_w, divisor, lanes[v].acc);
    } else {
      result[v] = F::div(lanes[v].acc, F::set1(divisor));
    }
    if (block.k[v] + 1 == walk.vectors && last_tail < F::kLanes) {
      F::store(block.out[v], result[v], valid[v]);
    } else {
      F::store(block.out[v], result[v]);
    }
  }
}

// The plane's input rows into `padded`, each at walk.lead of its padded row with `fill` around it:
// the padded row filled (walk.pitch is whole vectors), then the input row copied over it, its last
// vector masked.
template <typename F>
inline void pad_rows(const PoolGeometry& g, const NchwPoolWalk& walk, const float* plane, float fill, float* padded) {
  const int64_t in_w = g.in[2], rows = g.in[0] * g.in[1];
  const typename F::Vec fills = F::set1(fill);
  const int64_t whole = in_w / F::kLanes * F::kLanes;
  const typename F::Mask tail = F::first_lanes(in_w - whole);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = plane + r * in_w;
    float* out = padded + r * walk.pitch;
    for (int64_t c = 0; c < walk.pitch; c += F::kLanes) F::store(out + c, fills);
    float* copy = out + walk.lead;
    for (int64_t c = 0; c < whole; c += F::kLanes) F::store(copy + c, F::load(row + c));
    if (whole < in_w) F::store(copy + whole, F::load(row + whole, tail), tail);
  }
}

// Every vector of output rows [0, Rows) of `rows` (rows with the same real window rows), PerRow
// vectors each.
template <typename F, bool Max, int Stride, int Rows, int PerRow>
inline __attribute__((always_inline)) void whole_rows(const PoolGeometry& g, const NchwPoolWalk& walk,
                                                      const NchwPoolRow* rows, const float* first, float* y_plane,
                                                      float divisor) {
  VectorBlock<Rows * PerRow> block;
  for (int r = 0; r < Rows; ++r) {
    for (int q = 0; q < PerRow; ++q) {
      block.first[r * PerRow + q] = first + rows[r].first_row * walk.pitch + q * Stride * F::kLanes;
      block.out[r * PerRow + q] = y_plane + rows[r].y + q * F::kLanes;
      block.k[r * PerRow + q] = q;
    }
  }
  block_vectors<F, Max, Stride>(g, walk, rows[0], block, divisor);
}

// Vectors [k, k + Vecs) of one output row.
template <typename F, bool Max, int Stride, int Vecs>
inline __attribute__((always_inline)) void vectors_of_row(const PoolGeometry& g, const NchwPoolWalk& walk,
                                                          const NchwPoolRow& row, const float* first, int64_t k,
                                                          float* y_row, float divisor) {
  VectorBlock<Vecs> block;
  for (int v = 0; v < Vecs; ++v) {
    block.first[v] = first + (k + v) * Stride * F::kLanes;
    block.out[v] = y_row + (k + v) * F::kLanes;
    block.k[v] = k + v;
  }
  block_vectors<F, Max, Stride>(g, walk, row, block, divisor);
}

// Blocks of one output row's vectors, or of every vector (one or two) of consecutive output rows
// whose windows have the same real rows.
template <typename F, bool Max, int Stride>
void forward_planes(const PoolGeometry& g, const NchwPoolWalk& walk, const NchwPoolRow* rows, int64_t row_count,
                    const float* x, float* y, int64_t first_plane, int64_t end_plane, float* padded) {
  const int64_t lane0 = walk.lead - g.pad_begin[2];  // lane 0's tap 0 of output 0 in a read row
  for (int64_t p = first_plane; p < end_plane; ++p) {
    const float* plane = x + p * g.x.channel;
    float* y_plane = y + p * g.y.channel;
    if (walk.padded_floats > 0) {
      pad_rows<F>(g, walk, plane, Max ? NAN : 0.0f, padded);
      plane = padded;
    }
    for (int64_t r = 0; r < row_count;) {
      const NchwPoolRow& row = rows[r];
      const int64_t real_rows = row.rows_d * row.rows_h;
      if (real_rows == 0) {  // the window wholly in the padding along D or H
        std::fill(y_plane + row.y, y_plane + row.y + g.out[2], Max ? -FLT_MAX : 0.0f);
        ++r;
        continue;
      }
      const float divisor = g.exclude_padding ? float(real_rows * g.window[2]) : window_taps(g);
      if (walk.vectors <= 2) {  // rows of one or two vectors: several rows a block
        const int64_t most = kPoolRowVectors / walk.vectors;
        int64_t n = 1;
        while (n < most && r + n < row_count && rows[r + n].rows_d == row.rows_d && rows[r + n].rows_h == row.rows_h) {
          ++n;
        }
        const float* first = plane + lane0;
        switch (walk.vectors * 8 + n) {
          case 9: whole_rows<F, Max, Stride, 1, 1>(g, walk, &row, first, y_plane, divisor); break;
          case 10: whole_rows<F, Max, Stride, 2, 1>(g, walk, &row, first, y_plane, divisor); break;
          case 11: whole_rows<F, Max, Stride, 3, 1>(g, walk, &row, first, y_plane, divisor); break;
          case 12: whole_rows<F, Max, Stride, 4, 1>(g, walk, &row, first, y_plane, divisor); break;
          case 17: whole_rows<F, Max, Stride, 1, 2>(g, walk, &row, first, y_plane, divisor); break;
          default: whole_rows<F, Max, Stride, 2, 2>(g, walk, &row, first, y_plane, divisor); break;
        }
        r += n;
        continue;
      }
      const float* first = plane + row.first_row * walk.pitch + lane0;
      float* y_row = y_plane + row.y;
      for (int64_t k = 0; k < walk.vectors; k += kPoolRowVectors) {
        switch (std::min<int64_t>(kPoolRowVectors, walk.vectors - k)) {
          case 1: vectors_of_row<F, Max, Stride, 1>(g, walk, row, first, k, y_row, divisor); break;
          case 2: vectors_of_row<F, Max, Stride, 2>(g, walk, row, first, k, y_row, divisor); break;
          case 3: vectors_of_row<F, Max, Stride, 3>(g, walk, row, first, k, y_row, divisor); break;
          default: vectors_of_row<F, Max, Stride, 4>(g, walk, row, first, k, y_row, divisor); break;
        }
      }
      ++r;
    }
  }
  F::leave();
}

// Backward. A block's vectors: as forward's, with dy and y (max) of its outputs and its lane 0's first
// tap in dx's rows as the kernel writes them.
template <int Vecs>
struct GradientBlock {
  const float* x[Vecs];
  float* dx[Vecs];
  const float* y[Vecs];
  const float* dy[Vecs];
  int64_t k[Vecs];
};

// One block's gradients into dx's rows. Max routes each output's dy to the first tap (row-major)
// whose x equals its y; mean shares dy / divisor with every tap. Within a window row the taps go
// last to first, the vectors in order: a dx element gets its gradients from the outputs reaching
// it in output order (a later output reaches it through an earlier tap), as on every pooling path.
// Where the windows tile x (Tiles) each dx element has one output: written once, in any order.
template <typename F, bool Max, int Stride, bool Tiles, int Vecs>
inline __attribute__((always_inline)) void block_gradients(const PoolGeometry& g, const NchwPoolWalk& walk,
                                                           const NchwPoolRow& row, const GradientBlock<Vecs>& block,
                                                           float divisor) {
  const int64_t last_tail = g.out[2] - (walk.vectors - 1) * F::kLanes;
  typename F::Vec grad[Vecs];
  typename F::Vec y[Vecs];
  for (int v = 0; v < Vecs; ++v) {
    const bool tail = block.k[v] + 1 == walk.vectors && last_tail < F::kLanes;
    const typename F::Mask valid = F::first_lanes(tail ? last_tail : F::kLanes);
    grad[v] = tail ? F::load(block.dy[v], valid) : F::load(block.dy[v]);  // 0 past the row's end
    if constexpr (Max) {
      y[v] = tail ? F::load(block.y[v], valid) : F::load(block.y[v]);
    } else if (walk.is_edge(block.k[v])) {
      const typename F::Vec taps_w = F::load(walk.taps_of_edge(block.k[v]));
      grad[v] = edge_mean<F>(g, row, taps_w, divisor, grad[v]);
    } else {
      grad[v] = F::div(grad[v], F::set1(divisor));
    }
  }
  if constexpr (Tiles) {
    // 2 taps along W, each dx element in one window: written once, +0 + share, and max routes
    // window row by window row as it writes (taps in row-major order), its lane masks never
    // leaving registers.
    typename F::Mask routed[Vecs];
    for (int v = 0; v < Vecs; ++v) routed[v] = F::no_lanes();
    for (int64_t i = 0; i < row.rows_d; ++i) {
      for (int64_t j = 0; j < row.rows_h; ++j) {
        const int64_t window_row = (i * walk.step_d + j * walk.step_h) * walk.pitch;
        for (int v = 0; v < Vecs; ++v) {
          typename F::Vec share[2] = {grad[v], grad[v]};
          if constexpr (Max) {
            const typename F::Vec low = F::load(block.x[v] + window_row),
                                  high = F::load(block.x[v] + window_row + F::kLanes);
            const typename F::Vec taps[2] = {F::even_lanes(low, high), F::odd_lanes(low, high)};
            for (int t = 0; t < 2; ++t)
              share[t] = F::select(route_to_first_equal<F>(taps[t], y[v], routed[v]), grad[v], F::zero());
          }
          for (int t = 0; t < 2; ++t) share[t] = F::add(F::zero(), share[t]);
          float* at = block.dx[v] + window_row;
          F::store(at, F::zip_low(share[0], share[1]));
          F::store(at + F::kLanes, F::zip_high(share[0], share[1]));
        }
      }
    }
    return;
  }
  typename F::Mask here[kPoolNchwMaxRoutedTaps][Vecs];
  if constexpr (Max) {
    typename F::Mask routed[Vecs];
    for (int v = 0; v < Vecs; ++v) routed[v] = F::no_lanes();
    for_each_tap_vector<F, Stride, Vecs>(g, walk, row, block.x, [&](int64_t index, int v, typename F::Vec x) {
      here[index][v] = route_to_first_equal<F>(x, y[v], routed[v]);
    });
  }
  const int64_t taps_w = g.window[2], dilation_w = g.dilation[2];
  for (int64_t i = 0; i < row.rows_d; ++i) {
    for (int64_t j = 0; j < row.rows_h; ++j) {
      const int64_t window_row = (i * walk.step_d + j * walk.step_h) * walk.pitch;
      const int64_t row_index = (i * row.rows_h + j) * taps_w;
      for (int64_t t = taps_w - 1; t >= 0; --t) {
        for (int v = 0; v < Vecs; ++v) {
          typename F::Vec share = grad[v];
          if constexpr (Max) share = F::select(here[row_index + t][v], grad[v], F::zero());
          float* at = block.dx[v] + window_row + t * dilation_w;
          // +0 added to a dx element leaves it as it was: dx starts at +0 and a sum from +0 is never -0.
          if constexpr (Stride == 1) {
            F::store(at, F::add(F::load(at), share));
          } else {
            F::store(at, F::add(F::load(at), F::zip_low(share, F::zero())));
            F::store(at + F::kLanes, F::add(F::load(at + F::kLanes), F::zip_high(share, F::zero())));
          }
        }
      }
    }
  }
}

template <typename F, bool Max, int Stride, bool Tiles, int Vecs>
inline __attribute__((always_inline)) void gradients_of_row(const PoolGeometry& g, const NchwPoolWalk& walk,
                                                            const NchwPoolRow& row, const float* x_first,
                                                            float* dx_first, const float* y_row, const float* dy_row,
                                                            int64_t k, float divisor) {
  GradientBlock<Vecs> block;
  for (int v = 0; v < Vecs; ++v) {
    block.x[v] = x_first + (k + v) * Stride * F::kLanes;
    block.dx[v] = dx_first + (k + v) * Stride * F::kLanes;
    block.y[v] = y_row + (k + v) * F::kLanes;
    block.dy[v] = dy_row + (k + v) * F::kLanes;
    block.k[v] = k + v;
  }
  block_gradients<F, Max, Stride, Tiles>(g, walk, row, block, divisor);
}

// dx of each plane: zeroed (in place, or its padded rows), then every output row's gradients in
// output order, blocks of up to 4 vectors of a row; padded rows are copied into dx at the end.
// Where 2-tap windows tile x in place (Tiles), the windows write dx once, and only what no window
// covers is zeroed.
template <typename F, bool Max, int Stride, bool Tiles>
void backward_planes(const PoolGeometry& g, const NchwPoolWalk& walk, const NchwPoolRow* rows, int64_t row_count,
                     const float* x, const float* y, const float* dy, float* dx, int64_t first_plane, int64_t end_plane,
                     float* padded) {
  const int64_t lane0 = walk.lead - g.pad_begin[2];
  const int64_t in_w = g.in[2], input_rows = g.in[0] * g.in[1];
  const int64_t plane_floats = walk.padded_floats > 0 ? walk.padded_floats : input_rows * in_w;
  for (int64_t p = first_plane; p < end_plane; ++p) {
    const float* x_rows = Max ? x + p * g.x.channel : nullptr;
    float* dx_plane = dx + p * g.x.channel;
    float* dx_rows = dx_plane;
    if (walk.padded_floats > 0) {
      if constexpr (Max) {
        pad_rows<F>(g, walk, x_rows, NAN, padded + walk.padded_floats);  // NaN equals no y
        x_rows = padded + walk.padded_floats;
      }
      dx_rows = padded;
    }
    if constexpr (Tiles) {
      // Rows (d, h) nested, not one index divided per row: small planes' rows are few floats, and
      // a division and a remainder each cost more than zeroing them (bench/RESULTS.md, "Session 24").
      float* dx_row = dx_plane;
      for (int64_t d = 0; d < g.in[0]; ++d) {
        for (int64_t h = 0; h < g.in[1]; ++h, dx_row += in_w) {
          const bool covered = d < g.out[0] * g.stride[0] && h < g.out[1] * g.stride[1];
          const int64_t first_uncovered = covered ? 2 * g.out[2] : 0;
          if (first_uncovered < in_w) std::fill(dx_row + first_uncovered, dx_row + in_w, 0.0f);
        }
      }
    } else {
      std::fill(dx_rows, dx_rows + plane_floats, 0.0f);
    }
    const float* y_plane = Max ? y + p * g.y.channel : nullptr;
    const float* dy_plane = dy + p * g.y.channel;
    for (int64_t r = 0; r < row_count; ++r) {
      const NchwPoolRow& row = rows[r];
      const int64_t real_rows = row.rows_d * row.rows_h;
      if (real_rows == 0) continue;  // the window wholly in the padding along D or H: no real tap
      const float divisor = g.exclude_padding ? float(real_rows * g.window[2]) : window_taps(g);
      const int64_t first_row = row.first_row * walk.pitch + lane0;
      const float* x_first = Max ? x_rows + first_row : nullptr;
      float* dx_first = dx_rows + first_row;
      const float* y_row = Max ? y_plane + row.y : nullptr;
      const float* dy_row = dy_plane + row.y;
      for (int64_t k = 0; k < walk.vectors; k += kPoolRowVectors) {
        switch (std::min<int64_t>(kPoolRowVectors, walk.vectors - k)) {
          case 1:
            gradients_of_row<F, Max, Stride, Tiles, 1>(g, walk, row, x_first, dx_first, y_row, dy_row, k, divisor);
            break;
          case 2:
            gradients_of_row<F, Max, Stride, Tiles, 2>(g, walk, row, x_first, dx_first, y_row, dy_row, k, divisor);
            break;
          case 3:
            gradients_of_row<F, Max, Stride, Tiles, 3>(g, walk, row, x_first, dx_first, y_row, dy_row, k, divisor);
            break;
          default:
            gradients_of_row<F, Max, Stride, Tiles, 4>(g, walk, row, x_first, dx_first, y_row, dy_row, k, divisor);
            break;
        }
      }
    }
    if (walk.padded_floats > 0) {
      for (int64_t r = 0; r < input_rows; ++r) {
        std::copy(padded + r * walk.pitch + walk.lead, padded + r * walk.pitch + walk.lead + in_w, dx_plane + r * in_w);
      }
    }
  }
  F::leave();
}

template <typename F>
void run_pool_nchw_forward(const PoolGeometry& g, PoolOp op, const NchwPoolWalk& walk, const NchwPoolRow* rows,
                           int64_t row_count, const float* x, float* y, int64_t first_plane, int64_t end_plane,
                           float* padded) {
  const bool max = op == PoolOp::Max;
  if (g.stride[2] == 1) {
    (max ? forward_planes<F, true, 1> : forward_planes<F, false, 1>)(g, walk, rows, row_count, x, y, first_plane,
                                                                     end_plane, padded);
  } else {
    (max ? forward_planes<F, true, 2> : forward_planes<F, false, 2>)(g, walk, rows, row_count, x, y, first_plane,
                                                                     end_plane, padded);
  }
}

template <typename F>
void run_pool_nchw_backward(const PoolGeometry& g, PoolOp op, const NchwPoolWalk& walk, const NchwPoolRow* rows,
                            int64_t row_count, const float* x, const float* y, const float* dy, float* dx,
                            int64_t first_plane, int64_t end_plane, float* padded) {
  const bool max = op == PoolOp::Max;
  if (g.stride[2] == 1) {
    (max ? backward_planes<F, true, 1, false>
         : backward_planes<F, false, 1, false>)(g, walk, rows, row_count, x, y, dy, dx, first_plane, end_plane, padded);
  } else if (nchw_pool_windows_tile_in_place(g, walk)) {
    (max ? backward_planes<F, true, 2, true> : backward_planes<F, false, 2, true>)(g, walk, rows, row_count, x, y, dy,
                                                                                   dx, first_plane, end_plane, padded);
  } else {
    (max ? backward_planes<F, true, 2, false>
         : backward_planes<F, false, 2, false>)(g, walk, rows, row_count, x, y, dy, dx, first_plane, end_plane, padded);
  }
}

}  // namespace
}  // namespace convjit::detail
