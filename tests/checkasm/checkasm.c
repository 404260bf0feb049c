/* checkasm: the harness of checkasm.h and its main.
 *   checkasm            every slot of every path this CPU runs against the scalar table
 *   checkasm --bench [--rounds N] [--widths W,W,...] [--slot NAME] [--norm K]
 *                       (--bench-only: no checks) also times every slot on every path and on
 *                       `auto`'s tables, the paths interleaved (bench.c; ns per element; not
 *                       pass/fail), on norms ca_norm(K) (default 0: LayerNorm with gamma and
 *                       beta; 4: RMSNorm with gamma only)
 * Built with SN_TEST_SMALL (the sanitizer builds, see tests/meson.build), it calls the slots
 * with fewer widths: 1..40 and every width above 40 of the full list. */
#include "checkasm.h"

#include "cpu.h"
#include "testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- widths, norms, inputs ----------------------------------------------------------------- */

static int64_t widths[80];
const int64_t *ca_widths = widths;
int ca_nwidths;

static void init_widths(void) {
#ifdef SN_TEST_SMALL
    const int64_t dense = 40, nwide = 7; /* not 1032: the sanitizer build's time */
#else
    const int64_t dense = 70, nwide = 8;
#endif
    for (int64_t w = 1; w <= dense; w++) widths[ca_nwidths++] = w;
    /* 136 and 1032: rows of an odd multiple of 8 floats below and above the stack rows' 1024 */
    const int64_t wide[8] = {127, 128, 129, 136, 768, 1000, 4096, 1032};
    for (int64_t i = 0; i < nwide; i++) widths[ca_nwidths++] = wide[i];
}

sn_norm ca_norm(int i) {
    const int32_t kinds[4] = {SN_NORM_LAYERNORM, SN_NORM_RMSNORM, SN_NORM_IDENTITY, SN_NORM_SCALE};
    const int32_t affs[3] = {SN_AFFINE_SCALE_SHIFT, SN_AFFINE_SCALE, SN_AFFINE_NONE};
    sn_norm n = {kinds[i / 3], affs[i % 3], 0, 1e-5f};
    return n;
}

static tu_xs rng = {88172645463325252ull};
void ca_seed(uint64_t s) { rng.s = s * 2654435761u + 88172645463325252ull; }
float ca_rand(void) { return tu_xs_unif(&rng); }

/* ---- rows with canaries -------------------------------------------------------------------- */

enum { GUARD = 64, MAX_ROWS = 256 };        /* floats on each side */
static const uint32_t CANARY = 0x7fa5c3e1u; /* a NaN no kernel computes */
static const sn_bf16 CANARY16 = 0x7fa5;     /* a signalling bf16 NaN: no rounding writes one */

typedef struct row {
    unsigned char *base;
    int64_t lead, n, total; /* elements before the row, in it, in the whole allocation */
    size_t es;              /* bytes per element: 4 (float) or 2 (bf16) */
} row;
static row rows[MAX_ROWS];
static int nrows;

static char where[256];
static double worst; /* the largest error ca_close saw */

static const void *canary_of(size_t es) {
    return es == 2 ? (const void *)&CANARY16 : (const void *)&CANARY;
}

/* a row of n elements of es bytes, `off` elements past a 64-byte boundary, canaries around */
static void *row_new(int64_t n, int off, size_t es) {
    if (nrows == MAX_ROWS) {
        fprintf(stderr, "checkasm: more than %d rows in one check\n", MAX_ROWS);
        exit(2);
    }
    const int64_t lead = GUARD + off;
    const size_t bytes = ((size_t)(lead + n + GUARD) * es + 63) / 64 * 64;
    unsigned char *b = aligned_alloc(64, bytes);
    if (!b) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < bytes; i += es) memcpy(b + i, canary_of(es), es);
    rows[nrows++] = (row){b, lead, n, (int64_t)(bytes / es), es};
    return b + (size_t)lead * es;
}

float *ca_row(int64_t n, int off) {
    float *p = row_new(n, off, sizeof(float));
    for (int64_t j = 0; j < n; j++) p[j] = 0.25f * (float)(j % 7) - 0.5f; /* for += outputs */
    return p;
}

