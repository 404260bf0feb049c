/* sn-auto-calls: is SN_ISA_AUTO the fastest path for each public call, at the sizes a trainer
 * uses? checkasm --bench times kernel slots on rows that sit in L1; this times the public calls
 * themselves, whose rows come from L2, L3 or memory, in the layout a trainer gives them.
 *
 * Per case (a call, an element type, a size R x D) it creates one context per path (auto, a
 * second auto context for an A/A comparison, and every forced SIMD path the CPU has) and times
 * them in rounds: in each round every context makes the call `reps` times, in an order that
 * rotates from round to round, so that the ratios of one round share the machine's state. It
 * prints each path's fastest run (ns per element), the median per-round ratio of auto to the
 * fastest forced path of that round with a 95% distribution-free interval, and the A/A ratio
 * (auto's second context to its first), whose interval is the noise floor of the case. A case
 * is flagged when auto's interval lies wholly above 1 + that floor (at least 1%).
 *
 * Layout: each matrix starts on a 4 KiB boundary, as matrices of whole pages or the slices of
 * one arena do (the rows of different matrices then share their offsets modulo 4 KiB), or with
 * --stagger a pseudo-random multiple of 64 bytes further in; --offset B moves every matrix B bytes
 * further in (16: where glibc's malloc puts a large block, off every 32- and 64-byte boundary).
 * The parameter blocks and their gradients start on a 64-byte boundary, or --param-offset B
 * bytes past one (a trainer that takes every buffer from malloc: --offset 16 --param-offset 16).
 *
 * Usage: sn-auto-calls [--sizes RxD,...] [--rounds N] [--ops SUBSTR] [--dtype f32,bf16]
 *                      [--stagger] [--offset B] [--param-offset B]
 * Timings are not tests: nothing here is in the pass/fail suite (a smoke test runs tiny sizes). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h> /* isatty */

#include "args.h"
#include "numarg.h"
#include "siamesenorm.h"

enum { NMAT = 8, MAX_SIZES = 16, MAX_ROUNDS = 201, MAX_CTX = 4 };

typedef enum {
    LN_FWD,
    LN_BWD,
    RMS_FWD,
    RMS_BWD,
    FUSE_FWD,
    FUSE_BWD,
    MERGE_FWD,
    MERGE_BWD,
    APPLY_FWD,
    APPLY_BWD,
    SPLIT_FWD,
    SPLIT_BWD,
    NOPS
} op_id;
static const char *const op_names[NOPS] = {
    "layernorm fwd", "layernorm bwd", "rmsnorm fwd", "rmsnorm bwd", "fuse fwd",  "fuse bwd",
    "merge fwd",     "merge bwd",     "apply fwd",   "apply bwd",   "split fwd", "split bwd"};

/* one case's buffers: NMAT matrices of R x D elements (float or bf16), parameters, statistics
 * and parameter gradients */
typedef struct bufs {
    int64_t R, D;
    int bf;
    void *arena; /* the matrices' one allocation */
    void *m[NMAT];
    float *params, *stats, *dparams;
    size_t poff; /* bytes params and dparams lie past their allocations' starts */
    sn_norm ln, rms;
    sn_fuse f;
} bufs;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *xalloc(size_t align, size_t n) {
    void *p = aligned_alloc(align, (n + align - 1) / align * align);
    if (!p) {
        fprintf(stderr, "sn-auto-calls: out of memory\n");
        exit(1);
    }
    return p;
}

#define M(k)   ((float *)b->m[k])
#define M16(k) ((sn_bf16 *)b->m[k])

/* one call of op on context c (the matrices' roles: 0 x or z, 1 y or u, 2 y, 3 and 4 outputs,
 * 5 and 6 incoming gradients, 7 an output) */
