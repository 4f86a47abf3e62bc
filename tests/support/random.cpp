#include "support/random.hpp"

namespace convjit::testing {

std::vector<float> random_floats(Rng& rng, int64_t n, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = float(rng.uniform(lo, hi));
  return v;
}

std::vector<float> random_small_integers(Rng& rng, int64_t n, int lo, int hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = float(rng.uniform_int(lo, hi));
  return v;
}

}  // namespace convjit::testing