sn_bf16 *ca_row16(int64_t n, int off) {
    sn_bf16 *p = row_new(n, off, sizeof(sn_bf16));
    for (int64_t j = 0; j < n; j++) p[j] = sn_k_bf16_round(0.25f * (float)(j % 7) - 0.5f);
    return p;
}

float *ca_row_rand(int64_t n, int off, float scale, float shift) {
    float *p = ca_row(n, off);
    for (int64_t j = 0; j < n; j++) p[j] = shift + scale * ca_rand();
    return p;
}

float *ca_row_copy(const float *src, int64_t n, int off) {
    float *p = ca_row(n, off);
    memcpy(p, src, (size_t)n * sizeof(float));
    return p;
}

void ca_rows_ok(const char *label) {
    for (int i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        for (int64_t k = 0; k < r->total; k++) {
            if (k == r->lead) k += r->n;
            if (k < r->total && memcmp(r->base + (size_t)k * r->es, canary_of(r->es), r->es)) {
                ca_check(0, "%s: row %d written at column %lld (row of %lld)", label, i,
                         (long long)(k - r->lead), (long long)r->n);
                break;
            }
        }
    }
    tu_checks++;
}

void ca_rows_reset(void) {
    for (int i = 0; i < nrows; i++) free(rows[i].base);
    nrows = 0;
}

/* ---- checks -------------------------------------------------------------------------------- */

void ca_where(const char *path, const char *slot, int64_t W, const char *fmt, ...) {
    int k = snprintf(where, sizeof where, "%s %s W=%lld ", path, slot, (long long)W);
    va_list ap;
    va_start(ap, fmt);
    if (k > 0 && (size_t)k < sizeof where) vsnprintf(where + k, sizeof where - (size_t)k, fmt, ap);
    va_end(ap);
}

/* one check of testutil.h, its message prefixed with the context of ca_where */
void ca_check(int ok, const char *fmt, ...) {
    tu_checks++;
    if (ok) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tu_fail(NULL, 0, NULL, "%s: %s", where, msg);
}

void ca_close(const char *what, const float *a, const float *r, int64_t n) {
    double mx = 1.0, e = 0.0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs((double)r[i]) > mx) mx = fabs((double)r[i]);
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(r[i])) continue;
        const double d = fabs((double)a[i] - (double)r[i]);
        if (!(d <= e)) e = d, at = i; /* NaN: worst */
    }
    if (e / mx > worst) worst = e / mx;
    ca_check(e / mx <= SN_K_TOL, "%s vs scalar: rel. error %.3g > %.0e at [%lld] (%.9g vs %.9g)",
             what, e / mx, SN_K_TOL, (long long)at, n ? a[at] : 0.0, n ? r[at] : 0.0);
}

void ca_same(const char *what, const float *a, const float *b, int64_t n) {
    if (memcmp(a, b, (size_t)n * sizeof(float)) == 0) {
        tu_checks++;
        return;
    }
    int64_t i = 0;
    while (memcmp(a + i, b + i, sizeof(float)) == 0) i++;
    ca_check(0, "%s: not bitwise the same at [%lld] (%.9g vs %.9g)", what, (long long)i, a[i],
             b[i]);
}

/* ---- bf16 rows ---------------------------------------------------------------------------- */

sn_bf16 *ca_b16_rand(int64_t n, int off, float scale, float shift) {
    sn_bf16 *p = ca_row16(n, off);
    for (int64_t j = 0; j < n; j++) p[j] = sn_k_bf16_round(shift + scale * ca_rand());
    return p;
}

sn_bf16 *ca_b16_copy(const sn_bf16 *src, int64_t n, int off) {
    sn_bf16 *p = ca_row16(n, off);
    memcpy(p, src, (size_t)n * sizeof *p);
    return p;
}

/* the fp32 row of a bf16 row's values */
float *ca_widen16(const sn_bf16 *b, int64_t n) {
    float *f = ca_row(n, 0);
    for (int64_t j = 0; j < n; j++) f[j] = sn_k_bf16_widen(b[j]);
    return f;
}

