/* sn-bench: times every public primitive of libsiamesenorm, forward and backward, at a
 * cache-resident and a beyond-cache size, against the memory-bandwidth roofline measured in the
 * same run (STREAM-like copy and triad) and against the peers compiled in: a scalar C baseline
 * built with -Ofast -march=native (always) and oneDNN's layer normalization (when found).
 *
 *   sn-bench [--json] [--reps N] [--quick] [--sizes RxD,RxD] [--threads 1,2] [--isa NAME]
 *            [--ops SUBSTRING] [--dtype f32,bf16] [--no-scratch] [--sample-ms MS]
 *
 * A malformed argument (an unknown path or element type, a count out of range, a list with an
 * empty item) prints the usage and exits with status 2. --quick runs tiny sizes (8 x 64 and
 * 33 x 17, unless --sizes names others) with 3 samples each.
 *
 * Every figure is the median of --reps samples (default 11) of at least --sample-ms each
 * (default 0.5); "noise" is the spread of the middle half of the samples, (q3 - q1) / median;
 * best-ms the fastest sample. The library's and its peers' samples are taken in turn
 * (interleaved, the order alternating), so their ratios hold up on a loaded machine. "GB/s"
 * counts the minimum bytes an operation must move (each R x D operand read or written once;
 * parameters and statistics ignored); "%roof" is that rate over the better of the copy and
 * triad bandwidths. Peer columns are peer time / library time (> 1: the library is faster).
 * floor:lib/sc (the norms, one thread) is the time of the norm's minimum traffic moved by plain
 * loops over the same buffers (a copy for a forward, an add for a backward) over the library's
 * time / over the scalar peer's: how close each is to moving bytes and nothing else (1.00).
 * x1thr(best) is the one-thread time over this one: ratio of medians / ratio of best samples.
 * The context gets caller scratch sized by sn_scratch_bytes (as a trainer would set it up)
 * unless --no-scratch. */
#define _POSIX_C_SOURCE 200809L
#include "siamesenorm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "numarg.h"
#include "baseline.h"
#ifdef SN_BENCH_DNNL
#include "dnnl_peer.h"
#endif

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct timing {
    double ms, noise, best;
} timing;

/* --reps (the samples arrays hold MAX_REPS), --sizes and --threads limits */
enum { MAX_REPS = 101, MAX_SIZES = 16, MAX_THREAD_COUNTS = 8 };
static int g_reps = 11;
/* Samples last at least this long (--sample-ms). Short samples are less often cut by the
 * scheduler on a shared machine, so their median is closer to the undisturbed time. */
static double g_sample_ms = 0.5;

/* median time of one call of fn(arg), over g_reps samples of k calls (k: >= ~g_sample_ms) */
static timing measure(void (*fn)(void *), void *arg) {
    fn(arg); /* warm up */
    double t0 = now_ms();
    fn(arg);
    double one = now_ms() - t0;
    int k = one > g_sample_ms ? 1 : (int)(g_sample_ms / (one > 1e-4 ? one : 1e-4)) + 1;
    if (k > 100000) k = 100000;
    double s[MAX_REPS];
    const int n = g_reps;
    for (int i = 0; i < n; i++) {
        t0 = now_ms();
        for (int j = 0; j < k; j++) fn(arg);
        s[i] = (now_ms() - t0) / k;
    }
    qsort(s, (size_t)n, sizeof s[0], cmp_d);
    timing t = {s[n / 2], n >= 4 ? (s[(3 * n) / 4] - s[n / 4]) / s[n / 2] : 0.0, s[0]};
    return t;
}

/* Times up to 4 functions with their samples interleaved (a sample of each in turn), so that
 * a machine whose load changes during the run slows them alike: their ratio is then far more
 * stable than that of separate runs. Each sample is k calls (k per function, >= ~g_sample_ms). */
static void measure_n(void (*const fn[])(void *), int nf, void *arg, timing *out) {
    int k[4];
    for (int f = 0; f < nf; f++) {
        fn[f](arg); /* warm up */
        double t0 = now_ms();
        fn[f](arg);
        double one = now_ms() - t0;
        k[f] = one > g_sample_ms ? 1 : (int)(g_sample_ms / (one > 1e-4 ? one : 1e-4)) + 1;
        if (k[f] > 100000) k[f] = 100000;
    }
    static double s[4][MAX_REPS];
    const int n = g_reps;
    for (int i = 0; i < n; i++)
        for (int q = 0; q < nf; q++) {
            const int f = i & 1 ? nf - 1 - q : q; /* the order alternates: none always first */
            double t0 = now_ms();
            for (int j = 0; j < k[f]; j++) fn[f](arg);
            s[f][i] = (now_ms() - t0) / k[f];
        }
    for (int f = 0; f < nf; f++) {
        qsort(s[f], (size_t)n, sizeof s[f][0], cmp_d);
        timing t = {s[f][n / 2], n >= 4 ? (s[f][(3 * n) / 4] - s[f][n / 4]) / s[f][n / 2] : 0.0,
                    s[f][0]};
        out[f] = t;
    }
}

