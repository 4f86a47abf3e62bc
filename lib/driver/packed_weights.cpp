#include "packed_weights.hpp"

#include <algorithm>

#include "transpose.hpp"

namespace convjit::detail {

void pack_weights_k_major(const ConvGeometry& g, const float* w, int64_t oc_count, int64_t oc_block, float* packed) {
  const int64_t k_count = g.reduction;
  transpose_matrix(oc_count, k_count, {w, k_count}, {packed, oc_block});
  if (oc_count == oc_block) return;
  for (int64_t k = 0; k < k_count; ++k) std::fill(packed + k * oc_block + oc_count, packed + (k + 1) * oc_block, 0.0f);
}

}  // namespace convjit::detail
