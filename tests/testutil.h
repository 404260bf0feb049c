/* The helpers of every test program: tests/, tests/hardening/, tests/checkasm/ and fuzz/.
 *   checks     CHECK, CHECK_MSG, CHECK_STATUS, CHECK_OK, CHECK_ERR count every check and print
 *              file:line, the message and the condition of a failed one (the first
 *              TU_MAX_PRINTED); tu_finish prints "<name>: N checks, M failures". A program that
 *              defines TU_ABORT_ON_FAILURE before including this (the fuzz harnesses) aborts at
 *              the first failed check instead, so libFuzzer records the input.
 *   contexts   tu_isa_ctx: a context forced onto one kernel path.
 *   PRNG       splitmix64 (tu_rng), fixed seeds everywhere; xorshift64 (tu_xs) for the two
 *              tests whose inputs have always come from it.
 *   buffers    allocation that exits on failure, canary patterns and their damage counts.
 *   metrics    the error of an fp32 result against the float64 reference (ref64.h).
 * Only the public header and libc/libm. */
#ifndef SN_TESTUTIL_H
#define SN_TESTUTIL_H

#include "siamesenorm.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define TU_PRINTF(f, a) __attribute__((format(printf, f, a), cold))
/* not inlined: gcc's -Wmaybe-uninitialized then cannot mistake a buffer that a loop fills for
 * one that is read before it is written */
#define TU_NOINLINE __attribute__((noinline, unused))
#else
#define TU_PRINTF(f, a)
#define TU_NOINLINE
#endif

/* ---- checks -------------------------------------------------------------------------------- */

#define TU_MAX_PRINTED 30

static int tu_failures;
static long tu_checks;

/* Records a failure: prints "file:line: FAIL: message [cond]" (file NULL: "FAIL: message";
 * cond NULL: no brackets), aborts under TU_ABORT_ON_FAILURE. */
static inline void tu_vfail(const char *file, int line, const char *cond, const char *fmt,
                            va_list ap) {
    if (++tu_failures > TU_MAX_PRINTED) return;
    if (file) fprintf(stderr, "%s:%d: ", file, line);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    if (cond) fprintf(stderr, " [%s]", cond);
    fputc('\n', stderr);
#ifdef TU_ABORT_ON_FAILURE
    abort();
#endif
}

TU_PRINTF(4, 5)
static inline void tu_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tu_vfail(file, line, cond, fmt, ap);
    va_end(ap);
}

#define TU_FAIL(...) tu_fail(__FILE__, __LINE__, NULL, __VA_ARGS__)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        tu_checks++;                                                                               \
        if (!(cond)) tu_fail(__FILE__, __LINE__, NULL, "%s", #cond);                               \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        tu_checks++;                                                                               \
        if (!(cond)) tu_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                              \
    } while (0)

/* The call must return exactly `expected`. */
#define CHECK_STATUS(call, expected)                                                               \
    do {                                                                                           \
        sn_status tu_st_ = (call);                                                                 \
        sn_status tu_ex_ = (expected);                                                             \
        tu_checks++;                                                                               \
        if (tu_st_ != tu_ex_)                                                                      \
            TU_FAIL("%s returned %d (%s), expected %d (%s)", #call, (int)tu_st_,                   \
                    sn_status_string(tu_st_), (int)tu_ex_, sn_status_string(tu_ex_));              \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, SN_OK)

/* An error metric value `err` against tolerance `tol`, with a label; SN_TEST_VERBOSE=1 prints
 * every measured error. */
#define CHECK_ERR(label, err, tol)                                                                 \
    do {                                                                                           \
        double tu_e_ = (err);                                                                      \
        tu_checks++;                                                                               \
        if (!(tu_e_ <= (tol)))                                                                     \
            TU_FAIL("%s: error %.3e > tolerance %.1e", (label), tu_e_, (double)(tol));             \
        if (getenv("SN_TEST_VERBOSE"))                                                             \
            printf("  %-60s err %.3e (tol %.0e)\n", (label), tu_e_, (double)(tol));                \
    } while (0)

static inline int tu_finish(const char *name) {
    printf("%s: %ld checks, %d failures", name, tu_checks, tu_failures);
    if (tu_failures > TU_MAX_PRINTED) printf(" (the first %d printed)", TU_MAX_PRINTED);
    putchar('\n');
    return tu_failures ? 1 : 0;
}

/* ---- contexts ------------------------------------------------------------------------------ */

/* A context forced onto kernel path isa (SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512), or NULL
 * when this build / CPU lacks it. The accuracy tests run once per available path, since every
 * path has its own kernels. */
