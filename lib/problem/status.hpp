// Errors are values inside the library; only the C++ API turns them into exceptions.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

#include "convjit/convjit.h"

namespace convjit::detail {

struct Status {
  convjit_status code = CONVJIT_OK;
  std::string message;

  bool ok() const { return code == CONVJIT_OK; }
  static Status success() { return {}; }
  static Status invalid(std::string message) { return {CONVJIT_EINVAL, std::move(message)}; }
};

// Null-pointer check naming the argument: "x is NULL".
Status require_pointers(std::initializer_list<std::pair<const void*, const char*>> pointers);

#define CONVJIT_RETURN_IF_ERROR(expr)           \
  do {                                          \
    ::convjit::detail::Status status_ = (expr); \
    if (!status_.ok()) return status_;          \
  } while (0)

}  // namespace convjit::detail
