#include "support/op_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "convjit/ops.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/guarded_output.hpp"
#include "support/random.hpp"

namespace convjit::testing {
namespace {

int64_t product(const Extent& e, int32_t rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= e[i];
  return n;
}

// Runs `call`; an exception (the library rejecting a valid problem) becomes a failure.
template <typename F>
::testing::AssertionResult run(const char* op, const std::string& context, F call) {
  try {
    call();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << op << " threw on a valid problem: " << e.what() << "\n  " << context;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult unchanged(const char* name, const std::vector<float>& before,
                                     const std::vector<float>& after, const std::string& context) {
  if (before.size() == after.size() &&
      std::memcmp(before.data(), after.data(), before.size() * sizeof(float)) == 0) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "input " << name << " was modified by the call\n  " << context;
}

std::vector<float> pool_input(Rng& rng, int64_t n, PoolValues values) {
  switch (values) {
    case PoolValues::Continuous:
      return random_floats(rng, n);
    case PoolValues::SmallIntegers:
      return random_small_integers(rng, n, -2, 2);
    case PoolValues::SomeNaN: {
      std::vector<float> x = random_floats(rng, n);
      for (float& v : x) {
        if (rng.chance(0.35)) v = std::numeric_limits<float>::quiet_NaN();
      }
      return x;
    }
  }
  return {};
}

// |x| in [0.05, 1], random sign.
std::vector<float> lp_input(Rng& rng, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = float(rng.uniform(0.05, 1.0) * (rng.chance(0.5) ? 1.0 : -1.0));
  return x;
}

// The inputs' absolute values: the oracle on them gives each output's sum of |term|, the scale of
// its rounding (all_close with a magnitude).
std::vector<float> absolute(const std::vector<float>& v) {
  std::vector<float> a(v.size());
  std::transform(v.begin(), v.end(), a.begin(), [](float f) { return std::fabs(f); });
  return a;
}

std::string pool_context(const PoolDims& dims, const char* extra = "") {
  return describe(dims) + extra;
}

}  // namespace

::testing::AssertionResult check_conv_forward(const ConvDims& dims, uint64_t seed, bool with_bias,
                                              Activation activation) {
  Rng rng(seed);
  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(dims));
  const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(dims));
  const std::vector<float> bias = random_floats(rng, dims.out_channels);
  const float* b = with_bias ? bias.data() : nullptr;
  const std::vector<float> x0 = x, w0 = w, bias0 = bias;
  GuardedOutput y(ref::conv_output_elements(dims));
  const std::string context = describe(dims) + (with_bias ? " bias" : " no-bias") +
                              (activation == Activation::Relu ? " relu" : " identity");
  auto ran = run("conv_forward", context, [&] { conv_forward(dims, x.data(), w.data(), b, activation, y.data()); });
  if (!ran) return ran;
  if (auto r = y.guards_intact("y", context); !r) return r;
  if (auto r = unchanged("x", x0, x, context); !r) return r;
  if (auto r = unchanged("w", w0, w, context); !r) return r;
  if (auto r = unchanged("bias", bias0, bias, context); !r) return r;
  const std::vector<double> want = ref::conv_forward(dims, x.data(), w.data(), b, activation);
  const std::vector<float> abs_bias = absolute(bias);
  const std::vector<double> magnitude = ref::conv_forward(dims, absolute(x).data(), absolute(w).data(),
                                                          with_bias ? abs_bias.data() : nullptr, Activation::Identity);
  return all_close("conv_forward y", y.data(), want, magnitude, conv_output_shape(dims),
                   (dims.in_channels / dims.groups) * product(dims.kernel, dims.rank), context);
}

::testing::AssertionResult check_conv_backward_data(const ConvDims& dims, uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(dims));
  const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(dims));
  const std::vector<float> dy0 = dy, w0 = w;
  GuardedOutput dx(ref::conv_input_elements(dims));
  const std::string context = describe(dims);
  auto ran = run("conv_backward_data", context, [&] { conv_backward_data(dims, dy.data(), w.data(), dx.data()); });
  if (!ran) return ran;
  if (auto r = dx.guards_intact("dx", context); !r) return r;
  if (auto r = unchanged("dy", dy0, dy, context); !r) return r;
  if (auto r = unchanged("w", w0, w, context); !r) return r;
  const std::vector<double> want = ref::conv_backward_data(dims, dy.data(), w.data());
  const std::vector<double> magnitude = ref::conv_backward_data(dims, absolute(dy).data(), absolute(w).data());
  return all_close("conv_backward_data dx", dx.data(), want, magnitude, conv_input_shape(dims),
                   (dims.out_channels / dims.groups) * product(dims.kernel, dims.rank), context);
}

