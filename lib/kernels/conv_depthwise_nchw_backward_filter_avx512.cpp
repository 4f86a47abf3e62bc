#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "conv_backward_filter_direct_impl.hpp"  // the domain, vector order and horizontal sum whose bits these are
#include "conv_depthwise_nchw_backward_filter.hpp"
#include "kernel_isa.hpp"
#include "lane_columns.hpp"
#include "patch_pack.hpp"
#include "simd_avx512.hpp"
#include "threads.hpp"

namespace convjit::detail::avx512 {
namespace {

using Pairs = Avx512GroupPairs;
constexpr int kPixels = 8;                // per group and vector: the direct kernel's chains
constexpr int kChunk = 2 * kPixels;       // input columns from one vector's first pixel to the next's
constexpr int64_t kMaxPadBegin = kChunk;  // so that only vector 0 reads the left padding
// The plan's bounds (no standard container here: lib/README.md, "One kernel, several ISAs").
constexpr int64_t kMaxVectors = 64;  // rows of up to 512 outputs
constexpr int64_t kMaxKernelRows = 32;

// Kernel rows a pass over the images holds: its accumulators (rows x KW), two chunks' split inputs,
// a vector's tap inputs and the permutes' indices fit the 32 registers.
template <int KW>
constexpr int kPassRows = KW <= 5 ? 3 : 2;

// Rows of up to this many vectors run unrolled, every vector's tap inputs formed once per input row
// and held in registers (vectors x KW of them) while each kernel row that meets it takes them; 0:
// none, longer rows walk their vectors in a loop.
template <int KW>
constexpr int kUnrolledVectors = KW == 3   ? 4
                                 : KW == 5 ? 2
                                           : 0;

// A kernel row's share of the walk: the output rows [first_oh, first_oh + count) read real input
// rows through it, from first_ih on, H stride apart.
struct KernelRow {
  int64_t first_ih = 0, first_oh = 0, count = 0;
};

// What every pair of groups shares, planned once per call. Vector v holds output pixels
// [8v, 8v + 8) of each group; its pixel l reads input column lowest + 16v + 2l + j through the tap
// j columns from the lowest (weight tap j, or KW - 1 - j in convolution mode), so vector v's
// inputs are chunks v and v + 1 of 16 columns from `lowest`.
struct Plan {
  int64_t vectors = 0;
  int64_t lowest = 0;
  __mmask16 chunk_columns[kMaxVectors + 1];  // per chunk (vectors + 1): its columns inside the row
  __mmask16 pixels[kMaxVectors];             // per vector: its pixels inside the row, in both halves
  // The direct kernel takes a row's body vectors, then its edges: where vector 0 reads the padding
  // and a body follows, it comes after body vector `left_edge_after`; else -1 (ow order).
  int64_t left_edge_after = -1;
  KernelRow kernel_rows[kMaxKernelRows];  // per kernel row, in weight order
};

template <int KW>
Plan plan_pairs(const ConvGeometry& g) {
  Plan plan;
  plan.vectors = (g.out[2] + kPixels - 1) / kPixels;
  plan.lowest = -g.pad_begin[2];
  for (int64_t q = 0; q <= plan.vectors; ++q) {
    plan.chunk_columns[q] = lanes_inside<Avx512Floats>(plan.lowest + kChunk * q, g.in[2]);
  }
  for (int64_t v = 0; v < plan.vectors; ++v) {
    const unsigned lanes = (1u << std::min<int64_t>(kPixels, g.out[2] - kPixels * v)) - 1;
    plan.pixels[v] = __mmask16(lanes | lanes << 8);
  }
  const auto columns = plan_columns<Avx512YmmFloats, KW, 2>(g);
  if (columns.body_begin > 0 && columns.body_begin < columns.body_end) {
    plan.left_edge_after = columns.body_end / kPixels - 1;
  }
  for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
    int64_t begin = 0, end = g.out[1];
    while (begin < end && input_coordinate(g, 1, begin, kh) < 0) ++begin;
    while (end > begin && input_coordinate(g, 1, end - 1, kh) >= g.in[1]) --end;
    plan.kernel_rows[kh] = {input_coordinate(g, 1, begin, kh), begin, end - begin};
  }
  return plan;
}

// Lane l of each half takes lane l + K of `low`'s half, past its end the next lanes of `high`'s.
template <int K>
__m512i half_shift() {
  alignas(64) int32_t index[16];
  for (int i = 0; i < 16; ++i) {
    const int half = i / 8, l = i % 8 + K;
    index[i] = l < 8 ? half * 8 + l : 16 + half * 8 + l - 8;
  }
  return _mm512_load_si512(index);
}

// A chunk of both groups' 16 columns, split into its even columns (8 a group, one per pixel) and
// its odd ones.
struct Split {
  __m512 even, odd;
};

template <int KW>
inline __attribute__((always_inline)) Split split_chunk(const float* first, const float* second, __mmask16 columns) {
  const __m512 a = _mm512_maskz_loadu_ps(columns, first), b = _mm512_maskz_loadu_ps(columns, second);
  const __m512 even = Avx512Floats::even_lanes(a, b);
  return {even, KW > 1 ? Avx512Floats::odd_lanes(a, b) : even};
}

// Tap j's inputs of a vector whose chunk is `chunk` and whose next one is `next`: the even (j even)
// or odd columns j / 2 on.
template <int KW>
inline __attribute__((always_inline)) void tap_inputs(const Split& chunk, const Split& next, const __m512i (&shift)[3],
                                                      __m512 (&inputs)[KW]) {
#pragma GCC unroll 8
  for (int j = 0; j < KW; ++j) {
    const __m512 low = j % 2 ? chunk.odd : chunk.even, high = j % 2 ? next.odd : next.even;
    inputs[j] = j < 2 ? low : _mm512_permutex2var_ps(low, shift[j / 2 - 1], high);
  }
}

// The pass's kernel rows during an image's walk: the next input row each reads (INT64_MAX when its
// output rows are done) and those output rows' dy vectors. Counters, so that telling which kernel
// rows meet an input row is a compare each.
template <int Rows>
struct RowsMet {
  int64_t next_ih[Rows], left[Rows];
  const __m512* dy[Rows];

