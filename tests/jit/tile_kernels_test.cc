// The tile-kernel tester (as XNNPACK's microkernel testers and BLIS's test_gemm_ukr): every
// registered forward tile kernel called directly, without the driver, on tiles that start and end
// anywhere (pixel tails within and across rows, output-channel tails, the first and last rows of
// padded problems), strides and dilations, both layouts and modes, bias and relu. Tier 0's tile
// rows (lib/kernels/forward_kernels.cpp) take tiles as the driver makes them; each backend's
// compiled row kernels take row segments with their input views (lib/driver/row_views.hpp), and
// packing ones their packed weights, and those that compact grids flattened segments with a grid map.
// y is filled with a sentinel NaN with guard zones on both
// sides: the tile's outputs must match the oracle, every other float must be left as it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "conv_forward.hpp"
#include "forward_kernels.hpp"
#include "gemm_tile.hpp"
#include "jit_support.hpp"
#include "packed_weights.hpp"
#include "row_views.hpp"
#include "threads.hpp"

namespace convjit::testing::jit {
namespace {

constexpr int64_t kGuardFloats = 64;
constexpr uint32_t kSentinelBits = 0x7fc0beefu;  // a quiet NaN no kernel computes

float sentinel() {
  float f;
  std::memcpy(&f, &kSentinelBits, sizeof f);
  return f;
}

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], AlignedFree>;
AlignedFloats aligned_floats(int64_t n) {
  const size_t bytes = (size_t(n) * sizeof(float) + 63) / 64 * 64;
  return AlignedFloats(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

// One tile: pixels [first, first + count) of output plane (n, od), channels [oc, oc + oc_count)
// of one group.
struct TileSpot {
  int64_t n, group, od, first_pixel, pixel_count, first_oc, oc_count;
};

// The problem, its inputs and the oracle's y; y under test lives between two guard zones.
class TileBench {
 public:
  explicit TileBench(const ConvDims& dims, uint64_t seed) : p_(dims, seed, true, Activation::Relu) {
    const convjit_conv_params params = p_.dims.to_c();
    y_.assign(size_t(p_.outputs() + 2 * kGuardFloats), sentinel());
    valid_ = detail::validate_conv_forward(&params, p_.x.data(), p_.w.data(), CONVJIT_ACT_RELU,
                                           y_.data() + kGuardFloats, &g_)
                 .ok();
  }
  bool valid() const { return valid_; }
  const detail::ConvGeometry& g() const { return g_; }
  const Problem& problem() const { return p_; }

  // A tile as the driver hands it to a tile kernel (x at the group's first channel).
  convjit_conv_tile tile_at(const TileSpot& s, float* scratch) {
    convjit_conv_tile t{};
    t.x = p_.x.data() + s.n * g_.x.batch + s.group * g_.ic_per_group * g_.x.channel;
    t.w = p_.w.data() + s.first_oc * g_.reduction;
    t.bias = p_.bias.data() + s.first_oc;
    t.od = s.od;
    t.oh = s.first_pixel / g_.out[2];
    t.ow = s.first_pixel % g_.out[2];
    t.y = y() + s.n * g_.y.batch + s.first_oc * g_.y.channel + s.od * g_.y.spatial[0] + t.oh * g_.y.spatial[1] +
          t.ow * g_.y.spatial[2];
    t.oc_count = s.oc_count;
    t.pixel_count = s.pixel_count;
    t.relu = 1;
    t.scratch = scratch;
    t.scratch_floats = int64_t(detail::kScratchFloats);
    return t;
  }

  // The tile's outputs are the oracle's; everything else, guards included, is still the
  // sentinel. Then y is reset for the next tile.
  ::testing::AssertionResult check_and_reset(const TileSpot& s, const std::string& what) {
    std::vector<char> in_tile(y_.size(), 0);
    for (int64_t c = s.first_oc; c < s.first_oc + s.oc_count; ++c) {
      for (int64_t px = s.first_pixel; px < s.first_pixel + s.pixel_count; ++px) {
        const int64_t at = s.n * g_.y.batch + c * g_.y.channel + s.od * g_.y.spatial[0] +
                           px / g_.out[2] * g_.y.spatial[1] + px % g_.out[2] * g_.y.spatial[2];
        in_tile[size_t(kGuardFloats + at)] = 1;
      }
    }
    const double tol = tolerance(p_.want, p_.reduction());
    ::testing::AssertionResult result = ::testing::AssertionSuccess();
    for (size_t i = 0; i < y_.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &y_[i], sizeof bits);
      const int64_t at = int64_t(i) - kGuardFloats;
      if (!in_tile[i] && bits != kSentinelBits) {
        result = ::testing::AssertionFailure() << what << ": wrote outside its tile at y[" << at << "] ("
                                               << (at < 0 || at >= p_.outputs() ? "guard zone" : "another tile's")
                                               << ") in " << describe(p_.dims);
        break;
      }
      if (in_tile[i] && !(std::abs(double(y_[i]) - p_.want[size_t(at)]) <= tol)) {
        result = ::testing::AssertionFailure() << what << ": y[" << at << "] = " << y_[i] << ", want "
                                               << p_.want[size_t(at)] << " (tolerance " << tol << ") in "
                                               << describe(p_.dims);
        break;
      }
    }
    std::fill(y_.begin(), y_.end(), sentinel());
    return result;
  }

 private:
  float* y() { return y_.data() + kGuardFloats; }
  Problem p_;
  detail::ConvGeometry g_{};
  std::vector<float> y_;
  bool valid_ = false;
};

// Tiles that start and end at awkward places: one pixel, a row's tail, across rows, the whole
// plane; one channel, a channel tail, the group's channels; the first and last plane and image.
std::vector<TileSpot> tile_spots(const detail::ConvGeometry& g, int64_t max_oc) {
  const int64_t pixels = g.out[1] * g.out[2];
  const int64_t last_n = g.batch - 1, last_group = g.groups - 1, last_od = g.out[0] - 1;
  const int64_t ocs = std::min(max_oc, g.oc_per_group);
  const int64_t group_oc = last_group * g.oc_per_group;
  std::vector<TileSpot> spots = {
      {0, 0, 0, 0, pixels, 0, ocs},
      {0, 0, 0, 0, 1, 0, 1},
      {last_n, last_group, last_od, pixels - 1, 1, group_oc + g.oc_per_group - 1, 1},
      {0, last_group, last_od, std::min<int64_t>(g.out[2] / 2, pixels - 1), 0, group_oc, ocs},
      {last_n, 0, 0, pixels / 3, 0, 0, std::max<int64_t>(1, ocs - 1)},
  };
  spots[3].pixel_count = std::min<int64_t>(g.out[2] + 5, pixels - spots[3].first_pixel);  // across rows
  spots[4].pixel_count = std::max<int64_t>(1, (pixels - spots[4].first_pixel) / 2);
  return spots;
}

// Row segments for a row kernel: the row's start (padding on the left), its end (on the right),
// the shortest it takes, and the whole row; channel tails as above, at most max_oc channels, and
// half of them and one more (where a kernel's narrower channel variant ends). None where the rows
// are shorter than the kernel's minimum (the driver never gives it those).
std::vector<TileSpot> row_spots(const detail::ConvGeometry& g, int64_t min_pixels, int64_t max_oc) {
  const int64_t row = g.out[2], last_row = g.out[1] - 1;
  if (row < min_pixels) return {};
  const int64_t ocs = std::min(max_oc, g.oc_per_group);
  const int64_t shortest = std::max<int64_t>(1, min_pixels);
  const int64_t group_oc = (g.groups - 1) * g.oc_per_group;
  return {
      {0, 0, 0, 0, row, 0, ocs},
      {0, 0, 0, 0, shortest, 0, 1},
      {g.batch - 1, g.groups - 1, g.out[0] - 1, last_row * row + row - shortest, shortest, group_oc,
       std::max<int64_t>(1, ocs - 1)},
      {0, g.groups - 1, 0, last_row * row, row, group_oc + g.oc_per_group - ocs, ocs},
      {0, 0, g.out[0] - 1, last_row * row, row, 0, std::max<int64_t>(1, ocs / 2)},
      {g.batch - 1, 0, 0, 0, row, 0, ocs / 2 + 1},
  };
}

// NCHW problems with 1-8 output channels per group and output rows of 9-16, 25-32 and 48 pixels,
// the lengths that whole 16-lane vectors fill (the AVX-512 direct tile takes those only), at
// strides 1 and 2, with padding, dilation and both modes.
std::vector<ConvDims> few_channel_rows() {
  Rng rng(0x71E8);
  std::vector<ConvDims> shapes;
  for (int i = 0; i < 32; ++i) {
    const int64_t out_w = std::vector<int64_t>{9, 12, 15, 16, 25, 31, 32, 48}[size_t(i % 8)];
    const int64_t stride = 1 + i / 8 % 2, kernel = rng.uniform_int(1, 5), dilation = rng.uniform_int(1, 2);
    const int64_t pad = rng.uniform_int(0, 2), groups = rng.chance(0.3) ? 2 : 1;
    const int64_t in_w = (out_w - 1) * stride + (kernel - 1) * dilation + 1 - 2 * pad;
    const int64_t ic = groups * rng.uniform_int(1, 3), oc = groups * rng.uniform_int(1, 8);
    const Mode mode = i / 16 % 2 ? Mode::Convolution : Mode::CrossCorrelation;
    const int64_t in_h = (kernel - 1) * dilation + rng.uniform_int(1, 4);
    shapes.push_back(conv(2, Layout::NCHW, rng.uniform_int(1, 2), ic, oc, groups, {in_h, in_w, 1}, {kernel, kernel, 1},
                          {stride, stride, 1}, {pad, pad, 0}, {dilation, dilation, 1}, mode));
  }
  return shapes;
}

// Short rows (which tier 0's tiles cross) and long ones (which the row kernels take).
std::vector<ConvDims> tester_shapes() {
  std::vector<ConvDims> shapes = random_conv_sweep(0x71E5, 72);
  for (const ConvDims& d : random_conv_sweep(0x71E6, 24, wide_channel_limits())) shapes.push_back(d);
  for (const ConvDims& d : long_row_sweep(0x71E7, 48, 400000)) shapes.push_back(d);
  for (const ConvDims& d : larger_conv_shapes()) shapes.push_back(d);
  for (const ConvDims& d : few_channel_rows()) shapes.push_back(d);
  return shapes;
}

// Tier 0's tile rows, each called directly (the rows that run whole calls, depthwise, below and
// swept through the library by tests/lib/driver/conv_forward_test.cc).
class GenericTileKernels : public ::testing::TestWithParam<size_t> {};

// The indices of tier 0's tile rows, or of its whole-call rows.
std::vector<size_t> rows_of_kind(bool whole_call) {
  std::vector<size_t> rows;
  for (size_t i = 0; i < detail::generic_forward_kernels().size(); ++i) {
    if ((detail::generic_forward_kernels()[i].whole_call != nullptr) == whole_call) rows.push_back(i);
  }
  return rows;
}

TEST_P(GenericTileKernels, EveryTileMatchesTheOracleAndWritesOnlyItsOutputs) {
  const detail::GenericForwardKernel& kernel = detail::generic_forward_kernels()[GetParam()];
  if (!convjit::jit::host_has(kernel.isa)) GTEST_SKIP() << kernel.name << ": this host lacks its ISA";
  AlignedFloats scratch = aligned_floats(int64_t(detail::kScratchFloats));
  const std::vector<ConvDims> shapes = tester_shapes();
  int tested = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    TileBench bench(shapes[i], case_seed(0x7E57, i));
    ASSERT_TRUE(bench.valid()) << describe(shapes[i]);
    if (!kernel.takes(bench.g())) continue;
    ++tested;
    for (const TileSpot& s : tile_spots(bench.g(), 64)) {
      const convjit_conv_tile t = bench.tile_at(s, scratch.get());
      kernel.tile(&bench.g(), &t);
      ASSERT_TRUE(bench.check_and_reset(s, kernel.name)) << "case " << i;
    }
  }
  EXPECT_GE(tested, 20) << kernel.name << " took too few of the shapes to be tested";
}

INSTANTIATE_TEST_SUITE_P(Rows, GenericTileKernels, ::testing::ValuesIn(rows_of_kind(false)),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(detail::generic_forward_kernels()[info.param].name);
                         });

