// lib/kernels/padded_rows: the bands' zero-padded row copies, each build the host has (AVX-512's
// masks planned per call up to 8 vectors a row, made per vector beyond), on spans around the
// vector sizes with the real run anywhere in them (none, all, at either end), rows packed or
// further apart: the definition's values, and nothing outside the rows' spans written. The
// source's floats around the real runs are NaN, so a value taken from them would show.
#include "padded_rows.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernel_isa.hpp"

namespace convjit::testing {
namespace {

TEST(PaddedRows, EveryBuildWritesTheDefinition) {
  struct Build {
    const char* name;
    bool available;
    void (*copy)(const float*, int64_t, float*, int64_t, int64_t, int64_t, int64_t, int64_t);
  };
  const Build builds[] = {{"portable", true, detail::portable::copy_padded_rows},
                          {"avx512", detail::process_may_use(jit::Isa::Avx512), detail::avx512::copy_padded_rows},
                          {"widest", true, detail::copy_padded_rows}};
  constexpr float kUntouched = -7.0f;
  int checked = 0;
  for (const Build& b : builds) {
    if (!b.available) {
      std::printf("note: %s is absent or capped (CONVJIT_MAX_ISA); its build was not run\n", b.name);
      continue;
    }
    for (int64_t span : {1, 5, 15, 16, 17, 24, 33, 64, 127, 128, 129, 200}) {
      for (int64_t first : {int64_t(0), int64_t(1), span / 3, span}) {
        for (int64_t last : {first, (first + span + 1) / 2, span - 1, span}) {
          if (last < first || last > span) continue;
          for (int64_t gap : {0, 9}) {
            SCOPED_TRACE(std::string(b.name) + " span " + std::to_string(span) + ", real [" + std::to_string(first) +
                         ", " + std::to_string(last) + "), rows " + std::to_string(gap) + " floats apart");
            const int64_t rows = 3, from_pitch = (last - first) + gap + 1, to_pitch = span + gap;
            // Each source row: NaN, its real run, NaN up to the next row.
            std::vector<float> from(size_t(rows * from_pitch + 2), NAN);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t i = 0; i < last - first; ++i) from[size_t(1 + r * from_pitch + i)] = float(r * 1000 + i + 1);
            }
            std::vector<float> to(size_t(rows * to_pitch + 2 * 16), kUntouched);
            float* out = to.data() + 16;
            b.copy(from.data() + 1, from_pitch, out, to_pitch, rows, span, first, last);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t i = 0; i < span; ++i) {
                const float want = i >= first && i < last ? float(r * 1000 + (i - first) + 1) : 0.0f;
                ASSERT_EQ(out[r * to_pitch + i], want) << "row " << r << ", element " << i;
              }
              for (int64_t i = span; i < to_pitch && r + 1 < rows; ++i) ASSERT_EQ(out[r * to_pitch + i], kUntouched);
            }
            for (int64_t i = 0; i < 16; ++i) ASSERT_EQ(to[size_t(i)], kUntouched) << "written before the rows";
            for (int64_t i = (rows - 1) * to_pitch + span; i < int64_t(to.size()) - 16; ++i) {
              ASSERT_EQ(out[i], kUntouched) << "written after the rows";
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 400);
}

}  // namespace
}  // namespace convjit::testing
