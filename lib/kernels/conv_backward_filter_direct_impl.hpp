// The NCHW direct backward filter (conv_backward_filter_direct.hpp) over an 8-lane vector type F:
// Avx2Floats, or Avx512YmmFloats (opmask loads, one permute for stride 2's even lanes, 32
// registers), and for blocks of several output channels P, F itself or Avx512ChannelPairs (two
// channels' 8-lane accumulators in one 512-bit vector), for blocks of three T, F itself or
// Avx512ChannelTriples (a pair's vector and the third channel's 8 lanes), and for two depthwise
// groups at once G, F itself (no such blocks) or Avx512GroupPairs. The contract fixes 8
// lanes whatever the ISA: each lane's chain takes the pixels ow = lane mod 8 in order, then a fixed
// horizontal sum, so both ISAs give the same bits. Include only from files compiled for F's ISA; internal linkage
// (lib/README.md, "One kernel, several ISAs").
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "conv_backward_filter_direct.hpp"
#include "lane_columns.hpp"
#include "threads.hpp"

namespace convjit::detail {
namespace {

constexpr int64_t kMaxWidth = 7;  // kernel widths with a register-blocked variant
// oc x ic per group: the few the kernel is made for. Up to the second figure it also beats the
// register tile over packed patches at W stride 1 and kernel widths from 3, where that tile is the
// only other kernel (bench/RESULTS.md, "Session 32"; at W stride 2 it lost on AVX2).
constexpr int64_t kMaxChannelPairs = 64;
constexpr int64_t kMaxChannelPairsInsteadOfTile = 1024;

// The accumulators a block may hold: the registers less the dy, input and mask temporaries.
template <typename F>
constexpr int kAccumulators = F::kRegisters - 4;

float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_shuffle_ps(quarter, quarter, 1)));
}

template <typename F>
constexpr int64_t kVecFloats = sizeof(typename F::Vec) / sizeof(float);

// Whether F's halves hold two depthwise groups, each with its own inputs (Avx512GroupPairs).
template <typename F>
constexpr bool kGroupsInHalves = requires {
  F::kGroupsInHalves;
};

// Output channels a vector of F holds (one 8-lane accumulator each), and the registers it takes.
template <typename F>
constexpr int kChannelsPerVector = [] {
  if constexpr (requires { F::kChannels; }) return F::kChannels;
  return 1;
}();
template <typename F>
constexpr int kRegistersPerVector = [] {
  if constexpr (requires { F::kRegistersPerVector; }) return F::kRegistersPerVector;
  return 1;
}();

// Vectors of F for ocb output channels.
template <typename F>
constexpr int channel_vectors(int ocb) {
  return (ocb + kChannelsPerVector<F> - 1) / kChannelsPerVector<F>;
}

// Vector v of a block of Ocb channels' dy at p (channel 0's pixels; channels dy_channel apart): a
// pair's second channel past the block repeats its first, computed and not stored. Vectors of
// three channels serve only blocks they fill.
template <typename F, int Ocb, typename... Lanes>
inline __attribute__((always_inline)) typename F::Vec load_dy(const float* p, int64_t dy_channel, int v,
                                                              Lanes... lanes) {
  constexpr int kChannels = kChannelsPerVector<F>;
  static_assert(kChannels <= 2 || Ocb % kChannels == 0, "a vector of more than two channels is filled");
  if constexpr (kChannels == 1) {
    return F::load(p + v * dy_channel, lanes...);
  } else {
    const int first = kChannels * v;
    return F::load_channels(p + first * dy_channel, first + 1 < Ocb ? dy_channel : 0, lanes...);
  }
}