static float *fbuf(int64_t n, float lo, float hi, unsigned *seed) {
    float *p = aligned_alloc(64, (size_t)((n + 15) / 16 * 16) * sizeof(float));
    if (!p) {
        fprintf(stderr, "sn-bench: out of memory\n");
        exit(2);
    }
    for (int64_t i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        p[i] = lo + (hi - lo) * (float)((*seed >> 8) & 0xffff) / 65536.0f;
    }
    return p;
}

/* ---- the benchmark state: one set of buffers per size ------------------------------------- */

typedef struct bench {
    int64_t R, D, n;
    sn_ctx *ctx;
    sn_norm ln, rms;
    sn_fuse fuse;
    float c;
    /* R x D tensors */
    float *x, *y, *u, *h, *z, *xo, *yo, *dh, *du, *dx, *dy, *dz, *s, *t;
    float *nparams, *ndparams, *fparams, *fdparams, *stats, *mean, *rstd, *var;
    /* the same R x D tensors in bf16, for the _bf16 calls */
    sn_bf16 *xb, *yb, *ub, *hb, *zb, *xob, *yob, *dhb, *dub, *dxb, *dyb, *dzb;
    /* Hyper-Connections, n = 4: a one-sub-layer net, static [0] and dynamic [1], its pass */
    sn_net hc[2];
    sn_net_pass hcp[2];
#ifdef SN_BENCH_DNNL
    void *dnnl, *dnnl16;
#endif
} bench;

static void must(sn_status st, const char *what) {
    if (st != SN_OK) {
        fprintf(stderr, "sn-bench: %s: %s\n", what, sn_status_string(st));
        exit(2);
    }
}

/* library ops */
static void op_ln_fwd(void *a) {
    bench *b = a;
    sn_norm_forward(b->ctx, &b->ln, b->R, b->D, b->x, b->D, b->nparams, b->h, b->D, b->stats);
}
static void op_ln_bwd(void *a) {
    bench *b = a;
    sn_norm_backward(b->ctx, &b->ln, b->R, b->D, b->dh, b->D, b->x, b->D, b->nparams, b->stats,
                     b->dx, b->D, b->ndparams, 0);
}
static void op_ln_fb(void *a) {
    op_ln_fwd(a);
    op_ln_bwd(a);
}
static void op_rms_fwd(void *a) {
    bench *b = a;
    sn_norm_forward(b->ctx, &b->rms, b->R, b->D, b->x, b->D, b->nparams, b->h, b->D, b->stats);
}
static void op_rms_bwd(void *a) {
    bench *b = a;
    sn_norm_backward(b->ctx, &b->rms, b->R, b->D, b->dh, b->D, b->x, b->D, b->nparams, b->stats,
                     b->dx, b->D, b->ndparams, 0);
}
static void op_rms_fb(void *a) {
    op_rms_fwd(a);
    op_rms_bwd(a);
}
static void op_fuse_fwd(void *a) {
    bench *b = a;
    sn_fuse_forward(b->ctx, &b->fuse, b->R, b->D, b->x, b->D, b->y, b->D, b->fparams, b->u, b->D,
                    b->h, b->D, b->stats);
}
/* as in a SiameseNorm sub-layer: du = dx_{i+1}, dy accumulates dy_{i+1} */
static void op_fuse_bwd(void *a) {
    bench *b = a;
    sn_fuse_backward(b->ctx, &b->fuse, b->R, b->D, b->dh, b->D, b->du, b->D, b->x, b->D, b->y, b->D,
                     b->fparams, b->stats, b->dx, b->D, b->dy, b->D, b->fdparams, SN_ACCUMULATE_Y);
}
static void op_merge_fwd(void *a) {
    bench *b = a;
    sn_merge_forward(b->ctx, &b->fuse, b->R, b->D, b->x, b->D, b->y, b->D, b->fparams, b->h, b->D,
                     b->stats);
}
static void op_merge_bwd(void *a) {
    bench *b = a;
    sn_merge_backward(b->ctx, &b->fuse, b->R, b->D, b->dh, b->D, b->x, b->D, b->y, b->D, b->fparams,
                      b->stats, b->dx, b->D, b->dy, b->D, b->fdparams, 0);
}
static void op_apply_fwd(void *a) {
    bench *b = a;
    sn_apply_forward(b->ctx, b->R, b->D, b->c, b->z, b->D, b->u, b->D, b->y, b->D, b->xo, b->D,
                     b->yo, b->D);
}
static void op_apply_bwd(void *a) {
    bench *b = a;
    sn_apply_backward(b->ctx, b->R, b->D, b->c, b->du, b->D, b->dy, b->D, b->dz, b->D, 0);
}
static void op_split_fwd(void *a) {
    bench *b = a;
    sn_split_forward(b->ctx, b->R, b->D, b->x, b->D, b->xo, b->D, b->yo, b->D);
}
static void op_split_bwd(void *a) {
    bench *b = a;
    sn_split_backward(b->ctx, b->R, b->D, b->du, b->D, b->dy, b->D, b->dz, b->D, 0);
}
/* fuse fwd + apply fwd + apply bwd + fuse bwd */
static void op_sublayer(void *a) {
    op_fuse_fwd(a);
    op_apply_fwd(a);
    op_apply_bwd(a);
    op_fuse_bwd(a);
}