  RowsMet(const Plan& plan, int64_t kh0, int64_t kernel_height, const __m512* grad) {
    for (int r = 0; r < Rows; ++r) {
      const KernelRow row = kh0 + r < kernel_height ? plan.kernel_rows[kh0 + r] : KernelRow{};
      next_ih[r] = row.count > 0 ? row.first_ih : INT64_MAX;
      left[r] = row.count;
      dy[r] = grad + row.first_oh * plan.vectors;
    }
  }
  void advance(const bool (&meets)[Rows], int64_t stride, int64_t vectors) {
    for (int r = 0; r < Rows; ++r) {
      if (!meets[r]) continue;
      dy[r] += vectors;
      next_ih[r] = --left[r] > 0 ? next_ih[r] + stride : INT64_MAX;
    }
  }
};

// An unrolled row's masks, copied from the plan once per image: read from it per row, each was
// loaded again per kernel row and vector.
template <int V>
struct RowMasks {
  __mmask16 columns[V + 1], pixels[V > 0 ? V : 1];

  explicit RowMasks(const Plan& plan) {
    for (int v = 0; v < V; ++v) pixels[v] = plan.pixels[v];
    for (int q = 0; q <= V && V > 0; ++q) columns[q] = plan.chunk_columns[q];
  }
};

// One input row's FMAs: each vector against the dy vector of each kernel row that meets it, the
// vectors in the direct kernel's order. V vectors unrolled, or (V = 0) any number in a loop that
// splits each chunk once and carries it to the next vector.
template <int KW, int Rows, int V>
inline __attribute__((always_inline)) void input_row(const Plan& plan, const float* first, const float* second,
                                                     const RowMasks<V>& masks, const bool (&meets)[Rows],
                                                     const RowsMet<Rows>& rows, const __m512i (&shift)[3],
                                                     __m512 (&acc)[Rows][KW]) {
  // Only the last vector may have pixels past the row's end: its FMAs are masked, the others' not.
  auto accumulate = [&](int r, int64_t v, const __m512(&inputs)[KW]) __attribute__((always_inline)) {
    const __mmask16 pixels = V > 0 ? masks.pixels[v] : plan.pixels[v];
    // One load for the KW FMAs: as the memory operand of each, the loads were what limited the walk
    // (bench/RESULTS.md, "Session 38"). A masked load, which the compiler does not fold.
    const __m512 dy_vector = _mm512_maskz_load_ps(pixels, rows.dy[r] + v);
    const bool last = v == (V > 0 ? V : plan.vectors) - 1;
#pragma GCC unroll 8
    for (int j = 0; j < KW; ++j) {
      acc[r][j] = last ? _mm512_mask3_fmadd_ps(dy_vector, inputs[j], acc[r][j], pixels)
                       : _mm512_fmadd_ps(dy_vector, inputs[j], acc[r][j]);
    }
  };
  if constexpr (V > 0) {
    Split chunks[V + 1];
#pragma GCC unroll 8
    for (int q = 0; q < V; ++q) {
      chunks[q] = split_chunk<KW>(first + kChunk * q, second + kChunk * q, masks.columns[q]);
    }
    // The last chunk is often past the row's end: zero, not loaded.
    const __mmask16 last = masks.columns[V];
    chunks[V] = last ? split_chunk<KW>(first + kChunk * V, second + kChunk * V, last) : Split{};
    __m512 inputs[V][KW];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) tap_inputs<KW>(chunks[v], chunks[v + 1], shift, inputs[v]);
#pragma GCC unroll 4
    for (int r = 0; r < Rows; ++r) {
      if (!meets[r]) continue;
      if (plan.left_edge_after < 0) {
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) accumulate(r, v, inputs[v]);
      } else {
#pragma GCC unroll 8
        for (int v = 1; v < V; ++v) {
          accumulate(r, v, inputs[v]);
          if (v == plan.left_edge_after) accumulate(r, 0, inputs[0]);
        }
      }
    }
  } else {
    Split chunk = split_chunk<KW>(first, second, plan.chunk_columns[0]);
    __m512 left_edge[KW] = {};  // set at vector 0 where used
    for (int64_t v = 0; v < plan.vectors; ++v) {
      const Split next =
          split_chunk<KW>(first + kChunk * (v + 1), second + kChunk * (v + 1), plan.chunk_columns[v + 1]);
      __m512 inputs[KW];
      tap_inputs<KW>(chunk, next, shift, inputs);
      if (v == 0 && plan.left_edge_after > 0) {
#pragma GCC unroll 8
        for (int j = 0; j < KW; ++j) left_edge[j] = inputs[j];
      } else {
#pragma GCC unroll 4
        for (int r = 0; r < Rows; ++r) {
          if (meets[r]) accumulate(r, v, inputs);
        }
      }
      if (v == plan.left_edge_after) {
#pragma GCC unroll 4
        for (int r = 0; r < Rows; ++r) {
          if (meets[r]) accumulate(r, 0, left_edge);
        }
      }
      chunk = next;
    }
  }
}