// The register tile under every generic kernel: each ISA's build against the portable one (std::fma,
// the same chain per element), bitwise, on random tiles: every row and column count, packed and
// indirect B, accumulating or not, bias, relu, strided C.
TEST(RegisterTile, EveryIsaGivesThePortableBits) {
  std::vector<std::pair<const char*, void (*)(const detail::GemmTile&)>> builds;
  if (convjit::jit::host_has(convjit::jit::Isa::Avx2Fma)) builds.push_back({"avx2", detail::avx2::gemm_tile});
  if (convjit::jit::host_has(convjit::jit::Isa::Avx512)) builds.push_back({"avx512", detail::avx512::gemm_tile});
  if (builds.empty()) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512";
  Rng rng(0x6E33);
  for (int c = 0; c < 400; ++c) {
    detail::GemmTile t{};
    t.k = rng.uniform_int(1, 70);
    t.rows = int(rng.uniform_int(1, detail::kTileRows));
    t.cols = int(rng.uniform_int(1, detail::kTileCols));
    t.a_row_stride = t.k + rng.uniform_int(0, 3);
    t.a_step = 1;
    const std::vector<float> a = random_floats(rng, t.rows * t.a_row_stride);
    const std::vector<float> b = random_floats(rng, t.k * detail::kTileCols);
    std::vector<const float*> b_rows;
    for (int64_t r = t.k; r-- > 0;) b_rows.push_back(b.data() + r * detail::kTileCols);  // rows reversed
    const std::vector<float> bias = random_floats(rng, detail::kTileRows);
    t.a = a.data();
    if (rng.chance(0.5)) t.b_rows = b_rows.data(); else t.b = b.data();
    t.c_col_stride = rng.chance(0.7) ? 1 : 3;
    t.c_row_stride = t.c_col_stride * detail::kTileCols + rng.uniform_int(0, 5);
    t.accumulate = rng.chance(0.3);
    t.bias = rng.chance(0.5) ? bias.data() : nullptr;
    t.relu = rng.chance(0.5);
    const std::vector<float> c0 = random_floats(rng, detail::kTileRows * t.c_row_stride);
    std::vector<float> want = c0;
    t.c = want.data();
    detail::gemm_tile_portable(t);
    for (const auto& [name, fn] : builds) {
      std::vector<float> got = c0;
      t.c = got.data();
      fn(t);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << name << ", case " << c << ": rows " << t.rows << " cols " << t.cols << " k " << t.k;
    }
  }
}

