// lib/kernels/pool_nhwc and pool_nchw: tier 0's max and mean pooling kernels, per ISA the host
// has, called directly on random problems (ranks 1-3, channel counts around the vector and block sizes,
// padding, stride, dilation, exclude_padding) with NaN (whole windows of it too), -inf, ties and signed zeros in x.
// Each must give the bits of the pooling contract, computed here in float in its order (taps in row-major order from
// -inf or 0; gradients added to dx in output order, max's to the first tap equal to y), and be within the oracle's
// tolerance; the ISAs give the same bits.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "geometry.hpp"
#include "isa.hpp"
#include "ops_internal.hpp"
#include "pool_nchw.hpp"
#include "pool_nchw_whole_rows.hpp"
#include "pool_nhwc.hpp"
#include "pool_window.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

using detail::PoolGeometry;
using detail::PoolOp;

struct IsaKernels {
  const char* name;
  jit::Isa isa;
  void (*forward)(const PoolGeometry&, PoolOp, const float*, float*, int64_t, int64_t, int64_t,
                  const detail::OutputBox*);
  void (*backward)(const PoolGeometry&, PoolOp, const float*, const float*, const float*, float*, int64_t, int64_t,
                   int64_t, const detail::CompiledPoolRows*);
};

const IsaKernels kIsas[] = {
    {"avx2", jit::Isa::Avx2Fma, detail::avx2::pool_nhwc_forward, detail::avx2::pool_nhwc_backward},
    {"avx512", jit::Isa::Avx512, detail::avx512::pool_nhwc_forward, detail::avx512::pool_nhwc_backward},
};

// Calls tap(x index, y index) for every output pixel and real tap, in output order then row-major
// tap order, for one channel (either layout); pixel(y index, real taps) after each pixel's taps.
void walk(const PoolDims& d, int64_t n, int64_t c, const std::function<void(int64_t, int64_t)>& tap,
          const std::function<void(int64_t, int64_t)>& pixel) {
  const Extent out = ref::pool_output_size(d);
  auto lift = [&](const Extent& e, int64_t fill) {
    Extent r{fill, fill, fill};
    for (int i = 0; i < d.rank; ++i) r[size_t(3 - d.rank + i)] = e[size_t(i)];
    return r;
  };
  const Extent in = lift(d.in_size, 1), o = lift(out, 1), k = lift(d.window, 1), dl = lift(d.dilation, 1),
               pb = lift(d.pad_begin, 0);
  Extent st = lift(d.stride, 1);
  for (int i = 0; i < 3; ++i) {
    if (st[size_t(i)] == 0) st[size_t(i)] = k[size_t(i)];
  }
  for (int64_t a = 0; a < o[0]; ++a)
    for (int64_t b = 0; b < o[1]; ++b)
      for (int64_t e = 0; e < o[2]; ++e) {
        const bool nhwc = d.layout == Layout::NHWC;
        const int64_t y_pixel = (a * o[1] + b) * o[2] + e, y_pixels = o[0] * o[1] * o[2];
        const int64_t yi = nhwc ? (n * y_pixels + y_pixel) * d.channels + c : (n * d.channels + c) * y_pixels + y_pixel;
        int64_t real = 0;
        for (int64_t i = 0; i < k[0]; ++i)
          for (int64_t j = 0; j < k[1]; ++j)
            for (int64_t l = 0; l < k[2]; ++l) {
              const int64_t p = a * st[0] - pb[0] + i * dl[0], q = b * st[1] - pb[1] + j * dl[1],
                            r = e * st[2] - pb[2] + l * dl[2];
              if (p < 0 || p >= in[0] || q < 0 || q >= in[1] || r < 0 || r >= in[2]) continue;
              ++real;
              const int64_t x_pixel = (p * in[1] + q) * in[2] + r, x_pixels = in[0] * in[1] * in[2];
              tap(nhwc ? (n * x_pixels + x_pixel) * d.channels + c : (n * d.channels + c) * x_pixels + x_pixel, yi);
            }
        pixel(yi, real);
      }
}

