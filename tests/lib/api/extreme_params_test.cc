// Valid problems at the edges of int64: padding, strides and dilations of 2^20 to 2^40 (a stride up to
// int64's largest) around inputs of a few elements (outputs of a few elements too), in every layout and rank,
// through every op. Each must match the oracle with its outputs between guard zones; under the sanitizer
// build (tests/sanitizers) no kernel may form a pointer outside its buffers on the way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "convjit/ops.hpp"
#include "support/op_checks.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

constexpr int64_t kHuge = int64_t(1) << 40;
constexpr int64_t kLarge = int64_t(1) << 20;

std::vector<ConvDims> extreme_convs() {
  std::vector<ConvDims> out;
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    for (int32_t rank = 1; rank <= 3; ++rank) {
      const auto last = size_t(rank - 1);
      // Huge padding on both sides, a dilation that jumps over the whole input, a huge stride.
      ConvDims a = conv(rank, layout, 1, 2, 3, 1, {3, 3, 3}, {2, 2, 2});
      a.pad_begin[last] = a.pad_end[last] = kHuge;
      a.dilation[last] = kHuge;
      a.stride[last] = kHuge;
      out.push_back(a);
      // Padding only before, stride just over the input, depthwise.
      ConvDims b = conv(rank, layout, 2, 3, 6, 3, {4, 4, 4}, {3, 1, 1}, {kLarge, 1, 1}, {kLarge, 0, 0});
      out.push_back(b);
      // A dilation as large as the padding allows, convolution mode.
      ConvDims c = conv(rank, layout, 1, 1, 2, 1, {5, 5, 5}, {2, 2, 2});
      c.dilation[0] = kHuge;
      c.pad_begin[0] = kHuge;
      c.mode = Mode::Convolution;
      out.push_back(c);
      // Depthwise with one channel per group (tier 0's own kernels), huge padding and dilation.
      ConvDims d = conv(rank, layout, 2, 8, 8, 8, {6, 6, 6}, {3, 3, 3});
      d.pad_begin[last] = d.pad_end[last] = kHuge;
      d.dilation[last] = kHuge;
      out.push_back(d);
      // Few channels (the direct tiles and backward filter kernel), a huge stride along W.
      ConvDims e = conv(rank, layout, 1, 2, 2, 1, {7, 7, 7}, {3, 3, 3});
      e.stride[last] = kHuge;
      e.pad_begin[last] = kLarge;
      out.push_back(e);
      // Depthwise, a stride along W as large as int64 holds: one output column, whose neighbour
      // lies past any address (the fuzzer found a kernel stepping a pointer by it).
      ConvDims f = conv(rank, layout, 2, 8, 8, 8, {6, 6, 6}, {3, 3, 3});
      f.stride[last] = std::numeric_limits<int64_t>::max();
      out.push_back(f);
      // More output channels than the direct kernels take, W stride 1, a 2-tap W kernel dilated
      // to 2^62 over 3 columns padded by 2^61 on each side: the W span, like the padded row,
      // is near int64's limit (the NCHW twin rule weighs the flattened grid's junk by it).
      ConvDims g = conv(rank, layout, 1, 2, 16, 1, {3, 3, 3}, {2, 2, 2});
      g.dilation[last] = int64_t(1) << 62;
      g.pad_begin[last] = g.pad_end[last] = int64_t(1) << 61;
      out.push_back(g);
    }
  }
  return out;
}

std::vector<PoolDims> extreme_pools() {
  std::vector<PoolDims> out;
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    for (int32_t rank = 1; rank <= 3; ++rank) {
      PoolDims d;
      d.rank = rank;
      d.layout = layout;
      d.batch = 2;
      d.channels = 3;
      for (int i = 0; i < rank; ++i) {
        d.in_size[size_t(i)] = 4;
        d.window[size_t(i)] = 2;
        d.stride[size_t(i)] = i == rank - 1 ? kHuge : 1;
        d.dilation[size_t(i)] = i == 0 ? kLarge : 1;
        d.pad_begin[size_t(i)] = i == 0 ? kLarge : 0;
        d.pad_end[size_t(i)] = i == rank - 1 ? kHuge : 0;
      }
      out.push_back(d);
    }
  }
  return out;
}

TEST(ExtremeParameters, EveryConvOpMatchesTheReference) {
  const std::vector<ConvDims> shapes = extreme_convs();
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_TRUE(check_conv_forward(shapes[i], 100 + i, true, Activation::Relu)) << "case " << i;
    EXPECT_TRUE(check_conv_backward_data(shapes[i], 200 + i)) << "case " << i;
    EXPECT_TRUE(check_conv_backward_filter(shapes[i], 300 + i)) << "case " << i;
  }
}

