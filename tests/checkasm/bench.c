/* checkasm --bench: every slot of both tables (fp32 and bf16 rows) on every path this CPU runs,
 * and on the tables `auto` resolves to, timed in one process with the paths interleaved. Its
 * fixture also serves checkasm.c's check of auto's tables (ca_bench_same_bits).
 *
 * Each case (a slot, a row type, a width D) is timed in rounds: in each round every path runs
 * a batch of calls (the best of two batches of about 100,000 elements), the paths in a rotated
 * order, on the rows of that round's layout (fix_init: the rows' placement changes from round
 * to round, so that a path's luck with one placement does not decide the case). Timing the
 * paths of a round back to back lets the per-round ratios cancel the drift of a shared machine (separate processes of one binary differ by 5-12% on the VMs of
 * docs/performance.md, more than the differences sought here). Reported per case: each path's
 * median ns per element, and `auto` against the fastest forced path: the median of the
 * per-round ratios with a 95% distribution-free interval (order statistics of the binomial).
 * Where auto's slot is that path's own function, the ratio is an A/A measurement: the largest
 * of those is the run's noise floor, printed at the end with the cases beyond it. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include "checkasm.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the slots --------------------------------------------------------------------------- */

typedef enum cb_slot {
    CB_NORM_ROW,
    CB_NORM_S,
    CB_NORM_FWD,
    CB_NORM_PG,
    CB_NORM_BWD,
    CB_NORM_BWD2,
    CB_STATS2,
    CB_FUSE_S,
    CB_FUSE_FWD2,
    CB_FUSE_RED,
    CB_FUSE_PG,
    CB_FUSE_DX,
    CB_FUSE_BWD,
    CB_FUSE_BWD2,
    CB_ADD_DIV,
    CB_APPLY,
    CB_AXPY,
    CB_HC_MIX,
    CB_HC_DOTS,
    CB_HC_PROJ,
    CB_HC_WMIX,
    CB_HC_WSUM,
    CB_COPY,
    CB_WIDEN,
    CB_ROUND,
    CB_FOLD,
    CB_NSLOTS
} cb_slot;

/* per slot: its name, how many rows of D elements a call covers, and where its pointer sits in
 * each table (to tell which path's function a table holds) */