// One image's input rows in order, for the pass of kernel rows from kh0; `first` is its first
// group's plane, the second group's x_step floats on. The accumulators live in registers here.
template <int KW, int Rows, int V>
void image(const ConvGeometry& g, const Plan& plan, const float* first, int64_t x_step, const __m512* grad, int64_t kh0,
           const __m512i (&shift)[3], __m512 (&sums)[Rows][KW]) {
  __m512 acc[Rows][KW];
#pragma GCC unroll 4
  for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 8
    for (int j = 0; j < KW; ++j) acc[r][j] = sums[r][j];
  }
  RowsMet<Rows> rows(plan, kh0, g.kernel[1], grad);
  const RowMasks<V> masks(plan);
  for (int64_t ih = 0; ih < g.in[1]; ++ih) {
    bool meets[Rows], any = false;
#pragma GCC unroll 4
    for (int r = 0; r < Rows; ++r) any |= meets[r] = rows.next_ih[r] == ih;
    if (!any) continue;
    const float* row = first + ih * g.x.spatial[1] + plan.lowest;
    input_row<KW, Rows, V>(plan, row, row + x_step, masks, meets, rows, shift, acc);
    rows.advance(meets, g.stride[1], plan.vectors);
  }
#pragma GCC unroll 4
  for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 8
    for (int j = 0; j < KW; ++j) sums[r][j] = acc[r][j];
  }
}

template <int KW, int Rows, int V = kUnrolledVectors<KW>>
void image_any_width(const ConvGeometry& g, const Plan& plan, const float* first, int64_t x_step, const __m512* grad,
                     int64_t kh0, const __m512i (&shift)[3], __m512 (&sums)[Rows][KW]) {
  if constexpr (V > 0) {
    if (plan.vectors == V) return image<KW, Rows, V>(g, plan, first, x_step, grad, kh0, shift, sums);
    return image_any_width<KW, Rows, V - 1>(g, plan, first, x_step, grad, kh0, shift, sums);
  } else {
    image<KW, Rows, 0>(g, plan, first, x_step, grad, kh0, shift, sums);
  }
}

