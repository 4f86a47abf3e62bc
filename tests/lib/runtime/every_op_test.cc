// Every op goes through the runtime (lib/runtime/dispatch.cpp): each is counted as a configuration
// of its own op, timed, moved out of "cold" at the hot threshold (backward data with stride 1 to
// the JIT tier as a forward convolution, NHWC backward filter and max and mean pooling to their
// compiled rows, the ops and layouts no backend compiles to "declined", saying why),
// runs with the runtime's own thread count, and gives the oracle's result with the same bits on
// every tier and thread count. Bad input is refused before the op is counted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "convjit/runtime.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

// One call of one op on random inputs: what it computes on a runtime, and the oracle's result.
struct OpCall {
  Op op;
  ConvDims conv;
  PoolDims pool;
  float p = 0;
  std::vector<float> a, b, c;  // the op's inputs, in its argument order
  std::vector<double> want;
  TensorShape out_shape;
  int64_t reduction = 1;  // terms per output, for the tolerance
  std::string context;

  std::vector<float> run(Runtime& r) const {
    std::vector<float> out = nan_buffer(out_shape.elements());
    switch (op) {
      case Op::ConvForward: r.conv_forward(conv, a.data(), b.data(), nullptr, Activation::Identity, out.data()); break;
      case Op::ConvBackwardData: r.conv_backward_data(conv, a.data(), b.data(), out.data()); break;
      case Op::ConvBackwardFilter: r.conv_backward_filter(conv, a.data(), b.data(), out.data()); break;
      case Op::MaxPoolForward: r.maxpool_forward(pool, a.data(), out.data()); break;
      case Op::MeanPoolForward: r.meanpool_forward(pool, a.data(), out.data()); break;
      case Op::LpNormPoolForward: r.lpnormpool_forward(pool, p, a.data(), out.data()); break;
      case Op::MaxPoolBackward: r.maxpool_backward(pool, a.data(), b.data(), c.data(), out.data()); break;
      case Op::MeanPoolBackward: r.meanpool_backward(pool, c.data(), out.data()); break;
      case Op::LpNormPoolBackward: r.lpnormpool_backward(pool, p, a.data(), b.data(), c.data(), out.data()); break;
    }
    return out;
  }
};

OpCall conv_call(Op op, const ConvDims& d, uint64_t seed) {
  Rng rng(seed);
  OpCall call{op, d, {}, 0, {}, {}, {}, {}, {}, 1, describe(d)};
  int64_t taps = 1;
  for (int k = 0; k < d.rank; ++k) taps *= d.kernel[k];
  if (op == Op::ConvBackwardData) {
    call.a = random_floats(rng, ref::conv_output_elements(d));
    call.b = random_floats(rng, ref::conv_weight_elements(d));
    call.want = ref::conv_backward_data(d, call.a.data(), call.b.data());
    call.out_shape = conv_input_shape(d);
    call.reduction = d.out_channels / d.groups * taps;
  } else {
    call.a = random_floats(rng, ref::conv_input_elements(d));
    call.b = random_floats(rng, ref::conv_output_elements(d));
    call.want = ref::conv_backward_filter(d, call.a.data(), call.b.data());
    call.out_shape = conv_weight_shape(d);
    call.reduction = ref::conv_output_elements(d) / d.out_channels;
  }
  return call;
}

OpCall pool_call(Op op, const PoolDims& d, uint64_t seed) {
  Rng rng(seed);
  OpCall call{op, {}, d, 3.0f, {}, {}, {}, {}, {}, 1, describe(d)};
  call.a = random_floats(rng, ref::pool_input_elements(d));
  for (float& v : call.a) v = v < 0 ? v - 0.05f : v + 0.05f;  // |x| >= 0.05: Lp gradients stay finite
  for (int k = 0; k < d.rank; ++k) call.reduction *= d.window[k];
  switch (op) {
    case Op::MaxPoolForward: call.want = ref::maxpool_forward(d, call.a.data()); break;
    case Op::MeanPoolForward: call.want = ref::meanpool_forward(d, call.a.data()); break;
    case Op::LpNormPoolForward: call.want = ref::lpnormpool_forward(d, call.p, call.a.data()); break;
    default: {
      const std::vector<double> y = op == Op::LpNormPoolBackward ? ref::lpnormpool_forward(d, call.p, call.a.data())
                                                                 : ref::maxpool_forward(d, call.a.data());
      call.b = to_float(y);
      call.c = random_floats(rng, ref::pool_output_elements(d));
      if (op == Op::MaxPoolBackward) call.want = ref::maxpool_backward(d, call.a.data(), call.b.data(), call.c.data());
      if (op == Op::MeanPoolBackward) call.want = ref::meanpool_backward(d, call.c.data());
      if (op == Op::LpNormPoolBackward) {
        call.want = ref::lpnormpool_backward(d, call.p, call.a.data(), call.b.data(), call.c.data());
      }
    }
  }
  call.out_shape =
      is_pool(call.op) && (op == Op::MaxPoolForward || op == Op::MeanPoolForward || op == Op::LpNormPoolForward)
          ? pool_output_shape(d)
          : pool_input_shape(d);
  return call;
}

