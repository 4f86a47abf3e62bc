// Tier 0's NCHW depthwise backward data at W stride 2 (conv_depthwise_nchw_backward_data.hpp),
// written once over a vector type F (simd_avx2.hpp, simd_avx512.hpp). Include from one file per
// ISA, compiled with its flags; internal linkage (lib/README.md, "One kernel, several ISAs").
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "conv_depthwise_nchw_backward_data.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

constexpr int kMaxPhaseTaps = 3;                      // W taps of a phase: kernels up to 6 wide
constexpr int64_t kPositionLimit = int64_t(1) << 30;  // W positions compared in int32 lanes
// Pairs of a row that are not body: at most one before it (a phase reads at most 2 columns left of
// its j, fewer than a vector) and two after (the last pair, and one over the columns that reach
// past dy's end by at most 3).
constexpr int kMaxEdgePairs = 3;
// The tap-row plan's slots (D x H taps per dx row): 16 bytes each, in the calling thread's
// operand buffer; taller planes or kernels run as the NHWC twin.
constexpr int64_t kMaxTapRowSlots = int64_t(1) << 16;

// The W geometry every dx row shares, planned once per call. Phase r holds dx columns 2j + r, j
// in the lanes; its taps are the kw with kw = r + pad (mod 2), taken in dy's order (kw
// descending), tap t reading dy column j + shift[r][t] with weight column weight[r][t] (the mode
// applied). A vector pair at j covers dx columns [2j, 2j + 2 * F::kLanes).
template <typename F>
struct PhaseColumns {
  int taps[2] = {0, 0};
  int64_t shift[2][kMaxPhaseTaps] = {}, weight[2][kMaxPhaseTaps] = {};
  int64_t body_begin = 0, body_end = 0;  // pairs whose loads lie in dy and stores in dx
  struct Edge {
    int64_t j;
    typename F::Mask load[2][kMaxPhaseTaps];  // the dy columns inside the row
    typename F::Mask store[2];                // the dx columns inside the row (low and high zip)
  };
  int edge_count = 0;
  Edge edges[kMaxEdgePairs];
};

// An edge's masked vector at `at` + offset floats, formed as an address: its first lanes may lie
// before dy (a phase's columns left of j), its last past the end of dx (the high zip's), masked.
template <typename T>
inline T* lanes_at(T* at, int64_t offset) {
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(at) + uintptr_t(offset * int64_t(sizeof(float))));
}

inline int64_t pairs_end(const ConvGeometry& g) {  // the j of dx's last column, plus one
  return (g.in[2] + 1) / 2;
}

// The phases' taps and the body's pairs: scalar code, which the support test runs before the host's
// ISA is known.
template <typename F>
void plan_phase_taps(const ConvGeometry& g, PhaseColumns<F>* columns) {
  constexpr int64_t L = F::kLanes;
  const int64_t kw_count = g.kernel[2], pad = g.pad_begin[2];
  int64_t lowest = 0, highest = 0;
  for (int r = 0; r < 2; ++r) {
    int& taps = columns->taps[r];
    taps = 0;
    for (int64_t kw = kw_count - 1; kw >= 0; --kw) {
      if ((r + pad - kw) % 2 != 0) continue;
      columns->shift[r][taps] = (r + pad - kw) / 2;
      columns->weight[r][taps] = g.flip ? kw_count - 1 - kw : kw;
      lowest = std::min(lowest, columns->shift[r][taps]);
      highest = std::max(highest, columns->shift[r][taps]);
      ++taps;
    }
  }
  // Body: j >= -lowest, j + highest + L <= out, 2j + 2L <= in; pairs start at multiples of L.
  columns->body_begin = std::min((-lowest + L - 1) / L * L, pairs_end(g));
  const int64_t last = std::min(g.out[2] - highest - L, g.in[2] / 2 - L);  // the last body j
  columns->body_end = last < columns->body_begin ? columns->body_begin : last / L * L + L;
}

template <typename F>
int64_t edge_pairs(const ConvGeometry& g, const PhaseColumns<F>& columns) {
  const int64_t pairs = (pairs_end(g) + F::kLanes - 1) / F::kLanes;
  return pairs - (columns.body_end - columns.body_begin) / F::kLanes;
}

