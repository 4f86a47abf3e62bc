// The runtime's view printed as a table: per configuration, calls and mean time per tier, the
// speedup, the compile time and the kernel (or why there is none).
#pragma once

#include <convjit/runtime.hpp>

namespace seednet {

void print_tier_table(convjit::Runtime& runtime);

}  // namespace seednet
