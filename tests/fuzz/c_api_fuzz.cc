// libFuzzer target on the C ABI: an input is an op, a thread count and the fields of its
// convjit_conv_params / convjit_pool_params, mostly small and valid, sometimes any int64.
// The contract checked on every input:
//   - the op's status agrees with the size query (convjit_*_output_size): both valid or both not;
//   - an invalid problem returns a status other than CONVJIT_OK with a message, and writes no
//     output byte (outputs are filled with a sentinel and compared afterwards);
//   - a valid problem returns CONVJIT_OK on tensors of exactly its sizes (AddressSanitizer sees
//     any access past them) and, where the oracle's work is small enough, matches the oracle
//     with every output written and the inputs unchanged (tests/support/op_checks).
// A violation aborts, so libFuzzer keeps the input (tests/fuzz/README.md: add it to the corpus).
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "convjit/convjit.h"
#include "convjit/dims.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/op_checks.hpp"

namespace {

using convjit::ConvDims;
using convjit::PoolDims;
namespace t = convjit::testing;

// Tensors beyond this many floats are not allocated (the problem is still validated).
constexpr int64_t kMaxElements = int64_t(1) << 22;
// The oracle runs where outputs x reduction terms stay below this.
constexpr double kMaxOracleWork = 4e6;
constexpr int kSmallBuffer = 64;  // floats given to an invalid problem's every argument
constexpr uint32_t kSentinelBits = 0x7fc0beefu;

[[noreturn]] void violation(const char* what, const char* detail) {
  std::fprintf(stderr, "convjit fuzz: contract violated: %s\n%s\n", what, detail);
  std::abort();
}

// Mostly [lo, hi]; now and then a value at the edges of int64 or any int64.
int64_t field(FuzzedDataProvider& in, int64_t lo, int64_t hi) {
  switch (in.ConsumeIntegralInRange<int>(0, 31)) {
    case 0: return in.ConsumeIntegral<int64_t>();
    case 1: {
      static constexpr int64_t kEdges[] = {0,
                                           -1,
                                           int64_t(1) << 31,
                                           int64_t(1) << 40,
                                           int64_t(1) << 62,
                                           std::numeric_limits<int64_t>::max(),
                                           std::numeric_limits<int64_t>::min()};
      return kEdges[in.ConsumeIntegralInRange<size_t>(0, std::size(kEdges) - 1)];
    }
    default: return in.ConsumeIntegralInRange<int64_t>(lo, hi);
  }
}

// An int32 field (rank, an enum): mostly [lo, hi], now and then any int32.
int32_t int32_field(FuzzedDataProvider& in, int32_t lo, int32_t hi) {
  return in.ConsumeIntegralInRange<int>(0, 63) == 0 ? in.ConsumeIntegral<int32_t>()
                                                    : in.ConsumeIntegralInRange<int32_t>(lo, hi);
}

convjit_conv_params conv_params(FuzzedDataProvider& in) {
  convjit_conv_params p{};
  p.rank = int32_field(in, 1, 3);
  p.layout = int32_field(in, 0, 1);
  p.mode = int32_field(in, 0, 1);
  p.batch = field(in, 1, 4);
  p.groups = field(in, 1, 4);
  // Channels per group times the groups, where that product is defined (else the raw field).
  auto times_groups = [&](int64_t per_group) {
    int64_t channels;
    return __builtin_mul_overflow(per_group, p.groups, &channels) ? per_group : channels;
  };
  const bool depthwise = in.ConsumeBool();
  p.in_channels = depthwise ? p.groups : times_groups(field(in, 1, 4));
  p.out_channels = times_groups(field(in, 1, 4));
  for (int d = 0; d < 3; ++d) {
    p.in_size[d] = field(in, 1, 13);
    p.kernel[d] = field(in, 1, 5);
    p.stride[d] = field(in, 1, 3);
    p.dilation[d] = field(in, 1, 3);
    p.pad_begin[d] = field(in, 0, 3);
    p.pad_end[d] = field(in, 0, 3);
  }
  return p;
}

convjit_pool_params pool_params(FuzzedDataProvider& in) {
  convjit_pool_params p{};
  p.rank = int32_field(in, 1, 3);
  p.layout = int32_field(in, 0, 1);
  p.exclude_padding = int32_field(in, 0, 1);
  p.batch = field(in, 1, 4);
  p.channels = field(in, 1, 20);
  for (int d = 0; d < 3; ++d) {
    p.in_size[d] = field(in, 1, 13);
    p.window[d] = field(in, 1, 4);
    p.stride[d] = field(in, 1, 3);
    p.dilation[d] = field(in, 1, 2);
    p.pad_begin[d] = field(in, 0, 2);
    p.pad_end[d] = field(in, 0, 2);
  }
  return p;
}

struct Buffer {
  std::vector<float> data;
  explicit Buffer(int64_t n) : data(size_t(n)) {
    for (float& v : data) std::memcpy(&v, &kSentinelBits, sizeof v);
  }
  float* get() { return data.data(); }
  bool untouched() const {
    for (const float& v : data) {
      if (std::memcmp(&v, &kSentinelBits, sizeof v) != 0) return false;
    }
    return true;
  }
};

void expect_refused(convjit_status status, std::initializer_list<const Buffer*> outputs, const char* op) {
  if (status == CONVJIT_OK) violation("an invalid problem returned CONVJIT_OK", op);
  if (convjit_last_error()[0] == '\0') violation("an error without a message", op);
  for (const Buffer* b : outputs) {
    if (!b->untouched()) violation("an invalid problem wrote an output", op);
  }
}

void expect_ok(convjit_status status, const char* op) {
  if (status != CONVJIT_OK) violation("a valid problem was refused", convjit_last_error());
  (void)op;
}

void expect_oracle(const ::testing::AssertionResult& result) {
  if (!result) violation("a result differs from the oracle", result.message());
}

void fuzz_conv(FuzzedDataProvider& in, int op) {
  const convjit_conv_params p = conv_params(in);
  const bool with_bias = in.ConsumeBool(), relu = in.ConsumeBool();
  const uint64_t seed = in.ConsumeIntegral<uint64_t>();
  int64_t out_size[3];
  const bool valid = convjit_conv_output_size(&p, out_size) == CONVJIT_OK;
  const char* names[] = {"conv_forward", "conv_backward_data", "conv_backward_filter"};
  if (!valid) {
    Buffer a(kSmallBuffer), b(kSmallBuffer), c(kSmallBuffer), out(kSmallBuffer);
    convjit_status s;
    if (op == 0)
      s = convjit_conv_forward(&p, a.get(), b.get(), with_bias ? c.get() : nullptr,
                               relu ? CONVJIT_ACT_RELU : CONVJIT_ACT_IDENTITY, out.get());
    else if (op == 1)
      s = convjit_conv_backward_data(&p, a.get(), b.get(), out.get());
    else
      s = convjit_conv_backward_filter(&p, a.get(), b.get(), out.get());
    expect_refused(s, {&out}, names[op]);
    return;
  }
  const ConvDims dims = ConvDims::from_c(p);
  if (std::getenv("CONVJIT_FUZZ_PRINT")) std::fprintf(stderr, "%s %s\n", names[op], t::describe(dims).c_str());
  const int64_t xs = convjit::ref::conv_input_elements(dims), ws = convjit::ref::conv_weight_elements(dims),
                ys = convjit::ref::conv_output_elements(dims);
  if (xs > kMaxElements || ws > kMaxElements || ys > kMaxElements) return;
  Buffer x(xs), w(ws), bias(p.out_channels), y(ys);
  for (auto* b : {&x, &w, &bias}) std::fill(b->data.begin(), b->data.end(), 0.5f);
  convjit_status s;
  if (op == 0)
    s = convjit_conv_forward(&p, x.get(), w.get(), with_bias ? bias.get() : nullptr,
                             relu ? CONVJIT_ACT_RELU : CONVJIT_ACT_IDENTITY, y.get());
  else if (op == 1)
    s = convjit_conv_backward_data(&p, y.get(), w.get(), x.get());
  else
    s = convjit_conv_backward_filter(&p, x.get(), y.get(), w.get());
  expect_ok(s, names[op]);
  const double taps = double(ws) / double(p.out_channels);  // per output: (ic / groups) x kernel taps
  if (double(ys) * taps + double(xs) * taps > kMaxOracleWork) return;
  if (op == 0)
    expect_oracle(
        t::check_conv_forward(dims, seed, with_bias, relu ? convjit::Activation::Relu : convjit::Activation::Identity));
  else if (op == 1)
    expect_oracle(t::check_conv_backward_data(dims, seed));
  else
    expect_oracle(t::check_conv_backward_filter(dims, seed));
}

void fuzz_pool(FuzzedDataProvider& in, int op) {
  const convjit_pool_params p = pool_params(in);
  static constexpr float kPowers[] = {1.0f, 2.0f, 3.0f, 0.5f, 0.0f, -1.0f, NAN, INFINITY};
  const float power = kPowers[in.ConsumeIntegralInRange<size_t>(0, std::size(kPowers) - 1)];
  const auto values = t::PoolValues(in.ConsumeIntegralInRange<int>(0, 2));
  const uint64_t seed = in.ConsumeIntegral<uint64_t>();
  int64_t out_size[3];
  const bool lp = op == 2 || op == 5;
  const bool valid =
      convjit_pool_output_size(&p, out_size) == CONVJIT_OK && (!lp || (power > 0 && std::isfinite(power)));
  const char* names[] = {"maxpool_forward",  "meanpool_forward",  "lpnormpool_forward",
                         "maxpool_backward", "meanpool_backward", "lpnormpool_backward"};
  auto call = [&](float* x, float* y, float* dy, float* dx) {
    switch (op) {
      case 0: return convjit_maxpool_forward(&p, x, y);
      case 1: return convjit_meanpool_forward(&p, x, y);
      case 2: return convjit_lpnormpool_forward(&p, power, x, y);
      case 3: return convjit_maxpool_backward(&p, x, y, dy, dx);
      case 4: return convjit_meanpool_backward(&p, dy, dx);
      default: return convjit_lpnormpool_backward(&p, power, x, y, dy, dx);
    }
  };
  if (!valid) {
    Buffer x(kSmallBuffer), y(kSmallBuffer), dy(kSmallBuffer), dx(kSmallBuffer);
    const convjit_status s = call(x.get(), y.get(), dy.get(), dx.get());
    expect_refused(s, op < 3 ? std::initializer_list<const Buffer*>{&y} : std::initializer_list<const Buffer*>{&dx},
                   names[op]);
    return;
  }
  const PoolDims dims = PoolDims::from_c(p);
  if (std::getenv("CONVJIT_FUZZ_PRINT")) std::fprintf(stderr, "%s %s\n", names[op], t::describe(dims).c_str());
  const int64_t xs = convjit::ref::pool_input_elements(dims), ys = convjit::ref::pool_output_elements(dims);
  if (xs > kMaxElements || ys > kMaxElements) return;
  Buffer x(xs), y(ys), dy(ys), dx(xs);
  for (auto* b : {&x, &dy}) std::fill(b->data.begin(), b->data.end(), 0.5f);
  if (op >= 3) std::fill(y.data.begin(), y.data.end(), 0.5f);
  expect_ok(call(x.get(), y.get(), dy.get(), dx.get()), names[op]);
  double taps = 1;
  for (int d = 0; d < p.rank; ++d) taps *= double(p.window[d]);
  if (double(ys) * taps > kMaxOracleWork) return;
  switch (op) {
    case 0: return expect_oracle(t::check_maxpool_forward(dims, seed, values));
    case 1: return expect_oracle(t::check_meanpool_forward(dims, seed));
    case 2: return expect_oracle(t::check_lpnormpool_forward(dims, power, seed));
    case 3: return expect_oracle(t::check_maxpool_backward(dims, seed, values));
    case 4: return expect_oracle(t::check_meanpool_backward(dims, seed));
    default: return expect_oracle(t::check_lpnormpool_backward(dims, power, seed));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int op = in.ConsumeIntegralInRange<int>(0, 8);
  if (convjit_set_num_threads(in.ConsumeIntegralInRange<int32_t>(1, 3)) != CONVJIT_OK)
    violation("convjit_set_num_threads(1..3) failed", convjit_last_error());
  if (op < 3)
    fuzz_conv(in, op);
  else
    fuzz_pool(in, op - 3);
  return 0;
}
