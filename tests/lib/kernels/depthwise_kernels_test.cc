// lib/kernels/conv_depthwise_backward_{data,filter}: tier 0's NHWC depthwise gradient kernels, per
// ISA the host has, called directly on random depthwise problems (ranks 1-3, channel counts around
// the vector sizes, strides, dilations, padding, both modes): the oracle's values, the same bits
// on every ISA and for 1 and 3 threads. lib/kernels/conv_depthwise_nchw: tier 0's NCHW depthwise
// forward likewise, and bitwise the NHWC depthwise kernel's results on the transposed problem.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conv_depthwise_backward_data.hpp"
#include "conv_depthwise_backward_filter.hpp"
#include "conv_depthwise_nchw.hpp"
#include "conv_depthwise_nhwc.hpp"
#include "geometry.hpp"
#include "isa.hpp"
#include "ops_internal.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"
#include "support/transforms.hpp"

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

struct NchwDepthwiseIsa {
  const char* name;
  jit::Isa isa;
  bool (*supported)(const detail::ConvGeometry&);
  void (*forward)(const detail::ConvGeometry&, int, const float*, const float*, const float*, bool, float*,
                  convjit_depthwise_row_fn);
  void (*nhwc_forward)(const detail::ConvGeometry&, int, const float*, const float*, const float*, bool, float*,
                       convjit_depthwise_row_fn);
};

const NchwDepthwiseIsa kNchwIsas[] = {
    {"avx2", jit::Isa::Avx2Fma, detail::avx2::depthwise_nchw_supported, detail::avx2::depthwise_nchw,
     detail::avx2::depthwise_nhwc},
    {"avx512", jit::Isa::Avx512, detail::avx512::depthwise_nchw_supported, detail::avx512::depthwise_nchw,
     detail::avx512::depthwise_nhwc},
};

// Each ISA's NCHW kernel the host has that takes d, on 1 and 3 threads: the oracle's values and the
// bits of the NHWC kernel on the transposed problem. The ISAs that ran it, as a bit each
// (1 << jit::Isa), 0 where none did or d is invalid.
unsigned check_nchw_problem(Rng& rng, const ConvDims& d, bool relu, bool with_bias) {
  detail::ConvGeometry g, nhwc;
  ConvDims last = d;
  last.layout = Layout::NHWC;
  if (!detail::make_conv_geometry(d.to_c(), &g).ok() || !detail::make_conv_geometry(last.to_c(), &nhwc).ok()) return 0;
  const std::string context = describe(d);
  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
  const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
  const std::vector<float> bias = random_floats(rng, d.out_channels);
  const float* b = with_bias ? bias.data() : nullptr;
  const Activation activation = relu ? Activation::Relu : Activation::Identity;
  const std::vector<double> want = ref::conv_forward(d, x.data(), w.data(), b, activation);
  const int64_t in_pixels = ref::conv_input_elements(d) / (d.batch * d.in_channels);
  const int64_t out_pixels = ref::conv_output_elements(d) / (d.batch * d.out_channels);
  const std::vector<float> x_nhwc = channels_first_to_last(x, d.batch, d.in_channels, in_pixels);
  unsigned ran = 0;
  for (const NchwDepthwiseIsa& k : kNchwIsas) {
    if (!jit::host_has(k.isa) || !k.supported(g)) continue;
    // Depthwise weights are [channel][tap] in both layouts.
    std::vector<float> y_nhwc = nan_buffer(int64_t(want.size()));
    k.nhwc_forward(nhwc, 1, x_nhwc.data(), w.data(), b, relu, y_nhwc.data(), nullptr);
    const std::vector<float> y_twin = channels_last_to_first(y_nhwc, d.batch, d.out_channels, out_pixels);
    for (int threads : {1, 3}) {
      SCOPED_TRACE(std::string(k.name) + ", " + std::to_string(threads) + " threads, " + context);
      std::vector<float> y = nan_buffer(int64_t(want.size()));
      k.forward(g, threads, x.data(), w.data(), b, relu, y.data(), nullptr);
      EXPECT_TRUE(all_close("y", y.data(), want, conv_output_shape(d), g.taps, context));
      EXPECT_TRUE(bitwise_equal("y vs the NHWC kernel", y, y_twin, conv_output_shape(d), context));
    }
    ran |= 1u << unsigned(k.isa);
  }
  return ran;
}

bool ran_on(unsigned isas, jit::Isa isa) {
  return (isas >> unsigned(isa)) & 1u;
}

