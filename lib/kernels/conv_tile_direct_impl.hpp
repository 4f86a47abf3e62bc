// Tier 0's direct forward tile (conv_tile_direct.hpp), written once over a vector type F
// (simd_avx2.hpp, simd_avx512.hpp): F::kLanes output pixels per vector. Include from one file per
// ISA, compiled with its flags; internal linkage (lib/README.md, "One kernel, several ISAs").
#pragma once

#include <algorithm>
#include <cstdint>

#include "conv_tile_direct.hpp"
#include "lane_rows.hpp"
#include "patch_pack.hpp"
#include "steps.hpp"

namespace convjit::detail {
namespace {

// Output pixels [ow, ow + count) of row (od, oh), and the kd, kh taps whose input plane and row
// exist (the others are padding: zero products, skipped), with the input offset of the first.
struct Row {
  int64_t od, oh, ow, count;
  int64_t kd_begin, kd_end, kh_begin, kh_end;
  int64_t plane_offset;  // of tap (kd_begin, kh_begin) within an input channel
};

inline Row make_row(const convjit_conv_problem& g, int64_t od, int64_t oh, int64_t ow, int64_t count) {
  Row r{od, oh, ow, count, 0, 0, 0, 0, 0};
  valid_taps(od, g.stride[0], g.pad_begin[0], g.dilation[0], g.kernel[0], g.in[0], g.flip, &r.kd_begin, &r.kd_end);
  valid_taps(oh, g.stride[1], g.pad_begin[1], g.dilation[1], g.kernel[1], g.in[1], g.flip, &r.kh_begin, &r.kh_end);
  if (r.kd_begin < r.kd_end && r.kh_begin < r.kh_end) {
    r.plane_offset = input_coordinate(g, 0, od, r.kd_begin) * g.x.spatial[0] +
                     input_coordinate(g, 1, oh, r.kh_begin) * g.x.spatial[1];
  }
  return r;
}

// Oc channels x Vectors*kLanes pixels (count <= Vectors*kLanes) of one output row. Edge says
// whether any load may cross the row's ends (or the block is partial): then loads are masked per
// lane.
template <typename F, int Oc, int Vectors, int Stride, bool Edge>
void block(const convjit_conv_problem& g, const convjit_conv_tile& t, const Row& r, int64_t oc0, int64_t px0,
           int64_t count) {
  using Vec = typename F::Vec;
  constexpr int kLanes = F::kLanes;
  Vec acc[Oc][Vectors];
#pragma GCC unroll 4
  for (int i = 0; i < Oc; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < Vectors; ++v) acc[i][v] = F::zero();
  }
  const int64_t kh_n = g.kernel[1], kw_n = g.kernel[2];
  // Taps in weight order; input positions move by +-dilation per tap (minus when flipped).
  const int64_t first_w = (r.ow + px0) * Stride - g.pad_begin[2] + (g.flip ? (kw_n - 1) * g.dilation[2] : 0);
  const int64_t step_w = g.flip ? -g.dilation[2] : g.dilation[2];
  // Two real taps along a dimension put its dilation below the input's extent, so the step is a
  // distance within x; with one there is no step (and a dilation of any int64 may overflow it).
  const int64_t step_row = r.kh_end - r.kh_begin > 1 ? (g.flip ? -g.dilation[1] : g.dilation[1]) * g.x.spatial[1] : 0;
  const int64_t step_plane = r.kd_end - r.kd_begin > 1 ? (g.flip ? -g.dilation[0] : g.dilation[0]) * g.x.spatial[0] : 0;
  for (int64_t ic = 0; ic < g.ic_per_group; ++ic) {
    const float* x_channel = t.x + ic * g.x.channel;
    const float* w_channel = t.w + (oc0 * g.ic_per_group + ic) * g.taps;
    // Tap addresses step as integers: the step after the last real tap may leave the buffer, which
    // a pointer must not (a huge dilation), and the loop never reads there.
    const uintptr_t step_plane_bytes = uintptr_t(step_plane) * sizeof(float);
    const uintptr_t step_row_bytes = uintptr_t(step_row) * sizeof(float);
    uintptr_t plane = reinterpret_cast<uintptr_t>(x_channel + r.plane_offset);
    for (int64_t kd = r.kd_begin; kd < r.kd_end; ++kd, plane += step_plane_bytes) {
      uintptr_t row_address = plane;
      for (int64_t kh = r.kh_begin; kh < r.kh_end; ++kh, row_address += step_row_bytes) {
        const float* row = reinterpret_cast<const float*>(row_address);
        const float* w_tap = w_channel + (kd * kh_n + kh) * kw_n;
        for (int64_t kw = 0; kw < kw_n; ++kw) {
          const int64_t first = first_w + kw * step_w;
          Vec in[Vectors];
#pragma GCC unroll 4
          for (int v = 0; v < Vectors; ++v) {
            if constexpr (Edge) {  // lanes past `count` are unwanted: masked off with the padding
              const int64_t wanted_end =
                  first + Stride * (kLanes * v + std::min<int64_t>(kLanes, count - kLanes * v) - 1) + 1;
              in[v] = load_inputs<F, Stride>(row, first + Stride * kLanes * v, g.in[2], wanted_end);
            } else if constexpr (Stride == 1) {
              in[v] = F::load(row + first + kLanes * v);
            } else {
              in[v] = load_inputs<F, Stride>(row, first + Stride * kLanes * v, INT64_MAX, INT64_MAX);
            }
          }
#pragma GCC unroll 4
          for (int i = 0; i < Oc; ++i) {
            const Vec weight = F::broadcast(w_tap + i * g.reduction + kw);
#pragma GCC unroll 4
            for (int v = 0; v < Vectors; ++v) acc[i][v] = F::fma(weight, in[v], acc[i][v]);
          }
        }
      }
    }
  }
  float* y = t.y + oc0 * g.y.channel + px0;
#pragma GCC unroll 4
  for (int i = 0; i < Oc; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < Vectors; ++v) {
      if (t.bias) acc[i][v] = F::add(acc[i][v], F::broadcast(t.bias + oc0 + i));
      if (t.relu) acc[i][v] = F::relu(acc[i][v]);
      float* out = y + i * g.y.channel + kLanes * v;
      const int64_t lanes = count - kLanes * v;
      if (lanes >= kLanes)
        F::store(out, acc[i][v]);
      else
        F::store(out, acc[i][v], F::first_lanes(lanes));
    }
  }
}

