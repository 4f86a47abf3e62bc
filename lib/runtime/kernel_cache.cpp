#include "kernel_cache.hpp"

#include <algorithm>

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
  order_.push_back(kernel.get());
  return kernels_.emplace(hash, std::move(kernel))->second.get();
}

std::unique_ptr<jit::CompiledKernel> KernelCache::take(const jit::CompiledKernel* kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [first, last] = kernels_.equal_range(kernel->key.hash());
  for (auto it = first; it != last; ++it) {
    if (it->second.get() != kernel) continue;
    std::unique_ptr<jit::CompiledKernel> taken = std::move(it->second);
    kernels_.erase(it);
    order_.erase(std::find(order_.begin(), order_.end(), kernel));
    code_bytes_ -= int64_t(taken->code_bytes);
    mapped_bytes_ -= int64_t(taken->mapped_bytes);
    return taken;
  }
  return nullptr;
}

std::vector<const jit::CompiledKernel*> KernelCache::list() {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_;
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
