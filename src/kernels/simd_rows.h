/* SIMD row kernels, written once for any vector width and for fp32 or bf16 rows. Included by
 * avx2.c, avx512.c (fp32 rows) and avx2_bf16.c, avx512_bf16.c,
 * avx512bf16.c (bf16 rows, SN_K16 defined), each compiled with its path's -m flags,
 * after avx2_vectors.h or avx512_vectors.h has defined:
 *   V, M          the vector and lane-mask types; VW the number of float lanes
 *   vld vst       unaligned load / store;  vldm vstm  masked load / store (lanes off: 0 / kept)
 *   vmaskz        zero the lanes a mask leaves off;  mask_n(k) the first k lanes (0 < k < VW)
 *   SN_V_ALIGN_HEAD  defined where sweeps step on their output's vector boundaries (COLS_AT);
 *                 then also mask_rng(lo, hi), the lanes lo .. hi - 1 (0 <= lo < hi <= VW), and
 *                 vrot(a, b, o), lanes o .. VW - 1 of a then lanes 0 .. o - 1 of b (0 <= o < VW)
 *   MFULL         a mask value for full vectors (never used by a masked operation)
 *   vset1 vadd vsub vmul vdiv vfma(a,b,c)=a*b+c  vfnma(a,b,c)=c-a*b  vfms(a,b,c)=a*b-c
 *   VSETS vfold8  the 8-lane accumulator sets a vector holds (1 or 2), and their sum as 8 lanes
 *   vstream       streaming store to an address aligned to a whole vector (no fence: every
 *                 task that runs a kernel ends with one, sn_ctx_par)
 *   vld16 vst16 vstream16   the same on VW bf16: widened as loaded, rounded (vrnd16,
 *                 sn_k_bf16_round's bits) as stored;  vst16x2(p, a, q, b) two vst16, vst16x4
 *                 four (AVX2: rounded together);  mask_lanes(m) the lanes of a mask_n mask
 * and the including file SN_KERN_TABLE, the name of the table to define (an sn_kern, or with
 * SN_K16 an sn_kern16).
 * Every column, including the last partial vector (handled with masks), goes through the same
 * vector arithmetic, so results do not depend on where a row starts or how columns are split.
 * Each quantity has one definition below (xhat, s, ds, ...), used by every kernel that needs it:
 * the backward recomputes the forward's s with exactly the forward's arithmetic. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

/* The element type of the row matrices (inputs, outputs and their gradients): float, or with
 * SN_K16 defined bf16 (a table of sn_kern16). Parameters, their gradients, statistics and the
 * kernels' own stack rows are always float. */
#ifdef SN_K16
#define SN_T sn_bf16
#else
#define SN_T float
#endif

/* The column sweeps. They stay macros that take their loop body (a few statements calling the
 * inline steps below): each copy of the body sees t and k as constants, so a full step has no
 * mask test and each accumulator set stays its own register, and the summation order of every
 * reduction is written once (see docs/performance.md, "Kernel source: what stays a macro"). */

/* Runs BODY for the columns [j0, n) in steps of VW; BODY sees j (first column), t (1 on the
 * partial last step) and m (its mask). The body is the variadic part, so it may hold commas.
 * COLS_U2 and COLS_U4 unroll the loop twice and four times (elementwise sweeps over long runs:
 * axpy; the parameter gradients' fold, whose step is a few instructions); COLS_LOOP takes what
 * precedes the loop and the first column. */