// An accumulator stored whole between calls, and loaded back: member by member where a vector has
// several (copied as one object, it would be kept in memory, not registers).
template <typename F>
inline __attribute__((always_inline)) void save_vector(float* p, typename F::Vec v) {
  if constexpr (requires { F::save(p, v); }) {
    F::save(p, v);
  } else {
    std::memcpy(p, &v, sizeof v);
  }
}
template <typename F>
inline __attribute__((always_inline)) typename F::Vec restore_vector(const float* p) {
  if constexpr (requires { F::restore(p); }) {
    return F::restore(p);
  } else {
    typename F::Vec v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
}

// Output channel o's sum of its block's accumulator.
template <typename F>
float channel_sum(typename F::Vec v, int o) {
  if constexpr (kChannelsPerVector<F> == 1) {
    return horizontal_sum(v);
  } else {
    return horizontal_sum(F::channel(v, o % kChannelsPerVector<F>));
  }
}

// A vector's inputs at `at`: the same pixels in every half, or (group pairs) the first group's in
// the low half and the second's, group_step floats on, in the high one.
template <typename F, int Stride>
inline __attribute__((always_inline)) typename F::Vec body_inputs(const float* at, int64_t group_step) {
  if constexpr (!kGroupsInHalves<F>) {
    return load_real_inputs<F, Stride>(at, 0);
  } else if constexpr (Stride == 1) {
    return F::load_groups(at, group_step);
  } else {
    return F::load_even_groups(at, group_step);
  }
}
// The same for an edge vector's tap kw: zero where not real.
template <typename F, int KW, int Stride>
inline __attribute__((always_inline)) typename F::Vec edge_inputs(const typename ColumnPlan<F, KW, Stride>::Edge& edge,
                                                                  const float* at, int kw, int64_t group_step) {
  if constexpr (!kGroupsInHalves<F>) {
    return load_edge_inputs<F, KW, Stride>(edge, at, kw);
  } else if constexpr (Stride == 1) {
    return F::load_groups(at, group_step, edge.taps[kw][0]);
  } else {
    return F::load_even_groups(at, group_step, edge.taps[kw][0], edge.taps[kw][1]);
  }
}

// Whether a block of ocb output channels over `rows` kernel rows takes the input walk (RowWalk):
// blocks of one register, whose accumulators, a dy vector per kernel row and the input (at stride
// 2 its two loads and the permute's indices) fit the registers. Blocks of several registers lost
// on it (a dy vector per kernel row and channel vector: bench/RESULTS.md, "Session 35").
template <typename F>
constexpr bool input_walk_fits(int ocb, int rows, int kw, int stride) {
  return rows > 1 && channel_vectors<F>(ocb) * kRegistersPerVector<F> == 1 &&
         rows * kw + rows + (stride == 1 ? 1 : 3) <= F::kRegisters;
}

// What a row call holds fixed: one dy row against the input rows of the block's kernel rows (an
// output row), or one input row against the dy rows it meets through each kernel row (an input
// row, at H stride 1: each input vector loaded once per W tap, not once per tap). Either way each
// accumulator takes its dy rows in order, and a row's vectors in the same order, so both give the
// same bits.
enum class RowWalk { Output, Input };

// One row's share of the accumulators (Ocb output channels' vectors x Rows x KW): every column
// vector of the output channels' dy rows (y.channel apart) against the input rows of the taps.
// Output walk: dy_rows[0] against rows[r] (null: a row in the padding, zero products, skipped;
// only when MayBePadded). Input walk: rows[0] against dy_rows[r] (null: no output row meets it
// through kernel row r).
template <typename F, int Ocb, int Rows, int KW, int Stride, bool MayBePadded, RowWalk Walk>
inline __attribute__((always_inline)) void accumulate_row(const ConvGeometry& g,
                                                          const ColumnPlan<F, KW, Stride>& columns, int64_t step_w,
                                                          const float* const (&rows)[Rows],
                                                          const float* const (&dy_rows)[Rows],
                                                          typename F::Vec (&acc)[channel_vectors<F>(Ocb)][Rows][KW]) {
  constexpr int V = channel_vectors<F>(Ocb);
  constexpr int kDyRows = Walk == RowWalk::Input ? Rows : 1;
  const int64_t dy_channel = g.y.channel, group_step = g.x.channel;
  // The vector at ow, its dy from dy_at(address, channel vector) and its inputs from
  // inputs_at(address, kw).
  auto vector_at = [&](int64_t ow, auto&& dy_at, auto&& inputs_at) __attribute__((always_inline)) {
    typename F::Vec grad[kDyRows][V];
#pragma GCC unroll 4
    for (int q = 0; q < kDyRows; ++q) {
#pragma GCC unroll 4
      for (int o = 0; o < V; ++o) {
        grad[q][o] = Walk == RowWalk::Input && !dy_rows[q] ? F::zero() : dy_at(dy_rows[q] + ow, o);  // zero: unused
      }
    }
    const int64_t first_w = first_input_column(g, ow);
    if constexpr (Walk == RowWalk::Input) {
#pragma GCC unroll 8
      for (int kw = 0; kw < KW; ++kw) {
        const typename F::Vec in = inputs_at(rows[0] + first_w + kw * step_w, kw);
#pragma GCC unroll 4
        for (int r = 0; r < Rows; ++r) {
          if (!dy_rows[r]) continue;
#pragma GCC unroll 4
          for (int o = 0; o < V; ++o) acc[o][r][kw] = F::fma(grad[r][o], in, acc[o][r][kw]);
        }
      }
    } else {
#pragma GCC unroll 4
      for (int r = 0; r < Rows; ++r) {
        if (MayBePadded && !rows[r]) continue;
#pragma GCC unroll 8
        for (int kw = 0; kw < KW; ++kw) {
          const typename F::Vec in = inputs_at(rows[r] + first_w + kw * step_w, kw);
#pragma GCC unroll 4
          for (int o = 0; o < V; ++o) acc[o][r][kw] = F::fma(grad[0][o], in, acc[o][r][kw]);
        }
      }
    }
  };
  for (int64_t ow = columns.body_begin; ow < columns.body_end; ow += 8) {
    vector_at(
        ow, [&](const float* p, int o) { return load_dy<F, Ocb>(p, dy_channel, o); },
        [&](const float* p, int) { return body_inputs<F, Stride>(p, group_step); });
  }
  for (int e = 0; e < columns.edge_count; ++e) {
    const auto& edge = columns.edges[e];
    vector_at(
        edge.ow, [&](const float* p, int o) { return load_dy<F, Ocb>(p, dy_channel, o, edge.lanes); },
        [&](const float* p, int kw) { return edge_inputs<F, KW, Stride>(edge, p, kw, group_step); });
  }
}

// Where a block's accumulators wait between the images a call takes (Images), and what it owes dw.
struct Images {
  int64_t begin = 0, end = 0;  // this call's images
  float* saved = nullptr;      // the task's accumulators: loaded unless begin is 0, stored unless end is the batch
  // The images of the accumulators `floats` on (none where the whole batch runs in one call).
  Images from(int64_t floats) const { return {begin, end, saved ? saved + floats : nullptr}; }
};

// Floats of one block's saved accumulators: at most a vector file per kernel row.
template <typename... Types>
int64_t saved_floats_per_block(const ConvGeometry& g) {
  constexpr int64_t kPerRow =
      std::max({Types::kRegisters / kRegistersPerVector<Types> * sizeof(typename Types::Vec)...}) / sizeof(float);
  return g.kernel[0] * g.kernel[1] * kPerRow;
}

// dw[oc0..oc0+Ocb)[ic][kd][kh0..kh0+Rows)[0..KW) for one group: the accumulators stay in registers
// while the call's images and their output rows stream by, each input vector loaded once for all
// output channels and each dy vector once for all taps; each accumulator sees its pixels in the same
// order whatever the blocking, and is stored whole between calls, so every blocking of channels and
// images gives the same bits.
template <typename F, int Ocb, int Rows, int KW, int Stride>
void channel_block(const ConvGeometry& g, const ColumnPlan<F, KW, Stride>& columns, const float* x, const float* dy,
                   int64_t group, int64_t oc0, int64_t ic, const Images& images, float* dw) {
  const float* x_channel = x + (group * g.ic_per_group + ic) * g.x.channel;
  const float* dy_channel = dy + (group * g.oc_per_group + oc0) * g.y.channel;
  float* out = dw + (group * g.oc_per_group + oc0) * g.reduction + ic * g.taps;
  const int64_t step_w = g.flip ? -g.dilation[2] : g.dilation[2];
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    for (int64_t kh0 = 0; kh0 < g.kernel[1]; kh0 += Rows) {
      // Output rows [oh_begin, oh_end) read only real input rows for every tap of the block.
      int64_t oh_begin = 0, oh_end = g.out[1];
      for (int r = 0; r < Rows; ++r) {
        while (oh_begin < oh_end && input_coordinate(g, 1, oh_begin, kh0 + r) < 0) ++oh_begin;
        while (oh_end > oh_begin && input_coordinate(g, 1, oh_end - 1, kh0 + r) >= g.in[1]) --oh_end;
      }
      // Every loop over the accumulators is unrolled: one left indexed kept them in memory,
      // reloaded around every row (bench/RESULTS.md, "Session 22").
      constexpr int V = channel_vectors<F>(Ocb);
      typename F::Vec acc[V][Rows][KW];
      float* saved = images.from((kd * g.kernel[1] + kh0) * int64_t(sizeof acc / Rows / sizeof(float))).saved;
#pragma GCC unroll 4
      for (int o = 0; o < V; ++o) {
#pragma GCC unroll 4
        for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 8
          for (int kw = 0; kw < KW; ++kw) {
            acc[o][r][kw] = F::zero();
            if (images.begin > 0) acc[o][r][kw] = restore_vector<F>(saved + ((o * Rows + r) * KW + kw) * kVecFloats<F>);
          }
        }
      }
      for (int64_t n = images.begin; n < images.end; ++n) {
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = input_coordinate(g, 0, od, kd);
          if (id < 0 || id >= g.in[0]) continue;  // padding: zero products
          const float* plane = x_channel + n * g.x.batch + id * g.x.spatial[0];
          const float* dy_plane = dy_channel + n * g.y.batch + od * g.y.spatial[0];
          if constexpr (input_walk_fits<F>(Ocb, Rows, KW, Stride)) {
            if (g.stride[1] == 1) {
              // Input rows in order; kernel row r meets output row ih - input_coordinate(0, r).
              int64_t ih_begin = g.in[1], ih_end = 0;
              for (int r = 0; r < Rows; ++r) {
                ih_begin = std::min(ih_begin, input_coordinate(g, 1, 0, kh0 + r));
                ih_end = std::max(ih_end, input_coordinate(g, 1, g.out[1] - 1, kh0 + r) + 1);
              }
              for (int64_t ih = std::max<int64_t>(0, ih_begin); ih < std::min(g.in[1], ih_end); ++ih) {
                const float* rows[Rows] = {plane + ih * g.x.spatial[1]};
                const float* dy_rows[Rows];
                for (int r = 0; r < Rows; ++r) {
                  const int64_t oh = ih - input_coordinate(g, 1, 0, kh0 + r);
                  dy_rows[r] = oh >= 0 && oh < g.out[1] ? dy_plane + oh * g.y.spatial[1] : nullptr;
                }
                accumulate_row<F, Ocb, Rows, KW, Stride, false, RowWalk::Input>(g, columns, step_w, rows, dy_rows, acc);
              }
              continue;
            }
          }
          // Output rows where some of the block's kernel rows meet the padding (a block of one row
          // would read nothing real there: it skips them).
          auto padded_row = [&](int64_t oh) {
            const float* rows[Rows];
            for (int r = 0; r < Rows; ++r) {
              const int64_t ih = input_coordinate(g, 1, oh, kh0 + r);
              rows[r] = ih >= 0 && ih < g.in[1] ? plane + ih * g.x.spatial[1] : nullptr;
            }
            const float* dy_rows[Rows] = {dy_plane + oh * g.y.spatial[1]};
            accumulate_row<F, Ocb, Rows, KW, Stride, true, RowWalk::Output>(g, columns, step_w, rows, dy_rows, acc);
          };
          if constexpr (Rows > 1) {
            for (int64_t oh = 0; oh < oh_begin; ++oh) padded_row(oh);
          }
          for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
            // Formed per row, not stepped: a pointer stepped past the last row would leave x.
            const float* rows[Rows];
            for (int r = 0; r < Rows; ++r) rows[r] = plane + input_coordinate(g, 1, oh, kh0 + r) * g.x.spatial[1];
            const float* dy_rows[Rows] = {dy_plane + oh * g.y.spatial[1]};
            accumulate_row<F, Ocb, Rows, KW, Stride, false, RowWalk::Output>(g, columns, step_w, rows, dy_rows, acc);
          }
          if constexpr (Rows > 1) {
            for (int64_t oh = std::max(oh_begin, oh_end); oh < g.out[1]; ++oh) padded_row(oh);
          }
        }
      }
      if (images.end < g.batch) {
#pragma GCC unroll 4
        for (int o = 0; o < V; ++o) {
#pragma GCC unroll 4
          for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 8
            for (int kw = 0; kw < KW; ++kw)
              save_vector<F>(saved + ((o * Rows + r) * KW + kw) * kVecFloats<F>, acc[o][r][kw]);
          }
        }
        continue;
      }
