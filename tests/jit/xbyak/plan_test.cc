// jit/xbyak plans: the register blocking of each generator, for every key a sweep makes, within
// the register budget its generator assumes (NCHW: accumulators and inputs within 12 of the 16
// ymm registers, leaving the weight broadcast and at stride 2 the shuffle temporaries; NHWC: 12
// accumulators), channel blocks within the key's channel class, rows the kernel takes at least
// one full block long.
#include <gtest/gtest.h>

#include "conv_fwd_nchw.hpp"
#include "conv_fwd_nhwc.hpp"
#include "geometry.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

constexpr int kYmmRegisters = 16;
constexpr int kFloatsPerYmm = 8;

TEST(XbyakPlans, EveryKeyOfASweepFitsTheRegisterBudget) {
  int nchw = 0, nhwc = 0;
  std::vector<ConvDims> shapes = random_conv_sweep(0x9A7, 300);
  for (const ConvDims& d : random_conv_sweep(0x9A8, 100, wide_channel_limits())) shapes.push_back(d);
  for (const ConvDims& d : shapes) {
    detail::ConvGeometry g;
    ASSERT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok());
    const jit::SpecKey key = jit::make_spec_key(g, d.rank, false, jit::Isa::Avx2Fma, false);
    if (key.layout == CONVJIT_NCHW) {
      if (!jit::xbyak::nchw_unsupported_reason(key).empty()) continue;
      ++nchw;
      const jit::xbyak::NchwPlan plan = jit::xbyak::plan_nchw(key);
      EXPECT_GE(plan.oc_block, 1);
      EXPECT_LE(plan.oc_block, std::min(key.oc_class, 4)) << key.name();
      const int inputs = key.stride[2] == 1 ? plan.vectors : 2 * plan.vectors;
      const int reserved = key.stride[2] == 1 ? 1 : 4;  // broadcast; at stride 2 also shuffles and mask
      EXPECT_LE(plan.oc_block * plan.vectors + std::min(inputs, plan.vectors) + reserved, kYmmRegisters) << key.name();
      EXPECT_LE(plan.oc_block * plan.vectors, 12) << key.name();
      EXPECT_GE(jit::xbyak::nchw_min_row_pixels(plan), 2 * kFloatsPerYmm) << key.name();
    } else {
      if (!jit::xbyak::nhwc_unsupported_reason(key).empty()) continue;
      ++nhwc;
      const jit::xbyak::NhwcPlan plan = jit::xbyak::plan_nhwc(key);
      EXPECT_EQ(plan.oc_block(), plan.vectors * kFloatsPerYmm);
      EXPECT_LE(plan.oc_block(), key.oc_class) << key.name();
      EXPECT_EQ(plan.pixels * plan.vectors, 12) << key.name();
    }
  }
  EXPECT_GE(nchw, 50);
  EXPECT_GE(nhwc, 50);
}

// A valid problem can pad its way to a dilation whose product with the kernel does not fit int64
// (one input, 2^62 padding): the generators refuse its key instead of wrapping around.
TEST(XbyakPlans, KeysWhoseDilatedExtentIsTooLargeAreRefused) {
  auto key_for = [](int64_t kernel, int64_t dilation, int64_t pad) {
    convjit_conv_params p = conv(1, Layout::NCHW, 1, 1, 1, 1, {1, 1, 1}, {kernel, 1, 1}).to_c();
    p.dilation[0] = dilation;
    p.pad_begin[0] = pad;
    detail::ConvGeometry g;
    EXPECT_TRUE(detail::make_conv_geometry(p, &g).ok());
    return jit::make_spec_key(g, 1, false, jit::Isa::Avx2Fma, false);
  };
  const int64_t huge = int64_t(1) << 62;
  EXPECT_EQ(jit::xbyak::nchw_unsupported_reason(key_for(2, huge, huge)), "kernel extent too large");
  EXPECT_EQ(jit::xbyak::nchw_unsupported_reason(key_for(3, 30000, 60000)), "kernel extent too large");
  EXPECT_EQ(jit::xbyak::nchw_unsupported_reason(key_for(3, 20000, 40000)), "");
}

}  // namespace
}  // namespace convjit::testing
