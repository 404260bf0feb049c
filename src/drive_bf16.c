/* Drivers for bf16 matrices (see drive.h).
 *
 * On a SIMD path each row goes through the path's bf16 kernels (sn_kern16), which widen what
 * they load and round what they store inside their one pass over the row. Where a path has no
 * bf16 kernel for a case (the scalar path; fuses that fuse_fwd2 does not take, rows wider than
 * it takes and an odd last row in a fuse forward; the wide fuse backward), a task instead widens
 * the bf16 rows a kernel reads into fp32 rows on its own stack, calls the fp32 kernel exactly as
 * the fp32 driver does, and rounds the rows it wrote into their bf16 destinations. Either way a
 * row's fp32 arithmetic is the fp32 driver's, whatever the split into tasks (the pair kernels
 * are bitwise their one-row kernels, and streaming stores never change a value), so each bf16
 * output is the rounding of the fp32 output. Parameter gradients go through the fp32 drivers'
 * scheme (sn_d_pg_rows), so they are the fp32 driver's bits.
 *
 * Stack: a task stages at most six rows of SN_D16_ROW_MAX floats (96 KiB); a backward pass with
 * parameter gradients also keeps a 64 KiB slot buffer on the calling thread. */
#include <string.h>

#include "check.h"
#include "ctx.h"
#include "drive.h"

#define EW_BLOCK    1024  /* columns per block of the elementwise drivers */
#define SLOT_FLOATS 16384 /* the stack buffer of the parameter-gradient slots (64 KiB) */
#define QUANTUM     16    /* slots and column blocks in multiples of a cache line */

/* A bf16 call: its table, rows, task split and operands. Inputs a..d and outputs o, p are the
 * driver's matrices in the order its comment gives; ld* in elements. */
typedef struct job16 {
    const sn_kern *K;
    const sn_kern16 *K16; /* the path's bf16 kernels (NULL: stage rows in fp32) */
    int nt;        /* the bf16 kernels may write their outputs with streaming stores (set_mem) */
    int pf;        /* the fuse drivers prefetch rows ahead (set_mem; SN_D_PF_MIN_BYTES) */
    int pf_spread; /* fuse forward: the pair kernel spreads them (SN_D_FUSE_PF_SPREAD_MIN_BYTES) */
    int64_t R, D, pieces;
    const sn_bf16 *in[4];
    int64_t ldi[4];
    sn_bf16 *out[2];
    int64_t ldo[2];
    float c;             /* apply, add_div: the divisor; axpy: alpha */
    int acc, accx, accy; /* accumulate into out[0] (acc, accx) and out[1] (accy) */
    const sn_norm *n;    /* norms */
    int64_t W, ng, spr;  /* segment width, segments per row, stats per row */
    sn_rnorm q0;         /* the norm resolved without statistics */
    const sn_fuse *f;    /* fuses */
    sn_fuse_layout L;    /* ... their parameter and statistics layout */
    sn_rfuse F0;         /* ... the three norms resolved without statistics */
    const float *stats;  /* backward: saved statistics */
    float *stats_out;    /* forward: statistics written (NULL: none) */
    const float *src32;  /* to_bf16 */
    float *dst32;        /* from_bf16 */
    void (*rows)(const struct job16 *J, int64_t lo, int64_t hi, float *slot);
    float *dparams; /* backward passes: the parameter gradients (fuse_bwd_wide) */
} job16;

static job16 job16_of(const sn_ctx *ctx, int64_t R, int64_t D) {
    job16 J;
    memset(&J, 0, sizeof J);
    J.K = sn_ctx_kern(ctx);
    J.K16 = sn_kern16_for(sn_ctx_isa(ctx));
    J.R = R;
    J.D = D;
    J.pieces = sn_d_row_pieces(ctx, R, D);
    return J;
}

/* streaming stores and prefetch for the bf16 kernels of a call over nmat bf16 matrices, as the
 * fp32 drivers decide them from the bytes the call spans (SN_D_NT_MIN_BYTES or nt_min,
 * SN_D_PF_MIN_BYTES); no streaming stores for the fp32 kernels on staged rows */
static void set_mem(job16 *J, int nmat, double nt_min) {
    const double bytes = (double)J->R * (double)J->D * nmat * sizeof(sn_bf16);
    J->nt = bytes > nt_min;
    J->pf = bytes > SN_D_PF_MIN_BYTES;
    J->pf_spread = bytes > SN_D_FUSE_PF_SPREAD_MIN_BYTES;
}

/* n elements widened or rounded: with the path's bf16 table where it has one, else element by
 * element (the same bits either way) */
static void widen_row(const job16 *J, const sn_bf16 *s, int64_t n, float *d) {
    if (J->K16) J->K16->widen(s, n, d);
    else sn_k_bf16_widen_row(s, n, d);
}
static void round_row(const job16 *J, const float *s, int64_t n, sn_bf16 *d) {
    if (J->K16) J->K16->round(s, n, d);
    else sn_k_bf16_round_row(s, n, d);
}

static const sn_bf16 *irow(const job16 *J, int k, int64_t r) { return J->in[k] + r * J->ldi[k]; }
static sn_bf16 *orow(const job16 *J, int k, int64_t r) { return J->out[k] + r * J->ldo[k]; }

