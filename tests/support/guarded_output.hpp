// An output buffer between two guard zones: what a kernel writes past either end of its output.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace convjit::testing {

// An output buffer of n elements pre-filled with NaN, between two guard zones of a sentinel
// value that the call must not write (catches tile kernels storing past either end).
class GuardedOutput {
 public:
  explicit GuardedOutput(int64_t n) : n_(n), storage_(static_cast<size_t>(n + 2 * kGuard), kSentinel) {
    std::fill_n(data(), n, std::numeric_limits<float>::quiet_NaN());
  }
  float* data() { return storage_.data() + kGuard; }
  std::vector<float> values() const { return {storage_.begin() + kGuard, storage_.end() - kGuard}; }
  ::testing::AssertionResult guards_intact(const char* name, const std::string& context) const {
    for (int64_t i = 0; i < kGuard; ++i) {
      const bool before = std::memcmp(&storage_[size_t(i)], &kSentinel, sizeof(float)) == 0;
      const bool after = std::memcmp(&storage_[size_t(kGuard + n_ + i)], &kSentinel, sizeof(float)) == 0;
      if (!before || !after) {
        return ::testing::AssertionFailure() << name << " written out of bounds: element "
                                             << (before ? n_ + i : -kGuard + i) << " of " << n_ << "\n  " << context;
      }
    }
    return ::testing::AssertionSuccess();
  }

 private:
  static constexpr int64_t kGuard = 64;
  static constexpr float kSentinel = -31337.25f;
  int64_t n_;
  std::vector<float> storage_;
};

}  // namespace convjit::testing
