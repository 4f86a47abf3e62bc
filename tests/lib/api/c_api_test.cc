// lib/api/c_api.cpp, driven from C++: every validation rule through the C ABI (CONVJIT_EINVAL,
// convjit_last_error() naming the field, the same message the C++ API throws, no output byte
// written), NULL pointers including the params pointer, C-only rules (stride 0 is invalid,
// exclude_padding is 0 or 1), per-thread error messages, and a valid call's results.
// tests/c_api_test.c checks that the header itself compiles and links as C99.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <string>
#include <thread>

#include "convjit/convjit.h"
#include "convjit/ops.hpp"
#include "reference/reference.hpp"
#include "support/bad_inputs.hpp"
#include "support/compare.hpp"
#include "support/op_checks.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

constexpr size_t kBufferFloats = 4096;

// The status is EINVAL and the thread's message contains every one of `fields` (and, when
// given, equals the message of the C++ API for the same problem).
void expect_einval(const std::string& label, convjit_status status, const std::vector<std::string>& fields,
                   const std::string& cxx_message = "") {
  EXPECT_EQ(status, CONVJIT_EINVAL) << label;
  const char* message = convjit_last_error();
  ASSERT_NE(message, nullptr) << label;
  for (const std::string& field : fields) {
    EXPECT_NE(std::string(message).find(field), std::string::npos)
        << label << ": message does not name \"" << field << "\": " << message;
  }
  if (!cxx_message.empty()) {
    EXPECT_EQ(std::string(message), cxx_message) << label;
  }
}

// As above for a one-letter argument name ("x", "p"), which must appear as a word of its own.
void expect_einval_naming(const std::string& label, convjit_status status, const std::string& name) {
  EXPECT_EQ(status, CONVJIT_EINVAL) << label;
  const char* message = convjit_last_error();
  ASSERT_NE(message, nullptr) << label;
  EXPECT_TRUE(contains_word(message, name)) << label << ": message does not name \"" << name << "\": " << message;
}

template <typename F>
std::string cxx_message(F call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CApi, EveryInvalidConvFieldIsRejected) {
  for (const BadConvCase& c : bad_conv_cases()) {
    SCOPED_TRACE(c.name + ": " + describe(c.dims));
    const convjit_conv_params p = c_params(c.dims);
    const std::string expected = cxx_message([&] { (void)c.dims.output_size(); });
    const std::vector<float> a = sentinel_buffer(kBufferFloats), b = sentinel_buffer(kBufferFloats);
    std::vector<float> out = sentinel_buffer(kBufferFloats);
    int64_t out_size[3] = {-7, -7, -7};
    expect_einval("conv_output_size", convjit_conv_output_size(&p, out_size), c.message_words, expected);
    EXPECT_EQ(out_size[0], -7);
    EXPECT_EQ(out_size[1], -7);
    EXPECT_EQ(out_size[2], -7);
    expect_einval("conv_forward", convjit_conv_forward(&p, a.data(), b.data(), a.data(), CONVJIT_ACT_RELU, out.data()),
                  c.message_words, expected);
    expect_einval("conv_backward_data", convjit_conv_backward_data(&p, a.data(), b.data(), out.data()),
                  c.message_words, expected);
    expect_einval("conv_backward_filter", convjit_conv_backward_filter(&p, a.data(), b.data(), out.data()),
                  c.message_words, expected);
    EXPECT_TRUE(holds_sentinel(out) && holds_sentinel(a) && holds_sentinel(b)) << "a buffer was written";
  }
}

