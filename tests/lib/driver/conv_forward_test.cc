// lib/driver/conv_forward.cpp: y = activation(conv(x, w) + bias) against hand-computed values, the
// oracle on 500+ random shapes, and metamorphic relations that need no oracle at all.
#include <gtest/gtest.h>

#include <cmath>

#include "convjit/ops.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/hand_cases.hpp"
#include "support/op_checks.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"
#include "support/transforms.hpp"

namespace convjit::testing {
namespace {

constexpr uint64_t kSeed = 0xF0D0001;
constexpr int kMaxReportedFailures = 10;

TEST(ConvForward, HandComputedCases) {
  for (const ConvForwardCase& c : conv_forward_hand_cases()) {
    std::vector<float> y = nan_buffer(int64_t(c.y.size()));
    ASSERT_EQ(ref::conv_output_elements(c.dims), int64_t(c.y.size())) << c.name;
    conv_forward(c.dims, c.x.data(), c.w.data(), c.bias.empty() ? nullptr : c.bias.data(), c.activation, y.data());
    EXPECT_TRUE(all_close(c.name, y.data(), c.y, conv_output_shape(c.dims), 1, describe(c.dims)));
  }
}

TEST(ConvForward, ConvenienceOverloadIsIdentityWithoutBias) {
  const ConvForwardCase c = conv_forward_hand_cases()[0];  // 1d_k2_xcorr: y = [5 8 11]
  std::vector<float> y = nan_buffer(3);
  conv_forward(c.dims, c.x.data(), c.w.data(), y.data());
  EXPECT_TRUE(all_close(c.name, y.data(), c.y, conv_output_shape(c.dims), 1, describe(c.dims)));
}

// 1000+ random shapes; each draws bias-or-none and an activation.
TEST(ConvForward, MatchesReferenceOnRandomShapes) {
  const std::vector<ConvDims> shapes = random_conv_sweep(kSeed, 1020);
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < kMaxReportedFailures; ++i) {
    Rng rng(case_seed(kSeed, i));
    const bool with_bias = rng.chance(0.5);
    const Activation activation = rng.chance(0.5) ? Activation::Relu : Activation::Identity;
    const auto result = check_conv_forward(shapes[i], rng.next(), with_bias, activation);
    EXPECT_TRUE(result) << "case " << i;
    failures += !result;
  }
}

TEST(ConvForward, MatchesReferenceOnLargerShapes) {
  const std::vector<ConvDims> shapes = larger_conv_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_TRUE(check_conv_forward(shapes[i], case_seed(kSeed + 1, i), i % 2 == 0,
                                   i % 3 == 0 ? Activation::Relu : Activation::Identity));
  }
}

TEST(ConvForward, MatchesReferenceOnWideChannelShapes) {
  const std::vector<ConvDims> shapes = random_conv_sweep(kSeed + 5, 120, wide_channel_limits());
  int failures = 0;
  for (size_t i = 0; i < shapes.size() && failures < kMaxReportedFailures; ++i) {
    Rng rng(case_seed(kSeed + 5, i));
    const auto result = check_conv_forward(shapes[i], rng.next(), rng.chance(0.5),
                                           rng.chance(0.5) ? Activation::Relu : Activation::Identity);
    EXPECT_TRUE(result) << "case " << i;
    failures += !result;
  }
}

// Without an oracle: NHWC/OHWI on transposed data is the transposed NCHW/OIHW result, and
// convolution is cross-correlation with every kernel dim reversed.
// Depthwise with one channel per group has tier-0 paths of its own: NHWC vectorizes across
// groups (blocks of 8, 16 and 32 channels), NCHW keeps kernels in registers (up to 3x3, 1x4 and 1x5;
// with AVX-512 also 4x4 and 5x5).
// Channel counts around those blocks, long rows, every rank and mode, both layouts; larger
// kernels take the NHWC twin or the general tile (covered too).
TEST(ConvForward, MatchesReferenceOnDepthwiseShapes) {
  for (int i = 0; i < 300; ++i) {
    Rng rng(case_seed(kSeed + 6, i));
    ConvDims d;
    d.rank = int32_t(rng.uniform_int(1, 3));
    d.layout = i % 2 ? Layout::NCHW : Layout::NHWC;
    d.mode = rng.chance(0.5) ? Mode::Convolution : Mode::CrossCorrelation;
    d.batch = rng.uniform_int(1, 2);
    d.groups = d.in_channels = d.out_channels = rng.uniform_int(1, 45);
    for (int k = 0; k < d.rank; ++k) {
      d.kernel[k] = rng.uniform_int(1, d.rank == 3 ? 3 : 5);
      d.stride[k] = rng.uniform_int(1, 3);
      d.dilation[k] = rng.uniform_int(1, 2);
      const int64_t extent = (d.kernel[k] - 1) * d.dilation[k] + 1;
      d.pad_begin[k] = rng.uniform_int(0, extent);
      d.pad_end[k] = rng.uniform_int(0, extent);
      d.in_size[k] =
          rng.uniform_int(std::max<int64_t>(1, extent - d.pad_begin[k] - d.pad_end[k]), d.rank == 3 ? 9 : 40);
    }
    const bool with_bias = rng.chance(0.5);
    const Activation activation = rng.chance(0.5) ? Activation::Relu : Activation::Identity;
    EXPECT_TRUE(check_conv_forward(d, rng.next(), with_bias, activation)) << "case " << i;
  }
}

