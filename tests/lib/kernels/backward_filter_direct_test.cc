// lib/kernels/conv_backward_filter_direct: tier 0's NCHW direct backward filter, per ISA the host
// has, called directly on random problems it takes (ranks 1-3, few channels, groups and depthwise,
// kernels up to 7 wide, 2 and 3 rows high under blocks of output channels, W stride 1 and 2,
// dilation, asymmetric padding, both modes), and past the few channels (the scope where it stands
// in for the register tile), some with the batch in chunks: the oracle's values, and the same bits
// on AVX2 and AVX-512 (both keep the contract's 8 lane chains) and for 1 and 3 threads; and which
// kernel the library runs in that scope.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "conv_backward_filter_direct.hpp"
#include "convjit/ops.hpp"
#include "geometry.hpp"
#include "isa.hpp"
#include "kernel_isa.hpp"
#include "nhwc_as_nchw.hpp"
#include "ops_internal.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"
#include "threads.hpp"

namespace convjit::testing {
namespace {

struct DirectIsa {
  const char* name;
  jit::Isa isa;
  bool (*supported)(const detail::ConvGeometry&, detail::DirectFilterScope);
  void (*filter)(const detail::ConvGeometry&, int, const float*, const float*, float*);
};

const DirectIsa kIsas[] = {
    {"avx2", jit::Isa::Avx2Fma, detail::avx2::backward_filter_direct_supported, detail::avx2::backward_filter_direct},
    {"avx512", jit::Isa::Avx512, detail::avx512::backward_filter_direct_supported,
     detail::avx512::backward_filter_direct},
};

// What the problems of a test ran on.
struct Runs {
  int calls = 0, problems = 0;
  bool isa_ran[2] = {false, false};
};

// d on every ISA the host has whose kernel takes it in `scope`, at 1 and 3 threads: the oracle's
// values and the bits of the first run.
void check_every_isa(Rng& rng, const ConvDims& d, const detail::ConvGeometry& g, detail::DirectFilterScope scope,
                     Runs* runs) {
  const std::string context = describe(d);
  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
  const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
  const std::vector<double> want = ref::conv_backward_filter(d, x.data(), dy.data());
  const int64_t per_weight = ref::conv_output_elements(d) / d.out_channels;
  std::vector<float> first;
  bool counted = false;
  for (size_t k = 0; k < std::size(kIsas); ++k) {
    if (!jit::host_has(kIsas[k].isa) || !kIsas[k].supported(g, scope)) continue;
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
      runs->isa_ran[k] = true;
      ++runs->calls;
    }
    runs->problems += !counted;
    counted = true;
  }
}

void expect_every_isa_ran(const Runs& runs, int min_problems) {
  EXPECT_GE(runs.problems, min_problems) << "too few problems the kernel takes";
  EXPECT_TRUE(runs.isa_ran[0]) << "the AVX2 kernel must run wherever a kernel does";
  if (!detail::process_may_use(jit::Isa::Avx512)) {
    std::printf("note: AVX-512 is absent or capped (CONVJIT_MAX_ISA); its kernel was not run\n");
  } else {
    EXPECT_TRUE(runs.isa_ran[1]) << "the AVX-512 kernel must have run on an AVX-512 host";
  }
}

TEST(BackwardFilterDirectKernels, OracleValuesAndTheSameBitsOnEveryIsaAndThreadCount) {
  Rng rng(0xB4F1);
  Runs runs;
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
    check_every_isa(rng, d, g, detail::DirectFilterScope::FewChannels, &runs);
  }
  if (runs.calls == 0)
    GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: no direct backward filter kernel to test";
  expect_every_isa_ran(runs, 60);
}