/* runs J->rows over the rows of task i (slot NULL: no parameter gradients) */
static void rows_task(void *arg, int64_t i) {
    const job16 *J = arg;
    const int64_t lo = J->R * i / J->pieces, hi = J->R * (i + 1) / J->pieces;
    J->rows(J, lo, hi, NULL);
}

static void run(const sn_ctx *ctx, job16 *J) { sn_ctx_par(ctx, J->pieces, rows_task, J); }

/* ---- parameter gradients: sn_d_pg_rows, the fp32 drivers' scheme ---------------------------- */

static void pg_rows(void *arg, int64_t lo, int64_t hi, float *slot) {
    const job16 *J = arg;
    J->rows(J, lo, hi, slot);
}

/* J's rows with parameter gradients into dparams (npg floats); 0 when no slot fits */
static int pg_run16(const sn_ctx *ctx, job16 *J, float *dparams, int64_t npg) {
    J->dparams = dparams;
    return sn_d_pg_rows(ctx, J->R, J->D, npg, dparams, pg_rows, J);
}

/* ---- norms: in[0] x (forward) or dout, in[1] x (backward); out[0] out or dx --------------- */

static sn_rnorm seg_q(const job16 *J, int64_t r, int64_t g) {
    sn_rnorm q = J->q0;
    if (J->stats) sn_k_stats_get(&q, J->n->kind, J->stats + r * J->spr, J->ng, g);
    return q;
}

/* norm_fwd_rows with the bf16 kernels: short segments in pairs (stats2, then norm_row on
 * each), as the fp32 driver takes them */
static void norm_fwd_rows16(const job16 *J, int64_t lo, int64_t hi) {
    const sn_kern16 *K = J->K16;
    const int64_t W = J->W;
    const int32_t kind = J->n->kind;
    sn_rnorm q0 = J->q0;
    q0.nt = J->nt;
    const int pairs = W <= SN_D_NORM_PAIR_MAX_W;
    int64_t pr = 0, pg = 0; /* a segment waiting for its partner, when `waiting` */
    int waiting = 0;
    for (int64_t r = lo; r < hi; r++)
        for (int64_t g = 0; g < J->ng; g++) {
            if (pairs && !waiting) {
                pr = r, pg = g, waiting = 1;
                continue;
            }
            if (!pairs) {
                float m, rs;
                K->norm_fwd(J->n, &q0, irow(J, 0, r) + g * W, W, orow(J, 0, r) + g * W, &m, &rs);
                if (J->stats_out) sn_k_stats_put(kind, J->stats_out + r * J->spr, J->ng, g, m, rs);
                continue;
            }
            const int64_t rs_[2] = {pr, r}, gs[2] = {pg, g};
            float m[2], rv[2];
            K->stats2(J->n, irow(J, 0, pr) + pg * W, J->n, irow(J, 0, r) + g * W, W, &m[0], &rv[0],
                      &m[1], &rv[1]);
            for (int k = 0; k < 2; k++) {
                sn_rnorm q = q0;
                sn_k_set_stats(&q, kind, m[k], rv[k]);
                K->norm_row(&q, irow(J, 0, rs_[k]) + gs[k] * W, W, orow(J, 0, rs_[k]) + gs[k] * W);
                if (J->stats_out)
                    sn_k_stats_put(kind, J->stats_out + rs_[k] * J->spr, J->ng, gs[k], m[k], rv[k]);
            }
            waiting = 0;
        }
    if (waiting) {
        float m, rs;
        K->norm_fwd(J->n, &q0, irow(J, 0, pr) + pg * W, W, orow(J, 0, pr) + pg * W, &m, &rs);
        if (J->stats_out) sn_k_stats_put(kind, J->stats_out + pr * J->spr, J->ng, pg, m, rs);
    }
}

static void norm_fwd_rows(const job16 *J, int64_t lo, int64_t hi, float *slot) {
    (void)slot;
    float v[SN_D16_ROW_MAX], o[SN_D16_ROW_MAX];
    const int64_t W = J->W;
    if (J->K16) {
        norm_fwd_rows16(J, lo, hi);
        return;
    }
    for (int64_t r = lo; r < hi; r++) {
        widen_row(J, irow(J, 0, r), J->D, v);
        for (int64_t g = 0; g < J->ng; g++) {
            float m, rs;
            J->K->norm_fwd(J->n, &J->q0, v + g * W, W, o + g * W, &m, &rs);
            if (J->stats_out)
                sn_k_stats_put(J->n->kind, J->stats_out + r * J->spr, J->ng, g, m, rs);
        }
        round_row(J, o, J->D, orow(J, 0, r));
    }
}