// A 3D depthwise problem whose single output plane reads only D padding (in_d 1, pad_begin_d 1,
// stride_d 2): bias then relu of nothing, not the convolution of input plane 0.
TEST(ConvForward, DepthwiseOutputPlaneInThePaddingIsBiasOnly) {
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    ConvDims d;
    d.rank = 3;
    d.layout = layout;
    d.groups = d.in_channels = d.out_channels = 2;
    d.in_size = {1, 5, 9};
    d.kernel = {1, 3, 3};
    d.stride = {2, 1, 1};
    d.pad_begin = {1, 1, 1};
    d.pad_end = {0, 1, 1};
    for (const Activation activation : {Activation::Identity, Activation::Relu}) {
      EXPECT_TRUE(check_conv_forward(d, kSeed + 7, true, activation)) << describe(d);
    }
  }
}

TEST(ConvForward, LayoutsAndModesAgreeWithEachOther) {
  Rng rng(kSeed + 2);
  for (int i = 0; i < 60; ++i) {
    const int32_t rank = 1 + i % 3;
    const ConvDims d = random_conv(rng, rank, Layout::NCHW, Mode::CrossCorrelation);
    ConvDims last = d;
    last.layout = Layout::NHWC;
    ConvDims conv = d;
    conv.mode = Mode::Convolution;
    const Extent out = ref::conv_output_size(d);
    int64_t taps = 1, in_pixels = 1, out_pixels = 1;
    for (int k = 0; k < rank; ++k) {
      taps *= d.kernel[k];
      in_pixels *= d.in_size[k];
      out_pixels *= out[k];
    }
    const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
    std::vector<float> y = nan_buffer(ref::conv_output_elements(d));
    conv_forward(d, x.data(), w.data(), y.data());
    const std::vector<double> want = to_double(y);

    std::vector<float> y_last = nan_buffer(int64_t(y.size()));
    conv_forward(last, channels_first_to_last(x, d.batch, d.in_channels, in_pixels).data(),
                 oihw_to_ohwi(w, d.out_channels, d.in_channels / d.groups, taps).data(), y_last.data());
    const std::vector<float> y_last_as_first = channels_last_to_first(y_last, d.batch, d.out_channels, out_pixels);
    EXPECT_TRUE(all_close("NHWC vs NCHW", y_last_as_first.data(), want, conv_output_shape(d),
                          (d.in_channels / d.groups) * taps, describe(last)));

    std::vector<float> y_conv = nan_buffer(int64_t(y.size()));
    conv_forward(conv, x.data(), flip_kernel(w, d).data(), y_conv.data());
    EXPECT_TRUE(all_close("convolution vs flipped cross-correlation", y_conv.data(), want, conv_output_shape(d),
                          (d.in_channels / d.groups) * taps, describe(conv)));
  }
}

// The call is stateless: the same pointers with new weight values give the new result (a
// cache keyed by the weight pointer would return the old one).
TEST(ConvForward, WeightsUpdatedInPlaceAreReadAgain) {
  ConvDims d;
  d.in_channels = 3;
  d.out_channels = 4;
  d.in_size = {6, 7, 1};
  d.kernel = {3, 3, 1};
  Rng rng(kSeed + 3);
  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
  std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
  std::vector<float> bias = random_floats(rng, d.out_channels);
  std::vector<float> y = nan_buffer(ref::conv_output_elements(d));
  for (int step = 0; step < 4; ++step) {
    conv_forward(d, x.data(), w.data(), bias.data(), Activation::Identity, y.data());
    EXPECT_TRUE(all_close("step " + std::to_string(step), y.data(),
                          ref::conv_forward(d, x.data(), w.data(), bias.data(), Activation::Identity),
                          conv_output_shape(d), 27, describe(d)));
    for (float& v : w) v = 0.5f * v + 0.25f;  // an "optimizer step", same buffer
    for (float& v : bias) v -= 0.5f;
  }
}

// Relu clamps exactly at zero: negative pre-activations give +0, never a tiny negative.
TEST(ConvForward, ReluOutputsAreNonNegative) {
  const std::vector<ConvDims> shapes = random_conv_sweep(kSeed + 4, 60);
  for (size_t i = 0; i < shapes.size(); ++i) {
    Rng rng(case_seed(kSeed + 4, i));
    const ConvDims& d = shapes[i];
    const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
    const std::vector<float> bias = random_floats(rng, d.out_channels, -2.0f, 0.0f);
    std::vector<float> y = nan_buffer(ref::conv_output_elements(d));
    conv_forward(d, x.data(), w.data(), bias.data(), Activation::Relu, y.data());
    int64_t negative = 0;
    for (float v : y) negative += !(v >= 0.0f);
    EXPECT_EQ(negative, 0) << describe(d);
  }
}

}  // namespace
}  // namespace convjit::testing
