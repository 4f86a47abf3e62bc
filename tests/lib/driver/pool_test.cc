// lib/driver/pool.cpp: max, mean (both padding rules) and Lp-norm pooling, forward and backward.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "convjit/ops.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/hand_cases.hpp"
#include "support/op_checks.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

constexpr uint64_t kSeed = 0x9001;
constexpr int kShapes = 1020;
constexpr int kMaxReportedFailures = 10;
constexpr float kPowers[] = {0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.5f};

// Runs check(dims, index) over the sweep, stopping after a few failing shapes.
template <typename Check>
void sweep(uint64_t seed, Check check) {
  const std::vector<PoolDims> shapes = random_pool_sweep(seed, kShapes);
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < kMaxReportedFailures; ++i) {
    const ::testing::AssertionResult result = check(shapes[i], case_seed(seed, i), i);
    EXPECT_TRUE(result) << "case " << i;
    failures += !result;
  }
}

TEST(Pool, HandComputedCases) {
  for (const PoolCase& c : pool_hand_cases()) {
    SCOPED_TRACE(c.name);
    const std::string context = describe(c.dims);
    ASSERT_EQ(ref::pool_output_elements(c.dims), int64_t(c.y.size()));
    std::vector<float> y = nan_buffer(int64_t(c.y.size()));
    const std::vector<float> y_in = to_float(c.y);
    std::vector<float> dx = nan_buffer(int64_t(c.x.size()));
    switch (c.op) {
      case PoolOp::Max:
        maxpool_forward(c.dims, c.x.data(), y.data());
        EXPECT_TRUE(all_equal("y", y.data(), c.y, pool_output_shape(c.dims), context));
        if (!c.dy.empty()) maxpool_backward(c.dims, c.x.data(), y_in.data(), c.dy.data(), dx.data());
        break;
      case PoolOp::Mean:
        meanpool_forward(c.dims, c.x.data(), y.data());
        EXPECT_TRUE(all_close("y", y.data(), c.y, pool_output_shape(c.dims), 1, context));
        if (!c.dy.empty()) meanpool_backward(c.dims, c.dy.data(), dx.data());
        break;
      case PoolOp::LpNorm:
        lpnormpool_forward(c.dims, c.p, c.x.data(), y.data());
        EXPECT_TRUE(all_close("y", y.data(), c.y, pool_output_shape(c.dims), 1, context));
        if (!c.dy.empty()) lpnormpool_backward(c.dims, c.p, c.x.data(), y_in.data(), c.dy.data(), dx.data());
        break;
    }
    if (!c.dy.empty()) {
      EXPECT_TRUE(all_close("dx", dx.data(), c.dx, pool_input_shape(c.dims), 1, context));
    }
  }
}

TEST(MaxPool, ForwardMatchesReference) {
  sweep(kSeed + 1, [](const PoolDims& d, uint64_t seed, size_t) {
    return check_maxpool_forward(d, seed, PoolValues::Continuous);
  });
}

TEST(MaxPool, ForwardIgnoresNaNUnlessAllTapsAreNaN) {
  sweep(kSeed + 2, [](const PoolDims& d, uint64_t seed, size_t) {
    return check_maxpool_forward(d, seed, PoolValues::SomeNaN);
  });
}

TEST(MaxPool, BackwardMatchesReference) {
  sweep(kSeed + 3, [](const PoolDims& d, uint64_t seed, size_t) {
    return check_maxpool_backward(d, seed, PoolValues::Continuous);
  });
}

// Integer inputs make ties common: the gradient must go to the first equal tap in scan order.
TEST(MaxPool, BackwardRoutesTiesToTheFirstTap) {
  sweep(kSeed + 4, [](const PoolDims& d, uint64_t seed, size_t) {
    return check_maxpool_backward(d, seed, PoolValues::SmallIntegers);
  });
}

TEST(MeanPool, ForwardMatchesReferenceWithBothPaddingRules) {
  sweep(kSeed + 5, [](PoolDims d, uint64_t seed, size_t) {
    d.exclude_padding = false;
    if (auto r = check_meanpool_forward(d, seed); !r) return r;
    d.exclude_padding = true;
    return check_meanpool_forward(d, seed);
  });
}

TEST(MeanPool, BackwardMatchesReferenceWithBothPaddingRules) {
  sweep(kSeed + 6, [](PoolDims d, uint64_t seed, size_t) {
    d.exclude_padding = false;
    if (auto r = check_meanpool_backward(d, seed); !r) return r;
    d.exclude_padding = true;
    return check_meanpool_backward(d, seed);
  });
}

TEST(LpNormPool, ForwardMatchesReference) {
  sweep(kSeed + 7, [](const PoolDims& d, uint64_t seed, size_t i) {
    return check_lpnormpool_forward(d, kPowers[i % 6], seed);
  });
}

TEST(LpNormPool, BackwardMatchesReference) {
  sweep(kSeed + 8, [](const PoolDims& d, uint64_t seed, size_t i) {
    return check_lpnormpool_backward(d, kPowers[i % 6], seed);
  });
}

TEST(Pool, AllOpsMatchReferenceOnLargerShapes) {
  const std::vector<PoolDims> shapes = larger_pool_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const uint64_t seed = case_seed(kSeed + 9, i);
    EXPECT_TRUE(check_maxpool_forward(shapes[i], seed, PoolValues::Continuous));
    EXPECT_TRUE(check_maxpool_backward(shapes[i], seed, PoolValues::SmallIntegers));
    EXPECT_TRUE(check_meanpool_forward(shapes[i], seed));
    EXPECT_TRUE(check_meanpool_backward(shapes[i], seed));
    EXPECT_TRUE(check_lpnormpool_forward(shapes[i], 2.0f, seed));
    EXPECT_TRUE(check_lpnormpool_backward(shapes[i], 3.0f, seed));
  }
}

