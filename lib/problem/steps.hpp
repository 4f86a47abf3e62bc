// Integer division rounded down or up, and the steps of a window or a strided run that land
// inside the input: the clipping every kernel and driver does at the padding.
#pragma once

#include <algorithm>
#include <cstdint>

namespace convjit::detail {

inline int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
inline int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

// The steps t in [0, n) for which origin + t * step lies in [0, size): the real taps of a window
// (step = dilation) or the real pixels of a strided run (step = stride). A contiguous range
// [lo, hi), empty when lo == hi.
struct StepRange {
  int64_t lo, hi;
};
inline StepRange steps_inside(int64_t origin, int64_t step, int64_t size, int64_t n) {
  const bool unit = step == 1;  // the common case, without two divisions
  const int64_t lo = std::clamp<int64_t>(unit ? -origin : ceil_div(-origin, step), 0, n);
  const int64_t hi = std::clamp<int64_t>(unit ? size - origin : ceil_div(size - origin, step), lo, n);
  return {lo, hi};
}

// Taps t in [0, n) (weight order) whose input coordinate o*stride - pad + t'*dilation is in
// [0, size), t' = t or n-1-t when flipped: a contiguous range.
inline void valid_taps(int64_t o, int64_t stride, int64_t pad, int64_t dilation, int64_t n, int64_t size, bool flip,
                       int64_t* begin, int64_t* end) {
  const StepRange inside = steps_inside(o * stride - pad, dilation, size, n);  // in t' order
  *begin = flip ? n - inside.hi : inside.lo;
  *end = flip ? n - inside.lo : inside.hi;
}

}  // namespace convjit::detail
