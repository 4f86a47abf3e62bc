// conv_depthwise_backward_filter.hpp's kernel over a vector type F (simd_avx2.hpp,
// simd_avx512.hpp). Include only from files compiled for F's ISA; everything here has internal
// linkage.
#pragma once

#include <algorithm>
#include <cstdint>

#include "conv_depthwise_backward_filter.hpp"
#include "patch_pack.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

// The taps of a kernel as input offsets and coordinates, and the output pixels along W whose
// every tap is real (the same for every row).
template <int Taps>
struct DepthwiseTaps {
  int64_t d[Taps], h[Taps], w[Taps], offset[Taps];
  int64_t w_lo, w_hi;

  // Flattened: WeightCursor inlined, so this ISA's object defines no weak copy of it (lib/README.md).
  __attribute__((flatten)) explicit DepthwiseTaps(const ConvGeometry& g) {
    WeightCursor at(g, 0);
    for (int t = 0; t < Taps; ++t, at.advance()) {
      d[t] = at.kd;
      h[t] = at.kh;
      w[t] = at.kw;
      // From the input element of output pixel (0, 0, 0)'s first tap (unflipped coordinates).
      offset[t] = (input_coordinate(g, 0, 0, at.kd) - input_coordinate(g, 0, 0, 0)) * g.x.spatial[0] +
                  (input_coordinate(g, 1, 0, at.kh) - input_coordinate(g, 1, 0, 0)) * g.x.spatial[1] +
                  (input_coordinate(g, 2, 0, at.kw) - input_coordinate(g, 2, 0, 0)) * g.x.spatial[2];
    }
    w_lo = 0;
    w_hi = g.out[2];
    for (int t = 0; t < Taps; ++t) {
      while (w_lo < w_hi && input_coordinate(g, 2, w_lo, w[t]) < 0) ++w_lo;
      while (w_hi > w_lo && input_coordinate(g, 2, w_hi - 1, w[t]) >= g.in[2]) --w_hi;
    }
  }
};

// Channel vectors a pixel's taps are walked with at once: as many as their chains fit the vector
// registers, with one gradient each and a loaded value (at most 3: NHWC lines in a row).
template <typename F, int Taps>
inline constexpr int kVectorsAtOnce = std::clamp((F::kRegisters - 4) / Taps, 1, 3);

