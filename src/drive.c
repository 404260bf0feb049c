/* Drivers (see drive.h): the loops over rows, the kernel path and the threads.
 *
 * A call runs on the kernel table of its context (ctx.h). Rows are split into contiguous
 * pieces, one parallel-for task each; every row is computed by the same kernel calls whatever
 * the split, so forward outputs and input gradients do not depend on the thread count.
 *
 * Parameter gradients are sums over rows. They are always accumulated in row order, straight
 * into dparams, one row after another: dgamma[j] = (((dgamma[j] + t_0[j]) + t_1[j]) + ...).
 * Single-threaded, each row is done in one visit while it sits in L1 (reductions, parameter
 * gradients, input gradients). With threads, a block of rows is done in phases: the row
 * reductions (rows split over threads; kept on the stack, 6 floats a row), the parameter
 * gradients (columns split over threads, each thread walking all the block's rows in order),
 * then the input gradients (rows split). Stack use: at most 12 KiB here (the reductions of a
 * block) or about 17 KiB in a SIMD row kernel (a row's temporaries), never both. The column split keeps the order of every sum, so the
 * result is bitwise the same for any number of threads, with no scratch buffer. */
#include "drive.h"

#include <string.h>

#include "check.h"
#include "ctx.h"

/* Calls with fewer elements stay on the calling thread. */
#define GRAIN 16384
/* Rows of a threaded backward block: about 1 MiB per input array, at most BLOCK_MAX rows. */
#define BLOCK_FLOATS (256 * 1024)
#define BLOCK_MAX 512
/* Calls whose matrices hold at least this many floats (8 MiB) write their outputs with
 * streaming stores where a SIMD path can: such outputs cannot stay in the caches anyway, and
 * skipping the read-for-ownership of every written line saves a third of a write's traffic. */
#define NT_MIN (1 << 21)
/* Fuse forward rows up to this width build s on the stack, so that h is written once. */
#define FUSE_STACK_MAX 1024
/* Columns are split in multiples of 16 floats (one 64-byte cache line). */
#define COL_QUANTUM 16

typedef struct job {
    const sn_kern *K;
    const sn_norm *n;
    const sn_fuse *f;
    sn_fuse_layout L;
    int64_t D, W, ng, spr;
    int64_t r0, nrows, pieces; /* the rows [r0, r0 + nrows) in `pieces` tasks */
    int64_t ncols;             /* column tasks: the W (or D) columns in `pieces` tasks */
    const float *a, *b, *c, *d; /* inputs (meaning per driver) */
    int64_t lda, ldb, ldc, ldd;
    float *o, *p; /* outputs */
    int64_t ldo, ldp;
    const float *params, *stats_in;
    float *stats_out, *dparams;
    float cc;
    int acc, accy;
    int nt; /* streaming stores (see NT_MIN) */
    float *red; /* fuse backward: 6 reductions per row of the current block */
} job;

static int64_t row_pieces(const sn_ctx *ctx, int64_t R, int64_t D) {
    const int w = sn_ctx_width(ctx);
    if (w <= 1 || R < 2 || R * D < GRAIN) return 1;
    /* a few tasks per thread, so that a thread that starts late still gets a share */
    const int64_t p = 4 * (int64_t)w;
    return R < p ? R : p;
}

static void range(int64_t n, int64_t pieces, int64_t i, int64_t *lo, int64_t *hi) {
    *lo = n * i / pieces;
    *hi = n * (i + 1) / pieces;
}

/* the column run [j0, j1) of task i of a column split of W columns */
static void col_range(int64_t W, int64_t pieces, int64_t i, int64_t *j0, int64_t *j1) {
    const int64_t nq = (W + COL_QUANTUM - 1) / COL_QUANTUM;
    int64_t q0, q1;
    range(nq, pieces, i, &q0, &q1);
    *j0 = q0 * COL_QUANTUM;
    *j1 = q1 * COL_QUANTUM < W ? q1 * COL_QUANTUM : W;
}

