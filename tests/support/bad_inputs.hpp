// Invalid problems, one rule broken each, shared by the C++ API and C ABI error tests. Each
// case lists the words its error message must contain: the field name as lib/problem/geometry.cpp
// prints it (per-dim fields with their index, e.g. "stride[1]").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convjit/convjit.h"
#include "convjit/dims.hpp"

namespace convjit::testing {

struct BadConvCase {
  std::string name;
  ConvDims dims;
  std::vector<std::string> message_words;
};

struct BadPoolCase {
  std::string name;
  PoolDims dims;
  std::vector<std::string> message_words;
};

// Valid rank-2 problems every bad case is derived from (all per-dim entries nonzero, so they
// convert to the C ABI as they are).
ConvDims valid_conv_dims();
PoolDims valid_pool_dims();

std::vector<BadConvCase> bad_conv_cases();
std::vector<BadPoolCase> bad_pool_cases();

// Field-by-field copies into the C structs, written here rather than taken from
// ConvDims::to_c so that the C ABI tests do not depend on it. Pool strides are copied as they
// are (0 stays 0, which the C ABI rejects).
convjit_conv_params c_params(const ConvDims& dims);
convjit_pool_params c_params(const PoolDims& dims);

// True when `word` occurs in `text` not as part of a longer identifier (so "x" does not match
// the "x" of "dx" or "max").
bool contains_word(const std::string& text, const std::string& word);

// A float buffer filled with a byte pattern, and a check that it still holds it.
std::vector<float> sentinel_buffer(size_t n);
bool holds_sentinel(const std::vector<float>& buffer);

}  // namespace convjit::testing