// One output row (n, od, oh) of Vecs consecutive vectors of channels from c (all their lanes if
// Full, else the last one's `lanes`): each chain acc[v * Taps + t] goes on over the row's pixels,
// in order.
template <typename F, int Taps, int Vecs, bool Full>
inline __attribute__((always_inline)) void depthwise_filter_row(const ConvGeometry& g, const DepthwiseTaps<Taps>& taps,
                                                                const float* x, const float* dy, int64_t c,
                                                                typename F::Mask lanes, int64_t n, int64_t od,
                                                                int64_t oh, typename F::Vec* acc) {
  auto load = [&](const float* p, int v) {
    if constexpr (Full) {
      return F::load(p + v * F::kLanes);
    } else {
      return v == Vecs - 1 ? F::load(p + v * F::kLanes, lanes) : F::load(p + v * F::kLanes);
    }
  };
  const float* x_image = x + n * g.x.batch + c;
  const float* dy_row = dy + n * g.y.batch + c + od * g.y.spatial[0] + oh * g.y.spatial[1];
  bool rows_real = true;  // every tap's D and H coordinates inside the input
  for (int t = 0; t < Taps; ++t) {
    const int64_t id = input_coordinate(g, 0, od, taps.d[t]), ih = input_coordinate(g, 1, oh, taps.h[t]);
    rows_real &= id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1];
  }
  auto checked_pixel = [&](int64_t ow) {
    typename F::Vec grad[Vecs];
    for (int v = 0; v < Vecs; ++v) grad[v] = load(dy_row + ow * g.y.spatial[2], v);
#pragma GCC unroll 16
    for (int t = 0; t < Taps; ++t) {
      const int64_t id = input_coordinate(g, 0, od, taps.d[t]), ih = input_coordinate(g, 1, oh, taps.h[t]),
                    iw = input_coordinate(g, 2, ow, taps.w[t]);
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
      const float* at = x_image + id * g.x.spatial[0] + ih * g.x.spatial[1] + iw * g.x.spatial[2];
      for (int v = 0; v < Vecs; ++v) acc[v * Taps + t] = F::fma(grad[v], load(at, v), acc[v * Taps + t]);
    }
  };
  if (!rows_real) {
    for (int64_t ow = 0; ow < g.out[2]; ++ow) checked_pixel(ow);
    return;
  }
  for (int64_t ow = 0; ow < taps.w_lo; ++ow) checked_pixel(ow);
  // Inside: every tap real, at a fixed offset from the pixel's first tap.
  if (taps.w_lo < taps.w_hi) {
    int64_t offset[Taps];
    for (int t = 0; t < Taps; ++t) offset[t] = taps.offset[t];
    const float* row_origin =
        x_image + input_coordinate(g, 0, od, 0) * g.x.spatial[0] + input_coordinate(g, 1, oh, 0) * g.x.spatial[1];
    // Each pixel's origin from its own coordinate, not a stepped pointer: a stride that only one output
    // column uses may be far beyond any buffer, and stepping by it would overflow.
    for (int64_t ow = taps.w_lo; ow < taps.w_hi; ++ow) {
      const float* origin = row_origin + input_coordinate(g, 2, ow, 0) * g.x.spatial[2];
      const float* grad_at = dy_row + ow * g.y.spatial[2];
      typename F::Vec grad[Vecs];
      for (int v = 0; v < Vecs; ++v) grad[v] = load(grad_at, v);
#pragma GCC unroll 16
      for (int t = 0; t < Taps; ++t) {
        for (int v = 0; v < Vecs; ++v)
          acc[v * Taps + t] = F::fma(grad[v], load(origin + offset[t], v), acc[v * Taps + t]);
      }
    }
  }
  for (int64_t ow = std::max(taps.w_lo, taps.w_hi); ow < g.out[2]; ++ow) checked_pixel(ow);
}

// Vecs vectors from v through one row; chains[v - v0] holds vector v's (v0: the task's first).
template <typename F, int Taps, int Vecs, bool Full>
inline __attribute__((always_inline)) void depthwise_filter_row_of(const ConvGeometry& g,
                                                                   const DepthwiseTaps<Taps>& taps, const float* x,
                                                                   const float* dy, int64_t v, int64_t v0, int64_t n,
                                                                   int64_t od, int64_t oh,
                                                                   typename F::Vec (*chains)[Taps]) {
  const int64_t c = v * F::kLanes;
  typename F::Vec acc[Vecs * Taps];
  for (int u = 0; u < Vecs; ++u) {
    for (int t = 0; t < Taps; ++t) acc[u * Taps + t] = chains[v - v0 + u][t];
  }
  depthwise_filter_row<F, Taps, Vecs, Full>(g, taps, x, dy, c, F::first_lanes(g.groups - c - (Vecs - 1) * F::kLanes), n,
                                            od, oh, acc);
  for (int u = 0; u < Vecs; ++u) {
    for (int t = 0; t < Taps; ++t) chains[v - v0 + u][t] = acc[u * Taps + t];
  }
}