/* bf16 row a is bitwise the rounding of fp32 row r */
void ca_same16(const char *what, const sn_bf16 *a, const float *r, int64_t n) {
    for (int64_t j = 0; j < n; j++)
        if (a[j] != sn_k_bf16_round(r[j])) {
            ca_check(0, "%s: [%lld] is %04x, the rounding of the fp32 slot's %.9g is %04x", what,
                     (long long)j, a[j], (double)r[j], sn_k_bf16_round(r[j]));
            return;
        }
    ca_check(1, "");
}
void ca_same16b(const char *what, const sn_bf16 *a, const sn_bf16 *b, int64_t n) {
    ca_check(memcmp(a, b, (size_t)n * sizeof *a) == 0, "%s: not bitwise the same", what);
}

const char *const ca_type_names[CA_NTYPES] = {"f32", "bf16"};

/* ---- bits across tables ------------------------------------------------------------------- */

/* auto's table au (placement s, kind k, class c) pairs rows as the path its stats2 and
 * norm_bwd2 come from does: each pair width equals that path's (registry.c, take) */
static void check_pair_width(int from_path, int64_t w, int64_t want, const char *what,
                             const char *path, unsigned s, int k, int c) {
    if (from_path)
        CHECK_MSG(w == want, "auto (place %u, kind %d, class %d): %s %lld, %s's %lld", s, k, c,
                  what, (long long)w, path, (long long)want);
}
static void check_pair_widths(const ca_path *au, unsigned s, int k, int c) {
    for (int isa = SN_ISA_SCALAR; isa <= SN_ISA_AVX512; isa++) {
        if (!sn_cpu_has((sn_isa)isa)) continue;
        const sn_kern *p = sn_kern_for((sn_isa)isa, 0, 0, SN_K_CALL_OTHER);
        const sn_kern16 *q = sn_kern16_for((sn_isa)isa, 0, 0, SN_K_CALL_OTHER);
        const char *n = sn_isa_name((sn_isa)isa);
        check_pair_width(au->K->stats2 == p->stats2, au->K->pair_w_fwd, p->pair_w_fwd,
                         "fp32 pair_w_fwd", n, s, k, c);
        check_pair_width(au->K->norm_bwd2 == p->norm_bwd2, au->K->pair_w_bwd, p->pair_w_bwd,
                         "fp32 pair_w_bwd", n, s, k, c);
        check_pair_width(au->K16->stats2 == q->stats2, au->K16->pair_w_fwd, q->pair_w_fwd,
                         "bf16 pair_w_fwd", n, s, k, c);
        check_pair_width(au->K16->norm_bwd2 == q->norm_bwd2, au->K16->pair_w_bwd, q->pair_w_bwd,
                         "bf16 pair_w_bwd", n, s, k, c);
    }
}

/* one check: slot sl of element type t on table a gives table b's bits on every output
 * (ca_bench_same_bits); W names the width class checked, 0 for all */
