#include "kernel_isa.hpp"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "gemm_tile.hpp"

namespace convjit::detail {

bool host_has(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Portable: return true;
    case KernelIsa::Avx2Fma:
#if defined(__x86_64__)
      return avx2::supported();
#else
      return false;
#endif
    case KernelIsa::Avx512:
#if defined(__x86_64__)
      return avx2::supported() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("bmi2");
#else
      return false;
#endif
  }
  return false;
}

const char* isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Portable: return "portable";
    case KernelIsa::Avx2Fma: return "avx2";
    case KernelIsa::Avx512: return "avx512";
  }
  return "?";
}

KernelIsa widest_host_isa() {
  for (KernelIsa isa : {KernelIsa::Avx512, KernelIsa::Avx2Fma})
    if (host_has(isa)) return isa;
  return KernelIsa::Portable;
}

KernelIsa process_isa_cap() {
  static const KernelIsa cap = [] {
    const char* text = std::getenv("CONVJIT_MAX_ISA");
    return text && std::strcmp(text, "avx2") == 0 ? KernelIsa::Avx2Fma : KernelIsa::Avx512;
  }();
  return cap;
}

}  // namespace convjit::detail
