// lib/api/dims.cpp and lib/problem/geometry.cpp: sizes of valid problems, the C struct conversions, and
// every validation rule through the C++ API (each op must throw convjit::Error with
// CONVJIT_EINVAL, a message naming the field, and leave its output untouched).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "convjit/ops.hpp"
#include "reference/reference.hpp"
#include "support/bad_inputs.hpp"
#include "support/compare.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

Extent first_rank(Extent e, int32_t rank) {
  for (int i = rank; i < 3; ++i) e[i] = 1;
  return e;
}

TEST(ConvDims, SizesMatchTheFormulaOnRandomShapes) {
  for (const ConvDims& d : random_conv_sweep(0xD1, 300)) {
    EXPECT_EQ(first_rank(d.output_size(), d.rank), ref::conv_output_size(d)) << describe(d);
    EXPECT_EQ(d.input_elements(), ref::conv_input_elements(d)) << describe(d);
    EXPECT_EQ(d.weight_elements(), ref::conv_weight_elements(d)) << describe(d);
    EXPECT_EQ(d.output_elements(), ref::conv_output_elements(d)) << describe(d);
  }
}

TEST(PoolDims, SizesMatchTheFormulaOnRandomShapes) {
  for (const PoolDims& d : random_pool_sweep(0xD2, 300)) {
    EXPECT_EQ(first_rank(d.output_size(), d.rank), ref::pool_output_size(d)) << describe(d);
    EXPECT_EQ(d.input_elements(), ref::pool_input_elements(d)) << describe(d);
    EXPECT_EQ(d.output_elements(), ref::pool_output_elements(d)) << describe(d);
  }
}

TEST(ConvDims, HandComputedOutputSizes) {
  ConvDims d;
  d.rank = 3;
  d.in_size = {7, 10, 5};
  d.kernel = {3, 2, 5};
  d.stride = {2, 3, 1};
  d.dilation = {1, 2, 1};
  d.pad_begin = {0, 1, 2};
  d.pad_end = {1, 0, 0};
  // D: (7+0+1-2-1)/2+1 = 3;  H: (10+1+0-2-1)/3+1 = 3 (floor of 8/3);  W: (5+2+0-4-1)/1+1 = 3
  EXPECT_EQ(d.output_size(), (Extent{3, 3, 3}));
  d.rank = 1;
  d.in_size = {28, 0, -5};  // entries beyond the rank are ignored
  d.kernel = {3, 0, 0};
  d.stride = {1, 0, 0};
  d.dilation = {1, 0, 0};
  d.pad_begin = {0, -1, -1};
  d.pad_end = {0, -1, -1};
  EXPECT_EQ(d.output_size()[0], 26);
  d.in_channels = 2;
  d.out_channels = 3;
  d.batch = 5;
  EXPECT_EQ(d.input_elements(), 5 * 2 * 28);
  EXPECT_EQ(d.weight_elements(), 3 * 2 * 3);
  EXPECT_EQ(d.output_elements(), 5 * 3 * 26);
}

bool same_params(const convjit_conv_params& a, const convjit_conv_params& b) {
  bool same = a.rank == b.rank && a.layout == b.layout && a.mode == b.mode && a.batch == b.batch &&
              a.in_channels == b.in_channels && a.out_channels == b.out_channels && a.groups == b.groups;
  for (int i = 0; i < 3; ++i) {
    same = same && a.in_size[i] == b.in_size[i] && a.kernel[i] == b.kernel[i] && a.stride[i] == b.stride[i] &&
           a.dilation[i] == b.dilation[i] && a.pad_begin[i] == b.pad_begin[i] && a.pad_end[i] == b.pad_end[i];
  }
  return same;
}

TEST(ConvDims, CStructRoundTrip) {
  for (const ConvDims& d : random_conv_sweep(0xD3, 50)) {
    const convjit_conv_params p = d.to_c();
    const convjit_conv_params mine = c_params(d);
    EXPECT_TRUE(same_params(p, mine)) << describe(d);
    EXPECT_EQ(describe(ConvDims::from_c(p)), describe(d));
  }
}

TEST(PoolDims, CStructResolvesDefaultStride) {
  PoolDims d;
  d.rank = 2;
  d.in_size = {9, 8, 1};
  d.window = {3, 2, 1};
  d.stride = {0, 1, 0};
  const convjit_pool_params p = d.to_c();
  EXPECT_EQ(p.stride[0], 3);
  EXPECT_EQ(p.stride[1], 1);
  EXPECT_EQ(d.output_size(), (Extent{3, 7, 1}));  // H: (9-3)/3+1 = 3, W: (8-2)/1+1 = 7
  PoolDims back = PoolDims::from_c(p);
  EXPECT_EQ(back.stride[0], 3);
  EXPECT_EQ(back.output_size(), d.output_size());
}

// Buffers big enough for the valid base problems; bad problems must not touch them at all.
constexpr size_t kBufferFloats = 4096;