typedef struct cb_info {
    const char *name;
    int rows;
    size_t off32, off16;
} cb_info;
#define CB_SLOT(field, rows)                                                                       \
    { #field, rows, offsetof(sn_kern, field), offsetof(sn_kern16, field) }
static const cb_info slots[CB_NSLOTS] = {
    [CB_NORM_ROW] = CB_SLOT(norm_row, 1),   [CB_NORM_S] = CB_SLOT(norm_s, 1),
    [CB_NORM_FWD] = CB_SLOT(norm_fwd, 1),   [CB_NORM_PG] = CB_SLOT(norm_pg, 1),
    [CB_NORM_BWD] = CB_SLOT(norm_bwd, 1),   [CB_NORM_BWD2] = CB_SLOT(norm_bwd2, 2),
    [CB_STATS2] = CB_SLOT(stats2, 2),       [CB_FUSE_S] = CB_SLOT(fuse_s, 1),
    [CB_FUSE_FWD2] = CB_SLOT(fuse_fwd2, 2), [CB_FUSE_RED] = CB_SLOT(fuse_red, 1),
    [CB_FUSE_PG] = CB_SLOT(fuse_pg, 1),     [CB_FUSE_DX] = CB_SLOT(fuse_dx, 1),
    [CB_FUSE_BWD] = CB_SLOT(fuse_bwd, 1),   [CB_FUSE_BWD2] = CB_SLOT(fuse_bwd2, 2),
    [CB_ADD_DIV] = CB_SLOT(add_div, 1),     [CB_APPLY] = CB_SLOT(apply, 1),
    [CB_AXPY] = CB_SLOT(axpy, 1),           [CB_HC_MIX] = CB_SLOT(hc_mix, 4),
    [CB_HC_DOTS] = CB_SLOT(hc_dots, 4),     [CB_HC_PROJ] = CB_SLOT(hc_proj, 1),
    [CB_HC_WMIX] = CB_SLOT(hc_wmix, 1),     [CB_HC_WSUM] = CB_SLOT(hc_wsum, 1),
    [CB_COPY] = CB_SLOT(copy, 1),           [CB_WIDEN] = CB_SLOT(widen, 1),
    [CB_ROUND] = CB_SLOT(round, 1),         [CB_FOLD] = CB_SLOT(fold, 3),
};

/* the kind of public call whose auto table bench_case times slot s in: the norm slots (norm_s
 * aside, a fuse slot) in the calls on norm ca_norm(norm), the fuse slots in the sub-layer's */
static sn_k_call slot_call(int s, int norm) {
    if (s == CB_NORM_S || (s >= CB_FUSE_S && s <= CB_FUSE_BWD2)) return SN_K_CALL_SUBLAYER;
    if (s > CB_STATS2) return SN_K_CALL_OTHER;
    const int32_t kind = ca_norm(norm).kind;
    return kind == SN_NORM_LAYERNORM ? SN_K_CALL_LAYERNORM
           : kind == SN_NORM_RMSNORM ? SN_K_CALL_RMSNORM
                                     : SN_K_CALL_OTHER;
}

/* ---- the fixture: one LayerNorm, a fuse of three, rows of both types ----------------------- */

/* the parameter rows of the dynamic Hyper-Connections slots: n + 2 at the rate n = 4 of the
 * trainer's examples */
#define CB_NW 6

struct cb_rows32 {
    const float *x[2], *y[2], *dh[2], *du[2];
    float *o[4];
};
struct cb_rows16 {
    const sn_bf16 *x[2], *y[2], *dh[2], *du[2];
    sn_bf16 *o[4];
};
typedef struct cb_fix {
    int64_t D;
    sn_norm n;
    sn_fuse f;
    sn_rnorm q0, q[2];
    sn_rfuse F0, F[2], Fr; /* Fr: fuse_red's output */
    sn_dfuse dp;
    float *dg, *db, *s, *s2, *dots, *dw[CB_NW], st[2][6];
    float *fs, *fd; /* fold: three slots of D floats, D apart, and the sum they go onto */
    float m[4];     /* the statistics a call writes */
    const float *hw, *wr[CB_NW];
    struct cb_rows32 r32;
    struct cb_rows16 r16;
} cb_fix;

/* Layouts: with layout 0 every row starts on its own allocation's first 64-byte boundary; any
 * other layout puts each row a pseudo-random multiple of 64 bytes (0 .. 63 of them) further
 * in, so that the rows' distances modulo 4 KiB (which decide L1 set conflicts and 4K aliasing
 * between loads and stores) change from layout to layout, and starts the fixture 0 .. 63 pages
 * further into the heap (without it, the process's heap history decided some readings:
 * docs/performance.md). The values stay the same. */
static uint64_t lay;
static int lay_off(int64_t elems_per_64b) {
    if (!lay) return 0;
    lay ^= lay << 13, lay ^= lay >> 7, lay ^= lay << 17;
    return (int)((lay >> 32) % 64 * (uint64_t)elems_per_64b);
}
static float *row32(int64_t D) { return ca_row(D, lay_off(16)); }
static float *rand32(int64_t D, float scale, float shift) {
    return ca_row_rand(D, lay_off(16), scale, shift);
}

/* a bf16 row of values spread over 2^-8 .. 2^8 (sums of narrower bf16 values are exact in
 * fp32, whatever their order, and would hide a reduction's order) */
static const sn_bf16 *b16_spread(int64_t D) {
    sn_bf16 *p = ca_row16(D, lay_off(32));
    for (int64_t j = 0; j < D; j++)
        p[j] = sn_k_bf16_round(ldexpf(ca_rand(), (int)(8.0f * ca_rand())));
    return p;
}

/* the fixture on D columns with norm ca_norm(norm) (its fuse: three of it), in a layout */
static void fix_init(cb_fix *e, int64_t D, int norm, uint64_t layout) {
    memset(e, 0, sizeof *e);
    ca_seed(3);
    lay = layout ? layout * 0x9e3779b97f4a7c15ull : 0;
    if (lay) ca_row(lay_off(1024), 0); /* 0 .. 63 pages ahead of the rows (heap placement) */
    e->D = D;
    e->n = ca_norm(norm);
    e->f.x = e->f.y = e->f.out = e->n;
    const float *prm = rand32(2 * D, 0.5f, 1.0f);
    e->q0 = sn_k_resolve(&e->n, D, prm, 0.0f, 1.0f);
    e->q[0] = sn_k_resolve(&e->n, D, prm, 0.1f, 1.2f);
    e->q[1] = sn_k_resolve(&e->n, D, prm, -0.1f, 0.9f);
    e->F0.X = e->F0.Y = e->F0.O = e->q0;
    e->F[0].X = e->F[0].Y = e->F[0].O = e->q[0];
    e->F[1].X = e->F[1].Y = e->F[1].O = e->q[1];
    /* six rows of their own (a parameter block's rows D apart would put all six at one
     * offset modulo 4 KiB when D is a multiple of 1024, which no driver gives fuse_pg) */
    e->dp = (sn_dfuse){row32(D), row32(D), row32(D), row32(D), row32(D), row32(D)};
    e->dg = row32(D), e->db = row32(D);
    e->s = rand32(D, 1.0f, 0.0f), e->s2 = row32(D);
    e->fs = rand32(3 * D, 0.5f, 0.0f), e->fd = rand32(D, 1.0f, 0.0f);
    e->dots = ca_row(16, 0);
    e->hw = ca_row_rand(16, 0, 0.5f, 0.0f); /* hc_mix's 4 x 4, or CB_NW coefficients */
    for (int c = 0; c < CB_NW; c++) e->wr[c] = rand32(D, 0.1f, 0.0f), e->dw[c] = row32(D);
    for (int k = 0; k < 2; k++) {
        e->r16.x[k] = b16_spread(D), e->r16.y[k] = b16_spread(D);
        e->r16.dh[k] = b16_spread(D), e->r16.du[k] = b16_spread(D);
        /* fp32 rows of full precision (bf16 values would make every fp32 sum exact) */
        e->r32.x[k] = rand32(D, 1.0f, 0.3f), e->r32.y[k] = rand32(D, 1.5f, 0.0f);
        e->r32.dh[k] = rand32(D, 1.0f, 0.0f), e->r32.du[k] = rand32(D, 0.5f, 0.0f);
    }
    for (int k = 0; k < 4; k++) e->r32.o[k] = row32(D), e->r16.o[k] = ca_row16(D, lay_off(32));
}

/* one call of a slot, per table type (bench_slots.h) */
#define BK      sn_kern
#define BT      float
#define BROWS   r32
#define BROWS_T cb_rows32
#define BCALL   call32
#include "bench_slots.h"
#undef BK
#undef BT
#undef BROWS
#undef BROWS_T
#undef BCALL
#define BK      sn_kern16
#define BT      sn_bf16
#define BROWS   r16
#define BROWS_T cb_rows16
#define BCALL   call16
#include "bench_slots.h"
#undef BK
#undef BT
#undef BROWS
#undef BROWS_T
#undef BCALL

/* ---- bitwise agreement of two tables ------------------------------------------------------ */

/* every buffer a call may write, compared byte for byte */
static int fix_same(const cb_fix *a, const cb_fix *b) {
    const int64_t D = a->D;
    const size_t f = sizeof(float), h = sizeof(sn_bf16);
    const float *ga[6] = {a->dp.gx, a->dp.bx, a->dp.gy, a->dp.by, a->dp.go, a->dp.bo};
    const float *gb[6] = {b->dp.gx, b->dp.bx, b->dp.gy, b->dp.by, b->dp.go, b->dp.bo};
    int same = 1;
    for (int k = 0; k < 6; k++) same = same && !memcmp(ga[k], gb[k], (size_t)D * f);
    same = same && !memcmp(a->dg, b->dg, (size_t)D * f) && !memcmp(a->db, b->db, (size_t)D * f) &&
           !memcmp(a->s2, b->s2, (size_t)D * f) && !memcmp(a->dots, b->dots, 16 * f) &&
           !memcmp(a->fd, b->fd, (size_t)D * f) && !memcmp(a->st, b->st, sizeof a->st) &&
           !memcmp(a->m, b->m, sizeof a->m) && !memcmp(&a->Fr.oa, &b->Fr.oa, 6 * sizeof(float));
    for (int k = 0; k < CB_NW; k++) same = same && !memcmp(a->dw[k], b->dw[k], (size_t)D * f);
    for (int k = 0; k < 4; k++)
        same = same && !memcmp(a->r32.o[k], b->r32.o[k], (size_t)D * f) &&
               !memcmp(a->r16.o[k], b->r16.o[k], (size_t)D * h);
    return same;
}

/* 1 if slot s of type t gives the same bits on tables a and b, on rows of widths 1 .. 4096
 * (tails of every length, both alignments of the pair slots) for three norms (LayerNorm with
 * gamma and beta, RMSNorm with gamma, LayerNorm without parameters) */
int ca_bench_same_bits(const ca_path *a, const ca_path *b, ca_type t, int s) {
    /* rows ending in each of the four groups of 8 of a 32-column block (the four accumulator
     * sets), whole or partial, with and without whole blocks before them */
    static const int64_t Ds[] = {1,  3,  8,  15, 16,  17,  20,  24,  27,  31,   33,   47,
                                 52, 59, 64, 65, 100, 127, 128, 129, 768, 1000, 1024, 4096};
    static const int norms[3] = {0, 4, 2};
    int same = 1;
    for (size_t di = 0; di < sizeof Ds / sizeof Ds[0] && same; di++)
        for (int k = 0; k < 3 && same; k++) {
            if (s == CB_FUSE_FWD2 && Ds[di] > SN_K_STACK_ROW_MAX) continue;
            cb_fix ea, eb;
            fix_init(&ea, Ds[di], norms[k], 0);
            fix_init(&eb, Ds[di], norms[k], 0);
            if (t == CA_F32) {
                call32(s, a->K, &ea);
                call32(s, b->K, &eb);
            } else {
                call16(s, a->K16, &ea);
                call16(s, b->K16, &eb);
            }
            same = fix_same(&ea, &eb);
            ca_rows_reset();
        }
    return same;
}

int ca_bench_nslots(void) { return CB_NSLOTS; }
const char *ca_bench_slot_name(int s) { return slots[s].name; }

/* ---- timing -------------------------------------------------------------------------------- */

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ns per element of reps calls */
static double batch(const ca_path *p, ca_type t, int slot, cb_fix *e, int64_t n, int reps) {
    const double t0 = now_ns();
    if (t == CA_F32)
        for (int i = 0; i < reps; i++) call32(slot, p->K, e);
    else
        for (int i = 0; i < reps; i++) call16(slot, p->K16, e);
    return (now_ns() - t0) / reps / (double)n;
}

/* the function pointer of slot s in path p's table of type t, as bytes (to compare) */
static const void *slot_ptr(const ca_path *p, ca_type t, int s) {
    return t == CA_F32 ? (const void *)((const char *)p->K + slots[s].off32)
                       : (const void *)((const char *)p->K16 + slots[s].off16);
}

int ca_bench_same_fn(const ca_path *a, const ca_path *b, ca_type t, int s) {
    return !memcmp(slot_ptr(a, t, s), slot_ptr(b, t, s), sizeof(void (*)(void)));
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* sorts v[0..n) and returns its median */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* the 0-based ranks [*lo, *hi] of sorted samples of n that hold the median with at least 95%
 * (the binomial(n, 1/2) tails of at most 2.5% each) */
static void median_ci(int n, int *lo, int *hi) {
    double cdf = 0.0, pk = pow(0.5, n); /* P(K = 0) */
    int k = 0;
    while (k < n && cdf + pk <= 0.025) {
        cdf += pk;
        pk = pk * (double)(n - k) / (double)(k + 1);
        k++;
    }
    *lo = k > 0 ? k - 1 : 0;
    *hi = n - 1 - *lo;
}

#define CB_MAX_PATHS 6

typedef struct cb_result {
    int slot, t;
    int64_t D;
    double med, lo, hi; /* auto / the best forced path: median ratio and its 95% interval */
    int same;           /* auto's slot is the best forced path's own function (an A/A) */
} cb_result;

static cb_result results[CB_NSLOTS * CA_NTYPES * CA_BENCH_MAX_WIDTHS];
static int nresults;

/* times one case on paths[0 .. np) (the forced paths, then auto last), each round in a layout
 * of its own (fix_init), and prints its line */
static void bench_case(const ca_path *all, int np, ca_type t, int slot, int64_t D, int rounds,
                       int norm) {
    static double tm[CB_MAX_PATHS][CA_BENCH_MAX_ROUNDS];
    ca_path paths[CB_MAX_PATHS];
    memcpy(paths, all, (size_t)np * sizeof *paths);
    /* auto: its tables for rows of D in calls without streaming stores (rows in L1), of the
     * kind of call that runs the slot (the norm slots: LayerNorm's with --norm layernorm, else
     * RMSNorm's; the fuse slots: the sub-layer's) */
    paths[np - 1].K = sn_kern_for(SN_ISA_AUTO, D, 0, slot_call(slot, norm));
    paths[np - 1].K16 = sn_kern16_for(SN_ISA_AUTO, D, 0, slot_call(slot, norm));
    const int64_t n = slots[slot].rows * D;
    const int reps = (int)(100000 / n) + 2;
    for (int r = 0; r < rounds; r++) {
        cb_fix e;
        fix_init(&e, D, norm, (uint64_t)r + 1);
        for (int i = 0; i < np; i++) batch(&paths[i], t, slot, &e, n, 1 + reps / 8); /* warm */
        for (int k = 0; k < np; k++) {
            const int i = (k + r) % np;
            const double a = batch(&paths[i], t, slot, &e, n, reps);
            const double b = batch(&paths[i], t, slot, &e, n, reps);
            tm[i][r] = a < b ? a : b;
        }
        ca_rows_reset();
    }
    double med[CB_MAX_PATHS], v[CA_BENCH_MAX_ROUNDS];
    int best = 0; /* the fastest forced path */
    for (int i = 0; i < np; i++) {
        memcpy(v, tm[i], (size_t)rounds * sizeof *v);
        med[i] = median(v, rounds);
        if (i < np - 1 && med[i] < med[best]) best = i;
    }
    const int au = np - 1;
    for (int r = 0; r < rounds; r++) v[r] = tm[au][r] / tm[best][r];
    cb_result *res = &results[nresults++];
    int lo, hi;
    median_ci(rounds, &lo, &hi);
    res->slot = slot, res->t = t, res->D = D;
    res->med = median(v, rounds), res->lo = v[lo], res->hi = v[hi];
    res->same = ca_bench_same_fn(&paths[au], &paths[best], t, slot);
    /* which forced path auto's slot is */
    const char *is = "?";
    for (int i = 0; i < np - 1; i++)
        if (ca_bench_same_fn(&paths[au], &paths[i], t, slot)) is = paths[i].name;
    printf("  %-9s %-4s n=%-5lld", slots[slot].name, ca_type_names[t], (long long)n);
    for (int i = 0; i < np - 1; i++) printf("  %s %7.3f", paths[i].name, med[i]);
    printf("  auto=%-6s auto/%s %.3f [%.3f, %.3f]%s\n", is, paths[best].name, res->med, res->lo,
           res->hi, res->same ? " (A/A)" : "");
}

void ca_bench_all(const ca_path *paths, int np, int rounds, const int64_t *Ds, int nd,
                  const char *only, int norm) {
    if (rounds > CA_BENCH_MAX_ROUNDS) rounds = CA_BENCH_MAX_ROUNDS;
    if (np > CB_MAX_PATHS) np = CB_MAX_PATHS;
    const sn_norm n = ca_norm(norm);
    printf("checkasm --bench: ns per element, median of %d rounds, paths interleaved; auto "
           "against the fastest forced path: the median per-round ratio [95%% interval]; norm "
           "kind %d, affine %d\n",
           rounds, (int)n.kind, (int)n.affine);
    if (nd > CA_BENCH_MAX_WIDTHS) nd = CA_BENCH_MAX_WIDTHS;
    for (int di = 0; di < nd; di++)
        for (int t = 0; t < CA_NTYPES; t++)
            for (int s = 0; s < CB_NSLOTS; s++) {
                if (s == CB_FUSE_FWD2 && Ds[di] > SN_K_STACK_ROW_MAX) continue;
                if (only && strcmp(only, slots[s].name)) continue;
                bench_case(paths, np, (ca_type)t, s, Ds[di], rounds, norm);
            }
    /* the noise floor: the A/A cases' largest distance from 1 */
    double floor = 0.0;
    int naa = 0;
    for (int i = 0; i < nresults; i++)
        if (results[i].same) {
            naa++;
            if (fabs(results[i].med - 1.0) > floor) floor = fabs(results[i].med - 1.0);
        }
    printf("checkasm --bench: %d cases, %d of them A/A (auto runs the fastest path's own "
           "function): their medians within %.3f of 1 (the noise floor of this run)\n",
           nresults, naa, floor);
    int beyond = 0;
    for (int i = 0; i < nresults; i++) {
        const cb_result *r = &results[i];
        if (r->same || !(r->med > 1.0 + floor && r->lo > 1.0)) continue;
        beyond++;
        printf("  auto slower beyond the noise: %s %s D=%lld: %.3f [%.3f, %.3f]\n",
               slots[r->slot].name, ca_type_names[r->t], (long long)r->D, r->med, r->lo, r->hi);
    }
    printf("checkasm --bench: auto slower than a forced path beyond the noise in %d of %d "
           "cases\n",
           beyond, nresults);
}