/* Hyper-Connections' sub-layer at n = 4 through the placement layer: enter, exit and their
 * backwards (the stream mixing and its backward: the hc_mix and hc_dots kernels; dynamic HC
 * also its projections). At the minimum it moves 34 R x D operands: enter reads the 4 streams
 * and writes h (5), exit reads them and z and writes 4 streams and the saved z (10), the exit
 * backward reads the 4 stream gradients and z and writes dz (6), the enter backward reads dh,
 * the 4 streams and the 4 stream gradients and writes 4 (13). */
static void op_hc(bench *b, int dyn) {
    const sn_net *n = &b->hc[dyn];
    const sn_net_pass *p = &b->hcp[dyn];
    sn_net_enter(b->ctx, n, p, 0, b->h, b->D);
    sn_net_exit(b->ctx, n, p, 0, b->z, b->D);
    sn_net_exit_backward(b->ctx, n, p, 0, b->dz, b->D, 0);
    sn_net_enter_backward(b->ctx, n, p, 0, b->dh, b->D);
}
static void op_hc_static(void *a) { op_hc(a, 0); }
static void op_hc_dynamic(void *a) { op_hc(a, 1); }

/* the library's bf16 calls, on the same shapes */
static void op16_ln_fwd(void *a) {
    bench *b = a;
    sn_norm_forward_bf16(b->ctx, &b->ln, b->R, b->D, b->xb, b->D, b->nparams, b->hb, b->D,
                         b->stats);
}
static void op16_ln_bwd(void *a) {
    bench *b = a;
    sn_norm_backward_bf16(b->ctx, &b->ln, b->R, b->D, b->dhb, b->D, b->xb, b->D, b->nparams,
                          b->stats, b->dxb, b->D, b->ndparams, 0);
}
static void op16_ln_fb(void *a) {
    op16_ln_fwd(a);
    op16_ln_bwd(a);
}
static void op16_rms_fwd(void *a) {
    bench *b = a;
    sn_norm_forward_bf16(b->ctx, &b->rms, b->R, b->D, b->xb, b->D, b->nparams, b->hb, b->D,
                         b->stats);
}
static void op16_rms_bwd(void *a) {
    bench *b = a;
    sn_norm_backward_bf16(b->ctx, &b->rms, b->R, b->D, b->dhb, b->D, b->xb, b->D, b->nparams,
                          b->stats, b->dxb, b->D, b->ndparams, 0);
}
static void op16_rms_fb(void *a) {
    op16_rms_fwd(a);
    op16_rms_bwd(a);
}
static void op16_fuse_fwd(void *a) {
    bench *b = a;
    sn_fuse_forward_bf16(b->ctx, &b->fuse, b->R, b->D, b->xb, b->D, b->yb, b->D, b->fparams, b->ub,
                         b->D, b->hb, b->D, b->stats);
}
static void op16_fuse_bwd(void *a) {
    bench *b = a;
    sn_fuse_backward_bf16(b->ctx, &b->fuse, b->R, b->D, b->dhb, b->D, b->dub, b->D, b->xb, b->D,
                          b->yb, b->D, b->fparams, b->stats, b->dxb, b->D, b->dyb, b->D,
                          b->fdparams, SN_ACCUMULATE_Y);
}
static void op16_merge_fwd(void *a) {
    bench *b = a;
    sn_merge_forward_bf16(b->ctx, &b->fuse, b->R, b->D, b->xb, b->D, b->yb, b->D, b->fparams, b->hb,
                          b->D, b->stats);
}
static void op16_merge_bwd(void *a) {
    bench *b = a;
    sn_merge_backward_bf16(b->ctx, &b->fuse, b->R, b->D, b->dhb, b->D, b->xb, b->D, b->yb, b->D,
                           b->fparams, b->stats, b->dxb, b->D, b->dyb, b->D, b->fdparams, 0);
}
static void op16_apply_fwd(void *a) {
    bench *b = a;
    sn_apply_forward_bf16(b->ctx, b->R, b->D, b->c, b->zb, b->D, b->ub, b->D, b->yb, b->D, b->xob,
                          b->D, b->yob, b->D);
}
static void op16_apply_bwd(void *a) {
    bench *b = a;
    sn_apply_backward_bf16(b->ctx, b->R, b->D, b->c, b->dub, b->D, b->dyb, b->D, b->dzb, b->D, 0);
}
static void op16_split_fwd(void *a) {
    bench *b = a;
    sn_split_forward_bf16(b->ctx, b->R, b->D, b->xb, b->D, b->xob, b->D, b->yob, b->D);
}
static void op16_split_bwd(void *a) {
    bench *b = a;
    sn_split_backward_bf16(b->ctx, b->R, b->D, b->dub, b->D, b->dyb, b->D, b->dzb, b->D, 0);
}
static void op16_sublayer(void *a) {
    op16_fuse_fwd(a);
    op16_apply_fwd(a);
    op16_apply_bwd(a);
    op16_fuse_bwd(a);
}

