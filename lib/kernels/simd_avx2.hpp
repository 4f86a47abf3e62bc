// The vector operations tier 0's ISA-generic kernels are written in, for AVX2/FMA: 8 floats per
// vector, lane masks as vectors. Include only from files compiled with -mavx2 -mfma; its AVX-512
// twin is simd_avx512.hpp, with the same members.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace convjit::detail {

struct Avx2Floats {
  using Vec = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  static constexpr int kRegisters = 16;
  static constexpr bool kOpmasks = false;  // masks are vectors: a masked store takes several uops

  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static Vec load(const float* p, Mask lanes) { return _mm256_maskload_ps(p, lanes); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static void store(float* p, Vec v, Mask lanes) { _mm256_maskstore_ps(p, lanes, v); }
  static Vec broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }  // a * b + c, one rounding
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  // max(0, v) with v second: vmaxps returns its 2nd operand on NaN and -0, as every tier does.
  static Vec relu(Vec v) { return _mm256_max_ps(_mm256_setzero_ps(), v); }
  // Lanes [0, n), n in [0, kLanes].
  static Mask first_lanes(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Mask all_lanes() { return _mm256_set1_epi32(-1); }
  static Mask no_lanes() { return _mm256_setzero_si256(); }
  // Lanes l whose position first + l lies in [0, end), compared in int32: first and end must lie
  // within 2^31 - kLanes of zero (lane_rows.hpp: w_positions_fit_lanes).
  static Mask lanes_between(int64_t first, int64_t end) {
    const __m256i position =
        _mm256_add_epi32(_mm256_set1_epi32(int32_t(first)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i at_least_zero = _mm256_cmpgt_epi32(position, _mm256_set1_epi32(-1));
    const __m256i below_end = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(end)), position);
    return _mm256_and_si256(at_least_zero, below_end);
  }
  // The even lanes of a and b, in order: a0 a2 a4 a6 b0 b2 b4 b6.
  static Vec even_lanes(Vec a, Vec b) {
    const __m256 even = _mm256_shuffle_ps(a, b, 0x88);  // a0 a2 b0 b2 | a4 a6 b4 b6
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8));
  }
  // The even lanes of 2 * kLanes floats at p; masked: first and second mask the two halves.
  static Vec load_even(const float* p) { return even_lanes(load(p), load(p + kLanes)); }
  static Vec load_even(const float* p, Mask first, Mask second) {
    return even_lanes(load(p, first), load(p + kLanes, second));
  }
  // The odd lanes: a1 a3 a5 a7 b1 b3 b5 b7.
  static Vec odd_lanes(Vec a, Vec b) {
    const __m256 odd = _mm256_shuffle_ps(a, b, 0xDD);  // a1 a3 b1 b3 | a5 a7 b5 b7
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), 0xD8));
  }
  // a0 b0 a1 b1 a2 b2 a3 b3, and a4 b4 ... a7 b7: the inverse of even_lanes and odd_lanes.
  static Vec zip_low(Vec a, Vec b) {
    return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x20);
  }
  static Vec zip_high(Vec a, Vec b) {
    return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x31);
  }
  // rows[j] lane i becomes rows[i] lane j (an 8 x 8 transpose in registers).
  __attribute__((always_inline)) static void transpose(Vec (&rows)[kLanes]) {
    Vec t[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(rows[i], rows[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(rows[i], rows[i + 1]);
    }
    Vec u[8];
    for (int i = 0; i < 8; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; ++i) {
      rows[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
      rows[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
  }
  static Vec set1(float v) { return _mm256_set1_ps(v); }
  static Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  // (v > acc) ? v : acc, lane by lane: a running maximum that NaN never enters and whose first of
  // equal values (+0 and -0) stays.
  static Vec max_so_far(Vec acc, Vec v) { return _mm256_max_ps(v, acc); }
  static Mask is_number(Vec v) { return _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q)); }
  static Mask equal(Vec a, Vec b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)); }
  static Mask either(Mask a, Mask b) { return _mm256_or_si256(a, b); }
  static Mask both(Mask a, Mask b) { return _mm256_and_si256(a, b); }
  static bool any(Mask m) { return !_mm256_testz_si256(m, m); }
  static Mask first_not_second(Mask a, Mask b) { return _mm256_andnot_si256(b, a); }
  static Vec select(Mask m, Vec a, Vec b) { return _mm256_blendv_ps(b, a, _mm256_castsi256_ps(m)); }  // m ? a : b
  // a + b in the lanes of m, a (untouched, even -0) in the others.
  static Vec add_where(Mask m, Vec a, Vec b) { return select(m, _mm256_add_ps(a, b), a); }
  static void leave() { _mm256_zeroupper(); }  // before returning to SSE code
};

}  // namespace convjit::detail
