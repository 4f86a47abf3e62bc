#include "kernel_isa.hpp"

#include <cstdlib>
#include <cstring>

namespace convjit::detail {

jit::Isa process_isa_cap() {
  static const jit::Isa cap = [] {
    const char* text = std::getenv("CONVJIT_MAX_ISA");
    return text && std::strcmp(text, "avx2") == 0 ? jit::Isa::Avx2Fma : jit::Isa::Avx512;
  }();
  return cap;
}

}  // namespace convjit::detail