static void norm_bwd_rows(const job16 *J, int64_t lo, int64_t hi, float *slot) {
    float d[SN_D16_ROW_MAX], v[SN_D16_ROW_MAX], dv[SN_D16_ROW_MAX];
    const int64_t W = J->W;
    const sn_rnorm dp = slot ? sn_k_resolve(J->n, W, slot, 0, 0) : (sn_rnorm){0};
    float *const dg = (float *)dp.gamma, *const db = (float *)dp.beta;
    if (J->K16) { /* short segments in pairs (norm_bwd2), as the fp32 driver takes them */
        const int pairs = W <= SN_D_NORM_PAIR_MAX_W;
        sn_rnorm q[2];
        const sn_bf16 *d16[2], *v16[2];
        sn_bf16 *dv16[2];
        int n = 0;
        for (int64_t r = lo; r < hi; r++)
            for (int64_t g = 0; g < J->ng; g++) {
                q[n] = seg_q(J, r, g);
                q[n].nt = J->nt;
                d16[n] = irow(J, 0, r) + g * W;
                v16[n] = irow(J, 1, r) + g * W;
                dv16[n] = orow(J, 0, r) + g * W;
                if (!pairs) {
                    J->K16->norm_bwd(&q[0], d16[0], v16[0], W, dv16[0], J->acc, dg, db);
                } else if (++n == 2) {
                    J->K16->norm_bwd2(q, d16, v16, W, dv16, J->acc, dg, db);
                    n = 0;
                }
            }
        if (n) J->K16->norm_bwd(&q[0], d16[0], v16[0], W, dv16[0], J->acc, dg, db);
        return;
    }
    for (int64_t r = lo; r < hi; r++) {
        widen_row(J, irow(J, 0, r), J->D, d);
        widen_row(J, irow(J, 1, r), J->D, v);
        if (J->acc) widen_row(J, orow(J, 0, r), J->D, dv);
        for (int64_t g = 0; g < J->ng; g++) {
            const sn_rnorm q = seg_q(J, r, g);
            J->K->norm_bwd(&q, d + g * W, v + g * W, W, dv + g * W, J->acc, dg, db);
        }
        round_row(J, dv, J->D, orow(J, 0, r));
    }
}

static job16 norm_job16(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                        const float *params) {
    job16 J = job16_of(ctx, R, D);
    J.n = n;
    J.W = n->group ? n->group : D;
    J.ng = D / J.W;
    J.spr = sn_norm_spr(n, D);
    J.q0 = sn_k_resolve(n, J.W, params, 0.0f, 1.0f);
    return J;
}

void sn_d16_norm_fwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const sn_bf16 *x,
                     int64_t ldx, const float *params, sn_bf16 *out, int64_t ldo, float *stats) {
    job16 J = norm_job16(ctx, n, R, D, params);
    J.in[0] = x, J.ldi[0] = ldx;
    J.out[0] = out, J.ldo[0] = ldo;
    J.stats_out = stats;
    set_mem(&J, 2, SN_D_NT_MIN_BYTES);
    J.rows = norm_fwd_rows;
    run(ctx, &J);
}

void sn_d16_norm_bwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const sn_bf16 *dout,
                     int64_t lddo, const sn_bf16 *x, int64_t ldx, const float *params,
                     const float *stats, sn_bf16 *dx, int64_t lddx, float *dparams, int acc) {
    job16 J = norm_job16(ctx, n, R, D, params);
    J.in[0] = dout, J.ldi[0] = lddo;
    J.in[1] = x, J.ldi[1] = ldx;
    J.out[0] = dx, J.ldo[0] = lddx;
    J.stats = stats;
    J.acc = acc;
    set_mem(&J, 3 + acc, SN_D_NT_MIN_BYTES);
    J.rows = norm_bwd_rows;
    if (!dparams || n->kind == SN_NORM_IDENTITY || n->affine == SN_AFFINE_NONE) {
        run(ctx, &J);
        return;
    }
    /* 2W <= 2 * SN_D16_ROW_MAX floats: a slot always fits */
    pg_run16(ctx, &J, dparams, n->affine == SN_AFFINE_SCALE_SHIFT ? 2 * J.W : J.W);
}

/* ---- fuses: forward in[0] x, in[1] y, out[0] u (may be NULL), out[1] h; backward in[0] dh,
 * in[1] du (may be NULL), in[2] x, in[3] y, out[0] dx, out[1] dy ----------------------------- */

static job16 fuse_job16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                        const float *params) {
    job16 J = job16_of(ctx, R, D);
    J.f = f;
    J.L = sn_k_fuse_layout(f, D);
    sn_fuse_query(f, D, NULL, &J.spr);
    const float *P = params;
    J.F0.X = sn_k_resolve(&f->x, D, P ? P + J.L.px : NULL, 0.0f, 1.0f);
    J.F0.Y = sn_k_resolve(&f->y, D, P ? P + J.L.py : NULL, 0.0f, 1.0f);
    J.F0.O = sn_k_resolve(&f->out, D, P ? P + J.L.po : NULL, 0.0f, 1.0f);
    return J;
}

/* a fuse row's statistics {mx, rx, my, ry, mo, ro} into its saved block */
static void fuse_stats_put(const job16 *J, int64_t r, const float st[6]) {
    float *b = J->stats_out + r * J->spr;
    sn_k_stats_put(J->f->x.kind, b + J->L.sx, 1, 0, st[0], st[1]);
    sn_k_stats_put(J->f->y.kind, b + J->L.sy, 1, 0, st[2], st[3]);
    sn_k_stats_put(J->f->out.kind, b + J->L.so, 1, 0, st[4], st[5]);
}

/* The prefetches of the fp32 fuse forward driver before the pair of rows r, r + 1 (pair kernel
 * only): rows SN_D_PF_NEAR ahead of u and h touched for writing in calls that fit the L2, else
 * the x and y rows of q, q + 1 (q = r + SN_D_PF_AHEAD, those below R) prefetched, spread over the
 * kernel's sweep through F->pf (four pointers, q's repeated when q + 1 is past the end) in calls
 * beyond SN_D_FUSE_PF_SPREAD_MIN_BYTES, at once in the others. */