// AVX-512's tile over 2-4 panels side by side, the last full or partial (every cols from one panel
// and a column to four), against the portable tile panel by panel: bitwise, packed and indirect B,
// accumulating or not, bias, relu.
TEST(RegisterTile, SeveralPanelsGiveThePortableBitsPanelByPanel) {
  if (!convjit::jit::host_has(convjit::jit::Isa::Avx512))
    GTEST_SKIP() << "this host lacks AVX-512: the only build with several panels";
  Rng rng(0x9A4E);
  for (int c = 0; c < 300; ++c) {
    const int panels = int(rng.uniform_int(2, 4));
    detail::GemmTile t{};
    t.k = rng.uniform_int(1, 70);
    t.rows = int(rng.uniform_int(1, detail::kTileRows));
    t.cols = int(rng.uniform_int((panels - 1) * detail::kTileCols + 1, panels * detail::kTileCols));
    t.a_row_stride = t.k + rng.uniform_int(0, 3);
    t.a_step = 1;
    const int64_t panel_stride = t.k * detail::kTileCols + rng.uniform_int(0, 2) * detail::kTileCols;
    const std::vector<float> a = random_floats(rng, t.rows * t.a_row_stride);
    const std::vector<float> b = random_floats(rng, panels * panel_stride);
    std::vector<const float*> b_rows;  // panel q's rows at b_rows + q * panel_stride, reversed within it
    for (int q = 0; q < panels; ++q) {
      for (int64_t r = panel_stride; r-- > 0;)
        b_rows.push_back(b.data() + q * panel_stride + (r % t.k) * detail::kTileCols);
    }
    const bool indirect = rng.chance(0.5);
    const std::vector<float> bias = random_floats(rng, detail::kTileRows);
    t.a = a.data();
    t.c_col_stride = 1;
    t.c_row_stride = panels * detail::kTileCols + rng.uniform_int(0, 5);
    t.accumulate = rng.chance(0.3);
    t.bias = rng.chance(0.5) ? bias.data() : nullptr;
    t.relu = rng.chance(0.5);
    const std::vector<float> c0 = random_floats(rng, detail::kTileRows * t.c_row_stride);
    std::vector<float> want = c0, got = c0;
    for (int q = 0; q < panels; ++q) {
      detail::GemmTile one = t;
      if (indirect)
        one.b_rows = b_rows.data() + q * panel_stride;
      else
        one.b = b.data() + q * panel_stride;
      one.cols = std::min(detail::kTileCols, t.cols - q * detail::kTileCols);
      one.c = want.data() + q * detail::kTileCols;
      detail::gemm_tile_portable(one);
    }
    if (indirect)
      t.b_rows = b_rows.data();
    else
      t.b = b.data();
    t.c = got.data();
    detail::avx512::gemm_tile_panels(t, panels, panel_stride);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << "case " << c << ": panels " << panels << " rows " << t.rows << " cols " << t.cols << " k " << t.k;
  }
}

