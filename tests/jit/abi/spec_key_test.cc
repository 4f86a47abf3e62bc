// jit/abi/spec_key: what a compiled kernel is specialized on. Problems that differ only in what
// stays a runtime value (batch, channels within a class, sizes) share a key; kernel size, stride,
// dilation, layout, mode, relu and the channel class each make another; with specialize_sizes the
// sizes count too; names say op, shape and ISA.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "geometry.hpp"
#include "spec_key.hpp"
#include "support/compare.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

jit::SpecKey key_of(const ConvDims& d, bool relu = false, bool sizes = false) {
  detail::ConvGeometry g;
  EXPECT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok()) << describe(d);
  return jit::make_spec_key(g, d.rank, relu, jit::Isa::Avx2Fma, sizes);
}

TEST(SpecKey, RuntimeValuesShareAKeyAndEachSpecializedFieldMakesAnother) {
  constexpr Layout C = Layout::NCHW, H = Layout::NHWC;
  const Extent k3 = {3, 3, 1}, s1 = {1, 1, 1}, p1 = {1, 1, 0};
  const ConvDims base = conv(2, C, 1, 8, 16, 1, {20, 20, 1}, k3, s1, p1);
  EXPECT_EQ(key_of(base), key_of(conv(2, C, 4, 5, 9, 1, {33, 17, 1}, k3, s1, p1)));   // batch, channels, size
  EXPECT_EQ(key_of(base), key_of(conv(2, C, 1, 8, 16, 1, {20, 20, 1}, k3, s1)));      // padding stays runtime
  const std::vector<jit::SpecKey> others = {
      key_of(conv(2, C, 1, 8, 16, 1, {20, 20, 1}, {5, 3, 1}, s1, p1)),
      key_of(conv(2, C, 1, 8, 16, 1, {20, 20, 1}, k3, {1, 2, 1}, p1)),
      key_of(conv(2, C, 1, 8, 16, 1, {20, 20, 1}, k3, s1, p1, {2, 1, 1})),
      key_of(conv(2, H, 1, 8, 16, 1, {20, 20, 1}, k3, s1, p1)),
      key_of(conv(2, C, 1, 8, 16, 1, {20, 20, 1}, k3, s1, p1, {1, 1, 1}, Mode::Convolution)),
      key_of(base, /*relu=*/true),
      key_of(conv(2, C, 1, 8, 2, 1, {20, 20, 1}, k3, s1, p1)),  // channel class 2
      key_of(conv(1, C, 1, 8, 16, 1, {20, 1, 1}, {3, 1, 1})),
  };
  std::set<uint64_t> hashes = {key_of(base).hash()};
  for (size_t i = 0; i < others.size(); ++i) {
    EXPECT_FALSE(others[i] == key_of(base)) << "variant " << i << " shares the base key";
    hashes.insert(others[i].hash());
  }
  EXPECT_EQ(hashes.size(), others.size() + 1);
  EXPECT_FALSE(key_of(base, false, true) == key_of(conv(2, C, 1, 8, 16, 1, {21, 20, 1}, k3, s1, p1), false, true))
      << "with specialize_sizes the spatial size is part of the key";
}

TEST(SpecKey, ChannelClasses) {
  constexpr Layout C = Layout::NCHW, H = Layout::NHWC;
  const Extent k3 = {3, 3, 1};
  for (int64_t oc = 1; oc <= 9; ++oc) {
    EXPECT_EQ(key_of(conv(2, C, 1, 2, oc, 1, {9, 9, 1}, k3)).oc_class, std::min<int64_t>(oc, 4)) << oc;
  }
  EXPECT_EQ(key_of(conv(2, H, 1, 2, 31, 1, {9, 9, 1}, k3)).oc_class, jit::kNhwcNarrowClass);
  EXPECT_EQ(key_of(conv(2, H, 1, 2, 32, 1, {9, 9, 1}, k3)).oc_class, jit::kNhwcWideClass);
  EXPECT_EQ(key_of(conv(2, H, 1, 4, 64, 2, {9, 9, 1}, k3)).oc_class, jit::kNhwcWideClass);  // 32 per group
}

TEST(SpecKey, NamesSayOpShapeAndIsa) {
  constexpr Layout C = Layout::NCHW, H = Layout::NHWC;
  EXPECT_EQ(key_of(conv(2, C, 1, 8, 16, 1, {20, 20, 1}, {3, 3, 1}), true).name(), "conv2d_fwd_f32_k3x3_s1_relu__avx2");
  EXPECT_EQ(key_of(conv(2, C, 1, 8, 2, 1, {20, 20, 1}, {3, 3, 1}, {2, 2, 1}, {0, 0, 0}, {1, 1, 1}, Mode::Convolution))
                .name(),
            "conv2d_fwd_f32_k3x3_s2_flip_oc2__avx2");
  EXPECT_EQ(key_of(conv(1, H, 1, 8, 64, 1, {40, 1, 1}, {5, 1, 1}, {1, 1, 1}, {0, 0, 0}, {2, 1, 1})).name(),
            "conv1d_fwd_f32_k5_s1_d2_nhwc_oc32up__avx2");
  EXPECT_EQ(key_of(conv(2, C, 1, 8, 16, 1, {20, 20, 1}, {3, 1, 1}, {1, 2, 1})).name(), "conv2d_fwd_f32_k3x1_s1x2__avx2");
  jit::SpecKey wide = key_of(conv(2, C, 1, 8, 16, 1, {20, 20, 1}, {3, 3, 1}));
  wide.isa = jit::Isa::Avx512;
  EXPECT_EQ(wide.name(), "conv2d_fwd_f32_k3x3_s1__avx512");
  EXPECT_FALSE(wide == key_of(conv(2, C, 1, 8, 16, 1, {20, 20, 1}, {3, 3, 1}))) << "the ISA is part of the key";
}

}  // namespace
}  // namespace convjit::testing