static void fuse_fwd_pf16(const job16 *J, int64_t r, sn_rfuse *F) {
    const int64_t rb = J->D * (int64_t)sizeof(sn_bf16);
    if (!J->pf) {
        for (int64_t q = r + SN_D_PF_NEAR; q <= r + SN_D_PF_NEAR + 1 && q < J->R; q++) {
            sn_d_prefetch_near(orow(J, 1, q), rb);
            if (J->out[0]) sn_d_prefetch_near(orow(J, 0, q), rb);
        }
        return;
    }
    int k = 0;
    for (int64_t q = r + SN_D_PF_AHEAD; q <= r + SN_D_PF_AHEAD + 1 && q < J->R; q++) {
        if (J->pf_spread) {
            F->pf[k++] = irow(J, 0, q);
            F->pf[k++] = irow(J, 1, q);
        } else {
            sn_d_prefetch_row(irow(J, 0, q), rb);
            sn_d_prefetch_row(irow(J, 1, q), rb);
        }
    }
    for (; k > 0 && k < 4; k++) F->pf[k] = F->pf[k - 2];
    F->npf = k;
}

/* As the fp32 driver's one-row path: the statistics of x and y, s = N_x(x) + N_y(y) (u = N_x(x)),
 * then h = N_out(s) in place. */
static void fuse_fwd_rows(const job16 *J, int64_t lo, int64_t hi, float *slot) {
    (void)slot;
    float x[SN_D16_ROW_MAX], y[SN_D16_ROW_MAX], u[SN_D16_ROW_MAX], s[SN_D16_ROW_MAX];
    const sn_fuse *f = J->f;
    const int64_t D = J->D;
    /* rows in pairs where the fp32 driver pairs them (fuse_fwd2, bitwise two single rows):
     * the two statistics chains overlap; each row is staged in half of the stack rows */
    int64_t r = lo;
    for (; J->K16 && sn_k_fuse2_ok(f, D) && r + 1 < hi; r += 2) {
        const sn_bf16 *const xs[2] = {irow(J, 0, r), irow(J, 0, r + 1)};
        const sn_bf16 *const ys[2] = {irow(J, 1, r), irow(J, 1, r + 1)};
        sn_bf16 *const us[2] = {J->out[0] ? orow(J, 0, r) : NULL,
                                J->out[0] ? orow(J, 0, r + 1) : NULL};
        sn_bf16 *const hs[2] = {orow(J, 1, r), orow(J, 1, r + 1)};
        float st2[2][6];
        sn_rfuse F0 = J->F0;
        F0.nt = J->nt;
        fuse_fwd_pf16(J, r, &F0);
        J->K16->fuse_fwd2(&F0, f, D, xs, ys, us, hs, st2);
        for (int q = 0; q < 2 && J->stats_out; q++) fuse_stats_put(J, r + q, st2[q]);
    }
    for (; sn_k_fuse2_ok(f, D) && r + 1 < hi; r += 2) {
        const float *const xs[2] = {x, x + D}, *const ys[2] = {y, y + D};
        float *const us[2] = {J->out[0] ? u : NULL, J->out[0] ? u + D : NULL};
        float *const hs[2] = {s, s + D};
        float st2[2][6];
        for (int q = 0; q < 2; q++) {
            widen_row(J, irow(J, 0, r + q), D, x + q * D);
            widen_row(J, irow(J, 1, r + q), D, y + q * D);
        }
        J->K->fuse_fwd2(&J->F0, f, D, xs, ys, us, hs, st2);
        for (int q = 0; q < 2; q++) {
            if (J->stats_out) fuse_stats_put(J, r + q, st2[q]);
            if (J->out[0]) round_row(J, u + q * D, D, orow(J, 0, r + q));
            round_row(J, s + q * D, D, orow(J, 1, r + q));
        }
    }
    for (; r < hi; r++) {
        widen_row(J, irow(J, 0, r), D, x);
        widen_row(J, irow(J, 1, r), D, y);
        float mx, rx, my, ry, mo = 0.0f, ro = 1.0f;
        sn_rfuse F = J->F0;
        J->K->stats2(&f->x, x, &f->y, y, D, &mx, &rx, &my, &ry);
        sn_k_set_stats(&F.X, f->x.kind, mx, rx);
        sn_k_set_stats(&F.Y, f->y.kind, my, ry);
        J->K->fuse_s(&F, D, x, y, J->out[0] ? u : NULL, s, &f->out, &mo, &ro);
        if (f->out.kind != SN_NORM_IDENTITY) {
            sn_k_set_stats(&F.O, f->out.kind, mo, ro);
            J->K->norm_row(&F.O, s, D, s);
        }
        if (J->stats_out) {
            const float st[6] = {mx, rx, my, ry, mo, ro};
            fuse_stats_put(J, r, st);
        }
        if (J->out[0]) round_row(J, u, D, orow(J, 0, r));
        round_row(J, s, D, orow(J, 1, r));
    }
}

