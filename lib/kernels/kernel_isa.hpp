// The process-wide ISA cap of tier 0 (the ISAs and the host's are jit/abi/isa.hpp's). A runtime's
// own cap (Policy::max_isa) chooses among tier 0's registered rows (forward_kernels.hpp); the
// register tile inside them, shared by every runtime of the process and by the backward ops,
// follows CONVJIT_MAX_ISA alone, like oneDNN's ONEDNN_MAX_CPU_ISA.
#pragma once

#include "isa.hpp"

namespace convjit::detail {

jit::Isa process_isa_cap();  // CONVJIT_MAX_ISA=avx2: Avx2Fma; else no cap (Avx512), read once

// The host has `isa` and the process-wide cap allows it: the test of every tier-0 kernel that
// follows CONVJIT_MAX_ISA alone (the register tile, the panel packing, the backward and pooling kernels).
bool process_may_use(jit::Isa isa);

}  // namespace convjit::detail