TEST(CApi, EveryInvalidPoolFieldIsRejected) {
  std::vector<BadPoolCase> cases = bad_pool_cases();
  // C-only rules: a stride of 0 is not defaulted, and exclude_padding is a 0/1 flag.
  std::vector<std::pair<BadPoolCase, convjit_pool_params>> all;
  for (const BadPoolCase& c : cases) all.push_back({c, c_params(c.dims)});
  {
    BadPoolCase c{"c_stride_0", valid_pool_dims(), {"stride[0]"}};
    convjit_pool_params p = c_params(c.dims);
    p.stride[0] = 0;
    all.push_back({c, p});
    c.name = "c_exclude_padding_2";
    c.message_words = {"exclude_padding"};
    p = c_params(c.dims);
    p.exclude_padding = 2;
    all.push_back({c, p});
  }
  for (const auto& [c, p] : all) {
    SCOPED_TRACE(c.name + ": " + describe(c.dims));
    const std::vector<float> a = sentinel_buffer(kBufferFloats), b = sentinel_buffer(kBufferFloats);
    const std::vector<float> e = sentinel_buffer(kBufferFloats);
    std::vector<float> out = sentinel_buffer(kBufferFloats);
    const auto& words = c.message_words;
    int64_t out_size[3] = {-7, -7, -7};
    expect_einval("pool_output_size", convjit_pool_output_size(&p, out_size), words);
    EXPECT_EQ(out_size[0], -7);
    expect_einval("maxpool_forward", convjit_maxpool_forward(&p, a.data(), out.data()), words);
    expect_einval("meanpool_forward", convjit_meanpool_forward(&p, a.data(), out.data()), words);
    expect_einval("lpnormpool_forward", convjit_lpnormpool_forward(&p, 2.0f, a.data(), out.data()), words);
    expect_einval("maxpool_backward", convjit_maxpool_backward(&p, a.data(), b.data(), e.data(), out.data()), words);
    expect_einval("meanpool_backward", convjit_meanpool_backward(&p, a.data(), out.data()), words);
    expect_einval("lpnormpool_backward",
                  convjit_lpnormpool_backward(&p, 2.0f, a.data(), b.data(), e.data(), out.data()), words);
    EXPECT_TRUE(holds_sentinel(out) && holds_sentinel(a) && holds_sentinel(b) && holds_sentinel(e))
        << "a buffer was written";
  }
}

// A dilated kernel of exactly INT64_MAX elements: the message states it without overflowing.
TEST(CApi, TheLargestDilatedKernelIsReportedExactly) {
  convjit_conv_params p = conv(1, Layout::NCHW, 1, 1, 1, 1, {5, 1, 1}, {2, 1, 1}).to_c();
  p.dilation[0] = std::numeric_limits<int64_t>::max();
  int64_t out[3];
  ASSERT_EQ(convjit_conv_output_size(&p, out), CONVJIT_EINVAL);
  const std::string message = convjit_last_error();
  EXPECT_NE(message.find("dilated kernel 9223372036854775808"), std::string::npos) << message;
  EXPECT_EQ(message.find("-9223372036854775808"), std::string::npos) << message;
}

