// The vector operations tier 0's ISA-generic kernels are written in, for AVX-512 (F, BW, DQ, VL):
// 16 floats per vector, lane masks in opmask registers (masked loads do not fault). Include only
// from files compiled with the AVX-512 flags; the members are simd_avx2.hpp's.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace convjit::detail {

struct Avx512Floats {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr int kRegisters = 32;
  static constexpr bool kOpmasks = true;  // masks in opmask registers

  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static Vec load(const float* p, Mask lanes) { return _mm512_maskz_loadu_ps(lanes, p); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, Vec v, Mask lanes) { _mm512_mask_storeu_ps(p, lanes, v); }
  static Vec broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c, one rounding
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  // max(0, v) with v second: vmaxps returns its 2nd operand on NaN and -0, as every tier does.
  // (The zero-masked form: GCC 12's _mm512_max_ps passes an undefined vector and warns about it.)
  static Vec relu(Vec v) { return _mm512_maskz_max_ps(all_lanes(), _mm512_setzero_ps(), v); }
  // Lanes [0, n), n in [0, kLanes].
  static Mask first_lanes(int64_t n) { return Mask(n >= kLanes ? 0xFFFF : (1u << n) - 1); }
  static Mask all_lanes() { return Mask(0xFFFF); }
  static Mask no_lanes() { return Mask(0); }
  // Lanes l whose position first + l lies in [0, end), compared in int32: first and end must lie
  // within 2^31 - kLanes of zero (lane_rows.hpp: w_positions_fit_lanes).
  static Mask lanes_between(int64_t first, int64_t end) {
    const __m512i position = _mm512_add_epi32(_mm512_set1_epi32(int32_t(first)),
                                              _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    return Mask(_mm512_cmpgt_epi32_mask(position, _mm512_set1_epi32(-1)) &
                _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(int32_t(end)), position));
  }
  // The even lanes of a and b, in order: a0 a2 ... a14 b0 b2 ... b14.
  static Vec even_lanes(Vec a, Vec b) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(a, even, b);
  }
  // The even lanes of 2 * kLanes floats at p; masked: first and second mask the two halves.
  static Vec load_even(const float* p) { return even_lanes(load(p), load(p + kLanes)); }
  static Vec load_even(const float* p, Mask first, Mask second) {
    return even_lanes(load(p, first), load(p + kLanes, second));
  }
  // The odd lanes: a1 a3 ... a15 b1 b3 ... b15.
  static Vec odd_lanes(Vec a, Vec b) {
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_permutex2var_ps(a, odd, b);
  }
  // Lanes K.. of v, then next's first K: v(K) ... v(15) next(0) ... next(K - 1). (Zero-masked with
  // every lane: GCC 12's plain form passes an undefined vector and warns about it.)
  template <int K>
  static Vec lanes_after(Vec v, Vec next) {
    return _mm512_castsi512_ps(
        _mm512_maskz_alignr_epi32(all_lanes(), _mm512_castps_si512(next), _mm512_castps_si512(v), K));
  }
  // a0 b0 a1 b1 ... a7 b7, and a8 b8 ... a15 b15: the inverse of even_lanes and odd_lanes.
  static Vec zip_low(Vec a, Vec b) {
    const __m512i low = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    return _mm512_permutex2var_ps(a, low, b);
  }
  static Vec zip_high(Vec a, Vec b) {
    const __m512i high = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    return _mm512_permutex2var_ps(a, high, b);
  }
  // rows[j] lane i becomes rows[i] lane j (a 16 x 16 transpose in registers): pairs of rows
  // interleaved, then pairs of pairs, then the 128-bit quarters gathered in two steps. (Zero-masked
  // forms with every lane: GCC 12's plain ones pass an undefined vector and warn about it.)
  __attribute__((always_inline)) static void transpose(Vec (&rows)[kLanes]) {
    transpose_to(
        rows, [&](int i, Vec row) __attribute__((always_inline)) { rows[i] = row; });
  }
  // The same, each transposed row i handed to put(i, row) as soon as it is formed: a caller that
  // stores it frees its register at once (one that keeps all 16 until the end spills).
  template <typename Put>
  __attribute__((always_inline)) static void transpose_to(const Vec (&rows)[kLanes], Put&& put) {
    Vec t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_maskz_unpacklo_ps(all_lanes(), rows[i], rows[i + 1]);
      t[i + 1] = _mm512_maskz_unpackhi_ps(all_lanes(), rows[i], rows[i + 1]);
    }
    for (int m = 0; m < 16; m += 4) {  // u[m + c]: quarter q holds rows m..m+3 of column 4q + c
      const __m512d a = _mm512_castps_pd(t[m]), b = _mm512_castps_pd(t[m + 2]);
      const __m512d c = _mm512_castps_pd(t[m + 1]), d = _mm512_castps_pd(t[m + 3]);
      u[m] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(__mmask8(0xFF), a, b));
      u[m + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(__mmask8(0xFF), a, b));
      u[m + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(__mmask8(0xFF), c, d));
      u[m + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(__mmask8(0xFF), c, d));
    }
    for (int c = 0; c < 4; ++c) {
      const Vec even_01 = _mm512_maskz_shuffle_f32x4(all_lanes(), u[c], u[4 + c], 0x88),
                odd_01 = _mm512_maskz_shuffle_f32x4(all_lanes(), u[c], u[4 + c], 0xDD);
      const Vec even_23 = _mm512_maskz_shuffle_f32x4(all_lanes(), u[8 + c], u[12 + c], 0x88);
      const Vec odd_23 = _mm512_maskz_shuffle_f32x4(all_lanes(), u[8 + c], u[12 + c], 0xDD);
      put(c, _mm512_maskz_shuffle_f32x4(all_lanes(), even_01, even_23, 0x88));
      put(8 + c, _mm512_maskz_shuffle_f32x4(all_lanes(), even_01, even_23, 0xDD));
      put(4 + c, _mm512_maskz_shuffle_f32x4(all_lanes(), odd_01, odd_23, 0x88));
      put(12 + c, _mm512_maskz_shuffle_f32x4(all_lanes(), odd_01, odd_23, 0xDD));
    }
  }
  static Vec set1(float v) { return _mm512_set1_ps(v); }
  static Vec div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  // (v > acc) ? v : acc, lane by lane: a running maximum that NaN never enters and whose first of
  // equal values (+0 and -0) stays.
  static Vec max_so_far(Vec acc, Vec v) { return _mm512_maskz_max_ps(all_lanes(), v, acc); }
  static Mask is_number(Vec v) { return _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q); }
  static Mask equal(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static Mask either(Mask a, Mask b) { return _kor_mask16(a, b); }
  static Mask both(Mask a, Mask b) { return _kand_mask16(a, b); }
  static bool any(Mask m) { return m != 0; }
  static Mask first_not_second(Mask a, Mask b) { return _kandn_mask16(b, a); }
  static Vec select(Mask m, Vec a, Vec b) { return _mm512_mask_blend_ps(m, b, a); }  // m ? a : b
  // a + b in the lanes of m, a (untouched, even -0) in the others.
  static Vec add_where(Mask m, Vec a, Vec b) { return _mm512_mask_add_ps(a, m, a, b); }
  static void leave() { _mm256_zeroupper(); }  // before returning to SSE code
};

