#include "perf_map.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <mutex>

namespace convjit::detail {

std::string perf_map_path() {
  return "/tmp/perf-" + std::to_string(getpid()) + ".map";
}

void append_to_perf_map(const void* address, size_t size, const std::string& name) {
  static std::mutex mutex;  // one line at a time, from any runtime's compiles
  std::lock_guard<std::mutex> lock(mutex);
  if (FILE* file = std::fopen(perf_map_path().c_str(), "a")) {
    std::fprintf(file, "%" PRIxPTR " %zx %s\n", reinterpret_cast<uintptr_t>(address), size, name.c_str());
    std::fclose(file);
  }
}

}  // namespace convjit::detail
