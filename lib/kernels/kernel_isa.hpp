// The instruction sets tier 0's kernels are built for, what the host runs, and the process-wide
// cap. A runtime's own cap (Policy::max_isa) chooses among tier 0's registered rows
// (forward_kernels.hpp); the register tile inside them, shared by every runtime of the process and
// by the backward ops, follows CONVJIT_MAX_ISA alone, like oneDNN's ONEDNN_MAX_CPU_ISA.
#pragma once

namespace convjit::detail {

enum class KernelIsa { Portable, Avx2Fma, Avx512 };  // ordered; Avx512: F, BW, DQ and VL (and BMI2)
bool host_has(KernelIsa isa);
const char* isa_name(KernelIsa isa);  // "portable", "avx2", "avx512"
KernelIsa widest_host_isa();
KernelIsa process_isa_cap();  // CONVJIT_MAX_ISA=avx2: Avx2Fma; else no cap (Avx512), read once

}  // namespace convjit::detail