TEST(CApi, NullPointersAreRejected) {
  const convjit_conv_params cp = c_params(valid_conv_dims());
  const convjit_pool_params pp = c_params(valid_pool_dims());
  const std::vector<float> a = sentinel_buffer(kBufferFloats), b = sentinel_buffer(kBufferFloats);
  const std::vector<float> c = sentinel_buffer(kBufferFloats);
  std::vector<float> out = sentinel_buffer(kBufferFloats);
  const float *x = a.data(), *w = b.data(), *e = c.data();
  float* o = out.data();
  int64_t size[3];
  const convjit_activation id = CONVJIT_ACT_IDENTITY;

  EXPECT_EQ(convjit_conv_output_size(nullptr, size), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_conv_output_size(&cp, nullptr), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_pool_output_size(nullptr, size), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_pool_output_size(&pp, nullptr), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_conv_forward(nullptr, x, w, nullptr, id, o), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_conv_backward_data(nullptr, x, w, o), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_conv_backward_filter(nullptr, x, w, o), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_maxpool_forward(nullptr, x, o), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_meanpool_forward(nullptr, x, o), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_lpnormpool_forward(nullptr, 2.0f, x, o), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_maxpool_backward(nullptr, x, w, e, o), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_meanpool_backward(nullptr, x, o), CONVJIT_EINVAL);
  EXPECT_EQ(convjit_lpnormpool_backward(nullptr, 2.0f, x, w, e, o), CONVJIT_EINVAL);

  expect_einval_naming("forward x", convjit_conv_forward(&cp, nullptr, w, nullptr, id, o), "x");
  expect_einval_naming("forward w", convjit_conv_forward(&cp, x, nullptr, nullptr, id, o), "w");
  expect_einval_naming("forward y", convjit_conv_forward(&cp, x, w, nullptr, id, nullptr), "y");
  expect_einval_naming("backward_data dy", convjit_conv_backward_data(&cp, nullptr, w, o), "dy");
  expect_einval_naming("backward_data w", convjit_conv_backward_data(&cp, x, nullptr, o), "w");
  expect_einval_naming("backward_data dx", convjit_conv_backward_data(&cp, x, w, nullptr), "dx");
  expect_einval_naming("backward_filter x", convjit_conv_backward_filter(&cp, nullptr, w, o), "x");
  expect_einval_naming("backward_filter dy", convjit_conv_backward_filter(&cp, x, nullptr, o), "dy");
  expect_einval_naming("backward_filter dw", convjit_conv_backward_filter(&cp, x, w, nullptr), "dw");

  expect_einval_naming("maxpool_forward x", convjit_maxpool_forward(&pp, nullptr, o), "x");
  expect_einval_naming("maxpool_forward y", convjit_maxpool_forward(&pp, x, nullptr), "y");
  expect_einval_naming("meanpool_forward x", convjit_meanpool_forward(&pp, nullptr, o), "x");
  expect_einval_naming("meanpool_forward y", convjit_meanpool_forward(&pp, x, nullptr), "y");
  expect_einval_naming("lpnormpool_forward x", convjit_lpnormpool_forward(&pp, 2.0f, nullptr, o), "x");
  expect_einval_naming("lpnormpool_forward y", convjit_lpnormpool_forward(&pp, 2.0f, x, nullptr), "y");
  expect_einval_naming("maxpool_backward x", convjit_maxpool_backward(&pp, nullptr, w, e, o), "x");
  expect_einval_naming("maxpool_backward y", convjit_maxpool_backward(&pp, x, nullptr, e, o), "y");
  expect_einval_naming("maxpool_backward dy", convjit_maxpool_backward(&pp, x, w, nullptr, o), "dy");
  expect_einval_naming("maxpool_backward dx", convjit_maxpool_backward(&pp, x, w, e, nullptr), "dx");
  expect_einval_naming("meanpool_backward dy", convjit_meanpool_backward(&pp, nullptr, o), "dy");
  expect_einval_naming("meanpool_backward dx", convjit_meanpool_backward(&pp, x, nullptr), "dx");
  expect_einval_naming("lpnormpool_backward x", convjit_lpnormpool_backward(&pp, 2.0f, nullptr, w, e, o), "x");
  expect_einval_naming("lpnormpool_backward y", convjit_lpnormpool_backward(&pp, 2.0f, x, nullptr, e, o), "y");
  expect_einval_naming("lpnormpool_backward dy", convjit_lpnormpool_backward(&pp, 2.0f, x, w, nullptr, o), "dy");
  expect_einval_naming("lpnormpool_backward dx", convjit_lpnormpool_backward(&pp, 2.0f, x, w, e, nullptr), "dx");
  EXPECT_TRUE(holds_sentinel(out) && holds_sentinel(a) && holds_sentinel(b) && holds_sentinel(c));
}

