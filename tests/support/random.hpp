// Deterministic randomness for tests: the same seed gives the same numbers on every platform and
// standard library (std::uniform_*_distribution is implementation-defined, so it is not used).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace convjit::testing {

// SplitMix64: tiny, fast, and good enough to draw shapes and tensor values.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (inclusive); the modulo bias is irrelevant for test shapes.
  int64_t uniform_int(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53; }
  bool chance(double probability) { return uniform(0.0, 1.0) < probability; }

 private:
  uint64_t state_;
};

// Seed of case `index` of a suite: independent streams without correlated neighbours.
inline uint64_t case_seed(uint64_t suite_seed, uint64_t index) {
  Rng mix(suite_seed ^ (index * 0xD1B54A32D192ED03ull));
  return mix.next();
}

// n floats uniform in [lo, hi).
std::vector<float> random_floats(Rng& rng, int64_t n, float lo = -1.0f, float hi = 1.0f);
// n floats drawn from the integers in [lo, hi]: many exact ties, for max-pool tie rules.
std::vector<float> random_small_integers(Rng& rng, int64_t n, int lo, int hi);

}  // namespace convjit::testing