::testing::AssertionResult check_conv_backward_filter(const ConvDims& dims, uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(dims));
  const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(dims));
  const std::vector<float> x0 = x, dy0 = dy;
  GuardedOutput dw(ref::conv_weight_elements(dims));
  const std::string context = describe(dims);
  auto ran = run("conv_backward_filter", context, [&] { conv_backward_filter(dims, x.data(), dy.data(), dw.data()); });
  if (!ran) return ran;
  if (auto r = dw.guards_intact("dw", context); !r) return r;
  if (auto r = unchanged("x", x0, x, context); !r) return r;
  if (auto r = unchanged("dy", dy0, dy, context); !r) return r;
  const std::vector<double> want = ref::conv_backward_filter(dims, x.data(), dy.data());
  const std::vector<double> magnitude = ref::conv_backward_filter(dims, absolute(x).data(), absolute(dy).data());
  return all_close("conv_backward_filter dw", dw.data(), want, magnitude, conv_weight_shape(dims),
                   dims.batch * product(ref::conv_output_size(dims), dims.rank), context);
}

::testing::AssertionResult check_maxpool_forward(const PoolDims& dims, uint64_t seed, PoolValues values) {
  Rng rng(seed);
  const std::vector<float> x = pool_input(rng, ref::pool_input_elements(dims), values);
  const std::vector<float> x0 = x;
  GuardedOutput y(ref::pool_output_elements(dims));
  const std::string context = pool_context(dims);
  auto ran = run("maxpool_forward", context, [&] { maxpool_forward(dims, x.data(), y.data()); });
  if (!ran) return ran;
  if (auto r = y.guards_intact("y", context); !r) return r;
  if (auto r = unchanged("x", x0, x, context); !r) return r;
  // The maximum of floats is one of them (or -FLT_MAX, or NaN): no rounding, so exact.
  return all_equal("maxpool_forward y", y.data(), ref::maxpool_forward(dims, x.data()), pool_output_shape(dims),
                   context);
}

::testing::AssertionResult check_maxpool_backward(const PoolDims& dims, uint64_t seed, PoolValues values) {
  Rng rng(seed);
  const std::vector<float> x = pool_input(rng, ref::pool_input_elements(dims), values);
  const std::vector<float> y = to_float(ref::maxpool_forward(dims, x.data()));  // exact: see above
  const std::vector<float> dy = random_floats(rng, int64_t(y.size()));
  const std::vector<float> x0 = x, y0 = y, dy0 = dy;
  GuardedOutput dx(int64_t(x.size()));
  const std::string context = pool_context(dims);
  auto ran = run("maxpool_backward", context, [&] { maxpool_backward(dims, x.data(), y.data(), dy.data(), dx.data()); });
  if (!ran) return ran;
  if (auto r = dx.guards_intact("dx", context); !r) return r;
  if (auto r = unchanged("x", x0, x, context); !r) return r;
  if (auto r = unchanged("y", y0, y, context); !r) return r;
  if (auto r = unchanged("dy", dy0, dy, context); !r) return r;
  return all_close("maxpool_backward dx", dx.data(), ref::maxpool_backward(dims, x.data(), y.data(), dy.data()),
                   pool_input_shape(dims), product(dims.window, dims.rank), context);
}

