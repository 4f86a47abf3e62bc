#include "threads.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>

namespace convjit::detail {
namespace {

int default_thread_count() {
  if (const char* env = std::getenv("CONVJIT_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) return std::max(1, CPU_COUNT(&allowed));
  return 1;
}

std::atomic<int> configured_threads{0};  // 0: not chosen yet

struct AlignedFree {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
};

}  // namespace

int thread_count() {
  int n = configured_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  n = default_thread_count();
  configured_threads.store(n, std::memory_order_relaxed);
  return n;
}

int64_t l2_cache_bytes() {
  static const int64_t bytes = [] {
    const long reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return reported > 0 ? int64_t(reported) : int64_t(1) << 20;
  }();
  return bytes;
}

void set_thread_count(int threads) {
  configured_threads.store(threads > 0 ? threads : default_thread_count());
}

namespace {

struct ThreadBuffer {
  std::unique_ptr<float[], AlignedFree> data;
  size_t capacity = 0;

  float* at_least(size_t floats) {
    if (floats > capacity) {
      data.reset(static_cast<float*>(::operator new[](floats * sizeof(float), std::align_val_t(64))));
      capacity = floats;
    }
    return data.get();
  }
};

}  // namespace

float* thread_scratch(size_t floats) {
  thread_local ThreadBuffer buffer;
  return buffer.at_least(std::max(floats, kScratchFloats));
}

float* thread_operands(size_t floats) {
  thread_local ThreadBuffer buffer;
  return buffer.at_least(floats);
}

float* thread_layout_copies(size_t floats) {
  thread_local ThreadBuffer buffer;
  return buffer.at_least(floats);
}

float* thread_rewrite_outputs(size_t floats) {
  thread_local ThreadBuffer buffer;
  return buffer.at_least(floats);
}

float* thread_grid_maps(size_t floats) {
  thread_local ThreadBuffer buffer;
  return buffer.at_least(floats);
}

}  // namespace convjit::detail