static int64_t col_pieces(const sn_ctx *ctx, int64_t W) {
    const int64_t nq = (W + COL_QUANTUM - 1) / COL_QUANTUM, w = sn_ctx_width(ctx);
    return nq < w ? nq : w;
}

static int big(int64_t R, int64_t D) { return R * D >= NT_MIN; }

static void run_rows(const sn_ctx *ctx, job *J, int64_t r0, int64_t nrows, sn_task_fn fn) {
    J->r0 = r0;
    J->nrows = nrows;
    J->pieces = row_pieces(ctx, nrows, J->D);
    sn_ctx_par(ctx, J->pieces, fn, J);
}

#define ROWS_OF_TASK(J, i, lo, hi)                                                                \
    int64_t lo, hi;                                                                               \
    range((J)->nrows, (J)->pieces, (i), &lo, &hi);                                                \
    lo += (J)->r0;                                                                                \
    hi += (J)->r0

static int64_t block_rows(int64_t D) {
    int64_t b = BLOCK_FLOATS / D;
    return b < 1 ? 1 : b > BLOCK_MAX ? BLOCK_MAX : b;
}

/* ---- norms --------------------------------------------------------------------------------- */

/* a = x, o = out, stats_out */
static void norm_fwd_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++)
        for (int64_t g = 0; g < J->ng; g++) {
            const float *v = J->a + r * J->lda + g * J->W;
            float m, rs;
            J->K->stats(J->n, v, J->W, &m, &rs);
            sn_rnorm q = sn_k_resolve(J->n, J->W, J->params, m, rs);
            q.nt = J->nt;
            J->K->norm_row(&q, v, J->W, J->o + r * J->ldo + g * J->W);
            if (J->stats_out) sn_k_stats_put(J->n, J->stats_out + r * J->spr, J->ng, g, m, rs);
        }
}

static void norm_job(job *J, const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D) {
    memset(J, 0, sizeof *J);
    J->nt = big(R, D);
    J->K = sn_ctx_kern(ctx);
    J->n = n;
    J->D = D;
    J->W = n->group ? n->group : D;
    J->ng = D / J->W;
    J->spr = sn_norm_spr(n, D);
}

void sn_d_norm_fwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *x,
                   int64_t ldx, const float *params, float *out, int64_t ldo, float *stats) {
    job J;
    norm_job(&J, ctx, n, R, D);
    J.a = x;
    J.lda = ldx;
    J.params = params;
    J.o = out;
    J.ldo = ldo;
    J.stats_out = stats;
    run_rows(ctx, &J, 0, R, norm_fwd_task);
}

/* a = x, stats_in, o = out */
static void norm_apply_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++)
        for (int64_t g = 0; g < J->ng; g++) {
            float m, rs;
            sn_k_stats_get(J->n, J->stats_in ? J->stats_in + r * J->spr : NULL, J->ng, g, &m,
                           &rs);
            sn_rnorm q = sn_k_resolve(J->n, J->W, J->params, m, rs);
            q.nt = J->nt;
            J->K->norm_row(&q, J->a + r * J->lda + g * J->W, J->W,
                           J->o + r * J->ldo + g * J->W);
        }
}

void sn_d_norm_apply(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *x,
                     int64_t ldx, const float *params, const float *stats, float *out,
                     int64_t ldo) {
    job J;
    norm_job(&J, ctx, n, R, D);
    J.a = x;
    J.lda = ldx;
    J.params = params;
    J.stats_in = stats;
    J.o = out;
    J.ldo = ldo;
    run_rows(ctx, &J, 0, R, norm_apply_task);
}

static void norm_stats_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++)
        for (int64_t g = 0; g < J->ng; g++) {
            float m, rs;
            J->K->stats(J->n, J->a + r * J->lda + g * J->W, J->W, &m, &rs);
            sn_k_stats_put(J->n, J->stats_out + r * J->spr, J->ng, g, m, rs);
        }
}

void sn_d_norm_stats(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *x,
                     int64_t ldx, float *stats) {
    job J;
    norm_job(&J, ctx, n, R, D);
    if (J.spr == 0) return;
    J.a = x;
    J.lda = ldx;
    J.stats_out = stats;
    run_rows(ctx, &J, 0, R, norm_stats_task);
}

