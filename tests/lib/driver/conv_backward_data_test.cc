// lib/driver/conv_backward_data.cpp: dx from dy and w.
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

constexpr uint64_t kSeed = 0xBD0001;
constexpr int kMaxReportedFailures = 10;

TEST(ConvBackwardData, HandComputedCases) {
  for (const ConvBackwardCase& c : conv_backward_hand_cases()) {
    std::vector<float> dx = nan_buffer(int64_t(c.dx.size()));
    ASSERT_EQ(ref::conv_input_elements(c.dims), int64_t(c.dx.size())) << c.name;
    conv_backward_data(c.dims, c.dy.data(), c.w.data(), dx.data());
    EXPECT_TRUE(all_close(c.name, dx.data(), c.dx, conv_input_shape(c.dims), 1, describe(c.dims)));
  }
}

TEST(ConvBackwardData, MatchesReferenceOnRandomShapes) {
  const std::vector<ConvDims> shapes = random_conv_sweep(kSeed, 1020);
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < kMaxReportedFailures; ++i) {
    const auto result = check_conv_backward_data(shapes[i], case_seed(kSeed, i));
    EXPECT_TRUE(result) << "case " << i;
    failures += !result;
  }
}

TEST(ConvBackwardData, MatchesReferenceOnLargerShapes) {
  const std::vector<ConvDims> shapes = larger_conv_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_TRUE(check_conv_backward_data(shapes[i], case_seed(kSeed + 1, i)));
}

TEST(ConvBackwardData, MatchesReferenceOnWideChannelShapes) {
  const std::vector<ConvDims> shapes = random_conv_sweep(kSeed + 3, 120, wide_channel_limits());
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < kMaxReportedFailures; ++i) {
    const auto result = check_conv_backward_data(shapes[i], case_seed(kSeed + 3, i));
    EXPECT_TRUE(result) << "case " << i;
    failures += !result;
  }
}

// Input elements no window reaches (stride > dilated kernel, or a short last window) get an
// exact 0, not stale memory: dx is overwritten, never accumulated into.
TEST(ConvBackwardData, UnreachedInputsAreZero) {
  ConvDims d;
  d.rank = 2;
  d.in_channels = 2;
  d.out_channels = 3;
  d.in_size = {9, 10, 1};
  d.kernel = {2, 1, 1};
  d.stride = {3, 4, 1};
  Rng rng(kSeed + 2);
  const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
  const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
  const std::vector<double> want = ref::conv_backward_data(d, dy.data(), w.data());
  int64_t zeros = 0;
  for (double v : want) zeros += v == 0.0;
  ASSERT_GT(zeros, 50);  // the shape really leaves inputs unreached
  for (float fill : {std::nanf(""), 123.0f}) {
    std::vector<float> dx(want.size(), fill);
    conv_backward_data(d, dy.data(), w.data(), dx.data());
    EXPECT_TRUE(all_close("dx", dx.data(), want, conv_input_shape(d), 6, describe(d)));
  }
}

}  // namespace
}  // namespace convjit::testing
