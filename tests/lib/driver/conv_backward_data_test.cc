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

// Rows longer than the register-tile path's row tile, with many channels and few images (the
// tasks split the input channels, more finely with more threads): the same bits for every thread
// count, so the row tile, which orders each dx element's sum, must not depend on it.
TEST(ConvBackwardData, LongRowsGiveTheSameBitsOnEveryThreadCount) {
  for (Layout layout : {Layout::NHWC, Layout::NCHW}) {
    // Kernel 5, stride 2: three contributions to half the elements (two sum the same in any order).
    const ConvDims d = conv(1, layout, 1, 256, 256, 1, {2001, 1, 1}, {5, 1, 1}, {2, 1, 1}, {2, 0, 0});
    Rng rng(kSeed + 4);
    const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
    const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
    std::vector<std::vector<float>> dx;
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      dx.push_back(nan_buffer(ref::conv_input_elements(d)));
      conv_backward_data(d, dy.data(), w.data(), dx.back().data());
    }
    set_num_threads(0);
    EXPECT_TRUE(all_close("1 thread", dx[0].data(), ref::conv_backward_data(d, dy.data(), w.data()),
                          conv_input_shape(d), 256 * 5, describe(d)));
    EXPECT_TRUE(bitwise_equal("2 threads vs 1", dx[1], dx[0], conv_input_shape(d), describe(d)));
    EXPECT_TRUE(bitwise_equal("3 threads vs 1", dx[2], dx[0], conv_input_shape(d), describe(d)));
  }
}

}  // namespace
}  // namespace convjit::testing