// Backward data with stride > 1 and dilation > 1 (no phases), backward filter and Lp-norm pooling
// forward and backward (no compiled kernels), on random problems of each rank and layout.
std::vector<OpCall> tier0_calls() {
  std::vector<OpCall> calls;
  Rng rng(0xE0E0);
  for (int32_t rank = 1; rank <= 3; ++rank) {
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
      ConvDims d = random_conv(rng, rank, layout, rank == 2 ? Mode::Convolution : Mode::CrossCorrelation);
      if (layout == Layout::NCHW) calls.push_back(conv_call(Op::ConvBackwardFilter, d, rng.next()));  // NHWC compiles
      d.stride[0] = 2;  // not run as a forward: strided and dilated along one dim
      d.dilation[0] = 2;
      calls.push_back(conv_call(Op::ConvBackwardData, d, rng.next()));
      const PoolDims pool = random_pool(rng, rank, layout);
      for (Op op : {Op::LpNormPoolForward, Op::LpNormPoolBackward}) {
        calls.push_back(pool_call(op, pool, rng.next()));
      }
    }
  }
  return calls;
}

Policy policy_with(Backend backend, int threads) {
  Policy p;
  p.backend = backend;
  p.hot_threshold = 2;
  p.async = false;
  p.num_threads = threads;
  p.adapt_threads = false;  // every call on them (the default may run a call on one)
  return p;
}

// Three calls of `call` on a runtime of `threads` threads that compiles inline at the second:
// each result the generic runtime's bits (and the generic one near the oracle's values), all three
// counted under the call's op. Returns the one configuration's stats.
ConfigStats three_calls_as_generic(Runtime& generic, const OpCall& call, int threads) {
  SCOPED_TRACE(call.context);
  const std::vector<float> want = call.run(generic);
  EXPECT_TRUE(all_close("generic", want.data(), call.want, call.out_shape, call.reduction, call.context));
  Runtime r(policy_with(Backend::Auto, threads));
  for (int n = 0; n < 3; ++n) EXPECT_TRUE(bitwise_equal("runtime", call.run(r), want, call.out_shape, call.context));
  const RuntimeStats s = r.stats();
  EXPECT_EQ(s.configurations.size(), 1u);
  if (s.configurations.empty()) return {};
  const ConfigStats& c = s.configurations[0];
  EXPECT_EQ(c.op, call.op);
  EXPECT_EQ(c.calls_generic + c.calls_jit, 3);
  return c;
}

TEST(EveryOp, IsCountedDeclinedWhenHotAndBitwiseOnEveryThreadCount) {
  Runtime generic(policy_with(Backend::None, 1));
  for (const OpCall& call : tier0_calls()) {
    const std::string op = op_name(call.op);
    SCOPED_TRACE(op + " " + call.context);
    const std::vector<float> want = call.run(generic);
    ASSERT_TRUE(all_close("generic", want.data(), call.want, call.out_shape, call.reduction, call.context));
    for (int threads : {1, 2, 3}) {
      Runtime r(policy_with(Backend::Auto, threads));
      EXPECT_TRUE(bitwise_equal("first call", call.run(r), want, call.out_shape, call.context));
      RuntimeStats s = r.stats();
      ASSERT_EQ(s.configurations.size(), 1u);
      EXPECT_EQ(s.configurations[0].op, call.op);
      EXPECT_EQ(s.configurations[0].state, "cold");
      EXPECT_EQ(s.configurations[0].calls_generic, 1);
      EXPECT_GE(s.configurations[0].first_call_us, 0);
      EXPECT_GT(s.configurations[0].mean_ns_generic, 0) << "a tier's first call is timed";
      for (int i = 0; i < 2; ++i) EXPECT_TRUE(bitwise_equal("hot", call.run(r), want, call.out_shape, call.context));
      s = r.stats();
      ASSERT_EQ(s.configurations.size(), 1u);
      const ConfigStats& c = s.configurations[0];
      EXPECT_EQ(c.calls_generic, 3);
      EXPECT_EQ(c.calls_jit, 0);
      if (s.backend == "none") {
        EXPECT_EQ(c.state, "cold") << "without a backend nothing turns hot";
        continue;
      }
      EXPECT_EQ(c.state, "declined");
      EXPECT_NE(c.failure.find(op), std::string::npos) << "the reason names the op: " << c.failure;
      EXPECT_GE(c.hot_us, c.first_call_us);
      if (is_pool(call.op)) {
        PoolDims as_called = call.pool;  // the stats hold a stride of 0 ("the window") as the window
        for (int k = 0; k < as_called.rank; ++k) {
          if (as_called.stride[size_t(k)] == 0) as_called.stride[size_t(k)] = as_called.window[size_t(k)];
        }
        EXPECT_EQ(describe(c.pool_dims), describe(as_called));
        EXPECT_EQ(c.p, call.op == Op::LpNormPoolForward || call.op == Op::LpNormPoolBackward ? call.p : 0.0f);
      } else {
        EXPECT_EQ(describe(c.dims), describe(call.conv));
      }
    }
  }
}

