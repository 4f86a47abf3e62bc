// lib/kernels/transpose: the layout copies' matrix transpose, each build the host has, on shapes
// around its 8 x 8 blocks and 16-column strips (and rows 4 KiB apart, which take 8-column strips),
// against the element-by-element definition; nothing outside the destination is written.
#include "transpose.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "isa.hpp"

namespace convjit::testing {
namespace {

TEST(Transpose, EveryBuildMatchesTheDefinition) {
  struct Build {
    const char* name;
    bool available;
    void (*transpose)(int64_t, int64_t, const float*, float*);
  };
  const Build builds[] = {{"widest", true, detail::transpose_matrix},
                          {"avx2", jit::host_has(jit::Isa::Avx2Fma), detail::avx2::transpose_matrix}};
  for (const Build& b : builds) {
    if (!b.available) continue;
    for (int64_t rows : {1, 7, 8, 9, 16, 23, 64, 1024}) {
      for (int64_t cols : {1, 3, 8, 15, 16, 17, 24, 33, 70}) {
        SCOPED_TRACE(std::string(b.name) + " " + std::to_string(rows) + " x " + std::to_string(cols));
        std::vector<float> src(size_t(rows * cols));
        for (size_t i = 0; i < src.size(); ++i) src[i] = float(i) + 0.5f;
        std::vector<float> dst(src.size() + 32, NAN);  // 16 guard floats each side
        b.transpose(rows, cols, src.data(), dst.data() + 16);
        int wrong = 0;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) wrong += dst[size_t(16 + c * rows + r)] != src[size_t(r * cols + c)];
        }
        EXPECT_EQ(wrong, 0);
        for (int i = 0; i < 16; ++i) {
          EXPECT_TRUE(std::isnan(dst[size_t(i)]) && std::isnan(dst[dst.size() - 1 - size_t(i)])) << "guard " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace convjit::testing
