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

bool process_may_use(jit::Isa isa) { return isa <= process_isa_cap() && jit::host_has(isa); }

}  // namespace convjit::detail
