// Zero-padded copies of input rows: the driver's bands (lib/driver/row_views.hpp), a few dozen
// floats per row, for every row of a tile's input. One memmove call per row of each channel and a
// fill of the whole band cost a third of a backward data's time on the seed network's layers
// (bench/RESULTS.md, "Session 30"); the AVX-512 build writes each row, padding and all, in
// masked vectors. Copies, so every build gives the same result.
#pragma once

#include <cstdint>

namespace convjit::detail {

// to[r * to_pitch + i] for r < rows, i < span: from[r * from_pitch + i - first] where
// first <= i < last, else 0 (0 <= first <= last <= span); only those elements of `from` are read.
// The buffers do not overlap. The widest build the host has.
void copy_padded_rows(const float* from, int64_t from_pitch, float* to, int64_t to_pitch, int64_t rows, int64_t span,
                      int64_t first, int64_t last);

namespace portable {
void copy_padded_rows(const float* from, int64_t from_pitch, float* to, int64_t to_pitch, int64_t rows, int64_t span,
                      int64_t first, int64_t last);
}  // namespace portable

namespace avx512 {
void copy_padded_rows(const float* from, int64_t from_pitch, float* to, int64_t to_pitch, int64_t rows, int64_t span,
                      int64_t first, int64_t last);
}  // namespace avx512

}  // namespace convjit::detail
