/* AVX-512 vector primitives for simd_rows.h, 16 float lanes with opmask tails. Included
 * only by the translation units compiled with -mavx512f -mavx512bw (and -mavx2 -mfma: avx512.c,
 * avx512_bf16.c, avx512bf16.c), which run only after CPUID and XCR0 say so (cpu.c). */
#ifndef SN_KERNELS_AVX512_H
#define SN_KERNELS_AVX512_H

#include <immintrin.h>
#include <string.h>

#include "siamesenorm.h"

typedef __m512 V;
typedef __mmask16 M;
#define VW    16
#define MFULL ((__mmask16)0xffff)
/* elementwise sweeps start with a partial step up to their output's first vector boundary
 * (simd_rows.h, COLS_AT): a full step's store is a whole 64-byte line of floats */
#define SN_V_ALIGN_HEAD

static inline V vld(const float *p) { return _mm512_loadu_ps(p); }
static inline void vst(float *p, V v) { _mm512_storeu_ps(p, v); }
static inline V vldm(const float *p, M m) { return _mm512_maskz_loadu_ps(m, p); }
static inline void vstm(float *p, M m, V v) { _mm512_mask_storeu_ps(p, m, v); }
static inline V vmaskz(M m, V v) { return _mm512_maskz_mov_ps(m, v); }
static inline M mask_n(int k) { return (M)((1u << k) - 1u); }
static inline M mask_rng(int lo, int hi) { return (M)(((1u << hi) - 1u) & ~((1u << lo) - 1u)); }
/* lanes o .. VW - 1 of a, then lanes 0 .. o - 1 of b (0 <= o < VW) */
static inline V vrot(V a, V b, int o) {
    const __m512i i =
        _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(o));
    return _mm512_permutex2var_ps(a, i, b);
}
static inline void vstream(float *p, V v) { _mm512_stream_ps(p, v); }
static inline V vset1(float a) { return _mm512_set1_ps(a); }
static inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm512_div_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
static inline V vfnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
static inline V vfms(V a, V b, V c) { return _mm512_fmsub_ps(a, b, c); }
/* The reductions' unit (simd_rows.h): a row's columns go to accumulator sets of 8 lanes, and a
 * vector holds VSETS of them (here two: lanes 0-7 and 8-15); vfold8 adds a vector's sets. */
#define VSETS 2
static inline __m256 vfold8(V a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}

/* ---- bf16 rows: VW elements widened into a vector (exact), a vector rounded into VW -------- */

/* VW floats rounded to bf16 as sn_k_bf16_round: to nearest even on the bits, NaNs quieted
 * (a NaN lane is rare: tested once per vector, then handled off the common path) */
static inline __m256i vrnd16_int(V v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
    r = _mm512_srli_epi32(r, 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    if (__builtin_expect(nan != 0, 0))
        r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}
#ifdef __AVX512BF16__
/* With AVX512-BF16 (avx512bf16.c): vcvtneps2bf16 rounds as sn_k_bf16_round (to nearest
 * even; a NaN keeps its sign and high payload bits and is quieted) except that it reads a
 * subnormal input as zero: a vector holding one (never in healthy activations, tested with one
 * fpclass) takes the integer rounding. It ignores MXCSR, as the integer rounding does. checkasm
 * compares the two on all 2^32 inputs. */
static inline __m256i vrnd16(V v) {
    if (__builtin_expect(_mm512_fpclass_ps_mask(v, 0x20) != 0, 0)) return vrnd16_int(v);
    return (__m256i)_mm512_cvtneps_pbh(v);
}
#else
static inline __m256i vrnd16(V v) { return vrnd16_int(v); }
#endif
static inline V vld16(const sn_bf16 *p) {
    const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline void vst16(sn_bf16 *p, V v) { _mm256_storeu_si256((__m256i *)(void *)p, vrnd16(v)); }
/* a at p and b at q, and four outputs (here vst16 each: a vector's rounding already ends in one
 * narrowing move) */
static inline void vst16x2(sn_bf16 *p, V a, sn_bf16 *q, V b) { vst16(p, a), vst16(q, b); }
static inline void vst16x4(sn_bf16 *p0, V a0, sn_bf16 *q0, V b0, sn_bf16 *p1, V a1, sn_bf16 *q1,
                           V b1) {
    vst16x2(p0, a0, q0, b0), vst16x2(p1, a1, q1, b1);
}
/* The partial step of a bf16 row: AVX512BW's 16-bit masked moves (the path needs AVX512BW,
 * cpu.c), on a 512-bit register whose upper 16 lanes the mask leaves off; the lanes off load 0,
 * are not stored, and fault on no page. Instead of simd_rows.h's buffer, whose byte copies
 * then a vector load miss store forwarding: the partial step of a bf16 row of 8 columns took
 * 3-5x AVX2's full step (docs/performance.md, "Rows that end in a partial vector"). */
#define SN_V_MASKED16
static inline V vldm16(const sn_bf16 *p, M m) {
    const __m256i h = _mm512_castsi512_si256(_mm512_maskz_loadu_epi16((__mmask32)m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline void vstm16(sn_bf16 *p, M m, V v) {
    _mm512_mask_storeu_epi16(p, (__mmask32)m, _mm512_castsi256_si512(vrnd16(v)));
}
/* to an address aligned to VW bf16 (32 bytes) */
static inline void vstream16(sn_bf16 *p, V v) {
    _mm256_stream_si256((__m256i *)(void *)p, vrnd16(v));
}

#endif
