// Helpers shared by the JIT-tier suites: a forward problem with its inputs and oracle answer,
// runtime policies, stats lookups and a compact dims builder. Header-only; uses the public API
// and tests/support only, so both the static-linked suites and the concurrency suite (also
// built under ThreadSanitizer) can include it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "convjit/runtime.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing::jit {

// The widest ISA a runtime capped at max_isa (by default CONVJIT_MAX_ISA's, as the policies below)
// gives its kernels on this host ("avx512", "avx2" or "portable"): NHWC kernels, and NCHW ones
// whose rows fill an AVX-512 block, end in it.
inline std::string kernel_isa(Isa max_isa = Policy::from_environment().max_isa) {
  Policy p;
  p.backend = Backend::None;
  p.max_isa = max_isa;
  return Runtime(p).stats().isa;
}

// One forward problem: random inputs from `seed`, optional bias and activation, oracle answer.
struct Problem {
  ConvDims dims;
  std::vector<float> x, w, bias;
  Activation activation = Activation::Identity;
  std::vector<double> want;

  Problem(const ConvDims& d, uint64_t seed) : dims(d) {
    Rng rng(seed);
    x = random_floats(rng, ref::conv_input_elements(d));
    w = random_floats(rng, ref::conv_weight_elements(d));
    bias = rng.chance(0.5) ? random_floats(rng, d.out_channels) : std::vector<float>{};
    activation = rng.chance(0.5) ? Activation::Relu : Activation::Identity;
    want = ref::conv_forward(d, x.data(), w.data(), bias_ptr(), activation);
  }
  Problem(const ConvDims& d, uint64_t seed, bool with_bias, Activation act) : dims(d), activation(act) {
    Rng rng(seed);
    x = random_floats(rng, ref::conv_input_elements(d));
    w = random_floats(rng, ref::conv_weight_elements(d));
    if (with_bias) bias = random_floats(rng, d.out_channels);
    want = ref::conv_forward(d, x.data(), w.data(), bias_ptr(), activation);
  }

  const float* bias_ptr() const { return bias.empty() ? nullptr : bias.data(); }
  int64_t outputs() const { return int64_t(want.size()); }
  int64_t reduction() const {
    int64_t taps = 1;
    for (int k = 0; k < dims.rank; ++k) taps *= dims.kernel[size_t(k)];
    return (dims.in_channels / dims.groups) * taps;
  }
  // Multiply-adds of one forward call.
  int64_t multiply_adds() const { return outputs() * reduction(); }

  std::vector<float> run(Runtime& runtime) const {
    std::vector<float> y = nan_buffer(outputs());
    runtime.conv_forward(dims, x.data(), w.data(), bias_ptr(), activation, y.data());
    return y;
  }
  ::testing::AssertionResult matches_reference(const std::vector<float>& y, const std::string& what) const {
    return all_close(what, y.data(), want, conv_output_shape(dims), reduction(), describe(dims));
  }
  ::testing::AssertionResult same_bits(const std::vector<float>& got, const std::vector<float>& expected,
                                       const std::string& what) const {
    return bitwise_equal(what, got, expected, conv_output_shape(dims), describe(dims));
  }
};

inline bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline Policy generic_policy() {
  Policy p;
  p.backend = Backend::None;
  return p;
}

// Every configuration compiled on first sight, in the calling thread, none declined as slower
// than the generic tier (coverage of the kernels, not speed).
inline Policy eager_policy(int num_threads = 0) {
  Policy p;
  p.backend = Backend::Auto;
  p.hot_threshold = 0;
  p.async = false;
  p.num_threads = num_threads;
  p.decline_slower = false;
  p.max_isa = Policy::from_environment().max_isa;  // CONVJIT_MAX_ISA=avx2 reruns the suites on AVX2 kernels
  return p;
}

// A copy: the stats are often a temporary.
inline std::optional<ConfigStats> find_config(const RuntimeStats& stats, const ConvDims& dims) {
  std::optional<ConfigStats> found;
  for (const ConfigStats& c : stats.configurations) {
    if (describe(c.dims) == describe(dims)) found = c;
  }
  return found;
}

inline int64_t count_state(const RuntimeStats& stats, const std::string& state) {
  int64_t n = 0;
  for (const ConfigStats& c : stats.configurations) n += c.state == state;
  return n;
}

// The dims with the input widened along W (the last spatial dim) so that output rows have at
// least min_out_w pixels. Row kernels hand segments shorter than their pixel block to the
// generic tile (conv_tile_abi.h: min_row_pixels), so a compiled kernel runs only on long rows.
inline ConvDims widen_rows(ConvDims d, int64_t min_out_w) {
  const size_t w = size_t(d.rank - 1);
  const int64_t needed =
      (min_out_w - 1) * d.stride[w] + d.dilation[w] * (d.kernel[w] - 1) + 1 - d.pad_begin[w] - d.pad_end[w];
  if (d.in_size[w] < needed) d.in_size[w] = needed;
  return d;
}

// Output rows long enough for every row kernel's block (the largest is NCHW with one output
// channel per group: 48 pixels) and a tail after it.
inline constexpr int64_t kLongRow = 56;

// The support generator's sweep with every problem's rows widened to kLongRow, dropping the
// ones that become heavier than max_multiply_adds, until `count` remain.
inline std::vector<ConvDims> long_row_sweep(uint64_t seed, int count, int64_t max_multiply_adds = 1500000) {
  std::vector<ConvDims> out;
  for (int batch = 0; int(out.size()) < count; ++batch) {
    for (const ConvDims& d : random_conv_sweep(seed + uint64_t(batch), count)) {
      const ConvDims wide = widen_rows(d, kLongRow);
      int64_t taps = 1;
      for (int k = 0; k < wide.rank; ++k) taps *= wide.kernel[size_t(k)];
      const int64_t macs = ref::conv_output_elements(wide) * (wide.in_channels / wide.groups) * taps;
      if (macs <= max_multiply_adds && int(out.size()) < count) out.push_back(wide);
    }
  }
  return out;
}

}  // namespace convjit::testing::jit

#define CONVJIT_SKIP_WITHOUT_BACKEND(runtime)                                                    \
  do {                                                                                           \
    const ::convjit::RuntimeStats skip_stats_ = (runtime).stats();                               \
    if (skip_stats_.backend == "none")                                                           \
      GTEST_SKIP() << "no JIT backend on this host: " << skip_stats_.backend_unavailable_reason; \
  } while (0)