static inline sn_ctx *tu_isa_ctx(int isa) {
    sn_ctx *ctx = NULL;
    if (!sn_isa_available((sn_isa)isa) || sn_ctx_create(&ctx) != SN_OK) return NULL;
    if (sn_ctx_set_isa(ctx, (sn_isa)isa) != SN_OK) {
        sn_ctx_destroy(ctx);
        return NULL;
    }
    return ctx;
}

/* ---- PRNG: splitmix64, fixed seeds everywhere --------------------------------------------- */

typedef struct tu_rng {
    uint64_t s;
} tu_rng;

static inline uint64_t tu_next(tu_rng *g) {
    uint64_t z = (g->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static inline double tu_unif(tu_rng *g, double lo, double hi) {
    return lo + (hi - lo) * ((double)(tu_next(g) >> 11) * (1.0 / 9007199254740992.0));
}

static inline int64_t tu_randint(tu_rng *g, int64_t n) {
    return (int64_t)(tu_next(g) % (uint64_t)n);
}

/* approximately standard normal: the sum of 4 uniforms in [-1, 1), rescaled to variance 1 */
static inline double tu_gauss(tu_rng *g) {
    double s = tu_unif(g, -1.0, 1.0);
    s += tu_unif(g, -1.0, 1.0);
    s += tu_unif(g, -1.0, 1.0);
    s += tu_unif(g, -1.0, 1.0);
    return s * 0.8660254037844386;
}

/* xorshift64, uniform floats in [-1, 1) with 24 random bits: the stream test_paths and checkasm
 * draw their inputs from. Kept (not replaced by tu_rng) so their inputs stay the ones their
 * tolerances were set on: drawn from splitmix64 instead, test_paths' "fuse bwd layernorm" at
 * D = 1, R = 20000 differs from scalar by 9.4e-5 > its 5e-5 (parameter gradients summed over
 * 20000 rows with cancellation; 9.4e-6 on this stream). */
typedef struct tu_xs {
    uint64_t s;
} tu_xs;

static inline float tu_xs_unif(tu_xs *g) {
    g->s ^= g->s << 13;
    g->s ^= g->s >> 7;
    g->s ^= g->s << 17;
    return (float)((g->s >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

/* ---- buffers ------------------------------------------------------------------------------ */

TU_NOINLINE static void *tu_xalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* uninitialised (valgrind then sees any read before a write) */
static inline float *tu_falloc(int64_t n) { return (float *)tu_xalloc((size_t)n * sizeof(float)); }
static inline double *tu_dalloc(int64_t n) {
    return (double *)tu_xalloc((size_t)n * sizeof(double));
}

/* zero-filled */
static inline void *tu_xcalloc(size_t bytes) {
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}
static inline float *tu_fzeros(int64_t n) { return (float *)tu_xcalloc((size_t)n * sizeof(float)); }
static inline double *tu_dzeros(int64_t n) {
    return (double *)tu_xcalloc((size_t)n * sizeof(double));
}

static inline int tu_all_finite(const float *p, int64_t n) {
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(p[k])) return 0;
    return 1;
}

/* Canary: a quiet-NaN pattern that differs per element, compared bitwise. */
static inline float tu_canary_value(int64_t k) {
    uint32_t bits = 0x7FC00000u | (uint32_t)((k * 2654435761u + 12345u) & 0x3FFFFFu);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline void tu_canary_fill(float *p, int64_t n) {
    for (int64_t k = 0; k < n; k++) p[k] = tu_canary_value(k);
}

/* Fill the R x D view (row stride ld) with uniform values; padding is left alone. */
static inline void tu_fill_view(tu_rng *g, float *p, int64_t R, int64_t D, int64_t ld, double lo,
                                double hi) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) p[r * ld + j] = (float)tu_unif(g, lo, hi);
}

static inline void tu_fill(tu_rng *g, float *p, int64_t n, double lo, double hi) {
    for (int64_t k = 0; k < n; k++) p[k] = (float)tu_unif(g, lo, hi);
}

/* Count elements outside the R x D view (but inside R * ld) that differ bitwise from the canary
 * pattern written by tu_canary_fill over the whole buffer. */
static inline int64_t tu_padding_damage(const float *p, int64_t R, int64_t D, int64_t ld) {
    int64_t bad = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = D; j < ld; j++) {
            float c = tu_canary_value(r * ld + j);
            if (memcmp(&p[r * ld + j], &c, sizeof c) != 0) bad++;
        }
    return bad;
}

/* Count elements k in [from, to) of a tu_canary_fill'ed buffer that no longer hold the canary
 * (guard zones after a buffer the call must not write past). */
static inline int64_t tu_guard_damage(const float *p, int64_t from, int64_t to) {
    int64_t bad = 0;
    for (int64_t k = from; k < to; k++) {
        float c = tu_canary_value(k);
        bad += memcmp(&p[k], &c, sizeof c) != 0;
    }
    return bad;
}

static inline void tu_to_double(const float *p, int64_t R, int64_t D, int64_t ld, double *out,
                                int64_t ldo) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) out[r * ldo + j] = (double)p[r * ld + j];
}

