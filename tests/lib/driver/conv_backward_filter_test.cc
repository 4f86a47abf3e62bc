// lib/driver/conv_backward_filter.cpp: dw from x and dy, in the layout of w.
#include <gtest/gtest.h>

#include <cmath>

#include "convjit/ops.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/hand_cases.hpp"
#include "support/op_checks.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

constexpr uint64_t kSeed = 0xBF0001;
constexpr int kMaxReportedFailures = 10;

TEST(ConvBackwardFilter, HandComputedCases) {
  for (const ConvBackwardCase& c : conv_backward_hand_cases()) {
    std::vector<float> dw = nan_buffer(int64_t(c.dw.size()));
    ASSERT_EQ(ref::conv_weight_elements(c.dims), int64_t(c.dw.size())) << c.name;
    conv_backward_filter(c.dims, c.x.data(), c.dy.data(), dw.data());
    EXPECT_TRUE(all_close(c.name, dw.data(), c.dw, conv_weight_shape(c.dims), 1, describe(c.dims)));
  }
}

TEST(ConvBackwardFilter, MatchesReferenceOnRandomShapes) {
  const std::vector<ConvDims> shapes = random_conv_sweep(kSeed, 1020);
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < kMaxReportedFailures; ++i) {
    const auto result = check_conv_backward_filter(shapes[i], case_seed(kSeed, i));
    EXPECT_TRUE(result) << "case " << i;
    failures += !result;
  }
}

TEST(ConvBackwardFilter, MatchesReferenceOnLargerShapes) {
  const std::vector<ConvDims> shapes = larger_conv_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_TRUE(check_conv_backward_filter(shapes[i], case_seed(kSeed + 1, i)));
  }
}

TEST(ConvBackwardFilter, MatchesReferenceOnWideChannelShapes) {
  const std::vector<ConvDims> shapes = random_conv_sweep(kSeed + 3, 120, wide_channel_limits());
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < kMaxReportedFailures; ++i) {
    const auto result = check_conv_backward_filter(shapes[i], case_seed(kSeed + 3, i));
    EXPECT_TRUE(result) << "case " << i;
    failures += !result;
  }
}

// A weight tap that only ever meets padding (padding wider than the dilated kernel, stride
// skipping it) has gradient exactly 0, and dw is overwritten rather than accumulated.
TEST(ConvBackwardFilter, TapsThatOnlySeePaddingGetZero) {
  ConvDims d;
  d.rank = 1;
  d.in_channels = 2;
  d.out_channels = 2;
  d.in_size = {3, 1, 1};
  d.kernel = {5, 1, 1};
  d.pad_begin = {4, 0, 0};
  d.pad_end = {4, 0, 0};
  d.stride = {5, 1, 1};
  // Padded length 11, out = (11-5)/5+1 = 2. Window 0 covers -4..0: only tap 4 meets x[0].
  // Window 1 covers 1..5: taps 0 and 1 meet x[1] and x[2]. Taps 2 and 3 only ever see padding.
  Rng rng(kSeed + 2);
  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
  const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
  const std::vector<double> want = ref::conv_backward_filter(d, x.data(), dy.data());
  for (int64_t oi = 0; oi < 4; ++oi) {  // OIW: 4 (o, i) pairs of 5 taps
    ASSERT_EQ(want[oi * 5 + 2], 0.0);
    ASSERT_EQ(want[oi * 5 + 3], 0.0);
    ASSERT_NE(want[oi * 5 + 4], 0.0);
  }
  for (float fill : {std::nanf(""), -7.0f}) {
    std::vector<float> dw(want.size(), fill);
    conv_backward_filter(d, x.data(), dy.data(), dw.data());
    EXPECT_TRUE(all_close("dw", dw.data(), want, conv_weight_shape(d), 2, describe(d)));
  }
}

}  // namespace
}  // namespace convjit::testing