// gemm_blocks, the tile over a whole block of C (its choice of 1-4 panels at a time), against the
// portable tile panel by panel: every width from one column to five panels, row counts past one
// tile of rows, A read with a step (backward filter's dy), packed B, accumulating or not.
TEST(RegisterTile, BlocksOfEveryWidthGiveThePortableBits) {
  Rng rng(0x4B10);
  for (int64_t n = 1; n <= 5 * detail::kTileCols; ++n) {
    detail::GemmTile t{};
    const int64_t m = rng.uniform_int(1, 2 * detail::kTileRows + 1);
    const int64_t panels = (n + detail::kTileCols - 1) / detail::kTileCols;
    t.k = rng.uniform_int(1, 40);
    t.a_step = rng.uniform_int(1, 3);
    t.a_row_stride = t.k * t.a_step + rng.uniform_int(0, 3);
    const int64_t panel_stride = t.k * detail::kTileCols;
    const std::vector<float> a = random_floats(rng, m * t.a_row_stride);
    const std::vector<float> b = random_floats(rng, panels * panel_stride);
    t.a = a.data();
    t.b = b.data();
    t.c_col_stride = 1;
    t.c_row_stride = n + rng.uniform_int(0, 5);
    t.accumulate = rng.chance(0.5);
    const std::vector<float> c0 = random_floats(rng, m * t.c_row_stride);
    std::vector<float> want = c0, got = c0;
    for (int64_t i = 0; i < m; i += detail::kTileRows) {
      for (int64_t q = 0; q < panels; ++q) {
        detail::GemmTile one = t;
        one.a = a.data() + i * t.a_row_stride;
        one.b = b.data() + q * panel_stride;
        one.c = want.data() + i * t.c_row_stride + q * detail::kTileCols;
        one.rows = int(std::min<int64_t>(detail::kTileRows, m - i));
        one.cols = int(std::min<int64_t>(detail::kTileCols, n - q * detail::kTileCols));
        detail::gemm_tile_portable(one);
      }
    }
    t.c = got.data();
    detail::gemm_blocks(t, m, n, panel_stride);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << "m " << m << " n " << n << " k " << t.k << " a_step " << t.a_step;
  }
}

