// The FMA peak of one core, measured in the benchmark run itself (never one machine's figure):
// GFLOP/s of independent vfmadd231ps chains, per ISA the host has.
#pragma once

namespace convjit_bench {

// Zero when the host lacks the ISA.
double fma_peak_gflops_avx2();
double fma_peak_gflops_avx512();

}  // namespace convjit_bench