static void check_same_bits(const ca_path *a, const ca_path *b, ca_type t, int sl, int64_t W) {
    ca_where(a->name, ca_bench_slot_name(sl), W, "%s, widths 1 .. 4096", ca_type_names[t]);
    ca_check(ca_bench_same_bits(a, b, t, sl), "%s's %s %s: not the bits of path %s", a->name,
             ca_type_names[t], ca_bench_slot_name(sl), b->name);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    int bench = 0, checks = 1, rounds = 15, nd = 3, norm = 0;
    int64_t Ds[CA_BENCH_MAX_WIDTHS] = {64, 768, 4096};
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0) {
            bench = 1;
        } else if (strcmp(argv[i], "--bench-only") == 0) {
            bench = 1, checks = 0;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 3 &&
                   atoi(argv[i + 1]) <= CA_BENCH_MAX_ROUNDS) {
            rounds = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--widths") == 0 && i + 1 < argc) {
            nd = 0;
            for (char *p = argv[++i], *end; *p; p = *end ? end + 1 : end) {
                const long w = strtol(p, &end, 10);
                if (end == p || w < 1 || w > 4096 || (*end && *end != ',') ||
                    nd == CA_BENCH_MAX_WIDTHS) {
                    fprintf(stderr,
                            "checkasm: --widths takes up to %d widths 1..4096, comma-separated\n",
                            CA_BENCH_MAX_WIDTHS);
                    return 2;
                }
                Ds[nd++] = w;
            }
        } else if (strcmp(argv[i], "--slot") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--norm") == 0 && i + 1 < argc) {
            char *end;
            const long k = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end || k < 0 || k >= CA_NNORMS) {
                fprintf(stderr, "checkasm: --norm takes 0..%d (checkasm's norms)\n", CA_NNORMS - 1);
                return 2;
            }
            norm = (int)k;
        } else {
            fprintf(stderr,
                    "usage: %s [--bench | --bench-only] [--rounds 3..%d] [--widths W,W,...] "
                    "[--slot NAME] [--norm 0..%d]\n",
                    argv[0], CA_BENCH_MAX_ROUNDS, CA_NNORMS - 1);
            return 2;
        }
    }
    if (only) {
        int known = 0;
        for (int sl = 0; sl < ca_bench_nslots(); sl++)
            known |= !strcmp(only, ca_bench_slot_name(sl));
        if (!known) {
            fprintf(stderr, "checkasm: --slot %s: no such slot (see src/kernels/table.h)\n", only);
            return 2;
        }
    }
    init_widths();
    /* the paths, and the bf16 tables: each path's own (sn_kern16_scalar, sn_kern16_avx2,
     * sn_kern16_avx512),
     * and the AVX-512 one that rounds with AVX512-BF16 as a further entry with the same fp32
     * table (its fp32 slots are not checked twice) */
    ca_path paths[4];
    int np = 0, nfull = 0;
    paths[np++] = (ca_path){"scalar", &sn_kern_scalar, &sn_kern16_scalar};
#ifdef SN_HAVE_AVX2
    if (sn_cpu_has(SN_ISA_AVX2)) paths[np++] = (ca_path){"avx2", &sn_kern_avx2, &sn_kern16_avx2};
    else printf("checkasm: path avx2 not supported by this CPU: skipped\n");
#endif
#ifdef SN_HAVE_AVX512
    if (sn_cpu_has(SN_ISA_AVX512))
        paths[np++] = (ca_path){"avx512", &sn_kern_avx512, &sn_kern16_avx512};
    else printf("checkasm: path avx512 not supported by this CPU: skipped\n");
#endif
    nfull = np;
#ifdef SN_HAVE_AVX512BF16
    if (sn_cpu_has_avx512bf16())
        paths[np++] = (ca_path){"avx512bf16", &sn_kern_avx512, &sn_kern16_avx512bf16};
    else printf("checkasm: the AVX512-BF16 bf16 table: not supported by this CPU: skipped\n");