// Tier 0's whole-call rows (depthwise), each called directly on depthwise problems of both
// layouts: channel counts around the vector widths (tails of 8 and 16 lanes), padding, stride,
// dilation, both modes, 1D to 3D; against the oracle, and bitwise against every other row (of
// another ISA) that takes the same problem, on 1 and 2 threads.
class WholeCallKernels : public ::testing::TestWithParam<size_t> {};

std::vector<ConvDims> depthwise_shapes() {
  Rng rng(0xD3E7);
  std::vector<ConvDims> shapes;
  for (int i = 0; i < 96; ++i) {
    const int32_t rank = 1 + i % 3;
    const Layout layout = i / 3 % 2 ? Layout::NHWC : Layout::NCHW;
    const int64_t channels = std::vector<int64_t>{1, 7, 8, 9, 15, 16, 17, 31, 33, 40, 64, 70}[size_t(rng.uniform_int(0, 11))];
    Extent in{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
    for (int d = 3 - rank; d < 3; ++d) {
      kernel[size_t(d)] = rng.uniform_int(1, rank == 3 ? 3 : 5);
      stride[size_t(d)] = rng.uniform_int(1, 2);
      dilation[size_t(d)] = rng.uniform_int(1, 2);
      pad[size_t(d)] = rng.uniform_int(0, 2);
      in[size_t(d)] = (kernel[size_t(d)] - 1) * dilation[size_t(d)] + rng.uniform_int(1, rank == 1 ? 40 : 12);
    }
    const Mode mode = i / 6 % 2 ? Mode::Convolution : Mode::CrossCorrelation;
    shapes.push_back(conv(rank, layout, rng.uniform_int(1, 2), channels, channels, channels, in, kernel, stride, pad,
                          dilation, mode));
  }
  return shapes;
}

TEST_P(WholeCallKernels, MatchTheOracleAndEveryOtherIsasRowBitwise) {
  const detail::GenericForwardKernel& kernel = detail::generic_forward_kernels()[GetParam()];
  if (!convjit::jit::host_has(kernel.isa)) GTEST_SKIP() << kernel.name << ": this host lacks its ISA";
  int tested = 0, compared = 0;
  const std::vector<ConvDims> shapes = depthwise_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Problem p(shapes[i], case_seed(0xD3E7, i));
    detail::ConvGeometry g;
    const convjit_conv_params params = p.dims.to_c();
    ASSERT_TRUE(detail::make_conv_geometry(params, &g).ok()) << describe(p.dims);
    if (!kernel.takes(g)) continue;
    ++tested;
    auto run = [&](const detail::GenericForwardKernel& k, int threads) {
      std::vector<float> y = nan_buffer(p.outputs());
      k.whole_call(g, threads, p.x.data(), p.w.data(), p.bias_ptr(), p.activation == Activation::Relu, y.data(), nullptr);
      return y;
    };
    const std::vector<float> y = run(kernel, 1);
    ASSERT_TRUE(p.matches_reference(y, kernel.name)) << "case " << i;
    ASSERT_TRUE(p.same_bits(run(kernel, 2), y, std::string(kernel.name) + ", 2 threads vs 1")) << "case " << i;
    for (const detail::GenericForwardKernel& other : detail::generic_forward_kernels()) {
      if (&other == &kernel || !other.whole_call || !convjit::jit::host_has(other.isa) || !other.takes(g)) continue;
      ++compared;
      ASSERT_TRUE(p.same_bits(run(other, 1), y, std::string(other.name) + " vs " + kernel.name)) << "case " << i;
    }
  }
  EXPECT_GE(tested, 20) << kernel.name << " took too few of the shapes to be tested";
  if (convjit::jit::host_has(convjit::jit::Isa::Avx512) && std::string(kernel.name).find("nhwc") != std::string::npos) {
    EXPECT_GE(compared, tested) << kernel.name << ": on a host with both ISAs every problem has a row of each";
  }
}

