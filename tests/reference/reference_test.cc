// The oracle is checked before anything is checked against it: hand-computed answers, the
// adjoint identities that make backward the transpose of forward, finite differences for the
// nonlinear pooling gradients, and invariance under rank padding and layout swaps.
#include "reference/reference.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <numeric>

#include "support/compare.hpp"
#include "support/hand_cases.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"
#include "support/transforms.hpp"

namespace convjit::testing {
namespace {

std::vector<double> random_doubles(Rng& rng, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = rng.uniform(-1.0, 1.0);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const std::string& context) {
  ASSERT_EQ(got.size(), want.size()) << context;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << context << " index " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol) << context << " index " << i;
    }
  }
}

TEST(Reference, ConvForwardHandCases) {
  for (const ConvForwardCase& c : conv_forward_hand_cases()) {
    const std::vector<double> y =
        ref::conv_forward(c.dims, c.x.data(), c.w.data(), c.bias.empty() ? nullptr : c.bias.data(), c.activation);
    expect_near_all(y, c.y, 1e-12, c.name);
  }
}

TEST(Reference, ConvBackwardHandCases) {
  for (const ConvBackwardCase& c : conv_backward_hand_cases()) {
    expect_near_all(ref::conv_backward_data(c.dims, c.dy.data(), c.w.data()), c.dx, 1e-12, c.name + " dx");
    expect_near_all(ref::conv_backward_filter(c.dims, c.x.data(), c.dy.data()), c.dw, 1e-12, c.name + " dw");
  }
}

TEST(Reference, PoolHandCases) {
  for (const PoolCase& c : pool_hand_cases()) {
    const std::vector<float> y = to_float(c.y);
    switch (c.op) {
      case PoolOp::Max:
        expect_near_all(ref::maxpool_forward(c.dims, c.x.data()), c.y, 0.0, c.name);
        if (!c.dy.empty())
          expect_near_all(ref::maxpool_backward(c.dims, c.x.data(), y.data(), c.dy.data()), c.dx, 0.0, c.name);
        break;
      case PoolOp::Mean:
        expect_near_all(ref::meanpool_forward(c.dims, c.x.data()), c.y, 1e-12, c.name);
        if (!c.dy.empty()) expect_near_all(ref::meanpool_backward(c.dims, c.dy.data()), c.dx, 1e-12, c.name);
        break;
      case PoolOp::LpNorm:
        expect_near_all(ref::lpnormpool_forward(c.dims, c.p, c.x.data()), c.y, 1e-12, c.name);
        if (!c.dy.empty())
          expect_near_all(ref::lpnormpool_backward(c.dims, c.p, c.x.data(), y.data(), c.dy.data()), c.dx, 1e-12,
                          c.name);
        break;
    }
  }
}

TEST(Reference, OutputSizeFormula) {
  // out = floor((in + pb + pe - d*(k-1) - 1) / s) + 1, per dim, outermost first.
  ConvDims d;
  d.rank = 3;
  d.in_size = {7, 10, 5};
  d.kernel = {3, 2, 5};
  d.stride = {2, 3, 1};
  d.dilation = {1, 2, 1};
  d.pad_begin = {0, 1, 2};
  d.pad_end = {1, 0, 0};
  // D: (7+0+1-2-1)/2+1 = 5/2+1 = 3;  H: (10+1+0-2-1)/3+1 = 8/3+1 = 3;  W: (5+2+0-4-1)/1+1 = 3
  EXPECT_EQ(ref::conv_output_size(d), (Extent{3, 3, 3}));
  PoolDims p;
  p.rank = 2;
  p.in_size = {9, 4, 1};
  p.window = {3, 2, 1};  // stride 0 = the window
  // H: (9-3)/3+1 = 3;  W: (4-2)/2+1 = 2
  EXPECT_EQ(ref::pool_output_size(p), (Extent{3, 2, 1}));
}

// <conv(x, w), dy> = <x, backward_data(dy, w)> = <w, backward_filter(x, dy)>: the backward ops
// are the adjoints (transposes) of the forward, i.e. its exact gradients since it is bilinear.
TEST(Reference, BackwardOpsAreAdjointsOfForward) {
  const std::vector<ConvDims> shapes = random_conv_sweep(0x5EED0001, 300);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ConvDims& d = shapes[i];
    Rng rng(case_seed(0x5EED0001, i));
    const std::vector<double> x = random_doubles(rng, ref::conv_input_elements(d));
    const std::vector<double> w = random_doubles(rng, ref::conv_weight_elements(d));
    const std::vector<double> dy = random_doubles(rng, ref::conv_output_elements(d));
    const double y_dy = dot(ref::conv_forward(d, x.data(), w.data(), nullptr, Activation::Identity), dy);
    const double x_dx = dot(x, ref::conv_backward_data(d, dy.data(), w.data()));
    const double w_dw = dot(w, ref::conv_backward_filter(d, x.data(), dy.data()));
    const double tol = 1e-9 * (1.0 + std::fabs(y_dy));
    EXPECT_NEAR(x_dx, y_dy, tol) << describe(d);
    EXPECT_NEAR(w_dw, y_dy, tol) << describe(d);
  }
}