TEST(ExtremeParameters, EveryPoolOpMatchesTheReference) {
  const std::vector<PoolDims> shapes = extreme_pools();
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_TRUE(check_maxpool_forward(shapes[i], 400 + i, PoolValues::Continuous)) << "case " << i;
    EXPECT_TRUE(check_maxpool_backward(shapes[i], 500 + i, PoolValues::Continuous)) << "case " << i;
    EXPECT_TRUE(check_meanpool_forward(shapes[i], 600 + i)) << "case " << i;
    EXPECT_TRUE(check_meanpool_backward(shapes[i], 700 + i)) << "case " << i;
    EXPECT_TRUE(check_lpnormpool_forward(shapes[i], 2.0f, 800 + i)) << "case " << i;
    EXPECT_TRUE(check_lpnormpool_backward(shapes[i], 2.0f, 900 + i)) << "case " << i;
  }
}

// NCHW windows of whole rows (the whole-rows kernels) with D/H steps no int64 holds times x's
// strides: a dilation of 2^62 reaching into padding as large, a window wholly in padding of 2^62
// before the input, and one window of that dilation (mean backward's kernel). Every pool op
// matches the oracle, and the sanitizer build sees no overflow.
TEST(ExtremeParameters, WholeRowWindowsWithHugeStepsAlongH) {
  constexpr int64_t kVast = int64_t(1) << 62;
  PoolDims base;
  base.rank = 2;
  base.layout = Layout::NCHW;
  base.batch = 2;
  base.channels = 17;
  base.in_size = {2, 9, 1};  // 18 taps a window: the whole-rows forward takes it
  base.window = {2, 9, 1};
  base.stride = {1, 1, 1};
  std::vector<PoolDims> shapes;
  PoolDims dilated = base;  // a second row 2^62 on: in the padding
  dilated.dilation = {kVast, 1, 1};
  dilated.pad_end = {kVast, 0, 0};
  shapes.push_back(dilated);
  PoolDims one_window = dilated;  // a stride past the padding: one output along H
  one_window.stride = {kVast + 1, 1, 1};
  shapes.push_back(one_window);
  PoolDims in_padding = base;  // output 0's window wholly in 2^62 of padding
  in_padding.in_size = {4, 9, 1};
  in_padding.window = {4, 9, 1};
  in_padding.stride = {kVast, 1, 1};
  in_padding.pad_begin = {kVast, 0, 0};
  shapes.push_back(in_padding);
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_TRUE(check_maxpool_forward(shapes[i], 1000 + i, PoolValues::Continuous)) << "case " << i;
    EXPECT_TRUE(check_maxpool_backward(shapes[i], 1100 + i, PoolValues::Continuous)) << "case " << i;
    EXPECT_TRUE(check_meanpool_forward(shapes[i], 1200 + i)) << "case " << i;
    EXPECT_TRUE(check_meanpool_backward(shapes[i], 1300 + i)) << "case " << i;
  }
}

// A window with more taps than int64 holds (3 x 2^62: it reaches far into huge padding, one tap of
// it real): the real taps are pooled, mean pooling divides by the window's size as a float, and
// nothing overflows on the way (the sanitizer build checks that). The fuzzer found the overflow.
TEST(ExtremeParameters, AWindowWithMoreTapsThanInt64Holds) {
  constexpr int64_t kWide = int64_t(1) << 62;
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    PoolDims d;
    d.rank = 2;
    d.layout = layout;
    d.channels = 2;
    d.in_size = {4, 1, 1};
    d.window = {3, kWide, 1};
    d.stride = {1, 1, 1};
    d.pad_begin = {0, kWide - 1, 0};  // the window's last W tap is the only real one
    std::vector<float> x(8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 2.5f;
    std::vector<float> y(4), mean(4), dx(8, -1.0f), dy = {1.0f, 2.0f, 3.0f, 4.0f};
    maxpool_forward(d, x.data(), y.data());
    meanpool_forward(d, x.data(), mean.data());
    auto at = [&](int64_t h, int64_t c) { return layout == Layout::NCHW ? c * 4 + h : h * 2 + c; };
    const float divisor = float(3.0 * double(kWide));
    for (int64_t c = 0; c < 2; ++c) {
      for (int64_t oh = 0; oh < 2; ++oh) {
        const size_t o = size_t(layout == Layout::NCHW ? c * 2 + oh : oh * 2 + c);
        const float a = x[size_t(at(oh, c))], b = x[size_t(at(oh + 1, c))], e = x[size_t(at(oh + 2, c))];
        EXPECT_EQ(y[o], std::max(std::max(a, b), e)) << "max, channel " << c << ", row " << oh;
        EXPECT_EQ(mean[o], ((0.0f + a) + b + e) / divisor) << "mean, channel " << c << ", row " << oh;
      }
    }
    meanpool_backward(d, dy.data(), dx.data());
    for (float v : dx) EXPECT_TRUE(v >= 0.0f && v < 1e-18f) << v << ": the shares of a window of 3 x 2^62 taps";
    maxpool_backward(d, x.data(), y.data(), dy.data(), dx.data());
    float routed = 0;
    for (float v : dx) routed += v;
    EXPECT_EQ(routed, 1.0f + 2.0f + 3.0f + 4.0f) << "every window's gradient routed to one tap";
  }
}

}  // namespace
}  // namespace convjit::testing
