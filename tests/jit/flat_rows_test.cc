// jit/abi/backend.hpp's flattens_rows: short stride-1 NCHW rows go to a row kernel several whole rows
// at a time, over the band or x flattened, outputs on the padded grid in scratch and the real ones
// copied out, or (a kernel that compacts grids: AVX-512's) the real ones written straight into y. Per backend, each
// input source the driver can flatten (a band where the rows read padding, x itself where they do not) and rows it does
// not (mostly junk, one row per plane), with dilation, 3D, the flipped mode, channel blocks that do not divide, and
// more threads: against the oracle and bitwise against the generic tier, and the kernels must really have run.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "backend.hpp"
#include "jit_support.hpp"
#include "conv_forward.hpp"
#include "select_tier.hpp"

namespace convjit::testing::jit {
namespace {

// A row kernel written from jit/abi/conv_tile_abi.h's contract alone (NCHW, scalar, one float FMA
// chain per output in weight order; given a grid map, only the real outputs, each to its place in
// y): the driver's flattening checked on its own, and its calls show whether rows were joined and
// whether segments came with a map.
std::atomic<int64_t> g_longest_segment{0}, g_mapped_segments{0};

void contract_row_kernel(const convjit_conv_problem* p, const convjit_conv_tile* t) {
  int64_t seen = g_longest_segment.load();
  while (t->pixel_count > seen && !g_longest_segment.compare_exchange_weak(seen, t->pixel_count)) {
  }
  g_mapped_segments += t->grid_real != nullptr;
  auto tap = [&](int d, int64_t k) { return p->flip ? p->kernel[d] - 1 - k : k; };
  for (int64_t j = 0; j < t->oc_count; ++j) {
    const float* w = t->w + j * p->reduction;
    for (int64_t px = 0; px < t->pixel_count; ++px) {
      float acc = 0.0f;
      int64_t k = 0;
      for (int64_t ic = 0; ic < p->ic_per_group; ++ic) {
        for (int64_t kd = 0; kd < p->kernel[0]; ++kd) {
          for (int64_t kh = 0; kh < p->kernel[1]; ++kh) {
            for (int64_t kw = 0; kw < p->kernel[2]; ++kw, ++k) {
              const float* in = t->x + ic * t->view_channel + tap(0, kd) * t->view_tap_plane +
                                tap(1, kh) * t->view_tap_row +
                                (px * p->stride[2] + tap(2, kw) * p->dilation[2]) * t->view_position;
              acc = std::fma(*in, w[k], acc);
            }
          }
        }
      }
      if (t->bias) acc += t->bias[j];
      if (t->relu && 0.0f > acc) acc = 0.0f;  // vmaxps(0, acc): keeps NaN and -0
      if (!t->grid_real)
        t->y[j * p->y.channel + px] = acc;
      else if (t->grid_real[px] == 0x80)
        t->y[j * p->y.channel + t->grid_outputs[px]] = acc;
      else
        EXPECT_EQ(t->grid_real[px], 0) << "a grid map holds 0x80 or 0";
    }
  }
}

// The driver alone, with the contract kernel, on grids in scratch and on grids compacted into y:
// short stride-1 rows are joined (a segment longer than a row), the results are the oracle's and
// bitwise the generic tier's (same chains).
class FlatRowsDriver : public ::testing::TestWithParam<bool> {};

TEST_P(FlatRowsDriver, JoinsShortRowsAndKeepsTheNumbers) {
  const bool compacts = GetParam();
  constexpr Layout C = Layout::NCHW;
  const Extent k3 = {3, 3, 1}, s1 = {1, 1, 1};
  const std::vector<ConvDims> joined = {
      conv(2, C, 2, 3, 5, 1, {16, 12, 1}, k3),                 // x itself
      conv(2, C, 1, 4, 9, 1, {9, 10, 1}, k3, s1, {1, 1, 0}),   // a band
      conv(2, C, 1, 5, 4, 1, {12, 14, 1}, k3, s1, {1, 0, 0}),  // H padding only: a band
      conv(2, C, 1, 2, 3, 1, {11, 20, 1}, {3, 2, 1}, s1, {2, 1, 0}, {2, 3, 1}, Mode::Convolution),
  };
  Runtime generic(generic_policy());
  convjit_conv_kernel kernel{};
  kernel.compute = contract_row_kernel;
  kernel.row_kernel = 1;
  kernel.min_row_pixels = 1;
  kernel.row_lanes = 8;
  kernel.compacts_grid = compacts;
  for (size_t i = 0; i < joined.size(); ++i) {
    const Problem p(joined[i], case_seed(0xF1A8, i), true, Activation::Relu);
    detail::ConvGeometry g;
    const convjit_conv_params params = p.dims.to_c();
    std::vector<float> y(p.outputs(), -1.0f);
    ASSERT_TRUE(detail::validate_conv_forward(&params, p.x.data(), p.w.data(), CONVJIT_ACT_RELU, y.data(), &g).ok());
    ASSERT_TRUE(convjit::jit::flattens_rows(g, kernel)) << describe(p.dims);
    g_longest_segment = 0;
    g_mapped_segments = 0;
    detail::run_conv_forward(g, detail::select_tier(g, &kernel), 2, p.x.data(), p.w.data(), p.bias.data(), true, y.data());
    EXPECT_GT(g_longest_segment.load(), g.out[2]) << "rows were not joined: " << describe(p.dims);
    if (compacts)
      EXPECT_GT(g_mapped_segments.load(), 0) << "no segment came with a grid map: " << describe(p.dims);
    else
      EXPECT_EQ(g_mapped_segments.load(), 0) << "a grid map for a kernel that does not compact: " << describe(p.dims);
    EXPECT_TRUE(p.matches_reference(y, "contract kernel")) << "case " << i;
    EXPECT_TRUE(p.same_bits(y, p.run(generic), "contract kernel vs generic")) << "case " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Grids, FlatRowsDriver, ::testing::Bool(), [](const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "CompactedIntoY" : "InScratch";
});

class FlatRows : public ::testing::TestWithParam<Backend> {};

TEST_P(FlatRows, ShortStrideOneRowsRunCompiledAndMatchGenericBitwise) {
  constexpr Layout C = Layout::NCHW;
  const Extent k3 = {3, 3, 1}, s1 = {1, 1, 1};
  const std::vector<ConvDims> shapes = {
      conv(2, C, 5, 1, 2, 1, {28, 28, 1}, k3),                                  // seed network: x itself
      conv(2, C, 2, 3, 3, 1, {22, 22, 1}, k3),                                  // 3 channels: a block of 3
      conv(2, C, 1, 16, 21, 1, {14, 14, 1}, k3, s1, {1, 1, 0}),                 // resnet_3x3_14-like: a band
      conv(2, C, 1, 24, 10, 1, {10, 10, 1}, k3, s1, {1, 1, 0}),                 // rows of 10: a band
      conv(2, C, 1, 24, 10, 1, {7, 7, 1}, k3, s1, {1, 1, 0}),                   // 7 of 9 columns real: row by row
      conv(2, C, 2, 5, 9, 1, {9, 13, 1}, {3, 5, 1}, s1, {1, 2, 0}, {1, 2, 1}),  // dilated W, 9 of 17: row by row
      conv(2, C, 1, 4, 6, 2, {12, 11, 1}, k3, s1, {0, 1, 0}, {2, 1, 1}, Mode::Convolution),  // groups, flip
      conv(2, C, 1, 6, 5, 1, {15, 20, 1}, k3, s1, {1, 0, 0}),                                // H padding only: a band
      conv(3, C, 1, 3, 7, 1, {5, 9, 10}, {3, 3, 3}, {2, 1, 1}, {1, 1, 1}),                   // 3D, stride 2 along D
      conv(1, C, 3, 4, 8, 1, {30, 1, 1}, {5, 1, 1}, s1, {2, 0, 0}),  // 1D: one row, not flattened
  };
  for (int threads : {1, 3}) {
    Policy policy = eager_policy(threads);
    policy.backend = GetParam();
    policy.adapt_threads = false;  // 3 threads on every call (the default may run a call on one)
    Runtime runtime(policy);
    CONVJIT_SKIP_WITHOUT_BACKEND(runtime);
    Runtime generic(generic_policy());
    for (size_t i = 0; i < shapes.size(); ++i) {
      for (Activation act : {Activation::Identity, Activation::Relu}) {
        const Problem p(shapes[i], case_seed(0xF1A7, i), act == Activation::Relu, act);
        const std::vector<float> y = p.run(runtime);
        EXPECT_TRUE(p.matches_reference(y, "jit y")) << "case " << i << ", " << threads << " threads";
        EXPECT_TRUE(p.same_bits(y, p.run(generic), "jit vs generic")) << "case " << i << ", " << threads << " threads";
      }
    }
    const RuntimeStats stats = runtime.stats();
    ASSERT_EQ(stats.configurations.size(), 2 * shapes.size());
    for (const ConfigStats& c : stats.configurations) {
      EXPECT_EQ(c.state, "jit") << describe(c.dims) << ": " << c.failure;
      EXPECT_EQ(c.calls_jit, 1) << describe(c.dims);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, FlatRows, ::testing::Values(Backend::Xbyak, Backend::Llvm),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::Xbyak ? "Xbyak" : "Llvm";
                         });

}  // namespace
}  // namespace convjit::testing::jit
