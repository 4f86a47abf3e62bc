// One op on one problem, checked against tests/reference: random inputs from `seed`, outputs
// pre-filled with NaN (so an unwritten element fails) between guard zones that must stay
// untouched (so a store past either end fails), inputs checked unchanged afterwards, and a
// failure message naming the dims and the first failing index. Every suite that runs kernels
// (lib/ now, the JIT backends later, selected through the runtime policy) calls these.
#pragma once

#include <cstdint>

#include <gtest/gtest.h>

#include "convjit/dims.hpp"

namespace convjit::testing {

::testing::AssertionResult check_conv_forward(const ConvDims& dims, uint64_t seed, bool with_bias,
                                              Activation activation);
::testing::AssertionResult check_conv_backward_data(const ConvDims& dims, uint64_t seed);
::testing::AssertionResult check_conv_backward_filter(const ConvDims& dims, uint64_t seed);

enum class PoolValues {
  Continuous,     // uniform in [-1, 1): ties essentially never happen
  SmallIntegers,  // integers in [-2, 2]: ties in most windows (max-pool gradient routing)
  SomeNaN,        // Continuous with about a third NaN: some windows all NaN (max-pool forward)
};

::testing::AssertionResult check_maxpool_forward(const PoolDims& dims, uint64_t seed, PoolValues values);
::testing::AssertionResult check_maxpool_backward(const PoolDims& dims, uint64_t seed, PoolValues values);
::testing::AssertionResult check_meanpool_forward(const PoolDims& dims, uint64_t seed);
::testing::AssertionResult check_meanpool_backward(const PoolDims& dims, uint64_t seed);
// Inputs have |x| in [0.05, 1] so that p < 1 has a finite gradient.
::testing::AssertionResult check_lpnormpool_forward(const PoolDims& dims, float p, uint64_t seed);
::testing::AssertionResult check_lpnormpool_backward(const PoolDims& dims, float p, uint64_t seed);

}  // namespace convjit::testing
