// The vector the generators emit for (AVX2: ymm) and the units their address arithmetic uses.
#pragma once

namespace convjit::jit::xbyak {

inline constexpr int kVectorBytes = 32;
inline constexpr int kFloatBytes = 4;
inline constexpr int kVectorFloats = kVectorBytes / kFloatBytes;
inline constexpr int kFloatBytesShift = 2;  // element counts to bytes
inline constexpr int kLocalBytes = 8;       // one stack slot of a generator's locals

}  // namespace convjit::jit::xbyak