static sn_status call(op_id op, const bufs *b, const sn_ctx *c) {
    const int64_t R = b->R, D = b->D;
    if (!b->bf) switch (op) {
        case LN_FWD: return sn_norm_forward(c, &b->ln, R, D, M(0), D, b->params, M(3), D, b->stats);
        case LN_BWD:
            return sn_norm_backward(c, &b->ln, R, D, M(5), D, M(0), D, b->params, b->stats, M(3), D,
                                    b->dparams, 0);
        case RMS_FWD:
            return sn_norm_forward(c, &b->rms, R, D, M(0), D, b->params, M(3), D, b->stats);
        case RMS_BWD:
            return sn_norm_backward(c, &b->rms, R, D, M(5), D, M(0), D, b->params, b->stats, M(3),
                                    D, b->dparams, 0);
        case FUSE_FWD:
            return sn_fuse_forward(c, &b->f, R, D, M(0), D, M(1), D, b->params, M(3), D, M(4), D,
                                   b->stats);
        case FUSE_BWD: /* a SiameseNorm sub-layer's call: du set, dx aliasing du, dy accumulated */
            return sn_fuse_backward(c, &b->f, R, D, M(5), D, M(6), D, M(0), D, M(1), D, b->params,
                                    b->stats, M(6), D, M(7), D, b->dparams, SN_ACCUMULATE_Y);
        case MERGE_FWD:
            return sn_merge_forward(c, &b->f, R, D, M(0), D, M(1), D, b->params, M(3), D, b->stats);
        case MERGE_BWD:
            return sn_merge_backward(c, &b->f, R, D, M(5), D, M(0), D, M(1), D, b->params, b->stats,
                                     M(3), D, M(4), D, b->dparams, 0);
        case APPLY_FWD:
            return sn_apply_forward(c, R, D, 1.5f, M(0), D, M(1), D, M(2), D, M(3), D, M(4), D);
        case APPLY_BWD: return sn_apply_backward(c, R, D, 1.5f, M(5), D, M(6), D, M(3), D, 0);
        case SPLIT_FWD: return sn_split_forward(c, R, D, M(0), D, M(3), D, M(4), D);
        case SPLIT_BWD: return sn_split_backward(c, R, D, M(5), D, M(6), D, M(3), D, 0);
        default: return SN_ERR_SHAPE;
        }
    switch (op) {
    case LN_FWD:
        return sn_norm_forward_bf16(c, &b->ln, R, D, M16(0), D, b->params, M16(3), D, b->stats);
    case LN_BWD:
        return sn_norm_backward_bf16(c, &b->ln, R, D, M16(5), D, M16(0), D, b->params, b->stats,
                                     M16(3), D, b->dparams, 0);
    case RMS_FWD:
        return sn_norm_forward_bf16(c, &b->rms, R, D, M16(0), D, b->params, M16(3), D, b->stats);
    case RMS_BWD:
        return sn_norm_backward_bf16(c, &b->rms, R, D, M16(5), D, M16(0), D, b->params, b->stats,
                                     M16(3), D, b->dparams, 0);
    case FUSE_FWD:
        return sn_fuse_forward_bf16(c, &b->f, R, D, M16(0), D, M16(1), D, b->params, M16(3), D,
                                    M16(4), D, b->stats);
    case FUSE_BWD:
        return sn_fuse_backward_bf16(c, &b->f, R, D, M16(5), D, M16(6), D, M16(0), D, M16(1), D,
                                     b->params, b->stats, M16(6), D, M16(7), D, b->dparams,
                                     SN_ACCUMULATE_Y);
    case MERGE_FWD:
        return sn_merge_forward_bf16(c, &b->f, R, D, M16(0), D, M16(1), D, b->params, M16(3), D,
                                     b->stats);
    case MERGE_BWD:
        return sn_merge_backward_bf16(c, &b->f, R, D, M16(5), D, M16(0), D, M16(1), D, b->params,
                                      b->stats, M16(3), D, M16(4), D, b->dparams, 0);
    case APPLY_FWD:
        return sn_apply_forward_bf16(c, R, D, 1.5f, M16(0), D, M16(1), D, M16(2), D, M16(3), D,
                                     M16(4), D);
    case APPLY_BWD:
        return sn_apply_backward_bf16(c, R, D, 1.5f, M16(5), D, M16(6), D, M16(3), D, 0);
    case SPLIT_FWD: return sn_split_forward_bf16(c, R, D, M16(0), D, M16(3), D, M16(4), D);
    case SPLIT_BWD: return sn_split_backward_bf16(c, R, D, M16(5), D, M16(6), D, M16(3), D, 0);
    default: return SN_ERR_SHAPE;
    }
}