// Oc channels x `count` pixels from px0, with the edge-safe block only where a load could cross
// the row's ends.
template <typename F, int Oc, int Vectors, int Stride>
void pixels(const convjit_conv_problem& g, const convjit_conv_tile& t, const Row& r, int64_t oc0, int64_t px0,
            int64_t count) {
  constexpr int kLanes = F::kLanes;
  const int64_t first = (r.ow + px0) * Stride - g.pad_begin[2];  // tap 0's first input
  const int64_t last = first + Stride * kLanes * Vectors - 1 + (g.kernel[2] - 1) * g.dilation[2];  // loads' last
  if (count == kLanes * Vectors && first >= 0 && last < g.in[2])
    block<F, Oc, Vectors, Stride, false>(g, t, r, oc0, px0, count);
  else
    block<F, Oc, Vectors, Stride, true>(g, t, r, oc0, px0, count);
}

// Oc channels over a row: full blocks of Vectors*kLanes pixels, then the tail with fewer vectors.
template <typename F, int Oc, int Vectors, int Stride>
void row_channels(const convjit_conv_problem& g, const convjit_conv_tile& t, const Row& r, int64_t oc0) {
  constexpr int kLanes = F::kLanes;
  int64_t px = 0;
  for (; px + kLanes * Vectors <= r.count; px += kLanes * Vectors)
    pixels<F, Oc, Vectors, Stride>(g, t, r, oc0, px, kLanes * Vectors);
  const int64_t left = r.count - px;
  switch ((left + kLanes - 1) / kLanes) {  // 0 .. Vectors vectors, the last one partial
    case 1: return block<F, Oc, 1, Stride, true>(g, t, r, oc0, px, left);
    case 2:
      if constexpr (Vectors >= 2) block<F, Oc, 2, Stride, true>(g, t, r, oc0, px, left);
      return;
    case 3:
      if constexpr (Vectors >= 3) block<F, Oc, 3, Stride, true>(g, t, r, oc0, px, left);
      return;
    case 4:
      if constexpr (Vectors >= 4) block<F, Oc, 4, Stride, true>(g, t, r, oc0, px, left);
      return;
    default: return;
  }
}

// Register blocking by channels left: 4x2 vectors, 3x2, 2x3, 1x4 (up to 8 accumulators, and
// never fewer than 4 so the FMA latency stays hidden).
template <typename F, int Stride>
void row(const convjit_conv_problem& g, const convjit_conv_tile& t, const Row& r) {
  int64_t oc = 0;
  for (; oc + 4 <= t.oc_count; oc += 4) row_channels<F, 4, 2, Stride>(g, t, r, oc);
  switch (t.oc_count - oc) {
    case 3: return row_channels<F, 3, 2, Stride>(g, t, r, oc);
    case 2: return row_channels<F, 2, 3, Stride>(g, t, r, oc);
    case 1: return row_channels<F, 1, 4, Stride>(g, t, r, oc);
    default: return;
  }
}

inline bool conv_tile_direct_fits(const convjit_conv_problem& g) {
  return g.layout == CONVJIT_NCHW && (g.stride[2] == 1 || g.stride[2] == 2) && w_positions_fit_lanes(g);
}

template <typename F>
void run_conv_tile_direct(const convjit_conv_problem* problem, const convjit_conv_tile* tile) {
  const convjit_conv_problem& g = *problem;
  convjit_conv_tile t = *tile;
  int64_t oh = t.oh, ow = t.ow;
  for (int64_t done = 0; done < tile->pixel_count; done += g.out[2] - ow, ow = 0, ++oh) {
    const Row r = make_row(g, t.od, oh, ow, std::min(g.out[2] - ow, tile->pixel_count - done));
    t.y = tile->y + done * g.y.spatial[2];
    if (g.stride[2] == 1)
      row<F, 1>(g, t, r);
    else
      row<F, 2>(g, t, r);
  }
  F::leave();
}

}  // namespace
}  // namespace convjit::detail
