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
 * (a NaN lane is rare: tested once per vector, then handled off the common path) */
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
/* the lanes of a mask_n mask (AVX2 has no 16-bit masked moves: simd_rows.h's vldm16 and
 * vstm16 take the partial step of a bf16 row through a small buffer) */
static inline int mask_lanes(M m) {
    return __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)));
}
/* to an address aligned to VW bf16 (16 bytes) */
static inline void vstream16(sn_bf16 *p, V v) { _mm_stream_si128((__m128i *)(void *)p, vrnd16(v)); }

#endif
