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
const float* backward_block(const ConvGeometry& g, const float* w_backward, int64_t first_oc) {
  const int64_t group = first_oc / g.oc_per_group, ic = first_oc % g.oc_per_group;
  return w_backward + group * g.ic_per_group * backward_oc_floats(g) + ic;
}

}  // namespace

void pack_weights_k_major(const ConvGeometry& g, const float* w, int64_t oc_count, int64_t oc_block, float* packed) {
  const int64_t k_count = g.reduction;
  transpose_matrix(oc_count, k_count, {w, k_count}, {packed, oc_block});
  if (oc_count == oc_block) return;
  for (int64_t k = 0; k < k_count; ++k) std::fill(packed + k * oc_block + oc_count, packed + (k + 1) * oc_block, 0.0f);
}

void pack_weights_k_major_from_backward(const ConvGeometry& g, const float* w_backward, int64_t first_oc,
                                        int64_t oc_count, int64_t oc_block, float* packed) {
  const float* block = backward_block(g, w_backward, first_oc);
  for (int64_t tap = 0; tap < g.taps; ++tap) {
    for (int64_t oc = 0; oc < g.ic_per_group; ++oc) {
      const float* run = block + oc * backward_oc_floats(g) + tap * g.oc_per_group;
      float* row = packed + (tap * g.ic_per_group + oc) * oc_block;
      std::copy(run, run + oc_count, row);
      std::fill(row + oc_count, row + oc_block, 0.0f);
    }
  }
}

void weight_rows_from_backward(const ConvGeometry& g, const float* w_backward, int64_t first_oc, int64_t oc_count,
                               float* rows) {
  const float* block = backward_block(g, w_backward, first_oc);
  for (int64_t tap = 0; tap < g.taps; ++tap) {
    transpose_matrix(g.ic_per_group, oc_count, {block + tap * g.oc_per_group, backward_oc_floats(g)},
                     {rows + tap * g.ic_per_group, g.reduction});
  }
}

}  // namespace convjit::detail