// The contract's bits, in float and in its order.
std::vector<float> contract_forward(const PoolDims& d, PoolOp op, const std::vector<float>& x) {
  std::vector<float> y(size_t(ref::pool_output_elements(d)));
  int64_t window = 1;
  for (int i = 0; i < d.rank; ++i) window *= d.window[size_t(i)];
  for (int64_t n = 0; n < d.batch; ++n)
    for (int64_t c = 0; c < d.channels; ++c) {
      float acc = op == PoolOp::Max ? -INFINITY : 0.0f;
      bool seen = false;
      walk(
          d, n, c,
          [&](int64_t xi, int64_t) {
            if (op == PoolOp::Max) {
              acc = x[size_t(xi)] > acc ? x[size_t(xi)] : acc;
              seen |= !std::isnan(x[size_t(xi)]);
            } else {
              acc += x[size_t(xi)];
            }
          },
          [&](int64_t yi, int64_t real) {
            const float divisor = float(d.exclude_padding ? real : window);
            y[size_t(yi)] = op == PoolOp::Max ? (real == 0 ? -FLT_MAX
                                                 : seen    ? acc
                                                           : NAN)
                                              : (real == 0 ? 0.0f : acc / divisor);
            acc = op == PoolOp::Max ? -INFINITY : 0.0f;
            seen = false;
          });
    }
  return y;
}

std::vector<float> contract_backward(const PoolDims& d, PoolOp op, const std::vector<float>& x,
                                     const std::vector<float>& y, const std::vector<float>& dy) {
  std::vector<float> dx(x.size(), 0.0f);
  int64_t window = 1;
  for (int i = 0; i < d.rank; ++i) window *= d.window[size_t(i)];
  for (int64_t n = 0; n < d.batch; ++n)
    for (int64_t c = 0; c < d.channels; ++c) {
      // Per pixel: its taps first (collected), then the pixel's gradient is routed or shared.
      std::vector<int64_t> taps;
      walk(
          d, n, c, [&](int64_t xi, int64_t) { taps.push_back(xi); },
          [&](int64_t yi, int64_t real) {
            if (op == PoolOp::Max) {
              for (int64_t xi : taps) {
                if (x[size_t(xi)] == y[size_t(yi)]) {
                  dx[size_t(xi)] += dy[size_t(yi)];
                  break;
                }
              }
            } else {
              const int64_t divisor = d.exclude_padding ? real : window;
              const float share = divisor == 0 ? 0.0f : dy[size_t(yi)] / float(divisor);
              for (int64_t xi : taps) dx[size_t(xi)] += share;
            }
            taps.clear();
          });
    }
  return dx;
}

// Values with NaN, -inf and signed zeros; `nan_heavy` makes half of them NaN, so whole windows
// are NaN (max: NaN) or NaN and -inf (max: -inf) too.
std::vector<float> awkward_values(Rng& rng, int64_t n, bool ties, bool nan_heavy) {
  std::vector<float> v(static_cast<size_t>(n));
  const double nan_share = nan_heavy ? 0.5 : 0.08;
  for (float& f : v) {
    const double u = rng.uniform(0, 1);
    f = ties ? float(rng.uniform_int(-2, 2)) : float(rng.uniform(-1, 1));
    if (u < nan_share) {
      f = NAN;
    } else if (u < nan_share + 0.06) {
      f = u < nan_share + 0.03 ? -0.0f : 0.0f;
    } else if (u < nan_share + 0.1) {
      f = -INFINITY;
    }
  }
  return v;
}