/* scalar -Ofast baseline */
static void base_ln_fb(void *a) {
    bench *b = a;
    base_ln_fwd(b->h, b->mean, b->rstd, b->x, b->nparams, b->nparams + b->D, b->R, b->D);
    base_ln_bwd(b->dx, b->ndparams, b->ndparams + b->D, b->dh, b->x, b->nparams, b->mean, b->rstd,
                b->R, b->D);
}
static void base_ln_f(void *a) {
    bench *b = a;
    base_ln_fwd(b->h, b->mean, b->rstd, b->x, b->nparams, b->nparams + b->D, b->R, b->D);
}
static void base_ln_b(void *a) {
    bench *b = a;
    base_ln_bwd(b->dx, b->ndparams, b->ndparams + b->D, b->dh, b->x, b->nparams, b->mean, b->rstd,
                b->R, b->D);
}
static void base_rms_f(void *a) {
    bench *b = a;
    base_rms_fwd(b->h, b->rstd, b->x, b->nparams, b->R, b->D);
}
static void base_rms_b(void *a) {
    bench *b = a;
    base_rms_bwd(b->dx, b->ndparams, b->dh, b->x, b->nparams, b->rstd, b->R, b->D);
}
static void base_rms_fb(void *a) {
    base_rms_f(a);
    base_rms_b(a);
}
/* the sub-layer unfused, from the baseline's LayerNorm and elementwise loops (s, t scratch) */
static void base_sublayer(void *a) {
    bench *b = a;
    const int64_t R = b->R, D = b->D, n = b->n;
    float *P = b->fparams, *G = b->fdparams, *st = b->mean; /* 6 stat vectors of R */
    base_ln_fwd(b->u, st, st + R, b->x, P, P + D, R, D);    /* u = N_post(x) */
    base_ln_fwd(b->t, st + 2 * R, st + 3 * R, b->y, P + 2 * D, P + 3 * D, R, D);
    base_add(b->s, b->u, b->t, n); /* s = u + N_pre(y) */
    base_ln_fwd(b->h, st + 4 * R, st + 5 * R, b->s, P + 4 * D, P + 5 * D, R, D);
    base_add_scaled(b->xo, b->u, b->z, b->c, n); /* apply */
    base_add(b->yo, b->y, b->z, n);
    base_add_scaled(b->dz, b->dy, b->du, b->c, n); /* dz = dxo / c + dyo */
    base_ln_bwd(b->t, G + 4 * D, G + 5 * D, b->dh, b->s, P + 4 * D, st + 4 * R, st + 5 * R, R, D);
    base_add(b->s, b->du, b->t, n); /* du + ds */
    base_ln_bwd(b->dx, G, G + D, b->s, b->x, P, st, st + R, R, D);
    base_ln_bwd(b->s, G + 2 * D, G + 3 * D, b->t, b->y, P + 2 * D, st + 2 * R, st + 3 * R, R, D);
    base_add(b->dy, b->dy, b->s, n);
}
/* Traffic floors: the norms' minimum traffic moved by plain -Ofast loops over the same buffers
 * (a forward reads x and writes out: a copy; a backward reads dout and x and writes dx: an
 * add). No norm implementation can beat its floor by more than noise. */
static void floor_f(void *a) {
    bench *b = a;
    stream_copy(b->h, b->x, b->n);
}
static void floor_b(void *a) {
    bench *b = a;
    base_add(b->dx, b->dh, b->x, b->n);
}
static void floor_fb(void *a) {
    floor_f(a);
    floor_b(a);
}
#ifdef SN_BENCH_DNNL
static void dnnl_ln_fb(void *a) {
    bench *b = a;
    dnnl_peer_fwd(b->dnnl);
    dnnl_peer_bwd(b->dnnl);
}
static void dnnl_ln_f(void *a) { dnnl_peer_fwd(((bench *)a)->dnnl); }
static void dnnl_ln_b(void *a) { dnnl_peer_bwd(((bench *)a)->dnnl); }
static void dnnl16_ln_fb(void *a) {
    dnnl_peer_fwd(((bench *)a)->dnnl16);
    dnnl_peer_bwd(((bench *)a)->dnnl16);
}
static void dnnl16_ln_f(void *a) { dnnl_peer_fwd(((bench *)a)->dnnl16); }
static void dnnl16_ln_b(void *a) { dnnl_peer_bwd(((bench *)a)->dnnl16); }
#endif

typedef struct opdef {
    const char *name;
    void (*fn)(void *);
    int tensors;           /* R x D operands moved, at the minimum */
    int esize;             /* bytes per element of those operands: 4, or 2 for the bf16 calls */
    void (*base)(void *);  /* scalar -Ofast peer or NULL */
    int dnnl;              /* 0 none, 1 fwd, 2 bwd, 3 fwd+bwd */
    void (*floor)(void *); /* the same minimum traffic as plain loops, or NULL */
} opdef;

