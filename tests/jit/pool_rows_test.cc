// The Xbyak backend's NHWC max and mean pooling rows (jit/xbyak/pool_rows_nhwc), forward and
// backward, per ISA the host has: through the driver (the compiled rows take the outputs whose
// windows are wholly real, tier 0 the rest; backward between tier 0's outputs, in output order),
// on random problems (ranks 1-3, channel counts around the vector and block sizes, padding,
// stride, dilation, exclude_padding) with NaN (whole windows of it too), -inf, ties and signed
// zeros in x and dy. Each must give tier 0's bits, which the kernel tests hold to the pooling
// contract, and write nothing outside y (dx).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend.hpp"
#include "geometry.hpp"
#include "ops_internal.hpp"
#include "pool_rows_nhwc.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/guarded_output.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"
#include "xbyak_isa_fixture.hpp"

namespace convjit::testing {
namespace {

#if defined(CONVJIT_HAVE_XBYAK)

std::vector<float> awkward(Rng& rng, int64_t n, bool nan_heavy) {
  std::vector<float> v(static_cast<size_t>(n));
  const double nan_share = nan_heavy ? 0.5 : 0.05;
  for (float& f : v) {
    const double u = rng.uniform(0, 1);
    f = float(rng.uniform_int(-3, 3)) * 0.5f;
    if (u < nan_share) {
      f = NAN;
    } else if (u < nan_share + 0.05) {
      f = u < nan_share + 0.025 ? -0.0f : -INFINITY;
    }
  }
  return v;
}

using PoolRows = XbyakIsaTest;

enum class Windows { Any, Tile, Cover };

// Problem i of a sweep: ranks 1-3 (i / 3, apart from the backward sweep's window kinds, i % 3),
// channel counts around the vector and block sizes, room for interior outputs; Tile: stride =
// window, dilation 1; Cover: stride 1 to window, dilation 1.
PoolDims row_problem(Rng& rng, int i, Windows windows) {
  PoolDims d = random_pool(rng, int32_t(1 + i / 3 % 3), Layout::NHWC);
  d.channels = std::vector<int64_t>{1, 7, 8, 16, 17, 33, 64, 65, 70, 129}[size_t(i % 10)];
  d.exclude_padding = i % 5 == 0;
  for (int k = 0; k < d.rank; ++k) {
    d.in_size[size_t(k)] += 6;
    if (windows == Windows::Tile) d.stride[size_t(k)] = d.window[size_t(k)];
    if (windows == Windows::Cover) d.stride[size_t(k)] = rng.uniform_int(1, d.window[size_t(k)]);
    if (windows != Windows::Any) d.dilation[size_t(k)] = 1;
  }
  return d;
}

// g's rows of op `code` compiled for isa into *kernel, named by `name_part`; false where the plan
// declines the key (a failed compile it did not foresee fails the test).
bool compile_rows(jit::Backend& backend, const detail::PoolGeometry& g, int32_t code, int32_t rank, jit::Isa isa,
                  const std::string& name_part, jit::CompiledKernel* kernel) {
  const jit::SpecKey key = jit::make_pool_spec_key(detail::compiled_pool_problem(g), code, rank, isa);
  std::string error;
  if (!backend.compile(key, kernel, &error)) {
    EXPECT_FALSE(backend.rows_decline_reason(key).empty()) << "a failed compile the plan did not foresee: " << error;
    return false;
  }
  EXPECT_NE(kernel->pool_row, nullptr);
  EXPECT_NE(kernel->name.find(name_part), std::string::npos) << kernel->name;
  return kernel->pool_row != nullptr;
}

TEST_P(PoolRows, GiveTierZerosBitsAndWriteOnlyY) {
  const jit::Isa isa = GetParam();
  Rng rng(0x9002 + uint64_t(isa));
  int compiled_rows = 0;
  for (int i = 0; i < 120; ++i) {
    const PoolDims d = row_problem(rng, i, Windows::Any);
    detail::PoolGeometry g;
    ASSERT_TRUE(detail::make_pool_geometry(d.to_c(), &g).ok()) << describe(d);
    const std::vector<float> x = awkward(rng, ref::pool_input_elements(d), i % 3 == 2);
    for (detail::PoolOp op : {detail::PoolOp::Max, detail::PoolOp::Mean}) {
      const std::string context = std::string(op == detail::PoolOp::Max ? "max " : "mean ") + describe(d);
      SCOPED_TRACE(std::string(jit::isa_name(isa)) + " " + context);
      const int32_t code = op == detail::PoolOp::Max ? CONVJIT_OP_MAXPOOL_FORWARD : CONVJIT_OP_MEANPOOL_FORWARD;
      jit::CompiledKernel kernel;
      if (!compile_rows(*backend, g, code, d.rank, isa, op == detail::PoolOp::Max ? "maxpool" : "meanpool", &kernel))
        continue;
      const int64_t outputs = ref::pool_output_elements(d);
      std::vector<float> want = nan_buffer(outputs);
      detail::run_pool_forward(op, g, 1, 0.0f, x.data(), want.data());
      GuardedOutput got(outputs);
      detail::run_pool_forward(op, g, 1 + i % 2, 0.0f, x.data(), got.data(), kernel.pool_row);
      EXPECT_TRUE(bitwise_equal("y", got.values(), want, pool_output_shape(d), context));
      EXPECT_TRUE(got.guards_intact("y", context));
      compiled_rows += detail::pool_runs_compiled_rows(g, op);
    }
  }
  EXPECT_GE(compiled_rows, 60) << "too few problems gave outputs to the compiled rows";
}

// Backward: x, tier 0's y of it and an awkward dy; overlapping windows (stride below the window)
// add several outputs' gradients into one dx element, in output order on every path; every third
// problem's windows tile x (stride = window, dilation 1) and every third cover it (stride 1 to
// window), whose rows write the dx elements their outputs reach first without reading them (over
// a NaN-filled buffer: an element they or tier 0 skip shows).
TEST_P(PoolRows, BackwardGivesTierZerosBitsAndWritesOnlyDx) {
  const jit::Isa isa = GetParam();
  Rng rng(0x9003 + uint64_t(isa));
  int compiled_rows = 0, overlapping_first_reached = 0, carried = 0, first_reached_3d = 0;
  for (int i = 0; i < 120; ++i) {
    const PoolDims d =
        row_problem(rng, i, std::vector<Windows>{Windows::Tile, Windows::Cover, Windows::Any}[size_t(i % 3)]);
    detail::PoolGeometry g;
    ASSERT_TRUE(detail::make_pool_geometry(d.to_c(), &g).ok()) << describe(d);
    // NaN-heavy every other problem, tiling ones too (a window with no tap routed writes all +0).
    const std::vector<float> x = awkward(rng, ref::pool_input_elements(d), i % 2 == 0);
    const int64_t outputs = ref::pool_output_elements(d), inputs = ref::pool_input_elements(d);
    const std::vector<float> dy = awkward(rng, outputs, false);
    for (detail::PoolOp op : {detail::PoolOp::Max, detail::PoolOp::Mean}) {
      const std::string context = std::string(op == detail::PoolOp::Max ? "max " : "mean ") + describe(d);
      SCOPED_TRACE(std::string(jit::isa_name(isa)) + " backward " + context);
      const int32_t code = op == detail::PoolOp::Max ? CONVJIT_OP_MAXPOOL_BACKWARD : CONVJIT_OP_MEANPOOL_BACKWARD;
      jit::CompiledKernel kernel;
      if (!compile_rows(*backend, g, code, d.rank, isa, "d_bwd_", &kernel)) continue;
      std::vector<float> y = nan_buffer(outputs);
      detail::run_pool_forward(op, g, 1, 0.0f, x.data(), y.data());
      std::vector<float> want = nan_buffer(inputs);
      detail::run_pool_backward(op, g, 1, 0.0f, x.data(), y.data(), dy.data(), want.data());
      GuardedOutput got(inputs);
      detail::run_pool_backward(op, g, 1 + i % 2, 0.0f, x.data(), y.data(), dy.data(), got.data(), kernel.pool_row);
      EXPECT_TRUE(bitwise_equal("dx", got.values(), want, pool_input_shape(d), context));
      EXPECT_TRUE(got.guards_intact("dx", context));
      if (!detail::pool_runs_compiled_rows(g, op)) continue;
      ++compiled_rows;
      const jit::xbyak::PoolPlan plan = jit::xbyak::plan_pool_nhwc(
          jit::make_pool_spec_key(detail::compiled_pool_problem(g), code, d.rank, isa));
      const bool overlapping = plan.first_reached[0] + plan.first_reached[1] + plan.first_reached[2] > 0;
      overlapping_first_reached += plan.writes_first_reached && overlapping;
      first_reached_3d += plan.writes_first_reached && d.rank == 3 && plan.first_reached[0] > 0;
      carried += plan.carried_columns > 0;
    }
  }
  EXPECT_GE(compiled_rows, 60) << "too few problems gave outputs to the compiled rows";
  EXPECT_GE(overlapping_first_reached, 10) << "too few overlapping windows wrote their first-reached dx";
  EXPECT_GE(first_reached_3d, 3) << "too few 3D windows overlapping along D wrote their first-reached dx";
  if (isa == jit::Isa::Avx512) {
    EXPECT_GE(carried, 5) << "too few problems carried W columns in registers";
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, PoolRows, ::testing::ValuesIn(kXbyakIsas), isa_test_name);

#endif

}  // namespace
}  // namespace convjit::testing