/* Norm backward. a = dout, b = x, stats_in, o = dx, dparams; with_pg: also the parameter
 * gradients (single-threaded visit). */
static sn_rnorm norm_row_q(const job *J, int64_t r, int64_t g) {
    float m, rs;
    sn_k_stats_get(J->n, J->stats_in ? J->stats_in + r * J->spr : NULL, J->ng, g, &m, &rs);
    sn_rnorm q = sn_k_resolve(J->n, J->W, J->params, m, rs);
    q.nt = J->nt;
    return q;
}

static void norm_bwd_rows(const job *J, int64_t lo, int64_t hi, int with_pg) {
    const sn_rnorm dp = with_pg ? sn_k_resolve(J->n, J->W, J->dparams, 0, 0) : (sn_rnorm){0};
    for (int64_t r = lo; r < hi; r++)
        for (int64_t g = 0; g < J->ng; g++) {
            const sn_rnorm q = norm_row_q(J, r, g);
            const float *dout = J->a + r * J->lda + g * J->W, *v = J->b + r * J->ldb + g * J->W;
            J->K->norm_bwd(&q, dout, v, J->W, J->o + r * J->ldo + g * J->W, J->acc,
                           (float *)dp.gamma, (float *)dp.beta);
        }
}

static void norm_bwd_dx_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    norm_bwd_rows(J, lo, hi, 0);
}

/* the parameter gradients of the block's rows over the columns of task i, rows in order */
static void norm_bwd_pg_task(void *arg, int64_t i) {
    const job *J = arg;
    int64_t j0, j1;
    col_range(J->W, J->pieces, i, &j0, &j1);
    if (j0 >= j1) return;
    const sn_rnorm dp = sn_k_resolve(J->n, J->W, J->dparams, 0, 0);
    float *dg = dp.gamma ? (float *)dp.gamma + j0 : NULL, *db = dp.beta ? (float *)dp.beta + j0 : NULL;
    for (int64_t r = J->r0; r < J->r0 + J->nrows; r++)
        for (int64_t g = 0; g < J->ng; g++) {
            const sn_rnorm q = norm_row_q(J, r, g);
            const int64_t c = g * J->W + j0;
            J->K->norm_pg(&q, J->a + r * J->lda + c, J->b + r * J->ldb + c, j1 - j0, dg, db);
        }
}

void sn_d_norm_bwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *dout,
                   int64_t lddo, const float *x, int64_t ldx, const float *params,
                   const float *stats, float *dx, int64_t lddx, float *dparams, int acc) {
    job J;
    norm_job(&J, ctx, n, R, D);
    J.a = dout;
    J.lda = lddo;
    J.b = x;
    J.ldb = ldx;
    J.params = params;
    J.stats_in = stats;
    J.o = dx;
    J.ldo = lddx;
    J.acc = acc;
    J.dparams = dparams;
    if (!dparams || n->kind == SN_NORM_IDENTITY || n->affine == SN_AFFINE_NONE) {
        run_rows(ctx, &J, 0, R, norm_bwd_dx_task);
        return;
    }
    if (row_pieces(ctx, R, D) == 1) {
        norm_bwd_rows(&J, 0, R, 1);
        return;
    }
    const int64_t B = block_rows(D);
    for (int64_t b0 = 0; b0 < R; b0 += B) {
        const int64_t nb = R - b0 < B ? R - b0 : B;
        /* parameter gradients first: dx may be dout */
        J.r0 = b0;
        J.nrows = nb;
        J.pieces = col_pieces(ctx, J.W);
        sn_ctx_par(ctx, J.pieces, norm_bwd_pg_task, &J);
        run_rows(ctx, &J, b0, nb, norm_bwd_dx_task);
    }
}

/* ---- dual-stream fuse ---------------------------------------------------------------------- */

static void fuse_job(job *J, const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D) {
    memset(J, 0, sizeof *J);
    J->nt = big(R, D);
    J->K = sn_ctx_kern(ctx);
    J->f = f;
    J->D = D;
    J->L = sn_k_fuse_layout(f, D);
    sn_fuse_query(f, D, NULL, &J->spr);
}