static const opdef OPS[] = {
    {"layernorm fwd", op_ln_fwd, 2, 4, base_ln_f, 1, floor_f},
    {"layernorm bwd", op_ln_bwd, 3, 4, base_ln_b, 2, floor_b},
    {"layernorm fwd+bwd", op_ln_fb, 5, 4, base_ln_fb, 3, floor_fb},
    {"rmsnorm fwd", op_rms_fwd, 2, 4, base_rms_f, 0, floor_f},
    {"rmsnorm bwd", op_rms_bwd, 3, 4, base_rms_b, 0, floor_b},
    {"rmsnorm fwd+bwd", op_rms_fb, 5, 4, base_rms_fb, 0, floor_fb},
    {"fuse fwd", op_fuse_fwd, 4, 4, NULL, 0, NULL},
    {"fuse bwd", op_fuse_bwd, 7, 4, NULL, 0, NULL},
    {"merge fwd", op_merge_fwd, 3, 4, NULL, 0, NULL},
    {"merge bwd", op_merge_bwd, 5, 4, NULL, 0, NULL},
    {"apply fwd", op_apply_fwd, 5, 4, NULL, 0, NULL},
    {"apply bwd", op_apply_bwd, 3, 4, NULL, 0, NULL},
    {"split fwd", op_split_fwd, 3, 4, NULL, 0, NULL},
    {"split bwd", op_split_bwd, 3, 4, NULL, 0, NULL},
    {"siamese sub-layer", op_sublayer, 19, 4, base_sublayer, 0, NULL},
    {"hc4 static sub-layer", op_hc_static, 34, 4, NULL, 0, NULL},
    {"hc4 dynamic sub-layer", op_hc_dynamic, 34, 4, NULL, 0, NULL},
    /* bf16: the same ops, named with a " bf16" suffix (vs-f32: the fp32 op of the same run) */
    {"layernorm fwd bf16", op16_ln_fwd, 2, 2, NULL, 1, NULL},
    {"layernorm bwd bf16", op16_ln_bwd, 3, 2, NULL, 2, NULL},
    {"layernorm fwd+bwd bf16", op16_ln_fb, 5, 2, NULL, 3, NULL},
    {"rmsnorm fwd bf16", op16_rms_fwd, 2, 2, NULL, 0, NULL},
    {"rmsnorm bwd bf16", op16_rms_bwd, 3, 2, NULL, 0, NULL},
    {"rmsnorm fwd+bwd bf16", op16_rms_fb, 5, 2, NULL, 0, NULL},
    {"fuse fwd bf16", op16_fuse_fwd, 4, 2, NULL, 0, NULL},
    {"fuse bwd bf16", op16_fuse_bwd, 7, 2, NULL, 0, NULL},
    {"merge fwd bf16", op16_merge_fwd, 3, 2, NULL, 0, NULL},
    {"merge bwd bf16", op16_merge_bwd, 5, 2, NULL, 0, NULL},
    {"apply fwd bf16", op16_apply_fwd, 5, 2, NULL, 0, NULL},
    {"apply bwd bf16", op16_apply_bwd, 3, 2, NULL, 0, NULL},
    {"split fwd bf16", op16_split_fwd, 3, 2, NULL, 0, NULL},
    {"split bwd bf16", op16_split_bwd, 3, 2, NULL, 0, NULL},
    {"siamese sub-layer bf16", op16_sublayer, 19, 2, NULL, 0, NULL},
};

/* the fp32 op a bf16 op is the twin of (its name without " bf16"), or -1 */
static int f32_twin(size_t o) {
    const size_t n = strlen(OPS[o].name);
    if (OPS[o].esize != 2 || n < 5) return -1;
    for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++)
        if (OPS[k].esize == 4 && strlen(OPS[k].name) == n - 5 &&
            !strncmp(OPS[k].name, OPS[o].name, n - 5))
            return (int)k;
    return -1;
}