// AVX-512 (VL) on 8 floats: for kernels whose contract fixes 8 lanes (the NCHW direct backward
// filter's chains by ow mod 8), with Avx2Floats' members for them: opmask loads that do not fault
// and one 16-float load and one permute for stride 2's even lanes where AVX2 needs two loads and
// two shuffles.
struct Avx512YmmFloats {
  using Vec = __m256;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  static constexpr int kRegisters = 32;

  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static Vec load(const float* p, Mask lanes) { return _mm256_maskz_loadu_ps(lanes, p); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }  // a * b + c, one rounding
  static Mask no_lanes() { return Mask(0); }
  // As Avx512Floats::lanes_between, on 8 lanes.
  static Mask lanes_between(int64_t first, int64_t end) {
    const __m256i position =
        _mm256_add_epi32(_mm256_set1_epi32(int32_t(first)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return Mask(_mm256_cmpgt_epi32_mask(position, _mm256_set1_epi32(-1)) &
                _mm256_cmpgt_epi32_mask(_mm256_set1_epi32(int32_t(end)), position));
  }
  // The even lanes of 16 floats at p: one load and one permute; masked: first and second mask the
  // two halves, one 16-lane masked load.
  static Vec load_even(const float* p) { return even_of(_mm512_loadu_ps(p)); }
  static Vec load_even(const float* p, Mask first, Mask second) {
    return even_of(_mm512_maskz_loadu_ps(__mmask16(first | unsigned(second) << 8), p));
  }
  static void leave() { _mm256_zeroupper(); }

 private:
  static Vec even_of(__m512 v) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    return _mm512_maskz_extractf32x8_ps(__mmask8(0xFF), _mm512_maskz_permutexvar_ps(__mmask16(0xFFFF), even, v), 0);
  }
};

// AVX-512 on two channels' 8-lane chains at once: a 512-bit vector holds two accumulators of
// Avx512YmmFloats' kernels in its halves (kChannels), one output channel's in each, so each half's
// operations, and bits, are the 8-lane kernel's while one instruction does both. Inputs (load,
// load_even) fill both halves with the same pixels; load_channels puts one channel's pixels in each
// half; masks are the 8 pixel lanes'.
struct Avx512ChannelPairs {
  using Vec = __m512;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  static constexpr int kRegisters = 32;
  static constexpr int kChannels = 2;

  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load(const float* p) { return both_halves(_mm256_loadu_ps(p)); }
  static Vec load(const float* p, Mask lanes) { return both_halves(_mm256_maskz_loadu_ps(lanes, p)); }
  static Vec load_even(const float* p) { return even_of(_mm512_loadu_ps(p)); }
  static Vec load_even(const float* p, Mask first, Mask second) {
    return even_of(_mm512_maskz_loadu_ps(__mmask16(first | unsigned(second) << 8), p));
  }
  // Channel 0's pixels at p, channel 1's `channel_step` floats on.
  static Vec load_channels(const float* p, int64_t channel_step) {
    return halves(_mm256_loadu_ps(p), _mm256_loadu_ps(p + channel_step));
  }
  static Vec load_channels(const float* p, int64_t channel_step, Mask lanes) {
    return halves(_mm256_maskz_loadu_ps(lanes, p), _mm256_maskz_loadu_ps(lanes, p + channel_step));
  }
  static __m256 channel(Vec v, int k) {
    return k == 0 ? _mm512_maskz_extractf32x8_ps(__mmask8(0xFF), v, 0) : _mm512_maskz_extractf32x8_ps(__mmask8(0xFF), v, 1);
  }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c, one rounding
  static Mask no_lanes() { return Mask(0); }
  static Mask lanes_between(int64_t first, int64_t end) { return Avx512YmmFloats::lanes_between(first, end); }
  static void leave() { _mm256_zeroupper(); }

