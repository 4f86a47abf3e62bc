// The gradient benchmarks of convjit_bench (bench/backward.cpp): per conv shape, backward data and
// backward filter; per pool shape, pooling backward; and the bandwidth bound of every pooling op.
#pragma once

#include "shapes.hpp"

namespace convjit_bench {

void register_backward_benchmarks(const ShapeSet& set);

}  // namespace convjit_bench
