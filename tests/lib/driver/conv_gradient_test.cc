// The library's backward ops are the gradients of the library's forward: central differences
// of L = sum(y * r) (accumulated in double from the float y of conv_forward) against
// conv_backward_data(dy = r) and conv_backward_filter(dy = r). No oracle involved.
//
// The forward is linear in x and in w, so a central difference has no truncation error at any
// step; a large step (0.5) keeps the float rounding of y small relative to the change of L.
// The step actually taken is (float)(v + h) - (float)(v - h), measured, not assumed.
#include <gtest/gtest.h>

#include <cmath>

#include "convjit/ops.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

namespace convjit::testing {
namespace {

ConvDims make(int32_t rank, Layout layout, Mode mode, int64_t batch, int64_t in_channels, int64_t out_channels,
              int64_t groups, Extent in, Extent kernel, Extent stride, Extent dilation, Extent pad_begin,
              Extent pad_end) {
  ConvDims d;
  d.rank = rank;
  d.layout = layout;
  d.mode = mode;
  d.batch = batch;
  d.in_channels = in_channels;
  d.out_channels = out_channels;
  d.groups = groups;
  d.in_size = in;
  d.kernel = kernel;
  d.stride = stride;
  d.dilation = dilation;
  d.pad_begin = pad_begin;
  d.pad_end = pad_end;
  return d;
}

std::vector<ConvDims> gradient_shapes() {
  constexpr Layout C = Layout::NCHW, L = Layout::NHWC;
  constexpr Mode X = Mode::CrossCorrelation, V = Mode::Convolution;
  return {
      make(1, C, X, 2, 3, 2, 1, {9, 1, 1}, {3, 1, 1}, {2, 1, 1}, {1, 1, 1}, {1, 0, 0}, {2, 0, 0}),
      make(1, L, V, 1, 4, 6, 2, {11, 1, 1}, {2, 1, 1}, {1, 1, 1}, {3, 1, 1}, {0, 0, 0}, {1, 0, 0}),
      make(2, C, X, 1, 2, 3, 1, {5, 6, 1}, {3, 2, 1}, {2, 1, 1}, {1, 2, 1}, {1, 0, 0}, {0, 1, 0}),
      make(2, L, V, 2, 3, 6, 3, {6, 5, 1}, {2, 3, 1}, {1, 2, 1}, {2, 1, 1}, {0, 1, 0}, {1, 1, 0}),  // depthwise x2
      make(2, C, V, 1, 4, 4, 2, {7, 7, 1}, {3, 3, 1}, {3, 2, 1}, {1, 1, 1}, {3, 2, 0}, {1, 0, 0}),  // pad >= kernel
      make(2, L, X, 1, 2, 2, 2, {4, 5, 1}, {1, 3, 1}, {2, 1, 1}, {1, 2, 1}, {0, 0, 0}, {1, 2, 0}),
      make(3, C, X, 1, 2, 2, 1, {4, 3, 4}, {2, 2, 2}, {1, 2, 1}, {1, 1, 2}, {1, 0, 0}, {0, 1, 1}),
      make(3, L, V, 1, 2, 4, 2, {3, 4, 3}, {2, 1, 2}, {2, 1, 1}, {1, 1, 1}, {0, 1, 1}, {1, 0, 0}),
  };
}

// L(x, w) = sum_j y_j r_j with y = conv_forward(x, w), in double.
double loss(const ConvDims& d, const std::vector<float>& x, const std::vector<float>& w,
            const std::vector<float>& r) {
  std::vector<float> y = nan_buffer(int64_t(r.size()));
  conv_forward(d, x.data(), w.data(), y.data());
  double l = 0.0;
  for (size_t j = 0; j < r.size(); ++j) l += double(y[j]) * double(r[j]);
  return l;
}

// dL/dv_i for every element of `v` (x or w) by central differences.
template <typename Loss>
std::vector<double> finite_differences(std::vector<float> v, Loss loss_of) {
  constexpr float h = 0.5f;
  std::vector<double> g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float original = v[i];
    const float plus = original + h, minus = original - h;
    v[i] = plus;
    const double l_plus = loss_of(v);
    v[i] = minus;
    const double l_minus = loss_of(v);
    v[i] = original;
    g[i] = (l_plus - l_minus) / (double(plus) - double(minus));
  }
  return g;
}

TEST(ConvGradient, BackwardOpsAreFiniteDifferenceGradientsOfForward) {
  const std::vector<ConvDims> shapes = gradient_shapes();
  for (size_t s = 0; s < shapes.size(); ++s) {
    const ConvDims& d = shapes[s];
    Rng rng(case_seed(0x6AD, s));
    const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
    const std::vector<float> r = random_floats(rng, ref::conv_output_elements(d));

    const std::vector<double> fd_x = finite_differences(x, [&](const std::vector<float>& v) { return loss(d, v, w, r); });
    const std::vector<double> fd_w = finite_differences(w, [&](const std::vector<float>& v) { return loss(d, x, v, r); });

    std::vector<float> dx = nan_buffer(int64_t(x.size())), dw = nan_buffer(int64_t(w.size()));
    conv_backward_data(d, r.data(), w.data(), dx.data());
    conv_backward_filter(d, x.data(), r.data(), dw.data());
    // 1e-3 of the largest gradient: the differences carry the float rounding of every y.
    double scale_x = 0, scale_w = 0;
    for (double v : fd_x) scale_x = std::max(scale_x, std::fabs(v));
    for (double v : fd_w) scale_w = std::max(scale_w, std::fabs(v));
    ASSERT_GT(scale_x, 0.1) << describe(d);
    ASSERT_GT(scale_w, 0.1) << describe(d);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(dx[i], fd_x[i], 1e-3 * scale_x) << "dx, " << conv_input_shape(d).name(int64_t(i)) << "\n  "
                                                  << describe(d);
    }
    for (size_t i = 0; i < w.size(); ++i) {
      EXPECT_NEAR(dw[i], fd_w[i], 1e-3 * scale_w) << "dw, " << conv_weight_shape(d).name(int64_t(i)) << "\n  "
                                                  << describe(d);
    }
  }
}

}  // namespace
}  // namespace convjit::testing
