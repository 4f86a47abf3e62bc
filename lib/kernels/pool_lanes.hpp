// One vector of pooling outputs in the making, over a vector type F: a running max from -inf that
// NaN never enters (`seen`: a number was met; a window of NaN gives NaN, one without a real tap
// -FLT_MAX) or a running sum divided once. Lane by lane the scalar path's operations, so every
// ISA gives its bits. Include only from files compiled for F's ISA; internal linkage.
#pragma once

#include <cfloat>
#include <cmath>

namespace convjit::detail {
namespace {

// Max backward's routing, one tap at a time in the window's order: the lanes whose tap value x
// equals the output's y and that no earlier tap took (each output's gradient goes to its first
// such tap), added to `routed`.
template <typename F>
inline __attribute__((always_inline)) typename F::Mask route_to_first_equal(typename F::Vec x, typename F::Vec y,
                                                                            typename F::Mask& routed) {
  const typename F::Mask here = F::first_not_second(F::equal(x, y), routed);
  routed = F::either(routed, here);
  return here;
}

// Without TracksNumbers, a max only: `seen` stays empty and only acc is meaningful (a kernel that
// forms lanes whose max stayed -inf again with it).
template <typename F, bool Max, bool TracksNumbers = true>
struct PoolLanes {
  typename F::Vec acc = Max ? F::set1(-INFINITY) : F::zero();
  typename F::Mask seen = F::no_lanes();

  inline __attribute__((always_inline)) void add(typename F::Vec value) {
    if constexpr (Max) {
      acc = F::max_so_far(acc, value);
      if constexpr (TracksNumbers) seen = F::either(seen, F::is_number(value));
    } else {
      acc = F::add(acc, value);
    }
  }
  inline __attribute__((always_inline)) typename F::Vec result(bool any_tap, float divisor) const {
    if constexpr (Max) return any_tap ? F::select(seen, acc, F::set1(NAN)) : F::set1(-FLT_MAX);
    return any_tap ? F::div(acc, F::set1(divisor)) : F::zero();
  }
};

}  // namespace
}  // namespace convjit::detail
