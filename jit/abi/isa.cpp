#include "isa.hpp"

#include <initializer_list>

namespace convjit::jit {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Portable: return "portable";
    case Isa::Avx2Fma: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

bool host_has(Isa isa) {
#if defined(__x86_64__)
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  switch (isa) {
    case Isa::Portable: return true;
    case Isa::Avx2Fma: return avx2;
    case Isa::Avx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("bmi2");
  }
  return false;
#else
  return isa == Isa::Portable;
#endif
}

Isa widest_host_isa() {
  for (Isa isa : {Isa::Avx512, Isa::Avx2Fma})
    if (host_has(isa)) return isa;
  return Isa::Portable;
}

}  // namespace convjit::jit