void sn_d16_fuse_fwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const sn_bf16 *x,
                     int64_t ldx, const sn_bf16 *y, int64_t ldy, const float *params, sn_bf16 *u,
                     int64_t ldu, sn_bf16 *h, int64_t ldh, float *stats) {
    job16 J = fuse_job16(ctx, f, R, D, params);
    J.in[0] = x, J.ldi[0] = ldx;
    J.in[1] = y, J.ldi[1] = ldy;
    J.out[0] = u, J.ldo[0] = ldu;
    J.out[1] = h, J.ldo[1] = ldh;
    J.stats_out = stats;
    set_mem(&J, u ? 4 : 3, SN_D_FUSE_NT_MIN_BYTES);
    J.rows = fuse_fwd_rows;
    run(ctx, &J);
}

/* A staged backward row: six rows of D floats in a stack buffer: the inputs widened, dx and dy
 * (widened when accumulated into). */
typedef struct brow16 {
    float *dh, *du, *x, *y, *dx, *dy;
} brow16;
#define STAGE_FLOATS (6 * SN_D16_ROW_MAX) /* one staged row at the widest, two up to 2048 */

static brow16 brow_at(float *buf, int64_t D) {
    brow16 w = {buf, buf + D, buf + 2 * D, buf + 3 * D, buf + 4 * D, buf + 5 * D};
    return w;
}

/* row r's sn_rfuse: F0 with the row's saved statistics */
static sn_rfuse fuse_row_F(const job16 *J, int64_t r) {
    sn_rfuse F = J->F0;
    if (J->stats) {
        const float *st = J->stats + r * J->spr;
        sn_k_stats_get(&F.X, J->f->x.kind, st + J->L.sx, 1, 0);
        sn_k_stats_get(&F.Y, J->f->y.kind, st + J->L.sy, 1, 0);
        sn_k_stats_get(&F.O, J->f->out.kind, st + J->L.so, 1, 0);
    }
    return F;
}

/* row r staged into *w, and its sn_rfuse into *F */
static void fuse_stage(const job16 *J, int64_t r, const brow16 *w, sn_rfuse *F) {
    const int64_t D = J->D;
    widen_row(J, irow(J, 0, r), D, w->dh);
    if (J->in[1]) widen_row(J, irow(J, 1, r), D, w->du);
    widen_row(J, irow(J, 2, r), D, w->x);
    widen_row(J, irow(J, 3, r), D, w->y);
    if (J->accx) widen_row(J, orow(J, 0, r), D, w->dx);
    if (J->accy) widen_row(J, orow(J, 1, r), D, w->dy);
    *F = fuse_row_F(J, r);
}

/* The fp32 fuse backward driver's prefetches for the kernel on row r (n rows: r, or r and
 * r + 1): rows SN_D_PF_NEAR ahead touched in calls that fit the L2, else the rows of
 * q = r + SN_D_PF_AHEAD through F->pf (the kernel spreads them over its second sweep). */
static void fuse_bwd_pf16(const job16 *J, int64_t r, int n, sn_rfuse *F) {
    const int64_t rb = J->D * (int64_t)sizeof(sn_bf16);
    const int64_t q = r + SN_D_PF_AHEAD;
    if (!J->pf) {
        for (int64_t p = r + SN_D_PF_NEAR; p < r + SN_D_PF_NEAR + n && p < J->R; p++) {
            sn_d_prefetch_near(irow(J, 2, p), rb);
            sn_d_prefetch_near(irow(J, 3, p), rb);
            if (!J->accx && !J->in[1]) sn_d_prefetch_near(orow(J, 0, p), rb); /* written only */
            if (!J->accy) sn_d_prefetch_near(orow(J, 1, p), rb);
        }
        return;
    }
    if (q >= J->R) return;
    int k = 0;
    F->pf[k++] = irow(J, 0, q);
    if (J->in[1]) F->pf[k++] = irow(J, 1, q);
    F->pf[k++] = irow(J, 2, q);
    F->pf[k++] = irow(J, 3, q);
    if (J->accy) F->pf[k++] = orow(J, 1, q);
    if (J->accx) F->pf[k++] = orow(J, 0, q);
    F->npf = k;
}

/* fuse_bwd_rows with the bf16 kernels: pairs as the fp32 driver takes them */
static void fuse_bwd_rows16(const job16 *J, int64_t lo, int64_t hi, const sn_dfuse *dp) {
    const sn_bf16 *const du0 = J->in[1];
    int64_t r = lo;
    for (; dp && r + 1 < hi; r += 2) {
        sn_rfuse F[2] = {fuse_row_F(J, r), fuse_row_F(J, r + 1)};
        F[0].nt = F[1].nt = J->nt;
        fuse_bwd_pf16(J, r, 2, &F[0]);
        fuse_bwd_pf16(J, r + 1, 0, &F[1]);
        const sn_bf16 *const dh[2] = {irow(J, 0, r), irow(J, 0, r + 1)};
        const sn_bf16 *const du[2] = {du0 ? irow(J, 1, r) : NULL, du0 ? irow(J, 1, r + 1) : NULL};
        const sn_bf16 *const x[2] = {irow(J, 2, r), irow(J, 2, r + 1)};
        const sn_bf16 *const y[2] = {irow(J, 3, r), irow(J, 3, r + 1)};
        sn_bf16 *const dx[2] = {orow(J, 0, r), orow(J, 0, r + 1)};
        sn_bf16 *const dy[2] = {orow(J, 1, r), orow(J, 1, r + 1)};
        J->K16->fuse_bwd2(F, J->D, dh, du, x, y, dx, dy, J->accx, J->accy, dp);
    }
    for (; r < hi; r++) {
        sn_rfuse F = fuse_row_F(J, r);
        F.nt = J->nt;
        fuse_bwd_pf16(J, r, 1, &F);
        J->K16->fuse_bwd(&F, J->D, irow(J, 0, r), du0 ? irow(J, 1, r) : NULL, irow(J, 2, r),
                         irow(J, 3, r), orow(J, 0, r), orow(J, 1, r), J->accx, J->accy, dp);
    }
}

