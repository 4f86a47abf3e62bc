// lib/kernels/conv_depthwise_nchw_backward_data: tier 0's NCHW depthwise backward data at W stride
// 2, per ISA the host has, called directly on random depthwise problems (ranks 1-3, channel
// counts 1-7, kernels 2-6 wide, W padding up to past the kernel's reach, rows from 1 column to
// several body vectors, D and H strides 1-3 with dilation, kernels shorter than their stride,
// both modes): the oracle's values, and the bits of the contract (each dx element one FMA chain
// from 0.0f over the dy elements that reach it, in dy's order) for 1 and 3 threads, and nothing
// written past dx.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conv_depthwise_nchw_backward_data.hpp"
#include "convjit/ops.hpp"
#include "depthwise_backward_data_phases.hpp"
#include "geometry.hpp"
#include "isa.hpp"
#include "kernel_isa.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/depthwise_chains.hpp"
#include "support/guarded_output.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"
#include "support/transforms.hpp"
#include "threads.hpp"

namespace convjit::testing {
namespace {

struct NchwDataIsa {
  const char* name;
  jit::Isa isa;
  int lanes;
  bool (*supported)(const detail::ConvGeometry&);
  void (*data)(const detail::ConvGeometry&, int, const float*, const float*, float*);
};

const NchwDataIsa kIsas[] = {
    {"avx2", jit::Isa::Avx2Fma, 8, detail::avx2::depthwise_nchw_backward_data_supported,
     detail::avx2::depthwise_nchw_backward_data},
    {"avx512", jit::Isa::Avx512, 16, detail::avx512::depthwise_nchw_backward_data_supported,
     detail::avx512::depthwise_nchw_backward_data},
};

ConvDims random_dims(Rng& rng, int i) {
  ConvDims d;
  d.rank = 1 + i % 3;
  d.layout = Layout::NCHW;
  d.mode = i % 2 ? Mode::Convolution : Mode::CrossCorrelation;
  d.batch = rng.uniform_int(1, 2);
  // An eighth with enough work for the team's threads.
  d.groups = d.in_channels = d.out_channels = i % 8 == 6 ? rng.uniform_int(40, 64) : rng.uniform_int(1, 7);
  for (int k = 0; k < d.rank; ++k) {
    const bool w = k == d.rank - 1;
    d.kernel[size_t(k)] = w ? rng.uniform_int(2, 6) : rng.uniform_int(1, 3);
    d.stride[size_t(k)] = w ? 2 : rng.uniform_int(1, 3);
    d.dilation[size_t(k)] = w || rng.chance(0.7) ? 1 : 2;
    const int64_t extent = (d.kernel[size_t(k)] - 1) * d.dilation[size_t(k)] + 1;
    d.pad_begin[size_t(k)] = rng.uniform_int(0, extent + 1);
    d.pad_end[size_t(k)] = rng.uniform_int(0, extent);
    // W: a quarter of the rows long enough for body vectors on either ISA.
    d.in_size[size_t(k)] = w && i % 4 == 3 ? rng.uniform_int(70, 110)
                                           : rng.uniform_int(1, w            ? 40
                                                                : i % 8 == 6 ? 24
                                                                             : 9);
  }
  return d;
}

struct Problem {
  ConvDims d;
  detail::ConvGeometry g;
  std::string context;
  std::vector<float> dy, w;
};

// Problem i of a sweep with its operands, or false where its dims are invalid.
bool random_problem(Rng& rng, int i, Problem* p) {
  p->d = random_dims(rng, i);
  if (!detail::make_conv_geometry(p->d.to_c(), &p->g).ok()) return false;
  p->context = describe(p->d);
  p->dy = random_floats(rng, ref::conv_output_elements(p->d));
  p->w = random_floats(rng, ref::conv_weight_elements(p->d));
  return true;
}

TEST(DepthwiseNchwBackwardData, OracleValuesAndTheContractsBitsOnEveryIsaAndThreadCount) {
  Rng rng(0xDA7A2);
  int ran[2] = {0, 0}, with_body[2] = {0, 0};  // AVX2, AVX-512
  int strided_rows = 0, short_rows_kernel = 0, flipped = 0, three_d = 0, threaded = 0;
  for (int i = 0; i < 240; ++i) {
    Problem p;
    if (!random_problem(rng, i, &p)) continue;
    const auto& [d, g, context, dy, w] = p;
    const std::vector<double> want = ref::conv_backward_data(d, dy.data(), w.data());
    const std::vector<float> chains = depthwise_chains_in_dy_order(g, dy.data(), w.data());
    bool ran_here = false;
    for (const NchwDataIsa& k : kIsas) {
      if (!detail::process_may_use(k.isa) || !k.supported(g)) continue;
      ran_here = true;
      for (int threads : {1, 3}) {
        SCOPED_TRACE(std::string(k.name) + ", " + std::to_string(threads) + " threads, " + context);
        GuardedOutput dx(int64_t(want.size()));
        k.data(g, threads, dy.data(), w.data(), dx.data());
        EXPECT_TRUE(dx.guards_intact("dx", context));
        EXPECT_TRUE(all_close("dx", dx.data(), want, conv_input_shape(d), g.taps, context));
        EXPECT_TRUE(bitwise_equal("dx", dx.values(), chains, conv_input_shape(d), context));
      }
      ++ran[k.isa == jit::Isa::Avx512];
      // Rows this long have a body pair at j = lanes whatever the padding (its loads reach at most
      // (1 + pad) / 2 columns past j + lanes, dy's rows at least (in - kernel) / 2 + 1).
      with_body[k.isa == jit::Isa::Avx512] += g.in[2] >= 4 * k.lanes + 2 * g.kernel[2] + g.pad_begin[2] + 2;
    }
    if (!ran_here) continue;  // the counts below per problem, whichever ISAs ran it
    three_d += d.rank == 3;
    threaded += g.flops() >= detail::kParallelWorkThreshold;
    strided_rows += g.stride[1] > 1;
    short_rows_kernel += g.kernel[1] < g.stride[1];
    flipped += g.flip;
  }
  if (ran[0] + ran[1] == 0) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: no NCHW depthwise gradient kernel";
  EXPECT_GE(ran[0], 120) << "too few problems ran on AVX2's kernel";
  EXPECT_GE(with_body[0], 20) << "too few problems had rows with body pairs on AVX2";
  if (detail::process_may_use(jit::Isa::Avx512)) {
    EXPECT_GE(ran[1], 150) << "too few problems ran on AVX-512's kernel";
    EXPECT_GE(with_body[1], 10) << "too few problems had rows with body pairs on AVX-512";
  }
  EXPECT_GE(three_d, 30) << "too few 3D problems";
  EXPECT_GE(threaded, 10) << "too few problems with work enough for 3 threads";
  EXPECT_GE(strided_rows, 40) << "too few problems were strided along H";
  EXPECT_GE(short_rows_kernel, 10) << "too few problems had a kernel shorter than H's stride";
  EXPECT_GE(flipped, 60) << "too few problems ran in convolution mode";
}

// Through the library (the default runtime, whichever tier and ISA it picks): where the NHWC twin's
// phases run, the NCHW kernel's chains; where they do not (kernels shorter than their stride along
// H, dilated H at stride > 1), the twin's bits: the NHWC call on the transposed problem.
TEST(DepthwiseNchwBackwardData, TheLibraryGivesThePhasesChainsOrTheTwinsBits) {
  Rng rng(0xDA7A3);
  int chains_checked = 0, twin_checked = 0;
  for (int i = 0; i < 120; ++i) {
    Problem p;
    if (!random_problem(rng, i, &p)) continue;
    const auto& [d, g, context, dy, w] = p;
    std::vector<float> dx = nan_buffer(ref::conv_input_elements(d));
    conv_backward_data(d, dy.data(), w.data(), dx.data());
    if (detail::depthwise_data_phases_run(g)) {
      EXPECT_TRUE(
          bitwise_equal("dx", dx, depthwise_chains_in_dy_order(g, dy.data(), w.data()), conv_input_shape(d), context));
      ++chains_checked;
      continue;
    }
    ConvDims nhwc = d;
    nhwc.layout = Layout::NHWC;
    const int64_t in_pixels = ref::conv_input_elements(d) / (d.batch * d.in_channels);
    const int64_t out_pixels = ref::conv_output_elements(d) / (d.batch * d.out_channels);
    std::vector<float> dx_nhwc = nan_buffer(ref::conv_input_elements(d));
    conv_backward_data(nhwc, channels_first_to_last(dy, d.batch, d.out_channels, out_pixels).data(), w.data(),
                       dx_nhwc.data());
    EXPECT_TRUE(bitwise_equal("dx vs the NHWC call", dx,
                              channels_last_to_first(dx_nhwc, d.batch, d.in_channels, in_pixels), conv_input_shape(d),
                              context));
    ++twin_checked;
  }
  EXPECT_GE(chains_checked, 60) << "too few problems whose phases run";
  EXPECT_GE(twin_checked, 10) << "too few problems whose phases do not run";
}

// What the kernel leaves to others: W strides other than 2, dilated W, kernels 1 or over 6
// wide, NHWC, more than one channel per group, tap-row plans past their limit, and on AVX2 rows
// without a body pair.
TEST(DepthwiseNchwBackwardData, TakesOnlyItsProblems) {
  const ConvDims taken = conv(2, Layout::NCHW, 1, 8, 8, 8, {28, 28}, {3, 3}, {2, 2}, {1, 1});
  const ConvDims refused[] = {
      conv(2, Layout::NCHW, 1, 8, 8, 8, {28, 28}, {3, 3}, {2, 1}, {1, 1}),
      conv(2, Layout::NCHW, 1, 8, 8, 8, {28, 28}, {3, 3}, {2, 3}, {1, 1}),
      conv(2, Layout::NCHW, 1, 8, 8, 8, {28, 28}, {3, 3}, {2, 2}, {1, 1}, {1, 2}),
      conv(2, Layout::NCHW, 1, 8, 8, 8, {28, 28}, {3, 1}, {2, 2}),
      conv(2, Layout::NCHW, 1, 8, 8, 8, {28, 28}, {3, 7}, {2, 2}),
      conv(2, Layout::NHWC, 1, 8, 8, 8, {28, 28}, {3, 3}, {2, 2}, {1, 1}),
      conv(2, Layout::NCHW, 1, 8, 16, 8, {28, 28}, {3, 3}, {2, 2}, {1, 1}),
      conv(3, Layout::NCHW, 1, 8, 8, 8, {64, 64, 28}, {5, 5, 3}, {1, 1, 2}),  // a plan of over 2^16 rows
  };
  // Rows of edge pairs only (17 columns: two 8-lane pairs, neither whole): AVX-512's, not AVX2's.
  const ConvDims edges_only = conv(2, Layout::NCHW, 1, 8, 8, 8, {15, 17}, {3, 3}, {2, 2});
  if (!jit::host_has(jit::Isa::Avx2Fma)) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512";
  for (const NchwDataIsa& k : kIsas) {
    if (!detail::process_may_use(k.isa)) continue;
    detail::ConvGeometry g;
    ASSERT_TRUE(detail::make_conv_geometry(edges_only.to_c(), &g).ok());
    EXPECT_EQ(k.supported(g), k.isa == jit::Isa::Avx512) << k.name << ": " << describe(edges_only);
    ASSERT_TRUE(detail::make_conv_geometry(taken.to_c(), &g).ok());
    EXPECT_TRUE(k.supported(g)) << k.name << ": " << describe(taken);
    for (const ConvDims& d : refused) {
      ASSERT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok()) << describe(d);
      EXPECT_FALSE(k.supported(g)) << k.name << ": " << describe(d);
    }
  }
}

}  // namespace
}  // namespace convjit::testing