 private:
  // (Zero-masked forms with every lane, as Avx512Floats::transpose's.)
  static Vec both_halves(__m256 v) { return _mm512_maskz_broadcast_f32x8(__mmask16(0xFFFF), v); }
  static Vec halves(__m256 low, __m256 high) {
    return _mm512_maskz_insertf32x8(__mmask16(0xFFFF), both_halves(low), high, 1);
  }
  static Vec even_of(__m512 v) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    return _mm512_maskz_permutexvar_ps(__mmask16(0xFFFF), even, v);
  }
};

// Two depthwise groups' 8-lane chains at once: as Avx512ChannelPairs, one output channel's
// accumulator in each half, but each half's inputs from its own group's input channel (x rows
// `group_step` floats apart), so a block of two groups runs one instruction for both halves'
// operations and bits; at stride 2 one permute takes both groups' even lanes.
struct Avx512GroupPairs : Avx512ChannelPairs {
  static constexpr bool kGroupsInHalves = true;

  static Vec load_groups(const float* p, int64_t group_step) { return load_channels(p, group_step); }
  static Vec load_groups(const float* p, int64_t group_step, Mask lanes) { return load_channels(p, group_step, lanes); }
  // The even lanes of 16 floats at p in the low half, of 16 floats group_step on in the high one;
  // masked: first and second mask each group's two 8-float halves.
  static Vec load_even_groups(const float* p, int64_t group_step) {
    return evens(_mm512_loadu_ps(p), _mm512_loadu_ps(p + group_step));
  }
  static Vec load_even_groups(const float* p, int64_t group_step, Mask first, Mask second) {
    const __mmask16 both = __mmask16(first | unsigned(second) << 8);
    return evens(_mm512_maskz_loadu_ps(both, p), _mm512_maskz_loadu_ps(both, p + group_step));
  }

