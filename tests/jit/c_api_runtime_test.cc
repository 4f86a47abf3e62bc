// The runtime's C functions (include/convjit/convjit.h, end of file): a configuration moving
// from the generic tier to the JIT tier as seen through convjit_runtime_get_config_stats and
// convjit_runtime_get_totals, and the bad-input handling of every runtime function (status
// CONVJIT_EINVAL, a message naming the argument, nothing written).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "convjit/convjit.h"
#include "jit_support.hpp"
#include "support/bad_inputs.hpp"

namespace convjit::testing::jit {
namespace {

convjit_policy c_policy(int64_t hot_threshold, int32_t async) {
  convjit_policy p;
  std::memset(&p, 0, sizeof p);
  p.backend = CONVJIT_BACKEND_AUTO;
  p.async = async;
  p.num_threads = 0;
  p.decline_slower = 1;  // the default: what the backend expects to lose on stays generic
  p.adapt_threads = 1;   // the default: a configuration faster on one thread runs on one
  p.hot_threshold = hot_threshold;
  p.max_configurations = 64;
  p.code_budget_bytes = int64_t(1) << 24;
  p.max_isa = int32_t(Policy::from_environment().max_isa);  // as jit_support.hpp's policies
  return p;
}

// Skips when the policy's backend is not usable here (the C ABI does not name the backend).
bool backend_available(std::string* reason) {
  Policy p;
  p.backend = Backend::Auto;
  const RuntimeStats s = Runtime(p).stats();
  *reason = s.backend_unavailable_reason;
  return s.backend != "none";
}

struct CRuntime {
  convjit_runtime* runtime = nullptr;
  ~CRuntime() { convjit_runtime_destroy(runtime); }
};

std::vector<convjit_config_stats> config_stats(convjit_runtime* runtime) {
  int64_t count = -1;
  EXPECT_EQ(convjit_runtime_get_config_stats(runtime, nullptr, 0, &count), CONVJIT_OK) << convjit_last_error();
  std::vector<convjit_config_stats> out(size_t(count > 0 ? count : 0));
  int64_t again = -1;
  EXPECT_EQ(convjit_runtime_get_config_stats(runtime, out.data(), count, &again), CONVJIT_OK) << convjit_last_error();
  EXPECT_EQ(again, count);
  return out;
}

// NCHW 3x3 stride 1, 4 output channels (the "4 or more" channel class: no _oc suffix), no relu,
// rows of 40 pixels (long enough not to be declined, and for the row kernel to run).
ConvDims tier_shape() {
  return conv(2, Layout::NCHW, 2, 3, 4, 1, {11, 40, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0});
}

TEST(CApiRuntime, ConfigurationMovesToTheJitTierAtTheThreshold) {
  std::string reason;
  if (!backend_available(&reason)) GTEST_SKIP() << "no JIT backend on this host: " << reason;
  const convjit_policy policy = c_policy(3, 0);
  CRuntime r;
  ASSERT_EQ(convjit_runtime_create(&policy, &r.runtime), CONVJIT_OK) << convjit_last_error();
  ASSERT_NE(r.runtime, nullptr);
  EXPECT_STREQ(convjit_last_error(), "");

  const ConvDims dims = tier_shape();
  const Problem p(dims, 0xCA01, true, Activation::Identity);
  const convjit_conv_params params = c_params(dims);
  std::vector<std::vector<float>> ys;
  // After call k: (calls_generic, calls_jit, state). The threshold is the number of the call
  // that compiles: calls 1 and 2 run generic, call 3 compiles inline and runs the kernel.
  struct Expected {
    int64_t generic, jit;
    const char* state;
  };
  const Expected expected[5] = {{1, 0, "cold"}, {2, 0, "cold"}, {2, 1, "jit"}, {2, 2, "jit"}, {2, 3, "jit"}};
  for (int call = 0; call < 5; ++call) {
    std::vector<float> y = nan_buffer(p.outputs());
    ASSERT_EQ(convjit_runtime_conv_forward(r.runtime, &params, p.x.data(), p.w.data(), p.bias_ptr(),
                                           CONVJIT_ACT_IDENTITY, y.data()),
              CONVJIT_OK)
        << convjit_last_error();
    EXPECT_TRUE(p.matches_reference(y, "call " + std::to_string(call + 1)));
    ys.push_back(std::move(y));

    const std::vector<convjit_config_stats> stats = config_stats(r.runtime);
    ASSERT_EQ(stats.size(), 1u);
    const convjit_config_stats& c = stats[0];
    EXPECT_EQ(c.calls_generic, expected[call].generic) << "after call " << call + 1;
    EXPECT_EQ(c.calls_jit, expected[call].jit) << "after call " << call + 1;
    EXPECT_STREQ(c.state, expected[call].state) << "after call " << call + 1 << "; failure: " << c.failure;
    if (call < 2) {
      EXPECT_STREQ(c.kernel, "") << "after call " << call + 1;
      EXPECT_EQ(c.code_bytes, 0);
    }
  }
  for (int call = 1; call < 5; ++call) {
    EXPECT_TRUE(p.same_bits(ys[size_t(call)], ys[0], "call " + std::to_string(call + 1) + " vs call 1"));
  }

  const std::vector<convjit_config_stats> stats = config_stats(r.runtime);
  ASSERT_EQ(stats.size(), 1u);
  const convjit_config_stats& c = stats[0];
  EXPECT_EQ(std::string(c.kernel), "conv2d_fwd_f32_k3x3_s1__" + kernel_isa());  // rows of 40 pixels
  EXPECT_STREQ(c.failure, "");
  EXPECT_GT(c.code_bytes, 0);
  EXPECT_GT(c.compile_us, 0.0);
  EXPECT_GT(c.mean_ns_generic, 0.0);  // each tier's first call is sampled
  EXPECT_GT(c.mean_ns_jit, 0.0);
  EXPECT_EQ(c.activation, CONVJIT_ACT_IDENTITY);
  EXPECT_EQ(c.has_bias, 1);
  // The configuration's params come back as given (the entries within rank).
  EXPECT_EQ(c.params.rank, params.rank);
  EXPECT_EQ(c.params.layout, params.layout);
  EXPECT_EQ(c.params.mode, params.mode);
  EXPECT_EQ(c.params.batch, params.batch);
  EXPECT_EQ(c.params.in_channels, params.in_channels);
  EXPECT_EQ(c.params.out_channels, params.out_channels);
  EXPECT_EQ(c.params.groups, params.groups);
  for (int d = 0; d < params.rank; ++d) {
    EXPECT_EQ(c.params.in_size[d], params.in_size[d]) << d;
    EXPECT_EQ(c.params.kernel[d], params.kernel[d]) << d;
    EXPECT_EQ(c.params.stride[d], params.stride[d]) << d;
    EXPECT_EQ(c.params.dilation[d], params.dilation[d]) << d;
    EXPECT_EQ(c.params.pad_begin[d], params.pad_begin[d]) << d;
    EXPECT_EQ(c.params.pad_end[d], params.pad_end[d]) << d;
  }

  convjit_runtime_totals totals;
  std::memset(&totals, 0xAB, sizeof totals);
  ASSERT_EQ(convjit_runtime_get_totals(r.runtime, &totals), CONVJIT_OK) << convjit_last_error();
  EXPECT_EQ(totals.configurations, 1);
  EXPECT_EQ(totals.calls_generic, 2);
  EXPECT_EQ(totals.calls_jit, 3);
  EXPECT_EQ(totals.compiles, 1);
  EXPECT_EQ(totals.compile_failures, 0);
  EXPECT_EQ(totals.kernels, 1);
  EXPECT_EQ(totals.code_bytes, c.code_bytes);
  EXPECT_EQ(totals.evictions, 0);
  EXPECT_EQ(convjit_runtime_wait(r.runtime), CONVJIT_OK);  // nothing queued: returns at once
}

// A second configuration with the same specialization key reuses the kernel: no new compile.
TEST(CApiRuntime, SameKeyReusesTheKernelAndCapacityLimitsTheCopy) {
  std::string reason;
  if (!backend_available(&reason)) GTEST_SKIP() << "no JIT backend on this host: " << reason;
  const convjit_policy policy = c_policy(0, 1);
  CRuntime r;
  ASSERT_EQ(convjit_runtime_create(&policy, &r.runtime), CONVJIT_OK) << convjit_last_error();
  ConvDims a = tier_shape(), b = tier_shape();
  b.in_channels = 5;
  b.out_channels = 7;
  b.in_size = {9, 21, 1};
  for (const ConvDims& d : {a, b}) {
    const Problem p(d, 0xCA02, false, Activation::Identity);
    const convjit_conv_params params = c_params(d);
    std::vector<float> y = nan_buffer(p.outputs());
    ASSERT_EQ(convjit_runtime_conv_forward(r.runtime, &params, p.x.data(), p.w.data(), nullptr, CONVJIT_ACT_IDENTITY,
                                           y.data()),
              CONVJIT_OK)
        << convjit_last_error();
    EXPECT_TRUE(p.matches_reference(y, "y"));
  }
  ASSERT_EQ(convjit_runtime_wait(r.runtime), CONVJIT_OK);
  convjit_runtime_totals totals;
  ASSERT_EQ(convjit_runtime_get_totals(r.runtime, &totals), CONVJIT_OK);
  EXPECT_EQ(totals.configurations, 2);
  EXPECT_EQ(totals.compiles, 1);
  EXPECT_EQ(totals.kernels, 1);
  EXPECT_EQ(totals.calls_generic + totals.calls_jit, 2);

  // capacity 1 of 2: count says 2, only out[0] is written.
  convjit_config_stats out[2];
  std::memset(out, 0x5A, sizeof out);
  const std::vector<unsigned char> untouched(reinterpret_cast<unsigned char*>(&out[1]),
                                             reinterpret_cast<unsigned char*>(&out[1]) + sizeof out[1]);
  int64_t count = -1;
  ASSERT_EQ(convjit_runtime_get_config_stats(r.runtime, out, 1, &count), CONVJIT_OK) << convjit_last_error();
  EXPECT_EQ(count, 2);
  EXPECT_EQ(out[0].params.kernel[0], 3);
  EXPECT_EQ(std::string(out[0].kernel), "conv2d_fwd_f32_k3x3_s1__" + kernel_isa());
  EXPECT_EQ(std::memcmp(&out[1], untouched.data(), sizeof out[1]), 0) << "out[1] written past capacity";
}

// policy.decline_slower reaches the runtime: with it (the default), a problem the backend expects
// to lose on (rows of 5 pixels at stride 2, which the driver does not flatten) stays generic as
// "declined" with the reason; without it, the same problem is compiled.
TEST(CApiRuntime, DeclineSlowerKeepsShortRowsGeneric) {
  std::string reason;
  if (!backend_available(&reason)) GTEST_SKIP() << "no JIT backend on this host: " << reason;
  const ConvDims dims = conv(2, Layout::NCHW, 1, 3, 4, 1, {9, 11, 1}, {3, 3, 1}, {2, 2, 1});
  const Problem p(dims, 0xCA04, false, Activation::Relu);
  const convjit_conv_params params = c_params(dims);
  for (int32_t decline : {1, 0}) {
    convjit_policy policy = c_policy(0, 0);
    policy.decline_slower = decline;
    CRuntime r;
    ASSERT_EQ(convjit_runtime_create(&policy, &r.runtime), CONVJIT_OK) << convjit_last_error();
    for (int call = 0; call < 2; ++call) {
      std::vector<float> y = nan_buffer(p.outputs());
      ASSERT_EQ(
          convjit_runtime_conv_forward(r.runtime, &params, p.x.data(), p.w.data(), nullptr, CONVJIT_ACT_RELU, y.data()),
          CONVJIT_OK)
          << convjit_last_error();
      EXPECT_TRUE(p.matches_reference(y, "y"));
    }
    const std::vector<convjit_config_stats> stats = config_stats(r.runtime);
    ASSERT_EQ(stats.size(), 1u);
    convjit_runtime_totals totals;
    ASSERT_EQ(convjit_runtime_get_totals(r.runtime, &totals), CONVJIT_OK);
    if (decline) {
      EXPECT_STREQ(stats[0].state, "declined");
      EXPECT_STRNE(stats[0].failure, "") << "a declined configuration says why";
      EXPECT_STREQ(stats[0].kernel, "");
      EXPECT_EQ(stats[0].calls_jit, 0);
      EXPECT_EQ(stats[0].calls_generic, 2);
      EXPECT_EQ(totals.compiles + totals.compile_failures + totals.kernels, 0);
    } else {
      EXPECT_STREQ(stats[0].state, "jit") << stats[0].failure;
      // Rows of 5 pixels: AVX-512's NCHW blocks are 32 pixels, AVX2's kernel takes them.
      EXPECT_STREQ(stats[0].kernel, "conv2d_fwd_f32_k3x3_s2_relu__avx2");
      EXPECT_EQ(stats[0].calls_jit, 2);
      EXPECT_EQ(totals.compiles, 1);
    }
  }
}

// Each runtime function with a NULL or invalid argument: EINVAL, a message naming it, and the
// outputs left alone. A later successful call clears the message.
// Every op has a runtime function; each call is counted under its op, pooling with its own params.
TEST(CApiRuntime, EveryOpIsCountedUnderItsOp) {
  const convjit_policy policy = c_policy(2, 0);
  CRuntime r;
  ASSERT_EQ(convjit_runtime_create(&policy, &r.runtime), CONVJIT_OK) << convjit_last_error();
  const convjit_conv_params c = tier_shape().to_c();
  PoolDims pool_dims;
  pool_dims.channels = 3;
  pool_dims.in_size = {8, 10, 1};
  pool_dims.window = {2, 2, 1};
  const convjit_pool_params pool = pool_dims.to_c();
  std::vector<float> x(size_t(tier_shape().input_elements()), 0.25f), w(size_t(tier_shape().weight_elements()), 0.5f);
  std::vector<float> y(size_t(tier_shape().output_elements()), 1.0f), dx(x.size()), dw(w.size());
  std::vector<float> px(size_t(pool_dims.input_elements()), 0.5f), py(size_t(pool_dims.output_elements()));
  std::vector<float> pdy(py.size(), 1.0f), pdx(px.size());
  ASSERT_EQ(convjit_runtime_conv_backward_data(r.runtime, &c, y.data(), w.data(), dx.data()), CONVJIT_OK);
  ASSERT_EQ(convjit_runtime_conv_backward_filter(r.runtime, &c, x.data(), y.data(), dw.data()), CONVJIT_OK);
  ASSERT_EQ(convjit_runtime_maxpool_forward(r.runtime, &pool, px.data(), py.data()), CONVJIT_OK);
  ASSERT_EQ(convjit_runtime_meanpool_forward(r.runtime, &pool, px.data(), py.data()), CONVJIT_OK);
  ASSERT_EQ(convjit_runtime_lpnormpool_forward(r.runtime, &pool, 2.0f, px.data(), py.data()), CONVJIT_OK);
  ASSERT_EQ(convjit_runtime_maxpool_backward(r.runtime, &pool, px.data(), py.data(), pdy.data(), pdx.data()),
            CONVJIT_OK);
  ASSERT_EQ(convjit_runtime_meanpool_backward(r.runtime, &pool, pdy.data(), pdx.data()), CONVJIT_OK);
  ASSERT_EQ(convjit_runtime_lpnormpool_backward(r.runtime, &pool, 2.0f, px.data(), py.data(), pdy.data(), pdx.data()),
            CONVJIT_OK);
  std::vector<int32_t> ops;
  for (const convjit_config_stats& s : config_stats(r.runtime)) {
    ops.push_back(s.op);
    EXPECT_EQ(s.calls_generic + s.calls_jit, 1) << s.op;
    if (s.op >= CONVJIT_OP_MAXPOOL_FORWARD) {
      EXPECT_EQ(std::memcmp(&s.pool_params, &pool, sizeof pool), 0) << "pool params as given, op " << s.op;
      EXPECT_EQ(s.p, s.op == CONVJIT_OP_LPNORMPOOL_FORWARD || s.op == CONVJIT_OP_LPNORMPOOL_BACKWARD ? 2.0f : 0.0f);
    } else {
      EXPECT_EQ(std::memcmp(&s.params, &c, sizeof c), 0) << "conv params as given, op " << s.op;
    }
  }
  std::sort(ops.begin(), ops.end());
  EXPECT_EQ(ops, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}));

