#include "packed_weights.hpp"

#include <algorithm>

#include "transpose.hpp"

namespace convjit::detail {
namespace {

// Floats of one oc' of a backward problem's weights (its reduction: taps x ic').
int64_t backward_oc_floats(const ConvGeometry& g) {
  return g.taps * g.oc_per_group;
}

// Where the block of g's output channels from first_oc starts in a backward problem's weights:
// at its group's first oc', tap 0, and the block's first ic'.
const float* backward_block(const ConvGeometry& g, const BackwardWeights& w, int64_t first_oc) {
  const int64_t group = first_oc / g.oc_per_group, ic = first_oc % g.oc_per_group;
  return w.w + group * g.ic_per_group * backward_oc_floats(g) + ic * w.ic_step;
}

// Zeros in each packed row's lanes past the block's oc_count channels.
void zero_block_tail(const ConvGeometry& g, int64_t oc_count, int64_t oc_block, float* packed) {
  if (oc_count == oc_block) return;
  for (int64_t k = 0; k < g.reduction; ++k)
    std::fill(packed + k * oc_block + oc_count, packed + (k + 1) * oc_block, 0.0f);
}

}  // namespace

void pack_weights_k_major(const ConvGeometry& g, const float* w, int64_t oc_count, int64_t oc_block, float* packed) {
  transpose_matrix(oc_count, g.reduction, {w, g.reduction}, {packed, oc_block});
  zero_block_tail(g, oc_count, oc_block, packed);
}

BackwardWeights backward_weights(const ConvGeometry& backward, const float* w) {
  const bool ohwi = backward.layout == CONVJIT_NHWC;
  return {w, ohwi ? backward.ic_per_group : 1, ohwi ? 1 : backward.taps};
}

void pack_weights_k_major_from_backward(const ConvGeometry& g, const BackwardWeights& w, int64_t first_oc,
                                        int64_t oc_count, int64_t oc_block, float* packed) {
  const float* block = backward_block(g, w, first_oc);
  const int64_t packed_tap = g.ic_per_group * oc_block;  // between a packed row and the next tap's
  if (w.ic_step == 1) {  // OHWI: a packed row is a run of the block's ic', copied in packed order
    for (int64_t tap = 0; tap < g.taps; ++tap) {
      for (int64_t oc = 0; oc < g.ic_per_group; ++oc) {
        std::copy_n(block + oc * backward_oc_floats(g) + tap * w.tap_step, oc_count,
                    packed + tap * packed_tap + oc * oc_block);
      }
    }
  } else {  // OIHW: per oc' the block's ic' x taps, contiguous, transposed into its rows
    for (int64_t oc = 0; oc < g.ic_per_group; ++oc) {
      transpose_matrix(oc_count, g.taps, {block + oc * backward_oc_floats(g), w.ic_step},
                       {packed + oc * oc_block, packed_tap});
    }
  }
  zero_block_tail(g, oc_count, oc_block, packed);
}

void weight_rows_from_backward(const ConvGeometry& g, const BackwardWeights& w, int64_t first_oc, int64_t oc_count,
                               float* rows) {
  const float* block = backward_block(g, w, first_oc);
  if (w.ic_step == 1) {  // OHWI: per tap a transpose of [oc'][ic'] runs
    for (int64_t tap = 0; tap < g.taps; ++tap) {
      transpose_matrix(g.ic_per_group, oc_count, {block + tap * w.tap_step, backward_oc_floats(g)},
                       {rows + tap * g.ic_per_group, g.reduction});
    }
    return;
  }
  // OIHW: per oc' its ic' x taps, contiguous, into column oc' of each row's taps.
  for (int64_t oc = 0; oc < g.ic_per_group; ++oc) {
    for (int64_t j = 0; j < oc_count; ++j) {
      for (int64_t tap = 0; tap < g.taps; ++tap) {
        rows[j * g.reduction + tap * g.ic_per_group + oc] = block[oc * backward_oc_floats(g) + j * w.ic_step + tap];
      }
    }
  }
}

}  // namespace convjit::detail