static void bench_init(bench *b, int64_t R, int64_t D) {
    unsigned seed = 12345u;
    memset(b, 0, sizeof *b);
    b->R = R;
    b->D = D;
    b->n = R * D;
    b->c = 2.0f;
    must(sn_ctx_create(&b->ctx), "sn_ctx_create");
    b->ln = (sn_norm){SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    b->rms = (sn_norm){SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0, 1e-5f};
    must(sn_fuse_init(&b->fuse, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f), "fuse_init");
    float **t[] = {&b->x,  &b->y,  &b->u,  &b->h,  &b->z,  &b->xo, &b->yo,
                   &b->dh, &b->du, &b->dx, &b->dy, &b->dz, &b->s,  &b->t};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) *t[i] = fbuf(b->n, -1.0f, 1.0f, &seed);
    sn_bf16 **tb[] = {&b->xb,  &b->yb,  &b->ub,  &b->hb,  &b->zb,  &b->xob,
                      &b->yob, &b->dhb, &b->dub, &b->dxb, &b->dyb, &b->dzb};
    for (size_t i = 0; i < sizeof tb / sizeof tb[0]; i++) {
        *tb[i] = malloc((size_t)b->n * sizeof(sn_bf16));
        if (!*tb[i]) must(SN_ERR_NOMEM, "bf16 buffers");
        must(sn_to_bf16(NULL, R, D, *t[i], D, *tb[i], D), "sn_to_bf16");
    }
    b->nparams = fbuf(2 * D, 0.5f, 1.5f, &seed);
    b->ndparams = fbuf(2 * D, 0.0f, 0.0f, &seed);
    b->fparams = fbuf(6 * D, 0.5f, 1.5f, &seed);
    b->fdparams = fbuf(6 * D, 0.0f, 0.0f, &seed);
    b->stats = fbuf(6 * R, 0.0f, 0.0f, &seed);
    b->mean = fbuf(6 * R, 0.0f, 0.0f, &seed);
    b->rstd = fbuf(R, 0.0f, 0.0f, &seed);
    b->var = fbuf(R, 0.0f, 0.0f, &seed);
#ifdef SN_BENCH_DNNL
    b->dnnl = dnnl_peer_create(0, R, D, b->x, b->h, b->mean, b->var, b->nparams, b->nparams + D,
                               b->dh, b->dx, b->ndparams, b->ndparams + D);
    b->dnnl16 = dnnl_peer_create(1, R, D, b->xb, b->hb, b->mean, b->var, b->nparams, b->nparams + D,
                                 b->dhb, b->dxb, b->ndparams, b->ndparams + D);
    if (!b->dnnl16) fprintf(stderr, "sn-bench: oneDNN refuses bf16 layer normalisation here\n");
#endif
    op_fuse_fwd(b); /* valid statistics for the backward passes (the bf16 ones use the same) */
    for (int dyn = 0; dyn < 2; dyn++) {
        sn_net *n = &b->hc[dyn];
        int64_t np, apr, wpr;
        must(sn_net_init(n, SN_PLACEMENT_HYPER_CONN, 1, D, SN_NORM_LAYERNORM, 1e-5f), "HC net");
        n->hc_dynamic = (uint32_t)dyn;
        must(sn_net_sizes(n, &np, &apr, &wpr), "HC sizes");
        float *params = fbuf(np, 0.0f, 0.0f, &seed), *grads = fbuf(np, 0.0f, 0.0f, &seed);
        float *acts = fbuf(R * apr, 0.0f, 0.0f, &seed), *work = fbuf(R * wpr, 0.0f, 0.0f, &seed);
        must(sn_net_init_params(n, params), "HC init");
        b->hcp[dyn] = (sn_net_pass){R, params, acts, grads, work};
        must(sn_net_split(b->ctx, n, &b->hcp[dyn], b->x, D), "HC split");
    }
}

static void bench_free(bench *b) {
    float *t[] = {b->x,     b->y,    b->u,       b->h,        b->z,       b->xo,
                  b->yo,    b->dh,   b->du,      b->dx,       b->dy,      b->dz,
                  b->s,     b->t,    b->nparams, b->ndparams, b->fparams, b->fdparams,
                  b->stats, b->mean, b->rstd,    b->var};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) free(t[i]);
    sn_bf16 *tb[] = {b->xb,  b->yb,  b->ub,  b->hb,  b->zb,  b->xob,
                     b->yob, b->dhb, b->dub, b->dxb, b->dyb, b->dzb};
    for (size_t i = 0; i < sizeof tb / sizeof tb[0]; i++) free(tb[i]);
    for (int dyn = 0; dyn < 2; dyn++) {
        free((void *)b->hcp[dyn].params), free(b->hcp[dyn].grads);
        free(b->hcp[dyn].acts), free(b->hcp[dyn].work);
    }
#ifdef SN_BENCH_DNNL
    if (b->dnnl) dnnl_peer_destroy(b->dnnl);
    if (b->dnnl16) dnnl_peer_destroy(b->dnnl16);
#endif
    sn_ctx_destroy(b->ctx);
}

/* ---- roofline ------------------------------------------------------------------------------ */

typedef struct sarg {
    float *a, *b, *c;
    int64_t n;
} sarg;
static void s_copy(void *p) {
    sarg *s = p;
    stream_copy(s->a, s->b, s->n);
}
static void s_triad(void *p) {
    sarg *s = p;
    stream_triad(s->a, s->b, s->c, 3.0f, s->n);
}

static int usage(void) {
    fprintf(stderr,
            "usage: sn-bench [--json] [--reps 1..%d] [--quick] [--sizes RxD,...] [--threads 1,2] "
            "[--isa auto|scalar|avx2|avx512] [--ops SUBSTR] [--dtype f32,bf16] [--no-scratch] "
            "[--sample-ms 0.01..1000]\n"
            "  (at most %d sizes, R and D >= 1, R * D <= 2^26; at most %d thread counts, each "
            "1 .. %d)\n",
            MAX_REPS, MAX_SIZES, MAX_THREAD_COUNTS, SN_MAX_THREADS);
    return 2;
}

