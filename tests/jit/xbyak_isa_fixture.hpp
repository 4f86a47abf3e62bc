// A suite of the Xbyak backend's kernels run once per ISA (the test parameter): skipped, saying
// which, where Xbyak or that ISA is missing on this host. Internal headers: the static-linked
// JIT suites only.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "backend.hpp"

namespace convjit::testing {

class XbyakIsaTest : public ::testing::TestWithParam<jit::Isa> {
 protected:
  void SetUp() override {
    if (!backend->unavailable_reason().empty()) GTEST_SKIP() << "xbyak: " << backend->unavailable_reason();
    if (!jit::host_has(GetParam())) {
      GTEST_SKIP() << "this host lacks " << jit::isa_name(GetParam()) << ": its kernels cannot run here";
    }
  }
  std::unique_ptr<jit::Backend> backend = jit::make_xbyak_backend();
};

inline constexpr jit::Isa kXbyakIsas[] = {jit::Isa::Avx2Fma, jit::Isa::Avx512};
inline std::string isa_test_name(const ::testing::TestParamInfo<jit::Isa>& info) {
  return jit::isa_name(info.param);
}

}  // namespace convjit::testing