/* a = x, b = y, o = u (may be NULL), p = h, stats_out */
static void fuse_fwd_task(void *arg, int64_t i) {
    const job *J = arg;
    const sn_fuse *f = J->f;
    const sn_fuse_layout *L = &J->L;
    const float *P = J->params;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *x = J->a + r * J->lda, *y = J->b + r * J->ldb;
        float *h = J->p + r * J->ldp;
        float mx, rx, my, ry, mo, ro;
        sn_rfuse F;
        memset(&F, 0, sizeof F);
        F.nt = J->nt;
        J->K->stats(&f->x, x, J->D, &mx, &rx);
        J->K->stats(&f->y, y, J->D, &my, &ry);
        F.X = sn_k_resolve(&f->x, J->D, P ? P + L->px : NULL, mx, rx);
        F.Y = sn_k_resolve(&f->y, J->D, P ? P + L->py : NULL, my, ry);
        /* s = N_x(x) + N_y(y) on the stack (or in h for wide rows), then h = N_out(s) */
        float sbuf[FUSE_STACK_MAX];
        float *sp = J->D <= FUSE_STACK_MAX ? sbuf : h;
        J->K->fuse_s(&F, J->D, x, y, J->o ? J->o + r * J->ldo : NULL, sp);
        J->K->stats(&f->out, sp, J->D, &mo, &ro);
        if (f->out.kind != SN_NORM_IDENTITY) {
            F.O = sn_k_resolve(&f->out, J->D, P ? P + L->po : NULL, mo, ro);
            F.O.nt = J->nt;
            J->K->norm_row(&F.O, sp, J->D, h);
        } else if (sp != h) {
            memcpy(h, sp, (size_t)J->D * sizeof(float));
        }
        if (J->stats_out) {
            float *st = J->stats_out + r * J->spr;
            sn_k_stats_put(&f->x, st + L->sx, 1, 0, mx, rx);
            sn_k_stats_put(&f->y, st + L->sy, 1, 0, my, ry);
            sn_k_stats_put(&f->out, st + L->so, 1, 0, mo, ro);
        }
    }
}

void sn_d_fuse_fwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const float *x,
                   int64_t ldx, const float *y, int64_t ldy, const float *params, float *u,
                   int64_t ldu, float *h, int64_t ldh, float *stats) {
    job J;
    fuse_job(&J, ctx, f, R, D);
    J.a = x;
    J.lda = ldx;
    J.b = y;
    J.ldb = ldy;
    J.params = params;
    J.o = u;
    J.ldo = ldu;
    J.p = h;
    J.ldp = ldh;
    J.stats_out = stats;
    run_rows(ctx, &J, 0, R, fuse_fwd_task);
}

/* Fuse backward. a = dh, b = du (may be NULL), c = x, d = y, stats_in, o = dx, p = dy. */
typedef struct frow {
    const float *dh, *du, *x, *y;
} frow;

static frow fuse_row(const job *J, int64_t r) {
    frow w = {J->a + r * J->lda, J->b ? J->b + r * J->ldb : NULL, J->c + r * J->ldc,
              J->d + r * J->ldd};
    return w;
}

static sn_rfuse fuse_row_F(const job *J, int64_t r) {
    sn_rfuse F = sn_k_fuse_resolve(J->f, &J->L, J->D, J->params,
                                   J->stats_in ? J->stats_in + r * J->spr : NULL);
    F.nt = J->nt;
    return F;
}

static void fuse_row_dx(const job *J, const sn_rfuse *F, int64_t r, const frow *w) {
    J->K->fuse_dx(F, J->D, w->dh, w->du, w->x, w->y, J->o + r * J->ldo, J->p + r * J->ldp,
                  J->acc, J->accy);
}

