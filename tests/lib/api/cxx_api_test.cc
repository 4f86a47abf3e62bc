// lib/api/cxx_api.cpp: argument checks beyond the dims (pointers, the activation enum, Lp's p),
// each throwing convjit::Error(CONVJIT_EINVAL) that names the argument, with no output written.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "convjit/ops.hpp"
#include "reference/reference.hpp"
#include "support/bad_inputs.hpp"
#include "support/compare.hpp"

namespace convjit::testing {
namespace {

constexpr size_t kBufferFloats = 4096;

template <typename F>
void expect_invalid_naming(const std::string& label, const std::string& word, F call) {
  try {
    call();
    ADD_FAILURE() << label << ": no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CONVJIT_EINVAL) << label;
    EXPECT_TRUE(contains_word(e.what(), word)) << label << ": message does not name \"" << word << "\": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": threw something other than convjit::Error: " << e.what();
  }
}

struct Buffers {
  std::vector<float> a = sentinel_buffer(kBufferFloats), b = sentinel_buffer(kBufferFloats),
                     c = sentinel_buffer(kBufferFloats), out = sentinel_buffer(kBufferFloats);
  bool untouched() const { return holds_sentinel(a) && holds_sentinel(b) && holds_sentinel(c) && holds_sentinel(out); }
};

TEST(CxxApi, NullConvPointersAreRejected) {
  const ConvDims d = valid_conv_dims();
  Buffers m;
  float* o = m.out.data();
  const float *a = m.a.data(), *b = m.b.data();
  expect_invalid_naming("forward x", "x", [&] { conv_forward(d, nullptr, b, nullptr, Activation::Identity, o); });
  expect_invalid_naming("forward w", "w", [&] { conv_forward(d, a, nullptr, nullptr, Activation::Identity, o); });
  expect_invalid_naming("forward y", "y", [&] { conv_forward(d, a, b, nullptr, Activation::Identity, nullptr); });
  expect_invalid_naming("backward_data dy", "dy", [&] { conv_backward_data(d, nullptr, b, o); });
  expect_invalid_naming("backward_data w", "w", [&] { conv_backward_data(d, a, nullptr, o); });
  expect_invalid_naming("backward_data dx", "dx", [&] { conv_backward_data(d, a, b, nullptr); });
  expect_invalid_naming("backward_filter x", "x", [&] { conv_backward_filter(d, nullptr, b, o); });
  expect_invalid_naming("backward_filter dy", "dy", [&] { conv_backward_filter(d, a, nullptr, o); });
  expect_invalid_naming("backward_filter dw", "dw", [&] { conv_backward_filter(d, a, b, nullptr); });
  EXPECT_TRUE(m.untouched());
}

TEST(CxxApi, NullBiasMeansNoBias) {
  const ConvDims d = valid_conv_dims();
  std::vector<float> x(static_cast<size_t>(ref::conv_input_elements(d)), 0.25f), w(size_t(ref::conv_weight_elements(d)), -0.5f);
  std::vector<float> y = nan_buffer(ref::conv_output_elements(d));
  conv_forward(d, x.data(), w.data(), nullptr, Activation::Identity, y.data());
  EXPECT_TRUE(all_close("y", y.data(), ref::conv_forward(d, x.data(), w.data(), nullptr, Activation::Identity),
                        conv_output_shape(d), 12, describe(d)));
}

TEST(CxxApi, UnknownActivationIsRejected) {
  const ConvDims d = valid_conv_dims();
  Buffers m;
  for (int32_t value : {2, -1, 1000}) {
    expect_invalid_naming("activation " + std::to_string(value), "activation", [&] {
      conv_forward(d, m.a.data(), m.b.data(), m.c.data(), Activation(value), m.out.data());
    });
  }
  EXPECT_TRUE(m.untouched());
}

TEST(CxxApi, NullPoolPointersAreRejected) {
  const PoolDims d = valid_pool_dims();
  Buffers m;
  float* o = m.out.data();
  const float *a = m.a.data(), *b = m.b.data(), *c = m.c.data();
  expect_invalid_naming("maxpool_forward x", "x", [&] { maxpool_forward(d, nullptr, o); });
  expect_invalid_naming("maxpool_forward y", "y", [&] { maxpool_forward(d, a, nullptr); });
  expect_invalid_naming("meanpool_forward x", "x", [&] { meanpool_forward(d, nullptr, o); });
  expect_invalid_naming("meanpool_forward y", "y", [&] { meanpool_forward(d, a, nullptr); });
  expect_invalid_naming("lpnormpool_forward x", "x", [&] { lpnormpool_forward(d, 2.0f, nullptr, o); });
  expect_invalid_naming("lpnormpool_forward y", "y", [&] { lpnormpool_forward(d, 2.0f, a, nullptr); });
  expect_invalid_naming("maxpool_backward x", "x", [&] { maxpool_backward(d, nullptr, b, c, o); });
  expect_invalid_naming("maxpool_backward y", "y", [&] { maxpool_backward(d, a, nullptr, c, o); });
  expect_invalid_naming("maxpool_backward dy", "dy", [&] { maxpool_backward(d, a, b, nullptr, o); });
  expect_invalid_naming("maxpool_backward dx", "dx", [&] { maxpool_backward(d, a, b, c, nullptr); });
  expect_invalid_naming("meanpool_backward dy", "dy", [&] { meanpool_backward(d, nullptr, o); });
  expect_invalid_naming("meanpool_backward dx", "dx", [&] { meanpool_backward(d, a, nullptr); });
  expect_invalid_naming("lpnormpool_backward x", "x", [&] { lpnormpool_backward(d, 2.0f, nullptr, b, c, o); });
  expect_invalid_naming("lpnormpool_backward y", "y", [&] { lpnormpool_backward(d, 2.0f, a, nullptr, c, o); });
  expect_invalid_naming("lpnormpool_backward dy", "dy", [&] { lpnormpool_backward(d, 2.0f, a, b, nullptr, o); });
  expect_invalid_naming("lpnormpool_backward dx", "dx", [&] { lpnormpool_backward(d, 2.0f, a, b, c, nullptr); });
  EXPECT_TRUE(m.untouched());
}

TEST(CxxApi, LpNormPowerMustBePositiveAndFinite) {
  const PoolDims d = valid_pool_dims();
  Buffers m;
  const float inf = std::numeric_limits<float>::infinity();
  for (float p : {0.0f, -0.0f, -1.0f, -2.5f, inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
    const std::string label = "p = " + std::to_string(p);
    expect_invalid_naming(label + " forward", "p", [&] { lpnormpool_forward(d, p, m.a.data(), m.out.data()); });
    expect_invalid_naming(label + " backward", "p", [&] {
      lpnormpool_backward(d, p, m.a.data(), m.b.data(), m.c.data(), m.out.data());
    });
  }
  EXPECT_TRUE(m.untouched());
  // Any positive finite power is legal, however small.
  std::vector<float> x(static_cast<size_t>(ref::pool_input_elements(d)), 0.5f), y = nan_buffer(ref::pool_output_elements(d));
  EXPECT_NO_THROW(lpnormpool_forward(d, 1e-3f, x.data(), y.data()));
}

}  // namespace
}  // namespace convjit::testing