// Channel vectors [v0, v1): output row by output row, every vector's row in turn, so the rows of
// x and dy a vector reads are still in cache for the next (a task of one vector streams a whole
// image with the pixel stride, reusing few L1 sets). Every tap's chain still goes over the output
// pixels in order; between rows it waits in `chains`.
template <typename F, int Taps>
void depthwise_filter_vectors(const ConvGeometry& g, const float* x, const float* dy, float* dw, int64_t v0,
                              int64_t v1) {
  const DepthwiseTaps<Taps> taps(g);
  typename F::Vec chains[kDepthwiseFilterVectorsPerTask][Taps];
  for (int64_t v = v0; v < v1; ++v) {
    for (int t = 0; t < Taps; ++t) chains[v - v0][t] = F::zero();
  }
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t od = 0; od < g.out[0]; ++od) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        constexpr int kAtOnce = kVectorsAtOnce<F, Taps>;
        int64_t v = v0;
        for (; v + kAtOnce <= v1 && (v + kAtOnce) * F::kLanes <= g.groups; v += kAtOnce) {
          depthwise_filter_row_of<F, Taps, kAtOnce, true>(g, taps, x, dy, v, v0, n, od, oh, chains);
        }
        for (; v < v1; ++v) {
          if ((v + 1) * F::kLanes <= g.groups) {
            depthwise_filter_row_of<F, Taps, 1, true>(g, taps, x, dy, v, v0, n, od, oh, chains);
          } else {
            depthwise_filter_row_of<F, Taps, 1, false>(g, taps, x, dy, v, v0, n, od, oh, chains);
          }
        }
      }
    }
  }
  alignas(64) float lanes_out[F::kLanes];
  for (int64_t v = v0; v < v1; ++v) {
    const int64_t c = v * F::kLanes, count = std::min<int64_t>(F::kLanes, g.groups - c);
    for (int t = 0; t < Taps; ++t) {
      F::store(lanes_out, chains[v - v0][t]);
      for (int64_t l = 0; l < count; ++l) dw[(c + l) * g.taps + t] = lanes_out[l];
    }
  }
}

// Tasks of up to kDepthwiseFilterVectorsPerTask vectors, at least one per thread where there are
// vectors enough (each dw element's chain is the same whichever task has it).
template <typename F, int Taps>
void depthwise_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  const int64_t vectors = (g.groups + F::kLanes - 1) / F::kLanes;
  const int64_t per_task =
      std::clamp<int64_t>((vectors + threads - 1) / std::max(threads, 1), 1, kDepthwiseFilterVectorsPerTask);
  const int64_t tasks = (vectors + per_task - 1) / per_task;
  parallel_for(threads, tasks, g.flops(), [&](int64_t task) {
    depthwise_filter_vectors<F, Taps>(g, x, dy, dw, task * per_task, std::min(vectors, (task + 1) * per_task));
    F::leave();
  });
}

template <typename F>
void run_depthwise_backward_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  switch (g.taps) {
    case 1: return depthwise_filter<F, 1>(g, threads, x, dy, dw);
    case 2: return depthwise_filter<F, 2>(g, threads, x, dy, dw);
    case 3: return depthwise_filter<F, 3>(g, threads, x, dy, dw);
    case 4: return depthwise_filter<F, 4>(g, threads, x, dy, dw);
    case 5: return depthwise_filter<F, 5>(g, threads, x, dy, dw);
    case 6: return depthwise_filter<F, 6>(g, threads, x, dy, dw);
    case 7: return depthwise_filter<F, 7>(g, threads, x, dy, dw);
    case 8: return depthwise_filter<F, 8>(g, threads, x, dy, dw);
    case 9: return depthwise_filter<F, 9>(g, threads, x, dy, dw);
    case 10: return depthwise_filter<F, 10>(g, threads, x, dy, dw);
    case 11: return depthwise_filter<F, 11>(g, threads, x, dy, dw);
    case 12: return depthwise_filter<F, 12>(g, threads, x, dy, dw);
    case 13: return depthwise_filter<F, 13>(g, threads, x, dy, dw);
    case 14: return depthwise_filter<F, 14>(g, threads, x, dy, dw);
    case 15: return depthwise_filter<F, 15>(g, threads, x, dy, dw);
    default: return depthwise_filter<F, 16>(g, threads, x, dy, dw);
  }
}

}  // namespace
}  // namespace convjit::detail