#pragma GCC unroll 4
      for (int o = 0; o < Ocb; ++o) {
#pragma GCC unroll 4
        for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 8
          for (int kw = 0; kw < KW; ++kw) {
            out[o * g.reduction + (kd * g.kernel[1] + kh0 + r) * KW + kw] =
                channel_sum<F>(acc[o / kChannelsPerVector<F>][r][kw], o);
          }
        }
      }
    }
  }
}

// Whether a block of ocb output channels over `rows` kernel rows keeps everything its row loop holds
// in registers: the accumulators, a dy vector per channel vector and the input (at stride 2 its
// two loads and the permute's indices).
template <typename F>
constexpr bool rows_fit_registers(int ocb, int rows, int kw, int stride) {
  const int vectors = channel_vectors<F>(ocb);
  return (vectors * rows * kw + vectors + (stride == 1 ? 1 : 3)) * kRegistersPerVector<F> <= F::kRegisters;
}

// The columns of a call for each vector type: blocks of one output channel run on F, of three on
// T, of two groups (depthwise) on G, the others on P (each planned only where it is not an
// earlier one).
template <typename F, typename P, typename T, typename G, int KW, int Stride>
struct BlockColumns {
  ColumnPlan<F, KW, Stride> one;
  ColumnPlan<P, KW, Stride> several;
  ColumnPlan<T, KW, Stride> three;
  ColumnPlan<G, KW, Stride> two_groups;
  BlockColumns(const ConvGeometry& g, bool group_pairs) : one(plan_columns<F, KW, Stride>(g)) {
    if constexpr (!std::is_same_v<P, F>) several = plan_columns<P, KW, Stride>(g);
    if constexpr (!std::is_same_v<T, F> && !std::is_same_v<T, P>) three = plan_columns<T, KW, Stride>(g);
    if constexpr (!std::is_same_v<G, F>) {
      if (group_pairs) two_groups = plan_columns<G, KW, Stride>(g);
    }
  }
  template <typename B>
  const ColumnPlan<B, KW, Stride>& of() const {
    if constexpr (std::is_same_v<B, F>) {
      return one;
    } else if constexpr (std::is_same_v<B, P>) {
      return several;
    } else if constexpr (std::is_same_v<B, T>) {
      return three;
    } else {
      return two_groups;
    }
  }
};