// Backward data d, called four times on a runtime that compiles inline: counted as itself, the
// second call hot, the rest on the compiled forward kernel named kernel_prefix..., every call the
// generic tier's bits and near the oracle.
void expect_backward_data_on_forward_kernel(const ConvDims& d, uint64_t seed, const std::string& kernel_prefix) {
  Runtime generic(policy_with(Backend::None, 1));
  Runtime r(policy_with(Backend::Auto, 1));
  const OpCall call = conv_call(Op::ConvBackwardData, d, seed);
  const std::vector<float> want = call.run(generic);
  EXPECT_TRUE(all_close("generic", want.data(), call.want, call.out_shape, call.reduction, call.context));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(bitwise_equal("call", call.run(r), want, call.out_shape, call.context));
  const RuntimeStats s = r.stats();
  if (s.backend == "none") GTEST_SKIP() << "no JIT backend on this host: " << s.backend_unavailable_reason;
  ASSERT_EQ(s.configurations.size(), 1u);
  const ConfigStats& c = s.configurations[0];
  EXPECT_EQ(c.op, Op::ConvBackwardData);
  EXPECT_EQ(describe(c.dims), describe(d)) << "the dims as called, not the forward's";
  EXPECT_EQ(c.state, "jit") << c.failure;
  EXPECT_EQ(c.kernel.rfind(kernel_prefix, 0), 0u) << c.kernel;
  EXPECT_EQ(c.calls_generic, 1) << "the second call is hot, compiles inline and runs the kernel";
  EXPECT_EQ(c.calls_jit, 3);
}