// The whole plan: the taps, and each edge pair's lane masks. Only on a host with F's ISA.
template <typename F>
void plan_phase_columns(const ConvGeometry& g, PhaseColumns<F>* columns) {
  constexpr int64_t L = F::kLanes;
  plan_phase_taps(g, columns);
  columns->edge_count = 0;
  for (int64_t j = 0; j < pairs_end(g); j += L) {
    if (j >= columns->body_begin && j < columns->body_end) continue;
    auto& edge = columns->edges[columns->edge_count++];
    edge.j = j;
    for (int r = 0; r < 2; ++r) {
      for (int t = 0; t < columns->taps[r]; ++t) edge.load[r][t] = F::lanes_between(j + columns->shift[r][t], g.out[2]);
    }
    for (int half = 0; half < 2; ++half) {
      edge.store[half] = F::first_lanes(std::clamp<int64_t>(g.in[2] - 2 * j - half * L, 0, L));
    }
  }
}

// A dy row that reaches a dx row: its offset in the channel's dy, and its weights' row in the
// channel's weights (the mode applied).
struct TapRow {
  int64_t dy, weight;
};

// The dy rows that reach each dx row (id, ih) of a plane, in dy's order (kd descending is od
// ascending, and likewise kh), planned once per call: the same for every channel and image.
// Found per row in the channel loop, the divisions and the branches over the taps cost more than a
// short row's FMAs. The rows are also listed by their count of tap rows, so that runs of rows
// with one, two or three take them in unrolled code (at H stride 2 the counts alternate).
struct RowTaps {
  int64_t per_row = 0;                // slots per dx row: kernel[0] * kernel[1]
  TapRow* rows = nullptr;             // per_row slots a dx row
  int64_t* dx_offset = nullptr;       // of each dx row in its channel's plane
  int64_t* by_count_begin = nullptr;  // by_count[by_count_begin[c] .. by_count_begin[c + 1]): the rows of c tap rows
  int32_t* counts = nullptr;
  int32_t* by_count = nullptr;
};

inline size_t row_taps_floats(const ConvGeometry& g) {
  const int64_t dx_rows = g.in[0] * g.in[1], per_row = g.kernel[0] * g.kernel[1];
  constexpr int64_t kFloatsPerTapRow = sizeof(TapRow) / sizeof(float),
                    kFloatsPerOffset = sizeof(int64_t) / sizeof(float);
  return size_t(dx_rows * (per_row * kFloatsPerTapRow + kFloatsPerOffset + 2) + (per_row + 2) * kFloatsPerOffset);
}

// In `storage`, row_taps_floats(g) floats.
inline RowTaps plan_row_taps(const ConvGeometry& g, float* storage) {
  const int64_t dx_rows = g.in[0] * g.in[1];
  RowTaps taps;
  taps.per_row = g.kernel[0] * g.kernel[1];
  taps.rows = reinterpret_cast<TapRow*>(storage);
  taps.dx_offset = reinterpret_cast<int64_t*>(taps.rows + dx_rows * taps.per_row);
  taps.by_count_begin = taps.dx_offset + dx_rows;
  taps.counts = reinterpret_cast<int32_t*>(taps.by_count_begin + taps.per_row + 2);
  taps.by_count = taps.counts + dx_rows;
  auto output_reaching = [&](int d, int64_t i, int64_t k) {  // the output whose tap k reads input i, or -1
    const int64_t span = i + g.pad_begin[d] - k * g.dilation[d];
    return span >= 0 && span % g.stride[d] == 0 && span / g.stride[d] < g.out[d] ? span / g.stride[d] : -1;
  };
  const int64_t kd_count = g.kernel[0], kh_count = g.kernel[1];
  std::fill(taps.by_count_begin, taps.by_count_begin + taps.per_row + 2, 0);
  for (int64_t id = 0; id < g.in[0]; ++id) {
    for (int64_t ih = 0; ih < g.in[1]; ++ih) {
      const int64_t row = id * g.in[1] + ih;
      int32_t count = 0;
      for (int64_t kd = kd_count - 1; kd >= 0; --kd) {
        const int64_t od = output_reaching(0, id, kd);
        for (int64_t kh = kh_count - 1; od >= 0 && kh >= 0; --kh) {
          const int64_t oh = output_reaching(1, ih, kh);
          if (oh < 0) continue;
          const int64_t weight_row = g.flip ? (kd_count - 1 - kd) * kh_count + kh_count - 1 - kh : kd * kh_count + kh;
          taps.rows[row * taps.per_row + count++] = {od * g.y.spatial[0] + oh * g.y.spatial[1],
                                                     weight_row * g.kernel[2]};
        }
      }
      taps.counts[row] = count;
      taps.dx_offset[row] = id * g.x.spatial[0] + ih * g.x.spatial[1];
      ++taps.by_count_begin[count + 1];
    }
  }
  // A counting sort: each count's begin, used as its cursor (ending at the next count's begin),
  // then moved back one place.
  int64_t* begin = taps.by_count_begin;
  for (int64_t c = 0; c <= taps.per_row; ++c) begin[c + 1] += begin[c];
  for (int64_t row = 0; row < dx_rows; ++row) taps.by_count[begin[taps.counts[row]]++] = int32_t(row);
  for (int64_t c = taps.per_row; c > 0; --c) begin[c] = begin[c - 1];
  begin[0] = 0;
  return taps;
}

