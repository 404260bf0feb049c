/* AVX2 + FMA vector primitives for simd_rows.h, 8 float lanes. Included only by the
 * translation units compiled with -mavx2 -mfma (avx2.c, avx2_bf16.c), which
 * run only after CPUID says so (cpu.c). */
#ifndef SN_KERNELS_AVX2_H
#define SN_KERNELS_AVX2_H

#include <immintrin.h>
#include <string.h>

#include "siamesenorm.h"

typedef __m256 V;
typedef __m256i M;
#define VW    8
#define MFULL _mm256_set1_epi32(-1)
/* no SN_V_ALIGN_HEAD: sweeps stepping on the output's 32-byte boundaries measured no faster here
 * (docs/performance.md, "Steps on the output's lines") */

static inline V vld(const float *p) { return _mm256_loadu_ps(p); }
static inline void vst(float *p, V v) { _mm256_storeu_ps(p, v); }
static inline V vldm(const float *p, M m) { return _mm256_maskload_ps(p, m); }
static inline void vstm(float *p, M m, V v) { _mm256_maskstore_ps(p, m, v); }
static inline V vmaskz(M m, V v) { return _mm256_and_ps(_mm256_castsi256_ps(m), v); }
static inline M mask_n(int k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline void vstream(float *p, V v) { _mm256_stream_ps(p, v); }
static inline V vset1(float a) { return _mm256_set1_ps(a); }
static inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm256_div_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
static inline V vfnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
static inline V vfms(V a, V b, V c) { return _mm256_fmsub_ps(a, b, c); }
/* The reductions' unit (simd_rows.h): a row's columns go to accumulator sets of 8 lanes, and a
 * vector holds VSETS of them; vfold8 adds a vector's sets (here: one, the vector itself). */
#define VSETS 1
static inline __m256 vfold8(V a) { return a; }

/* ---- bf16 rows: VW elements widened into a vector (exact), a vector rounded into VW -------- */

/* VW floats rounded to bf16 as sn_k_bf16_round: to nearest even on the bits, NaNs quieted
 * (a NaN lane is rare: tested once per vector, then handled off the common path; the test is
 * vmovmskps and test: vtestps, one instruction fewer, made the bf16 elementwise calls 10% slower
 * on Zen 4, docs/performance.md) */
static inline __m128i vrnd16(V v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
    r = _mm256_srli_epi32(r, 16);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (__builtin_expect(_mm256_movemask_ps(nan) != 0, 0))
        r = _mm256_blendv_epi8(r,
                               _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)),
                               _mm256_castps_si256(nan));
    /* 8 x 32 -> 8 x 16: pack (lanes 0-3 and 4-7 land in each 128-bit half), then gather */
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8);
    return _mm256_castsi256_si128(p);
}
static inline V vld16(const sn_bf16 *p) {
    const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline void vst16(sn_bf16 *p, V v) { _mm_storeu_si128((__m128i *)(void *)p, vrnd16(v)); }
/* a at p and b at q, rounded as vst16 but together, in 16-bit lanes, for a and b without NaN
 * lanes: split each float into its high word h and low word l (one byte shuffle a vector, then a
 * blend and an alignr put both vectors' h in one register and their l in another); h is
 * incremented where l + (h & 1) > 0x8000, which is (bits + 0x7fff + lsb) >> 16 of vrnd16; one
 * lane-crossing permute then leaves a's eight results in the low half, b's in the high. */
static inline void vst16x2_num(sn_bf16 *p, V a, sn_bf16 *q, V b) {
    /* per 128-bit lane: a's four h then its four l; b's four l then its four h */
    const __m256i ka = _mm256_setr_epi8(2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13, 2, 3,
                                        6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13);
    const __m256i kb = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1,
                                        4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    const __m256i sa = _mm256_shuffle_epi8(_mm256_castps_si256(a), ka);
    const __m256i sb = _mm256_shuffle_epi8(_mm256_castps_si256(b), kb);
    const __m256i h = _mm256_blend_epi32(sa, sb, 0xCC); /* a's h, b's h (per lane) */
    const __m256i l = _mm256_alignr_epi8(sb, sa, 8);    /* a's l, b's l */
    const __m256i s = _mm256_adds_epu16(l, _mm256_and_si256(h, _mm256_set1_epi16(1)));
    /* s > 0x8000 unsigned: s ^ 0x8000 > 0 signed; the mask is -1 there */
    const __m256i up =
        _mm256_cmpgt_epi16(_mm256_xor_si256(s, _mm256_set1_epi16(-0x8000)), _mm256_setzero_si256());
    const __m256i r = _mm256_permute4x64_epi64(_mm256_sub_epi16(h, up), 0xD8);
    /* (the high half first: GCC then stores it straight from the register) */
    _mm_storeu_si128((__m128i *)(void *)q, _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128((__m128i *)(void *)p, _mm256_castsi256_si128(r));
}
/* a at p and b at q as two vst16 (a NaN in either takes vst16) */
static inline void vst16x2(sn_bf16 *p, V a, sn_bf16 *q, V b) {
    const __m256 nan = _mm256_cmp_ps(a, b, _CMP_UNORD_Q);
    if (__builtin_expect(_mm256_movemask_ps(nan) != 0, 0)) {
        vst16(p, a), vst16(q, b);
        return;
    }
    vst16x2_num(p, a, q, b);
}
/* two vst16x2 with one NaN test for the four vectors */
static inline void vst16x4(sn_bf16 *p0, V a0, sn_bf16 *q0, V b0, sn_bf16 *p1, V a1, sn_bf16 *q1,
                           V b1) {
    const __m256 nan =
        _mm256_or_ps(_mm256_cmp_ps(a0, b0, _CMP_UNORD_Q), _mm256_cmp_ps(a1, b1, _CMP_UNORD_Q));
    if (__builtin_expect(_mm256_movemask_ps(nan) != 0, 0)) {
        vst16x2(p0, a0, q0, b0), vst16x2(p1, a1, q1, b1);
        return;
    }
    vst16x2_num(p0, a0, q0, b0), vst16x2_num(p1, a1, q1, b1);
}
/* the lanes of a mask_n mask (AVX2 has no 16-bit masked moves: simd_rows.h's vldm16 and
 * vstm16 take the partial step of a bf16 row through a small buffer) */
static inline int mask_lanes(M m) {
    return __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)));
}
/* to an address aligned to VW bf16 (16 bytes) */
static inline void vstream16(sn_bf16 *p, V v) { _mm_stream_si128((__m128i *)(void *)p, vrnd16(v)); }

#endif
