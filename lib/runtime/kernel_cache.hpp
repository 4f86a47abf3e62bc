// Compiled kernels by specialization key. Kernels are never freed while their runtime lives, so
// a pointer read from a detector slot stays valid even if that slot is recycled meanwhile.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend.hpp"

namespace convjit::detail {

class KernelCache {
 public:
  const jit::CompiledKernel* find(const jit::SpecKey& key);
  // Takes ownership; returns the cached kernel (the existing one if the key was already there).
  const jit::CompiledKernel* insert(std::unique_ptr<jit::CompiledKernel> kernel);
  int64_t kernels();
  int64_t code_bytes();
  int64_t mapped_bytes();  // the code budget's measure
  std::mutex& mutex() { return mutex_; }  // held across fork() (lib/runtime/fork.cpp)

 private:
  std::mutex mutex_;
  std::unordered_multimap<uint64_t, std::unique_ptr<jit::CompiledKernel>> kernels_;
  int64_t code_bytes_ = 0, mapped_bytes_ = 0;
};

}  // namespace convjit::detail