// The pair of vectors at dy column j of one dx row: each phase's chain over the tap rows in dy's
// order, a row's W taps in order; load(at, r, t) gives phase r's tap t's dy lanes from `at`.
// Count: the row's tap rows where known at compile time, else 0 (count).
template <typename F, int T0, int T1, int Count, typename Load>
inline __attribute__((always_inline)) void phase_pair(const PhaseColumns<F>& columns, const TapRow* rows, int count,
                                                      const float* dy_j, const float* w, Load&& load,
                                                      typename F::Vec (&phase)[2]) {
  phase[0] = phase[1] = F::zero();
#pragma GCC unroll 3
  for (int i = 0; i < (Count > 0 ? Count : count); ++i) {
    const float* at = dy_j + rows[i].dy;
    const float* weights = w + rows[i].weight;
#pragma GCC unroll 3
    for (int t = 0; t < T0; ++t)
      phase[0] = F::fma(load(at, 0, t), F::broadcast(weights + columns.weight[0][t]), phase[0]);
#pragma GCC unroll 3
    for (int t = 0; t < T1; ++t)
      phase[1] = F::fma(load(at, 1, t), F::broadcast(weights + columns.weight[1][t]), phase[1]);
  }
}

// The pairs at dy column j of the dx rows listed at taps.by_count[first, end) of one channel, a run
// of rows of each count of tap rows at a time: load(at, r, t) and store(at, phase) those of j's
// columns. Columns outer, rows inner, so a column's masks, shifts and weight columns
// stay in registers down the plane (a short row's own set-up cost more than its FMAs).
template <typename F, int T0, int T1, typename Load, typename Store>
inline __attribute__((always_inline)) void pairs_down_the_plane(const RowTaps& taps, const PhaseColumns<F>& columns,
                                                                int64_t first, int64_t end, const float* dy_j,
                                                                const float* w, float* dx_2j, Load&& load,
                                                                Store&& store) {
  typename F::Vec phase[2];
  auto rows_of = [&](auto count, int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const int32_t row = taps.by_count[i];
      phase_pair<F, T0, T1, decltype(count)::value>(columns, taps.rows + row * taps.per_row, taps.counts[row], dy_j, w,
                                                    load, phase);
      store(dx_2j + taps.dx_offset[row], phase);
    }
  };
  for (int64_t c = 0; c <= taps.per_row; ++c) {
    const int64_t lo = std::max(first, taps.by_count_begin[c]), hi = std::min(end, taps.by_count_begin[c + 1]);
    if (lo >= hi) continue;
    switch (c) {
      case 1: rows_of(std::integral_constant<int, 1>{}, lo, hi); break;
      case 2: rows_of(std::integral_constant<int, 2>{}, lo, hi); break;
      case 3: rows_of(std::integral_constant<int, 3>{}, lo, hi); break;
      default: rows_of(std::integral_constant<int, 0>{}, lo, hi);
    }
  }
}

