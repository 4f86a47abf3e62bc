// lib/kernels/conv_depthwise_backward_{data,filter}: tier 0's NHWC depthwise gradient kernels, per
// ISA the host has, called directly on random depthwise problems (ranks 1-3, channel counts around
// the vector sizes, strides, dilations, padding, both modes): the oracle's values, the same bits
// on every ISA and for 1 and 3 threads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conv_depthwise_backward_data.hpp"
#include "conv_depthwise_backward_filter.hpp"
#include "conv_depthwise_nhwc.hpp"
#include "geometry.hpp"
#include "isa.hpp"
#include "ops_internal.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

struct DepthwiseIsa {
  const char* name;
  jit::Isa isa;
  void (*filter)(const detail::ConvGeometry&, int, const float*, const float*, float*);
  void (*data)(const detail::ConvGeometry&, int, const float*, const float*, int64_t, float*);
};

const DepthwiseIsa kIsas[] = {
    {"avx2", jit::Isa::Avx2Fma, detail::avx2::depthwise_backward_filter, detail::avx2::depthwise_backward_data},
    {"avx512", jit::Isa::Avx512, detail::avx512::depthwise_backward_filter, detail::avx512::depthwise_backward_data},
};

TEST(DepthwiseGradientKernels, OracleValuesAndTheSameBitsOnEveryIsaAndThreadCount) {
  Rng rng(0xD3A1);
  int ran = 0;
  for (int i = 0; i < 60; ++i) {
    const int32_t rank = 1 + i % 3;
    ConvDims d = random_conv(rng, rank, Layout::NHWC, i % 2 ? Mode::Convolution : Mode::CrossCorrelation);
    // Around the lanes, and past the several vectors the filter kernel walks at once (AVX-512: 3 of 16).
    d.in_channels = d.out_channels = d.groups = std::vector<int64_t>{1, 5, 8, 16, 17, 33, 48, 100}[size_t(i % 8)];
    for (int k = 0; k < rank; ++k) d.kernel[size_t(k)] = std::min<int64_t>(d.kernel[size_t(k)], rank == 3 ? 2 : 3);
    if (rank == 2 && i % 6 == 1) {  // 12 and 16 taps: fewer vectors at once (AVX-512: 2 and 1)
      d.kernel[0] = 4;
      d.kernel[1] = i % 12 == 1 ? 3 : 4;
      for (int k = 0; k < 2; ++k) d.in_size[size_t(k)] = std::max<int64_t>(d.in_size[size_t(k)], 6);
    }
    detail::ConvGeometry g;
    if (!detail::make_conv_geometry(d.to_c(), &g).ok()) continue;
    const std::string context = describe(d);
    const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
    const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
    const std::vector<double> dw_want = ref::conv_backward_filter(d, x.data(), dy.data());
    const std::vector<double> dx_want = ref::conv_backward_data(d, dy.data(), w.data());
    const int64_t ow_tile = detail::backward_data_row_tile(g);
    std::vector<float> dw_first, dx_first;
    for (const DepthwiseIsa& k : kIsas) {
      if (!jit::host_has(k.isa) || g.taps > detail::kDepthwiseFilterMaxTaps) continue;
      for (int threads : {1, 3}) {
        SCOPED_TRACE(std::string(k.name) + ", " + std::to_string(threads) + " threads, " + context);
        std::vector<float> dw = nan_buffer(int64_t(dw_want.size())), dx = nan_buffer(int64_t(dx_want.size()));
        k.filter(g, threads, x.data(), dy.data(), dw.data());
        k.data(g, threads, dy.data(), detail::depthwise_nhwc_taps_major(g, w.data()), ow_tile, dx.data());
        int64_t taps = 1, per_tap = 1;
        for (int j = 0; j < rank; ++j) taps *= d.kernel[size_t(j)];
        per_tap = ref::conv_output_elements(d) / d.out_channels;
        EXPECT_TRUE(all_close("dw", dw.data(), dw_want, conv_weight_shape(d), per_tap, context));
        EXPECT_TRUE(all_close("dx", dx.data(), dx_want, conv_input_shape(d), taps, context));
        if (dw_first.empty()) {
          dw_first = dw;
          dx_first = dx;
        } else {
          EXPECT_TRUE(bitwise_equal("dw", dw, dw_first, conv_weight_shape(d), context));
          EXPECT_TRUE(bitwise_equal("dx", dx, dx_first, conv_input_shape(d), context));
        }
        ++ran;
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: no depthwise gradient kernel to test";
  EXPECT_GE(ran, 60) << "too few problems ran (invalid ones are skipped)";
}

}  // namespace
}  // namespace convjit::testing