// Kernels of the extents with code (up to 3x3, 4x4, 5x5, 1x4, 1x5; AVX2 holds up to 9 taps,
// AVX-512 up to 25, in groups of 4 or 6 rows), W stride 1 and 2, dilations, asymmetric padding,
// planes tall enough for several groups; half of the 2D ones at equal strides (row groups share
// input rows) and up to 80 wide (rows with full vectors at stride 2).
TEST(DepthwiseNchwForward, OracleValuesAndTheNhwcKernelsBitsOnEveryIsaAndThreadCount) {
  Rng rng(0xD3A2);
  int ran_avx2 = 0, ran_avx512 = 0;
  // Problems whose row groups share input rows (a kernel taller than 1, H stride W's, H dilation
  // 1, at least 2 output rows, and at stride 2 on AVX-512 up to 3 wide only at a unit W step):
  // over padding rows at the top, at the bottom, flipped at stride 1 (the rows walked in reverse),
  // and at stride 2; and those that took spans, in both modes.
  int padded_top = 0, padded_bottom = 0, padded_flipped = 0, shared_strided = 0;
  int spanned[2] = {0, 0};  // cross-correlation, convolution
  for (int i = 0; i < 200; ++i) {
    ConvDims d;
    d.rank = i % 5 == 0 ? 1 : 2;
    d.layout = Layout::NCHW;
    d.mode = i % 2 ? Mode::Convolution : Mode::CrossCorrelation;
    d.batch = rng.uniform_int(1, 2);
    d.groups = d.in_channels = d.out_channels = rng.uniform_int(1, 7);
    const int64_t wide = rng.uniform_int(4, 5);
    switch (d.rank == 1 ? 0 : rng.uniform_int(1, 3)) {
      case 0: d.kernel = {rng.uniform_int(1, 5), 1, 1}; break;  // 1D: W
      case 1: d.kernel = {rng.uniform_int(1, 3), rng.uniform_int(1, 3), 1}; break;
      case 2: d.kernel = {wide, wide, 1}; break;
      default: d.kernel = {1, wide, 1};
    }
    for (int k = 0; k < d.rank; ++k) {
      d.stride[k] = k == d.rank - 1 ? rng.uniform_int(1, 2) : rng.chance(0.5) ? 1 : rng.uniform_int(2, 3);
      d.dilation[k] = rng.chance(0.7) ? 1 : 2;
      const int64_t extent = (d.kernel[k] - 1) * d.dilation[k] + 1;
      d.pad_begin[k] = rng.uniform_int(0, extent - 1);
      d.pad_end[k] = rng.uniform_int(0, extent - 1);
      d.in_size[k] = rng.uniform_int(std::max<int64_t>(extent, 8), 45);
    }
    if (d.rank == 2 && i % 4 >= 2) {
      d.stride[0] = d.stride[1];
      d.in_size[1] = rng.uniform_int(d.in_size[1], 80);
    }
    const bool relu = rng.chance(0.5), with_bias = rng.chance(0.5);
    const unsigned ran = check_nchw_problem(rng, d, relu, with_bias);
    ran_avx2 += ran_on(ran, jit::Isa::Avx2Fma);
    ran_avx512 += ran_on(ran, jit::Isa::Avx512);
    if (ran == 0) continue;  // invalid, or no kernel took it
    const int64_t out_rows = d.output_size()[0];
    const bool unit_w_step = d.dilation[1] == 1;
    const bool spans = ran_on(ran, jit::Isa::Avx512) && d.stride[1] == 2 && d.kernel[1] <= 3;
    const bool shared = d.rank == 2 && d.kernel[0] > 1 && d.stride[0] == d.stride[1] && d.dilation[0] == 1 &&
                        out_rows >= 2 && (!spans || unit_w_step);
    if (shared) {
      padded_top += d.pad_begin[0] > 0;
      padded_bottom += d.pad_end[0] > 0;
      padded_flipped += d.stride[0] == 1 && d.mode == Mode::Convolution && d.pad_begin[0] + d.pad_end[0] > 0;
      shared_strided += d.stride[0] == 2;
      spanned[d.mode == Mode::Convolution] += spans;
    }
  }
  if (ran_avx2 + ran_avx512 == 0) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: no NCHW depthwise kernel";
  EXPECT_GE(ran_avx2, 60) << "too few problems ran on AVX2's kernel";
  EXPECT_GE(padded_top, 8) << "too few problems grouped rows over padded input rows on top";
  EXPECT_GE(padded_bottom, 8) << "too few problems grouped rows over padded input rows at the bottom";
  EXPECT_GE(padded_flipped, 4) << "too few flipped problems grouped rows over padded input rows at stride 1";
  EXPECT_GE(shared_strided, 6) << "too few problems grouped rows sharing input rows at stride 2";
  if (jit::host_has(jit::Isa::Avx512)) {
    EXPECT_GE(ran_avx512, 90) << "too few problems ran on AVX-512's kernel";
    EXPECT_GE(spanned[0], 2) << "too few problems took a row's taps from spans";
    EXPECT_GE(spanned[1], 2) << "too few flipped problems took a row's taps from spans";
  }
}