::testing::AssertionResult check_meanpool_forward(const PoolDims& dims, uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> x = random_floats(rng, ref::pool_input_elements(dims));
  const std::vector<float> x0 = x;
  GuardedOutput y(ref::pool_output_elements(dims));
  const std::string context = pool_context(dims);
  auto ran = run("meanpool_forward", context, [&] { meanpool_forward(dims, x.data(), y.data()); });
  if (!ran) return ran;
  if (auto r = y.guards_intact("y", context); !r) return r;
  if (auto r = unchanged("x", x0, x, context); !r) return r;
  return all_close("meanpool_forward y", y.data(), ref::meanpool_forward(dims, x.data()), pool_output_shape(dims),
                   product(dims.window, dims.rank), context);
}

::testing::AssertionResult check_meanpool_backward(const PoolDims& dims, uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> dy = random_floats(rng, ref::pool_output_elements(dims));
  const std::vector<float> dy0 = dy;
  GuardedOutput dx(ref::pool_input_elements(dims));
  const std::string context = pool_context(dims);
  auto ran = run("meanpool_backward", context, [&] { meanpool_backward(dims, dy.data(), dx.data()); });
  if (!ran) return ran;
  if (auto r = dx.guards_intact("dx", context); !r) return r;
  if (auto r = unchanged("dy", dy0, dy, context); !r) return r;
  return all_close("meanpool_backward dx", dx.data(), ref::meanpool_backward(dims, dy.data()), pool_input_shape(dims),
                   product(dims.window, dims.rank), context);
}

::testing::AssertionResult check_lpnormpool_forward(const PoolDims& dims, float p, uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> x = lp_input(rng, ref::pool_input_elements(dims));
  const std::vector<float> x0 = x;
  GuardedOutput y(ref::pool_output_elements(dims));
  const std::string context = pool_context(dims) + " p=" + std::to_string(p);
  auto ran = run("lpnormpool_forward", context, [&] { lpnormpool_forward(dims, p, x.data(), y.data()); });
  if (!ran) return ran;
  if (auto r = y.guards_intact("y", context); !r) return r;
  if (auto r = unchanged("x", x0, x, context); !r) return r;
  return all_close("lpnormpool_forward y", y.data(), ref::lpnormpool_forward(dims, p, x.data()),
                   pool_output_shape(dims), product(dims.window, dims.rank), context);
}

::testing::AssertionResult check_lpnormpool_backward(const PoolDims& dims, float p, uint64_t seed) {
  Rng rng(seed);
  const std::vector<float> x = lp_input(rng, ref::pool_input_elements(dims));
  const std::vector<float> y = to_float(ref::lpnormpool_forward(dims, p, x.data()));
  const std::vector<float> dy = random_floats(rng, int64_t(y.size()));
  const std::vector<float> x0 = x, y0 = y, dy0 = dy;
  GuardedOutput dx(int64_t(x.size()));
  const std::string context = pool_context(dims) + " p=" + std::to_string(p);
  auto ran = run("lpnormpool_backward", context,
                 [&] { lpnormpool_backward(dims, p, x.data(), y.data(), dy.data(), dx.data()); });
  if (!ran) return ran;
  if (auto r = dx.guards_intact("dx", context); !r) return r;
  if (auto r = unchanged("x", x0, x, context); !r) return r;
  if (auto r = unchanged("y", y0, y, context); !r) return r;
  if (auto r = unchanged("dy", dy0, dy, context); !r) return r;
  return all_close("lpnormpool_backward dx", dx.data(), ref::lpnormpool_backward(dims, p, x.data(), y.data(), dy.data()),
                   pool_input_shape(dims), product(dims.window, dims.rank), context);
}

}  // namespace convjit::testing
