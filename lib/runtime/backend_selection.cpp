// Which backend a runtime gets: the one its policy asks for, if it runs on this host.
#include <memory>
#include <string>

#include "runtime_impl.hpp"

namespace convjit {

std::unique_ptr<jit::Backend> select_backend(Backend wanted, std::string* reason) {
  if (wanted == Backend::None) {
    *reason = "CONVJIT_BACKEND=none";
    return nullptr;
  }
  // Auto: Xbyak where it runs (microsecond compiles), else LLVM (portable, millisecond compiles).
  std::string reasons;
  auto usable = [&](std::unique_ptr<jit::Backend> backend) -> std::unique_ptr<jit::Backend> {
    const std::string why = backend->unavailable_reason();
    if (why.empty()) return backend;
    reasons += (reasons.empty() ? "" : "; ") + std::string(backend->name()) + ": " + why;
    return nullptr;
  };
  if (wanted == Backend::Xbyak || wanted == Backend::Auto) {
#if defined(CONVJIT_HAVE_XBYAK)
    if (auto backend = usable(jit::make_xbyak_backend())) return backend;
#else
    reasons += "built without Xbyak";
#endif
  }
  if (wanted == Backend::Llvm || wanted == Backend::Auto) {
#if defined(CONVJIT_HAVE_LLVM)
    if (auto backend = usable(jit::make_llvm_backend())) return backend;
#else
    reasons += std::string(reasons.empty() ? "" : "; ") + "built without LLVM";
#endif
  }
  *reason = reasons;
  return nullptr;
}

}  // namespace convjit