// The runtime's ISA cap (Policy::max_isa) holds for tier 0's rows too; without it an AVX-512 host
// runs NHWC depthwise on the AVX-512 row.
TEST(GenericKernelChoice, TheIsaCapHoldsForTier0) {
  int nhwc = 0;
  for (const ConvDims& d : depthwise_shapes()) {
    detail::ConvGeometry g;
    const convjit_conv_params params = d.to_c();
    ASSERT_TRUE(detail::make_conv_geometry(params, &g).ok());
    EXPECT_LE(detail::generic_forward_kernel(g, detail::RowKind::Any, convjit::jit::Isa::Avx2Fma).isa,
              convjit::jit::Isa::Avx2Fma)
        << describe(d);
    if (d.layout == Layout::NHWC && convjit::jit::host_has(convjit::jit::Isa::Avx512)) {
      ++nhwc;
      EXPECT_STREQ(detail::generic_forward_kernel(g).name, "conv_fwd_f32_depthwise_nhwc__avx512") << describe(d);
    }
  }
  if (!convjit::jit::host_has(convjit::jit::Isa::Avx512)) GTEST_SKIP() << "this host lacks AVX-512: only the cap was checked";
  EXPECT_GE(nhwc, 20);
}

INSTANTIATE_TEST_SUITE_P(Rows, WholeCallKernels, ::testing::ValuesIn(rows_of_kind(true)),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(detail::generic_forward_kernels()[info.param].name);
                         });