/* the whole backward of rows [lo, hi) in one visit each; parameter gradients when with_pg */
static void fuse_bwd_rows(const job *J, int64_t lo, int64_t hi, int with_pg) {
    const sn_dfuse dp = sn_k_fuse_dparams(J->f, &J->L, J->D, with_pg ? J->dparams : NULL);
    for (int64_t r = lo; r < hi; r++) {
        sn_rfuse F = fuse_row_F(J, r);
        const frow w = fuse_row(J, r);
        J->K->fuse_bwd(&F, J->D, w.dh, w.du, w.x, w.y, J->o + r * J->ldo, J->p + r * J->ldp,
                       J->acc, J->accy, with_pg ? &dp : NULL);
    }
}

static void fuse_bwd_all_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    fuse_bwd_rows(J, lo, hi, 0);
}

/* phase 1 of a threaded block: the row reductions into J->red */
static void fuse_bwd_red_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++) {
        sn_rfuse F = fuse_row_F(J, r);
        const frow w = fuse_row(J, r);
        J->K->fuse_red(&F, J->D, w.dh, w.du, w.x, w.y);
        float *o = J->red + (r - J->r0) * 6;
        o[0] = F.oa, o[1] = F.ob, o[2] = F.xa, o[3] = F.xb, o[4] = F.ya, o[5] = F.yb;
    }
}

static sn_rfuse fuse_row_F_red(const job *J, int64_t r) {
    sn_rfuse F = fuse_row_F(J, r);
    const float *o = J->red + (r - J->r0) * 6;
    F.oa = o[0], F.ob = o[1], F.xa = o[2], F.xb = o[3], F.ya = o[4], F.yb = o[5];
    return F;
}

static const float *off(const float *p, int64_t j) { return p ? p + j : NULL; }
static float *offw(float *p, int64_t j) { return p ? p + j : NULL; }

/* phase 2: parameter gradients over the columns of task i, the block's rows in order */
static void fuse_bwd_pg_task(void *arg, int64_t i) {
    const job *J = arg;
    int64_t j0, j1;
    col_range(J->D, J->pieces, i, &j0, &j1);
    if (j0 >= j1) return;
    const sn_dfuse d = sn_k_fuse_dparams(J->f, &J->L, J->D, J->dparams);
    const sn_dfuse dp = {offw(d.gx, j0), offw(d.bx, j0), offw(d.gy, j0),
                         offw(d.by, j0), offw(d.go, j0), offw(d.bo, j0)};
    for (int64_t r = J->r0; r < J->r0 + J->nrows; r++) {
        sn_rfuse F = fuse_row_F_red(J, r);
        sn_rnorm *ns[3] = {&F.X, &F.Y, &F.O};
        for (int k = 0; k < 3; k++) {
            ns[k]->gamma = off(ns[k]->gamma, j0);
            ns[k]->beta = off(ns[k]->beta, j0);
        }
        const frow w = fuse_row(J, r);
        J->K->fuse_pg(&F, j1 - j0, w.dh + j0, off(w.du, j0), w.x + j0, w.y + j0, &dp);
    }
}

/* phase 3: the input gradients from the saved reductions */
static void fuse_bwd_dx_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++) {
        const sn_rfuse F = fuse_row_F_red(J, r);
        const frow w = fuse_row(J, r);
        fuse_row_dx(J, &F, r, &w);
    }
}

void sn_d_fuse_bwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const float *dh,
                   int64_t lddh, const float *du, int64_t lddu, const float *x, int64_t ldx,
                   const float *y, int64_t ldy, const float *params, const float *stats,
                   float *dx, int64_t lddx, float *dy, int64_t lddy, float *dparams,
                   uint32_t flags) {
    job J;
    fuse_job(&J, ctx, f, R, D);
    J.a = dh;
    J.lda = lddh;
    J.b = du;
    J.ldb = lddu;
    J.c = x;
    J.ldc = ldx;
    J.d = y;
    J.ldd = ldy;
    J.params = params;
    J.stats_in = stats;
    J.o = dx;
    J.ldo = lddx;
    J.p = dy;
    J.ldp = lddy;
    J.dparams = dparams;
    J.acc = (flags & SN_ACCUMULATE) != 0;
    J.accy = (flags & SN_ACCUMULATE_Y) != 0;
    if (!dparams) {
        run_rows(ctx, &J, 0, R, fuse_bwd_all_task);
        return;
    }
    if (row_pieces(ctx, R, D) == 1) {
        fuse_bwd_rows(&J, 0, R, 1);
        return;
    }
    float red[BLOCK_MAX * 6];
    J.red = red;
    const int64_t B = block_rows(D);
    for (int64_t b0 = 0; b0 < R; b0 += B) {
        const int64_t nb = R - b0 < B ? R - b0 : B;
        run_rows(ctx, &J, b0, nb, fuse_bwd_red_task);
        J.r0 = b0;
        J.nrows = nb;
        J.pieces = col_pieces(ctx, D);
        sn_ctx_par(ctx, J.pieces, fuse_bwd_pg_task, &J);
        run_rows(ctx, &J, b0, nb, fuse_bwd_dx_task);
    }
}