// dw of groups `group` and, where `paired`, group + 1 (the second half; else it repeats the first
// and is not stored): every image, Rows kernel rows a pass.
template <int KW>
void pair_of_groups(const ConvGeometry& g, const Plan& plan, const float* x, const float* dy, int64_t group,
                    bool paired, __m512* grad, float* dw) {
  constexpr int Rows = kPassRows<KW>;
  const int64_t vectors = plan.vectors;
  const float* dy_first = dy + group * g.y.channel;
  const int64_t x_step = paired ? g.x.channel : 0, dy_step = paired ? g.y.channel : 0;
  const __m512i shift[3] = {half_shift<1>(), half_shift<2>(), half_shift<3>()};
  const __m512i low_halves = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  const __m512i high_halves = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  for (int64_t kh0 = 0; kh0 < g.kernel[1]; kh0 += Rows) {
    __m512 sums[Rows][KW];  // [kernel row][tap's distance from the lowest]
#pragma GCC unroll 4
    for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 8
      for (int j = 0; j < KW; ++j) sums[r][j] = _mm512_setzero_ps();
    }
    for (int64_t n = 0; n < g.batch; ++n) {
      // The image's dy vectors, the first group's pixels in the low half and the second's in the
      // high one: two vectors from 16 pixels of each group.
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const float* dy_row = dy_first + n * g.y.batch + oh * g.y.spatial[1];
        __m512* row_grad = grad + oh * vectors;
        for (int64_t v = 0; v < vectors; v += 2) {
          const __mmask16 pixels = Avx512Floats::first_lanes(g.out[2] - kPixels * v);
          const __m512 first = _mm512_maskz_loadu_ps(pixels, dy_row + kPixels * v);
          const __m512 second = _mm512_maskz_loadu_ps(pixels, dy_row + dy_step + kPixels * v);
          row_grad[v] = _mm512_permutex2var_ps(first, low_halves, second);
          if (v + 1 < vectors) row_grad[v + 1] = _mm512_permutex2var_ps(first, high_halves, second);
        }
      }
      image_any_width<KW, Rows>(g, plan, x + n * g.x.batch + group * g.x.channel, x_step, grad, kh0, shift, sums);
    }
    const int rows = int(std::min<int64_t>(Rows, g.kernel[1] - kh0));
#pragma GCC unroll 4
    for (int r = 0; r < Rows; ++r) {
      if (r >= rows) break;
#pragma GCC unroll 8
      for (int j = 0; j < KW; ++j) {
        const int64_t at = (kh0 + r) * KW + (g.flip ? KW - 1 - j : j);
        dw[group * g.reduction + at] = horizontal_sum(Pairs::channel(sums[r][j], 0));
        if (paired) dw[(group + 1) * g.reduction + at] = horizontal_sum(Pairs::channel(sums[r][j], 1));
      }
    }
  }
}

template <int KW>
void run(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  const Plan plan = plan_pairs<KW>(g);
  // Pairs where every thread still gets a task, else a group a task.
  const int64_t per_task = g.groups / 2 >= threads ? 2 : 1;
  const size_t grad_floats = size_t(g.out[1] * plan.vectors * kChunk);
  parallel_for(threads, (g.groups + per_task - 1) / per_task, g.flops(), [&](int64_t task) {
    const int64_t group = task * per_task;
    __m512* grad = reinterpret_cast<__m512*>(thread_scratch(grad_floats));
    pair_of_groups<KW>(g, plan, x, dy, group, per_task == 2 && group + 1 < g.groups, grad, dw);
  });
}

}  // namespace

bool depthwise_nchw_backward_filter_supported(const ConvGeometry& g) {
  return process_may_use(jit::Isa::Avx512) &&  // the host first: the rest is compiled for AVX-512
         g.layout == CONVJIT_NCHW && g.oc_per_group == 1 && g.ic_per_group == 1 && g.stride[2] == 2 &&
         g.dilation[2] == 1 && g.pad_begin[2] <= kMaxPadBegin && g.kernel[0] == 1 && g.in[0] == 1 && g.out[0] == 1 &&
         g.out[2] <= kMaxVectors * kPixels && g.kernel[1] <= kMaxKernelRows &&
         backward_filter_direct_fits(g, DirectFilterScope::FewChannels) &&
         g.out[1] * ((g.out[2] + kPixels - 1) / kPixels) * kChunk <= int64_t(kScratchFloats);
}

void depthwise_nchw_backward_filter(const ConvGeometry& g, int threads, const float* x, const float* dy, float* dw) {
  switch (g.kernel[2]) {
    case 1: return run<1>(g, threads, x, dy, dw);
    case 2: return run<2>(g, threads, x, dy, dw);
    case 3: return run<3>(g, threads, x, dy, dw);
    case 4: return run<4>(g, threads, x, dy, dw);
    case 5: return run<5>(g, threads, x, dy, dw);
    case 6: return run<6>(g, threads, x, dy, dw);
    default: return run<7>(g, threads, x, dy, dw);
  }
}

}  // namespace convjit::detail::avx512
