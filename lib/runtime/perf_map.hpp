// /tmp/perf-PID.map, the file `perf report` reads to name JIT code: one "ADDR SIZE name" line per
// emitted kernel (CONVJIT_PERF_MAP=1).
#pragma once

#include <cstddef>
#include <string>

namespace convjit::detail {

std::string perf_map_path();  // this process's
void append_to_perf_map(const void* address, size_t size, const std::string& name);

}  // namespace convjit::detail
