#include "kernel_cache.hpp"

namespace convjit::detail {

const jit::CompiledKernel* KernelCache::find(const jit::SpecKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [first, last] = kernels_.equal_range(key.hash());
  for (auto it = first; it != last; ++it) {
    if (it->second->key == key) return it->second.get();
  }
  return nullptr;
}

const jit::CompiledKernel* KernelCache::insert(std::unique_ptr<jit::CompiledKernel> kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t hash = kernel->key.hash();
  auto [first, last] = kernels_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (it->second->key == kernel->key) return it->second.get();
  }
  code_bytes_ += int64_t(kernel->code_bytes);
  mapped_bytes_ += int64_t(kernel->mapped_bytes);
  return kernels_.emplace(hash, std::move(kernel))->second.get();
}

int64_t KernelCache::kernels() {
  std::lock_guard<std::mutex> lock(mutex_);
  return int64_t(kernels_.size());
}

int64_t KernelCache::code_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return code_bytes_;
}

int64_t KernelCache::mapped_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return mapped_bytes_;
}

}  // namespace convjit::detail