// A window holding nothing but padding: max gives -FLT_MAX, mean 0 (window-size rule: the
// zeros of the padding), Lp 0; and none of them routes any gradient.
TEST(Pool, PaddingOnlyWindows) {
  PoolDims d;
  d.rank = 2;
  d.channels = 2;
  d.in_size = {2, 2, 1};
  d.window = {2, 2, 1};
  d.stride = {3, 3, 1};
  d.pad_begin = {3, 0, 0};
  // H: (2+3-1-1)/3+1 = 2 windows: rows -3..-2 (padding only) and rows 0..1. W: 1 window.
  const std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, -4};
  const std::vector<float> dy = {10, 20, 30, 40};  // (c, oh): c0 oh0, c0 oh1, c1 oh0, c1 oh1
  std::vector<float> y = nan_buffer(4), dx = nan_buffer(8);

  maxpool_forward(d, x.data(), y.data());
  EXPECT_TRUE(all_equal("max y", y.data(), {-double(FLT_MAX), 4, -double(FLT_MAX), -1}, pool_output_shape(d),
                        describe(d)));
  maxpool_backward(d, x.data(), y.data(), dy.data(), dx.data());
  EXPECT_TRUE(all_close("max dx", dx.data(), {0, 0, 0, 20, 40, 0, 0, 0}, pool_input_shape(d), 1, describe(d)));

  meanpool_forward(d, x.data(), y.data());  // (1+2+3+4)/4 = 2.5, (-10)/4 = -2.5
  EXPECT_TRUE(all_close("mean y", y.data(), {0, 2.5, 0, -2.5}, pool_output_shape(d), 1, describe(d)));
  meanpool_backward(d, dy.data(), dx.data());  // 20/4 = 5, 40/4 = 10
  EXPECT_TRUE(all_close("mean dx", dx.data(), {5, 5, 5, 5, 10, 10, 10, 10}, pool_input_shape(d), 1, describe(d)));

  lpnormpool_forward(d, 2.0f, x.data(), y.data());  // sqrt(1+4+9+16) = sqrt(30)
  const double r30 = std::sqrt(30.0);
  EXPECT_TRUE(all_close("lp y", y.data(), {0, r30, 0, r30}, pool_output_shape(d), 1, describe(d)));
}

// With exclude_padding, a padding-only window has no real tap to divide by; the oracle (and
// NNlib's count_include_pad=false) gives 0 rather than 0/0.
TEST(MeanPool, ExcludePaddingWithPaddingOnlyWindowIsZero) {
  PoolDims d;
  d.rank = 1;
  d.exclude_padding = true;
  d.in_size = {2, 1, 1};
  d.window = {2, 1, 1};
  d.stride = {2, 1, 1};
  d.pad_begin = {2, 0, 0};
  const std::vector<float> x = {3, 5};
  std::vector<float> y = nan_buffer(2), dx = nan_buffer(2);
  meanpool_forward(d, x.data(), y.data());  // windows: [pad pad] and [3 5]
  EXPECT_TRUE(all_close("y", y.data(), {0, 4}, pool_output_shape(d), 1, describe(d)));
  const std::vector<float> dy = {100, 2};
  meanpool_backward(d, dy.data(), dx.data());
  EXPECT_TRUE(all_close("dx", dx.data(), {1, 1}, pool_input_shape(d), 1, describe(d)));
}

// The C++ API's stride 0 means "the window" (NNlib's default).
TEST(Pool, ZeroStrideDefaultsToTheWindow) {
  Rng rng(kSeed + 10);
  for (int i = 0; i < 30; ++i) {
    PoolDims d = random_pool(rng, 1 + i % 3, i % 2 ? Layout::NHWC : Layout::NCHW);
    PoolDims explicit_stride = d;
    for (int k = 0; k < 3; ++k) {
      d.stride[k] = 0;
      explicit_stride.stride[k] = d.window[k];
    }
    const std::vector<float> x = random_floats(rng, ref::pool_input_elements(d));
    std::vector<float> a = nan_buffer(ref::pool_output_elements(explicit_stride));
    std::vector<float> b = nan_buffer(ref::pool_output_elements(explicit_stride));
    meanpool_forward(d, x.data(), a.data());
    meanpool_forward(explicit_stride, x.data(), b.data());
    EXPECT_TRUE(bitwise_equal("stride 0 vs window", a, b, pool_output_shape(d), describe(d)));
  }
}

// NaN taps: ignored while any real tap is a number; -inf is a number like any other.
TEST(MaxPool, NaNAndInfinityRules) {
  PoolDims d;
  d.rank = 1;
  d.in_size = {8, 1, 1};
  d.window = {2, 1, 1};
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {nan, -inf, -inf, -inf, 1, nan, inf, nan};
  std::vector<float> y = nan_buffer(4);
  maxpool_forward(d, x.data(), y.data());
  EXPECT_TRUE(all_equal("y", y.data(), {-double(inf), -double(inf), 1, double(inf)}, pool_output_shape(d),
                        describe(d)));
}

}  // namespace
}  // namespace convjit::testing
