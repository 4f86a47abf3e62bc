#include "pool_nchw.hpp"

#include <algorithm>

#include "steps.hpp"

namespace convjit::detail {

bool make_nchw_pool_walk(const PoolGeometry& g, int64_t lanes, NchwPoolWalk* walk) {
  const int64_t s = g.stride[2], pad = g.pad_begin[2], taps = g.window[2], dilation = g.dilation[2];
  const int64_t in = g.in[2], out = g.out[2];
  constexpr int64_t kLimit = int64_t(1) << 30;
  constexpr double kMaxTaps = double(1 << 24);
  if ((s != 1 && s != 2) || lanes > NchwPoolWalk::kMaxLanes || in >= kLimit || pad >= kLimit ||
      double(out) * double(s) + double(lanes) * double(s) >= double(kLimit) ||
      double(taps - 1) * double(dilation) >= double(kLimit) ||
      double(g.window[0]) * double(g.window[1]) * double(taps) > kMaxTaps ||
      double(g.dilation[0]) * double(g.in[1]) >= double(kLimit) || g.dilation[1] >= kLimit) {
    return false;
  }
  NchwPoolWalk w;
  w.lanes = lanes;
  w.vectors = (out + lanes - 1) / lanes;
  const int64_t span = lanes * s, reach = (taps - 1) * dilation;
  // Vector k's lanes have every W tap real when its first tap is at or after the row's start, its
  // last lane's last tap before the row's end, and it is whole.
  w.whole_begin = std::min(w.vectors, ceil_div(pad, span));
  const int64_t last_whole = std::min(out / lanes, floor_div(in - 1 + pad - reach - (lanes - 1) * s, span) + 1);
  w.whole_end = std::clamp(last_whole, w.whole_begin, w.vectors);
  if (w.vectors - (w.whole_end - w.whole_begin) > NchwPoolWalk::kMaxEdgeVectors) return false;
  int64_t edge = 0;
  for (int64_t k = 0; k < w.vectors; ++k) {
    if (!w.is_edge(k)) continue;
    for (int64_t l = 0; l < lanes; ++l) {
      const int64_t o = k * lanes + l;
      const StepRange real = o < out ? steps_inside(o * s - pad, dilation, in, taps) : StepRange{0, 0};
      w.edge_taps[edge][l] = float(real.hi - real.lo);
    }
    ++edge;
  }
  // The floats of a row the loads reach, from lane 0's first tap (position -pad) to the last
  // vector's last load: a vector from each tap, or at stride 2 a pair of vectors (at dilation 1
  // two taps share one pair: an even count's last pair starts at its next-to-last tap).
  const bool pairs_of_two = s == 2 && dilation == 1 && taps % 2 == 0;
  const int64_t last_load = (w.vectors - 1) * span - pad + (taps - (pairs_of_two ? 2 : 1)) * dilation + span;
  w.step_d = g.dilation[0] * g.in[1];
  w.step_h = g.dilation[1];
  if (pad == 0 && last_load <= in) {
    w.pitch = in;
  } else {
    w.lead = pad;
    w.pitch = (pad + std::max(in, last_load) + lanes - 1) / lanes * lanes;  // whole vectors
    if (double(g.in[0]) * double(g.in[1]) * double(w.pitch) > double(kMaxPaddedFloats)) return false;
    w.padded_floats = g.in[0] * g.in[1] * w.pitch;
  }
  *walk = w;
  return true;
}

bool nchw_pool_windows_tile_in_place(const PoolGeometry& g, const NchwPoolWalk& walk) {
  for (int d = 0; d < 3; ++d) {
    if (g.stride[d] != g.window[d] || g.dilation[d] != 1 || g.pad_begin[d] != 0) return false;
  }
  return g.window[2] == 2 && walk.padded_floats == 0;
}

std::vector<NchwPoolRow> nchw_pool_rows(const PoolGeometry& g) {
  std::vector<NchwPoolRow> rows;
  rows.reserve(size_t(g.out[0] * g.out[1]));
  for (int64_t od = 0; od < g.out[0]; ++od) {
    const int64_t origin_d = od * g.stride[0] - g.pad_begin[0];
    const StepRange d = steps_inside(origin_d, g.dilation[0], g.in[0], g.window[0]);
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const int64_t origin_h = oh * g.stride[1] - g.pad_begin[1];
      const StepRange h = steps_inside(origin_h, g.dilation[1], g.in[1], g.window[1]);
      rows.push_back({(origin_d + d.lo * g.dilation[0]) * g.in[1] + origin_h + h.lo * g.dilation[1], d.hi - d.lo,
                      h.hi - h.lo, od * g.y.spatial[0] + oh * g.y.spatial[1]});
    }
  }
  return rows;
}

}  // namespace convjit::detail