#endif
    /* each path, each element type, each family (the AVX512-BF16 entry: bf16 only) */
    for (int i = 0; i < np && checks; i++) {
        const long c0 = tu_checks;
        for (int t = i < nfull ? CA_F32 : CA_BF16; t < CA_NTYPES; t++) {
            check_norm(&paths[i], &paths[0], (ca_type)t);
            check_fuse(&paths[i], &paths[0], (ca_type)t);
            check_elem(&paths[i], &paths[0], (ca_type)t);
            check_hc(&paths[i], &paths[0], (ca_type)t);
        }
        printf("checkasm: %-10s %ld checks\n", paths[i].name, tu_checks - c0);
    }
    /* the SIMD paths' bits: every slot of every further SIMD table gives the first SIMD path's
     * bits on every output (one summation order, simd_rows.h), each element type */
    if (checks && nfull > 2) {
        const long c0 = tu_checks;
        for (int i = 2; i < np; i++)
            for (int t = i < nfull ? CA_F32 : CA_BF16; t < CA_NTYPES; t++)
                for (int sl = 0; sl < ca_bench_nslots(); sl++)
                    check_same_bits(&paths[i], &paths[1], (ca_type)t, sl, 0);
        printf("checkasm: simd bits  %ld checks (every slot of %d tables gives %s's bits)\n",
               tu_checks - c0, np - 2, paths[1].name);
    }
    /* auto's tables (the best path's, with slots from other paths per CPU family and width
     * class): every slot taken from another path gives the best path's bits. The check covers
     * every width, so a function already checked for one table is not checked again. */
    if (checks) {
        /* the check below reaches each class through its representative width: each must fall
         * in its own class, or that class's tables go unchecked */
        for (int c = 0; c < SN_K_WIDTH_CLASSES; c++)
            CHECK_MSG(sn_k_width_class(sn_k_width_class_rep[c]) == c,
                      "sn_k_width_class_rep[%d] = %lld is of class %d", c,
                      (long long)sn_k_width_class_rep[c],
                      sn_k_width_class(sn_k_width_class_rep[c]));
        const sn_isa best = sn_cpu_best();
        const ca_path base = {sn_isa_name(best), sn_kern_for(best, 0, 0, SN_K_CALL_OTHER),
                              sn_kern16_for(best, 0, 0, SN_K_CALL_OTHER)};
        const long c0 = tu_checks;
        int taken = 0, distinct = 0, ns = 0;
        enum { NTAB = SN_K_PLACES * SN_K_CALLS * SN_K_WIDTH_CLASSES };
        static ca_path seen[NTAB];
        for (unsigned s = 0; s < SN_K_PLACES; s++) /* every placement (kernels.h) */
            for (int k = 0; k < SN_K_CALLS; k++)
                for (int c = 0; c < SN_K_WIDTH_CLASSES; c++) {
                    const int64_t w = sn_k_width_class_rep[c]; /* a width of class c */
                    const ca_path au = {"auto", sn_kern_for(SN_ISA_AUTO, w, s, (sn_k_call)k),
                                        sn_kern16_for(SN_ISA_AUTO, w, s, (sn_k_call)k)};
                    check_pair_widths(&au, s, k, c);
                    for (int t = 0; t < CA_NTYPES; t++)
                        for (int sl = 0; sl < ca_bench_nslots(); sl++) {
                            if (ca_bench_same_fn(&au, &base, (ca_type)t, sl))
                                continue; /* its own */
                            taken++;
                            int again = 0;
                            for (int j = 0; j < ns && !again; j++)
                                again = ca_bench_same_fn(&au, &seen[j], (ca_type)t, sl);
                            if (again) continue;
                            check_same_bits(&au, &base, (ca_type)t, sl, w);
                            distinct++;
                        }
                    seen[ns++] = au;
                }
        printf("checkasm: auto       %ld checks (the %d slots of its %d fp32 and %d bf16 tables "
               "taken from another path on this CPU, %d distinct functions, give the bits of "
               "%s)\n",
               tu_checks - c0, taken, NTAB, NTAB, distinct, base.name);
    }
    if (bench) {
        /* the forced paths as the public calls run them (sn_kern_for, sn_kern16_for), then
         * auto, whose tables bench.c takes for each width */
        ca_path bp[4];
        int nb = 0;
        for (int isa = SN_ISA_SCALAR; isa <= SN_ISA_AVX512; isa++)
            if (sn_cpu_has((sn_isa)isa))
                bp[nb++] = (ca_path){sn_isa_name((sn_isa)isa),
                                     sn_kern_for((sn_isa)isa, 0, 0, SN_K_CALL_OTHER),
                                     sn_kern16_for((sn_isa)isa, 0, 0, SN_K_CALL_OTHER)};
        bp[nb++] = (ca_path){"auto", NULL, NULL}; /* per width: bench.c */
        ca_bench_all(bp, nb, rounds, Ds, nd, only, norm);
    }
    printf("checkasm: %d paths x %d widths: %ld checks, %d failures; worst error vs scalar %.2g "
           "(SN_K_TOL %.0e)\n",
           np, ca_nwidths, tu_checks, tu_failures, worst, SN_K_TOL);
    return tu_failures ? 1 : 0;
}