// The rows listed at taps.by_count[first, end) of one channel of one image: the body's pairs, then
// each edge's.
template <typename F, int T0, int T1>
void channel_rows(const PhaseColumns<F>& columns, const RowTaps& taps, int64_t first, int64_t end, const float* dy,
                  const float* w, float* dx) {
  constexpr int64_t L = F::kLanes;
  using Vec = typename F::Vec;
  for (int64_t j = columns.body_begin; j < columns.body_end; j += L) {
    pairs_down_the_plane<F, T0, T1>(
        taps, columns, first, end, dy + j, w, dx + 2 * j,
        [&](const float* at, int r, int t) { return F::load(at + columns.shift[r][t]); },
        [](float* at, const Vec(&phase)[2]) {
          F::store(at, F::zip_low(phase[0], phase[1]));
          F::store(at + L, F::zip_high(phase[0], phase[1]));
        });
  }
  for (int e = 0; e < columns.edge_count; ++e) {
    const auto edge = columns.edges[e];
    pairs_down_the_plane<F, T0, T1>(
        taps, columns, first, end, dy + edge.j, w, dx + 2 * edge.j,
        [&](const float* at, int r, int t) { return F::load(lanes_at(at, columns.shift[r][t]), edge.load[r][t]); },
        [&](float* at, const Vec(&phase)[2]) {
          F::store(at, F::zip_low(phase[0], phase[1]), edge.store[0]);
          F::store(lanes_at(at, L), F::zip_high(phase[0], phase[1]), edge.store[1]);
        });
  }
}

template <typename F>
bool depthwise_nchw_backward_data_fits(const ConvGeometry& g) {
  if (g.layout != CONVJIT_NCHW || g.ic_per_group != 1 || g.oc_per_group != 1) return false;
  if (g.stride[2] != 2 || g.dilation[2] != 1 || g.kernel[2] < 2 || g.kernel[2] > 2 * kMaxPhaseTaps) return false;
  if (g.in[0] * g.in[1] * g.kernel[0] * g.kernel[1] > kMaxTapRowSlots) return false;
  if (g.in[2] >= kPositionLimit || g.out[2] >= kPositionLimit || g.pad_begin[2] >= kPositionLimit) return false;
  PhaseColumns<F> columns;
  plan_phase_taps(g, &columns);
  if (edge_pairs(g, columns) > kMaxEdgePairs) return false;  // a guard: kMaxEdgePairs' bound says never
  // Where every pair of a row is an edge, every store is masked: cheap with opmasks (AVX-512), but
  // AVX2's vector-masked stores take several uops (microcode on AMD), and there the NHWC twin was
  // faster (bench/RESULTS.md, session 31).
  return F::kOpmasks || columns.body_begin < columns.body_end;
}

template <typename F>
void run_depthwise_nchw_backward_data(const ConvGeometry& g, int threads, const float* dy, const float* w, float* dx) {
  PhaseColumns<F> columns;
  plan_phase_columns(g, &columns);  // fits: checked by the caller
  const RowTaps taps = plan_row_taps(g, thread_operands(row_taps_floats(g)));
  // Tasks of a channel's plane, split into bands of its rows (in by_count's order) where the planes
  // are fewer than the tasks the threads want (each dx element is computed whole in one pair: any
  // split gives its bits).
  const int64_t planes = g.batch * g.groups, rows = g.in[0] * g.in[1];
  const int64_t bands = std::clamp<int64_t>((tasks_wanted(threads) + planes - 1) / planes, 1, rows);
  const int64_t band_rows = (rows + bands - 1) / bands;
  auto run = [&](auto taps_0, auto taps_1) {
    constexpr int T0 = decltype(taps_0)::value, T1 = decltype(taps_1)::value;
    parallel_for(threads, planes * bands, g.flops(), [&](int64_t task) {
      const int64_t plane = task / bands, row0 = task % bands * band_rows;
      const int64_t n = plane / g.groups, c = plane % g.groups;
      channel_rows<F, T0, T1>(columns, taps, row0, std::min(rows, row0 + band_rows),
                              dy + n * g.y.batch + c * g.y.channel, w + c * g.taps,
                              dx + n * g.x.batch + c * g.x.channel);
    });
  };
  // Kernels 2 to 6 wide: the phases' tap counts differ by at most one.
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  using Three = std::integral_constant<int, 3>;
  switch (columns.taps[0] * 4 + columns.taps[1]) {
    case 1 * 4 + 1: run(One{}, One{}); break;
    case 1 * 4 + 2: run(One{}, Two{}); break;
    case 2 * 4 + 1: run(Two{}, One{}); break;
    case 2 * 4 + 2: run(Two{}, Two{}); break;
    case 2 * 4 + 3: run(Two{}, Three{}); break;
    case 3 * 4 + 2: run(Three{}, Two{}); break;
    default: run(Three{}, Three{});
  }
  F::leave();
}

}  // namespace
}  // namespace convjit::detail
