#include "fma_peak.hpp"

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace convjit_bench {
namespace {

// Enough independent chains to cover the FMA latency on both ports of any of this project's CPUs
// (4-5 cycles x 2 ports): 12 ymm, 24 zmm (of 16 and 32 registers).
constexpr int kAvx2Chains = 12, kAvx512Chains = 24;
constexpr long kIterations = 4000000;
constexpr int kRepeats = 5;  // best of: the other core's neighbours only ever slow a run down

template <typename Run>
double best_gflops(Run&& run, double flops_per_iteration) {
  double best = 0;
  for (int r = 0; r < kRepeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const float sink = run();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(sink);  // keeps the chains alive
    best = std::max(best, flops_per_iteration * double(kIterations) / seconds * 1e-9);
  }
  return best;
}

__attribute__((target("avx2,fma"))) float avx2_chains() {
  __m256 acc[kAvx2Chains];
  for (int i = 0; i < kAvx2Chains; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-4f);
  for (long it = 0; it < kIterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAvx2Chains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < kAvx2Chains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  return _mm256_cvtss_f32(sum);
}

__attribute__((target("avx512f"))) float avx512_chains() {
  __m512 acc[kAvx512Chains];
  for (int i = 0; i < kAvx512Chains; ++i) acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  for (long it = 0; it < kIterations; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kAvx512Chains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < kAvx512Chains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return lanes[0];
}

}  // namespace

double fma_peak_gflops_avx2() {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0;
  return best_gflops(avx2_chains, 2.0 * 8 * kAvx2Chains);
}

double fma_peak_gflops_avx512() {
  if (!__builtin_cpu_supports("avx512f")) return 0;
  return best_gflops(avx512_chains, 2.0 * 16 * kAvx512Chains);
}

}  // namespace convjit_bench