// A block of Ocb output channels on B over the kernel's whole height at once (each dy vector
// loaded once for all the taps) where it fits the registers and the kernel is 3 high, or 2 high
// and at most 3 wide (where a dy load is the largest share of a row's loads), else one kernel row
// at a time, so a block never covers rows past the kernel. Each height blocked is a variant of
// every block, width and stride, and the sanitized trees compile them slowly (bench/RESULTS.md,
// "Session 36").
template <typename B, int Ocb, int KW, int Stride>
void block_rows(const ConvGeometry& g, const ColumnPlan<B, KW, Stride>& plan, const float* x, const float* dy,
                int64_t group, int64_t oc0, int64_t ic, const Images& images, float* dw) {
  if constexpr (rows_fit_registers<B>(Ocb, 3, KW, Stride)) {
    if (g.kernel[1] == 3) return channel_block<B, Ocb, 3, KW, Stride>(g, plan, x, dy, group, oc0, ic, images, dw);
  }
  if constexpr (KW <= 3 && rows_fit_registers<B>(Ocb, 2, KW, Stride)) {
    if (g.kernel[1] == 2) return channel_block<B, Ocb, 2, KW, Stride>(g, plan, x, dy, group, oc0, ic, images, dw);
  }
  channel_block<B, Ocb, 1, KW, Stride>(g, plan, x, dy, group, oc0, ic, images, dw);
}

