/* Helpers shared by the hardening tests: checks that count and report, a deterministic PRNG, a
 * context per kernel path, and a float64 reference of one norm (forward and backward) written
 * from the header's formulas. Self-contained: only the public header and libc/libm. */
#ifndef SN_HD_H
#define SN_HD_H

#include "siamesenorm.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hd_failures;
static long hd_checks;

#define HD_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        hd_checks++;                                                                               \
        if (!(cond)) {                                                                             \
            hd_failures++;                                                                         \
            fprintf(stderr, "%s:%d: FAIL (%s): ", __FILE__, __LINE__, #cond);                      \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define HD_OK(call) HD_CHECK((call) == SN_OK, "%s did not return SN_OK", #call)

static inline int hd_finish(const char *name)
{
    printf("%s: %ld checks, %d failures\n", name, hd_checks, hd_failures);
    return hd_failures ? 1 : 0;
}

static inline void *hd_alloc(size_t bytes)
{
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}
#define HD_FALLOC(n) ((float *)hd_alloc((size_t)(n) * sizeof(float)))
#define HD_DALLOC(n) ((double *)hd_alloc((size_t)(n) * sizeof(double)))

/* splitmix64 */
typedef struct hd_rng {
    uint64_t s;
} hd_rng;
static inline uint64_t hd_next(hd_rng *g)
{
    uint64_t z = (g->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* uniform in [-1, 1) */
static inline double hd_unif(hd_rng *g)
{
    return -1.0 + 2.0 * ((double)(hd_next(g) >> 11) * (1.0 / 9007199254740992.0));
}
/* approximately standard normal (sum of 4 uniforms, rescaled) */
static inline double hd_gauss(hd_rng *g)
{
    return (hd_unif(g) + hd_unif(g) + hd_unif(g) + hd_unif(g)) * 0.8660254037844386;
}

/* A context on kernel path isa, or NULL when this build / CPU lacks it. */
static inline sn_ctx *hd_isa_ctx(sn_isa isa)
{
    sn_ctx *ctx = NULL;
    if (!sn_isa_available(isa) || sn_ctx_create(&ctx) != SN_OK)
        return NULL;
    if (sn_ctx_set_isa(ctx, isa) != SN_OK) {
        sn_ctx_destroy(ctx);
        return NULL;
    }
    return ctx;
}

static inline int hd_all_finite(const float *p, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(p[k]))
            return 0;
    return 1;
}

/* ---- float64 reference of one LayerNorm / RMSNorm over whole rows (group 0) ------------------
 * gamma, beta: D doubles each (beta may be NULL). */
static inline void hd_ref_fwd(int kind, int64_t R, int64_t D, const float *x, double eps,
                              const double *gamma, const double *beta, double *out)
{
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * D;
        double m = 0.0, v = 0.0;
        if (kind == SN_NORM_LAYERNORM) {
            for (int64_t j = 0; j < D; j++)
                m += xr[j];
            m /= (double)D;
        }
        for (int64_t j = 0; j < D; j++)
            v += ((double)xr[j] - m) * ((double)xr[j] - m);
        double rstd = 1.0 / sqrt(v / (double)D + eps);
        for (int64_t j = 0; j < D; j++)
            out[r * D + j] = gamma[j] * ((double)xr[j] - m) * rstd + (beta ? beta[j] : 0.0);
    }
}

/* dx only (the input gradient). */
static inline void hd_ref_bwd(int kind, int64_t R, int64_t D, const float *dout, const float *x,
                              double eps, const double *gamma, double *dx)
{
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * D, *dr = dout + r * D;
        double m = 0.0, v = 0.0, mg = 0.0, mgx = 0.0;
        if (kind == SN_NORM_LAYERNORM) {
            for (int64_t j = 0; j < D; j++)
                m += xr[j];
            m /= (double)D;
        }
        for (int64_t j = 0; j < D; j++)
            v += ((double)xr[j] - m) * ((double)xr[j] - m);
        double rstd = 1.0 / sqrt(v / (double)D + eps);
        for (int64_t j = 0; j < D; j++) {
            double g = gamma[j] * dr[j], xh = ((double)xr[j] - m) * rstd;
            mg += g;
            mgx += g * xh;
        }
        mg /= (double)D;
        mgx /= (double)D;
        if (kind != SN_NORM_LAYERNORM)
            mg = 0.0;
        for (int64_t j = 0; j < D; j++) {
            double g = gamma[j] * dr[j], xh = ((double)xr[j] - m) * rstd;
            dx[r * D + j] = rstd * (g - mg - xh * mgx);
        }
    }
}

/* max |a - b| / max(max |b|, floor); NaN in a gives +inf. */
static inline double hd_err(const float *a, const double *b, int64_t n, double floor_)
{
    double mb = floor_, md = 0.0;
    for (int64_t k = 0; k < n; k++) {
        if (isnan(a[k]))
            return INFINITY;
        if (fabs(b[k]) > mb)
            mb = fabs(b[k]);
        if (fabs((double)a[k] - b[k]) > md)
            md = fabs((double)a[k] - b[k]);
    }
    return md / mb;
}

#endif