static void fuse_bwd_rows(const job16 *J, int64_t lo, int64_t hi, float *slot) {
    const int64_t D = J->D;
    const sn_dfuse dp = sn_k_fuse_dparams(J->f, &J->L, D, slot);
    if (J->K16) {
        fuse_bwd_rows16(J, lo, hi, slot ? &dp : NULL);
        return;
    }
    float buf[STAGE_FLOATS];
    const int pairs = 12 * D <= STAGE_FLOATS; /* room for two staged rows */
    const brow16 w = brow_at(buf, D), v = brow_at(buf + (pairs ? 6 * D : 0), D);
    int64_t r = lo;
    /* with parameter gradients, rows in pairs as the fp32 driver takes them (fuse_bwd2: bitwise
     * two single rows) where two staged rows fit */
    for (; slot && pairs && r + 1 < hi; r += 2) {
        sn_rfuse F[2];
        fuse_stage(J, r, &w, &F[0]);
        fuse_stage(J, r + 1, &v, &F[1]);
        const float *const dh[2] = {w.dh, v.dh}, *const x[2] = {w.x, v.x}, *const y[2] = {w.y, v.y};
        const float *const du[2] = {J->in[1] ? w.du : NULL, J->in[1] ? v.du : NULL};
        float *const dx[2] = {w.dx, v.dx}, *const dy[2] = {w.dy, v.dy};
        J->K->fuse_bwd2(F, D, dh, du, x, y, dx, dy, J->accx, J->accy, &dp);
        round_row(J, w.dx, D, orow(J, 0, r));
        round_row(J, w.dy, D, orow(J, 1, r));
        round_row(J, v.dx, D, orow(J, 0, r + 1));
        round_row(J, v.dy, D, orow(J, 1, r + 1));
    }
    for (; r < hi; r++) {
        sn_rfuse F;
        fuse_stage(J, r, &w, &F);
        J->K->fuse_bwd(&F, D, w.dh, J->in[1] ? w.du : NULL, w.x, w.y, w.dx, w.dy, J->accx, J->accy,
                       slot ? &dp : NULL);
        round_row(J, w.dx, D, orow(J, 0, r));
        round_row(J, w.dy, D, orow(J, 1, r));
    }
}

/* Rows whose six parameter vectors fill more than the slot buffer (D > 2730 without scratch):
 * as the fp32 driver's wide variant, per chunk the rows' reductions, then the parameter
 * gradients in column blocks (fuse_pg is elementwise), then the input gradients; one thread. */
static void fuse_bwd_wide(const sn_ctx *ctx, job16 *J) {
    _Alignas(64) float stack[SLOT_FLOATS];
    float *buf;
    int64_t nbuf;
    sn_ctx_scratch(ctx, &buf, &nbuf);
    if (nbuf < SLOT_FLOATS) buf = stack, nbuf = SLOT_FLOATS;
    const int64_t D = J->D, C = sn_d_pg_chunk_rows(D);
    const sn_dfuse d = sn_k_fuse_dparams(J->f, &J->L, D, J->dparams);
    float *dst[6] = {d.gx, d.bx, d.gy, d.by, d.go, d.bo};
    int64_t per = 0;
    for (int k = 0; k < 6; k++) per += dst[k] != NULL;
    const int64_t bw = nbuf / per / QUANTUM * QUANTUM;
    float stage[STAGE_FLOATS];
    const brow16 w = brow_at(stage, D);
    float red[8 * 6]; /* 6 reductions of each of the C = 16384 / D <= 5 rows of a chunk */
    for (int64_t lo = 0; lo < J->R; lo += C) {
        const int64_t hi = lo + C < J->R ? lo + C : J->R;
        sn_rfuse F;
        for (int64_t r = lo; r < hi; r++) {
            fuse_stage(J, r, &w, &F);
            J->K->fuse_red(&F, D, w.dh, J->in[1] ? w.du : NULL, w.x, w.y);
            float *o = red + (r - lo) * 6;
            o[0] = F.oa, o[1] = F.ob, o[2] = F.xa, o[3] = F.xb, o[4] = F.ya, o[5] = F.yb;
        }
        for (int64_t j0 = 0; j0 < D; j0 += bw) {
            const int64_t n = D - j0 < bw ? D - j0 : bw;
            float *p[6];
            for (int k = 0, q = 0; k < 6; k++) p[k] = dst[k] ? buf + (q++) * bw : NULL;
            memset(buf, 0, (size_t)(per * bw) * sizeof(float));
            const sn_dfuse dp = {p[0], p[1], p[2], p[3], p[4], p[5]};
            for (int64_t r = lo; r < hi; r++) {
                fuse_stage(J, r, &w, &F);
                const float *o = red + (r - lo) * 6;
                F.oa = o[0], F.ob = o[1], F.xa = o[2], F.xb = o[3], F.ya = o[4], F.yb = o[5];
                sn_rnorm *ns[3] = {&F.X, &F.Y, &F.O};
                for (int k = 0; k < 3; k++) {
                    if (ns[k]->gamma) ns[k]->gamma += j0;
                    if (ns[k]->beta) ns[k]->beta += j0;
                }
                J->K->fuse_pg(&F, n, w.dh + j0, J->in[1] ? w.du + j0 : NULL, w.x + j0, w.y + j0,
                              &dp);
            }
            for (int k = 0; k < 6; k++)
                if (dst[k])
                    for (int64_t j = 0; j < n; j++) dst[k][j0 + j] += p[k][j];
        }
        for (int64_t r = lo; r < hi; r++) {
            fuse_stage(J, r, &w, &F);
            const float *o = red + (r - lo) * 6;
            F.oa = o[0], F.ob = o[1], F.xa = o[2], F.xb = o[3], F.ya = o[4], F.yb = o[5];
            J->K->fuse_dx(&F, D, w.dh, J->in[1] ? w.du : NULL, w.x, w.y, w.dx, w.dy, J->accx,
                          J->accy);
            round_row(J, w.dx, D, orow(J, 0, r));
            round_row(J, w.dy, D, orow(J, 1, r));
        }
    }
}