template <typename F, typename P, typename T, typename G, int Ocb, int KW, int Stride>
void block_of_channels(const ConvGeometry& g, const BlockColumns<F, P, T, G, KW, Stride>& columns, const float* x,
                       const float* dy, int64_t group, int64_t oc0, int64_t ic, const Images& images, float* dw) {
  using B = std::conditional_t<Ocb == 1, F, std::conditional_t<Ocb == 3, T, P>>;
  block_rows<B, Ocb, KW, Stride>(g, columns.template of<B>(), x, dy, group, oc0, ic, images, dw);
}

// The most output channels (up to 4) a one-row block of P holds in its accumulators.
template <typename P, int KW>
constexpr int max_block_channels() {
  int ocb = 4;
  while (ocb > 1 && channel_vectors<P>(ocb) * KW > kAccumulators<P>) --ocb;
  return ocb;
}

// Output channels [oc0, oc0 + count) of one input channel, in blocks of up to 4 that share each
// input load (a row of a 3x3 on 8-lane vectors: 12 FMAs per 4 dy and 3 x loads, against 9 per 10
// one channel at a time over its three rows; channel pairs halve the FMAs and the dy vectors).
// Each block's accumulators wait in `images.saved`, one after another.
template <typename F, typename P, typename T, typename G, int KW, int Stride>
void channels(const ConvGeometry& g, const BlockColumns<F, P, T, G, KW, Stride>& columns, const float* x,
              const float* dy, int64_t group, int64_t oc0, int64_t count, int64_t ic, Images images, float* dw) {
  constexpr int kMaxOcb = max_block_channels<P, KW>();
  const int64_t block_saved = saved_floats_per_block<F, P, T, G>(g);
  for (int64_t block = 0; count > 0; ++block, oc0 += kMaxOcb, count -= kMaxOcb) {
    const Images at = images.from(block * block_saved);
    switch (std::min<int64_t>(count, kMaxOcb)) {
      case 1: block_of_channels<F, P, T, G, 1, KW, Stride>(g, columns, x, dy, group, oc0, ic, at, dw); break;
      case 2:
        if constexpr (kMaxOcb >= 2)
          block_of_channels<F, P, T, G, 2, KW, Stride>(g, columns, x, dy, group, oc0, ic, at, dw);
        break;
      case 3:
        if constexpr (kMaxOcb >= 3)
          block_of_channels<F, P, T, G, 3, KW, Stride>(g, columns, x, dy, group, oc0, ic, at, dw);
        break;
      default:
        if constexpr (kMaxOcb >= 4)
          block_of_channels<F, P, T, G, 4, KW, Stride>(g, columns, x, dy, group, oc0, ic, at, dw);
        break;
    }
  }
}