TEST(CApi, UnknownActivationAndBadPowerAreRejected) {
  const convjit_conv_params cp = c_params(valid_conv_dims());
  const convjit_pool_params pp = c_params(valid_pool_dims());
  const std::vector<float> a = sentinel_buffer(kBufferFloats), b = sentinel_buffer(kBufferFloats);
  std::vector<float> out = sentinel_buffer(kBufferFloats);
  for (int32_t act : {2, -1, 77}) {
    expect_einval_naming("activation " + std::to_string(act), convjit_conv_forward(&cp, a.data(), b.data(), nullptr, act, out.data()), "activation");
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float p : {0.0f, -1.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
    const std::string label = "p = " + std::to_string(p);
    expect_einval_naming(label, convjit_lpnormpool_forward(&pp, p, a.data(), out.data()), "p");
    expect_einval_naming(label, convjit_lpnormpool_backward(&pp, p, a.data(), a.data(), b.data(), out.data()), "p");
  }
  EXPECT_TRUE(holds_sentinel(out) && holds_sentinel(a) && holds_sentinel(b));
}

// Entries beyond `rank` are not read, whatever they hold.
TEST(CApi, EntriesBeyondRankAreIgnored) {
  ConvDims d;
  d.rank = 1;
  d.in_channels = 2;
  d.out_channels = 3;
  d.in_size = {10, 1, 1};
  d.kernel = {3, 1, 1};
  convjit_conv_params p = c_params(d);
  for (int i = 1; i < 3; ++i) {
    p.in_size[i] = 0;
    p.kernel[i] = -5;
    p.stride[i] = 0;
    p.dilation[i] = 0;
    p.pad_begin[i] = -1;
    p.pad_end[i] = INT64_MAX;
  }
  int64_t size[3] = {0, 0, 0};
  ASSERT_EQ(convjit_conv_output_size(&p, size), CONVJIT_OK) << convjit_last_error();
  EXPECT_EQ(size[0], 8);
  Rng rng(0xCA11);
  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
  const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
  std::vector<float> y = nan_buffer(ref::conv_output_elements(d));
  ASSERT_EQ(convjit_conv_forward(&p, x.data(), w.data(), nullptr, CONVJIT_ACT_IDENTITY, y.data()), CONVJIT_OK);
  EXPECT_TRUE(all_close("y", y.data(), ref::conv_forward(d, x.data(), w.data(), nullptr, Activation::Identity),
                        conv_output_shape(d), 6, describe(d)));

  PoolDims pd;
  pd.rank = 2;
  pd.in_size = {5, 6, 1};
  pd.window = {2, 3, 1};
  pd.stride = {2, 3, 1};
  convjit_pool_params pp = c_params(pd);
  pp.in_size[2] = -1;
  pp.window[2] = 0;
  pp.stride[2] = 0;
  pp.dilation[2] = 0;
  ASSERT_EQ(convjit_pool_output_size(&pp, size), CONVJIT_OK) << convjit_last_error();
  EXPECT_EQ(size[0], 2);  // (5-2)/2+1
  EXPECT_EQ(size[1], 2);  // (6-3)/3+1
}

// The C ABI computes what the C++ API computes (same kernels behind one shim).
TEST(CApi, ValidCallsMatchTheReference) {
  Rng rng(0xCA12);
  for (int i = 0; i < 24; ++i) {
    const ConvDims d = random_conv(rng, 1 + i % 3, i % 2 ? Layout::NHWC : Layout::NCHW,
                                   i % 4 < 2 ? Mode::Convolution : Mode::CrossCorrelation);
    const convjit_conv_params p = c_params(d);
    const std::string context = describe(d);
    const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
    const std::vector<float> bias = random_floats(rng, d.out_channels);
    const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
    std::vector<float> y = nan_buffer(int64_t(dy.size())), dx = nan_buffer(int64_t(x.size())),
                       dw = nan_buffer(int64_t(w.size()));
    int64_t size[3];
    ASSERT_EQ(convjit_conv_output_size(&p, size), CONVJIT_OK);
    const Extent want_size = ref::conv_output_size(d);
    for (int k = 0; k < d.rank; ++k) EXPECT_EQ(size[k], want_size[k]) << context;
    ASSERT_EQ(convjit_conv_forward(&p, x.data(), w.data(), bias.data(), CONVJIT_ACT_RELU, y.data()), CONVJIT_OK);
    ASSERT_EQ(convjit_conv_backward_data(&p, dy.data(), w.data(), dx.data()), CONVJIT_OK);
    ASSERT_EQ(convjit_conv_backward_filter(&p, x.data(), dy.data(), dw.data()), CONVJIT_OK);
    int64_t taps = 1, out_pixels = 1;
    for (int k = 0; k < d.rank; ++k) {
      taps *= d.kernel[k];
      out_pixels *= want_size[k];
    }
    EXPECT_TRUE(all_close("y", y.data(), ref::conv_forward(d, x.data(), w.data(), bias.data(), Activation::Relu),
                          conv_output_shape(d), (d.in_channels / d.groups) * taps, context));
    EXPECT_TRUE(all_close("dx", dx.data(), ref::conv_backward_data(d, dy.data(), w.data()), conv_input_shape(d),
                          (d.out_channels / d.groups) * taps, context));
    EXPECT_TRUE(all_close("dw", dw.data(), ref::conv_backward_filter(d, x.data(), dy.data()), conv_weight_shape(d),
                          d.batch * out_pixels, context));

    PoolDims pd = random_pool(rng, 1 + i % 3, i % 2 ? Layout::NHWC : Layout::NCHW);
    for (int k = 0; k < 3; ++k) {
      if (pd.stride[k] == 0) pd.stride[k] = pd.window[k];  // the C ABI has no default
    }
    const convjit_pool_params pp = c_params(pd);
    const std::string pool_context = describe(pd);
    const std::vector<float> px = random_floats(rng, ref::pool_input_elements(pd));
    const std::vector<float> pdy = random_floats(rng, ref::pool_output_elements(pd));
    std::vector<float> py = nan_buffer(int64_t(pdy.size())), pdx = nan_buffer(int64_t(px.size()));
    int64_t window = 1;
    for (int k = 0; k < pd.rank; ++k) window *= pd.window[k];
    ASSERT_EQ(convjit_maxpool_forward(&pp, px.data(), py.data()), CONVJIT_OK);
    EXPECT_TRUE(all_equal("max y", py.data(), ref::maxpool_forward(pd, px.data()), pool_output_shape(pd),
                          pool_context));
    ASSERT_EQ(convjit_maxpool_backward(&pp, px.data(), py.data(), pdy.data(), pdx.data()), CONVJIT_OK);
    EXPECT_TRUE(all_close("max dx", pdx.data(), ref::maxpool_backward(pd, px.data(), py.data(), pdy.data()),
                          pool_input_shape(pd), window, pool_context));
    ASSERT_EQ(convjit_meanpool_forward(&pp, px.data(), py.data()), CONVJIT_OK);
    EXPECT_TRUE(all_close("mean y", py.data(), ref::meanpool_forward(pd, px.data()), pool_output_shape(pd), window,
                          pool_context));
    ASSERT_EQ(convjit_meanpool_backward(&pp, pdy.data(), pdx.data()), CONVJIT_OK);
    EXPECT_TRUE(all_close("mean dx", pdx.data(), ref::meanpool_backward(pd, pdy.data()), pool_input_shape(pd), window,
                          pool_context));
    ASSERT_EQ(convjit_lpnormpool_forward(&pp, 2.0f, px.data(), py.data()), CONVJIT_OK);
    EXPECT_TRUE(all_close("lp y", py.data(), ref::lpnormpool_forward(pd, 2.0, px.data()), pool_output_shape(pd),
                          window, pool_context));
    ASSERT_EQ(convjit_lpnormpool_backward(&pp, 2.0f, px.data(), py.data(), pdy.data(), pdx.data()), CONVJIT_OK);
    EXPECT_TRUE(all_close("lp dx", pdx.data(), ref::lpnormpool_backward(pd, 2.0, px.data(), py.data(), pdy.data()),
                          pool_input_shape(pd), window, pool_context));
  }
}

// convjit_last_error() is per thread: an error in one thread does not replace another's message.
TEST(CApi, LastErrorIsPerThread) {
  ConvDims bad_stride = valid_conv_dims();
  bad_stride.stride[1] = 0;
  ConvDims bad_groups = valid_conv_dims();
  bad_groups.groups = 5;
  const convjit_conv_params p_stride = c_params(bad_stride), p_groups = c_params(bad_groups);
  int64_t size[3];

  std::promise<void> main_failed, other_failed;
  std::string other_message_after;
  std::thread other([&] {
    main_failed.get_future().wait();
    EXPECT_EQ(convjit_conv_output_size(&p_groups, size), CONVJIT_EINVAL);
    other_failed.set_value();
    other_message_after = convjit_last_error();
  });
  EXPECT_EQ(convjit_conv_output_size(&p_stride, size), CONVJIT_EINVAL);
  const std::string mine_before = convjit_last_error();
  main_failed.set_value();
  other_failed.get_future().wait();
  const std::string mine_after = convjit_last_error();
  other.join();
  EXPECT_TRUE(contains_word(mine_before, "stride[1]")) << mine_before;
  EXPECT_EQ(mine_after, mine_before);
  EXPECT_TRUE(contains_word(other_message_after, "groups")) << other_message_after;
  EXPECT_FALSE(contains_word(other_message_after, "stride[1]")) << other_message_after;
}

}  // namespace
}  // namespace convjit::testing
