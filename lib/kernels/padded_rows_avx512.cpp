#include <immintrin.h>

#include <cstdint>

#include "padded_rows.hpp"

namespace convjit::detail::avx512 {
namespace {

constexpr int64_t kLanes = 16;

// Lanes l of the vector at i with lo <= i + l < hi.
__mmask16 lanes_within(int64_t i, int64_t lo, int64_t hi) {
  const auto below = [&](int64_t end) {
    const int64_t n = end - i;
    return n <= 0 ? 0u : n >= kLanes ? 0xFFFFu : (1u << n) - 1;
  };
  return __mmask16(below(hi) & ~below(lo));
}

}  // namespace

// Rows of up to this many vectors take their masks from a table made once per call.
constexpr int64_t kPlannedVectors = 8;

void copy_padded_rows(const float* from, int64_t from_pitch, float* to, int64_t to_pitch, int64_t rows, int64_t span,
                      int64_t first, int64_t last) {
  // Element i of row r, where real (first <= i < last; masked loads read nothing else), formed
  // as an address: a row's start may lie before x, and a row after the last past it.
  const auto source = [&](int64_t r, int64_t i) {
    return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(from) +
                                          uintptr_t((r * from_pitch + i - first) * int64_t(sizeof(float))));
  };
  const int64_t vectors = (span + kLanes - 1) / kLanes;
  if (vectors <= kPlannedVectors) {
    __mmask16 real[kPlannedVectors], written[kPlannedVectors];
    for (int64_t v = 0; v < vectors; ++v) {
      real[v] = lanes_within(v * kLanes, first, last);
      written[v] = lanes_within(v * kLanes, 0, span);
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t v = 0; v < vectors; ++v) {
        _mm512_mask_storeu_ps(to + r * to_pitch + v * kLanes, written[v],
                              _mm512_maskz_loadu_ps(real[v], source(r, v * kLanes)));
      }
    }
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < span; i += kLanes) {
        const __m512 v = _mm512_maskz_loadu_ps(lanes_within(i, first, last), source(r, i));
        _mm512_mask_storeu_ps(to + r * to_pitch + i, lanes_within(i, 0, span), v);
      }
    }
  }
  _mm256_zeroupper();
}

}  // namespace convjit::detail::avx512