// Tasks: (group, block of output channels, input channel). Blocks of up to 4 share the input
// loads; with few channels (the seed network: 3 x 3 tasks at most), smaller blocks only where a
// thread would otherwise have no task, since each block reads the inputs again. Depthwise problems
// take two groups a task where G holds them (one instruction for both groups' chains) and there
// are enough groups for every thread, the last of an odd count alone. Any blocking gives the same bits. The columns are
// planned once per call (for each vector type). A thread takes a range of consecutive tasks (a block's input channels
// one after another) and runs them over a chunk of images at a time: the chunk's x and dy stay in the core's L2 while
// every task of the range reads them, where each task streaming the whole batch read dy from memory once per input
// channel and x once per block. Between chunks the accumulators wait in the thread's scratch.
template <typename F, typename P, typename T, typename G, int KW, int Stride>
void direct(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  // Pairs where every thread still gets a task.
  const int64_t groups_per_task =
      !std::is_same_v<G, F> && g.oc_per_group == 1 && g.ic_per_group == 1 && g.groups / 2 >= threads ? 2 : 1;
  const BlockColumns<F, P, T, G, KW, Stride> columns(g, groups_per_task == 2);
  const int64_t group_tasks = (g.groups + groups_per_task - 1) / groups_per_task;
  int64_t block_size = 4;
  while (block_size > 1 && group_tasks * ((g.oc_per_group + block_size - 1) / block_size) * g.ic_per_group < threads) {
    block_size /= 2;
  }
  const int64_t oc_blocks = (g.oc_per_group + block_size - 1) / block_size, per_group = oc_blocks * g.ic_per_group;
  const int64_t tasks = group_tasks * per_group;
  const int64_t image_floats =
      groups_per_task * (g.ic_per_group * g.in[0] * g.in[1] * g.in[2] + g.oc_per_group * g.out_pixels());
  const int64_t chunk = std::max<int64_t>(1, l2_cache_bytes() / 2 / int64_t(sizeof(float)) / image_floats);
  constexpr int64_t kMaxOcb = max_block_channels<P, KW>();
  const int64_t task_saved = (block_size + kMaxOcb - 1) / kMaxOcb * saved_floats_per_block<F, P, T, G>(g);
  // Ranges for the threads, and enough that a range's accumulators fit the scratch. Where the whole
  // batch fits the cache (the seed network), a task per range.
  const int64_t ranges =
      std::min(tasks, std::max(threads <= 1 ? 1 : tasks_wanted(threads),
                               (tasks * task_saved + int64_t(kScratchFloats) - 1) / int64_t(kScratchFloats)));
  int64_t range_tasks = (tasks + ranges - 1) / ranges;
  const bool in_chunks = chunk < g.batch && range_tasks * task_saved <= int64_t(kScratchFloats);
  if (!in_chunks) range_tasks = 1;
  parallel_for(threads, (tasks + range_tasks - 1) / range_tasks, g.flops(), [&](int64_t range) {
    const int64_t first = range * range_tasks, end = std::min(tasks, first + range_tasks);
    float* saved = in_chunks ? thread_scratch(size_t((end - first) * task_saved)) : nullptr;
    const int64_t images_per_call = in_chunks ? chunk : g.batch;
    for (int64_t n0 = 0; n0 < g.batch; n0 += images_per_call) {
      for (int64_t task = first; task < end; ++task) {
        const int64_t group = task / per_group * groups_per_task, block = task % per_group / g.ic_per_group;
        const int64_t ic = task % g.ic_per_group;
        const int64_t oc0 = block * block_size, count = std::min<int64_t>(block_size, g.oc_per_group - oc0);
        const Images images =
            Images{n0, std::min(g.batch, n0 + images_per_call), saved}.from((task - first) * task_saved);
        if (groups_per_task == 2 && group + 1 < g.groups) {
          block_rows<G, 2, KW, Stride>(g, columns.template of<G>(), x, dy, group, 0, 0, images, dw);
        } else {
          channels<F, P, T, G, KW, Stride>(g, columns, x, dy, group, oc0, count, ic, images, dw);
        }
      }
    }
    F::leave();
  });
}