// The pooling gradients are checked against central differences of the forward, in double.
TEST(Reference, PoolBackwardMatchesFiniteDifferences) {
  ShapeLimits small;  // every input element costs six forward passes
  small.max_batch = 2;
  small.max_channels = 3;
  small.max_in_size[0] = 12;
  small.max_in_size[1] = 6;
  small.max_in_size[2] = 4;
  small.max_multiply_adds = 400;
  const std::vector<PoolDims> shapes = random_pool_sweep(0x5EED0002, 60, small);
  for (size_t s = 0; s < shapes.size(); ++s) {
    const PoolDims& d = shapes[s];
    Rng rng(case_seed(0x5EED0002, s));
    const int64_t n = ref::pool_input_elements(d);
    // Distinct values at least 1e-3 apart, so max-pool argmaxes survive a 1e-6 perturbation; |x|
    // >= 0.05 keeps the Lp gradient smooth.
    std::vector<double> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[i] = (0.05 + 1e-3 * double(i)) * (rng.chance(0.5) ? 1.0 : -1.0);
    for (int64_t i = n - 1; i > 0; --i) std::swap(x[i], x[rng.uniform_int(0, i)]);
    const std::vector<double> r = random_doubles(rng, ref::pool_output_elements(d));
    const double p = std::vector<double>{0.7, 1.0, 1.5, 2.0, 3.0}[s % 5];

    const std::vector<double> y_max = ref::maxpool_forward(d, x.data());
    const std::vector<double> y_lp = ref::lpnormpool_forward(d, p, x.data());
    const std::vector<double> g_max = ref::maxpool_backward(d, x.data(), y_max.data(), r.data());
    const std::vector<double> g_mean = ref::meanpool_backward(d, r.data());
    const std::vector<double> g_lp = ref::lpnormpool_backward(d, p, x.data(), y_lp.data(), r.data());

    const double h = 1e-6;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<double> xp = x, xm = x;
      xp[i] += h;
      xm[i] -= h;
      auto loss = [&](const std::vector<double>& y) {
        double l = 0;
        for (size_t j = 0; j < y.size(); ++j) {
          if (std::fabs(y[j]) != double(FLT_MAX)) l += y[j] * r[j];  // padding-only windows are constant
        }
        return l;
      };
      const double fd_max = (loss(ref::maxpool_forward(d, xp.data())) - loss(ref::maxpool_forward(d, xm.data()))) / (2 * h);
      const double fd_mean =
          (loss(ref::meanpool_forward(d, xp.data())) - loss(ref::meanpool_forward(d, xm.data()))) / (2 * h);
      const double fd_lp =
          (loss(ref::lpnormpool_forward(d, p, xp.data())) - loss(ref::lpnormpool_forward(d, p, xm.data()))) / (2 * h);
      EXPECT_NEAR(g_max[i], fd_max, 1e-6) << describe(d) << " x index " << i;
      EXPECT_NEAR(g_mean[i], fd_mean, 1e-6) << describe(d) << " x index " << i;
      EXPECT_NEAR(g_lp[i], fd_lp, 1e-5 * (1.0 + std::fabs(g_lp[i]))) << describe(d) << " p=" << p << " x index " << i;
    }
  }
}

// A rank-1 problem is the rank-2 problem with a leading dim of 1, and the rank-3 one with two.
TEST(Reference, RanksAreUniform) {
  Rng rng(0x5EED0003);
  for (int i = 0; i < 40; ++i) {
    const ConvDims d1 = random_conv(rng, 1, i % 2 ? Layout::NHWC : Layout::NCHW,
                                    i % 4 < 2 ? Mode::Convolution : Mode::CrossCorrelation);
    ConvDims d2 = d1, d3 = d1;
    d2.rank = 2;
    d3.rank = 3;
    auto lift = [](Extent& e, int64_t fill, int32_t rank) {
      const Extent old = e;
      e = {fill, fill, fill};
      e[rank - 1] = old[0];
    };
    for (auto* d : {&d2, &d3}) {
      lift(d->in_size, 1, d->rank);
      lift(d->kernel, 1, d->rank);
      lift(d->stride, 1 + i % 3, d->rank);  // any stride/dilation on a dim of size 1 and kernel 1
      lift(d->dilation, 1 + i % 2, d->rank);
      lift(d->pad_begin, 0, d->rank);
      lift(d->pad_end, 0, d->rank);
    }
    const std::vector<double> x = random_doubles(rng, ref::conv_input_elements(d1));
    const std::vector<double> w = random_doubles(rng, ref::conv_weight_elements(d1));
    const std::vector<double> y1 = ref::conv_forward(d1, x.data(), w.data(), nullptr, Activation::Identity);
    EXPECT_EQ(ref::conv_forward(d2, x.data(), w.data(), nullptr, Activation::Identity), y1) << describe(d2);
    EXPECT_EQ(ref::conv_forward(d3, x.data(), w.data(), nullptr, Activation::Identity), y1) << describe(d3);
  }
}