#define COLS_LOOP(pre, j0, n, ...)                                                                 \
    do {                                                                                           \
        int64_t j = (j0);                                                                          \
        pre for (; j + VW <= (n); j += VW) {                                                       \
            const int t = 0;                                                                       \
            const M m = MFULL;                                                                     \
            __VA_ARGS__                                                                            \
        }                                                                                          \
        if (j < (n)) {                                                                             \
            const int t = 1;                                                                       \
            const M m = mask_n((int)((n)-j));                                                      \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    } while (0)
#define COLS(n, ...)    COLS_LOOP(, 0, n, __VA_ARGS__)
#define COLS_U2(n, ...) COLS_LOOP(_Pragma("GCC unroll 2"), 0, n, __VA_ARGS__)
#define COLS_U4(n, ...) COLS_LOOP(_Pragma("GCC unroll 4"), 0, n, __VA_ARGS__)

/* COLS_AT(p, n, BODY) and COLS_AT_U2: COLS and COLS_U2 for an elementwise body whose first
 * output row is p. Where the ISA header asks for it (SN_V_ALIGN_HEAD: AVX-512, whose full step
 * on float rows is a whole 64-byte line), a partial first step on a float row takes the columns
 * before p's first line boundary, so that the full steps' stores are aligned: none spans two
 * lines (a matrix from malloc starts 16 bytes past one; rows of an odd multiple of 8 floats
 * start half a line in every other row), and those of calls that stream are streaming stores
 * (store_out streams only aligned steps). Not on rows of at most one vector, which take one step
 * either way, nor on bf16 rows, whose full step is half a line (there it only added a step:
 * docs/performance.md, "auto on Intel Sapphire and Emerald Rapids"). Only for bodies without
 * reductions: where the steps fall changes no bit (reductions have RCOLS4_AT, below). */
static inline int64_t cols_head(const void *p, size_t es, int64_t n) {
#ifdef SN_V_ALIGN_HEAD
    if (es != sizeof(float) || n <= VW) return 0;
    const uintptr_t vb = (uintptr_t)VW * sizeof(float);                              /* 64 */
    return (int64_t)(((vb - ((uintptr_t)p & (vb - 1))) & (vb - 1)) / sizeof(float)); /* < n */
#else
    (void)p, (void)es, (void)n;
    return 0;
#endif
}
/* the partial first step of h columns (none when h is 0) */
#define HEAD_STEP(h, ...)                                                                          \
    do {                                                                                           \
        if (h) {                                                                                   \
            const int64_t j = 0;                                                                   \
            const int t = 1;                                                                       \
            const M m = mask_n((int)(h));                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    } while (0)
#define COLS_H_LOOP(pre, h, n, ...)                                                                \
    do {                                                                                           \
        const int64_t h_ = (h);                                                                    \
        HEAD_STEP(h_, __VA_ARGS__);                                                                \
        COLS_LOOP(pre, h_, n, __VA_ARGS__);                                                        \
    } while (0)
#define COLS_AT(p, n, ...) COLS_H_LOOP(, cols_head((p), sizeof *(p), (n)), n, __VA_ARGS__)
#define COLS_AT_U2(p, n, ...)                                                                      \
    COLS_H_LOOP(_Pragma("GCC unroll 2"), cols_head((p), sizeof *(p), (n)), n, __VA_ARGS__)
/* COLS with a partial first step of h columns (0: none; 0 <= h < n) */
#define COLS_H(h, n, ...) COLS_H_LOOP(, h, n, __VA_ARGS__)

/* Like COLS_H, from the last column to the first (the partial steps first): for an elementwise
 * sweep that follows a forward sweep over the same rows, so that it starts on the columns the
 * forward sweep left in L1. Only for bodies without reductions (the order of the columns then
 * changes no bit). Unrolled twice: its one user, the fuse backward's third sweep, does little
 * work a step, so the loop's own instructions counted. */
#define COLS_DOWN_H(h, n, ...)                                                                     \
    do {                                                                                           \
        const int64_t h_ = (h);                                                                    \
        int64_t j = h_ + ((n)-h_) / VW * VW;                                                       \
        if (j < (n)) {                                                                             \
            const int t = 1;                                                                       \
            const M m = mask_n((int)((n)-j));                                                      \
            __VA_ARGS__                                                                            \
        }                                                                                          \
        _Pragma("GCC unroll 2") while (j > h_) {                                                   \
            j -= VW;                                                                               \
            const int t = 0;                                                                       \
            const M m = MFULL;                                                                     \
            __VA_ARGS__                                                                            \
        }                                                                                          \
        HEAD_STEP(h_, __VA_ARGS__);                                                                \
    } while (0)

/* The reductions. A reduction sums a row in groups of 8 columns (group g: columns 8g .. 8g + 7;
 * the last group may be partial, its missing lanes adding +0), dealing the groups round-robin to
 * NS accumulator sets of 8 lanes (group g to set g mod NS), and ends by adding the sets (two:
 * s0 + s1; four: (s0 + s1) + (s2 + s3)), then the 8 lanes (hsum8). The order is the same on
 * every SIMD path: a vector of VW = 8 * VSETS lanes holds VSETS consecutive sets, so a path has
 * NS / VSETS accumulator vectors, each its own dependency chain, and the k-th vector of each
 * block of NS groups goes to accumulator vector k (the leftover vectors continue the round, the
 * partial last one included). AVX2 and AVX-512 thus give the same bits for every reduction, and
 * so for every slot (checkasm checks it; docs/performance.md, "One summation order").
 * RCOLS2 sums into two sets, for sweeps that do much else per step (the fuse backward, the
 * Hyper-Connections dot products); RCOLS4 into four, for the reductions whose chain is the whole
 * cost of their sweep (statistics, norm backward). Every sum of a path uses one of the two, so
 * a sum is the same bits wherever it is computed. The body sees j, t and m as in COLS, and as
 * constants k (its accumulator vector) and ks (its place in the unrolled block: prefetch
 * schedules count steps by it). */
#define RSTEP(kk, uu, tt, mm, ...)                                                                 \
    {                                                                                              \
        const int k = (kk), ks = (uu), t = (tt);                                                   \
        const M m = (mm);                                                                          \
        (void)k, (void)ks, (void)t, (void)m;                                                       \
        __VA_ARGS__                                                                                \
    }
#define RMASK(n) mask_n((int)((n)-j))

/* vectors two at a time from column j0, the first to accumulator vector k0 and the second to
 * kb ^ k0 (ks = 0, 1): two accumulator vectors with kb = 1, one (the loop unrolled twice) with
 * kb = 0 (and k0 = 0) */
#define RCOLS_PAIR_FROM(kb, k0, j0, n, ...)                                                        \
    do {                                                                                           \
        int64_t j = (j0);                                                                          \
        for (; j + 2 * VW <= (n); j += 2 * VW) {                                                   \
            RSTEP(k0, 0, 0, MFULL, __VA_ARGS__)                                                    \
            j += VW;                                                                               \
            RSTEP((kb) ^ (k0), 1, 0, MFULL, __VA_ARGS__)                                           \
            j -= VW;                                                                               \
        }                                                                                          \
        if (j + VW <= (n)) {                                                                       \
            RSTEP(k0, 0, 0, MFULL, __VA_ARGS__)                                                    \
            j += VW;                                                                               \
            if (j < (n)) RSTEP((kb) ^ (k0), 1, 1, RMASK(n), __VA_ARGS__)                           \
        } else if (j < (n)) RSTEP(k0, 0, 1, RMASK(n), __VA_ARGS__)                                 \
    } while (0)

/* four accumulator vectors from column j0, the first step to vector k0 (ks = 0 .. 3, k = (ks +
 * k0) mod 4) */
#define RCOLS_A4_FROM(k0, j0, n, ...)                                                              \
    do {                                                                                           \
        int64_t j = (j0);                                                                          \
        for (; j + 4 * VW <= (n); j += 4 * VW) {                                                   \
            RSTEP((k0)&3, 0, 0, MFULL, __VA_ARGS__)                                                \
            j += VW;                                                                               \
            RSTEP((1 + (k0)) & 3, 1, 0, MFULL, __VA_ARGS__)                                        \
            j += VW;                                                                               \
            RSTEP((2 + (k0)) & 3, 2, 0, MFULL, __VA_ARGS__)                                        \
            j += VW;                                                                               \
            RSTEP((3 + (k0)) & 3, 3, 0, MFULL, __VA_ARGS__)                                        \
            j -= 3 * VW;                                                                           \
        }                                                                                          \
        if (j + VW > (n)) {                                                                        \
            if (j < (n)) RSTEP((k0)&3, 0, 1, RMASK(n), __VA_ARGS__)                                \
        } else {                                                                                   \
            RSTEP((k0)&3, 0, 0, MFULL, __VA_ARGS__)                                                \
            j += VW;                                                                               \
            if (j + VW > (n)) {                                                                    \
                if (j < (n)) RSTEP((1 + (k0)) & 3, 1, 1, RMASK(n), __VA_ARGS__)                    \
            } else {                                                                               \
                RSTEP((1 + (k0)) & 3, 1, 0, MFULL, __VA_ARGS__)                                    \
                j += VW;                                                                           \
                if (j + VW > (n)) {                                                                \
                    if (j < (n)) RSTEP((2 + (k0)) & 3, 2, 1, RMASK(n), __VA_ARGS__)                \
                } else {                                                                           \
                    RSTEP((2 + (k0)) & 3, 2, 0, MFULL, __VA_ARGS__)                                \
                    j += VW;                                                                       \
                    if (j < (n)) RSTEP((3 + (k0)) & 3, 3, 1, RMASK(n), __VA_ARGS__)                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* RCOLS2_FROM and RCOLS4_FROM (k0, j0, n, BODY); RCOLS4's NACC4 accumulator vectors */
#if VSETS == 1
#define RCOLS2_FROM(k0, j0, n, ...) RCOLS_PAIR_FROM(1, k0, j0, n, __VA_ARGS__)
#define RCOLS4_FROM                 RCOLS_A4_FROM
#elif VSETS == 2
#define RCOLS2_FROM(k0, j0, n, ...) RCOLS_PAIR_FROM(0, k0, j0, n, __VA_ARGS__)
#define RCOLS4_FROM(k0, j0, n, ...) RCOLS_PAIR_FROM(1, k0, j0, n, __VA_ARGS__)
#else
#error "simd_rows.h: VSETS must be 1 or 2"
#endif
#define NACC4          (4 / VSETS)
#define RCOLS2(n, ...) RCOLS2_FROM(0, 0, n, __VA_ARGS__)
#define RCOLS4(n, ...) RCOLS4_FROM(0, 0, n, __VA_ARGS__)

/* RCOLS4_AT(o, n, BODY): RCOLS4's sums on a grid of steps shifted o columns left (0 <= o < VW),
 * so that a sweep whose output row starts o columns past a vector boundary (row_grid) stores
 * whole aligned vectors, as COLS_AT does for elementwise sweeps. The first step takes the
 * columns [0, VW - o) in its lanes o .. VW - 1 (j = -o) and goes to accumulator vector 0; its
 * other lanes add +0, as a partial last step's do (an accumulator starts at +0 and never becomes
 * -0, so that changes no bit). The steps then continue the round. Column c thus lands in lane
 * (c + o) mod (NACC4 * VW) of the accumulators taken as one row of lanes, where RCOLS4 puts it
 * in lane c mod (NACC4 * VW): each lane receives the same columns in the same order, only in
 * another lane. acc_unrot moves the lanes back, after which every sum is bitwise RCOLS4's,
 * wherever the row starts. One loop for every o (with o = 0 the first step is a whole vector,
 * masked): one copy of the body, not two. Where o is always 0 (bf16 rows, and AVX2, whose
 * header asks for no aligned steps) this is RCOLS4 itself. */
#if defined(SN_V_ALIGN_HEAD) && !defined(SN_K16)
#define SN_ROW_GRIDS 1 /* RCOLS4_AT shifts its grid (row_grid, acc_unrot) */
#define RCOLS4_AT(o, n, ...)                                                                       \
    do {                                                                                           \
        const int64_t o_ = (o);                                                                    \
        {                                                                                          \
            const int64_t j = -o_;                                                                 \
            RSTEP(0, 0, 1, mask_rng((int)o_, (n) + o_ < VW ? (int)((n) + o_) : VW), __VA_ARGS__)   \
        }                                                                                          \
        RCOLS4_FROM(1, VW - o_, n, __VA_ARGS__);                                                   \
    } while (0)
#else
#define SN_ROW_GRIDS         0
#define RCOLS4_AT(o, n, ...) RCOLS4(n, __VA_ARGS__)
#endif

/* The helpers are forced inline: each is a few instructions inside the row loops, and in a
 * large translation unit the compiler's inlining budget can run out and leave some out of line
 * (docs/performance.md, "Measurements behind the code"). */
#if defined(__GNUC__)
#define KINLINE static inline __attribute__((always_inline))
#else
#define KINLINE static inline
#endif

/* The partial step of a bf16 row, through a small buffer where the ISA header has no 16-bit
 * masked moves (AVX2; the AVX-512 header defines SN_V_MASKED16 and its own): lanes off load 0
 * and are not stored. */
#ifndef SN_V_MASKED16
static inline V vldm16(const sn_bf16 *p, M m) {
    sn_bf16 b[VW] = {0};
    memcpy(b, p, (size_t)mask_lanes(m) * sizeof *p);
    return vld16(b);
}
static inline void vstm16(sn_bf16 *p, M m, V v) {
    sn_bf16 b[VW];
    vst16(b, v);
    memcpy(p, b, (size_t)mask_lanes(m) * sizeof *p);
}
#endif

/* Loads and stores of a vector at p (the partial step: masked), for fp32 rows and for bf16
 * rows (widened on load, rounded on store); load, store and store_out pick by p's type, so a
 * kernel's body is the same for either SN_T and its arithmetic is the same fp32 arithmetic. */
KINLINE V load_f(const float *p, int t, M m) { return t ? vldm(p, m) : vld(p); }
KINLINE V load_h(const sn_bf16 *p, int t, M m) { return t ? vldm16(p, m) : vld16(p); }
KINLINE void store_f(float *p, V v, int t, M m) {
    if (t) vstm(p, m, v);
    else vst(p, v);
}
KINLINE void store_h(sn_bf16 *p, V v, int t, M m) {
    if (t) vstm16(p, m, v);
    else vst16(p, v);
}
/* a final output: a streaming store when allowed and the address is aligned, else store */
KINLINE void store_out_f(float *p, V v, int t, M m, int nt) {
    if (nt && !t && ((uintptr_t)p & (VW * sizeof(float) - 1)) == 0) vstream(p, v);
    else store_f(p, v, t, m);
}
/* (bf16: only where a vector is at least half a cache line; AVX2's 16-byte streaming stores,
 * four per line, made the bf16 sub-layer slower beyond the caches, docs/performance.md) */
KINLINE void store_out_h(sn_bf16 *p, V v, int t, M m, int nt) {
    if (VW * sizeof(sn_bf16) >= 32 && nt && !t && ((uintptr_t)p & (VW * sizeof(sn_bf16) - 1)) == 0)
        vstream16(p, v);
    else store_h(p, v, t, m);
}
/* two final outputs of one step, a at p and b at q (ntp, ntq: each as store_out's nt); bf16:
 * rounded together (vst16x2) on a whole step that streams neither (paired_ok) */
KINLINE int paired_ok(int t, int ntp, int ntq) {
    return !t && !(VW * sizeof(sn_bf16) >= 32 && (ntp || ntq));
}
KINLINE void store_out2_f(float *p, V a, float *q, V b, int t, M m, int ntp, int ntq) {
    store_out_f(p, a, t, m, ntp);
    store_out_f(q, b, t, m, ntq);
}
KINLINE void store_out2_h(sn_bf16 *p, V a, sn_bf16 *q, V b, int t, M m, int ntp, int ntq) {
    if (paired_ok(t, ntp, ntq)) {
        vst16x2(p, a, q, b);
        return;
    }
    store_out_h(p, a, t, m, ntp);
    store_out_h(q, b, t, m, ntq);
}
/* the final outputs of one step of two rows: a0 at p0, b0 at q0, a1 at p1, b1 at q1 */
KINLINE void store_out4_f(float *p0, V a0, float *q0, V b0, float *p1, V a1, float *q1, V b1, int t,
                          M m, int ntp, int ntq) {
    store_out2_f(p0, a0, q0, b0, t, m, ntp, ntq);
    store_out2_f(p1, a1, q1, b1, t, m, ntp, ntq);
}
KINLINE void store_out4_h(sn_bf16 *p0, V a0, sn_bf16 *q0, V b0, sn_bf16 *p1, V a1, sn_bf16 *q1,
                          V b1, int t, M m, int ntp, int ntq) {
    if (paired_ok(t, ntp, ntq)) {
        vst16x4(p0, a0, q0, b0, p1, a1, q1, b1);
        return;
    }
    store_out_h(p0, a0, t, m, ntp), store_out_h(q0, b0, t, m, ntq);
    store_out_h(p1, a1, t, m, ntp), store_out_h(q1, b1, t, m, ntq);
}
#define load(p, t, m)                                                                              \
    _Generic((p), const sn_bf16 * : load_h, sn_bf16 * : load_h, default : load_f)(p, t, m)
#define store(p, v, t, m) _Generic((p), sn_bf16 * : store_h, default : store_f)(p, v, t, m)
#define store_out(p, v, t, m, nt)                                                                  \
    _Generic((p), sn_bf16 * : store_out_h, default : store_out_f)(p, v, t, m, nt)
#define store_out2(p, a, q, b, t, m, ntp, ntq)                                                     \
    _Generic((p), sn_bf16 * : store_out2_h, default : store_out2_f)(p, a, q, b, t, m, ntp, ntq)
#define store_out4(p0, a0, q0, b0, p1, a1, q1, b1, t, m, ntp, ntq)                                 \
    _Generic((p0), sn_bf16 *                                                                       \
             : store_out4_h, default                                                               \
             : store_out4_f)(p0, a0, q0, b0, p1, a1, q1, b1, t, m, ntp, ntq)
/* sn_k_stats_guard on a row of either type */
#define stats_guard(n, v, W, m, r)                                                                 \
    _Generic((v), const sn_bf16 *: sn_k_stats_guard16, sn_bf16 *: sn_k_stats_guard16,            \
             default: sn_k_stats_guard)(n, v, W, m, r)

/* the lanes a partial step leaves off contribute 0 to reductions */
KINLINE V keep(V v, int t, M m) { return t ? vmaskz(m, v) : v; }
/* ... and so do the xhat-like operands of b += g * xhat: the off lanes load 0, so their xhat
 * is (0 - m) * r, an infinity when |m * r| > FLT_MAX (a constant row of 1e37 with eps 1e-5),
 * and g kept at 0 there would still add 0 * inf = NaN. Zeroing both makes each off lane add
 * +0 * +0: the full steps are untouched (t = 0) and finite rows keep their value. */
KINLINE V gamma_at(const float *g, int64_t j, int t, M m) {
    return g ? load(g + j, t, m) : vset1(1.0f);
}
KINLINE V beta_at(const float *b, int64_t j, int t, M m) {
    return b ? load(b + j, t, m) : vset1(0.0f);
}

/* 1 when m is +0 (bits), e.g. RMSNorm: v - m is then exactly v, so the subtraction can go */
KINLINE int zero_m(const sn_rnorm *q) {
    union {
        float f;
        uint32_t u;
    } b = {q->m};
    return b.u == 0u;
}
/* xhat = (v - m) * r */
KINLINE V xhat_sub(const sn_rnorm *q, V v) { return vmul(vsub(v, vset1(q->m)), vset1(q->r)); }
/* the same, without the subtraction when m is +0, which never changes a bit (v - (+0) is v for
 * every v); the one-norm loops are unswitched on zero_m. The fuse kernels, whose loops hold up
 * to six of them, use xhat_sub: a test per vector costs more there than the subtraction. */
KINLINE V xhat(const sn_rnorm *q, V v) { return zero_m(q) ? vmul(v, vset1(q->r)) : xhat_sub(q, v); }
/* gamma * xhat + beta */
KINLINE V scale_shift(const sn_rnorm *q, V xh, int64_t j, int t, M m) {
    return vfma(gamma_at(q->gamma, j, t, m), xh, beta_at(q->beta, j, t, m));
}

/* ---- statistics ---------------------------------------------------------------------------- */

/* the 8 lanes of a set sum: (l0 + l4) + (l2 + l6), then + ((l1 + l5) + (l3 + l7)) */
KINLINE float hsum8(__m256 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}
/* the end of an RCOLS2 sum (a[0 .. 2 / VSETS - 1]): its two sets added (hset2), then the lanes;
 * and of an RCOLS4 sum (a[0 .. 4 / VSETS - 1]) */
#if VSETS == 1
KINLINE __m256 hset2(const V a[2]) { return vadd(a[0], a[1]); }
KINLINE float hsum4(const V a[4]) { return hsum8(vadd(vadd(a[0], a[1]), vadd(a[2], a[3]))); }
#else
KINLINE __m256 hset2(const V a[2]) { return vfold8(a[0]); }
KINLINE float hsum4(const V a[4]) { return hsum8(_mm256_add_ps(vfold8(a[0]), vfold8(a[1]))); }
#endif
KINLINE float hsum2(const V a[2]) { return hsum8(hset2(a)); }

/* hsum8 of four and of eight sets at once, the same additions of the same values (so the same
 * bits), fewer instructions: step 1 adds each set's two halves, two sets to a vector (lanes i and
 * i + 4), step 2 the lanes 0 + 2 and 1 + 3 of four sets a vector, step 3 the two that are left.
 *   hsum8x4(v): [hsum8(v[0]), hsum8(v[1]), -, - | hsum8(v[2]), hsum8(v[3]), -, -]
 *   hsum8x8(v): [hsum8(v[0]) .. hsum8(v[3]) | hsum8(v[4]) .. hsum8(v[7])] */
KINLINE __m256 hsum8_halves(__m256 a, __m256 b) { /* [a_i + a_i+4 | b_i + b_i+4] */
    return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}
KINLINE __m256 hsum8_pairs(__m256 e, __m256 f) { /* [e0 + e2, e1 + e3, f0 + f2, f1 + f3 | ..] */
    return _mm256_add_ps(_mm256_shuffle_ps(e, f, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(e, f, _MM_SHUFFLE(3, 2, 3, 2)));
}
KINLINE __m256 hsum8_last(__m256 h, __m256 g) { /* [h0 + h1, h2 + h3, g0 + g1, g2 + g3 | ..] */
    return _mm256_add_ps(_mm256_shuffle_ps(h, g, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm256_shuffle_ps(h, g, _MM_SHUFFLE(3, 1, 3, 1)));
}
KINLINE __m256 hsum8x4(const __m256 v[4]) {
    const __m256 h = hsum8_pairs(hsum8_halves(v[0], v[2]), hsum8_halves(v[1], v[3]));
    return hsum8_last(h, h);
}
KINLINE __m256 hsum8x8(const __m256 v[8]) {
    return hsum8_last(hsum8_pairs(hsum8_halves(v[0], v[4]), hsum8_halves(v[1], v[5])),
                      hsum8_pairs(hsum8_halves(v[2], v[6]), hsum8_halves(v[3], v[7])));
}
#define ZERO4                                                                                      \
    { vset1(0.0f), vset1(0.0f), vset1(0.0f), vset1(0.0f) }

/* The first step of a sweep over n columns whose stores go to row p (COLS_H, COLS_EITHER): the
 * columns of p's row before its first vector boundary. 0 wherever RCOLS4_AT keeps RCOLS4's grid
 * (bf16 rows, AVX2), and on rows of fewer than 8 vectors, where the extra step and acc_unrot
 * cost more than the split stores (docs/performance.md, "Steps on the output's lines"). */
KINLINE int64_t row_head(const void *p, int64_t n) {
    if (!SN_ROW_GRIDS || n < 8 * VW) return 0;
    return cols_head(p, sizeof(float), n);
}
/* a first step of h columns as an RCOLS4_AT grid o (the columns before the row's start in the
 * first step's vector), and back: VW - h, 0 for 0 */
KINLINE int64_t grid_head(int64_t x) { return x ? VW - x : 0; }
/* the grid of an RCOLS4_AT sweep over n columns whose stores go to row p */
KINLINE int64_t row_grid(const void *p, int64_t n) { return grid_head(row_head(p, n)); }
/* The accumulator vectors a[0 .. NACC4 - 1] of an RCOLS4_AT sum on grid o, back in RCOLS4's
 * lanes: lane c of the row of NACC4 * VW lanes takes lane (c + o) mod (NACC4 * VW). Nothing to
 * do where the grid never shifts. */
KINLINE void acc_unrot(V *a, int64_t o) {
#if SN_ROW_GRIDS
    if (!o) return;
    const V a0 = a[0];
    for (int q = 0; q < NACC4; q++) a[q] = vrot(a[q], q + 1 < NACC4 ? a[q + 1] : a0, (int)o);
#else
    (void)a, (void)o;
#endif
}

static float vsum(const SN_T *v, int64_t n) {
    V a[4] = ZERO4;
    RCOLS4(n, { a[k] = vadd(a[k], keep(load(v + j, t, m), t, m)); });
    return hsum4(a);
}

/* the sum of (v - mean)^2 over a row of SN_T (v) or of float (vf; v NULL) */
KINLINE float sum_sqdev(const SN_T *v, const float *vf, int64_t n, float mean) {
    V a[4] = ZERO4;
    const V mu = vset1(mean);
    if (mean == 0.0f && !signbit(mean)) /* v - (+0) is exactly v (RMSNorm) */
        RCOLS4(n, {
            V d = keep(v ? load(v + j, t, m) : load(vf + j, t, m), t, m);
            a[k] = vfma(d, d, a[k]);
        });
    else
        RCOLS4(n, {
            V d = keep(vsub(v ? load(v + j, t, m) : load(vf + j, t, m), mu), t, m);
            a[k] = vfma(d, d, a[k]);
        });
    return hsum4(a);
}
static float vsum_sqdev(const SN_T *v, int64_t n, float mean) {
    return sum_sqdev(v, NULL, n, mean);
}
#ifdef SN_K16
static float vsum_sqdev_f(const float *v, int64_t n, float mean) {
    return sum_sqdev(NULL, v, n, mean);
}
#else
#define vsum_sqdev_f vsum_sqdev
#endif

/* stats and norm_row are not inlined into norm_fwd (see there). */
__attribute__((noinline)) static void stats(const sn_norm *n, const SN_T *v, int64_t W, float *m,
                                            float *r) {
    *m = 0.0f;
    *r = 1.0f;
    if (n->kind == SN_NORM_LAYERNORM) {
        float mean = vsum(v, W) / (float)W;
        float var = vsum_sqdev(v, W, mean) / (float)W;
        *m = mean;
        *r = 1.0f / sqrtf(var + n->eps);
    } else if (n->kind == SN_NORM_RMSNORM) {
        float ms = vsum_sqdev(v, W, 0.0f) / (float)W;
        *r = 1.0f / sqrtf(ms + n->eps);
    }
    stats_guard(n, v, W, m, r);
}

/* ---- one norm ------------------------------------------------------------------------------ */

/* Which way an elementwise sweep that reads rows a and b (b may be a) and writes row out goes.
 * A store shares its address bits 0 .. 11 with a later load when out starts a little past an
 * input modulo 4 KiB (as two page-sized matrices allocated one after the other do), and the load
 * then waits for the store (4K aliasing: an AVX-512 norm forward took up to 1.7x AVX2's time
 * there, docs/performance.md, "auto at the call level"). From the last vector down, each such
 * load comes before the store. Down when out starts less than 2 KiB past both inputs (or at one
 * of them), up otherwise. */
KINLINE int sweep_down(const void *out, const void *a, const void *b) {
    const uintptr_t da = ((uintptr_t)out - (uintptr_t)a) & 4095u;
    const uintptr_t db = ((uintptr_t)out - (uintptr_t)b) & 4095u;
    return da < 2048 && db < 2048 && (da | db) != 0;
}
/* Runs BODY (j, t, m as in COLS) over [0, n), an elementwise sweep: the partial steps first (a
 * first step of h columns, 0 <= h < n, as COLS_H takes: row_head; and the last), then the whole
 * vectors up or down (down: sweep_down). One copy of the body for both directions, so each
 * element gets the same instructions whichever way the sweep goes: the same bits, NaN sign and
 * payload included, wherever the rows sit. Only for bodies without reductions. */
#define COLS_EITHER(down, h, n, ...)                                                               \
    do {                                                                                           \
        const int64_t h_ = (h);                                                                    \
        const int64_t nf_ = h_ + ((n)-h_) / VW * VW;                                               \
        HEAD_STEP(h_, __VA_ARGS__);                                                                \
        if (nf_ < (n)) {                                                                           \
            const int64_t j = nf_;                                                                 \
            const int t = 1;                                                                       \
            const M m = mask_n((int)((n)-nf_));                                                    \
            __VA_ARGS__                                                                            \
        }                                                                                          \
        /* the sign of the step set here: no test in the loop, which could be unswitched */        \
        const int64_t step_ = (down) ? -(int64_t)VW : (int64_t)VW;                                 \
        int64_t j = (down) ? nf_ - VW : h_;                                                        \
        for (int64_t c_ = h_; c_ < nf_; c_ += VW, j += step_) {                                    \
            const int t = 0;                                                                       \
            const M m = MFULL;                                                                     \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    } while (0)

/* out at column j from the row's value v there */
KINLINE void norm_row_step(const sn_rnorm *q, V v, SN_T *out, int64_t j, int t, M m) {
    store_out(out + j, scale_shift(q, xhat(q, v), j, t, m), t, m, q->nt);
}

__attribute__((noinline)) static void norm_row(const sn_rnorm *q, const SN_T *v, int64_t W,
                                               SN_T *out) {
    const sn_rnorm Q_ = *q; /* a local copy: the stores below cannot alias it */
    q = &Q_;
    COLS_EITHER(sweep_down(out, v, v), row_head(out, W), W,
                { norm_row_step(q, load(v + j, t, m), out, j, t, m); });
}

#ifdef SN_K16
/* norm_row from a float row (on fp32 rows norm_row is this slot: NORM_S) */
static void norm_s(const sn_rnorm *q, const float *s, int64_t W, SN_T *out) {
    const sn_rnorm Q_ = *q; /* a local copy: the stores below cannot alias it */
    q = &Q_;
    COLS(W, { norm_row_step(q, load(s + j, t, m), out, j, t, m); });
}
#define NORM_S norm_s
#else
#define NORM_S norm_row
#endif

/* The forward of one row: stats, then norm_row with the row's statistics in q0 (resolved with
 * m = 0, r = 1); the same arithmetic, so the same bits, as the two. Both are called from here
 * rather than from the driver, and stay separate (noinline) functions: each was measurably
 * faster than the alternative (docs/performance.md, "Measurements behind the code"). */
static void norm_fwd(const sn_norm *n, const sn_rnorm *q0, const SN_T *v, int64_t W, SN_T *out,
                     float *m, float *r) {
    stats(n, v, W, m, r);
    sn_rnorm q = *q0;
    sn_k_set_stats(&q, n->kind, *m, *r);
    norm_row(&q, v, W, out);
}

/* The reduction step of a norm backward at column j: g = gamma * dout, *a += g,
 * *b += g * xhat; returns xhat and dout for the parameter gradients. */
typedef struct xhd {
    V xh, d;
} xhd;
KINLINE xhd norm_red_step(const sn_rnorm *q, const SN_T *dout, const SN_T *v, int64_t j, int t, M m,
                          V *a, V *b) {
    xhd r;
    r.xh = xhat(q, load(v + j, t, m));
    r.d = load(dout + j, t, m);
    const V g = keep(vmul(gamma_at(q->gamma, j, t, m), r.d), t, m);
    *a = vadd(*a, g);
    *b = vfma(g, keep(r.xh, t, m), *b);
    return r;
}

/* The same for two segments with the same gamma (norm_bwd2), gamma loaded once. */
typedef struct xhd2 {
    V xh0, d0, xh1, d1;
} xhd2;
KINLINE xhd2 norm_red2_step(const sn_rnorm *q0, const sn_rnorm *q1, const SN_T *dout0,
                            const SN_T *dout1, const SN_T *v0, const SN_T *v1, int64_t j, int t,
                            M m, V *a0, V *b0, V *a1, V *b1) {
    xhd2 r;
    r.xh0 = xhat(q0, load(v0 + j, t, m)), r.d0 = load(dout0 + j, t, m);
    r.xh1 = xhat(q1, load(v1 + j, t, m)), r.d1 = load(dout1 + j, t, m);
    const V gm = gamma_at(q0->gamma, j, t, m);
    const V g0 = keep(vmul(gm, r.d0), t, m), g1 = keep(vmul(gm, r.d1), t, m);
    *a0 = vadd(*a0, g0);
    *b0 = vfma(g0, keep(r.xh0, t, m), *b0);
    *a1 = vadd(*a1, g1);
    *b1 = vfma(g1, keep(r.xh1, t, m), *b1);
    return r;
}

static void norm_pg(const sn_rnorm *q, const SN_T *dout, const SN_T *v, int64_t n, float *dgamma,
                    float *dbeta) {
    const sn_rnorm Q_ = *q; /* a local copy: the stores below cannot alias it */
    q = &Q_;
    if (dgamma && dbeta)
        COLS(n, {
            V d = load(dout + j, t, m);
            store(dgamma + j, vfma(d, xhat(q, load(v + j, t, m)), load(dgamma + j, t, m)), t, m);
            store(dbeta + j, vadd(load(dbeta + j, t, m), d), t, m);
        });
    else if (dgamma)
        COLS(n, {
            V d = load(dout + j, t, m);
            store(dgamma + j, vfma(d, xhat(q, load(v + j, t, m)), load(dgamma + j, t, m)), t, m);
        });
    else if (dbeta)
        COLS(n, { store(dbeta + j, vadd(load(dbeta + j, t, m), load(dout + j, t, m)), t, m); });
}

static void norm_dx(const sn_rnorm *q, const SN_T *dout, const SN_T *v, int64_t W, float sa,
                    float sb, SN_T *dv, int acc) {
    const sn_rnorm Q_ = *q; /* a local copy: the stores below cannot alias it */
    q = &Q_;
    const V r = vset1(q->r), va = vset1(sa), vb = vset1(sb);
    const int down = sweep_down(dv, v, dout); /* (COLS_EITHER) */
    if (acc)
        COLS_EITHER(down, row_head(dv, W), W, {
            V xh = xhat(q, load(v + j, t, m));
            V g = vmul(gamma_at(q->gamma, j, t, m), load(dout + j, t, m));
            V d = vmul(r, vfnma(xh, vb, vsub(g, va)));
            store(dv + j, vadd(load(dv + j, t, m), d), t, m);
        });
    else
        COLS_EITHER(down, row_head(dv, W), W, {
            V xh = xhat(q, load(v + j, t, m));
            V g = vmul(gamma_at(q->gamma, j, t, m), load(dout + j, t, m));
            store_out(dv + j, vmul(r, vfnma(xh, vb, vsub(g, va))), t, m, q->nt);
        });
}

/* the whole backward of one row: the reductions and the parameter gradients in one sweep (the
 * parameter gradients with norm_pg's arithmetic), then norm_dx */
static void norm_bwd(const sn_rnorm *q, const SN_T *dout, const SN_T *v, int64_t W, SN_T *dv,
                     int acc, float *dgamma, float *dbeta) {
    const sn_rnorm Q_ = *q; /* a local copy: the stores below cannot alias it */
    q = &Q_;
    V a[4] = ZERO4, b[4] = ZERO4;
    if (dgamma && dbeta)
        RCOLS4(W, {
            const xhd s = norm_red_step(q, dout, v, j, t, m, &a[k], &b[k]);
            store(dgamma + j, vfma(s.d, s.xh, load(dgamma + j, t, m)), t, m);
            store(dbeta + j, vadd(load(dbeta + j, t, m), s.d), t, m);
        });
    else if (dgamma) /* RMSNorm and LayerNorm without beta */
        RCOLS4(W, {
            const xhd s = norm_red_step(q, dout, v, j, t, m, &a[k], &b[k]);
            store(dgamma + j, vfma(s.d, s.xh, load(dgamma + j, t, m)), t, m);
        });
    else if (dbeta)
        RCOLS4(W, {
            const xhd s = norm_red_step(q, dout, v, j, t, m, &a[k], &b[k]);
            store(dbeta + j, vadd(load(dbeta + j, t, m), s.d), t, m);
        });
    else RCOLS4(W, { norm_red_step(q, dout, v, j, t, m, &a[k], &b[k]); });
    norm_dx(q, dout, v, W, q->ca * hsum4(a) / (float)W, q->cb * hsum4(b) / (float)W, dv, acc);
}

/* norm_bwd of two row segments of one call (the same gamma, beta and W), bitwise the same as
 * norm_bwd on segment 0 then segment 1: the two segments' reductions in the same sweep, so that
 * their dependency chains overlap (short rows), and the parameter gradients loaded and stored
 * once per column for the two (segment 0's contribution first). */
static void norm_bwd2(const sn_rnorm *q2, const SN_T *const *dout2, const SN_T *const *v2,
                      int64_t W, SN_T *const *dv2, int acc, float *dgamma, float *dbeta) {
    const sn_rnorm Q0 = q2[0], Q1 = q2[1]; /* local copies: the stores cannot alias them */
    const SN_T *const dout0 = dout2[0], *const dout1 = dout2[1], *const v0 = v2[0],
                      *const v1 = v2[1];
    V a0[4] = ZERO4, b0[4] = ZERO4, a1[4] = ZERO4, b1[4] = ZERO4;
    if (dgamma && dbeta)
        RCOLS4(W, {
            const xhd2 s = norm_red2_step(&Q0, &Q1, dout0, dout1, v0, v1, j, t, m, &a0[k], &b0[k],
                                          &a1[k], &b1[k]);
            store(dgamma + j, vfma(s.d1, s.xh1, vfma(s.d0, s.xh0, load(dgamma + j, t, m))), t, m);
            store(dbeta + j, vadd(vadd(load(dbeta + j, t, m), s.d0), s.d1), t, m);
        });
    else if (dgamma)
        RCOLS4(W, {
            const xhd2 s = norm_red2_step(&Q0, &Q1, dout0, dout1, v0, v1, j, t, m, &a0[k], &b0[k],
                                          &a1[k], &b1[k]);
            store(dgamma + j, vfma(s.d1, s.xh1, vfma(s.d0, s.xh0, load(dgamma + j, t, m))), t, m);
        });
    else if (dbeta)
        RCOLS4(W, {
            const xhd2 s = norm_red2_step(&Q0, &Q1, dout0, dout1, v0, v1, j, t, m, &a0[k], &b0[k],
                                          &a1[k], &b1[k]);
            store(dbeta + j, vadd(vadd(load(dbeta + j, t, m), s.d0), s.d1), t, m);
        });
    else
        RCOLS4(W, {
            norm_red2_step(&Q0, &Q1, dout0, dout1, v0, v1, j, t, m, &a0[k], &b0[k], &a1[k], &b1[k]);
        });
    norm_dx(&Q0, dout0, v0, W, Q0.ca * hsum4(a0) / (float)W, Q0.cb * hsum4(b0) / (float)W, dv2[0],
            acc);
    norm_dx(&Q1, dout1, v1, W, Q1.ca * hsum4(a1) / (float)W, Q1.cb * hsum4(b1) / (float)W, dv2[1],
            acc);
}

/* ---- dual-stream fuse ---------------------------------------------------------------------- */

/* column j of a row to prefetch (a row of SN_T) */
KINLINE const void *pf_at(const void *row, int64_t j) { return (const SN_T *)row + j; }
/* a reduction's steps prefetch when their place ks in the unrolled block is a multiple of
 * PF_EVERY: about one prefetch per 64 bytes of a row (fp32: every step with AVX-512, every other
 * with AVX2; bf16: every other step with AVX-512, every fourth with AVX2, every other in RCOLS2's
 * sweeps) */
#define PF_EVERY (64 / (VW * (int)sizeof(SN_T)))

/* In a sweep with accumulator sets k, column j: prefetches (prefetcht1) the first n rows of
 * F->pf (n a constant: F->pf then holds n rows) at j when F->npf > 0 (steps of PF_EVERY), so
 * that a later call's misses overlap this call's arithmetic. */
KINLINE void prefetch_step(const sn_rfuse *F, int n, int64_t j, int ks) {
#if defined(__GNUC__)
    if (ks % PF_EVERY == 0 && F->npf)
        for (int i = 0; i < n; i++) __builtin_prefetch(pf_at(F->pf[i], j), 0, 2);
#else
    (void)F;
    (void)n;
    (void)j;
    (void)ks;
#endif
}

#define ZERO2                                                                                      \
    { vset1(0.0f), vset1(0.0f) }

/* v itself (a deviation from a zero mean: stats2) */
KINLINE V v_of(V v, V mean) {
    (void)mean;
    return v;
}

static int has_rstd(const sn_norm *n) {
    return n->kind == SN_NORM_LAYERNORM || n->kind == SN_NORM_RMSNORM;
}

/* stats of two rows in the same sweeps: the same accumulators and order as vsum and
 * vsum_sqdev for each row, so the same bits as two calls of stats */
static void stats2(const sn_norm *na, const SN_T *va, const sn_norm *nb, const SN_T *vb, int64_t W,
                   float *ma, float *ra, float *mb, float *rb) {
    if (!has_rstd(na) || !has_rstd(nb)) {
        stats(na, va, W, ma, ra);
        stats(nb, vb, W, mb, rb);
        return;
    }
    const int la = na->kind == SN_NORM_LAYERNORM, lb = nb->kind == SN_NORM_LAYERNORM;
    float mua = 0.0f, mub = 0.0f;
    if (la && lb) {
        V a[4] = ZERO4, b[4] = ZERO4;
        RCOLS4(W, {
            a[k] = vadd(a[k], keep(load(va + j, t, m), t, m));
            b[k] = vadd(b[k], keep(load(vb + j, t, m), t, m));
        });
        mua = hsum4(a) / (float)W;
        mub = hsum4(b) / (float)W;
    } else if (la) {
        mua = vsum(va, W) / (float)W;
    } else if (lb) {
        mub = vsum(vb, W) / (float)W;
    }
    V a[4] = ZERO4, b[4] = ZERO4;
    const V ca = vset1(mua), cb = vset1(mub);
    /* the sums of squared deviations, dev(v, mean) = v - mean; two RMSNorms go without the
     * subtraction (v - (+0) is exactly v, as in sum_sqdev): 2-10% of an RMSNorm forward */
#define SQDEV2(dev)                                                                                \
    RCOLS4(W, {                                                                                    \
        V da = keep(dev(load(va + j, t, m), ca), t, m);                                            \
        V db = keep(dev(load(vb + j, t, m), cb), t, m);                                            \
        a[k] = vfma(da, da, a[k]);                                                                 \
        b[k] = vfma(db, db, b[k]);                                                                 \
    })
    if (la || lb) SQDEV2(vsub);
    else SQDEV2(v_of);
#undef SQDEV2
    *ma = mua;
    *mb = mub;
    *ra = 1.0f / sqrtf(hsum4(a) / (float)W + na->eps);
    *rb = 1.0f / sqrtf(hsum4(b) / (float)W + nb->eps);
    stats_guard(na, va, W, ma, ra);
    stats_guard(nb, vb, W, mb, rb);
}

/* s = N_x(x) + N_y(y) */
KINLINE V s_of(const sn_rnorm *X, const sn_rnorm *Y, const SN_T *x, const SN_T *y, int64_t j, int t,
               M m, V *ux) {
    *ux = scale_shift(X, xhat_sub(X, load(x + j, t, m)), j, t, m);
    return vadd(*ux, scale_shift(Y, xhat_sub(Y, load(y + j, t, m)), j, t, m));
}

/* s at column j, stored into h, and u = N_x(x) when u is non-NULL */
KINLINE V fuse_s_step(const sn_rfuse *F, const SN_T *x, const SN_T *y, SN_T *u, float *h, int64_t j,
                      int t, M m) {
    V ux;
    const V s = s_of(&F->X, &F->Y, x, y, j, t, m, &ux);
    if (u) store_out(u + j, ux, t, m, F->nt);
    store(h + j, s, t, m);
    return s;
}

/* u (if non-NULL) and h = s (a float row); the first sweep of N_out's statistics rides along (the same
 * accumulators and order as vsum / vsum_sqdev over h) */
static void fuse_s(const sn_rfuse *F, int64_t D, const SN_T *x, const SN_T *y, SN_T *u, float *h,
                   const sn_norm *no, float *mo, float *ro) {
    const sn_rfuse F_ = *F; /* a local copy: the stores below cannot alias it */
    F = &F_;
    V a[4] = ZERO4;
    const int ln = no->kind == SN_NORM_LAYERNORM, rms = no->kind == SN_NORM_RMSNORM;
    const V zero = vset1(0.0f);
    const int64_t o = row_grid(u ? (const void *)u : (const void *)h, D);
    if (ln)
        RCOLS4_AT(o, D, {
            const V s = fuse_s_step(F, x, y, u, h, j, t, m);
            a[k] = vadd(a[k], keep(s, t, m));
        });
    else if (rms)
        RCOLS4_AT(o, D, {
            const V s = fuse_s_step(F, x, y, u, h, j, t, m);
            V d = keep(vsub(s, zero), t, m);
            a[k] = vfma(d, d, a[k]);
        });
    else COLS_H(grid_head(o), D, { fuse_s_step(F, x, y, u, h, j, t, m); });
    acc_unrot(a, o);
    *mo = 0.0f;
    *ro = 1.0f;
    if (ln) {
        const float mean = hsum4(a) / (float)D;
        const float var = vsum_sqdev_f(h, D, mean) / (float)D;
        *mo = mean;
        *ro = 1.0f / sqrtf(var + no->eps);
    } else if (rms) {
        *ro = 1.0f / sqrtf(hsum4(a) / (float)D + no->eps);
    }
    stats_guard(no, h, D, mo, ro);
}

/* fuse_fwd2's stores at column j: u0 and u1 when set (both or neither), s into the stack rows */
KINLINE void store_s2(SN_T *u0, SN_T *u1, V ux0, V ux1, float *s0p, float *s1p, V s0, V s1, int nt,
                      int64_t j, int t, M m) {
    if (u0) {
        store_out(u0 + j, ux0, t, m, nt);
        store_out(u1 + j, ux1, t, m, nt);
    }
    store(s0p + j, s0, t, m);
    store(s1p + j, s1, t, m);
}

/* The whole forward of two rows (see kernels.h): per row the arithmetic of stats2, fuse_s and
 * norm_row on the same values (the same accumulators and order), so the same bits; the two
 * rows' steps are interleaved, so that one row's statistics chain (sums, horizontal sums,
 * divisions, square roots) overlaps the other's. Subtracting a mean of +0 (RMSNorm) is exact,
 * so the sums of squares subtract it unconditionally, as stats2 does. The accumulators and
 * resolved norms are separate locals per row, so that they stay in registers. When pf (a
 * constant: a version without any test per step), the rows of F0->pf are prefetched during
 * the s sweep with AVX-512 and during the second statistics sweep (loads only, no streaming
 * stores) with AVX2, each the faster on its path (docs/performance.md, "Measurements behind
 * the code"). */
KINLINE void fuse_fwd2_body(const sn_rfuse *F0, const sn_fuse *f, int64_t D, const SN_T *const x[2],
                            const SN_T *const y[2], SN_T *const u[2], SN_T *const h[2],
                            float st[2][6], int pf) {
    const sn_norm nx = f->x, ny = f->y, no = f->out;
    const int lxy = nx.kind == SN_NORM_LAYERNORM, lo = no.kind == SN_NORM_LAYERNORM;
    const int nt = F0->nt;
    const float fD = (float)D;
    const SN_T *const x0 = x[0], *const x1 = x[1], *const y0 = y[0], *const y1 = y[1];
    SN_T *const u0 = u[0], *const u1 = u[1];
    /* local copies: the stores below cannot alias them */
    sn_rnorm X0 = F0->X, X1 = F0->X, Y0 = F0->Y, Y1 = F0->Y, O0 = F0->O, O1 = F0->O;
    float mx0 = 0.0f, mx1 = 0.0f, my0 = 0.0f, my1 = 0.0f, rx0, rx1, ry0, ry1;
    /* the statistics of x and y (stats2) */
    if (lxy) {
        V ax0[4] = ZERO4, ax1[4] = ZERO4, ay0[4] = ZERO4, ay1[4] = ZERO4;
        RCOLS4(D, {
            ax0[k] = vadd(ax0[k], keep(load(x0 + j, t, m), t, m));
            ay0[k] = vadd(ay0[k], keep(load(y0 + j, t, m), t, m));
            ax1[k] = vadd(ax1[k], keep(load(x1 + j, t, m), t, m));
            ay1[k] = vadd(ay1[k], keep(load(y1 + j, t, m), t, m));
        });
        mx0 = hsum4(ax0) / fD;
        my0 = hsum4(ay0) / fD;
        mx1 = hsum4(ax1) / fD;
        my1 = hsum4(ay1) / fD;
    }
    {
        V ax0[4] = ZERO4, ax1[4] = ZERO4, ay0[4] = ZERO4, ay1[4] = ZERO4;
        const V cx0 = vset1(mx0), cx1 = vset1(mx1), cy0 = vset1(my0), cy1 = vset1(my1);
        RCOLS4(D, {
            if (pf && VW < 16) prefetch_step(F0, 4, j, ks);
            V dx0 = keep(vsub(load(x0 + j, t, m), cx0), t, m);
            V dy0 = keep(vsub(load(y0 + j, t, m), cy0), t, m);
            V dx1 = keep(vsub(load(x1 + j, t, m), cx1), t, m);
            V dy1 = keep(vsub(load(y1 + j, t, m), cy1), t, m);
            ax0[k] = vfma(dx0, dx0, ax0[k]);
            ay0[k] = vfma(dy0, dy0, ay0[k]);
            ax1[k] = vfma(dx1, dx1, ax1[k]);
            ay1[k] = vfma(dy1, dy1, ay1[k]);
        });
        rx0 = 1.0f / sqrtf(hsum4(ax0) / fD + nx.eps);
        ry0 = 1.0f / sqrtf(hsum4(ay0) / fD + ny.eps);
        rx1 = 1.0f / sqrtf(hsum4(ax1) / fD + nx.eps);
        ry1 = 1.0f / sqrtf(hsum4(ay1) / fD + ny.eps);
    }
    stats_guard(&nx, x0, D, &mx0, &rx0);
    stats_guard(&ny, y0, D, &my0, &ry0);
    stats_guard(&nx, x1, D, &mx1, &rx1);
    stats_guard(&ny, y1, D, &my1, &ry1);
    X0.m = mx0, X0.r = rx0, Y0.m = my0, Y0.r = ry0; /* RMSNorm: m is 0 either way */
    X1.m = mx1, X1.r = rx1, Y1.m = my1, Y1.r = ry1;
    /* s = N_x(x) + N_y(y) into stack rows, u, and the first sweep of N_out's statistics
     * (fuse_s), on the grid of row 0's outputs (RCOLS4_AT); the stack rows sit at the same
     * offset within a vector, so that their stores and loads take whole aligned vectors too */
    const int64_t o = row_grid(u0 ? (const void *)u0 : (const void *)h[0], D);
    _Alignas(64) float sb_[2][SN_K_STACK_ROW_MAX + VW];
    float *const s0p = sb_[0] + o, *const s1p = sb_[1] + o;
    float mo0 = 0.0f, mo1 = 0.0f, ro0, ro1;
    {
        V a0[4] = ZERO4, a1[4] = ZERO4;
        const V zero = vset1(0.0f);
        if (lo)
            RCOLS4_AT(o, D, {
                if (pf && VW >= 16) prefetch_step(F0, 4, j, ks);
                V ux0, ux1;
                const V s0 = s_of(&X0, &Y0, x0, y0, j, t, m, &ux0);
                const V s1 = s_of(&X1, &Y1, x1, y1, j, t, m, &ux1);
                store_s2(u0, u1, ux0, ux1, s0p, s1p, s0, s1, nt, j, t, m);
                a0[k] = vadd(a0[k], keep(s0, t, m));
                a1[k] = vadd(a1[k], keep(s1, t, m));
            });
        else
            RCOLS4_AT(o, D, {
                if (pf && VW >= 16) prefetch_step(F0, 4, j, ks);
                V ux0, ux1;
                const V s0 = s_of(&X0, &Y0, x0, y0, j, t, m, &ux0);
                const V s1 = s_of(&X1, &Y1, x1, y1, j, t, m, &ux1);
                store_s2(u0, u1, ux0, ux1, s0p, s1p, s0, s1, nt, j, t, m);
                V d0 = keep(vsub(s0, zero), t, m), d1 = keep(vsub(s1, zero), t, m);
                a0[k] = vfma(d0, d0, a0[k]);
                a1[k] = vfma(d1, d1, a1[k]);
            });
        acc_unrot(a0, o);
        acc_unrot(a1, o);
        if (lo) {
            mo0 = hsum4(a0) / fD;
            mo1 = hsum4(a1) / fD;
            V b0[4] = ZERO4, b1[4] = ZERO4;
            const V mu0 = vset1(mo0), mu1 = vset1(mo1);
            RCOLS4_AT(o, D, {
                V d0 = keep(vsub(load(s0p + j, t, m), mu0), t, m);
                V d1 = keep(vsub(load(s1p + j, t, m), mu1), t, m);
                b0[k] = vfma(d0, d0, b0[k]);
                b1[k] = vfma(d1, d1, b1[k]);
            });
            acc_unrot(b0, o);
            acc_unrot(b1, o);
            ro0 = 1.0f / sqrtf(hsum4(b0) / fD + no.eps);
            ro1 = 1.0f / sqrtf(hsum4(b1) / fD + no.eps);
        } else {
            ro0 = 1.0f / sqrtf(hsum4(a0) / fD + no.eps);
            ro1 = 1.0f / sqrtf(hsum4(a1) / fD + no.eps);
        }
    }
    stats_guard(&no, s0p, D, &mo0, &ro0);
    stats_guard(&no, s1p, D, &mo1, &ro1);
    O0.m = mo0, O0.r = ro0, O1.m = mo1, O1.r = ro1;
    /* h = N_out(s) (norm_row) */
    SN_T *const h0 = h[0], *const h1 = h[1];
    COLS_H(grid_head(o), D, {
        store_out(h0 + j, scale_shift(&O0, xhat_sub(&O0, load(s0p + j, t, m)), j, t, m), t, m, nt);
        store_out(h1 + j, scale_shift(&O1, xhat_sub(&O1, load(s1p + j, t, m)), j, t, m), t, m, nt);
    });
    st[0][0] = mx0, st[0][1] = rx0, st[0][2] = my0, st[0][3] = ry0, st[0][4] = mo0;
    st[0][5] = ro0;
    st[1][0] = mx1, st[1][1] = rx1, st[1][2] = my1, st[1][3] = ry1, st[1][4] = mo1;
    st[1][5] = ro1;
}
/* Rows of exactly four vectors (D = 64 with AVX-512, 32 with AVX2) get a version with the
 * width a constant: the loops unroll and the loads of the statistics passes are shared. Calls
 * that prefetch (rows beyond the L2, never that short) get their own version. */
static void fuse_fwd2(const sn_rfuse *F0, const sn_fuse *f, int64_t D, const SN_T *const x[2],
                      const SN_T *const y[2], SN_T *const u[2], SN_T *const h[2], float st[2][6]) {
    if (F0->npf) fuse_fwd2_body(F0, f, D, x, y, u, h, st, 1);
    else if (D == 4 * VW) fuse_fwd2_body(F0, f, 4 * VW, x, y, u, h, st, 0);
    else fuse_fwd2_body(F0, f, D, x, y, u, h, st, 0);
}

/* The quantities of a fuse backward, each with its one definition:
 *   xx, yy   xhat of x and y;  xs = xhat_out of s = N_x(x) + N_y(y) (the forward's arithmetic)
 *   ds       = r_out * (gamma_out * dh - oa - xs * ob)
 *   dt       = du + ds;  gx = gamma_x * dt;  gy = gamma_y * ds */
KINLINE V xs_of(const sn_rfuse *F, V xx, V yy, int64_t j, int t, M m) {
    return xhat_sub(&F->O, vadd(scale_shift(&F->X, xx, j, t, m), scale_shift(&F->Y, yy, j, t, m)));
}
KINLINE V ds_of(const sn_rfuse *F, V xs, V dh, int64_t j, int t, M m) {
    const V g = vfms(gamma_at(F->O.gamma, j, t, m), dh, vset1(F->oa));
    return vmul(vset1(F->O.r), vfnma(xs, vset1(F->ob), g));
}
KINLINE V dt_of(const SN_T *du, V ds, int64_t j, int t, M m) {
    return du ? vadd(load(du + j, t, m), ds) : ds;
}

typedef struct belem {
    V xx, yy, xs, ds, dt, gx, gy, dh;
} belem;

KINLINE belem belem_of(const sn_rfuse *F, int64_t j, int t, M m, const SN_T *dh, const SN_T *du,
                       const SN_T *x, const SN_T *y) {
    belem e;
    e.xx = xhat_sub(&F->X, load(x + j, t, m));
    e.yy = xhat_sub(&F->Y, load(y + j, t, m));
    e.xs = xs_of(F, e.xx, e.yy, j, t, m);
    e.dh = load(dh + j, t, m);
    e.ds = ds_of(F, e.xs, e.dh, j, t, m);
    e.dt = dt_of(du, e.ds, j, t, m);
    e.gx = vmul(gamma_at(F->X.gamma, j, t, m), e.dt);
    e.gy = vmul(gamma_at(F->Y.gamma, j, t, m), e.ds);
    return e;
}

/* pass 1 of the reductions at column j: N_out's into *a, *b, from g = gamma_out * dh and
 * xs = xs_of(xx, yy) */
KINLINE void fuse_red1_step(const sn_rfuse *F, const SN_T *dh, V xx, V yy, int64_t j, int t, M m,
                            V *a, V *b) {
    const V g = keep(vmul(gamma_at(F->O.gamma, j, t, m), load(dh + j, t, m)), t, m);
    *a = vadd(*a, g);
    *b = vfma(g, keep(xs_of(F, xx, yy, j, t, m), t, m), *b);
}

/* pass 2: N_x's over dt into *ax, *bx and N_y's over ds into *ay, *by */
KINLINE void fuse_red2_step(const belem *e, int t, M m, V *ax, V *bx, V *ay, V *by) {
    const V gx = keep(e->gx, t, m), gy = keep(e->gy, t, m);
    *ax = vadd(*ax, gx);
    *bx = vfma(gx, keep(e->xx, t, m), *bx);
    *ay = vadd(*ay, gy);
    *by = vfma(gy, keep(e->yy, t, m), *by);
}

KINLINE void fuse_red_out(sn_rfuse *F, const V a[2], const V b[2], int64_t D) {
    F->oa = F->O.ca * hsum2(a) / (float)D;
    F->ob = F->O.cb * hsum2(b) / (float)D;
}

KINLINE void fuse_red_xy(sn_rfuse *F, const V ax[2], const V bx[2], const V ay[2], const V by[2],
                         int64_t D) {
    const float fD = (float)D;
    F->xa = F->X.ca * hsum2(ax) / fD;
    F->xb = F->X.cb * hsum2(bx) / fD;
    F->ya = F->Y.ca * hsum2(ay) / fD;
    F->yb = F->Y.cb * hsum2(by) / fD;
}

/* the coefficients (ca, cb) of norms N and P of two rows, as [N0, P0 | N1, P1] */
KINLINE __m256 red_coef(const sn_rnorm *N0, const sn_rnorm *P0, const sn_rnorm *N1,
                        const sn_rnorm *P1) {
    const __m128 c0 = _mm_setr_ps(N0->ca, N0->cb, P0->ca, P0->cb);
    const __m128 c1 = _mm_setr_ps(N1->ca, N1->cb, P1->ca, P1->cb);
    return _mm256_insertf128_ps(_mm256_castps128_ps256(c0), c1, 1);
}

/* o[i] = (c_i * s_i) / D, the reductions' last step, lane by lane (as fuse_red_out's) */
KINLINE void red_scale(__m256 c, __m256 s, int64_t D, float o[8]) {
    _mm256_storeu_ps(o, _mm256_div_ps(_mm256_mul_ps(c, s), _mm256_set1_ps((float)D)));
}

/* fuse_red_out of two rows at once (hsum8x4; fuse_red_xy2, below, with hsum8x8): the same bits */
KINLINE void fuse_red_out2(sn_rfuse *F0, const V a0[2], const V b0[2], sn_rfuse *F1, const V a1[2],
                           const V b1[2], int64_t D) {
    const __m256 v[4] = {hset2(a0), hset2(b0), hset2(a1), hset2(b1)};
    float o[8];
    red_scale(red_coef(&F0->O, &F0->O, &F1->O, &F1->O), hsum8x4(v), D, o);
    F0->oa = o[0], F0->ob = o[1], F1->oa = o[4], F1->ob = o[5];
}

static void fuse_red(sn_rfuse *F, int64_t D, const SN_T *dh, const SN_T *du, const SN_T *x,
                     const SN_T *y) {
    V a[2] = ZERO2, b[2] = ZERO2;
    RCOLS2(D, {
        V xx = xhat_sub(&F->X, load(x + j, t, m)), yy = xhat_sub(&F->Y, load(y + j, t, m));
        fuse_red1_step(F, dh, xx, yy, j, t, m, &a[k], &b[k]);
    });
    fuse_red_out(F, a, b, D);
    V ax[2] = ZERO2, bx[2] = ZERO2, ay[2] = ZERO2, by[2] = ZERO2;
    RCOLS2(D, {
        belem e = belem_of(F, j, t, m, dh, du, x, y);
        fuse_red2_step(&e, t, m, &ax[k], &bx[k], &ay[k], &by[k]);
    });
    fuse_red_xy(F, ax, bx, ay, by, D);
}

KINLINE void acc_add(float *p, V v, int t, M m) {
    if (p) store(p, vadd(load(p, t, m), v), t, m);
}
KINLINE void acc_fma(float *p, V a, V b, int t, M m) {
    if (p) store(p, vfma(a, b, load(p, t, m)), t, m);
}
KINLINE float *at(float *p, int64_t j) { return p ? p + j : NULL; }

/* the parameter gradients of one step */
KINLINE void fuse_pg_step(const sn_dfuse *dp, const belem *e, int64_t j, int t, M m) {
    acc_fma(at(dp->go, j), e->dh, e->xs, t, m);
    acc_add(at(dp->bo, j), e->dh, t, m);
    acc_fma(at(dp->gx, j), e->dt, e->xx, t, m);
    acc_add(at(dp->bx, j), e->dt, t, m);
    acc_fma(at(dp->gy, j), e->ds, e->yy, t, m);
    acc_add(at(dp->by, j), e->ds, t, m);
}

static void fuse_pg(const sn_rfuse *F, int64_t n, const SN_T *dh, const SN_T *du, const SN_T *x,
                    const SN_T *y, const sn_dfuse *dp) {
    const sn_dfuse dp_ = *dp;
    dp = &dp_;
    const sn_rfuse F_ = *F; /* a local copy: the stores below cannot alias it */
    F = &F_;
    COLS(n, {
        belem e = belem_of(F, j, t, m, dh, du, x, y);
        fuse_pg_step(dp, &e, j, t, m);
    });
}

/* the input gradients of one step from xx, yy, gx, gy, into *ox and *oy (with dx's and dy's
 * values added when accx, accy); fuse_dx_step stores them (nt: streaming stores allowed) */
KINLINE void fuse_dx_vals(const sn_rfuse *F, V xx, V yy, V gx, V gy, const SN_T *dx, const SN_T *dy,
                          int accx, int accy, int64_t j, int t, M m, V *ox, V *oy) {
    *ox = vmul(vset1(F->X.r), vfnma(xx, vset1(F->xb), vsub(gx, vset1(F->xa))));
    *oy = vmul(vset1(F->Y.r), vfnma(yy, vset1(F->yb), vsub(gy, vset1(F->ya))));
    if (accx) *ox = vadd(load(dx + j, t, m), *ox);
    if (accy) *oy = vadd(load(dy + j, t, m), *oy);
}
KINLINE void fuse_dx_step(const sn_rfuse *F, V xx, V yy, V gx, V gy, SN_T *dx, SN_T *dy, int accx,
                          int accy, int nt, int64_t j, int t, M m) {
    V ddx, ddy;
    fuse_dx_vals(F, xx, yy, gx, gy, dx, dy, accx, accy, j, t, m, &ddx, &ddy);
    store_out2(dx + j, ddx, dy + j, ddy, t, m, nt && !accx, nt && !accy);
}

static void fuse_dx(const sn_rfuse *F, int64_t D, const SN_T *dh, const SN_T *du, const SN_T *x,
                    const SN_T *y, SN_T *dx, SN_T *dy, int accx, int accy) {
    const sn_rfuse F_ = *F; /* a local copy: the stores below cannot alias it */
    F = &F_;
    /* du is read (inside belem_of) before dx is written: dx may be du */
    COLS(D, {
        belem e = belem_of(F, j, t, m, dh, du, x, y);
        fuse_dx_step(F, e.xx, e.yy, e.gx, e.gy, dx, dy, accx, accy, F->nt, j, t, m);
    });
}

/* The whole backward of one row: pass 1 (N_out's reductions) keeps xs in a stack row, pass 2
 * (reductions of N_x, N_y and the parameter gradients) replaces it by gx and keeps gy, pass 3
 * writes the input gradients; xx and yy are kept in stack rows by pass 1 or recomputed from x
 * and y (in L1 by then), per path and element type (KEPT_ROWS below). Bitwise the same as
 * fuse_red, fuse_pg, fuse_dx (same formulas on the same values). Rows wider than
 * SN_K_STACK_ROW_MAX take those. */

/* One row of fuse_bwd and fuse_bwd2: its norms and reductions (a local copy of its sn_rfuse:
 * the stores cannot alias it), its rows, its two stack rows and its accumulators. A local
 * struct per row, reached only by the inline steps below, so that its fields stay in
 * registers. */
typedef struct brow {
    sn_rfuse F;
    const SN_T *dh, *du, *x, *y;
    SN_T *dx, *dy;
    float *bs, *bg;               /* stack rows of SN_K_STACK_ROW_MAX + VW floats */
    V a[2], b[2];                 /* pass 1: N_out's reductions */
    V ax[2], bx[2], ay[2], by[2]; /* pass 2: N_x's and N_y's */
    float *kx, *ky, *kdh;         /* the kept rows of xx, yy and dh (KEPT_ROWS), or NULL */
} brow;

/* xhat of a row v (x or y, norm N) at column j in pass 1 (xx_p1), and in passes 2 and 3
 * (xx_p23); dh likewise (dh_p1, dh_p23). Pass 1 may keep xx, yy and the widened dh in stack rows
 * kp (brow_keep) for the later passes to load: the kept vectors are the same bits as recomputed
 * ones, and a load costs fewer instructions than loading, widening and normalising again.
 * KEPT_ROWS says which it keeps (docs/performance.md, "Fourth round, third session"):
 *   3  bf16 rows: xx, yy and dh;
 *   2  fp32 rows with AVX2: xx and yy (fewer instructions; the same time beyond the caches);
 *   0  fp32 rows with AVX-512: none (there the two more stack rows a row cost more time beyond
 *      the caches than the recomputation saves). */
#if defined(SN_K16)
#define KEPT_ROWS 3
#elif VW < 16
#define KEPT_ROWS 2
#else
#define KEPT_ROWS 0
#endif
#if KEPT_ROWS
KINLINE V keep_st(float *p, V v) {
    vst(p, v); /* the stack rows are padded: whole vectors */
    return v;
}
KINLINE V xx_p1(const sn_rnorm *N, const SN_T *v, float *kp, int64_t j, int t, M m) {
    return keep_st(kp + j, xhat_sub(N, load(v + j, t, m)));
}
KINLINE V xx_p23(const sn_rnorm *N, const SN_T *v, const float *kp, int64_t j, int t, M m) {
    (void)N, (void)v, (void)t, (void)m;
    return vld(kp + j);
}
/* the kept rows of w: KEPT_ROWS stack rows of SN_K_STACK_ROW_MAX + VW floats */
KINLINE void brow_keep(brow *w, float (*keep)[SN_K_STACK_ROW_MAX + VW]) {
    w->kx = keep[0], w->ky = keep[1], w->kdh = KEPT_ROWS == 3 ? keep[2] : NULL;
}
#else
KINLINE V xx_p1(const sn_rnorm *N, const SN_T *v, const float *kp, int64_t j, int t, M m) {
    (void)kp;
    return xhat_sub(N, load(v + j, t, m));
}
#define xx_p23 xx_p1
#endif
#if KEPT_ROWS == 3
KINLINE V dh_p1(const SN_T *dh, float *kp, int64_t j, int t, M m) {
    return keep_st(kp + j, load(dh + j, t, m));
}
KINLINE V dh_p23(const SN_T *dh, const float *kp, int64_t j, int t, M m) {
    (void)dh, (void)t, (void)m;
    return vld(kp + j);
}
#else
KINLINE V dh_p1(const SN_T *dh, const float *kp, int64_t j, int t, M m) {
    (void)kp;
    return load(dh + j, t, m);
}
#define dh_p23 dh_p1
#endif

KINLINE void brow_init(brow *w, const sn_rfuse *F, const SN_T *dh, const SN_T *du, const SN_T *x,
                       const SN_T *y, SN_T *dx, SN_T *dy, float *bs, float *bg) {
    w->F = *F;
    w->dh = dh, w->du = du, w->x = x, w->y = y, w->dx = dx, w->dy = dy;
    w->bs = bs, w->bg = bg;
    w->kx = w->ky = w->kdh = NULL;
    /* pass 2 prefetches all SN_K_PF_ROWS rows of F.pf when it prefetches (npf > 0, or for a
     * pair the other row's): the missing ones point at bs, in L1 (two instructions each, against
     * four to test the count per row) */
    for (int i = 0; i < SN_K_PF_ROWS; i++) w->F.pf[i] = i < F->npf ? F->pf[i] : (const void *)bs;
    for (int k = 0; k < 2; k++) {
        w->a[k] = w->b[k] = vset1(0.0f);
        w->ax[k] = w->bx[k] = w->ay[k] = w->by[k] = vset1(0.0f);
    }
}

/* pass 1 at column j (accumulator set k): N_out's reductions, xs kept in bs */
KINLINE void fuse_p1(brow *w, int64_t j, int t, M m, int k) {
    const V xx = xx_p1(&w->F.X, w->x, w->kx, j, t, m);
    const V yy = xx_p1(&w->F.Y, w->y, w->ky, j, t, m);
    const V xs = xs_of(&w->F, xx, yy, j, t, m);
    vst(w->bs + j, xs); /* the stack rows are padded: whole vectors */
    const V g = keep(vmul(gamma_at(w->F.O.gamma, j, t, m), dh_p1(w->dh, w->kdh, j, t, m)), t, m);
    w->a[k] = vadd(w->a[k], g); /* fuse_red1_step's arithmetic, xs already at hand */
    w->b[k] = vfma(g, keep(xs, t, m), w->b[k]);
}

/* the SN_K_PF_ROWS rows of w->F.pf at column j (a step of PF_EVERY) */
KINLINE void fuse_p2_pf(const brow *w, int64_t j) {
#if defined(__GNUC__)
    for (int i = 0; i < SN_K_PF_ROWS; i++) __builtin_prefetch(pf_at(w->F.pf[i], j), 0, 2);
#else
    (void)w, (void)j;
#endif
}
/* pass 2 at column j: the quantities of the step (returned), the reductions of N_x and N_y;
 * gx replaces xs in bs, gy goes to bg. hdu: the row has du (a constant). The sweeps prefetch
 * before it (fuse_p2_pf). In two parts, so that a pair of rows can use each part's quantities
 * before the next (fuse_bwd2_p2): a, N_out's side (xs, dh, ds) and yy; b, the rest. */
KINLINE void fuse_p2_a(const brow *w, belem *e, int64_t j, int t, M m) {
    e->xs = vld(w->bs + j);
    e->dh = dh_p23(w->dh, w->kdh, j, t, m);
    e->ds = ds_of(&w->F, e->xs, e->dh, j, t, m);
    e->yy = xx_p23(&w->F.Y, w->y, w->ky, j, t, m);
}
KINLINE void fuse_p2_b(brow *w, belem *e, int hdu, int64_t j, int t, M m, int k) {
    e->xx = xx_p23(&w->F.X, w->x, w->kx, j, t, m);
    e->dt = hdu ? vadd(load(w->du + j, t, m), e->ds) : e->ds; /* dt_of, du known */
    e->gx = vmul(gamma_at(w->F.X.gamma, j, t, m), e->dt);
    e->gy = vmul(gamma_at(w->F.Y.gamma, j, t, m), e->ds);
    fuse_red2_step(e, t, m, &w->ax[k], &w->bx[k], &w->ay[k], &w->by[k]);
    vst(w->bs + j, e->gx);
    vst(w->bg + j, e->gy);
}
KINLINE belem fuse_p2(brow *w, int hdu, int64_t j, int t, M m, int k) {
    belem e;
    fuse_p2_a(w, &e, j, t, m);
    fuse_p2_b(w, &e, hdu, j, t, m, k);
    return e;
}

/* pass 3 at column j: the input gradients (dx, dy written, or added to when accx, accy) */
KINLINE void fuse_p3_vals(const brow *w, int accx, int accy, int64_t j, int t, M m, V *ox, V *oy) {
    const V xx = xx_p23(&w->F.X, w->x, w->kx, j, t, m);
    const V yy = xx_p23(&w->F.Y, w->y, w->ky, j, t, m);
    fuse_dx_vals(&w->F, xx, yy, vld(w->bs + j), vld(w->bg + j), w->dx, w->dy, accx, accy, j, t, m,
                 ox, oy);
}
KINLINE void fuse_p3(const brow *w0, const brow *w1, int accx, int accy, int nt, int64_t j, int t,
                     M m) {
    V a0, b0, a1, b1;
    fuse_p3_vals(w0, accx, accy, j, t, m, &a0, &b0);
    if (!w1) {
        store_out2(w0->dx + j, a0, w0->dy + j, b0, t, m, nt && !accx, nt && !accy);
        return;
    }
    fuse_p3_vals(w1, accx, accy, j, t, m, &a1, &b1);
    store_out4(w0->dx + j, a0, w0->dy + j, b0, w1->dx + j, a1, w1->dy + j, b1, t, m, nt && !accx,
               nt && !accy);
}

/* pass 3 over rows w0 and w1 (w1 NULL: w0 alone; accx, accy and nt constants after inlining):
 * rows from memory (nt) in the order of the streams, rows in the caches from pass 2's last
 * columns */
KINLINE void fuse_p3_cols(const brow *w0, const brow *w1, int64_t D, int accx, int accy, int nt) {
    const int64_t h = row_head(w0->dx, D); /* row 0's stores on its lines */
    if (nt) COLS_H(h, D, { fuse_p3(w0, w1, accx, accy, 1, j, t, m); });
    else COLS_DOWN_H(h, D, { fuse_p3(w0, w1, accx, accy, 0, j, t, m); });
}
/* pass 3 of one row or a pair, its loop unswitched on accumulate-or-write and streaming (eight
 * small loops: no test per vector) */
KINLINE void fuse_p3_sweep(const brow *w0, const brow *w1, int64_t D, int accx, int accy) {
    switch ((accx != 0) * 4 + (accy != 0) * 2 + (w0->F.nt != 0)) {
    case 0: fuse_p3_cols(w0, w1, D, 0, 0, 0); break;
    case 1: fuse_p3_cols(w0, w1, D, 0, 0, 1); break;
    case 2: fuse_p3_cols(w0, w1, D, 0, 1, 0); break;
    case 3: fuse_p3_cols(w0, w1, D, 0, 1, 1); break;
    case 4: fuse_p3_cols(w0, w1, D, 1, 0, 0); break;
    case 5: fuse_p3_cols(w0, w1, D, 1, 0, 1); break;
    case 6: fuse_p3_cols(w0, w1, D, 1, 1, 0); break;
    default: fuse_p3_cols(w0, w1, D, 1, 1, 1); break;
    }
}

/* a parameter-gradient vector of rows 0 and 1: p = (p + v0) + v1, or p = fma(a1, b1,
 * fma(a0, b0, p)): the same bits as two row-by-row updates, one load and store of p */
KINLINE void acc_add2(float *p, V v0, V v1, int t, M m) {
    if (p) store(p, vadd(vadd(load(p, t, m), v0), v1), t, m);
}
KINLINE void acc_fma2(float *p, V a0, V b0, V a1, V b1, int t, M m) {
    if (p) store(p, vfma(a1, b1, vfma(a0, b0, load(p, t, m))), t, m);
}

/* Whether every norm of F has a gamma (beta) with a parameter-gradient destination, or none
 * has a beta: the cases in which the row kernels are compiled knowing which parameter pointers
 * are NULL (LayerNorm with gamma and beta, RMSNorm with gamma), without a test per vector */
KINLINE int pg_all_gamma(const sn_rfuse *F, const sn_dfuse *dp) {
    return F->X.gamma && F->Y.gamma && F->O.gamma && dp->gx && dp->gy && dp->go;
}
KINLINE int pg_all_beta(const sn_rfuse *F, const sn_dfuse *dp) {
    return F->X.beta && F->Y.beta && F->O.beta && dp->bx && dp->by && dp->bo;
}
KINLINE int pg_no_beta(const sn_rfuse *F, const sn_dfuse *dp) {
    return !F->X.beta && !F->Y.beta && !F->O.beta && !dp->bx && !dp->by && !dp->bo;
}

/* pass 2 of one row, with parameter gradients unless dp is NULL (a lone row: not unswitched on
 * du, which would double the code of this rare case) */
KINLINE void fuse_bwd_row_p2(brow *w, int64_t D, const sn_dfuse *dp) {
    RCOLS2(D, {
        if (ks % PF_EVERY == 0 && w->F.npf) fuse_p2_pf(w, j);
        const belem e = fuse_p2(w, w->du != NULL, j, t, m, k);
        if (dp) fuse_pg_step(dp, &e, j, t, m);
    });
}

/* fuse_bwd on a row of at most SN_K_STACK_ROW_MAX columns. Its stack rows live in this frame
 * alone (noinline), so that the wide rows' way (fuse_bwd) and fuse_bwd2's fallback do not carry
 * them: tests/test_stack.c holds every call to the header's stack bound. */
__attribute__((noinline)) static void fuse_bwd_row(sn_rfuse *F, int64_t D, const SN_T *dh,
                                                   const SN_T *du, const SN_T *x, const SN_T *y,
                                                   SN_T *dx, SN_T *dy, int accx, int accy,
                                                   const sn_dfuse *dp) {
    _Alignas(64) float bs[SN_K_STACK_ROW_MAX + VW];
    _Alignas(64) float bg[SN_K_STACK_ROW_MAX + VW];
    brow w;
    brow_init(&w, F, dh, du, x, y, dx, dy, bs, bg);
#if KEPT_ROWS
    _Alignas(64) float keep[KEPT_ROWS][SN_K_STACK_ROW_MAX + VW];
    brow_keep(&w, keep);
#endif
    RCOLS2(D, { fuse_p1(&w, j, t, m, k); });
    fuse_red_out(&w.F, w.a, w.b, D);
    if (!dp) fuse_bwd_row_p2(&w, D, NULL);
    else {
        const sn_dfuse d = *dp;
        const int g3 = pg_all_gamma(&w.F, &d), b3 = pg_all_beta(&w.F, &d);
        const int nb3 = pg_no_beta(&w.F, &d);
        if (g3 && b3) fuse_bwd_row_p2(&w, D, &d);
        else if (g3 && nb3) fuse_bwd_row_p2(&w, D, &d);
        else fuse_bwd_row_p2(&w, D, &d);
    }
    fuse_red_xy(&w.F, w.ax, w.bx, w.ay, w.by, D);
    fuse_p3_sweep(&w, NULL, D, accx, accy);
}

static void fuse_bwd(sn_rfuse *F, int64_t D, const SN_T *dh, const SN_T *du, const SN_T *x,
                     const SN_T *y, SN_T *dx, SN_T *dy, int accx, int accy, const sn_dfuse *dp) {
    if (D <= SN_K_STACK_ROW_MAX) {
        fuse_bwd_row(F, D, dh, du, x, y, dx, dy, accx, accy, dp);
        return;
    }
    sn_k_prefetch_rows(F, D * (int64_t)sizeof(SN_T));
    fuse_red(F, D, dh, du, x, y);
    if (dp) fuse_pg(F, D, dh, du, x, y, dp);
    fuse_dx(F, D, dh, du, x, y, dx, dy, accx, accy);
}

/* pass 2 of rows w0 and w1, each parameter-gradient vector loaded once for both (row 0's
 * contribution first); hdu: the rows have du (a constant: a loop without a test per vector).
 * The order of the parts only sets how many vectors are live at once (sixteen accumulators
 * already fill AVX2's registers): the one here spilled least of those counted (docs/performance.md,
 * "The bf16 fuse backward"); every order gives the same bits. */
KINLINE void fuse_bwd2_p2(brow *w0, brow *w1, int64_t D, const sn_dfuse *dp, int hdu) {
    const int pf = w0->F.npf || w1->F.npf; /* both rows' SN_K_PF_ROWS (brow_init) */
    RCOLS2(D, {
        if (ks % PF_EVERY == 0 && pf) fuse_p2_pf(w0, j);
        belem e0, e1;
        fuse_p2_a(w0, &e0, j, t, m);
        if (ks % PF_EVERY == 0 && pf) fuse_p2_pf(w1, j);
        fuse_p2_a(w1, &e1, j, t, m);
        acc_fma2(at(dp->go, j), e0.dh, e0.xs, e1.dh, e1.xs, t, m);
        acc_add2(at(dp->bo, j), e0.dh, e1.dh, t, m);
        fuse_p2_b(w0, &e0, hdu, j, t, m, k);
        fuse_p2_b(w1, &e1, hdu, j, t, m, k);
        acc_fma2(at(dp->gx, j), e0.dt, e0.xx, e1.dt, e1.xx, t, m);
        acc_add2(at(dp->bx, j), e0.dt, e1.dt, t, m);
        acc_fma2(at(dp->gy, j), e0.ds, e0.yy, e1.ds, e1.yy, t, m);
        acc_add2(at(dp->by, j), e0.ds, e1.ds, t, m);
    });
}

/* fuse_red_xy of rows w0 and w1 (fuse_red_out2) */
KINLINE void fuse_red_xy2(brow *w0, brow *w1, int64_t D) {
    const __m256 v[8] = {hset2(w0->ax), hset2(w0->bx), hset2(w0->ay), hset2(w0->by),
                         hset2(w1->ax), hset2(w1->bx), hset2(w1->ay), hset2(w1->by)};
    float o[8];
    red_scale(red_coef(&w0->F.X, &w0->F.Y, &w1->F.X, &w1->F.Y), hsum8x8(v), D, o);
    w0->F.xa = o[0], w0->F.xb = o[1], w0->F.ya = o[2], w0->F.yb = o[3];
    w1->F.xa = o[4], w1->F.xb = o[5], w1->F.ya = o[6], w1->F.yb = o[7];
}

/* Passes 1 and 2 of fuse_bwd on rows w0 and w1, and their reductions */
KINLINE void fuse_bwd2_passes(brow *w0, brow *w1, int64_t D, const sn_dfuse *dp) {
    RCOLS2(D, {
        fuse_p1(w0, j, t, m, k);
        fuse_p1(w1, j, t, m, k);
    });
    fuse_red_out2(&w0->F, w0->a, w0->b, &w1->F, w1->a, w1->b, D);
    if (w0->du) fuse_bwd2_p2(w0, w1, D, dp, 1);
    else fuse_bwd2_p2(w0, w1, D, dp, 0);
    fuse_red_xy2(w0, w1, D);
}

/* Two consecutive rows of one call (the same parameters) with parameter gradients: each row's
 * arithmetic is fuse_bwd's, and each parameter-gradient vector gets row 0's then row 1's
 * contribution while loaded once. */
KINLINE void fuse_bwd2_body(sn_rfuse F2[2], int64_t D, const SN_T *const dh[2],
                            const SN_T *const du[2], const SN_T *const x[2], const SN_T *const y[2],
                            SN_T *const dx[2], SN_T *const dy[2], int accx, int accy,
                            const sn_dfuse *dp2) {
    const sn_dfuse dp_ = *dp2, *dp = &dp_;
    _Alignas(64) float bs[2][SN_K_STACK_ROW_MAX + VW];
    _Alignas(64) float bg[2][SN_K_STACK_ROW_MAX + VW];
    brow w0, w1;
    brow_init(&w0, &F2[0], dh[0], du[0], x[0], y[0], dx[0], dy[0], bs[0], bg[0]);
    brow_init(&w1, &F2[1], dh[1], du[1], x[1], y[1], dx[1], dy[1], bs[1], bg[1]);
#if KEPT_ROWS
    _Alignas(64) float keep[2][KEPT_ROWS][SN_K_STACK_ROW_MAX + VW];
    brow_keep(&w0, keep[0]);
    brow_keep(&w1, keep[1]);
#endif
    const sn_rfuse *F0 = &w0.F;
    /* both rows have the fuse's parameters: say so, so that each vector is loaded once */
    w1.F.X.gamma = F0->X.gamma, w1.F.X.beta = F0->X.beta;
    w1.F.Y.gamma = F0->Y.gamma, w1.F.Y.beta = F0->Y.beta;
    w1.F.O.gamma = F0->O.gamma, w1.F.O.beta = F0->O.beta;
    const int g3 = pg_all_gamma(F0, dp), b3 = pg_all_beta(F0, dp), nb3 = pg_no_beta(F0, dp);
    if (g3 && b3) fuse_bwd2_passes(&w0, &w1, D, dp);
    else if (g3 && nb3) fuse_bwd2_passes(&w0, &w1, D, dp);
    else fuse_bwd2_passes(&w0, &w1, D, dp);
    fuse_p3_sweep(&w0, &w1, D, accx, accy);
}
/* fuse_bwd2's rows of at most SN_K_STACK_ROW_MAX columns with parameter gradients: the stack
 * rows in this frame alone (noinline), as fuse_bwd_row */
__attribute__((noinline)) static void
fuse_bwd2_rows(sn_rfuse F2[2], int64_t D, const SN_T *const dh[2], const SN_T *const du[2],
               const SN_T *const x[2], const SN_T *const y[2], SN_T *const dx[2], SN_T *const dy[2],
               int accx, int accy, const sn_dfuse *dp) {
    if (D == 4 * VW) fuse_bwd2_body(F2, 4 * VW, dh, du, x, y, dx, dy, accx, accy, dp);
    else fuse_bwd2_body(F2, D, dh, du, x, y, dx, dy, accx, accy, dp);
}
/* fuse_bwd2 as two fuse_bwd calls (noinline, as fuse_bwd2_rows: so that fuse_bwd2 is only a
 * test and a jump to either, with the same arguments) */
__attribute__((noinline)) static void
fuse_bwd2_apart(sn_rfuse F2[2], int64_t D, const SN_T *const dh[2], const SN_T *const du[2],
                const SN_T *const x[2], const SN_T *const y[2], SN_T *const dx[2],
                SN_T *const dy[2], int accx, int accy, const sn_dfuse *dp) {
    for (int q = 0; q < 2; q++)
        fuse_bwd(&F2[q], D, dh[q], du[q], x[q], y[q], dx[q], dy[q], accx, accy, dp);
}
/* Whether rows 0 and 1 store on different grids (row_head) into an output the call only writes
 * (dx without du, not accumulated; dy not accumulated) while they come from memory (npf: beyond
 * the L2). A pair's sweeps keep row 0's grid, so that each of row 1's stores would span two lines
 * the caches do not hold; as two single rows, each row stores on its own lines (docs/
 * performance.md, "Merge backward rows on their own lines"). */
KINLINE int pair_grids_differ(const sn_rfuse F2[2], int64_t D, const SN_T *const du[2],
                              SN_T *const dx[2], SN_T *const dy[2], int accx, int accy) {
    if (!F2[0].npf) return 0;
    return (!accx && !du[0] && row_head(dx[0], D) != row_head(dx[1], D)) ||
           (!accy && row_head(dy[0], D) != row_head(dy[1], D));
}
static void fuse_bwd2(sn_rfuse F2[2], int64_t D, const SN_T *const dh[2], const SN_T *const du[2],
                      const SN_T *const x[2], const SN_T *const y[2], SN_T *const dx[2],
                      SN_T *const dy[2], int accx, int accy, const sn_dfuse *dp) {
    if (D <= SN_K_STACK_ROW_MAX && dp && !du[0] == !du[1] && /* (both rows have du or neither) */
        !pair_grids_differ(F2, D, du, dx, dy, accx, accy))
        fuse_bwd2_rows(F2, D, dh, du, x, y, dx, dy, accx, accy, dp);
    else fuse_bwd2_apart(F2, D, dh, du, x, y, dx, dy, accx, accy, dp);
}

/* ---- elementwise --------------------------------------------------------------------------- */

static void add_div(const SN_T *a, const SN_T *b, float c, SN_T *out, int64_t D, int acc, int nt) {
    const V vc = vset1(c);
    if (acc)
        COLS(D, {
            V r = vadd(load(a + j, t, m), vdiv(load(b + j, t, m), vc));
            store(out + j, vadd(load(out + j, t, m), r), t, m);
        });
    else
        COLS(D, {
            store_out(out + j, vadd(load(a + j, t, m), vdiv(load(b + j, t, m), vc)), t, m, nt);
        });
}

static void apply(const SN_T *z, const SN_T *u, const SN_T *y, float c, SN_T *xo, SN_T *yo,
                  int64_t D, int nt) {
    const V vc = vset1(c);
    COLS_AT(xo, D, {
        V zj = load(z + j, t, m);
        store_out(xo + j, vadd(load(u + j, t, m), vdiv(zj, vc)), t, m, nt);
        store_out(yo + j, vadd(load(y + j, t, m), zj), t, m, nt);
    });
}

static void axpy(const SN_T *a, const SN_T *b, float alpha, SN_T *out, int64_t D, int nt) {
    const V va = vset1(alpha);
    COLS_AT_U2(out, D,
               { store_out(out + j, vfma(va, load(a + j, t, m), load(b + j, t, m)), t, m, nt); });
}

/* d loaded and stored once for up to four rows of s (the rows one after the other in each
 * column, as the slot's contract says) */
KINLINE V fold_at(const float *s, int64_t lds, int n, V v, int64_t j, int t, M m) {
    for (int k = 0; k < n; k++) v = vadd(v, load(s + k * lds + j, t, m));
    return v;
}
static void fold(const float *s, int64_t lds, int64_t n, float *d, int64_t D) {
    /* a sweep of c rows, c a constant in each use (so that fold_at's loop unrolls) */
#define FOLD_SWEEP(c)                                                                              \
    COLS_U4(D, { store(d + j, fold_at(s, lds, c, load(d + j, t, m), j, t, m), t, m); })
    for (; n >= 4; n -= 4, s += 4 * lds) FOLD_SWEEP(4);
    if (n == 3) FOLD_SWEEP(3);
    else if (n == 2) FOLD_SWEEP(2);
    else if (n == 1) FOLD_SWEEP(1);
#undef FOLD_SWEEP
}

/* ---- Hyper-Connections --------------------------------------------------------------------- */

static void hc_mix(const SN_T *const *in, int nin, const float *w, SN_T *const *out, int nout,
                   int64_t D, int nt) {
    V wv[SN_K_HC_MATS * SN_K_HC_MATS];
    for (int k = 0; k < nin * nout; k++) wv[k] = vset1(w[k]);
    COLS(D, {
        V v[SN_K_HC_MATS];
        for (int k = 0; k < nin; k++) v[k] = load(in[k] + j, t, m);
        for (int o = 0; o < nout; o++) {
            const V *wo = wv + o * nin;
            V acc = vmul(wo[0], v[0]);
            for (int k = 1; k < nin; k++) acc = vfma(wo[k], v[k], acc);
            store_out(out[o] + j, acc, t, m, nt);
        }
    });
}

/* one sweep per a[p], nb dot products in it, with RCOLS2's two accumulator sets (the lanes a
 * partial step leaves off load 0 in both rows and add +0) */
static void hc_dots(const SN_T *const *a, int na, const SN_T *const *b, int nb, int64_t D,
                    float *out) {
    for (int p = 0; p < na; p++) {
        V acc[2][SN_K_HC_MATS];
        for (int q = 0; q < nb; q++) acc[0][q] = acc[1][q] = vset1(0.0f);
        RCOLS2(D, {
            const V va = load(a[p] + j, t, m);
            for (int q = 0; q < nb; q++) acc[k][q] = vfma(va, load(b[q] + j, t, m), acc[k][q]);
        });
        for (int q = 0; q < nb; q++) {
            const V s[2] = {acc[0][q], acc[1][q]};
            out[p * nb + q] += hsum2(s);
        }
    }
}

/* hc_proj over nb of the parameter rows. Each output's sum runs over the columns in the same
 * order whatever the blocking, so every way below gives the same bits. */
KINLINE void hc_proj_block(const SN_T *x, int64_t D, const float *const *w, const int nb,
                           float *out) {
    V acc[2][SN_K_HC_MATS];
    for (int c = 0; c < nb; c++) acc[0][c] = acc[1][c] = vset1(0.0f);
    RCOLS2(D, {
        const V vx = load(x + j, t, m);
        for (int c = 0; c < nb; c++) acc[k][c] = vfma(vx, load(w[c] + j, t, m), acc[k][c]);
    });
    for (int c = 0; c < nb; c++) {
        const V s[2] = {acc[0][c], acc[1][c]};
        out[c] += hsum2(s);
    }
}

/* Rows up to 2048 columns go in blocks of at most four parameter rows, a constant count each,
 * so that the accumulators stay in registers (with a run-time count the compiler kept them in
 * memory: 4x the time at 64 columns). Wider rows go in one pass, which reads x once: blocks,
 * which read it once per block, were faster up to 1024 columns, the same at 2048 and took
 * 1.1-1.2x at 3072 and 4096 (docs/performance.md). */
static void hc_proj(const SN_T *x, int64_t D, const float *const *w, int nw, float *out) {
    if (D > 2048) {
        hc_proj_block(x, D, w, nw, out);
        return;
    }
    for (int c0 = 0; c0 < nw; c0 += 4) {
        switch (nw - c0 < 4 ? nw - c0 : 4) {
        case 1: hc_proj_block(x, D, w + c0, 1, out + c0); break;
        case 2: hc_proj_block(x, D, w + c0, 2, out + c0); break;
        case 3: hc_proj_block(x, D, w + c0, 3, out + c0); break;
        default: hc_proj_block(x, D, w + c0, 4, out + c0); break;
        }
    }
}

static void hc_wmix(const float *const *w, int nw, const float *coef, SN_T *out, int64_t D,
                    int nt) {
    V cv[SN_K_HC_MATS];
    for (int c = 0; c < nw; c++) cv[c] = vset1(coef[c]);
    COLS(D, {
        V acc = vmul(cv[0], load(w[0] + j, t, m));
        for (int c = 1; c < nw; c++) acc = vfma(cv[c], load(w[c] + j, t, m), acc);
        store_out(out + j, acc, t, m, nt);
    });
}

static void hc_wsum(const SN_T *x, int64_t n, const float *coef, int nw, float *const *dw) {
    V cv[SN_K_HC_MATS];
    for (int c = 0; c < nw; c++) cv[c] = vset1(coef[c]);
    COLS(n, {
        const V vx = load(x + j, t, m);
        for (int c = 0; c < nw; c++) store(dw[c] + j, vfma(cv[c], vx, load(dw[c] + j, t, m)), t, m);
    });
}

#ifdef SN_K16
/* bf16 widened and floats rounded with this table's vld16 and vrnd16, a vector at a time; a copy
 * is the two (out may equal a: each vector is loaded before it is stored) */
static void widen(const sn_bf16 *s, int64_t n, float *d) {
    COLS(n, { store(d + j, load(s + j, t, m), t, m); });
}
/* (round16 takes four vectors at a time through vst16x4, the fuse backward's store, so that
 * checkasm's rounding checks, special values and every 257th float, reach all its branches) */
static void round16(const float *s, int64_t n, sn_bf16 *d) {
    int64_t i = 0;
    for (; i + 4 * VW <= n; i += 4 * VW)
        vst16x4(d + i, vld(s + i), d + i + VW, vld(s + i + VW), d + i + 2 * VW, vld(s + i + 2 * VW),
                d + i + 3 * VW, vld(s + i + 3 * VW));
    COLS(n - i, { store(d + i + j, load(s + i + j, t, m), t, m); });
}
static void copy(const sn_bf16 *a, sn_bf16 *out, int64_t n) {
    COLS(n, { store(out + j, load(a + j, t, m), t, m); });
}
#define WIDEN widen
#define ROUND round16
#define COPY  copy
#else
#define WIDEN sn_k_move_f32
#define ROUND sn_k_move_f32
#define COPY  sn_k_copy_f32
#endif

/* The widest rows the norm drivers pair (the table's pair_w_fwd and pair_w_bwd), as measured
 * through the norm calls with their rows in L2 or L3 on Zen 4 (docs/performance.md, "Norm rows
 * in pairs"): up to these widths paired rows take less time; wider, the two rows' sweeps no
 * longer fit L1 together. AVX2 pairs the backward only up to 128 columns, as before: norm_bwd2's
 * four reductions of four accumulator vectors fill its 16 registers and longer paired rows
 * spill; and its RMSNorm forward paired lost time from L3 above 768 columns. */
#if VW < 16
#define PAIR_W_FWD 768
#define PAIR_W_BWD 128
#else
#define PAIR_W_FWD 1024
#define PAIR_W_BWD 1024
#endif

/* the table: an sn_kern16 on bf16 rows, an sn_kern on fp32 rows */
#ifdef SN_K16
const sn_kern16 SN_KERN_TABLE = {
#else
const sn_kern SN_KERN_TABLE = {
#endif
    .norm_row = norm_row,
    .norm_s = NORM_S,
    .norm_fwd = norm_fwd,
    .norm_pg = norm_pg,
    .norm_bwd = norm_bwd,
    .norm_bwd2 = norm_bwd2,
    .stats2 = stats2,
    .fuse_s = fuse_s,
    .fuse_fwd2 = fuse_fwd2,
    .fuse_red = fuse_red,
    .fuse_pg = fuse_pg,
    .fuse_dx = fuse_dx,
    .fuse_bwd = fuse_bwd,
    .fuse_bwd2 = fuse_bwd2,
    .add_div = add_div,
    .apply = apply,
    .axpy = axpy,
    .hc_mix = hc_mix,
    .hc_dots = hc_dots,
    .hc_proj = hc_proj,
    .hc_wmix = hc_wmix,
    .hc_wsum = hc_wsum,
    .copy = COPY,
    .widen = WIDEN,
    .round = ROUND,
    .fold = fold,
    .pair_w_fwd = PAIR_W_FWD,
    .pair_w_bwd = PAIR_W_BWD,
};
