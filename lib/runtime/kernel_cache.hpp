// Compiled kernels by specialization key. A kernel leaves only by eviction
// (lib/runtime/kernel_eviction.cpp), which unlinks it from every slot, waits out its readers
// (grace_periods.hpp) and only then frees it, so a pointer a call read from a slot stays valid
// until the call has returned.
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
  // Removes the kernel; the caller frees it once no call can still run it.
  std::unique_ptr<jit::CompiledKernel> take(const jit::CompiledKernel* kernel);
  std::vector<const jit::CompiledKernel*> list();  // in insertion order
  int64_t kernels();
  int64_t code_bytes();
  int64_t mapped_bytes();  // the code budget's measure
  std::mutex& mutex() { return mutex_; }  // held across fork() (lib/runtime/fork.cpp)

 private:
  std::mutex mutex_;
  std::unordered_multimap<uint64_t, std::unique_ptr<jit::CompiledKernel>> kernels_;
  std::vector<const jit::CompiledKernel*> order_;  // insertion order
  int64_t code_bytes_ = 0, mapped_bytes_ = 0;
};

}  // namespace convjit::detail
