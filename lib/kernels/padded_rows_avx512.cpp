#include <cstdint>

#include "padded_rows.hpp"
#include "simd_avx512.hpp"

namespace convjit::detail::avx512 {
namespace {

using F = Avx512Floats;

// Rows of up to this many vectors take their masks from a table made once per call.
constexpr int64_t kPlannedVectors = 8;

}  // namespace

void copy_padded_rows(const float* from, int64_t from_pitch, float* to, int64_t to_pitch, int64_t rows, int64_t span,
                      int64_t first, int64_t last) {
  // Element i of row r, where real (first <= i < last; masked loads read nothing else), formed
  // as an address: a row's start may lie before x, and a row after the last past it.
  const auto source = [&](int64_t r, int64_t i) {
    return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(from) +
                                          uintptr_t((r * from_pitch + i - first) * int64_t(sizeof(float))));
  };
  // Vector v's lanes that are real inputs, and those inside the span.
  const auto real_lanes = [&](int64_t v) { return F::lanes_between(v * F::kLanes - first, last - first); };
  const auto span_lanes = [&](int64_t v) { return F::first_lanes(span - v * F::kLanes); };
  const auto copy = [&](auto&& real, auto&& written) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t v = 0; v * F::kLanes < span; ++v) {
        F::store(to + r * to_pitch + v * F::kLanes, F::load(source(r, v * F::kLanes), real(v)), written(v));
      }
    }
  };
  const int64_t vectors = (span + F::kLanes - 1) / F::kLanes;
  if (vectors <= kPlannedVectors) {
    F::Mask real[kPlannedVectors], written[kPlannedVectors];
    for (int64_t v = 0; v < vectors; ++v) {
      real[v] = real_lanes(v);
      written[v] = span_lanes(v);
    }
    copy([&](int64_t v) { return real[v]; }, [&](int64_t v) { return written[v]; });
  } else {
    copy(real_lanes, span_lanes);
  }
  _mm256_zeroupper();
}

}  // namespace convjit::detail::avx512
