// lib/runtime/kernel_cache: compiled kernels by specialization key. A key finds its kernel, a
// second insert of the same key keeps the first (and its code), other keys find nothing, and the
// code bytes are the sum of the kernels'.
#include <gtest/gtest.h>

#include <memory>

#include "kernel_cache.hpp"

namespace convjit::testing {
namespace {

jit::SpecKey key_with(int64_t kernel_w, int32_t relu) {
  jit::SpecKey k{};
  k.rank = 1;
  k.layout = CONVJIT_NCHW;
  k.relu = relu;
  k.isa = jit::Isa::Avx2Fma;
  k.oc_class = 4;
  for (int d = 0; d < 3; ++d) k.kernel[d] = k.stride[d] = k.dilation[d] = 1;
  k.kernel[2] = kernel_w;
  return k;
}

std::unique_ptr<jit::CompiledKernel> kernel_for(const jit::SpecKey& key, size_t code_bytes) {
  auto k = std::make_unique<jit::CompiledKernel>();
  k->key = key;
  k->name = key.name();
  k->code_bytes = code_bytes;
  return k;
}

TEST(KernelCache, FindsByKeyKeepsTheFirstOfAKeyAndSumsCodeBytes) {
  detail::KernelCache cache;
  const jit::SpecKey a = key_with(3, 0), b = key_with(3, 1), c = key_with(5, 0);
  EXPECT_EQ(cache.find(a), nullptr);
  const jit::CompiledKernel* ka = cache.insert(kernel_for(a, 100));
  const jit::CompiledKernel* kb = cache.insert(kernel_for(b, 40));
  ASSERT_NE(ka, nullptr);
  ASSERT_NE(kb, nullptr);
  EXPECT_NE(ka, kb);
  EXPECT_EQ(cache.find(a), ka);
  EXPECT_EQ(cache.find(b), kb);
  EXPECT_EQ(cache.find(c), nullptr);
  EXPECT_EQ(cache.insert(kernel_for(a, 999)), ka) << "a second compile of a key must not replace the first";
  EXPECT_EQ(cache.kernels(), 2);
  EXPECT_EQ(cache.code_bytes(), 140);
}

}  // namespace
}  // namespace convjit::testing