/* ---- elementwise --------------------------------------------------------------------------- */

/* a = z, b = u, c = y, o = xo, p = yo */
static void apply_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++)
        J->K->apply(J->a + r * J->lda, J->b + r * J->ldb, J->c + r * J->ldc, J->cc,
                    J->o + r * J->ldo, J->p + r * J->ldp, J->D, J->nt);
}

void sn_d_apply(const sn_ctx *ctx, int64_t R, int64_t D, float c, const float *z, int64_t ldz,
                const float *u, int64_t ldu, const float *y, int64_t ldy, float *xo, int64_t ldxo,
                float *yo, int64_t ldyo) {
    job J;
    memset(&J, 0, sizeof J);
    J.K = sn_ctx_kern(ctx);
    J.nt = big(R, D);
    J.D = D;
    J.cc = c;
    J.a = z, J.lda = ldz, J.b = u, J.ldb = ldu, J.c = y, J.ldc = ldy;
    J.o = xo, J.ldo = ldxo, J.p = yo, J.ldp = ldyo;
    run_rows(ctx, &J, 0, R, apply_task);
}

/* a, b, o */
static void add_div_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++)
        J->K->add_div(J->a + r * J->lda, J->b + r * J->ldb, J->cc, J->o + r * J->ldo, J->D,
                      J->acc, J->nt);
}

void sn_d_add_div(const sn_ctx *ctx, int64_t R, int64_t D, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float c, float *out, int64_t ldo, int acc) {
    job J;
    memset(&J, 0, sizeof J);
    J.K = sn_ctx_kern(ctx);
    J.nt = big(R, D);
    J.D = D;
    J.cc = c;
    J.acc = acc;
    J.a = a, J.lda = lda, J.b = b, J.ldb = ldb, J.o = out, J.ldo = ldo;
    run_rows(ctx, &J, 0, R, add_div_task);
}

/* a, b, o: o = cc * a + b */
static void axpy_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++)
        J->K->axpy(J->a + r * J->lda, J->b + r * J->ldb, J->cc, J->o + r * J->ldo, J->D, J->nt);
}

void sn_d_axpy(const sn_ctx *ctx, int64_t R, int64_t D, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float *out, int64_t ldo) {
    job J;
    memset(&J, 0, sizeof J);
    J.K = sn_ctx_kern(ctx);
    J.nt = big(R, D);
    J.D = D;
    J.cc = alpha;
    J.a = a, J.lda = lda, J.b = b, J.ldb = ldb, J.o = out, J.ldo = ldo;
    run_rows(ctx, &J, 0, R, axpy_task);
}

static void copy_task(void *arg, int64_t i) {
    const job *J = arg;
    ROWS_OF_TASK(J, i, lo, hi);
    for (int64_t r = lo; r < hi; r++)
        memmove(J->o + r * J->ldo, J->a + r * J->lda, (size_t)J->D * sizeof(float));
}

void sn_d_copy(const sn_ctx *ctx, int64_t R, int64_t D, const float *a, int64_t lda, float *out,
               int64_t ldo) {
    job J;
    memset(&J, 0, sizeof J);
    J.D = D;
    J.a = a, J.lda = lda, J.o = out, J.ldo = ldo;
    run_rows(ctx, &J, 0, R, copy_task);
}