/* the forward whose statistics a backward reads (none for the other calls) */
static op_id stats_of(op_id op) {
    switch (op) {
    case LN_BWD: return LN_FWD;
    case RMS_BWD: return RMS_FWD;
    case FUSE_BWD:
    case MERGE_BWD: return FUSE_FWD;
    default: return NOPS;
    }
}

static void bufs_init(bufs *b, int64_t R, int64_t D, int bf, int stagger, size_t offset,
                      size_t poff) {
    memset(b, 0, sizeof *b);
    b->R = R, b->D = D, b->bf = bf;
    const size_t es = bf ? sizeof(sn_bf16) : sizeof(float), bytes = (size_t)R * (size_t)D * es;
    const size_t span = (bytes + 8192 + 4095) / 4096 * 4096; /* + room to stagger and offset */
    unsigned char *arena = xalloc(4096, span * NMAT);
    b->arena = arena;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < NMAT; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        b->m[k] = arena + (size_t)k * span + (stagger ? (size_t)(s >> 40) % 64 * 64 : 0) + offset;
        for (size_t i = 0; i < (size_t)R * (size_t)D; i++) {
            const float v = 0.01f * (float)((i * 7 + (size_t)k) % 23) - 0.1f;
            if (bf) M16(k)[i] = sn_bf16_from_f32(v);
            else M(k)[i] = v;
        }
    }
    sn_fuse_init(&b->f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f);
    b->ln = (sn_norm){SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    b->rms = (sn_norm){SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0, 1e-5f};
    int64_t np = 0, spr = 0;
    sn_fuse_query(&b->f, D, &np, &spr); /* the fuse's blocks hold the norms' */
    b->poff = poff;
    b->params =
        (float *)(void *)((unsigned char *)xalloc(64, (size_t)np * sizeof(float) + poff) + poff);
    b->dparams =
        (float *)(void *)((unsigned char *)xalloc(64, (size_t)np * sizeof(float) + poff) + poff);
    b->stats = xalloc(64, (size_t)R * (size_t)spr * sizeof(float));
    sn_fuse_init_params(&b->f, D, b->params);
    memset(b->dparams, 0, (size_t)np * sizeof(float));
}

static void bufs_free(bufs *b) {
    free(b->arena);
    free((unsigned char *)b->params - b->poff), free((unsigned char *)b->dparams - b->poff);
    free(b->stats);
}

/* the 95% distribution-free interval of the median of n sorted values is [v[lo], v[n - 1 - lo]]:
 * the order statistic k (from 1) with k the largest such that P(Binomial(n, 1/2) <= k - 1) <=
 * 0.025 */
static int median_ci_lo(int n) {
    double p = 1.0, cum = 0.0; /* p: P(Binomial = j) */
    for (int i = 0; i < n; i++) p *= 0.5;
    int k = 0;
    for (int j = 0; j < n; j++) {
        cum += p;
        if (cum > 0.025) break;
        k = j + 1;
        p = p * (double)(n - j) / (double)(j + 1);
    }
    return k > 0 ? k - 1 : 0;
}

static int usage(void) {
    fprintf(stderr,
            "usage: sn-auto-calls [--sizes RxD,...] [--rounds 5..%d] [--ops SUBSTR] "
            "[--dtype f32,bf16] [--stagger] [--offset 0..4095] [--param-offset 0..4095]\n"
            "  (R, D >= 1, R * D <= 2^26, at most %d sizes; the offset even, a multiple of 4 "
            "with f32; the parameter offset a multiple of 4)\n",
            MAX_ROUNDS, MAX_SIZES);
    return 2;
}