// Past the few channels, where the register tile would be the only other kernel: more channel
// pairs, kernels 3 wide or more at W stride 1, and images large enough that the batch runs in
// chunks of the L2's size, the accumulators waiting in scratch between them.
TEST(BackwardFilterDirectKernels, MoreChannelsWhereOnlyTheTileWouldRunAndTheBatchInChunks) {
  Rng rng(0xB4F2);
  Runs runs;
  for (int i = 0; i < 40; ++i) {
    const int32_t rank = 1 + i % 3;
    ShapeLimits limits;
    limits.max_channels = 40;
    limits.max_stride = 2;
    limits.max_kernel = 5;
    limits.max_multiply_adds = 600000;
    ConvDims d = random_conv(rng, rank, Layout::NCHW, i % 2 ? Mode::Convolution : Mode::CrossCorrelation, limits);
    d.groups = 1 + i % 4 / 3;
    d.in_channels = d.groups * (3 + i % 11);
    d.out_channels = d.groups * (22 + i % 19);
    const size_t w = size_t(rank - 1);
    d.kernel[w] = std::max<int64_t>(d.kernel[w], 3);
    d.stride[w] = 1;
    if (i % 6 >= 3) {  // ranks 1-3, each image over an eighth of the L2: one image per chunk
      d.batch = 3;
      d.in_channels = d.groups * 3;
      d.out_channels = d.groups * (22 + i % 2);  // a last block of 2 or 3 channels waits too
      const int64_t pixels = detail::l2_cache_bytes() / 8 / (d.in_channels + d.out_channels) + 1;
      const int64_t planes = rank == 3 ? 4 : 1;
      const int64_t side = rank == 1 ? pixels : int64_t(std::ceil(std::sqrt(double(pixels) / double(planes))));
      for (int k = 0; k < rank; ++k) d.in_size[size_t(k)] = side + d.kernel[size_t(k)] * d.dilation[size_t(k)];
      if (rank == 3) d.in_size[0] = planes + d.kernel[0] * d.dilation[0];
    }
    detail::ConvGeometry g;
    if (!detail::make_conv_geometry(d.to_c(), &g).ok()) continue;
    const int64_t pairs = g.ic_per_group * g.oc_per_group;
    EXPECT_FALSE(detail::avx2::backward_filter_direct_supported(g, detail::DirectFilterScope::FewChannels))
        << pairs << " channel pairs are not few: " << describe(d);
    check_every_isa(rng, d, g, detail::DirectFilterScope::InsteadOfTile, &runs);
  }
  if (runs.calls == 0)
    GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: no direct backward filter kernel to test";
  expect_every_isa_ran(runs, 25);
}

// Through the library: past the few channels the kernel runs only where no compiled twin may take
// the problem later (the twin keeps the register tile's chains, so tier 0 must too).
TEST(BackwardFilterDirectKernels, TheLibraryTakesItPastFewChannelsOnlyWhereNoCompiledTwinMay) {
  const DirectIsa* direct = nullptr;
  for (const DirectIsa& k : kIsas) {
    if (detail::process_may_use(k.isa)) direct = &k;
  }
  if (!direct) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: no direct backward filter kernel to test";
  Rng rng(0xB4F3);
  const ConvDims cheap_copies = conv(2, Layout::NCHW, 2, 24, 32, 1, {20, 20, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0});
  const ConvDims problems[] = {cheap_copies, conv(2, Layout::NCHW, 3, 5, 28, 1, {19, 23, 1}, {3, 5, 1})};
  for (const ConvDims& d : problems) {
    SCOPED_TRACE(describe(d));
    detail::ConvGeometry g;
    ASSERT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok());
    ASSERT_TRUE(direct->supported(g, detail::DirectFilterScope::InsteadOfTile));
    ASSERT_FALSE(direct->supported(g, detail::DirectFilterScope::FewChannels));
    const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
    const int64_t weights = ref::conv_weight_elements(d);
    std::vector<float> got = nan_buffer(weights), want = nan_buffer(weights);
    conv_backward_filter(d, x.data(), dy.data(), got.data());
    if (&d == &problems[0]) {
      ASSERT_TRUE(detail::nchw_backward_filter_can_run_as_nhwc(g));
      detail::run_conv_backward_filter(g, detail::DirectFilterScope::FewChannels, 1, x.data(), dy.data(), want.data());
    } else {
      ASSERT_FALSE(detail::nchw_backward_filter_can_run_as_nhwc(g));
      direct->filter(g, 1, x.data(), dy.data(), want.data());
    }
    EXPECT_TRUE(bitwise_equal("dw", got, want, conv_weight_shape(d), describe(d)));
  }
}

}  // namespace
}  // namespace convjit::testing
