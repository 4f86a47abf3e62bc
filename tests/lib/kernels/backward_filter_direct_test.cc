// lib/kernels/conv_backward_filter_direct: tier 0's NCHW direct backward filter, per ISA the host
// has, called directly on random problems it takes (ranks 1-3, few channels, groups and depthwise,
// kernels up to 7 wide, 2 and 3 rows high under blocks of output channels, W stride 1 and 2,
// dilation, asymmetric padding, both modes): the oracle's values, and the same bits on AVX2 and
// AVX-512 (both keep the contract's 8 lane chains) and for 1 and 3 threads.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "conv_backward_filter_direct.hpp"
#include "geometry.hpp"
#include "isa.hpp"
#include "kernel_isa.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

struct DirectIsa {
  const char* name;
  jit::Isa isa;
  bool (*supported)(const detail::ConvGeometry&);
  void (*filter)(const detail::ConvGeometry&, int, const float*, const float*, float*);
};

const DirectIsa kIsas[] = {
    {"avx2", jit::Isa::Avx2Fma, detail::avx2::backward_filter_direct_supported, detail::avx2::backward_filter_direct},
    {"avx512", jit::Isa::Avx512, detail::avx512::backward_filter_direct_supported,
     detail::avx512::backward_filter_direct},
};

TEST(BackwardFilterDirectKernels, OracleValuesAndTheSameBitsOnEveryIsaAndThreadCount) {
  Rng rng(0xB4F1);
  int ran = 0, problems = 0;
  bool isa_ran[2] = {false, false};
  for (int i = 0; i < 150; ++i) {
    const int32_t rank = 1 + i % 3;
    ShapeLimits limits;
    limits.max_channels = 8;
    limits.max_stride = 2;
    ConvDims d = random_conv(rng, rank, Layout::NCHW, i % 2 ? Mode::Convolution : Mode::CrossCorrelation, limits);
    if (i % 5 == 0) {  // depthwise over more channels than a task takes, rows around a vector
      d.in_channels = d.out_channels = d.groups = 9 + i % 7;
      d.in_size[size_t(rank - 1)] += 8 * (i % 3);
    }
    if (i % 5 == 1 && rank >= 2) {  // 2 and 3 kernel rows for blocks of 2-4 output channels at once
      d.kernel[size_t(rank - 2)] = 2 + i / 5 % 2;
      d.out_channels = d.groups * (2 + i / 10 % 3);
    }
    detail::ConvGeometry g;
    if (!detail::make_conv_geometry(d.to_c(), &g).ok()) continue;
    const std::string context = describe(d);
    const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
    const std::vector<double> want = ref::conv_backward_filter(d, x.data(), dy.data());
    const int64_t per_weight = ref::conv_output_elements(d) / d.out_channels;
    std::vector<float> first;
    bool counted = false;
    for (size_t k = 0; k < std::size(kIsas); ++k) {
      if (!jit::host_has(kIsas[k].isa) || !kIsas[k].supported(g)) continue;
      for (int threads : {1, 3}) {
        SCOPED_TRACE(std::string(kIsas[k].name) + ", " + std::to_string(threads) + " threads, " + context);
        std::vector<float> dw = nan_buffer(int64_t(want.size()));
        kIsas[k].filter(g, threads, x.data(), dy.data(), dw.data());
        EXPECT_TRUE(all_close("dw", dw.data(), want, conv_weight_shape(d), per_weight, context));
        if (first.empty()) {
          first = dw;
        } else {
          EXPECT_TRUE(bitwise_equal("dw", dw, first, conv_weight_shape(d), context));
        }
        isa_ran[k] = true;
        ++ran;
      }
      problems += !counted;
      counted = true;
    }
  }
  if (ran == 0) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: no direct backward filter kernel to test";
  EXPECT_GE(problems, 60) << "too few problems the kernel takes";
  EXPECT_TRUE(isa_ran[0]) << "the AVX2 kernel must run wherever a kernel does";
  if (!detail::process_may_use(jit::Isa::Avx512)) {
    std::printf("note: AVX-512 is absent or capped (CONVJIT_MAX_ISA); its kernel was not run\n");
  } else {
    EXPECT_TRUE(isa_ran[1]) << "the AVX-512 kernel must have run on an AVX-512 host";
  }
}

}  // namespace
}  // namespace convjit::testing