// Runs `call`, expecting convjit::Error(CONVJIT_EINVAL) whose message contains every word.
template <typename F>
void expect_invalid(const std::string& label, const std::vector<std::string>& words, F call) {
  try {
    call();
    ADD_FAILURE() << label << ": no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CONVJIT_EINVAL) << label;
    for (const std::string& word : words) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos)
          << label << ": message does not name \"" << word << "\": " << e.what();
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": threw something other than convjit::Error: " << e.what();
  }
}

TEST(ConvDims, EveryInvalidFieldIsRejectedByEveryOp) {
  {  // the base problem is valid and fits the buffers
    const ConvDims base = valid_conv_dims();
    ASSERT_LE(size_t(ref::conv_input_elements(base)), kBufferFloats);
    ASSERT_LE(size_t(ref::conv_output_elements(base)), kBufferFloats);
    ASSERT_LE(size_t(ref::conv_weight_elements(base)), kBufferFloats);
    std::vector<float> x(kBufferFloats, 0.5f), w(kBufferFloats, 0.5f), y = nan_buffer(kBufferFloats);
    EXPECT_NO_THROW(conv_forward(base, x.data(), w.data(), y.data()));
  }
  for (const BadConvCase& c : bad_conv_cases()) {
    SCOPED_TRACE(c.name + ": " + describe(c.dims));
    const std::vector<float> in_a = sentinel_buffer(kBufferFloats), in_b = sentinel_buffer(kBufferFloats);
    std::vector<float> out = sentinel_buffer(kBufferFloats);
    expect_invalid("output_size", c.message_words, [&] { (void)c.dims.output_size(); });
    expect_invalid("input_elements", c.message_words, [&] { (void)c.dims.input_elements(); });
    expect_invalid("weight_elements", c.message_words, [&] { (void)c.dims.weight_elements(); });
    expect_invalid("output_elements", c.message_words, [&] { (void)c.dims.output_elements(); });
    expect_invalid("conv_forward", c.message_words, [&] {
      conv_forward(c.dims, in_a.data(), in_b.data(), in_a.data(), Activation::Relu, out.data());
    });
    EXPECT_TRUE(holds_sentinel(out)) << "conv_forward wrote its output";
    expect_invalid("conv_backward_data", c.message_words,
                   [&] { conv_backward_data(c.dims, in_a.data(), in_b.data(), out.data()); });
    EXPECT_TRUE(holds_sentinel(out)) << "conv_backward_data wrote its output";
    expect_invalid("conv_backward_filter", c.message_words,
                   [&] { conv_backward_filter(c.dims, in_a.data(), in_b.data(), out.data()); });
    EXPECT_TRUE(holds_sentinel(out)) << "conv_backward_filter wrote its output";
    EXPECT_TRUE(holds_sentinel(in_a) && holds_sentinel(in_b)) << "an input was written";
  }
}

TEST(PoolDims, EveryInvalidFieldIsRejectedByEveryOp) {
  {
    const PoolDims base = valid_pool_dims();
    ASSERT_LE(size_t(ref::pool_input_elements(base)), kBufferFloats);
    std::vector<float> x(kBufferFloats, 0.5f), y = nan_buffer(kBufferFloats);
    EXPECT_NO_THROW(maxpool_forward(base, x.data(), y.data()));
  }
  for (const BadPoolCase& c : bad_pool_cases()) {
    SCOPED_TRACE(c.name + ": " + describe(c.dims));
    const std::vector<float> a = sentinel_buffer(kBufferFloats), b = sentinel_buffer(kBufferFloats);
    const std::vector<float> e = sentinel_buffer(kBufferFloats);
    std::vector<float> out = sentinel_buffer(kBufferFloats);
    const std::vector<std::string>& words = c.message_words;
    expect_invalid("output_size", words, [&] { (void)c.dims.output_size(); });
    expect_invalid("input_elements", words, [&] { (void)c.dims.input_elements(); });
    expect_invalid("output_elements", words, [&] { (void)c.dims.output_elements(); });
    expect_invalid("maxpool_forward", words, [&] { maxpool_forward(c.dims, a.data(), out.data()); });
    expect_invalid("meanpool_forward", words, [&] { meanpool_forward(c.dims, a.data(), out.data()); });
    expect_invalid("lpnormpool_forward", words, [&] { lpnormpool_forward(c.dims, 2.0f, a.data(), out.data()); });
    expect_invalid("maxpool_backward", words,
                   [&] { maxpool_backward(c.dims, a.data(), b.data(), e.data(), out.data()); });
    expect_invalid("meanpool_backward", words, [&] { meanpool_backward(c.dims, a.data(), out.data()); });
    expect_invalid("lpnormpool_backward", words,
                   [&] { lpnormpool_backward(c.dims, 2.0f, a.data(), b.data(), e.data(), out.data()); });
    EXPECT_TRUE(holds_sentinel(out)) << "an op wrote its output";
    EXPECT_TRUE(holds_sentinel(a) && holds_sentinel(b) && holds_sentinel(e)) << "an input was written";
  }
}

}  // namespace
}  // namespace convjit::testing
