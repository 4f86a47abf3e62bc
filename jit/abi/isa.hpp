// The instruction sets convjit's kernels are built or emitted for, and what the host runs: the
// one source for every tier (the JIT backends' keys, tier 0's registered rows and register tile,
// the runtime's cap and stats).
#pragma once

#include <cstdint>

namespace convjit::jit {

// Ordered: a cap of one allows every one below it.
enum class Isa : int32_t {
  Portable = 0,  // no vector extension assumed (tier 0's portable tile)
  Avx2Fma = 1,   // AVX2 and FMA: 16 ymm of 8 floats
  Avx512 = 2,    // AVX-512 F, BW, DQ and VL (and BMI2): 32 zmm of 16 floats, opmask registers
};
// "portable", "avx2" or "avx512": the suffix of kernel names, CONVJIT_MAX_ISA's values.
const char* isa_name(Isa isa);
// CPUID and the OS's saved register state (GCC's CPU model checks XGETBV) say the host runs it.
bool host_has(Isa isa);
Isa widest_host_isa();

}  // namespace convjit::jit
