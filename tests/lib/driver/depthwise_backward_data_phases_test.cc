// lib/driver/depthwise_backward_data_phases: NHWC depthwise backward data as the depthwise forwards
// of its phases, per ISA the host has, on random depthwise problems (ranks 1-3, channel counts
// around the lanes, strides 1-3 with kernels shorter and longer than them, dilation, asymmetric
// padding up to past the kernel's reach, both modes): the oracle's values, and the bits of the
// contract (each dx element one FMA chain from 0.0f over the dy elements that reach it, in dy's
// order) on every ISA and for 1 and 3 threads; where a phase cannot run, nothing is written.
#include "depthwise_backward_data_phases.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "conv_depthwise_nhwc.hpp"
#include "geometry.hpp"
#include "isa.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/depthwise_chains.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

struct ForwardIsa {
  const char* name;
  jit::Isa isa;
  detail::DepthwiseForwardFn forward;
};

const ForwardIsa kIsas[] = {
    {"avx2", jit::Isa::Avx2Fma, detail::avx2::depthwise_nhwc_tap_major},
    {"avx512", jit::Isa::Avx512, detail::avx512::depthwise_nhwc_tap_major},
};

TEST(DepthwiseBackwardDataPhases, OracleValuesAndTheContractsBitsOnEveryIsaAndThreadCount) {
  Rng rng(0xD9A5E);
  int ran = 0, declined = 0;
  for (int i = 0; i < 160; ++i) {
    const int32_t rank = 1 + i % 3;
    ConvDims d = random_conv(rng, rank, Layout::NHWC, i % 2 ? Mode::Convolution : Mode::CrossCorrelation);
    d.in_channels = d.out_channels = d.groups = std::vector<int64_t>{1, 3, 8, 16, 17, 33, 40}[size_t(i % 7)];
    for (int k = 0; k < rank; ++k) {
      // Most strided dims undilated (the phases' case), a few dilated (declined: the scatter's).
      if (d.stride[size_t(k)] > 1 && i % 8 != 5) d.dilation[size_t(k)] = 1;
    }
    detail::ConvGeometry g;
    if (!detail::make_conv_geometry(d.to_c(), &g).ok()) continue;
    const std::string context = describe(d);
    const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
    const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
    const std::vector<double> want = ref::conv_backward_data(d, dy.data(), w.data());
    const std::vector<float> chains = depthwise_chains_in_dy_order(g, dy.data(), w.data());
    int64_t taps = 1;
    for (int k = 0; k < rank; ++k) taps *= d.kernel[size_t(k)];
    for (const ForwardIsa& k : kIsas) {
      if (!jit::host_has(k.isa)) continue;
      for (int threads : {1, 3}) {
        SCOPED_TRACE(std::string(k.name) + ", " + std::to_string(threads) + " threads, " + context);
        std::vector<float> dx = nan_buffer(int64_t(want.size()));
        if (!detail::run_depthwise_backward_data_phases(g, threads, dy.data(), w.data(), dx.data(), k.forward)) {
          for (float v : dx) ASSERT_TRUE(std::isnan(v)) << "a declined problem wrote dx";
          ++declined;
          continue;
        }
        EXPECT_TRUE(all_close("dx", dx.data(), want, conv_input_shape(d), taps, context));
        EXPECT_TRUE(bitwise_equal("dx", dx, chains, conv_input_shape(d), context));
        ++ran;
      }
    }
  }
  if (ran + declined == 0) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: tier 0 has no depthwise forward";
  EXPECT_GE(ran, 150) << "too few problems ran as phases";
  EXPECT_GE(declined, 4) << "no problem took the declining paths (dilated strided dims, kernels under the stride)";
}

// A stride larger than the kernel leaves inputs no tap reaches: not phases.
TEST(DepthwiseBackwardDataPhases, KernelShorterThanTheStrideIsDeclined) {
  const ConvDims d = conv(2, Layout::NHWC, 1, 8, 8, 8, {9, 9}, {2, 2}, {3, 3});
  detail::ConvGeometry g;
  ASSERT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok());
  const int64_t r[3] = {0, 0, 2};
  detail::DepthwiseDataPhase phase;
  EXPECT_FALSE(detail::depthwise_data_phase(g, r, &phase));
}

// The phase of a 3x3 stride-2 pad-1 kernel at odd inputs along W takes kernel positions 2 and 0
// (in that order: dy's), from dy column 0 on, into every second column of dx from column 1.
TEST(DepthwiseBackwardDataPhases, PhaseOfAStrideTwoKernel) {
  const ConvDims d = conv(2, Layout::NHWC, 1, 4, 4, 4, {8, 8}, {3, 3}, {2, 2}, {1, 1});
  detail::ConvGeometry g;
  ASSERT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok());
  const int64_t r[3] = {0, 0, 1};
  detail::DepthwiseDataPhase phase;
  ASSERT_TRUE(detail::depthwise_data_phase(g, r, &phase));
  const detail::ConvGeometry& f = phase.forward;
  EXPECT_EQ(f.kernel[2], 2);
  EXPECT_EQ(phase.first_tap[2], 2);
  EXPECT_EQ(phase.tap_step[2], -2);
  EXPECT_EQ(f.pad_begin[2], 0);
  EXPECT_EQ(f.out[2], 4);  // dx columns 1, 3, 5, 7
  EXPECT_EQ(f.y.spatial[2], 2 * g.x.spatial[2]);
  EXPECT_EQ(phase.dx_offset, g.x.spatial[2]);
  EXPECT_EQ(phase.dy_offset, 0);
  EXPECT_EQ(f.kernel[1], 1);  // even rows: kernel position 1 alone
  EXPECT_EQ(phase.first_tap[1], 1);
}

}  // namespace
}  // namespace convjit::testing