void sn_d16_fuse_bwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const sn_bf16 *dh,
                     int64_t lddh, const sn_bf16 *du, int64_t lddu, const sn_bf16 *x, int64_t ldx,
                     const sn_bf16 *y, int64_t ldy, const float *params, const float *stats,
                     sn_bf16 *dx, int64_t lddx, sn_bf16 *dy, int64_t lddy, float *dparams,
                     uint32_t flags) {
    job16 J = fuse_job16(ctx, f, R, D, params);
    J.in[0] = dh, J.ldi[0] = lddh;
    J.in[1] = du, J.ldi[1] = lddu;
    J.in[2] = x, J.ldi[2] = ldx;
    J.in[3] = y, J.ldi[3] = ldy;
    J.out[0] = dx, J.ldo[0] = lddx;
    J.out[1] = dy, J.ldo[1] = lddy;
    J.stats = stats;
    J.accx = (flags & SN_ACCUMULATE) != 0;
    J.accy = (flags & SN_ACCUMULATE_Y) != 0;
    set_mem(&J, 5 + (du != NULL) + J.accx + J.accy, SN_D_FUSE_NT_MIN_BYTES);
    J.rows = fuse_bwd_rows;
    int64_t npg = 0;
    if (dparams) sn_fuse_query(f, D, &npg, NULL);
    if (npg == 0) {
        run(ctx, &J);
        return;
    }
    if (!pg_run16(ctx, &J, dparams, npg)) fuse_bwd_wide(ctx, &J);
}

/* ---- elementwise, in column blocks: any D ------------------------------------------------- */

/* apply: in[0] z, in[1] u, in[2] y; out[0] xo = u + z / c, out[1] yo = y + z */
static void apply_rows(const job16 *J, int64_t lo, int64_t hi, float *slot) {
    (void)slot;
    if (J->K16) {
        for (int64_t r = lo; r < hi; r++)
            J->K16->apply(irow(J, 0, r), irow(J, 1, r), irow(J, 2, r), J->c, orow(J, 0, r),
                          orow(J, 1, r), J->D, J->nt);
        return;
    }
    float z[EW_BLOCK], u[EW_BLOCK], y[EW_BLOCK];
    for (int64_t r = lo; r < hi; r++)
        for (int64_t j = 0; j < J->D; j += EW_BLOCK) {
            const int64_t n = J->D - j < EW_BLOCK ? J->D - j : EW_BLOCK;
            widen_row(J, irow(J, 0, r) + j, n, z);
            widen_row(J, irow(J, 1, r) + j, n, u);
            widen_row(J, irow(J, 2, r) + j, n, y);
            J->K->apply(z, u, y, J->c, u, y, n, 0);
            round_row(J, u, n, orow(J, 0, r) + j);
            round_row(J, y, n, orow(J, 1, r) + j);
        }
}

void sn_d16_apply(const sn_ctx *ctx, int64_t R, int64_t D, float c, const sn_bf16 *z, int64_t ldz,
                  const sn_bf16 *u, int64_t ldu, const sn_bf16 *y, int64_t ldy, sn_bf16 *xo,
                  int64_t ldxo, sn_bf16 *yo, int64_t ldyo) {
    job16 J = job16_of(ctx, R, D);
    J.in[0] = z, J.ldi[0] = ldz;
    J.in[1] = u, J.ldi[1] = ldu;
    J.in[2] = y, J.ldi[2] = ldy;
    J.out[0] = xo, J.ldo[0] = ldxo;
    J.out[1] = yo, J.ldo[1] = ldyo;
    J.c = c;
    set_mem(&J, 5, SN_D_NT_MIN_BYTES);
    J.rows = apply_rows;
    run(ctx, &J);
}

/* add_div: out[0] (+= with acc) in[0] + in[1] / c; axpy (acc = -1): out[0] = c * in[0] + in[1];
 * div (acc = -2, no bf16 kernel): out[0] = in[0] / c */