/* "T,T,...": at most MAX_THREAD_COUNTS counts, each 1 .. SN_MAX_THREADS; 0 on anything else */
static int parse_threads(const char *s, int *T, int *n) {
    *n = 0;
    while (*s) {
        char *e;
        if (*s < '0' || *s > '9') return 0;
        const long t = strtol(s, &e, 10);
        if ((*e && *e != ',') || t < 1 || t > SN_MAX_THREADS || *n == MAX_THREAD_COUNTS) return 0;
        T[(*n)++] = (int)t;
        s = *e ? e + 1 : e;
        if (*e && !*s) return 0;
    }
    return *n > 0;
}

int main(int argc, char **argv) {
    int json = 0, quick = 0, no_scratch = 0, nsz = 0, nth = 0, types = 3, sizes_given = 0;
    int64_t Rs[MAX_SIZES], Ds[MAX_SIZES];
    int Ts[MAX_THREAD_COUNTS];
    const char *only = NULL;
    sn_isa want = SN_ISA_AUTO;
    bench_sizes("512x768,4096x768", Rs, Ds, MAX_SIZES, &nsz);
    parse_threads("1,2", Ts, &nth);
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int *flag = !strcmp(o, "--json")         ? &json
                    : !strcmp(o, "--quick")      ? &quick
                    : !strcmp(o, "--no-scratch") ? &no_scratch
                                                 : NULL;
        if (flag) { /* the options without a value */
            *flag = 1;
            continue;
        }
        if (i + 1 == argc) return usage(); /* every other option takes a value */
        const char *v = argv[++i];
        if (!strcmp(o, "--sample-ms")) {
            if (na_double(o, v, 0.01, 1000, 0, &g_sample_ms)) return usage();
        } else if (!strcmp(o, "--reps")) {
            if (na_int(o, v, 1, MAX_REPS, &g_reps)) return usage();
        } else if (!strcmp(o, "--sizes")) {
            if (!bench_sizes(v, Rs, Ds, MAX_SIZES, &nsz)) return usage();
            sizes_given = 1;
        } else if (!strcmp(o, "--threads")) {
            if (!parse_threads(v, Ts, &nth)) return usage();
        } else if (!strcmp(o, "--isa")) {
            const sn_isa all[] = {SN_ISA_AUTO, SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512};
            int k = 0;
            while (k < 4 && strcmp(v, sn_isa_name(all[k]))) k++;
            if (k == 4) return usage();
            want = all[k];
        } else if (!strcmp(o, "--ops")) only = v;
        else if (!strcmp(o, "--dtype")) {
            types = bench_dtypes(v);
            if (!types) return usage();
        } else return usage();
    }
#ifdef SN_BENCH_DNNL
    /* oneDNN runs on OpenMP, which reads OMP_NUM_THREADS when it loads: pin it to 1 thread
     * (the one-thread comparison) by re-executing once with the variable set. */
    if (!getenv("OMP_NUM_THREADS")) {
        setenv("OMP_NUM_THREADS", "1", 1);
        execv("/proc/self/exe", argv);
    }