// NHWC/OHWI on transposed data gives the transposed NCHW/OIHW result; convolution equals
// cross-correlation with the kernel flipped.
TEST(Reference, LayoutAndModeEquivalences) {
  Rng rng(0x5EED0004);
  for (int i = 0; i < 60; ++i) {
    const int32_t rank = 1 + i % 3;
    const ConvDims d = random_conv(rng, rank, Layout::NCHW, Mode::CrossCorrelation);
    ConvDims last = d;
    last.layout = Layout::NHWC;
    ConvDims conv = d;
    conv.mode = Mode::Convolution;
    const int64_t ipg = d.in_channels / d.groups;
    int64_t taps = 1, in_pixels = 1, out_pixels = 1;
    const Extent out = ref::conv_output_size(d);
    for (int k = 0; k < rank; ++k) {
      taps *= d.kernel[k];
      in_pixels *= d.in_size[k];
      out_pixels *= out[k];
    }
    const std::vector<double> x = random_doubles(rng, ref::conv_input_elements(d));
    const std::vector<double> w = random_doubles(rng, ref::conv_weight_elements(d));
    const std::vector<double> y = ref::conv_forward(d, x.data(), w.data(), nullptr, Activation::Identity);

    const std::vector<double> y_last = ref::conv_forward(
        last, channels_first_to_last(x, d.batch, d.in_channels, in_pixels).data(),
        oihw_to_ohwi(w, d.out_channels, ipg, taps).data(), nullptr, Activation::Identity);
    expect_near_all(channels_last_to_first(y_last, d.batch, d.out_channels, out_pixels), y, 1e-12, describe(last));

    const std::vector<double> y_conv =
        ref::conv_forward(conv, x.data(), flip_kernel(w, d).data(), nullptr, Activation::Identity);
    expect_near_all(y_conv, y, 1e-12, describe(conv));
  }
}

// The sweep covers what it promises: every rank, layout and mode, groups, depthwise with a
// multiplier, stride above the kernel, padding as large as the dilated kernel.
TEST(RandomShapes, SweepCoversTheSpace) {
  const std::vector<ConvDims> conv = random_conv_sweep(0xC0FFEE, 500);
  int depthwise_multiplier = 0, grouped = 0, big_padding = 0, stride_over_kernel = 0, non_square = 0;
  int combos[3][2][2] = {};
  for (const ConvDims& d : conv) {
    EXPECT_GE(ref::conv_output_elements(d), 1);
    combos[d.rank - 1][int(d.layout)][int(d.mode)]++;
    if (d.groups == d.in_channels && d.out_channels > d.in_channels) ++depthwise_multiplier;
    if (d.groups > 1 && d.groups < d.in_channels) ++grouped;
    for (int k = 0; k < d.rank; ++k) {
      const int64_t extent = d.dilation[k] * (d.kernel[k] - 1) + 1;
      if (d.pad_begin[k] >= extent || d.pad_end[k] >= extent) ++big_padding;
      if (d.stride[k] > d.kernel[k]) ++stride_over_kernel;
      if (k > 0 && d.kernel[k] != d.kernel[0]) ++non_square;
    }
  }
  for (auto& r : combos)
    for (auto& l : r)
      for (int m : l) EXPECT_GE(m, 30);
  EXPECT_GE(depthwise_multiplier, 20);
  EXPECT_GE(grouped, 50);
  EXPECT_GE(big_padding, 20);
  EXPECT_GE(stride_over_kernel, 50);
  EXPECT_GE(non_square, 50);
  // Deterministic: the same seed gives the same shapes.
  const std::vector<ConvDims> again = random_conv_sweep(0xC0FFEE, 500);
  for (size_t i = 0; i < conv.size(); ++i) EXPECT_EQ(describe(again[i]), describe(conv[i]));

  int padding_only_windows = 0, default_stride = 0;
  for (const PoolDims& d : random_pool_sweep(0xC0FFEE, 500)) {
    EXPECT_GE(ref::pool_output_elements(d), 1);
    for (int k = 0; k < d.rank; ++k) {
      const int64_t extent = d.dilation[k] * (d.window[k] - 1) + 1;
      if (d.pad_begin[k] >= extent || d.pad_end[k] >= extent) ++padding_only_windows;
      if (d.stride[k] == 0) ++default_stride;
    }
  }
  EXPECT_GE(padding_only_windows, 20);
  EXPECT_GE(default_stride, 20);
}

}  // namespace
}  // namespace convjit::testing