  // A NULL runtime is refused by each, naming it, and nothing is written.
  std::vector<float> untouched(px.size(), -3.0f);
  EXPECT_EQ(convjit_runtime_meanpool_backward(nullptr, &pool, pdy.data(), untouched.data()), CONVJIT_EINVAL);
  EXPECT_TRUE(contains_word(convjit_last_error(), "runtime")) << convjit_last_error();
  EXPECT_EQ(untouched, std::vector<float>(px.size(), -3.0f));
  EXPECT_EQ(convjit_runtime_conv_backward_filter(nullptr, &c, x.data(), y.data(), dw.data()), CONVJIT_EINVAL);
}

TEST(CApiRuntime, BadInputsAreRejectedWithAMessage) {
  auto expect_invalid = [](convjit_status status, const std::string& word, const std::string& what) {
    EXPECT_EQ(status, CONVJIT_EINVAL) << what;
    const std::string message = convjit_last_error();
    EXPECT_TRUE(contains_word(message, word)) << what << ": message '" << message << "' does not name " << word;
  };
  convjit_runtime* const sentinel = reinterpret_cast<convjit_runtime*>(uintptr_t(0x1234));
  convjit_runtime* runtime = sentinel;

  expect_invalid(convjit_runtime_create(nullptr, &runtime), "policy", "NULL policy");
  EXPECT_EQ(runtime, sentinel);
  const convjit_policy good = c_policy(2, 0);
  expect_invalid(convjit_runtime_create(&good, nullptr), "runtime", "NULL runtime out");

  struct BadPolicy {
    const char* field;
    convjit_policy policy;
  };
  std::vector<BadPolicy> bad;
  for (int64_t threshold : {int64_t(-1), int64_t(-1000), INT64_MIN}) {
    bad.push_back({"policy.hot_threshold", good});
    bad.back().policy.hot_threshold = threshold;
  }
  bad.push_back({"policy.num_threads", good});
  bad.back().policy.num_threads = -2;
  bad.push_back({"policy.max_configurations", good});
  bad.back().policy.max_configurations = 0;
  bad.push_back({"policy.code_budget_bytes", good});
  bad.back().policy.code_budget_bytes = -1;
  bad.push_back({"policy.backend", good});
  bad.back().policy.backend = 7;
  bad.push_back({"policy.backend", good});
  bad.back().policy.backend = -1;
  for (const BadPolicy& b : bad) {
    runtime = sentinel;
    expect_invalid(convjit_runtime_create(&b.policy, &runtime), b.field, b.field);
    EXPECT_EQ(runtime, sentinel) << b.field << ": *runtime written on error";
  }
  // The value is in the message too.
  runtime = sentinel;
  convjit_policy negative = good;
  negative.hot_threshold = -7;
  EXPECT_EQ(convjit_runtime_create(&negative, &runtime), CONVJIT_EINVAL);
  EXPECT_NE(std::string(convjit_last_error()).find("-7"), std::string::npos) << convjit_last_error();

  CRuntime r;
  ASSERT_EQ(convjit_runtime_create(&good, &r.runtime), CONVJIT_OK) << convjit_last_error();
  EXPECT_STREQ(convjit_last_error(), "");

  const ConvDims dims = tier_shape();
  const Problem p(dims, 0xCA03, false, Activation::Identity);
  const convjit_conv_params params = c_params(dims);
  std::vector<float> y = sentinel_buffer(size_t(p.outputs()));
  expect_invalid(convjit_runtime_conv_forward(nullptr, &params, p.x.data(), p.w.data(), nullptr, 0, y.data()),
                 "runtime", "NULL runtime");
  expect_invalid(convjit_runtime_conv_forward(r.runtime, nullptr, p.x.data(), p.w.data(), nullptr, 0, y.data()),
                 "params", "NULL params");
  expect_invalid(convjit_runtime_conv_forward(r.runtime, &params, nullptr, p.w.data(), nullptr, 0, y.data()), "x",
                 "NULL x");
  expect_invalid(convjit_runtime_conv_forward(r.runtime, &params, p.x.data(), nullptr, nullptr, 0, y.data()), "w",
                 "NULL w");
  expect_invalid(convjit_runtime_conv_forward(r.runtime, &params, p.x.data(), p.w.data(), nullptr, 0, nullptr), "y",
                 "NULL y");
  expect_invalid(convjit_runtime_conv_forward(r.runtime, &params, p.x.data(), p.w.data(), nullptr, 2, y.data()),
                 "activation", "activation 2");
  for (const BadConvCase& bc : bad_conv_cases()) {
    const convjit_conv_params bad_params = c_params(bc.dims);
    EXPECT_EQ(convjit_runtime_conv_forward(r.runtime, &bad_params, p.x.data(), p.w.data(), nullptr, 0, y.data()),
              CONVJIT_EINVAL)
        << bc.name;
    const std::string message = convjit_last_error();
    for (const std::string& word : bc.message_words) {
      EXPECT_NE(message.find(word), std::string::npos) << bc.name << ": '" << message << "' lacks " << word;
    }
    // The same message as the runtime-less entry point gives.
    EXPECT_EQ(convjit_conv_forward(&bad_params, p.x.data(), p.w.data(), nullptr, 0, y.data()), CONVJIT_EINVAL);
    EXPECT_EQ(message, convjit_last_error()) << bc.name;
  }
  EXPECT_TRUE(holds_sentinel(y)) << "y written by a rejected call";
  // Rejected calls are not configurations and count no calls.
  convjit_runtime_totals totals;
  ASSERT_EQ(convjit_runtime_get_totals(r.runtime, &totals), CONVJIT_OK);
  EXPECT_EQ(totals.configurations, 0);
  EXPECT_EQ(totals.calls_generic + totals.calls_jit, 0);

  expect_invalid(convjit_runtime_get_totals(nullptr, &totals), "runtime", "totals of NULL runtime");
  expect_invalid(convjit_runtime_get_totals(r.runtime, nullptr), "totals", "NULL totals");
  int64_t count = 99;
  convjit_config_stats one;
  expect_invalid(convjit_runtime_get_config_stats(nullptr, &one, 1, &count), "runtime", "stats of NULL runtime");
  expect_invalid(convjit_runtime_get_config_stats(r.runtime, nullptr, 1, &count), "out", "NULL out, capacity 1");
  expect_invalid(convjit_runtime_get_config_stats(r.runtime, &one, 1, nullptr), "count", "NULL count");
  EXPECT_EQ(count, 99) << "count written on error";
  expect_invalid(convjit_runtime_wait(nullptr), "runtime", "wait on NULL runtime");

  // Errors do not stick: a good call clears the message.
  EXPECT_EQ(convjit_runtime_conv_forward(r.runtime, &params, p.x.data(), p.w.data(), nullptr, 0, y.data()), CONVJIT_OK);
  EXPECT_STREQ(convjit_last_error(), "");
  EXPECT_TRUE(p.matches_reference(y, "y after the errors"));

  // Destroying NULL or the process default is a no-op; the default stays usable.
  convjit_runtime_destroy(nullptr);
  convjit_runtime* process_default = convjit_default_runtime();
  ASSERT_NE(process_default, nullptr);
  convjit_runtime_destroy(process_default);
  EXPECT_EQ(convjit_default_runtime(), process_default);
  EXPECT_EQ(convjit_runtime_get_totals(process_default, &totals), CONVJIT_OK) << convjit_last_error();
}

}  // namespace
}  // namespace convjit::testing::jit
