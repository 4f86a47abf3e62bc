// The Xbyak backend's NHWC depthwise forward rows (jit/xbyak/conv_fwd_depthwise_nhwc), per ISA the
// host has: through tier 0's NHWC depthwise kernel, which gives them each output row's outputs
// whose W taps are all real and computes the rest, on random problems (ranks 1-3, channel counts
// around the vector sizes, rows long enough for every pixel block, kernel sizes, strides and
// dilations along W, asymmetric padding, both modes, bias and relu, 1 and 2 threads). Each must
// match the oracle, give tier 0's bits, and write nothing outside y.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "xbyak_isa_fixture.hpp"  // first: its jit:: is convjit::jit, not jit_support's convjit::testing::jit

#include "backend.hpp"
#include "conv_depthwise_nhwc.hpp"
#include "forward_kernels.hpp"
#include "geometry.hpp"
#include "jit_support.hpp"
#include "support/compare.hpp"
#include "support/guarded_output.hpp"
#include "support/random.hpp"

namespace convjit::testing {
namespace {

#if defined(CONVJIT_HAVE_XBYAK)

namespace backends = ::convjit::jit;
using jit::Problem;

using DepthwiseRows = XbyakIsaTest;

// Problem i: NHWC depthwise of rank 1 + i % 3, mode (i / 3) % 2, rows of up to ~50 outputs.
ConvDims depthwise_problem(Rng& rng, int i) {
  ConvDims d;
  d.rank = 1 + i % 3;
  d.layout = Layout::NHWC;
  d.mode = i / 3 % 2 ? Mode::Convolution : Mode::CrossCorrelation;
  d.batch = rng.uniform_int(1, 2);
  const int64_t channels =
      std::vector<int64_t>{1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 40, 64, 70, 129}[size_t(rng.uniform_int(0, 13))];
  d.in_channels = d.out_channels = d.groups = channels;
  const int first = 3 - d.rank;
  for (int k = first; k < 3; ++k) {
    const size_t s = size_t(k);
    const bool w = k == 2;
    d.kernel[s] = rng.uniform_int(1, d.rank == 3 ? 3 : (w ? 7 : 5));
    d.stride[s] = rng.uniform_int(1, w ? 3 : 2);
    d.dilation[s] = rng.uniform_int(1, 2);
    d.pad_begin[s] = rng.uniform_int(0, 3);
    d.pad_end[s] = rng.uniform_int(0, 3);
    const int64_t extent = (d.kernel[s] - 1) * d.dilation[s] + 1;
    d.in_size[s] = extent + rng.uniform_int(0, w ? (d.rank == 1 ? 90 : 50) : (d.rank == 3 ? 3 : 6));
  }
  return d;
}

TEST_P(DepthwiseRows, MatchTheOracleAndTierZerosBitsAndWriteOnlyY) {
  const backends::Isa isa = GetParam();
  Rng rng(0xD1F0 + uint64_t(isa));
  int compiled = 0, with_rows = 0;
  for (int i = 0; i < 150; ++i) {
    const Problem p(depthwise_problem(rng, i), case_seed(0xD1F1, i));
    const std::string context = describe(p.dims);
    SCOPED_TRACE(std::string(backends::isa_name(isa)) + " " + context);
    detail::ConvGeometry g;
    ASSERT_TRUE(detail::make_conv_geometry(p.dims.to_c(), &g).ok());
    ASSERT_TRUE(detail::depthwise_nhwc_fits(g));
    const bool relu = p.activation == Activation::Relu;
    const backends::SpecKey key = backends::make_depthwise_spec_key(g, p.dims.rank, relu, isa);
    backends::CompiledKernel kernel;
    std::string error;
    if (!backend->compile(key, &kernel, &error)) {
      EXPECT_FALSE(backend->rows_decline_reason(key).empty()) << "a failed compile the plan did not foresee: " << error;
      continue;
    }
    ++compiled;
    ASSERT_NE(kernel.kernel.depthwise_row, nullptr);
    EXPECT_NE(kernel.name.find("_dw" + std::to_string(g.groups)), std::string::npos) << kernel.name;
    EXPECT_EQ(kernel.name.substr(kernel.name.size() - std::string(backends::isa_name(isa)).size()), backends::isa_name(isa));
    // Tier 0's row of the same ISA, alone and calling the rows.
    const detail::GenericForwardKernel& tier0 = detail::generic_forward_kernel(g, detail::RowKind::Any, isa);
    ASSERT_NE(tier0.whole_call, nullptr) << tier0.name;
    std::vector<float> want = nan_buffer(p.outputs());
    tier0.whole_call(g, 1, p.x.data(), p.w.data(), p.bias_ptr(), relu, want.data(), nullptr);
    GuardedOutput got(p.outputs());
    tier0.whole_call(g, 1 + i % 2, p.x.data(), p.w.data(), p.bias_ptr(), relu, got.data(), kernel.kernel.depthwise_row);
    EXPECT_TRUE(p.matches_reference(got.values(), kernel.name));
    EXPECT_TRUE(bitwise_equal("y", got.values(), want, conv_output_shape(p.dims), context));
    EXPECT_TRUE(got.guards_intact("y", context));
    // Rows with an output whose W taps are all real reach the compiled rows.
    for (int64_t ow = 0; ow < g.out[2]; ++ow) {
      if (ow * g.stride[2] >= g.pad_begin[2] &&
          ow * g.stride[2] - g.pad_begin[2] + (g.kernel[2] - 1) * g.dilation[2] < g.in[2]) {
        ++with_rows;
        break;
      }
    }
  }
  EXPECT_GE(compiled, 140) << "the plan declined too many problems";
  EXPECT_GE(with_rows, 100) << "too few problems gave outputs to the compiled rows";
}

// Through the runtime, with the default decline rules: a hot NHWC depthwise configuration (forward,
// and backward data with stride 1, which runs as one) gets its compiled rows, named for its groups
// and the widest ISA within the cap, bitwise the generic runtime's before and after.
TEST(DepthwiseRowsRuntime, HotNhwcDepthwiseRunsCompiledRowsWithTier0sBits) {
  Policy policy = jit::eager_policy();
  policy.decline_slower = true;
  Runtime runtime(policy);
  Runtime generic(jit::generic_policy());
  CONVJIT_SKIP_WITHOUT_BACKEND(runtime);
  if (runtime.stats().backend != "xbyak") GTEST_SKIP() << "depthwise rows are Xbyak's";
  const std::string isa = jit::kernel_isa(policy.max_isa);
  const std::vector<ConvDims> shapes = {
      conv(2, Layout::NHWC, 2, 40, 40, 40, {15, 37, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}),
      conv(2, Layout::NHWC, 1, 96, 96, 96, {16, 33, 1}, {5, 5, 1}, {2, 2, 1}, {2, 2, 0}),
      conv(1, Layout::NHWC, 3, 17, 17, 17, {70, 1, 1}, {7, 1, 1}, {1, 1, 1}, {3, 0, 0}, {2, 1, 1},
                Mode::Convolution),
  };
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Problem p(shapes[i], case_seed(0xD1F2, i), true, Activation::Relu);
    for (int call = 0; call < 3; ++call) {
      ASSERT_TRUE(p.same_bits(p.run(runtime), p.run(generic), "call " + std::to_string(call))) << describe(p.dims);
    }
    const std::optional<ConfigStats> c = jit::find_config(runtime.stats(), p.dims);
    ASSERT_TRUE(c.has_value()) << describe(p.dims);
    EXPECT_EQ(c->state, "jit") << describe(p.dims) << ": " << c->failure;
    EXPECT_NE(c->kernel.find("_dw" + std::to_string(p.dims.groups)), std::string::npos) << c->kernel;
    EXPECT_EQ(c->kernel.substr(c->kernel.size() - isa.size() - 2), "__" + isa) << c->kernel;
    EXPECT_GE(c->calls_jit, 2) << describe(p.dims);
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, DepthwiseRows, ::testing::ValuesIn(kXbyakIsas), isa_test_name);

#endif

}  // namespace
}  // namespace convjit::testing
