// lib/kernels/patch_panel: backward filter's panel packing, each build the host has, against the
// value-by-value definition: rows of stride 1, 2 and 3, wholly real, partly real (padding at
// either end) and wholly padding, fewer rows than the panel, pixel counts around the 8- and
// 16-pixel blocks, whole blocks of rows of stride 1 and 2, and NHWC's rows that are one run of
// consecutive values. Each row's last value is the last float of its own allocation, so a plain
// load past it would read outside the row and fail under the sanitizers (the stride-2 paths read
// a block's last values through masked loads, whose lanes past the row touch no memory).
#include "patch_panel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "gemm_tile.hpp"
#include "isa.hpp"

namespace convjit::testing {
namespace {

TEST(PatchPanel, EveryBuildMatchesTheDefinition) {
  struct Build {
    const char* name;
    bool available;
    void (*pack)(const detail::PatchRow<const float>*, int64_t, int64_t, float*);
  };
  const Build builds[] = {{"widest", true, detail::pack_patch_panel},
                          {"avx2", jit::host_has(jit::Isa::Avx2Fma), detail::avx2::pack_patch_panel},
                          {"avx512", jit::host_has(jit::Isa::Avx512), detail::avx512::pack_patch_panel}};
  std::mt19937_64 rng(0x9A7C);
  for (const Build& b : builds) {
    if (!b.available) continue;
    for (int64_t count : {1, 7, 8, 9, 15, 16, 17, 28, 32, 53}) {
      for (int64_t row_count : {int64_t(3), int64_t(detail::kTileCols)}) {
        for (int trial = 0; trial < 8; ++trial) {
          SCOPED_TRACE(std::string(b.name) + ": " + std::to_string(count) + " pixels, " + std::to_string(row_count) +
                       " rows, trial " + std::to_string(trial));
          std::vector<std::unique_ptr<float[]>> storage;
          std::vector<detail::PatchRow<const float>> rows;
          if (trial == 3 && row_count == detail::kTileCols) {
            // NHWC's case: the rows are one run of a pixel's consecutive values, pixels 16+ apart.
            const int64_t step = detail::kTileCols + int64_t(rng() % 3);
            storage.emplace_back(new float[size_t((count - 1) * step + detail::kTileCols)]);
            for (int64_t i = 0; i < (count - 1) * step + detail::kTileCols; ++i)
              storage.back()[size_t(i)] = float(i) + 0.25f;
            for (int64_t k = 0; k < row_count; ++k) rows.push_back({storage.back().get() + k, step, 0, count});
          }
          for (int64_t k = int64_t(rows.size()); k < row_count; ++k) {
            // Trials 1 and 2 keep every row's stride vectorizable, so whole blocks of real rows occur.
            const int64_t step = int64_t(rng() % (trial == 1 || trial == 2 ? 2 : 3)) + 1;
            int64_t lo = int64_t(rng() % 3) == 0 ? int64_t(rng() % uint64_t(count)) : 0;
            int64_t hi = int64_t(rng() % 3) == 0 ? lo + int64_t(rng() % uint64_t(count - lo + 1)) : count;
            if (trial <= 1) lo = 0, hi = count;  // every row wholly real
            const int64_t values = hi > lo ? (hi - lo - 1) * step + 1 : 1;
            storage.emplace_back(new float[size_t(values)]);
            for (int64_t i = 0; i < values; ++i) storage.back()[size_t(i)] = float(k * 1000 + i) + 0.5f;
            rows.push_back({storage.back().get(), step, lo, hi});
          }
          std::vector<float> got(size_t(count * detail::kTileCols), NAN);
          b.pack(rows.data(), row_count, count, got.data());
          int wrong = 0;
          for (int64_t p = 0; p < count; ++p) {
            for (int64_t k = 0; k < detail::kTileCols; ++k) {
              float want = 0.0f;
              if (k < row_count && p >= rows[size_t(k)].lo && p < rows[size_t(k)].hi) {
                want = rows[size_t(k)].src[(p - rows[size_t(k)].lo) * rows[size_t(k)].step];
              }
              wrong += !(got[size_t(p * detail::kTileCols + k)] == want);
            }
          }
          EXPECT_EQ(wrong, 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace convjit::testing
