// Small problems whose answers were worked out by hand (the arithmetic is in hand_cases.cpp).
// tests/reference checks the oracle against them; tests/lib checks the library against them, so
// neither trusts the other blindly.
#pragma once

#include <string>
#include <vector>

#include "convjit/dims.hpp"

namespace convjit::testing {

struct ConvForwardCase {
  std::string name;
  ConvDims dims;
  std::vector<float> x, w, bias;  // bias empty: none
  Activation activation = Activation::Identity;
  std::vector<double> y;
};

struct ConvBackwardCase {
  std::string name;
  ConvDims dims;
  std::vector<float> x, w, dy;
  std::vector<double> dx, dw;
};

enum class PoolOp { Max, Mean, LpNorm };

struct PoolCase {
  std::string name;
  PoolOp op;
  PoolDims dims;
  float p = 0.0f;  // LpNorm only
  std::vector<float> x;
  std::vector<double> y;   // also the y given to the backward (max, Lp)
  std::vector<float> dy;   // empty: forward-only case
  std::vector<double> dx;
};

std::vector<ConvForwardCase> conv_forward_hand_cases();
std::vector<ConvBackwardCase> conv_backward_hand_cases();
std::vector<PoolCase> pool_hand_cases();

}  // namespace convjit::testing
