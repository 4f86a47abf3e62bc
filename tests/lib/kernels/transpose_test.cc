// lib/kernels/transpose: the layout copies' matrix transpose, each build the host has, on shapes
// around its blocks (8 x 8 on AVX2, 16 x 16 on AVX-512) and 16-column strips (and rows 4 KiB
// apart, which take AVX2's 8-column strips), against the element-by-element definition, with rows
// packed or further apart on either side;
// the few-channel image transpose of each build, both directions; nothing outside the destination
// is written.
#include "transpose.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "isa.hpp"
#include "packed_weights.hpp"

namespace convjit::testing {
namespace {

TEST(Transpose, EveryBuildMatchesTheDefinition) {
  struct Build {
    const char* name;
    bool available;
    void (*transpose)(int64_t, int64_t, detail::ConstRows, detail::Rows);
  };
  void (*widest)(int64_t, int64_t, detail::ConstRows, detail::Rows) = detail::transpose_matrix;
  const Build builds[] = {{"widest", true, widest},
                          {"avx2", jit::host_has(jit::Isa::Avx2Fma), detail::avx2::transpose_matrix},
                          {"avx512", jit::host_has(jit::Isa::Avx512), detail::avx512::transpose_matrix}};
  for (const Build& b : builds) {
    if (!b.available) continue;
    for (int64_t rows : {1, 7, 8, 9, 15, 16, 17, 23, 32, 33, 64, 1024}) {
      for (int64_t cols : {1, 3, 8, 15, 16, 17, 24, 31, 32, 33, 70}) {
        for (int64_t gap : {0, 5}) {
          // Rows gap floats longer than the matrix on both sides; the source's gaps hold NaN.
          const int64_t src_stride = cols + gap, stride = rows + gap;
          SCOPED_TRACE(std::string(b.name) + " " + std::to_string(rows) + " x " + std::to_string(cols) + ", rows " +
                       std::to_string(gap) + " floats longer");
          std::vector<float> src(size_t(rows * src_stride), NAN);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) src[size_t(r * src_stride + c)] = float(r * cols + c) + 0.5f;
          }
          std::vector<float> dst(size_t(cols * stride) + 32, NAN);  // 16 guard floats each side
          b.transpose(rows, cols, {src.data(), src_stride}, {dst.data() + 16, stride});
          int wrong = 0, touched_gaps = 0;
          for (int64_t c = 0; c < cols; ++c) {
            for (int64_t r = 0; r < rows; ++r) {
              wrong += dst[size_t(16 + c * stride + r)] != src[size_t(r * src_stride + c)];
            }
            for (int64_t r = rows; r < stride; ++r) touched_gaps += !std::isnan(dst[size_t(16 + c * stride + r)]);
          }
          EXPECT_EQ(wrong, 0);
          EXPECT_EQ(touched_gaps, 0);
          for (int i = 0; i < 16; ++i) {
            EXPECT_TRUE(std::isnan(dst[size_t(i)]) && std::isnan(dst[dst.size() - 1 - size_t(i)])) << "guard " << i;
          }
        }
      }
    }
  }
}

// Images of 1-8 channels, each build the host has (the widest too), both directions, pixel
// counts around every build's vector lanes: the definition, and nothing past the image written.
TEST(Transpose, FewChannelImagesMatchTheDefinition) {
  struct Build {
    const char* name;
    bool available;
    void (*transpose)(int64_t, int64_t, const float*, float*, bool);
  };
  const Build builds[] = {{"widest", true, detail::transpose_few_channels},
                          {"avx2", jit::host_has(jit::Isa::Avx2Fma), detail::avx2::transpose_few_channels},
                          {"avx512", jit::host_has(jit::Isa::Avx512), detail::avx512::transpose_few_channels}};
  for (const Build& b : builds) {
    if (!b.available) continue;
    for (int64_t channels = 1; channels <= detail::kMaxFewChannels; ++channels) {
      for (int64_t pixels : {1, 7, 8, 15, 16, 17, 33, 100}) {
        for (bool to_nchw : {false, true}) {
          SCOPED_TRACE(std::string(b.name) + " " + std::to_string(channels) + " channels, " + std::to_string(pixels) +
                       " pixels, to " + (to_nchw ? "NCHW" : "NHWC"));
          const int64_t floats = channels * pixels;
          std::vector<float> src(static_cast<size_t>(floats));
          for (int64_t i = 0; i < floats; ++i) src[size_t(i)] = float(i) + 0.5f;
          std::vector<float> dst(size_t(floats) + 32, NAN);  // 16 guard floats each side
          b.transpose(channels, pixels, src.data(), dst.data() + 16, to_nchw);
          int wrong = 0;
          for (int64_t p = 0; p < pixels; ++p) {
            for (int64_t c = 0; c < channels; ++c) {
              const float nhwc = to_nchw ? src[size_t(p * channels + c)] : dst[size_t(16 + p * channels + c)];
              const float nchw = to_nchw ? dst[size_t(16 + c * pixels + p)] : src[size_t(c * pixels + p)];
              wrong += nhwc != nchw;
            }
          }
          EXPECT_EQ(wrong, 0);
          for (int i = 0; i < 16; ++i) {
            EXPECT_TRUE(std::isnan(dst[size_t(i)]) && std::isnan(dst[dst.size() - 1 - size_t(i)])) << "guard " << i;
          }
        }
      }
    }
  }
}

// The driver's packing for kernels that read weights k-major: whole and partial channel blocks
// (zeros past oc_count), reductions around the transpose's blocks.
TEST(PackedWeights, KMajorWithZerosPastTheTilesChannels) {
  for (int64_t oc_block : {16, 32}) {
    for (int64_t oc_count : {int64_t(1), oc_block - 3, oc_block}) {
      for (int64_t reduction : {1, 9, 27, 4608}) {
        SCOPED_TRACE("block " + std::to_string(oc_block) + ", " + std::to_string(oc_count) + " channels, k " +
                     std::to_string(reduction));
        detail::ConvGeometry g{};
        g.reduction = reduction;
        std::vector<float> w(size_t(oc_count * reduction));
        for (size_t i = 0; i < w.size(); ++i) w[i] = float(i) + 0.25f;
        std::vector<float> packed(size_t(reduction * oc_block), NAN);
        detail::pack_weights_k_major(g, w.data(), oc_count, oc_block, packed.data());
        int wrong = 0;
        for (int64_t k = 0; k < reduction; ++k) {
          for (int64_t j = 0; j < oc_block; ++j) {
            const float want = j < oc_count ? w[size_t(j * reduction + k)] : 0.0f;
            wrong += !(packed[size_t(k * oc_block + j)] == want);
          }
        }
        EXPECT_EQ(wrong, 0);
      }
    }
  }
}

}  // namespace
}  // namespace convjit::testing