static void add_rows(const job16 *J, int64_t lo, int64_t hi, float *slot) {
    (void)slot;
    if (J->K16 && J->acc != -2) {
        for (int64_t r = lo; r < hi; r++) {
            if (J->acc < 0)
                J->K16->axpy(irow(J, 0, r), irow(J, 1, r), J->c, orow(J, 0, r), J->D, J->nt);
            else
                J->K16->add_div(irow(J, 0, r), irow(J, 1, r), J->c, orow(J, 0, r), J->D, J->acc,
                                J->nt);
        }
        return;
    }
    float a[EW_BLOCK], b[EW_BLOCK], o[EW_BLOCK];
    for (int64_t r = lo; r < hi; r++)
        for (int64_t j = 0; j < J->D; j += EW_BLOCK) {
            const int64_t n = J->D - j < EW_BLOCK ? J->D - j : EW_BLOCK;
            widen_row(J, irow(J, 0, r) + j, n, a);
            if (J->acc == -2) {
                for (int64_t k = 0; k < n; k++) o[k] = a[k] / J->c;
                round_row(J, o, n, orow(J, 0, r) + j);
                continue;
            }
            widen_row(J, irow(J, 1, r) + j, n, b);
            if (J->acc < 0) {
                J->K->axpy(a, b, J->c, o, n, 0);
            } else {
                if (J->acc) widen_row(J, orow(J, 0, r) + j, n, o);
                J->K->add_div(a, b, J->c, o, n, J->acc, 0);
            }
            round_row(J, o, n, orow(J, 0, r) + j);
        }
}

void sn_d16_add_div(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *a, int64_t lda,
                    const sn_bf16 *b, int64_t ldb, float c, sn_bf16 *out, int64_t ldo, int acc) {
    job16 J = job16_of(ctx, R, D);
    J.in[0] = a, J.ldi[0] = lda;
    J.in[1] = b, J.ldi[1] = ldb;
    J.out[0] = out, J.ldo[0] = ldo;
    J.c = c;
    J.acc = acc;
    set_mem(&J, 3 + acc, SN_D_NT_MIN_BYTES);
    J.rows = add_rows;
    run(ctx, &J);
}

void sn_d16_axpy(const sn_ctx *ctx, int64_t R, int64_t D, float alpha, const sn_bf16 *a,
                 int64_t lda, const sn_bf16 *b, int64_t ldb, sn_bf16 *out, int64_t ldo) {
    job16 J = job16_of(ctx, R, D);
    J.in[0] = a, J.ldi[0] = lda;
    J.in[1] = b, J.ldi[1] = ldb;
    J.out[0] = out, J.ldo[0] = ldo;
    J.c = alpha;
    J.acc = -1;
    set_mem(&J, 3, SN_D_NT_MIN_BYTES);
    J.rows = add_rows;
    run(ctx, &J);
}

void sn_d16_div(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *a, int64_t lda, float c,
                sn_bf16 *out, int64_t ldo) {
    job16 J = job16_of(ctx, R, D);
    J.in[0] = a, J.ldi[0] = lda;
    J.out[0] = out, J.ldo[0] = ldo;
    J.c = c;
    J.acc = -2;
    J.rows = add_rows;
    run(ctx, &J);
}

/* copy (in[0] -> out[0]), to_bf16 (src32 -> out[0]), from_bf16 (in[0] -> dst32): each element
 * rounded or widened (a copy rounds what it widened: the same bits, NaNs quieted) */
static void convert_rows(const job16 *J, int64_t lo, int64_t hi, float *slot) {
    (void)slot;
    float t[EW_BLOCK];
    for (int64_t r = lo; r < hi; r++)
        for (int64_t j = 0; j < J->D; j += EW_BLOCK) {
            const int64_t n = J->D - j < EW_BLOCK ? J->D - j : EW_BLOCK;
            if (J->src32) round_row(J, J->src32 + r * J->ldi[0] + j, n, orow(J, 0, r) + j);
            else if (J->dst32) widen_row(J, irow(J, 0, r) + j, n, J->dst32 + r * J->ldo[0] + j);
            else {
                widen_row(J, irow(J, 0, r) + j, n, t);
                round_row(J, t, n, orow(J, 0, r) + j);
            }
        }
}

void sn_d16_copy(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *a, int64_t lda,
                 sn_bf16 *out, int64_t ldo) {
    job16 J = job16_of(ctx, R, D);
    J.in[0] = a, J.ldi[0] = lda;
    J.out[0] = out, J.ldo[0] = ldo;
    J.rows = convert_rows;
    run(ctx, &J);
}

void sn_d16_to_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const float *src, int64_t lds,
                    sn_bf16 *dst, int64_t ldd) {
    job16 J = job16_of(ctx, R, D);
    J.src32 = src, J.ldi[0] = lds;
    J.out[0] = dst, J.ldo[0] = ldd;
    J.rows = convert_rows;
    run(ctx, &J);
}

void sn_d16_from_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *src, int64_t lds,
                      float *dst, int64_t ldd) {
    job16 J = job16_of(ctx, R, D);
    J.in[0] = src, J.ldi[0] = lds;
    J.dst32 = dst, J.ldo[0] = ldd;
    J.rows = convert_rows;
    run(ctx, &J);
}
