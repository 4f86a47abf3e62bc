// What a generator's plan knows of the ISA it emits for, and the one place that maps the ISA to
// Xbyak's register types. Plans read the traits; emitters call vector() and never name ymm or zmm.
#pragma once

#include <xbyak/xbyak.h>

#include "spec_key.hpp"

namespace convjit::jit::xbyak {

struct IsaTraits {
  Isa isa;
  int lanes;  // floats per vector
  int vector_bytes;
  int vector_registers;
  int lanes_shift;  // log2(lanes): pixel counts to vectors
  bool opmask;      // mask registers: masked, fault-suppressing loads and stores, embedded broadcasts
};

inline constexpr IsaTraits kAvx2Traits{Isa::Avx2Fma, 8, 32, 16, 3, false};
inline constexpr IsaTraits kAvx512Traits{Isa::Avx512, 16, 64, 32, 4, true};
inline const IsaTraits& traits_of(Isa isa) {
  return isa == Isa::Avx512 ? kAvx512Traits : kAvx2Traits;
}

// Vector register i of the ISA (ymm or zmm): Xbyak picks the encoding from the operand's size.
inline Xbyak::Xmm vector(const IsaTraits& isa, int i) {
  if (isa.vector_bytes == 64) return Xbyak::Zmm(i);
  return Xbyak::Ymm(i);
}

inline constexpr int kFloatBytes = 4;
inline constexpr int kFloatBytesShift = 2;  // element counts to bytes
inline constexpr int kLocalBytes = 8;       // one stack slot of a generator's locals

}  // namespace convjit::jit::xbyak