 private:
  static Vec evens(__m512 low, __m512 high) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(low, even, high);
  }
};

// Three channels' 8-lane chains: a pair's 512-bit vector and the third channel's 256-bit one, so
// a block of three channels runs no wasted half (a pair with a repeated channel does). Where the
// datapath is 256 bits wide (AMD Zen 4) a 512-bit FMA costs two 256-bit ones, so the third
// channel's 256-bit FMA is half the cost. Inputs fill the pair's halves and the third vector is
// the pair's low half (no extra load); each channel's operations and bits are the 8-lane kernel's.
struct Avx512ChannelTriples {
  struct Vec {
    __m512 pair;
    __m256 third;
  };
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  static constexpr int kRegisters = 32;
  static constexpr int kChannels = 3;
  static constexpr int kRegistersPerVector = 2;

  static Vec zero() { return {_mm512_setzero_ps(), _mm256_setzero_ps()}; }
  static Vec load(const float* p) { return of_pair(Avx512ChannelPairs::load(p)); }
  static Vec load(const float* p, Mask lanes) { return of_pair(Avx512ChannelPairs::load(p, lanes)); }
  static Vec load_even(const float* p) { return of_pair(Avx512ChannelPairs::load_even(p)); }
  static Vec load_even(const float* p, Mask first, Mask second) {
    return of_pair(Avx512ChannelPairs::load_even(p, first, second));
  }
  // Channel 0's pixels at p, channel 1's `channel_step` floats on, channel 2's twice that.
  static Vec load_channels(const float* p, int64_t channel_step) {
    return {Avx512ChannelPairs::load_channels(p, channel_step), _mm256_loadu_ps(p + 2 * channel_step)};
  }
  static Vec load_channels(const float* p, int64_t channel_step, Mask lanes) {
    return {Avx512ChannelPairs::load_channels(p, channel_step, lanes),
            _mm256_maskz_loadu_ps(lanes, p + 2 * channel_step)};
  }
  static __m256 channel(Vec v, int k) { return k < 2 ? Avx512ChannelPairs::channel(v.pair, k) : v.third; }
  static Vec fma(Vec a, Vec b, Vec c) {  // a * b + c, one rounding per lane
    return {_mm512_fmadd_ps(a.pair, b.pair, c.pair), _mm256_fmadd_ps(a.third, b.third, c.third)};
  }
  static Mask no_lanes() { return Mask(0); }
  static Mask lanes_between(int64_t first, int64_t end) { return Avx512YmmFloats::lanes_between(first, end); }
  // The pair's 16 floats, then the third's 8.
  static void save(float* p, Vec v) {
    _mm512_storeu_ps(p, v.pair);
    _mm256_storeu_ps(p + 16, v.third);
  }
  static Vec restore(const float* p) { return {_mm512_loadu_ps(p), _mm256_loadu_ps(p + 16)}; }
  static void leave() { _mm256_zeroupper(); }

 private:
  static Vec of_pair(__m512 both) { return {both, Avx512ChannelPairs::channel(both, 0)}; }
};

}  // namespace convjit::detail