// Each backend's compiled row kernels, called directly on row segments and their views.
std::unique_ptr<convjit::jit::Backend> backend_named(const std::string& name, std::string* why_not) {
  std::unique_ptr<convjit::jit::Backend> backend;
#if defined(CONVJIT_HAVE_XBYAK)
  if (name == "xbyak") backend = convjit::jit::make_xbyak_backend();
#endif
#if defined(CONVJIT_HAVE_LLVM)
  if (name == "llvm") backend = convjit::jit::make_llvm_backend();
#endif
  if (!backend) {
    *why_not = "built without " + name;
    return nullptr;
  }
  *why_not = backend->unavailable_reason();
  return why_not->empty() ? std::move(backend) : nullptr;
}

// A backend and the ISA its keys ask for: each ISA the backend emits is tested on its own.
struct CompiledKernels {
  std::string backend;
  convjit::jit::Isa isa;
  std::string name() const { return backend + "_" + convjit::jit::isa_name(isa); }
};

class CompiledTileKernels : public ::testing::TestWithParam<CompiledKernels> {};

TEST_P(CompiledTileKernels, EverySegmentMatchesTheOracleAndWritesOnlyItsOutputs) {
  std::string why_not;
  std::unique_ptr<convjit::jit::Backend> backend = backend_named(GetParam().backend, &why_not);
  if (!backend) GTEST_SKIP() << GetParam().backend << ": " << why_not;
  if (GetParam().isa == convjit::jit::Isa::Avx512 && !convjit::jit::host_has(convjit::jit::Isa::Avx512)) {
    GTEST_SKIP() << "this host lacks AVX-512 (F, BW, DQ, VL): its kernels cannot run here";
  }
  AlignedFloats scratch = aligned_floats(int64_t(detail::kScratchFloats));
  const std::vector<ConvDims> shapes = tester_shapes();
  int compiled = 0;
  int64_t segments = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    TileBench bench(shapes[i], case_seed(0xC0DE, i));
    ASSERT_TRUE(bench.valid()) << describe(shapes[i]);
    const detail::ConvGeometry& g = bench.g();
    const convjit::jit::SpecKey key =
        convjit::jit::make_spec_key(g, shapes[i].rank, true, GetParam().isa, false);
    convjit::jit::CompiledKernel out;
    std::string error;
    if (!backend->compile(key, &out, &error)) continue;  // a key this backend has no plan for
    ++compiled;
    const convjit_conv_kernel& kernel = out.kernel;
    ASSERT_TRUE(kernel.row_kernel) << out.name;
    const int64_t max_oc = kernel.packs_weights ? kernel.oc_block : 64;
    AlignedFloats packed = aligned_floats(std::max<int64_t>(1, g.reduction * max_oc));
    const std::vector<TileSpot> spots = row_spots(g, kernel.min_row_pixels, max_oc);
    segments += int64_t(spots.size());
    for (const TileSpot& s : spots) {
      convjit_conv_tile t = bench.tile_at(s, scratch.get());
      if (!detail::make_view(g, detail::InputBand{}, t.x, t.od, t.oh, t.ow, t.pixel_count, t.scratch,
                             t.scratch_floats, &t)) {
        continue;  // its padded copy does not fit the scratch: the driver gives it to tier 0
      }
      if (kernel.packs_weights) {
        detail::pack_weights_k_major(g, t.w, t.oc_count, kernel.oc_block, packed.get());
        t.packed_weights = packed.get();
      }
      kernel.compute(&g, &t);
      ASSERT_TRUE(bench.check_and_reset(s, out.name)) << "case " << i;
    }
  }
  EXPECT_GE(compiled, 40) << GetParam().name() << " compiled too few of the shapes' keys to be tested";
  EXPECT_GE(segments, 80) << GetParam().name() << ": too few rows long enough for its kernels";
}

