// The panel packing of patch_panel.hpp over a vector type F (simd_avx2.hpp, simd_avx512.hpp):
// blocks of F::kLanes pixels x F::kLanes patch rows transposed in registers (F::transpose) where
// each of the block's rows is wholly padding or wholly real with stride 1 or 2, value by value
// elsewhere; a copy, so every build gives the same panel. Include only from files compiled for F's
// ISA; internal linkage (lib/README.md, "One kernel, several ISAs").
#pragma once

#include <cstdint>

#include "patch_panel.hpp"
#include "patch_panel_values.hpp"

namespace convjit::detail {
namespace {

// Pixels [p0, p0 + kLanes) of patch row k into *v, where they are padding (zeros) or wholly real
// with stride 1 (one load) or 2 (the even elements of src[0, 2 * kLanes - 1): nothing past the
// block's last value is read). False otherwise: the block goes value by value (gathered into a
// vector, scalar stores and a load that cannot be forwarded from them ran slower).
template <typename F>
bool load_block_row(const PatchRow<const float>* rows, int64_t row_count, int64_t k, int64_t p0, typename F::Vec* v) {
  if (k >= row_count || rows[k].hi <= p0 || rows[k].lo >= p0 + F::kLanes) {
    *v = F::zero();
    return true;
  }
  const PatchRow<const float>& row = rows[k];
  if (row.lo > p0 || p0 + F::kLanes > row.hi || row.step > 2) return false;
  const float* src = row.src + (p0 - row.lo) * row.step;
  *v = row.step == 1 ? F::load(src) : F::load_even(src, F::all_lanes(), F::first_lanes(F::kLanes - 1));
  return true;
}

template <typename F>
void pack_patch_panel_with(const PatchRow<const float>* rows, int64_t row_count, int64_t count, float* dst) {
  constexpr int kLanes = F::kLanes;
  if (rows_are_one_pixel_run(rows, row_count)) {  // NHWC: a pixel's 16 channels are consecutive
    const PatchRow<const float>& run = rows[0];
    for (int64_t p = 0; p < count; ++p) {
      const bool real = p >= run.lo && p < run.hi;
      for (int j = 0; j < kTileCols; j += kLanes) {
        F::store(dst + p * kTileCols + j, real ? F::load(run.src + (p - run.lo) * run.step + j) : F::zero());
      }
    }
    F::leave();
    return;
  }
  int64_t p0 = 0;
  for (; p0 + kLanes <= count; p0 += kLanes) {
    for (int64_t j0 = 0; j0 < kTileCols; j0 += kLanes) {
      typename F::Vec v[kLanes];
      bool vectors = true;
      for (int j = 0; j < kLanes && vectors; ++j) vectors = load_block_row<F>(rows, row_count, j0 + j, p0, &v[j]);
      if (vectors) {
        F::transpose(v);
        for (int i = 0; i < kLanes; ++i) F::store(dst + (p0 + i) * kTileCols + j0, v[i]);
      } else {
        pack_values(rows, row_count, p0, p0 + kLanes, j0, j0 + kLanes, dst);
      }
    }
  }
  pack_values(rows, row_count, p0, count, 0, kTileCols, dst);
  F::leave();
}

}  // namespace
}  // namespace convjit::detail
