// Value (k, p) of a backward-filter panel: the element-by-element path of patch_panel.hpp, shared by
// its builds. Internal linkage (included by ISA-specific files).
#pragma once

#include <cstdint>

#include "gemm_tile.hpp"
#include "patch_pack.hpp"

namespace convjit::detail {
namespace {

inline float patch_value(const PatchRow<const float>* rows, int64_t row_count, int64_t k, int64_t p) {
  if (k >= row_count) return 0.0f;
  const PatchRow<const float>& row = rows[k];
  // Indexed from the row's first real value: a pointer stepped outside x would be undefined.
  return p >= row.lo && p < row.hi ? row.src[(p - row.lo) * row.step] : 0.0f;
}

// Pixels [p0, p1) of lanes [j0, j1) of the panel, one value at a time.
inline void pack_values(const PatchRow<const float>* rows, int64_t row_count, int64_t p0, int64_t p1, int64_t j0,
                        int64_t j1, float* dst) {
  for (int64_t p = p0; p < p1; ++p) {
    for (int64_t j = j0; j < j1; ++j) dst[p * kTileCols + j] = patch_value(rows, row_count, j, p);
  }
}

// Whether the panel's rows are one run of consecutive weights of one tap (NHWC's channels): the
// same real pixels and step, each row's values right after the previous row's. Then a pixel's
// panel row is kTileCols consecutive inputs.
inline bool rows_are_one_pixel_run(const PatchRow<const float>* rows, int64_t row_count) {
  if (row_count != kTileCols || rows[0].lo >= rows[0].hi) return false;
  for (int64_t k = 1; k < kTileCols; ++k) {
    if (rows[k].lo != rows[0].lo || rows[k].hi != rows[0].hi || rows[k].step != rows[0].step ||
        rows[k].src != rows[0].src + k) {
      return false;
    }
  }
  return true;
}

}  // namespace
}  // namespace convjit::detail
