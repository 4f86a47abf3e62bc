// lib/kernels/conv_depthwise_nchw_backward_filter: tier 0's NCHW depthwise backward filter at W
// stride 2 on AVX-512, called directly on random problems (ranks 1 and 2, an odd or even number of
// groups, kernels 1-7 wide and up to 5 high, H stride 1-3 and dilation 1-2, asymmetric padding,
// rows of one vector to several (a body and its edges), batches of 1-3, both modes): the oracle's
// values, and the bits of the direct kernel it stands in for (conv_backward_filter_direct, what
// runs without AVX-512) at 1 and 3 threads. Some problems hold NaN in every input column and row
// that no output reads: a lane past a row's end that multiplied one would poison its chain.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "conv_backward_filter_direct.hpp"
#include "conv_depthwise_nchw_backward_filter.hpp"
#include "convjit/dims.hpp"
#include "geometry.hpp"
#include "isa.hpp"
#include "kernel_isa.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

namespace convjit::testing {
namespace {

ConvDims random_strided_depthwise(Rng& rng, int i) {
  ConvDims d;
  d.rank = 1 + i % 2;
  d.layout = Layout::NCHW;
  d.mode = i / 2 % 2 ? Mode::Convolution : Mode::CrossCorrelation;
  d.batch = rng.uniform_int(1, 3);
  d.groups = d.in_channels = d.out_channels = rng.uniform_int(1, 11);
  const size_t w = size_t(d.rank - 1);
  d.kernel[w] = rng.uniform_int(1, 7);
  d.stride[w] = 2;
  d.pad_begin[w] = rng.uniform_int(0, d.kernel[w] - 1);
  d.pad_end[w] = rng.uniform_int(0, d.kernel[w] - 1);
  d.in_size[w] = d.kernel[w] + rng.uniform_int(0, i % 3 ? 24 : 90);  // a vector's row to several
  if (d.rank == 2) {
    d.kernel[0] = rng.uniform_int(1, 5);
    d.stride[0] = rng.uniform_int(1, 3);
    d.dilation[0] = rng.uniform_int(1, 2);
    d.pad_begin[0] = rng.uniform_int(0, d.kernel[0] - 1);
    d.pad_end[0] = rng.uniform_int(0, d.kernel[0] - 1);
    d.in_size[0] = (d.kernel[0] - 1) * d.dilation[0] + 1 + rng.uniform_int(0, 12);
  }
  return d;
}

// NaN in every element of x that no output reads (a column or row no tap of any output reaches).
void poison_unread_inputs(const ConvDims& d, std::vector<float>* x) {
  const Extent out = d.output_size();
  const size_t w = size_t(d.rank - 1);
  auto read = [&](size_t dim, int64_t at) {
    for (int64_t o = 0; o < out[dim]; ++o) {
      for (int64_t k = 0; k < d.kernel[dim]; ++k) {
        if (o * d.stride[dim] - d.pad_begin[dim] + k * d.dilation[dim] == at) return true;
      }
    }
    return false;
  };
  const int64_t rows = d.rank == 2 ? d.in_size[0] : 1, width = d.in_size[w];
  for (int64_t plane = 0; plane < d.batch * d.in_channels; ++plane) {
    for (int64_t h = 0; h < rows; ++h) {
      for (int64_t c = 0; c < width; ++c) {
        if (!read(w, c) || (d.rank == 2 && !read(0, h))) {
          (*x)[size_t((plane * rows + h) * width + c)] = std::numeric_limits<float>::quiet_NaN();
        }
      }
    }
  }
}

TEST(DepthwiseNchwBackwardFilter, OracleValuesAndTheDirectKernelsBitsForAnyThreadCount) {
  if (!detail::process_may_use(jit::Isa::Avx512)) {
    GTEST_SKIP() << "AVX-512 is absent or capped (CONVJIT_MAX_ISA): the kernel is AVX-512 only";
  }
  Rng rng(0xD5F2);
  int poisoned = 0, long_rows = 0;
  for (int i = 0; i < 120; ++i) {
    const ConvDims d = random_strided_depthwise(rng, i);
    const std::string context = describe(d);
    SCOPED_TRACE(context);
    detail::ConvGeometry g;
    ASSERT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok());
    ASSERT_TRUE(detail::avx512::depthwise_nchw_backward_filter_supported(g));
    ASSERT_TRUE(detail::avx2::backward_filter_direct_supported(g, detail::DirectFilterScope::FewChannels));
    std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    if (i % 3 == 0) {
      poison_unread_inputs(d, &x);
      ++poisoned;
    }
    long_rows += g.out[2] > 16;
    const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
    const std::vector<double> want = ref::conv_backward_filter(d, x.data(), dy.data());
    const int64_t per_weight = ref::conv_output_elements(d) / d.out_channels;

    std::vector<float> direct = nan_buffer(int64_t(want.size()));
    detail::avx2::backward_filter_direct(g, 1, x.data(), dy.data(), direct.data());
    for (int threads : {1, 3}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      std::vector<float> dw = nan_buffer(int64_t(want.size()));
      detail::avx512::depthwise_nchw_backward_filter(g, threads, x.data(), dy.data(), dw.data());
      EXPECT_TRUE(all_close("dw", dw.data(), want, conv_weight_shape(d), per_weight, context));
      EXPECT_TRUE(bitwise_equal("dw", dw, direct, conv_weight_shape(d), context));
    }
  }
  EXPECT_GE(poisoned, 30);
  EXPECT_GE(long_rows, 20) << "too few rows of a body and edges";
}

// Outside its domain the direct kernel keeps the problem: W stride 1, W dilation, more than one
// channel per group, NHWC, 3D, rows past the plan's 512 outputs, kernels over 32 rows.
TEST(DepthwiseNchwBackwardFilter, TakesOnlyDepthwiseNchwAtWStrideTwo) {
  if (!detail::process_may_use(jit::Isa::Avx512)) {
    GTEST_SKIP() << "AVX-512 is absent or capped (CONVJIT_MAX_ISA): the kernel is AVX-512 only";
  }
  auto takes = [](const ConvDims& d) {
    detail::ConvGeometry g;
    EXPECT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok()) << describe(d);
    return detail::avx512::depthwise_nchw_backward_filter_supported(g);
  };
  ConvDims d;
  d.groups = d.in_channels = d.out_channels = 8;
  d.in_size = {14, 14, 1};
  d.kernel = {3, 3, 1};
  d.stride = {2, 2, 1};
  EXPECT_TRUE(takes(d));
  ConvDims other = d;
  other.stride[1] = 1;
  EXPECT_FALSE(takes(other));
  other = d;
  other.dilation[1] = 2;
  EXPECT_FALSE(takes(other));
  other = d;
  other.out_channels = 16;
  EXPECT_FALSE(takes(other));
  other = d;
  other.layout = Layout::NHWC;
  EXPECT_FALSE(takes(other));
  other = d;
  other.in_size[1] = 2 * 512 + 1;  // 512 outputs a row
  EXPECT_TRUE(takes(other));
  other.in_size[1] += 2;
  EXPECT_FALSE(takes(other));
  other = d;
  other.in_size[0] = other.kernel[0] = 33;
  EXPECT_FALSE(takes(other));
  other = d;
  other.rank = 3;
  other.in_size = {3, 14, 14};
  other.kernel = {1, 3, 3};
  other.stride = {1, 2, 2};
  EXPECT_FALSE(takes(other));
}

}  // namespace
}  // namespace convjit::testing