/* ---- error metric ------------------------------------------------------------------------- *
 * err = max |a - b| / max(max |b|, floor) over an R x D view: the worst absolute deviation of
 * the fp32 result a from the float64 reference b, relative to the largest reference magnitude.
 * `floor` (an absolute scale) keeps an all-zero reference meaningful: the result must then be
 * within tol * floor of zero. NaN in a gives +inf. */
static inline double tu_err_view(const float *a, int64_t lda, const double *b, int64_t ldb,
                                 int64_t R, int64_t D, double flo) {
    double mb = 0.0, md = 0.0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) {
            double bv = b[r * ldb + j], av = (double)a[r * lda + j];
            if (fabs(bv) > mb) mb = fabs(bv);
            if (av != av) return INFINITY;
            if (fabs(av - bv) > md) md = fabs(av - bv);
        }
    return md / (mb > flo ? mb : flo);
}

/* The same metric over n contiguous values. */
static inline double tu_err(const float *a, const double *b, int64_t n, double flo) {
    return tu_err_view(a, n, b, n, 1, n, flo);
}

/* Same metric, double vs double (e.g. accumulated-minus-prefill vs finite differences). */
static inline double tu_err_dd(const double *a, const double *b, int64_t n, double flo) {
    double mb = 0.0, md = 0.0;
    for (int64_t k = 0; k < n; k++) {
        if (a[k] != a[k]) return INFINITY;
        if (fabs(b[k]) > mb) mb = fabs(b[k]);
        if (fabs(a[k] - b[k]) > md) md = fabs(a[k] - b[k]);
    }
    return md / (mb > flo ? mb : flo);
}

/* Saved statistics of one norm (kind LayerNorm: G means then G rstds per row; RMSNorm: G rstds)
 * vs reference ones: rstd relative to itself, mean relative to the group's std (1 / rstd).
 * lib row stride ldl, ref row stride ldr (both in floats/doubles). */
static inline double tu_stats_err(int kind, int64_t G, int64_t R, const float *lib, int64_t ldl,
                                  const double *ref, int64_t ldr) {
    double emax = 0.0;
    const int64_t nm = kind == SN_NORM_LAYERNORM ? G : 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t g = 0; g < G; g++) {
            double rs = ref[r * ldr + nm + g];
            double e = fabs((double)lib[r * ldl + nm + g] - rs) / fabs(rs);
            if (nm) {
                double em = fabs((double)lib[r * ldl + g] - ref[r * ldr + g]) * rs;
                if (em != em) return INFINITY;
                e = em > e ? em : e;
            }
            if (e != e) return INFINITY;
            emax = e > emax ? e : emax;
        }
    return emax;
}

/* How many elements a check probes by finite differences, given the count it probes in a normal
 * build: at most TU_FD_SMALL_MAX in sanitizer builds (SN_TEST_SMALL) and wherever the
 * environment sets SN_TEST_FD_SMALL (to anything but "" or "0"), as tools/test.sh does for its
 * valgrind stage; drawn at random by the caller as when its own count is below the whole. Under
 * the sanitizers and valgrind the float64 reference behind the probes took most of test_norm's,
 * test_fuse's and test_net's time while the library calls are the same; the first stage of
 * tools/test.sh runs the full counts. */
#define TU_FD_SMALL_MAX 48
static inline int64_t tu_fd_count(int64_t n) {
#ifdef SN_TEST_SMALL
    const int small = 1;
#else
    const char *e = getenv("SN_TEST_FD_SMALL");
    const int small = e && *e && strcmp(e, "0");
#endif
    return small && n > TU_FD_SMALL_MAX ? TU_FD_SMALL_MAX : n;
}

/* Central finite difference of loss() with respect to *v: (L(v+h) - L(v-h)) / 2h. */
typedef double (*tu_loss_fn)(void *ctx);
static inline double tu_fd(tu_loss_fn loss, void *ctx, double *v, double h) {
    double v0 = *v;
    *v = v0 + h;
    double lp = loss(ctx);
    *v = v0 - h;
    double lm = loss(ctx);
    *v = v0;
    return (lp - lm) / (2.0 * h);
}

#endif /* SN_TESTUTIL_H */
