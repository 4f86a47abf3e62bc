// lib/threads/threads.cpp: the thread-count knob, and results that do not depend on it. Forward ops
// compute each output in one thread, so 1 and 2 threads must agree bit for bit; backward
// filter reduces over the batch and the image, so thread count may change the rounding and is
// held to the usual tolerance (and to the oracle).
#include <gtest/gtest.h>

#include <cstdlib>

#include "convjit/convjit.h"
#include "convjit/ops.hpp"
#include "convjit/runtime.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

// Restores the default thread count when a test ends, passing or not.
struct ThreadCountGuard {
  ~ThreadCountGuard() { set_num_threads(0); }
};

TEST(Threads, SetAndGet) {
  ThreadCountGuard guard;
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
  set_num_threads(2);
  EXPECT_EQ(num_threads(), 2);
  EXPECT_EQ(convjit_get_num_threads(), 2);
  EXPECT_EQ(convjit_set_num_threads(1), CONVJIT_OK);
  EXPECT_EQ(num_threads(), 1);
  set_num_threads(0);  // the default
  EXPECT_GE(num_threads(), 1);
}

TEST(Threads, NegativeCountIsRejected) {
  ThreadCountGuard guard;
  set_num_threads(2);
  try {
    set_num_threads(-1);
    ADD_FAILURE() << "set_num_threads(-1) did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CONVJIT_EINVAL);
  }
  EXPECT_EQ(convjit_set_num_threads(-3), CONVJIT_EINVAL);
  EXPECT_NE(std::string(convjit_last_error()), "");
  EXPECT_EQ(num_threads(), 2);  // unchanged
}

// The default honours CONVJIT_NUM_THREADS (registered a second time in CMake with it set).
TEST(Threads, DefaultComesFromTheEnvironment) {
  ThreadCountGuard guard;
  set_num_threads(0);
  const char* env = std::getenv("CONVJIT_NUM_THREADS");
  if (env != nullptr && std::atoi(env) > 0) {
    EXPECT_EQ(num_threads(), std::atoi(env));
  } else {
    EXPECT_GE(num_threads(), 1);
  }
}

std::vector<ConvDims> thread_shapes() {
  std::vector<ConvDims> shapes = larger_conv_shapes();
  const std::vector<ConvDims> random = random_conv_sweep(0x7777, 24);
  shapes.insert(shapes.end(), random.begin(), random.end());
  return shapes;
}

struct ConvResults {
  std::vector<float> y, dx, dw;
};

// On a runtime that gives every call all its threads (the adapting default runs small
// convolutions on one).
ConvResults run_conv(const ConvDims& d, int threads, uint64_t seed) {
  Policy policy = Policy::from_environment();
  policy.num_threads = threads;
  policy.adapt_threads = false;
  Runtime runtime(policy);
  Rng rng(seed);
  const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
  const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
  const std::vector<float> bias = random_floats(rng, d.out_channels);
  const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(d));
  ConvResults r{nan_buffer(int64_t(dy.size())), nan_buffer(int64_t(x.size())), nan_buffer(int64_t(w.size()))};
  runtime.conv_forward(d, x.data(), w.data(), bias.data(), Activation::Relu, r.y.data());
  runtime.conv_backward_data(d, dy.data(), w.data(), r.dx.data());
  runtime.conv_backward_filter(d, x.data(), dy.data(), r.dw.data());
  return r;
}

TEST(Threads, ConvForwardIsBitwiseIndependentOfThreadCount) {
  const std::vector<ConvDims> shapes = thread_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ConvResults one = run_conv(shapes[i], 1, case_seed(0x7001, i));
    const ConvResults two = run_conv(shapes[i], 2, case_seed(0x7001, i));
    EXPECT_TRUE(bitwise_equal("y, 1 vs 2 threads", one.y, two.y, conv_output_shape(shapes[i]), describe(shapes[i])));
  }
}

TEST(Threads, ConvBackwardAgreesAcrossThreadCounts) {
  const std::vector<ConvDims> shapes = thread_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ConvDims& d = shapes[i];
    const ConvResults one = run_conv(d, 1, case_seed(0x7002, i));
    const ConvResults two = run_conv(d, 2, case_seed(0x7002, i));
    int64_t taps = 1, out_pixels = 1;
    const Extent out = ref::conv_output_size(d);
    for (int k = 0; k < d.rank; ++k) {
      taps *= d.kernel[k];
      out_pixels *= out[k];
    }
    EXPECT_TRUE(all_close("dx, 2 vs 1 threads", two.dx.data(), to_double(one.dx), conv_input_shape(d),
                          (d.out_channels / d.groups) * taps, describe(d)));
    EXPECT_TRUE(all_close("dw, 2 vs 1 threads", two.dw.data(), to_double(one.dw), conv_weight_shape(d),
                          d.batch * out_pixels, describe(d)));
  }
}

