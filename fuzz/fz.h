/* What the libFuzzer harnesses share beyond tests/testutil.h (whose checks, allocation and
 * contexts they use; a failed check aborts, so libFuzzer keeps the input): a reader over the
 * fuzzer's bytes (exhausted input reads as zeros), value generators over it, exactly-sized
 * buffers (so AddressSanitizer sees any access past a view), the overlap rule of the header
 * ("Aliasing") and the contexts every harness runs on. */
#ifndef SN_FZ_H
#define SN_FZ_H

#define TU_ABORT_ON_FAILURE
#include "testutil.h"

typedef struct fz {
    const uint8_t *p;
    size_t n;
} fz;

static inline uint8_t fz_u8(fz *f) {
    if (!f->n) return 0;
    f->n--;
    return *f->p++;
}
static inline uint32_t fz_u32(fz *f) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = v << 8 | fz_u8(f);
    return v;
}
/* 0 .. n-1 */
static inline int fz_pick(fz *f, int n) { return (int)(fz_u8(f) % (unsigned)n); }

/* eps / scale candidates: valid ones first, then every class of invalid value. */
static inline float fz_positive(fz *f, int *valid, int *tame) {
    static const float t[] = {1e-5f,  1e-6f,  1e-3f, 0.1f, 1.0f,   2.0f, 1e-12f,
                              1e-30f, 1e-40f, 3e38f, 0.0f, -1e-5f, -0.0f};
    int i = fz_pick(f, 16);
    float v;
    if (i < 13) {
        v = t[i];
    } else if (i == 13) {
        v = NAN;
    } else if (i == 14) {
        v = INFINITY;
    } else {
        uint32_t b = fz_u32(f);
        memcpy(&v, &b, 4);
    }
    *valid = v > 0.0f && isfinite(v);
    *tame = v >= 1e-6f && v <= 2.0f;
    return v;
}

/* A value for an input matrix: tame mode gives [-4, 4] with repeats (near-constant rows);
 * wild mode also gives huge, tiny, subnormal, NaN and Inf. */
static inline float fz_value(fz *f, int wild) {
    uint8_t b = fz_u8(f);
    if (wild && b >= 240) {
        static const float w[] = {NAN,    INFINITY, -INFINITY, 1e30f,  -1e30f, 1e-40f, 3e38f, -0.0f,
                                  1e-20f, 1e20f,    65504.0f,  1e-45f, 0.0f,   1.0f,   -1.0f, 2.0f};
        return w[b - 240];
    }
    return ((float)b - 127.5f) / 32.0f;
}

/* The floats a view of R rows of D columns with stride ld spans (0 when R or D <= 0). */
static inline int64_t fz_span(int64_t R, int64_t D, int64_t ld) {
    return R > 0 && D > 0 ? (R - 1) * ld + D : 0;
}

/* An exactly-sized heap buffer (at least one float so every pointer is valid). */
static inline float *fz_buf(int64_t n, fz *f, int wild) {
    float *p = tu_falloc(n > 0 ? n : 1);
    for (int64_t k = 0; k < n; k++) p[k] = fz_value(f, wild);
    return p;
}

/* A view taking part in a call: its first float, its span in floats, whether the call writes
 * it, and its stride (for the "same view" exception). */
typedef struct fz_view {
    const float *p;
    int64_t span, ld;
    int write;
} fz_view;

/* 1 if the call must reject the views with SN_ERR_ALIAS: two views overlap, at least one is
 * written, and they are not an allowed alias pair that is the very same view. allowed[i][j]
 * (i < j) marks the "may alias" pairs. */
static inline int fz_forbidden_overlap(const fz_view *v, int n, const unsigned char allowed[][8]) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!v[i].p || !v[j].p || v[i].span <= 0 || v[j].span <= 0) continue;
            if (!v[i].write && !v[j].write) continue;
            uintptr_t a0 = (uintptr_t)v[i].p, a1 = a0 + (uintptr_t)v[i].span * 4;
            uintptr_t b0 = (uintptr_t)v[j].p, b1 = b0 + (uintptr_t)v[j].span * 4;
            if (a0 >= b1 || b0 >= a1) continue;
            if (allowed && allowed[i][j] && v[i].p == v[j].p && v[i].ld == v[j].ld) continue;
            return 1;
        }
    return 0;
}

/* A context per kernel path plus one with a caller parallel-for hook (tasks run in reverse
 * order), created once. Index 0 is NULL (defaults). */
static inline void fz_reverse_hook(void *user, int64_t n, sn_task_fn task, void *arg) {
    (void)user;
    for (int64_t i = n - 1; i >= 0; i--) task(arg, i);
}
#define FZ_NCTX 5
static inline const sn_ctx *fz_ctx(int i) {
    static sn_ctx *ctxs[FZ_NCTX];
    static int ready;
    if (!ready) {
        static const sn_isa isas[] = {SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512};
        for (int k = 0; k < 3; k++) ctxs[k + 1] = tu_isa_ctx(isas[k]);
        if (sn_ctx_create(&ctxs[4]) == SN_OK)
            sn_ctx_set_parallel_for(ctxs[4], fz_reverse_hook, NULL, 3);
        ready = 1;
    }
    return ctxs[i % FZ_NCTX];
}

#endif