#endif
    if (quick) {
        if (!sizes_given) bench_sizes("8x64,33x17", Rs, Ds, MAX_SIZES, &nsz);
        g_reps = 3;
    }

    /* roofline: STREAM-like copy and triad over 3 x 16 M floats (far beyond the caches) */
    double bw;
    {
        unsigned seed = 7u;
        const int64_t n = quick ? 1 << 16 : 1 << 24;
        sarg s = {fbuf(n, 0, 1, &seed), fbuf(n, 0, 1, &seed), fbuf(n, 0, 1, &seed), n};
        timing tc = measure(s_copy, &s), tt = measure(s_triad, &s);
        double gc = 8.0 * n / tc.ms * 1e-6, gt = 12.0 * n / tt.ms * 1e-6;
        bw = gc > gt ? gc : gt;
        if (json)
            printf("{\"stream\": {\"copy_gbs\": %.2f, \"triad_gbs\": %.2f}, \"results\": [\n", gc,
                   gt);
        else
            printf("# roofline: STREAM-like copy %.1f GB/s, triad %.1f GB/s (noise %.0f%%, "
                   "%.0f%%); using %.1f GB/s\n",
                   gc, gt, 100 * tc.noise, 100 * tt.noise, bw);
        free(s.a);
        free(s.b);
        free(s.c);
    }
    if (!json)
        printf("# %-22s %5s %5s %3s %-6s %9s %9s %7s %6s %6s %9s %9s %11s %11s %7s\n", "op", "R",
               "D", "thr", "isa", "ms", "best-ms", "GB/s", "%roof", "noise", "vs-scalar",
               "vs-oneDNN", "floor:lib/sc", "x1thr(best)", "vs-f32");
    int first = 1;
    for (int si = 0; si < nsz; si++) {
        const long long R = Rs[si], D = Ds[si];
        bench b;
        bench_init(&b, R, D);
        if (want != SN_ISA_AUTO) must(sn_ctx_set_isa(b.ctx, want), "sn_ctx_set_isa");
        const size_t nops = sizeof OPS / sizeof OPS[0];
        void *scratch = NULL;
        timing t1[sizeof OPS / sizeof OPS[0]], tT[sizeof OPS / sizeof OPS[0]];
        memset(t1, 0, sizeof t1);
        for (int ti = 0; ti < nth; ti++) {
            const int T = Ts[ti];
            memset(tT, 0, sizeof tT);
            must(sn_ctx_set_threads(b.ctx, T), "sn_ctx_set_threads");
            /* scratch sized by the query, as a trainer would (--no-scratch: the stack only) */
            free(scratch);
            scratch = NULL;
            if (!no_scratch) {
                const size_t sb = sn_scratch_bytes(b.ctx, D);
                scratch = malloc(sb);
                if (!scratch) must(SN_ERR_NOMEM, "scratch");
                must(sn_ctx_set_scratch(b.ctx, scratch, sb), "sn_ctx_set_scratch");
            }
            for (size_t o = 0; o < nops; o++) {
                const opdef *op = &OPS[o];
                if (only && !strstr(op->name, only)) continue;
                if (!(types >> (op->esize == 2) & 1)) continue;
                /* the library and its peers (one thread), samples interleaved. Threaded runs
                 * are not interleaved with one-thread ones: the workers would fall asleep in
                 * between and every sample would time their wake-up. */
                void (*fns[4])(void *) = {op->fn, NULL, NULL, NULL};
                int nf = 1, ib = -1, id = -1, il = -1;
                if (op->base && T == 1) ib = nf, fns[nf++] = op->base;
                if (op->floor && T == 1) il = nf, fns[nf++] = op->floor;
#ifdef SN_BENCH_DNNL
                if (op->dnnl && op->esize == 4 && b.dnnl && T == 1)
                    id = nf, fns[nf++] = op->dnnl == 1   ? dnnl_ln_f
                                         : op->dnnl == 2 ? dnnl_ln_b
                                                         : dnnl_ln_fb;
                if (op->dnnl && op->esize == 2 && b.dnnl16 && T == 1)
                    id = nf, fns[nf++] = op->dnnl == 1   ? dnnl16_ln_f
                                         : op->dnnl == 2 ? dnnl16_ln_b
                                                         : dnnl16_ln_fb;
#endif
                timing tm[4];
                measure_n(fns, nf, &b, tm);
                const timing t = tm[0];
                const double bytes = (double)op->tensors * (double)b.n * op->esize;
                const double gbs = bytes / t.ms * 1e-6;
                const double base = ib > 0 ? tm[ib].ms : 0.0, dn = id > 0 ? tm[id].ms : 0.0;
                const double fl = il > 0 ? tm[il].ms : 0.0;
                if (T == 1) t1[o] = t;
                tT[o] = t;
                const int tw = f32_twin(o);
                const double v32 = tw >= 0 && tT[tw].ms > 0 ? tT[tw].ms / t.ms : 0.0;
                const double sp = T > 1 && t1[o].ms > 0 ? t1[o].ms / t.ms : 0.0;
                const double spb = T > 1 && t1[o].best > 0 ? t1[o].best / t.best : 0.0;
                const char *in = sn_isa_name(sn_ctx_isa(b.ctx));
                if (json) {
                    printf("%s  {\"op\": \"%s\", \"R\": %lld, \"D\": %lld, \"threads\": %d, "
                           "\"isa\": \"%s\", \"ms\": %.5f, \"noise\": %.4f, \"gbs\": %.3f, "
                           "\"roofline\": %.4f, \"scalar_ms\": %.5f, \"onednn_ms\": %.5f, "
                           "\"speedup_vs_1thread\": %.3f, \"speedup_vs_1thread_best\": %.3f, "
                           "\"best_ms\": %.5f, \"floor_ms\": %.5f, \"speedup_vs_f32\": %.3f}",
                           first ? "" : ",\n", op->name, R, D, T, in, t.ms, t.noise, gbs, gbs / bw,
                           base, dn, sp, spb, t.best, fl, v32);
                    first = 0;
                } else {
                    char vb[16] = "-", vd[16] = "-", vs[32] = "-", vf[24] = "-", v3[16] = "-";
                    if (v32 > 0) snprintf(v3, sizeof v3, "%.2fx", v32);
                    if (base > 0) snprintf(vb, sizeof vb, "%.2fx", base / t.ms);
                    if (fl > 0 && base > 0)
                        snprintf(vf, sizeof vf, "%.2f/%.2f", fl / t.ms, fl / base);
                    if (dn > 0) snprintf(vd, sizeof vd, "%.2fx", dn / t.ms);
                    if (sp > 0) snprintf(vs, sizeof vs, "%.2fx/%.2fx", sp, spb);
                    printf("  %-22s %5lld %5lld %3d %-6s %9.4f %9.4f %7.1f %5.0f%% %5.1f%% %9s "
                           "%9s %11s %11s %7s\n",
                           op->name, R, D, T, in, t.ms, t.best, gbs, 100 * gbs / bw, 100 * t.noise,
                           vb, vd, vf, vs, v3);
                }
                fflush(stdout);
            }
        }
        bench_free(&b);
        free(scratch);
        scratch = NULL;
    }
    if (json) printf("\n]}\n");
    return 0;
}
