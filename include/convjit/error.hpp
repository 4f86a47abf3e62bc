#pragma once

#include <stdexcept>
#include <string>

#include "convjit/convjit.h"
#include "convjit/export.h"

namespace convjit {

// What the C++ API throws on bad input; the C ABI returns the same status and message instead.
class CONVJIT_PUBLIC Error : public std::runtime_error {
 public:
  Error(convjit_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  convjit_status status() const noexcept { return status_; }

 private:
  convjit_status status_;
};

}  // namespace convjit