// Stride-1 backward data is counted as itself and runs the forward kernel it is rewritten to.
// NHWC's compiled kernels pack their blocks from the backward weights in place (groups, blocks
// with a tail), and rows shorter than the kernel's smallest row (4 pixels: AVX-512's take 6) go to
// the generic tile on rows formed from them: the generic tier's bits either way. An NCHW problem
// of short rows and many channels runs as the forward's NHWC twin, its kernel packing from the
// problem's OIHW weights in place.
TEST(EveryOp, StrideOneBackwardDataReachesTheJitTierAsItself) {
  expect_backward_data_on_forward_kernel(
      conv(2, Layout::NCHW, 2, 8, 12, 1, {16, 19, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}), 0xB0D5,
      "conv2d_fwd_f32_k3x3_s1");
  expect_backward_data_on_forward_kernel(
      conv(2, Layout::NHWC, 2, 80, 24, 2, {9, 11, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, {1, 1, 1}, Mode::Convolution),
      0xB0D6, "conv2d_fwd_f32_k3x3_s1_nhwc");
  expect_backward_data_on_forward_kernel(
      conv(2, Layout::NHWC, 1, 80, 24, 2, {7, 4, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}), 0xB0D8,
      "conv2d_fwd_f32_k3x3_s1_nhwc");
  expect_backward_data_on_forward_kernel(
      conv(2, Layout::NCHW, 1, 80, 48, 2, {7, 7, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, {1, 1, 1}, Mode::Convolution),
      0xB0D9, "conv2d_fwd_f32_k3x3_s1_nhwc");
}

// A 1x1 kernel with stride > 1 (ResNet's downsampling shortcut): backward data runs as a 1x1
// forward into the strided inputs, on the JIT tier once hot; every tier the generic one's bits
// and the oracle's values, with padding, groups, both layouts and every rank.
TEST(EveryOp, StridedPointwiseBackwardDataRunsAsAForwardOnEveryTier) {
  Runtime generic(policy_with(Backend::None, 1));
  Rng rng(0xB0D7);
  int compiled = 0;
  for (int i = 0; i < 24; ++i) {
    const int32_t rank = 1 + i % 3;
    ConvDims d = random_conv(rng, rank, i % 2 ? Layout::NHWC : Layout::NCHW, Mode::CrossCorrelation);
    for (int k = 0; k < rank; ++k) {
      d.kernel[size_t(k)] = 1;
      d.dilation[size_t(k)] = 1;
      d.stride[size_t(k)] = 1 + (k + i) % 3;
      d.pad_begin[size_t(k)] = (i / 2) % 2;
      d.pad_end[size_t(k)] = 0;
      d.in_size[size_t(k)] += 4;
    }
    d.stride[0] = 2;  // at least one stride above 1
    compiled +=
        three_calls_as_generic(generic, conv_call(Op::ConvBackwardData, d, rng.next()), 1 + i % 2).calls_jit > 0;
  }
  if (Runtime(policy_with(Backend::Auto, 1)).stats().backend != "none") {
    EXPECT_GT(compiled, 0) << "no strided pointwise backward data reached a compiled kernel";
  }
}

// Backward data with stride > 1 runs as the stride-1 forwards of its phases, on the JIT tier once
// hot (a kernel per phase size): every tier the generic one's bits and the oracle's values, with
// kernels longer than the stride, padding, groups, dilation along unstrided dims, both layouts and
// every rank; counted once per call, as itself.
TEST(EveryOp, StridedBackwardDataRunsAsItsPhasesOnEveryTier) {
  Runtime generic(policy_with(Backend::None, 1));
  Rng rng(0xB0D9);
  int compiled = 0;
  for (int i = 0; i < 36; ++i) {
    const int32_t rank = 1 + i % 3;
    ConvDims d = random_conv(rng, rank, i % 2 ? Layout::NHWC : Layout::NCHW,
                             i % 4 < 2 ? Mode::CrossCorrelation : Mode::Convolution);
    for (int k = 0; k < rank; ++k) {
      const size_t at = size_t(k);
      d.stride[at] = 1 + (k + i) % 3;
      if (d.stride[at] > 1) {
        d.dilation[at] = 1;
        d.kernel[at] = d.stride[at] + (i / 3 + k) % 3;
      }
      d.pad_begin[at] = std::min<int64_t>((i / 2 + k) % 3, (d.kernel[at] - 1) * d.dilation[at]);
      d.pad_end[at] = std::min<int64_t>((i / 5 + k) % 2, (d.kernel[at] - 1) * d.dilation[at]);
      d.in_size[at] += d.kernel[at] * d.dilation[at] + 4 * (rank - k);
    }
    d.stride[size_t(rank - 1)] = 2;  // along W at least
    d.dilation[size_t(rank - 1)] = 1;
    d.kernel[size_t(rank - 1)] = std::max<int64_t>(d.kernel[size_t(rank - 1)], 2);
    if (i % 6 == 5) d.in_size[size_t(rank - 1)] += 40;  // rows the compiled kernels take
    compiled +=
        three_calls_as_generic(generic, conv_call(Op::ConvBackwardData, d, rng.next()), 1 + i % 3).calls_jit > 0;
  }
  if (Runtime(policy_with(Backend::Auto, 1)).stats().backend != "none") {
    EXPECT_GE(compiled, 4) << "too few strided backward data problems reached a compiled kernel";
  }
}

// A 5x5 kernel with stride 2: phases of 3x3, 3x2, 2x3 and 2x2 taps (each its real taps only), a
// compiled kernel for each size. The call is one configuration, phase 0's kernel in its row; the
// other sizes' slots are not configurations of their own.
TEST(EveryOp, StridedBackwardDataCompilesAKernelPerPhaseSize) {
  const ConvDims d = conv(2, Layout::NCHW, 2, 8, 12, 1, {37, 71, 1}, {5, 5, 1}, {2, 2, 1}, {2, 2, 0});
  expect_backward_data_on_forward_kernel(d, 0xB0DA, "conv2d_fwd_f32_k3x3_s1");
  Policy p = policy_with(Backend::Auto, 1);
  p.decline_slower = false;  // every size compiled, whichever tier would win
  Runtime r(p);
  const OpCall call = conv_call(Op::ConvBackwardData, d, 0xB0DA);
  for (int i = 0; i < 3; ++i) call.run(r);
  const RuntimeStats s = r.stats();
  if (s.backend == "none") GTEST_SKIP() << "no JIT backend on this host: " << s.backend_unavailable_reason;
  EXPECT_EQ(s.configurations.size(), 1u);
  EXPECT_EQ(s.kernels, 4) << "a kernel per phase size: 3x3, 3x2, 2x3, 2x2";
  EXPECT_EQ(s.compiles, 4);
}

// NCHW backward data whose forwards run as their NHWC twins (short rows that a 7x7 kernel, or a
// phase's 4x4 one, would make over a fifth junk when flattened): the twin's compiled kernel, the
// generic tier's bits on 1 and 3 threads.
TEST(EveryOp, NchwBackwardDataRunsItsForwardsAsNhwcTwins) {
  const ConvDims stride_one = conv(2, Layout::NCHW, 1, 48, 48, 1, {14, 14, 1}, {7, 7, 1}, {1, 1, 1}, {3, 3, 0});
  const ConvDims phased = conv(2, Layout::NCHW, 2, 64, 64, 1, {22, 22, 1}, {8, 8, 1}, {2, 2, 1}, {3, 3, 0});
  expect_backward_data_on_forward_kernel(stride_one, 0xB0DB, "conv2d_fwd_f32_k7x7_s1_nhwc_flip");
  expect_backward_data_on_forward_kernel(phased, 0xB0DC, "conv2d_fwd_f32_k4x4_s1_nhwc");
  Runtime generic(policy_with(Backend::None, 1));
  three_calls_as_generic(generic, conv_call(Op::ConvBackwardData, stride_one, 0xB0DD), 3);
  three_calls_as_generic(generic, conv_call(Op::ConvBackwardData, phased, 0xB0DE), 3);
}

// The warm start compiles what backward data runs as, and the Xbyak backend's pooling and
// backward-filter rows and layout twins: a restarted runtime runs stride-1, strided pointwise and
// phased (strided) backward data, max pooling, NHWC backward filter and a strided NCHW forward
// (its NHWC twin) on compiled kernels from their first call.
TEST(EveryOp, WarmStartCompilesTheForwardsBackwardDataRunsAsAndTheRows) {
  char dir_template[] = "/tmp/convjit-every-op-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  Policy p = policy_with(Backend::Auto, 1);
  p.cache_dir = dir;
  const OpCall stride_one = conv_call(
      Op::ConvBackwardData, conv(2, Layout::NCHW, 2, 8, 12, 1, {16, 19, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}), 1);
  const OpCall pointwise =
      conv_call(Op::ConvBackwardData, conv(2, Layout::NHWC, 1, 16, 24, 1, {14, 13, 1}, {1, 1, 1}, {2, 2, 1}), 2);
  const OpCall phased = conv_call(Op::ConvBackwardData,
                                  conv(2, Layout::NHWC, 1, 16, 24, 1, {29, 31, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}), 3);
  PoolDims pool;
  pool.layout = Layout::NHWC;
  pool.channels = 24;
  pool.in_size = {20, 20, 1};
  pool.window = {3, 3, 1};
  pool.stride = {2, 2, 1};
  pool.pad_begin = pool.pad_end = {1, 1, 0};
  const OpCall maxpool = pool_call(Op::MaxPoolForward, pool, 4);
  const OpCall maxpool_backward = pool_call(Op::MaxPoolBackward, pool, 5);
  const OpCall filter =
      conv_call(Op::ConvBackwardFilter, conv(2, Layout::NHWC, 1, 16, 24, 1, {12, 13, 1}, {3, 3, 1}), 6);
  // Runs as its NHWC twin (lib/rewrite/nhwc_as_nchw.hpp), whose kernel only Xbyak compiles.
  const OpCall strided_nchw =
      conv_call(Op::ConvForward, conv(2, Layout::NCHW, 2, 32, 32, 1, {31, 29, 1}, {5, 3, 1}, {2, 2, 1}, {2, 1, 0}), 7);
  std::string backend;
  {
    Runtime first(p);
    backend = first.stats().backend;
    for (int i = 0; i < 3; ++i) {
      stride_one.run(first);
      pointwise.run(first);
      phased.run(first);
      if (backend == "xbyak") {
        maxpool.run(first);
        maxpool_backward.run(first);
        filter.run(first);
        strided_nchw.run(first);
      }
    }
  }
  if (backend == "none") GTEST_SKIP() << "no JIT backend on this host: nothing is saved";
  Runtime second(p);
  second.wait_for_compiles();
  const int64_t warm_compiles = second.stats().compiles;
  stride_one.run(second);
  pointwise.run(second);
  for (int i = 0; i < 2; ++i) phased.run(second);  // hot at the second: nothing left to compile
  if (backend == "xbyak") {
    maxpool.run(second);
    maxpool_backward.run(second);
    filter.run(second);
    strided_nchw.run(second);
  }
  const RuntimeStats s = second.stats();
  EXPECT_EQ(s.compiles, warm_compiles) << "the phased call's kernels for its other phase sizes came back too";
  ASSERT_EQ(s.configurations.size(), backend == "xbyak" ? 7u : 3u);
  for (const ConfigStats& c : s.configurations) {
    EXPECT_EQ(c.state, "jit") << op_name(c.op);
    EXPECT_EQ(c.calls_generic, 0) << op_name(c.op) << ": calls before its kernel arrived";
  }
  std::remove((dir + "/hot-configurations").c_str());
  rmdir(dir.c_str());
}

// Max and mean pooling, forward and backward, reach the JIT tier (Xbyak's NHWC rows; NCHW through
// its NHWC twin) where a window lies wholly inside the input, and are declined with the reason
// where none does; every tier the generic one's bits and the oracle's values.
TEST(EveryOp, MaxAndMeanPoolingReachTheJitTier) {
  Runtime generic(policy_with(Backend::None, 1));
  if (Runtime(policy_with(Backend::Auto, 1)).stats().backend != "xbyak") {
    GTEST_SKIP() << "only the Xbyak backend compiles pooling kernels";
  }
  Rng rng(0xB0DB);
  int compiled = 0;
  for (int i = 0; i < 24; ++i) {
    PoolDims d = random_pool(rng, int32_t(1 + i % 3), i % 2 ? Layout::NHWC : Layout::NCHW);
    for (int k = 0; k < d.rank; ++k) d.in_size[size_t(k)] += 5;
    for (Op op : {Op::MaxPoolForward, Op::MeanPoolForward, Op::MaxPoolBackward, Op::MeanPoolBackward}) {
      const OpCall call = pool_call(op, d, rng.next());
      SCOPED_TRACE(call.context);
      const ConfigStats c = three_calls_as_generic(generic, call, 1 + i % 3);
      if (c.state == "jit") {
        ++compiled;
        const bool max = op == Op::MaxPoolForward || op == Op::MaxPoolBackward;
        const bool backward = op == Op::MaxPoolBackward || op == Op::MeanPoolBackward;
        EXPECT_EQ(c.kernel.rfind(max ? "maxpool" : "meanpool", 0), 0u) << c.kernel;
        EXPECT_NE(c.kernel.find(backward ? "d_bwd_" : "d_fwd_"), std::string::npos) << c.kernel;
        EXPECT_EQ(c.calls_jit, 2) << "hot at the second call, compiled inline";
      } else {
        EXPECT_EQ(c.state, "declined");
        EXPECT_FALSE(c.failure.empty());
      }
    }
  }
  EXPECT_GE(compiled, 24) << "too few pooling problems reached a compiled kernel";
}

// NCHW max and mean pooling stays on tier 0's NCHW kernel where it beats the twin, declined with
// the reason: forward at W stride 2 on rows of a vector or more, padding along W or not; backward
// where 2-tap windows tile x, or with at most 8 channels, and mean over windows of whole rows.
// Elsewhere (stride 1, rows under a vector, overlapping windows over many channels) the NHWC
// twin's compiled rows run. Every tier the generic
// one's bits and the oracle's values.
TEST(EveryOp, NchwPoolingStaysOnTierZeroWhereItsKernelBeatsTheTwin) {
  Runtime generic(policy_with(Backend::None, 1));
  if (Runtime(policy_with(Backend::Auto, 1)).stats().backend != "xbyak") {
    GTEST_SKIP() << "only the Xbyak backend compiles pooling kernels";
  }
  Rng rng(0xC4B1);
  struct Case {
    int64_t channels, window_h, in_w, stride_w, pad_w;
    bool forward_tier0, backward_tier0;
  };
  // 16 outputs along W (a whole vector of 8 or of 16 lanes), or 7 (under a vector).
  for (const Case& k :
       {Case{9, 3, 33, 2, 0, true, false}, Case{9, 3, 17, 1, 0, false, false}, Case{9, 3, 31, 2, 1, true, false},
        Case{9, 3, 15, 2, 0, false, false}, Case{9, 2, 32, 2, 0, true, true}, Case{5, 3, 33, 2, 0, true, true}}) {
    PoolDims d;
    d.rank = 2;
    d.batch = 2;
    d.channels = k.channels;
    d.in_size = {12, k.in_w, 1};
    d.window = {k.window_h, 2, 1};
    d.stride = {2, k.stride_w, 1};
    d.pad_begin = {k.window_h == 3 ? 1 : 0, k.pad_w, 0};
    d.pad_end = d.pad_begin;
    for (Op op : {Op::MaxPoolForward, Op::MeanPoolForward, Op::MaxPoolBackward, Op::MeanPoolBackward}) {
      const OpCall call = pool_call(op, d, rng.next());
      SCOPED_TRACE(call.context);
      const ConfigStats c = three_calls_as_generic(generic, call, 2);
      const bool forward = op == Op::MaxPoolForward || op == Op::MeanPoolForward;
      if (forward ? k.forward_tier0 : k.backward_tier0) {
        EXPECT_EQ(c.state, "declined");
        EXPECT_EQ(c.failure, forward
                                 ? "NCHW forward at W stride 2 on rows of a vector or more: tier 0's NCHW vector kernel"
                                 : "NCHW backward with windows tiling x, or few channels: tier 0's NCHW vector kernel");
      } else {
        EXPECT_EQ(c.state, "jit") << c.failure;
        EXPECT_NE(c.kernel.find("_nhwc__"), std::string::npos) << c.kernel;
      }
    }
  }
  // Global pooling (windows of whole rows): forward and mean backward stay on tier 0's whole-rows
  // kernel, max backward runs the twin's compiled rows.
  PoolDims global;
  global.rank = 2;
  global.layout = Layout::NCHW;
  global.batch = 2;
  global.channels = 9;
  global.in_size = {5, 7, 1};
  global.window = {5, 7, 1};
  global.stride = {5, 7, 1};
  for (Op op : {Op::MaxPoolForward, Op::MeanPoolForward, Op::MaxPoolBackward, Op::MeanPoolBackward}) {
    const OpCall call = pool_call(op, global, rng.next());
    SCOPED_TRACE(call.context);
    const ConfigStats c = three_calls_as_generic(generic, call, 2);
    if (op == Op::MeanPoolBackward) {
      EXPECT_EQ(c.state, "declined");
      EXPECT_EQ(c.failure, "NCHW mean backward over windows of whole rows: tier 0's whole-rows kernel");
    } else if (op != Op::MaxPoolBackward) {
      EXPECT_EQ(c.state, "declined");
      EXPECT_EQ(c.failure, "NCHW forward over windows of whole rows: tier 0's whole-rows kernel");
    } else {
      EXPECT_EQ(c.state, "jit") << c.failure;
    }
  }
}

// Backward filter reaches the JIT tier (Xbyak's NHWC rows) on tier 0's register-tile problems, and
// is declined with the reason where tier 0 has its own kernel (depthwise, few channels: the direct
// kernel on the NCHW twin); every tier the generic one's bits and the oracle's values, for groups,
// padding, stride, dilation, both modes and every rank, and for few input channels.
TEST(EveryOp, BackwardFilterReachesTheJitTier) {
  Runtime generic(policy_with(Backend::None, 1));
  if (Runtime(policy_with(Backend::Auto, 1)).stats().backend != "xbyak") {
    GTEST_SKIP() << "only the Xbyak backend compiles backward-filter kernels";
  }
  Rng rng(0xB0DF);
  int compiled = 0, declined = 0;
  for (int i = 0; i < 24; ++i) {
    ConvDims d = random_conv(rng, int32_t(1 + i % 3), Layout::NHWC, i % 2 ? Mode::Convolution : Mode::CrossCorrelation);
    if (i % 4 != 3) {  // channels beyond the direct kernel's; every fourth problem as drawn
      d.in_channels = d.groups * (8 + i);
      d.out_channels = d.groups * (5 + 2 * i);
    }
    const OpCall call = conv_call(Op::ConvBackwardFilter, d, rng.next());
    SCOPED_TRACE(call.context);
    const ConfigStats c = three_calls_as_generic(generic, call, 1 + i % 3);
    if (c.state == "jit") {
      ++compiled;
      EXPECT_NE(c.kernel.find("d_bwd_filter_f32"), std::string::npos) << c.kernel;
      EXPECT_EQ(c.calls_jit, 2) << "hot at the second call, compiled inline";
    } else {
      ++declined;
      EXPECT_EQ(c.state, "declined");
      EXPECT_NE(c.failure.find("conv_bwd_filter"), std::string::npos) << c.failure;
    }
  }
  EXPECT_GE(compiled, 16) << "too few backward-filter problems reached a compiled kernel";
  EXPECT_GE(declined, 1) << "no problem kept tier 0's own kernel";
  // Three input channels (a network's first layer, here strided and padded): the output channels
  // in the lanes (a transposed plan), through the runtime.
  const ConvDims stem = conv(2, Layout::NHWC, 2, 3, 32, 1, {21, 23, 1}, {7, 7, 1}, {2, 2, 1}, {3, 3, 0});
  const ConfigStats c = three_calls_as_generic(generic, conv_call(Op::ConvBackwardFilter, stem, 0xB0E0), 2);
  EXPECT_EQ(c.state, "jit") << c.failure;
  EXPECT_NE(c.kernel.find("d_bwd_filter_f32_k7x7_s2_nhwc_c3to32"), std::string::npos) << c.kernel;
  // Depthwise with up to 16 taps (tier 0's channels-in-lanes kernel: a MobileNet-like 3x3 over 40
  // channels, padded, and a strided 3x5 over 24): the groups' channels in the lanes, tier 0's bits
  // (three_calls_as_generic compares them).
  const ConvDims depthwise[] = {
      conv(2, Layout::NHWC, 2, 40, 40, 40, {17, 19, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}),
      conv(2, Layout::NHWC, 1, 24, 24, 24, {15, 21, 1}, {3, 5, 1}, {2, 2, 1}, {1, 2, 0}, {1, 1, 1}, Mode::Convolution),
  };
  for (const ConvDims& d : depthwise) {
    const ConfigStats dw = three_calls_as_generic(generic, conv_call(Op::ConvBackwardFilter, d, 0xB0E2), 2);
    EXPECT_EQ(dw.state, "jit") << dw.failure;
    EXPECT_NE(dw.kernel.find("_dw" + std::to_string(d.groups) + "__"), std::string::npos) << dw.kernel;
  }
}

// NCHW backward filter runs as its NHWC twin on the compiled rows where the copies cost little
// next to its flops (enough outputs and channels), with the bits of NCHW's register tile; a layer
// whose copies would cost more stays on tier 0, saying why.
TEST(EveryOp, NchwBackwardFilterRunsAsItsNhwcTwinOnTheJitTier) {
  Runtime generic(policy_with(Backend::None, 1));
  if (Runtime(policy_with(Backend::Auto, 1)).stats().backend != "xbyak") {
    GTEST_SKIP() << "only the Xbyak backend compiles backward-filter kernels";
  }
  const ConvDims twins[] = {
      conv(2, Layout::NCHW, 2, 32, 48, 1, {24, 24, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}),
      conv(1, Layout::NCHW, 1, 32, 48, 1, {600, 1, 1}, {7, 1, 1}, {1, 1, 1}, {2, 0, 0}, {1, 1, 1}, Mode::Convolution),
      conv(3, Layout::NCHW, 1, 16, 32, 1, {6, 12, 12}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}),
      conv(2, Layout::NCHW, 2, 48, 64, 2, {28, 28, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, {2, 2, 1}, Mode::Convolution),
  };
  uint64_t seed = 0xB0E1;
  for (const ConvDims& d : twins) {
    const OpCall call = conv_call(Op::ConvBackwardFilter, d, seed++);
    SCOPED_TRACE(call.context);
    const ConfigStats c = three_calls_as_generic(generic, call, int(seed % 3) + 1);
    EXPECT_EQ(c.state, "jit") << c.failure;
    EXPECT_NE(c.kernel.find("d_bwd_filter_f32"), std::string::npos) << c.kernel;
    EXPECT_NE(c.kernel.find("_nhwc"), std::string::npos) << "the twin's kernel: " << c.kernel;
  }
  // Few outputs per weight: the weights' copy would cost more than the rows save.
  const OpCall small = conv_call(Op::ConvBackwardFilter, conv(2, Layout::NCHW, 1, 64, 64, 1, {7, 7, 1}, {3, 3, 1}), 7);
  const ConfigStats c = three_calls_as_generic(generic, small, 1);
  EXPECT_EQ(c.state, "declined");
  EXPECT_NE(c.failure.find("too costly"), std::string::npos) << c.failure;
}

// One problem as several ops is several configurations.
TEST(EveryOp, EachOpOfOneProblemIsItsOwnConfiguration) {
  Runtime r(policy_with(Backend::Auto, 1));
  const ConvDims d = conv(2, Layout::NCHW, 1, 3, 4, 1, {9, 9, 1}, {3, 3, 1});
  conv_call(Op::ConvBackwardData, d, 1).run(r);
  conv_call(Op::ConvBackwardFilter, d, 2).run(r);
  std::vector<float> y(size_t(ref::conv_output_elements(d)));
  const OpCall x = conv_call(Op::ConvBackwardFilter, d, 3);
  r.conv_forward(d, x.a.data(), std::vector<float>(size_t(ref::conv_weight_elements(d)), 0.5f).data(), nullptr,
                 Activation::Identity, y.data());
  std::vector<Op> ops;
  for (const ConfigStats& c : r.stats().configurations) ops.push_back(c.op);
  std::sort(ops.begin(), ops.end());
  EXPECT_EQ(ops, (std::vector<Op>{Op::ConvForward, Op::ConvBackwardData, Op::ConvBackwardFilter}));
}

TEST(EveryOp, BadInputIsRefusedBeforeItIsCounted) {
  Runtime r(policy_with(Backend::Auto, 1));
  for (const OpCall& call : tier0_calls()) {
    SCOPED_TRACE(op_name(call.op));
    OpCall bad = call;
    bad.conv.batch = 0;
    bad.pool.batch = 0;
    EXPECT_THROW(bad.run(r), Error);
  }
  PoolDims lp = tier0_calls().back().pool;
  std::vector<float> x(size_t(ref::pool_input_elements(lp))), y(size_t(ref::pool_output_elements(lp)), 7.0f);
  EXPECT_THROW(r.lpnormpool_forward(lp, -1.0f, x.data(), y.data()), Error);
  EXPECT_EQ(y, std::vector<float>(y.size(), 7.0f)) << "nothing written";
  EXPECT_TRUE(r.stats().configurations.empty());
}

}  // namespace
}  // namespace convjit::testing