// More threads than work items (batch 1, a single output row) must still cover everything.
TEST(Threads, MoreThreadsThanWork) {
  ThreadCountGuard guard;
  ConvDims d;
  d.rank = 1;
  d.in_channels = 3;
  d.out_channels = 1;
  d.in_size = {4, 1, 1};
  d.kernel = {4, 1, 1};
  for (int threads : {1, 2, 7}) {
    set_num_threads(threads);
    Rng rng(0x7003);
    const std::vector<float> x = random_floats(rng, ref::conv_input_elements(d));
    const std::vector<float> w = random_floats(rng, ref::conv_weight_elements(d));
    std::vector<float> y = nan_buffer(1), dx = nan_buffer(int64_t(x.size())), dw = nan_buffer(int64_t(w.size()));
    conv_forward(d, x.data(), w.data(), y.data());
    conv_backward_data(d, y.data(), w.data(), dx.data());
    conv_backward_filter(d, x.data(), y.data(), dw.data());
    const std::string context = describe(d) + " threads=" + std::to_string(threads);
    EXPECT_TRUE(all_close("y", y.data(), ref::conv_forward(d, x.data(), w.data(), nullptr, Activation::Identity),
                          conv_output_shape(d), 12, context));
    EXPECT_TRUE(all_close("dx", dx.data(), ref::conv_backward_data(d, y.data(), w.data()), conv_input_shape(d), 4,
                          context));
    EXPECT_TRUE(all_close("dw", dw.data(), ref::conv_backward_filter(d, x.data(), y.data()), conv_weight_shape(d), 1,
                          context));
  }
}

TEST(Threads, PoolingAgreesAcrossThreadCounts) {
  ThreadCountGuard guard;
  std::vector<PoolDims> shapes = larger_pool_shapes();
  const std::vector<PoolDims> random = random_pool_sweep(0x7004, 24);
  shapes.insert(shapes.end(), random.begin(), random.end());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const PoolDims& d = shapes[i];
    std::vector<std::vector<float>> results[2];
    for (int t = 0; t < 2; ++t) {
      set_num_threads(t + 1);
      Rng rng(case_seed(0x7004, i));
      const std::vector<float> x = random_small_integers(rng, ref::pool_input_elements(d), -3, 3);
      const std::vector<float> dy = random_floats(rng, ref::pool_output_elements(d));
      std::vector<float> y_max = nan_buffer(int64_t(dy.size())), y_mean = y_max, y_lp = y_max;
      std::vector<float> dx_max = nan_buffer(int64_t(x.size())), dx_mean = dx_max, dx_lp = dx_max;
      maxpool_forward(d, x.data(), y_max.data());
      meanpool_forward(d, x.data(), y_mean.data());
      lpnormpool_forward(d, 2.0f, x.data(), y_lp.data());
      maxpool_backward(d, x.data(), y_max.data(), dy.data(), dx_max.data());
      meanpool_backward(d, dy.data(), dx_mean.data());
      lpnormpool_backward(d, 2.0f, x.data(), y_lp.data(), dy.data(), dx_lp.data());
      results[t] = {y_max, y_mean, y_lp, dx_max, dx_mean, dx_lp};
    }
    const char* names[] = {"max y", "mean y", "lp y", "max dx", "mean dx", "lp dx"};
    int64_t window = 1;
    for (int k = 0; k < d.rank; ++k) window *= d.window[k];
    for (int k = 0; k < 3; ++k) {  // forward: bitwise
      EXPECT_TRUE(bitwise_equal(names[k], results[0][k], results[1][k], pool_output_shape(d), describe(d)));
    }
    for (int k = 3; k < 6; ++k) {  // backward: overlapping windows may accumulate in another order
      EXPECT_TRUE(all_close(names[k], results[1][k].data(), to_double(results[0][k]), pool_input_shape(d), window,
                            describe(d)));
    }
  }
}

}  // namespace
}  // namespace convjit::testing