// A compiled kernel that compacts grids (AVX-512's NCHW rows), called directly on flattened
// segments of whole rows (the driver's band or x, flattened) with a grid map made here from the
// ABI's definition: each real output the oracle's, nothing else written (junk columns included),
// for row ranges at the plane's top, middle and bottom and channel counts around its blocks.
TEST(CompactedGrids, EverySegmentWritesOnlyItsRealOutputs) {
  std::string why_not;
  std::unique_ptr<convjit::jit::Backend> backend = backend_named("xbyak", &why_not);
  if (!backend) GTEST_SKIP() << "xbyak: " << why_not;
  if (!convjit::jit::host_has(convjit::jit::Isa::Avx512)) {
    GTEST_SKIP() << "this host lacks AVX-512 (F, BW, DQ, VL): the only kernels that compact grids";
  }
  constexpr Layout C = Layout::NCHW;
  const Extent k3 = {3, 3, 1}, s1 = {1, 1, 1};
  const std::vector<ConvDims> shapes = {
      conv(2, C, 2, 1, 2, 1, {28, 28, 1}, k3),                                        // x itself
      conv(2, C, 2, 3, 3, 1, {22, 20, 1}, k3, s1, {2, 2, 0}, s1, Mode::Convolution),  // a band, flipped
      conv(2, C, 1, 2, 7, 1, {9, 13, 1}, k3, s1, {1, 1, 0}),                          // 7 channels: a block and a tail
      conv(2, C, 1, 3, 5, 1, {12, 11, 1}, {3, 5, 1}, s1, {1, 2, 0}, {1, 2, 1}),       // dilated W: much junk
      conv(2, C, 1, 4, 1, 1, {17, 40, 1}, {2, 3, 1}, s1, {0, 1, 0}),                  // rows of 40
  };
  AlignedFloats scratch = aligned_floats(int64_t(detail::kScratchFloats));
  int64_t segments = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    TileBench bench(shapes[i], case_seed(0xC0A1, i));
    ASSERT_TRUE(bench.valid()) << describe(shapes[i]);
    const detail::ConvGeometry& g = bench.g();
    convjit::jit::CompiledKernel out;
    std::string error;
    ASSERT_TRUE(backend->compile(convjit::jit::make_spec_key(g, shapes[i].rank, true, convjit::jit::Isa::Avx512, false),
                                 &out, &error))
        << error;
    const convjit_conv_kernel& kernel = out.kernel;
    ASSERT_TRUE(kernel.compacts_grid) << out.name;
    const int64_t width = g.out[2], rows_n = g.out[1];
    for (auto [first_row, rows] : {std::pair<int64_t, int64_t>{0, rows_n}, {1, 3}, {rows_n - 2, 2}}) {
      for (int64_t oc_count : {g.oc_per_group, std::min<int64_t>(g.oc_per_group, 5), int64_t(1)}) {
        const TileSpot s{g.batch - 1, 0, 0, first_row * width, rows * width, g.oc_per_group - oc_count, oc_count};
        convjit_conv_tile t = bench.tile_at(s, scratch.get());
        const detail::InputBand band = detail::make_band(g, t, true);
        int64_t pitch = 0;
        ASSERT_TRUE(detail::flat_view(g, band, t, &t, &pitch)) << describe(shapes[i]);
        t.ow = 0;
        t.pixel_count = (rows - 1) * pitch + width;
        if (t.pixel_count < kernel.min_row_pixels) continue;
        std::vector<uint8_t> real(size_t(t.pixel_count));
        std::vector<int32_t> outputs(size_t(t.pixel_count));
        for (int64_t p = 0; p < t.pixel_count; ++p) {
          const int64_t row = p / pitch, column = p % pitch;
          real[size_t(p)] = column < width ? 0x80 : 0;
          outputs[size_t(p)] = int32_t(row * width + std::min(column, width));
        }
        t.grid_real = real.data();
        t.grid_outputs = outputs.data();
        t.scratch += band.floats;
        t.scratch_floats -= band.floats;
        kernel.compute(&g, &t);
        ASSERT_TRUE(bench.check_and_reset(s, out.name))
            << "case " << i << ", rows " << first_row << "+" << rows << ", " << oc_count << " channels";
        ++segments;
      }
    }
  }
  EXPECT_GE(segments, 30) << "too few flattened segments long enough for the kernels";
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledTileKernels,
                         ::testing::Values(CompiledKernels{"xbyak", convjit::jit::Isa::Avx2Fma},
                                           CompiledKernels{"xbyak", convjit::jit::Isa::Avx512},
                                           CompiledKernels{"llvm", convjit::jit::Isa::Avx2Fma}),
                         [](const ::testing::TestParamInfo<CompiledKernels>& info) { return info.param.name(); });

}  // namespace
}  // namespace convjit::testing::jit
