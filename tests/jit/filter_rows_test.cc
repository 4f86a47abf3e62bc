// The Xbyak backend's NHWC backward-filter rows (jit/xbyak/conv_bwd_filter_nhwc), per ISA the host
// has, through the driver (lib/driver/conv_backward_filter.cpp: runs of rows with the same real
// taps): on random problems (ranks 1-3, both modes, groups, padding that leaves taps without a real
// input, stride, dilation) with channel counts around the vector and register-block sizes, so
// every block shape and tail is emitted. Each must match the oracle, give tier 0's bits (the same
// chain per dw element) for 1, 2 and 3 threads, and write nothing outside dw.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend.hpp"
#include "geometry.hpp"
#include "ops_internal.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/guarded_output.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"
#include "xbyak_isa_fixture.hpp"

namespace convjit::testing {
namespace {

#if defined(CONVJIT_HAVE_XBYAK)

using FilterRows = XbyakIsaTest;

// Problem i: NHWC, channels per group around AVX2's and AVX-512's vectors and blocks (1 to 4
// vectors of input channels, output blocks of 2 to 12 and their tails; under half a vector of input
// channels, the transposed blocks: 1 to 4 vectors of output channels and their tails), images small enough
// for the oracle.
ConvDims filter_problem(Rng& rng, int i) {
  ShapeLimits limits;
  limits.max_in_size[0] = 300;  // rows longer than a call takes: segments
  limits.max_in_size[1] = 12;
  limits.max_in_size[2] = 5;
  limits.max_multiply_adds = 1 << 30;  // the channels are set below
  ConvDims d =
      random_conv(rng, int32_t(1 + i % 3), Layout::NHWC, i % 2 ? Mode::Convolution : Mode::CrossCorrelation, limits);
  static const int64_t kInChannels[] = {1, 3, 8, 9, 16, 17, 24, 33, 48, 64, 70};
  static const int64_t kOutChannels[] = {1, 2, 5, 6, 7, 9, 12, 13, 25, 31, 70};
  d.groups = 1 + i % 4 / 3;  // 1, 1, 1, 2
  d.in_channels = d.groups * kInChannels[size_t(i) % std::size(kInChannels)];
  d.out_channels = d.groups * kOutChannels[size_t(i / 3) % std::size(kOutChannels)];
  d.batch = 1 + i % 2;
  return d;
}

// Depthwise problem i (one input and one output channel per group): groups around the vectors
// and the blocks of 1 to 4 of them, and their tails.
ConvDims depthwise_filter_problem(Rng& rng, int i) {
  ShapeLimits limits;
  limits.max_in_size[0] = 300;
  limits.max_in_size[1] = 12;
  limits.max_in_size[2] = 5;
  limits.max_multiply_adds = 1 << 30;
  ConvDims d =
      random_conv(rng, int32_t(1 + i % 3), Layout::NHWC, i % 2 ? Mode::Convolution : Mode::CrossCorrelation, limits);
  static const int64_t kGroups[] = {1, 3, 8, 9, 16, 17, 24, 33, 48, 64, 70, 128};
  d.groups = d.in_channels = d.out_channels = kGroups[size_t(i) % std::size(kGroups)];
  d.batch = 1 + i % 2;
  return d;
}

// Compiles d's backward-filter rows for isa on backend and checks them at 1-3 threads against the oracle and
// tier 0's bits, and that they write only dw. False where the plan declined d (saying why). Counts
// in *columns_at_once the non-depthwise kernels that hold every W tap at once.
bool filter_rows_match(jit::Backend& backend, jit::Isa isa, const ConvDims& d, Rng& rng, int* columns_at_once) {
  detail::ConvGeometry g;
  EXPECT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok()) << describe(d);
  const std::string context = std::string(jit::isa_name(isa)) + " " + describe(d);
  SCOPED_TRACE(context);
  const jit::SpecKey key = jit::make_filter_spec_key(g, d.rank, isa);
  jit::CompiledKernel kernel;
  std::string error;
  if (!backend.compile(key, &kernel, &error)) {
    EXPECT_FALSE(backend.rows_decline_reason(key).empty()) << "a failed compile the plan did not foresee: " << error;
    return false;
  }
  EXPECT_NE(kernel.filter.compute, nullptr);
  EXPECT_NE(kernel.name.find("bwd_filter"), std::string::npos) << kernel.name;
  EXPECT_NE(kernel.name.find(jit::isa_name(isa)), std::string::npos) << kernel.name;
  EXPECT_EQ(kernel.filter.depthwise != 0, kernel.name.find("_dw") != std::string::npos) << kernel.name;
  if (kernel.filter.columns_at_once && !kernel.filter.depthwise) ++*columns_at_once;

  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
  const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
  const int64_t weights = ref::conv_weight_elements(d);
  std::vector<float> want = nan_buffer(weights);
  detail::run_conv_backward_filter(g, detail::DirectFilterScope::FewChannels, 1, x.data(), dy.data(), want.data());
  const std::vector<double> oracle = ref::conv_backward_filter(d, x.data(), dy.data());
  for (int threads = 1; threads <= 3; ++threads) {
    GuardedOutput got(weights);
    detail::run_conv_backward_filter_rows(g, threads, x.data(), dy.data(), got.data(), kernel.filter);
    const std::string with = context + ", " + std::to_string(threads) + " threads";
    EXPECT_TRUE(got.guards_intact("dw", with));
    const std::vector<float> dw = got.values();
    EXPECT_TRUE(all_close("dw", dw.data(), oracle, conv_weight_shape(d), g.batch * g.out_pixels(), with));
    EXPECT_TRUE(bitwise_equal("dw", dw, want, conv_weight_shape(d), with));
  }
  return true;
}

TEST_P(FilterRows, MatchTheOracleAndTierZerosBitsForAnyThreadCount) {
  const jit::Isa isa = GetParam();
  Rng rng(0xF117 + uint64_t(isa));
  int compiled = 0, columns_at_once = 0;
  for (int i = 0; i < 90; ++i) {
    compiled += filter_rows_match(*backend, isa, filter_problem(rng, i), rng, &columns_at_once) ? 1 : 0;
  }
  EXPECT_GE(compiled, 80) << "the plan declined most problems";
  EXPECT_GT(columns_at_once, 0) << "no transposed kernel held every W tap at once";
}

// Depthwise rows (every tap along W of a D and H tap in registers, edges before and after the
// interior) give the chains of tier 0's channels-in-lanes kernel, and of its register tile where
// that kernel does not run (over 16 taps).
TEST_P(FilterRows, DepthwiseMatchTheOracleAndTierZerosBitsForAnyThreadCount) {
  const jit::Isa isa = GetParam();
  Rng rng(0xD3E7 + uint64_t(isa));
  int compiled = 0, columns_at_once = 0;
  for (int i = 0; i < 72; ++i)
    compiled += filter_rows_match(*backend, isa, depthwise_filter_problem(rng, i), rng, &columns_at_once) ? 1 : 0;
  EXPECT_GE(compiled, 64) << "the plan declined most depthwise problems";
}

INSTANTIATE_TEST_SUITE_P(Isas, FilterRows, ::testing::ValuesIn(kXbyakIsas), isa_test_name);

#endif

}  // namespace
}  // namespace convjit::testing
