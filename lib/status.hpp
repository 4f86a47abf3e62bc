// Errors are values inside the library; only the C++ API turns them into exceptions.
#pragma once

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

#define CONVJIT_RETURN_IF_ERROR(expr)           \
  do {                                          \
    ::convjit::detail::Status status_ = (expr); \
    if (!status_.ok()) return status_;          \
  } while (0)

}  // namespace convjit::detail
