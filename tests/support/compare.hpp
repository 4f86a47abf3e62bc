// Readable dims, tensor index names and the one comparison rule (README.md, Semantics: within 1e-4 of the
// largest reference magnitude, widened by sqrt(reduction length) for long reductions).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convjit/dims.hpp"

namespace convjit {
// gtest prints parameters and values with these.
void PrintTo(const ConvDims& dims, std::ostream* os);
void PrintTo(const PoolDims& dims, std::ostream* os);
}  // namespace convjit

namespace convjit::testing {

// e.g. "conv rank=2 NHWC convolution batch=2 channels=6->4 groups=2 in=[5,7] kernel=[3,2]
// stride=[1,2] dilation=[1,1] pad=[0,1]/[2,0]". Prints raw values, so invalid dims print too.
std::string describe(const ConvDims& dims);
std::string describe(const PoolDims& dims);

// The axes of a dense tensor in memory order, to name a flat index ("n=0 c=2 h=1 w=3").
struct TensorShape {
  std::vector<std::string> axes;
  std::vector<int64_t> sizes;
  int64_t elements() const;
  std::string name(int64_t flat_index) const;
};
TensorShape conv_input_shape(const ConvDims& dims);   // x, dx
TensorShape conv_weight_shape(const ConvDims& dims);  // w, dw (OIHW or OHWI)
TensorShape conv_output_shape(const ConvDims& dims);  // y, dy
TensorShape pool_input_shape(const PoolDims& dims);
TensorShape pool_output_shape(const PoolDims& dims);

inline constexpr double kRelativeTolerance = 1e-4;

// Allowed |got - want|: kRelativeTolerance * (largest finite |want|, ignoring +-FLT_MAX) *
// max(1, sqrt(reduction_length / 64)), i.e. the plain rule up to 64 terms per output.
double tolerance(const std::vector<double>& want, int64_t reduction_length);

// Every element within tolerance(); non-finite and +-FLT_MAX reference values must match
// exactly (NaN matches NaN). On failure: the first failing index, its name, the values, the
// number of failing elements and `context` (put the dims there).
::testing::AssertionResult all_close(const std::string& what, const float* got, const std::vector<double>& want,
                                     const TensorShape& shape, int64_t reduction_length,
                                     const std::string& context);
// As above, and each element also allowed the float rounding of its terms:
// kTermRoundings * FLT_EPSILON * magnitude[i], where magnitude is the oracle run on the inputs'
// absolute values (each output's sum of |term|). A result that cancels to far below its terms is
// judged against the terms, not against the largest result. Terms of mixed signs keep a chain's
// partial sums near sqrt(i) terms, so its rounding stays near FLT_EPSILON * magnitude whatever the
// length (same-signed terms do not cancel: the rule above covers them), and one dropped term of
// a few thousand is still caught.
inline constexpr double kTermRoundings = 32;
::testing::AssertionResult all_close(const std::string& what, const float* got, const std::vector<double>& want,
                                     const std::vector<double>& magnitude, const TensorShape& shape,
                                     int64_t reduction_length, const std::string& context);
// Every element equal to the reference (exactly representable results such as max pooling).
::testing::AssertionResult all_equal(const std::string& what, const float* got, const std::vector<double>& want,
                                     const TensorShape& shape, const std::string& context);
// Bitwise equality of two float buffers (e.g. one thread vs two).
::testing::AssertionResult bitwise_equal(const std::string& what, const std::vector<float>& a,
                                         const std::vector<float>& b, const TensorShape& shape,
                                         const std::string& context);

std::vector<float> nan_buffer(int64_t n);
std::vector<double> to_double(const std::vector<float>& v);
std::vector<float> to_float(const std::vector<double>& v);

}  // namespace convjit::testing