// Fixed problems at stride 2 where the spans' edges are, in both modes: rows of full vectors and
// edges, only edges, a kernel one wide whose body's next float would be past the row, both
// paddings at once, and rows as long as the row of zeros.
TEST(DepthwiseNchwForward, StrideTwoSpansAndTheRowOfZeros) {
  Rng rng(0xD3A3);
  auto problem = [](int64_t h, int64_t w, int64_t k_h, int64_t k_w, int64_t pad_begin, int64_t pad_end,
                    Mode mode = Mode::CrossCorrelation) {
    ConvDims d;
    d.rank = 2;
    d.layout = Layout::NCHW;
    d.mode = mode;
    d.groups = d.in_channels = d.out_channels = 3;
    d.in_size = {h, w, 1};
    d.kernel = {k_h, k_w, 1};
    d.stride = {2, 2, 1};
    d.pad_begin = {pad_begin, pad_begin, 0};
    d.pad_end = {pad_end, pad_end, 0};
    return d;
  };
  int ran = 0;
  const Mode flip = Mode::Convolution;
  const ConvDims problems[] = {problem(21, 81, 3, 3, 1, 1),       problem(15, 17, 3, 3, 1, 0),
                               problem(13, 32, 3, 1, 0, 0),       problem(12, 34, 2, 2, 0, 1),
                               problem(5, 4096, 3, 3, 1, 1),      problem(21, 81, 3, 3, 1, 1, flip),
                               problem(15, 17, 3, 3, 0, 1, flip), problem(12, 34, 2, 3, 1, 0, flip)};
  for (const ConvDims& d : problems) ran += check_nchw_problem(rng, d, true, true) != 0;
  if (ran == 0) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: no NCHW depthwise kernel";
  EXPECT_EQ(ran, int(std::size(problems))) << "every fixed problem is one the kernels take";
}

// What each ISA's kernel takes: the extents with code, the taps within its registers, and rows
// longer than its row of zeros only where no padding rows are read.
TEST(DepthwiseNchwForward, EachIsaTakesTheKernelsWhoseTapsFitItsRegisters) {
  auto geometry = [](int64_t kh, int64_t kw, int64_t width = 20, int64_t pad_begin = 0, int64_t pad_end = 0) {
    ConvDims d;
    d.rank = 2;
    d.layout = Layout::NCHW;
    d.groups = d.in_channels = d.out_channels = 4;
    d.in_size = {20, width, 1};
    d.kernel = {kh, kw, 1};
    d.pad_begin = {pad_begin, pad_begin, 0};
    d.pad_end = {pad_end, pad_end, 0};
    detail::ConvGeometry g;
    EXPECT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok());
    return g;
  };
  struct Expect {
    int64_t kh, kw;
    bool avx2, avx512;
  };
  for (const Expect& e :
       {Expect{3, 3, true, true}, Expect{2, 3, true, true}, Expect{1, 4, true, true}, Expect{1, 5, true, true},
        Expect{4, 4, false, true}, Expect{5, 5, false, true}, Expect{2, 4, false, false}, Expect{5, 3, false, false},
        Expect{4, 1, false, false}, Expect{1, 7, false, false}, Expect{6, 6, false, false}}) {
    const detail::ConvGeometry g = geometry(e.kh, e.kw);
    const std::string kernel = std::to_string(e.kh) + "x" + std::to_string(e.kw);
    if (jit::host_has(jit::Isa::Avx2Fma)) {
      EXPECT_EQ(detail::avx2::depthwise_nchw_supported(g), e.avx2) << kernel;
    }
    if (jit::host_has(jit::Isa::Avx512)) {
      EXPECT_EQ(detail::avx512::depthwise_nchw_supported(g), e.avx512) << kernel;
    }
  }
  for (const jit::Isa isa : {jit::Isa::Avx2Fma, jit::Isa::Avx512}) {
    if (!jit::host_has(isa)) continue;
    const auto supported =
        isa == jit::Isa::Avx512 ? detail::avx512::depthwise_nchw_supported : detail::avx2::depthwise_nchw_supported;
    EXPECT_TRUE(supported(geometry(3, 3, 4096, 1, 1))) << "rows as long as the row of zeros";
    EXPECT_TRUE(supported(geometry(3, 3, 5000))) << "long rows, no padding rows";
    EXPECT_FALSE(supported(geometry(3, 3, 5000, 1, 0))) << "long rows with a padding row on top";
    EXPECT_FALSE(supported(geometry(3, 3, 5000, 0, 1))) << "long rows with a padding row at the bottom";
  }
}

}  // namespace
}  // namespace convjit::testing
