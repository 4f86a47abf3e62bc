// The register tile of gemm_tile.hpp, written once over a vector type F (simd_avx2.hpp,
// simd_avx512.hpp): rows x kTileCols outputs in kTileCols / F::kLanes accumulators per row (AVX2:
// 2 ymm, AVX-512: 1 zmm), one broadcast of A per row and those loads of B per reduction step; or
// (AVX-512) rows x 2-4 panels, each broadcast serving them all: 6 rows x 2 panels load 8 vectors
// per 12 FMAs, not 7 per 6.
// Include from one file per ISA, compiled with its flags (gemm_tile_avx2.cpp, gemm_tile_avx512.cpp);
// everything here has internal linkage, so no function compiled for one ISA stands in for
// another's at link time.
#pragma once

#include <cstdint>

#include "gemm_tile.hpp"

namespace convjit::detail {
namespace {

template <typename F>
struct RegisterTile {
  using Vec = typename F::Vec;
  using Mask = typename F::Mask;
  static constexpr int kLanes = F::kLanes;
  static constexpr int kVectors = kTileCols / kLanes;

  // The lanes of vector v among the first `cols` columns.
  static Mask column_lanes(int cols, int v) {
    const int n = cols - v * kLanes;
    return F::first_lanes(n < 0 ? 0 : n > kLanes ? kLanes : n);
  }

  // Panels > 1: that many panels side by side, all full but maybe the last (B at t.b + q *
  // panel_stride, or through t.b_rows + q * panel_stride; C contiguous), each row's broadcast of A
  // serving them all.
  template <int Rows, bool IndirectB, int Panels>
  static void tile(const GemmTile& t, int64_t panel_stride) {
    constexpr int kRowVectors = Panels * kVectors;
    Vec acc[Rows][kRowVectors];
    Mask lanes[kRowVectors];
    for (int v = 0; v < kRowVectors; ++v) lanes[v] = column_lanes(t.cols, v);
    const bool contiguous = t.c_col_stride == 1;

#pragma GCC unroll 6
    for (int i = 0; i < Rows; ++i) {
      if (!t.accumulate) {
        for (int v = 0; v < kRowVectors; ++v) acc[i][v] = F::zero();
      } else if (Panels > 1 || contiguous) {
        for (int v = 0; v < kRowVectors; ++v) acc[i][v] = F::load(t.c + i * t.c_row_stride + v * kLanes, lanes[v]);
      } else {
        alignas(64) float row[Panels * kTileCols] = {};  // Panels is 1 here
        for (int j = 0; j < t.cols; ++j) row[j] = t.c[i * t.c_row_stride + j * t.c_col_stride];
        for (int v = 0; v < kRowVectors; ++v) acc[i][v] = F::load(row + v * kLanes);
      }
    }

    // Locals, so the compiler keeps the accumulators in registers instead of re-reading t.
    const float* a_rows[Rows];
#pragma GCC unroll 6
    for (int i = 0; i < Rows; ++i) a_rows[i] = t.a + i * t.a_row_stride;
    const float* b = t.b;
    const int64_t k = t.k, a_step = t.a_step;
    const float* const* b_rows = t.b_rows;
    for (int64_t r = 0; r < k; ++r) {
      Vec b_vectors[kRowVectors];
      for (int q = 0; q < Panels; ++q) {
        // b is null with row pointers
        const float* b_row = IndirectB ? b_rows[q * panel_stride + r] : b + q * panel_stride + r * kTileCols;
        for (int v = 0; v < kVectors; ++v) b_vectors[q * kVectors + v] = F::load(b_row + v * kLanes);
      }
#pragma GCC unroll 6
      for (int i = 0; i < Rows; ++i) {
        const Vec a = F::broadcast(a_rows[i] + r * a_step);
        for (int v = 0; v < kRowVectors; ++v) acc[i][v] = F::fma(a, b_vectors[v], acc[i][v]);
      }
    }

#pragma GCC unroll 6
    for (int i = 0; i < Rows; ++i) {
      if (t.bias) {
        const Vec bias = F::broadcast(t.bias + i);
        for (int v = 0; v < kRowVectors; ++v) acc[i][v] = F::add(acc[i][v], bias);
      }
      if (t.relu) {
        for (int v = 0; v < kRowVectors; ++v) acc[i][v] = F::relu(acc[i][v]);
      }
      float* c = t.c + i * t.c_row_stride;
      if (contiguous) {  // plain stores for whole vectors: masked ones cost AMD cores many cycles
        for (int v = 0; v < kRowVectors; ++v) {
          if ((v + 1) * kLanes <= t.cols) {
            F::store(c + v * kLanes, acc[i][v]);
          } else if (v * kLanes < t.cols) {
            F::store(c + v * kLanes, acc[i][v], lanes[v]);
          }
        }
      } else {
        alignas(64) float row[Panels * kTileCols];  // Panels is 1 here
        for (int v = 0; v < kRowVectors; ++v) F::store(row + v * kLanes, acc[i][v]);
        for (int j = 0; j < t.cols; ++j) c[j * t.c_col_stride] = row[j];
      }
    }
    F::leave();
  }

  template <bool IndirectB, int Panels>
  static void rows(const GemmTile& t, int64_t panel_stride) {
    switch (t.rows) {
      case 1: return tile<1, IndirectB, Panels>(t, panel_stride);
      case 2: return tile<2, IndirectB, Panels>(t, panel_stride);
      case 3: return tile<3, IndirectB, Panels>(t, panel_stride);
      case 4: return tile<4, IndirectB, Panels>(t, panel_stride);
      case 5: return tile<5, IndirectB, Panels>(t, panel_stride);
      default: return tile<6, IndirectB, Panels>(t, panel_stride);
    }
  }

  static void run(const GemmTile& t) {
    return t.b_rows ? rows<true, 1>(t, 0) : rows<false, 1>(t, 0);
  }
  template <int Panels>
  static void run_panels(const GemmTile& t, int64_t panel_stride) {
    return t.b_rows ? rows<true, Panels>(t, panel_stride) : rows<false, Panels>(t, panel_stride);
  }
};

}  // namespace
}  // namespace convjit::detail