int main(int argc, char **argv) {
    int64_t Rs[MAX_SIZES] = {16, 512, 4096, 4096}, Ds[MAX_SIZES] = {768, 768, 768, 64};
    int nsz = 4, rounds = 21, stagger = 0, types = 1; /* types: bit 0 f32, bit 1 bf16 */
    int offset = 0, poff = 0; /* bytes past each matrix's and parameter block's place */
    const char *only = NULL;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--sizes") && a + 1 < argc) {
            if (!bench_sizes(argv[++a], Rs, Ds, MAX_SIZES, &nsz)) return usage();
        } else if (!strcmp(argv[a], "--rounds") && a + 1 < argc) {
            if (na_int("--rounds", argv[++a], 5, MAX_ROUNDS, &rounds)) return usage();
        } else if (!strcmp(argv[a], "--ops") && a + 1 < argc) {
            only = argv[++a];
        } else if (!strcmp(argv[a], "--dtype") && a + 1 < argc) {
            types = bench_dtypes(argv[++a]);
            if (!types) return usage();
        } else if (!strcmp(argv[a], "--stagger")) {
            stagger = 1;
        } else if (!strcmp(argv[a], "--offset") && a + 1 < argc) {
            if (na_int("--offset", argv[++a], 0, 4095, &offset) || offset % 2) return usage();
        } else if (!strcmp(argv[a], "--param-offset") && a + 1 < argc) {
            if (na_int("--param-offset", argv[++a], 0, 4095, &poff) || poff % 4) return usage();
        } else return usage();
    }
    if ((types & 1) && offset % 4) return usage(); /* a float matrix starts on a float */
    /* auto, auto again (A/A), and the forced SIMD paths this CPU has */
    sn_isa isa[MAX_CTX] = {SN_ISA_AUTO, SN_ISA_AUTO};
    int nctx = 2;
    for (int i = SN_ISA_AVX2; i <= SN_ISA_AVX512; i++)
        if (sn_isa_available((sn_isa)i)) isa[nctx++] = (sn_isa)i;
    if (nctx == 2) {
        printf("sn-auto-calls: no SIMD path on this CPU or build: nothing to compare\n");
        return 0;
    }
    sn_ctx *ctx[MAX_CTX];
    for (int k = 0; k < nctx; k++)
        if (sn_ctx_create(&ctx[k]) || sn_ctx_set_isa(ctx[k], isa[k])) {
            fprintf(stderr, "sn-auto-calls: context setup failed\n");
            return 1;
        }
    int ncases = 0;
    for (int t = 0; t < 2; t++)
        for (int op = 0; op < NOPS; op++)
            ncases += (types >> t & 1) && (!only || strstr(op_names[op], only)) ? nsz : 0;
    printf("sn-auto-calls: ns per element, fastest run of each path; auto against the fastest "
           "forced path of each round and auto against itself (A/A): median per-round ratio "
           "[95%% interval], %d rounds, matrices %s, one thread\n",
           rounds, stagger ? "staggered by multiples of 64 bytes" : "on 4 KiB boundaries");
    if (offset) printf("sn-auto-calls: every matrix %d bytes past that\n", offset);
    if (poff) printf("sn-auto-calls: parameter blocks %d bytes past a 64-byte boundary\n", poff);
    const int lo = median_ci_lo(rounds), progress = isatty(2);
    const double t0 = now();
    int done = 0, flagged = 0, skipped = 0;
    for (int t = 0; t < 2; t++) {
        if (!(types >> t & 1)) continue;
        for (int si = 0; si < nsz; si++) {
            bufs b;
            bufs_init(&b, Rs[si], Ds[si], t, stagger, (size_t)offset, (size_t)poff);
            const int64_t reps = 2000000 / (Rs[si] * Ds[si]) + 1; /* a run: ~2M elements */
            for (int op = 0; op < NOPS; op++) {
                if (only && !strstr(op_names[op], only)) continue;
                if (stats_of((op_id)op) != NOPS) call(stats_of((op_id)op), &b, ctx[2]);
                /* bf16 norm, fuse and merge calls take rows of at most 4096 elements
                 * (SN_ERR_UNSUPPORTED beyond, the header says): such cases are skipped */
                const sn_status st = call((op_id)op, &b, ctx[2]);
                if (st == SN_ERR_UNSUPPORTED) {
                    printf("%-14s %-4s %5lldx%-5lld skipped: SN_ERR_UNSUPPORTED (bf16 rows of this "
                           "call: at most 4096 elements)\n",
                           op_names[op], t ? "bf16" : "f32", (long long)Rs[si], (long long)Ds[si]);
                    done++, skipped++;
                    continue;
                }
                if (st != SN_OK) {
                    fprintf(stderr, "sn-auto-calls: %s failed: %s\n", op_names[op],
                            sn_status_string(st));
                    return 1;
                }
                double tm[MAX_CTX][MAX_ROUNDS];
                for (int r = 0; r < rounds; r++)
                    for (int k0 = 0; k0 < nctx; k0++) {
                        const int k = (k0 + r) % nctx;
                        const double a = now();
                        for (int64_t i = 0; i < reps; i++)
                            if (call((op_id)op, &b, ctx[k]) != SN_OK) {
                                fprintf(stderr, "sn-auto-calls: %s failed\n", op_names[op]);
                                return 1;
                            }
                        tm[k][r] = now() - a;
                    }
                double ra[MAX_ROUNDS], aa[MAX_ROUNDS], best[MAX_CTX];
                for (int k = 0; k < nctx; k++) {
                    best[k] = tm[k][0];
                    for (int r = 1; r < rounds; r++)
                        if (tm[k][r] < best[k]) best[k] = tm[k][r];
                }
                for (int r = 0; r < rounds; r++) {
                    double f = tm[2][r];
                    for (int k = 3; k < nctx; k++)
                        if (tm[k][r] < f) f = tm[k][r];
                    ra[r] = tm[0][r] / f;
                    aa[r] = tm[1][r] / tm[0][r];
                }
                qsort(ra, (size_t)rounds, sizeof(double), cmp_double);
                qsort(aa, (size_t)rounds, sizeof(double), cmp_double);
                const int mid = rounds / 2, hi = rounds - 1 - lo;
                double floor = aa[hi] - 1.0 > 1.0 - aa[lo] ? aa[hi] - 1.0 : 1.0 - aa[lo];
                if (floor < 0.01) floor = 0.01;
                const int slow = ra[lo] > 1.0 + floor;
                flagged += slow;
                const double e = 1e9 / ((double)reps * (double)(Rs[si] * Ds[si]));
                printf("%-14s %-4s %5lldx%-5lld auto %.4f", op_names[op], t ? "bf16" : "f32",
                       (long long)Rs[si], (long long)Ds[si], best[0] * e);
                for (int k = 2; k < nctx; k++)
                    printf("  %s %.4f", sn_isa_name(isa[k]), best[k] * e);
                printf("  auto/best %.3f [%.3f, %.3f]  A/A %.3f [%.3f, %.3f]%s\n", ra[mid], ra[lo],
                       ra[hi], aa[mid], aa[lo], aa[hi], slow ? "  <- auto slower" : "");
                fflush(stdout);
                done++;
                const double el = now() - t0;
                if (progress)
                    fprintf(stderr, "\rsn-auto-calls: %d/%d cases, %.0f s, about %.0f s left   ",
                            done, ncases, el, el / done * (ncases - done));
            }
            bufs_free(&b);
        }
    }
    if (progress) fprintf(stderr, "\n");
    printf("sn-auto-calls: auto slower than a forced path beyond the A/A floor in %d of %d cases\n",
           flagged, done - skipped);
    if (skipped) printf("sn-auto-calls: %d cases skipped (unsupported sizes)\n", skipped);
    for (int k = 0; k < nctx; k++) sn_ctx_destroy(ctx[k]);
    return 0;
}