TEST(PoolNhwcKernels, EveryIsaGivesTheContractsBits) {
  int ran = 0;
  Rng rng(0x9001);
  for (int i = 0; i < 90; ++i) {
    ShapeLimits limits;
    PoolDims d = random_pool(rng, int32_t(1 + i % 3), Layout::NHWC, limits);
    d.channels = std::vector<int64_t>{1, 7, 16, 17, 33, 64, 65, 70}[size_t(i % 8)];
    d.exclude_padding = i % 5 == 0;
    detail::PoolGeometry g;
    ASSERT_TRUE(detail::make_pool_geometry(d.to_c(), &g).ok()) << describe(d);
    const std::vector<float> x = awkward_values(rng, ref::pool_input_elements(d), i % 2 == 1, i % 3 == 2);
    const std::vector<float> dy = random_floats(rng, ref::pool_output_elements(d));
    for (PoolOp op : {PoolOp::Max, PoolOp::Mean}) {
      const std::string context = std::string(op == PoolOp::Max ? "max " : "mean ") + describe(d);
      const std::vector<float> y_want = contract_forward(d, op, x);
      const std::vector<float> dx_want = contract_backward(d, op, x, y_want, dy);
      for (const IsaKernels& k : kIsas) {
        if (!jit::host_has(k.isa)) continue;
        SCOPED_TRACE(std::string(k.name) + " " + context);
        std::vector<float> y = nan_buffer(int64_t(y_want.size())), dx = nan_buffer(int64_t(x.size()));
        // Every other problem leaves out the outputs with wholly real windows (a compiled kernel's):
        // those stay as they were.
        const detail::OutputBox interior = detail::interior_outputs(g);
        const detail::OutputBox* skip = i % 2 == 0 ? &interior : nullptr;
        std::vector<float> y_expected = y_want;
        if (skip) {
          for (int64_t n = 0; n < d.batch; ++n) {
            for (int64_t od = interior.lo[0]; od < interior.hi[0]; ++od) {
              for (int64_t oh = interior.lo[1]; oh < interior.hi[1]; ++oh) {
                for (int64_t ow = interior.lo[2]; ow < interior.hi[2]; ++ow) {
                  const int64_t at = n * g.y.batch + od * g.y.spatial[0] + oh * g.y.spatial[1] + ow * g.y.spatial[2];
                  std::copy_n(y.begin() + at, d.channels, y_expected.begin() + at);
                }
              }
            }
          }
        }
        for (int64_t n = 0; n < d.batch; ++n) {
          for (int64_t c0 = 0; c0 < d.channels; c0 += 64) {  // the driver's tasks
            const int64_t c1 = std::min<int64_t>(d.channels, c0 + 64);
            k.forward(g, op, x.data(), y.data(), n, c0, c1, skip);
            k.backward(g, op, x.data(), y_want.data(), dy.data(), dx.data(), n, c0, c1, nullptr);
          }
        }
        EXPECT_TRUE(bitwise_equal("y", y, y_expected, pool_output_shape(d), context));
        EXPECT_TRUE(bitwise_equal("dx", dx, dx_want, pool_input_shape(d), context));
        ++ran;
      }
      if (op == PoolOp::Mean) {  // and the contract is the oracle's, within tolerance
        int64_t taps = 1;
        for (int j = 0; j < d.rank; ++j) taps *= d.window[size_t(j)];
        std::vector<float> finite = x;
        for (float& v : finite) v = std::isnan(v) ? 0.5f : v;
        EXPECT_TRUE(all_close("contract y", contract_forward(d, op, finite).data(),
                              ref::meanpool_forward(d, finite.data()), pool_output_shape(d), taps, context));
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: no NHWC pooling kernel to test";
  if (!jit::host_has(jit::Isa::Avx512)) std::printf("note: this host lacks AVX-512; its kernels were not run\n");
}

struct NchwForward {
  const char* name;
  jit::Isa isa;
  int64_t lanes;
  bool (*supported)(const PoolGeometry&, PoolOp);
  void (*run)(const PoolGeometry&, PoolOp, const detail::NchwPoolWalk&, const detail::NchwPoolRow*, int64_t,
              const float*, float*, int64_t, int64_t, float*);
  void (*backward)(const PoolGeometry&, PoolOp, const detail::NchwPoolWalk&, const detail::NchwPoolRow*, int64_t,
                   const float*, const float*, const float*, float*, int64_t, int64_t, float*);
};

const NchwForward kNchwIsas[] = {
    {"avx2", jit::Isa::Avx2Fma, detail::avx2::kPoolNchwLanes, detail::avx2::pool_nchw_supported,
     detail::avx2::pool_nchw_forward, detail::avx2::pool_nchw_backward},
    {"avx512", jit::Isa::Avx512, detail::avx512::kPoolNchwLanes, detail::avx512::pool_nchw_supported,
     detail::avx512::pool_nchw_forward, detail::avx512::pool_nchw_backward},
};

// Planes [first, ...) of got bitwise want, the planes before it untouched (NaN).
void expect_planes(const std::vector<float>& got, const std::vector<float>& want, int64_t plane_size, int64_t first) {
  for (size_t at = 0; at < want.size(); ++at) {
    if (int64_t(at) / plane_size >= first) {
      EXPECT_EQ(std::memcmp(&got[at], &want[at], sizeof(float)), 0)
          << "element " << at << ": " << got[at] << " vs " << want[at];
    } else {
      EXPECT_TRUE(std::isnan(got[at])) << "element " << at << " outside the planes was written";
    }
  }
}

// NCHW, both directions: the driver (with the widest kernel the host has) over whole problems, and
// each ISA's kernel over a range of planes (read in place or as padded rows, edge vectors, tails,
// rows wholly in the padding, overlapping windows backward; the planes outside the range
// untouched).
TEST(PoolNchwKernels, EveryIsaGivesTheContractsBitsBothWays) {
  int ran = 0, in_place = 0, padded = 0, tiled_uncovered = 0;
  int ran_on[std::size(kNchwIsas)] = {}, tiled_on[std::size(kNchwIsas)] = {};  // per ISA
  Rng rng(0x9002);
  for (int i = 0; i < 120; ++i) {
    PoolDims d = random_pool(rng, int32_t(1 + i % 3), Layout::NCHW);
    d.in_size[size_t(d.rank - 1)] += 40 * (i % 4);  // short rows (edge vectors only) and long ones
    d.stride[size_t(d.rank - 1)] = 1 + i % 2;
    d.exclude_padding = i % 5 == 0;
    if (i % 4 == 1) {  // 2-tap windows tiling x along W (and tiling along the other dims): dx written once
      const int variant = i / 12;  // 0..9; the rank is i % 12's
      for (int j = 0; j < d.rank; ++j) {
        d.window[size_t(j)] = d.stride[size_t(j)] =
            j + 1 == d.rank ? 2 : std::min<int64_t>(d.in_size[size_t(j)], 1 + (variant + j) % 3);
        d.dilation[size_t(j)] = 1;
        d.pad_begin[size_t(j)] = d.pad_end[size_t(j)] = 0;
        // Every other such problem leaves input rows no window covers (backward zeroes them).
        const int64_t stride = d.stride[size_t(j)];
        if (j + 1 < d.rank && variant % 2 == 0 && stride > 1 && d.in_size[size_t(j)] % stride == 0) {
          d.in_size[size_t(j)] += 1;
        }
      }
      // Rows of whole vectors of outputs on either ISA are read in place (write-once needs that):
      // 1-3 AVX-512 vectors (1-6 AVX2 ones), some with a last column no window covers; every
      // fourth keeps its random width.
      if (variant % 4 != 3) d.in_size[size_t(d.rank - 1)] = 32 * (1 + variant % 3) + (variant / 4) % 2;
    }
    detail::PoolGeometry g;
    ASSERT_TRUE(detail::make_pool_geometry(d.to_c(), &g).ok()) << describe(d);
    const std::vector<float> x = awkward_values(rng, ref::pool_input_elements(d), i % 2 == 1, i % 3 == 2);
    for (PoolOp op : {PoolOp::Max, PoolOp::Mean}) {
      const std::string context = std::string(op == PoolOp::Max ? "max " : "mean ") + describe(d);
      const std::vector<float> want = contract_forward(d, op, x);
      std::vector<float> y = nan_buffer(int64_t(want.size()));
      detail::run_pool_forward(op, g, 1, 0.0f, x.data(), y.data());
      EXPECT_TRUE(bitwise_equal("y (driver)", y, want, pool_output_shape(d), context));
      const std::vector<float> dy = awkward_values(rng, int64_t(want.size()), false, i % 3 == 1);
      const std::vector<float> dx_want = contract_backward(d, op, x, want, dy);
      std::vector<float> dx_driver = nan_buffer(int64_t(x.size()));
      detail::run_pool_backward(op, g, 1, 0.0f, x.data(), want.data(), dy.data(), dx_driver.data());
      EXPECT_TRUE(bitwise_equal("dx (driver)", dx_driver, dx_want, pool_input_shape(d), context));
      const int64_t planes = g.batch * g.channels, plane_size = int64_t(want.size()) / planes;
      const int64_t first = planes > 1 ? 1 : 0, end = planes;  // plane 0 left alone where there are others
      for (size_t isa = 0; isa < std::size(kNchwIsas); ++isa) {
        const NchwForward& k = kNchwIsas[isa];
        if (!jit::host_has(k.isa) || !k.supported(g, op)) continue;
        detail::NchwPoolWalk walk;
        ASSERT_TRUE(detail::make_nchw_pool_walk(g, k.lanes, &walk)) << context;  // W stride 1 or 2, small
        SCOPED_TRACE(std::string(k.name) + " " + context);
        std::vector<float> got = nan_buffer(int64_t(want.size()));
        std::vector<float> scratch(size_t(2 * walk.padded_floats));
        const std::vector<detail::NchwPoolRow> rows = detail::nchw_pool_rows(g);
        k.run(g, op, walk, rows.data(), int64_t(rows.size()), x.data(), got.data(), first, end, scratch.data());
        expect_planes(got, want, plane_size, first);
        if (op == PoolOp::Max && g.window[0] * g.window[1] * g.window[2] > detail::kPoolNchwMaxRoutedTaps) continue;
        std::vector<float> dx = nan_buffer(int64_t(x.size()));
        k.backward(g, op, walk, rows.data(), int64_t(rows.size()), x.data(), want.data(), dy.data(), dx.data(), first,
                   end, scratch.data());
        expect_planes(dx, dx_want, int64_t(x.size()) / planes, first);
        if (detail::nchw_pool_windows_tile_in_place(g, walk)) {
          ++tiled_on[isa];
          tiled_uncovered += g.out[0] * g.stride[0] < g.in[0] || g.out[1] * g.stride[1] < g.in[1];
        }
        ++(walk.padded_floats > 0 ? padded : in_place);
        ++ran_on[isa];
        ++ran;
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: only the portable path was compared";
  EXPECT_GT(padded, 0) << "no problem read padded rows";
  EXPECT_GT(in_place, 0) << "no problem read its planes in place";
  for (size_t isa = 0; isa < std::size(kNchwIsas); ++isa) {
    if (ran_on[isa] > 0) {
      EXPECT_GT(tiled_on[isa], 0) << kNchwIsas[isa].name
                                  << ": no problem's windows tiled x (backward's write-once path)";
    }
  }
  EXPECT_GT(tiled_uncovered, 0) << "no tiling problem left input rows outside every window";
}

struct NchwWholeRows {
  const char* name;
  jit::Isa isa;
  bool (*supported)(const PoolGeometry&, PoolOp);  // backward's: forward takes more
  void (*forward)(const PoolGeometry&, PoolOp, const float*, float*, int64_t, int64_t);
  void (*backward)(const PoolGeometry&, const float*, float*, int64_t, int64_t);
};

const NchwWholeRows kWholeRowsIsas[] = {
    {"avx2", jit::Isa::Avx2Fma, detail::avx2::pool_nchw_whole_rows_backward_supported,
     detail::avx2::pool_nchw_whole_rows_forward, detail::avx2::pool_nchw_mean_backward_whole_rows},
    {"avx512", jit::Isa::Avx512, detail::avx512::pool_nchw_whole_rows_backward_supported,
     detail::avx512::pool_nchw_whole_rows_forward, detail::avx512::pool_nchw_mean_backward_whole_rows},
};

// NCHW pooling over windows of whole input rows (global pooling, and pooling along D and H only:
// padding and dilation there, uncovered rows, exclude_padding, NaN and infinities; backward
// where the windows never overlap): each ISA's kernels over a range of planes, and the driver,
// give the contract's bits, max and mean forward, mean backward.
TEST(PoolNchwKernels, WholeRowsKernelsGiveTheContractsBitsBothWays) {
  int ran = 0, covered = 0, gaps = 0, overlapping = 0;
  Rng rng(0x9103);
  for (int i = 0; i < 80; ++i) {
    PoolDims d = random_pool(rng, int32_t(1 + i % 3), Layout::NCHW);
    const size_t w = size_t(d.rank - 1);
    d.in_size[w] += 20 * (i % 3);  // rows of one vector or several
    d.window[w] = d.stride[w] = d.in_size[w];
    d.dilation[w] = 1;
    d.pad_begin[w] = d.pad_end[w] = 0;
    for (size_t j = 0; j < w; ++j) {  // every fourth a whole plane; some overlapping along D and H
      if (i % 4 == 0) {
        d.window[j] = d.stride[j] = d.in_size[j];
        d.dilation[j] = 1;
        d.pad_begin[j] = d.pad_end[j] = 0;
      }
      const bool overlap = (i % 6 == 2 || i % 6 == 4) && i % 4 != 0;  // ranks 3 and 2
      if (!overlap) {
        d.stride[j] = std::max(d.stride[j], (d.window[j] - 1) * d.dilation[j] + 1 + i % 2);
      } else {
        d.window[j] = std::min<int64_t>(std::max<int64_t>(d.window[j], 2), d.in_size[j]);
        d.stride[j] = 1;
      }
    }
    d.exclude_padding = i % 5 == 0;
    detail::PoolGeometry g;
    if (!detail::make_pool_geometry(d.to_c(), &g).ok()) continue;
    const int64_t planes = g.batch * g.channels, first = planes > 1 ? 1 : 0;
    const std::vector<float> x = awkward_values(rng, ref::pool_input_elements(d), i % 2 == 1, i % 3 == 2);
    for (PoolOp op : {PoolOp::Max, PoolOp::Mean}) {
      const std::string context = std::string(op == PoolOp::Max ? "max " : "mean ") + describe(d);
      const std::vector<float> y_want = contract_forward(d, op, x);
      const int threads = 1 + 2 * (i % 2);  // the driver's plane blocks split over 1 and 3 threads
      std::vector<float> y_driver = nan_buffer(int64_t(y_want.size()));
      detail::run_pool_forward(op, g, threads, 0.0f, x.data(), y_driver.data());
      EXPECT_TRUE(bitwise_equal("y (driver)", y_driver, y_want, pool_output_shape(d), context));
      const std::vector<float> dy = awkward_values(rng, int64_t(y_want.size()), false, i % 3 == 1);
      const std::vector<float> dx_want = contract_backward(d, op, x, y_want, dy);
      const bool backward = op == PoolOp::Mean;
      if (backward) {
        std::vector<float> dx_driver = nan_buffer(int64_t(x.size()));
        detail::run_pool_backward(op, g, threads, 0.0f, x.data(), y_want.data(), dy.data(), dx_driver.data());
        EXPECT_TRUE(bitwise_equal("dx (driver)", dx_driver, dx_want, pool_input_shape(d), context));
      }
      for (const NchwWholeRows& k : kWholeRowsIsas) {
        if (!jit::host_has(k.isa)) continue;
        SCOPED_TRACE(std::string(k.name) + " " + context);
        std::vector<float> y = nan_buffer(int64_t(y_want.size()));
        k.forward(g, op, x.data(), y.data(), first, planes);
        expect_planes(y, y_want, int64_t(y_want.size()) / planes, first);
        ++ran;
        if (!backward || !k.supported(g, op)) continue;
        std::vector<float> dx = nan_buffer(int64_t(x.size()));
        k.backward(g, dy.data(), dx.data(), first, planes);
        expect_planes(dx, dx_want, int64_t(x.size()) / planes, first);
      }
    }
    bool covers = true, overlaps = false;  // covers: every input element in a window, none to zero
    for (int j = 0; j < 2; ++j) {
      covers = covers && g.pad_begin[j] == 0 && g.window[j] == g.stride[j] && g.dilation[j] == 1 &&
               g.out[j] * g.stride[j] == g.in[j];
      overlaps = overlaps || g.stride[j] < (g.window[j] - 1) * g.dilation[j] + 1;
    }
    ++(covers ? covered : gaps);
    overlapping += overlaps;
  }
  if (ran == 0) GTEST_SKIP() << "this host has neither AVX2 nor AVX-512: only the portable path was compared";
  EXPECT_GT(covered, 0) << "no problem's windows covered the planes";
  EXPECT_GT(gaps, 0) << "no problem left rows for the backward kernel to zero";
  EXPECT_GT(overlapping, 0) << "no problem's windows overlapped (forward only)";
}

// Windows whose max is -inf or NaN in some lanes: inner vectors form them again tracking numbers.
TEST(PoolNchwKernels, AMaxOfOnlyNanOrMinusInfinityKeepsTheContract) {
  PoolDims d;
  d.rank = 2;
  d.batch = 1;
  d.channels = 2;
  d.in_size = {4, 70};
  d.window = {2, 2};
  d.stride = {2, 2};
  d.layout = Layout::NCHW;
  detail::PoolGeometry g;
  ASSERT_TRUE(detail::make_pool_geometry(d.to_c(), &g).ok());
  std::vector<float> x(size_t(ref::pool_input_elements(d)), 1.0f);
  for (int64_t w = 0; w < 70; w += 7) x[size_t(w)] = x[size_t(70 + w)] = x[size_t(w + 1)] = x[size_t(71 + w)] = NAN;
  for (int64_t w = 16; w < 20; ++w) x[size_t(140 + w)] = x[size_t(210 + w)] = -INFINITY;
  const std::vector<float> want = contract_forward(d, PoolOp::Max, x);
  std::vector<float> y = nan_buffer(int64_t(want.size()));
  detail::run_pool_forward(PoolOp::Max, g, 1, 0.0f, x.data(), y.data());
  EXPECT_TRUE(bitwise_equal("y", y, want, pool_output_shape(d), "NaN and -inf windows"));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[size_t(35 + 8)], -INFINITY);
}

}  // namespace
}  // namespace convjit::testing