template <typename F, typename P, typename T, typename G, int Stride>
void direct_any_width(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  switch (g.kernel[2]) {
    case 1: return direct<F, P, T, G, 1, Stride>(g, threads, x, dy, dw);
    case 2: return direct<F, P, T, G, 2, Stride>(g, threads, x, dy, dw);
    case 3: return direct<F, P, T, G, 3, Stride>(g, threads, x, dy, dw);
    case 4: return direct<F, P, T, G, 4, Stride>(g, threads, x, dy, dw);
    case 5: return direct<F, P, T, G, 5, Stride>(g, threads, x, dy, dw);
    case 6: return direct<F, P, T, G, 6, Stride>(g, threads, x, dy, dw);
    default: return direct<F, P, T, G, 7, Stride>(g, threads, x, dy, dw);
  }
}

// The shapes the kernel takes, whatever the ISA (the ISA files add the host's).
inline bool backward_filter_direct_fits(const ConvGeometry& g, DirectFilterScope scope) {
  const int64_t pairs = g.oc_per_group * g.ic_per_group;
  const bool channels_fit =
      pairs <= kMaxChannelPairs || (scope == DirectFilterScope::InsteadOfTile &&
                                    pairs <= kMaxChannelPairsInsteadOfTile && g.kernel[2] >= 3 && g.stride[2] == 1);
  return g.layout == CONVJIT_NCHW && (g.stride[2] == 1 || g.stride[2] == 2) && g.kernel[2] <= kMaxWidth &&
         channels_fit && w_positions_fit_lanes(g) && edge_vectors(g, 8) <= kMaxEdgeVectors;
}

template <typename F, typename P, typename T, typename G>
void run_backward_filter_direct(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  static_assert(F::kLanes == 8 && P::kLanes == 8 && T::kLanes == 8 && G::kLanes == 8,
                "the contract's chains are by ow mod 8");
  if (g.stride[2] == 1) return direct_any_width<F, P, T, G, 1>(g, threads, x, dy, dw);
  direct_any_width<F, P, T, G, 2>(g, threads, x, dy, dw);
}

}  // namespace
}  // namespace convjit::detail
