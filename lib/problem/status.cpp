#include "status.hpp"

namespace convjit::detail {

Status require_pointers(std::initializer_list<std::pair<const void*, const char*>> pointers) {
  for (const auto& [pointer, name] : pointers) {
    if (pointer == nullptr) return Status::invalid(std::string(name) + " is NULL");
  }
  return Status::success();
}

}  // namespace convjit::detail
