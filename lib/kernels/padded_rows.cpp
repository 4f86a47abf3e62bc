#include "padded_rows.hpp"

#include <algorithm>

#include "kernel_isa.hpp"

namespace convjit::detail {

void portable::copy_padded_rows(const float* from, int64_t from_pitch, float* to, int64_t to_pitch, int64_t rows,
                                int64_t span, int64_t first, int64_t last) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = to + r * to_pitch;
    std::fill(row, row + first, 0.0f);
    std::copy(from + r * from_pitch, from + r * from_pitch + (last - first), row + first);
    std::fill(row + last, row + span, 0.0f);
  }
}

void copy_padded_rows(const float* from, int64_t from_pitch, float* to, int64_t to_pitch, int64_t rows, int64_t span,
                      int64_t first, int64_t last) {
#if defined(__x86_64__)
  if (process_may_use(jit::Isa::Avx512))
    return avx512::copy_padded_rows(from, from_pitch, to, to_pitch, rows, span, first, last);
#endif
  portable::copy_padded_rows(from, from_pitch, to, to_pitch, rows, span, first, last);
}

}  // namespace convjit::detail
