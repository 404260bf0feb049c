/* The scalar path's bf16 table (sn_kern16_scalar): each slot widens the bf16 rows it reads into
 * fp32 rows on its stack, runs the scalar fp32 slot on them and rounds the rows it wrote into
 * their bf16 destinations (an accumulated output is widened first). So every output is the
 * rounding of the fp32 slot's, and float outputs (statistics, parameter gradients) are its bits.
 * Rows and segments of at most SN_K16_ROW_MAX elements; the elementwise slots take any length,
 * in blocks. Stack: at most six rows of SN_K16_ROW_MAX floats (96 KiB: fuse_bwd, fuse_bwd2). */
#include "kernels.h"

#define K32   (&sn_kern_scalar)
#define ROW   SN_K16_ROW_MAX
#define BLOCK 1024 /* columns per block of the elementwise slots */

/* d = s widened (NULL: none); returns d or NULL. Not inlined, so that the compiler does not
 * take the rows it fills for rows read before they are written. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static const float *
wid(const sn_bf16 *s, int64_t n, float *d) {
    if (!s) return NULL;
    sn_k_bf16_widen_row(s, n, d);
    return d;
}
static void rnd(const float *s, int64_t n, sn_bf16 *d) { sn_k_bf16_round_row(s, n, d); }

static void norm_row(const sn_rnorm *q, const sn_bf16 *v, int64_t W, sn_bf16 *out) {
    float a[ROW];
    K32->norm_row(q, wid(v, W, a), W, a);
    rnd(a, W, out);
}

static void norm_s(const sn_rnorm *q, const float *s, int64_t W, sn_bf16 *out) {
    float a[ROW];
    K32->norm_row(q, s, W, a);
    rnd(a, W, out);
}

static void norm_fwd(const sn_norm *n, const sn_rnorm *q0, const sn_bf16 *v, int64_t W,
                     sn_bf16 *out, float *m, float *r) {
    float a[ROW];
    K32->norm_fwd(n, q0, wid(v, W, a), W, a, m, r);
    rnd(a, W, out);
}

static void norm_pg(const sn_rnorm *q, const sn_bf16 *dout, const sn_bf16 *v, int64_t n,
                    float *dgamma, float *dbeta) {
    float d[ROW], a[ROW];
    K32->norm_pg(q, wid(dout, n, d), wid(v, n, a), n, dgamma, dbeta);
}

static void norm_bwd(const sn_rnorm *q, const sn_bf16 *dout, const sn_bf16 *v, int64_t W,
                     sn_bf16 *dv, int acc, float *dgamma, float *dbeta) {
    float d[ROW], a[ROW], o[ROW];
    wid(dout, W, d);
    wid(v, W, a);
    if (acc) wid(dv, W, o);
    K32->norm_bwd(q, d, a, W, o, acc, dgamma, dbeta);
    rnd(o, W, dv);
}

static void norm_bwd2(const sn_rnorm *q, const sn_bf16 *const *dout, const sn_bf16 *const *v,
                      int64_t W, sn_bf16 *const *dv, int acc, float *dgamma, float *dbeta) {
    for (int k = 0; k < 2; k++) norm_bwd(&q[k], dout[k], v[k], W, dv[k], acc, dgamma, dbeta);
}

static void stats2(const sn_norm *na, const sn_bf16 *va, const sn_norm *nb, const sn_bf16 *vb,
                   int64_t W, float *ma, float *ra, float *mb, float *rb) {
    float a[ROW], b[ROW];
    K32->stats2(na, wid(va, W, a), nb, wid(vb, W, b), W, ma, ra, mb, rb);
}

static void fuse_s(const sn_rfuse *F, int64_t D, const sn_bf16 *x, const sn_bf16 *y, sn_bf16 *u,
                   float *s, const sn_norm *no, float *mo, float *ro) {
    float a[ROW], b[ROW], c[ROW];
    K32->fuse_s(F, D, wid(x, D, a), wid(y, D, b), u ? c : NULL, s, no, mo, ro);
    if (u) rnd(c, D, u);
}

/* F's prefetches of bf16 rows, at once (the fp32 slot would take them for fp32 rows) */
static sn_rfuse pf_done(const sn_rfuse *F, int64_t D) {
    sn_rfuse G = *F;
    sn_k_prefetch_rows(&G, D * (int64_t)sizeof(sn_bf16));
    G.npf = 0;
    return G;
}

static void fuse_fwd2(const sn_rfuse *F0, const sn_fuse *f, int64_t D, const sn_bf16 *const x[2],
                      const sn_bf16 *const y[2], sn_bf16 *const u[2], sn_bf16 *const h[2],
                      float st[2][6]) {
    float b[8][SN_K_STACK_ROW_MAX];
    const sn_rfuse G = pf_done(F0, D);
    const float *const xs[2] = {wid(x[0], D, b[0]), wid(x[1], D, b[1])};
    const float *const ys[2] = {wid(y[0], D, b[2]), wid(y[1], D, b[3])};
    float *const us[2] = {u[0] ? b[6] : NULL, u[1] ? b[7] : NULL};
    float *const hs[2] = {b[4], b[5]};
    K32->fuse_fwd2(&G, f, D, xs, ys, us, hs, st);
    for (int q = 0; q < 2; q++) {
        if (u[q]) rnd(b[6 + q], D, u[q]);
        rnd(b[4 + q], D, h[q]);
    }
}

static void fuse_red(sn_rfuse *F, int64_t D, const sn_bf16 *dh, const sn_bf16 *du, const sn_bf16 *x,
                     const sn_bf16 *y) {
    float b[4][ROW];
    K32->fuse_red(F, D, wid(dh, D, b[0]), wid(du, D, b[1]), wid(x, D, b[2]), wid(y, D, b[3]));
}

static void fuse_pg(const sn_rfuse *F, int64_t n, const sn_bf16 *dh, const sn_bf16 *du,
                    const sn_bf16 *x, const sn_bf16 *y, const sn_dfuse *dp) {
    float b[4][ROW];
    K32->fuse_pg(F, n, wid(dh, n, b[0]), wid(du, n, b[1]), wid(x, n, b[2]), wid(y, n, b[3]), dp);
}

/* A staged backward row: dh, du (NULL: none), x, y widened; dx and dy widened when accumulated
 * into (b holds six rows of D floats) */
typedef struct stage {
    const float *dh, *du, *x, *y;
    float *dx, *dy;
} stage;

static stage stage_of(float *b, int64_t D, const sn_bf16 *dh, const sn_bf16 *du, const sn_bf16 *x,
                      const sn_bf16 *y, const sn_bf16 *dx, const sn_bf16 *dy, int accx, int accy) {
    stage w = {wid(dh, D, b),        wid(du, D, b + D), wid(x, D, b + 2 * D),
               wid(y, D, b + 3 * D), b + 4 * D,         b + 5 * D};
    if (accx) wid(dx, D, w.dx);
    if (accy) wid(dy, D, w.dy);
    return w;
}

static void fuse_dx(const sn_rfuse *F, int64_t D, const sn_bf16 *dh, const sn_bf16 *du,
                    const sn_bf16 *x, const sn_bf16 *y, sn_bf16 *dx, sn_bf16 *dy, int accx,
                    int accy) {
    float b[6 * ROW];
    const stage w = stage_of(b, D, dh, du, x, y, dx, dy, accx, accy);
    K32->fuse_dx(F, D, w.dh, w.du, w.x, w.y, w.dx, w.dy, accx, accy);
    rnd(w.dx, D, dx);
    rnd(w.dy, D, dy);
}

static void fuse_bwd(sn_rfuse *F, int64_t D, const sn_bf16 *dh, const sn_bf16 *du, const sn_bf16 *x,
                     const sn_bf16 *y, sn_bf16 *dx, sn_bf16 *dy, int accx, int accy,
                     const sn_dfuse *dp) {
    float b[6 * ROW];
    sn_rfuse G = pf_done(F, D);
    const stage w = stage_of(b, D, dh, du, x, y, dx, dy, accx, accy);
    K32->fuse_bwd(&G, D, w.dh, w.du, w.x, w.y, w.dx, w.dy, accx, accy, dp);
    rnd(w.dx, D, dx);
    rnd(w.dy, D, dy);
}

/* two staged rows where they fit (the fp32 pair kernel), else fuse_bwd on each: the same bits */
static void fuse_bwd2(sn_rfuse F[2], int64_t D, const sn_bf16 *const dh[2],
                      const sn_bf16 *const du[2], const sn_bf16 *const x[2],
                      const sn_bf16 *const y[2], sn_bf16 *const dx[2], sn_bf16 *const dy[2],
                      int accx, int accy, const sn_dfuse *dp) {
    float b[6 * ROW];
    if (12 * D > 6 * ROW) {
        for (int q = 0; q < 2; q++)
            fuse_bwd(&F[q], D, dh[q], du[q], x[q], y[q], dx[q], dy[q], accx, accy, dp);
        return;
    }
    sn_rfuse G[2] = {pf_done(&F[0], D), pf_done(&F[1], D)};
    stage w[2];
    for (int q = 0; q < 2; q++)
        w[q] = stage_of(b + q * 6 * D, D, dh[q], du[q], x[q], y[q], dx[q], dy[q], accx, accy);
    const float *const dhs[2] = {w[0].dh, w[1].dh}, *const dus[2] = {w[0].du, w[1].du};
    const float *const xs[2] = {w[0].x, w[1].x}, *const ys[2] = {w[0].y, w[1].y};
    float *const dxs[2] = {w[0].dx, w[1].dx}, *const dys[2] = {w[0].dy, w[1].dy};
    K32->fuse_bwd2(G, D, dhs, dus, xs, ys, dxs, dys, accx, accy, dp);
    for (int q = 0; q < 2; q++) {
        rnd(w[q].dx, D, dx[q]);
        rnd(w[q].dy, D, dy[q]);
    }
}

/* the elementwise slots, BLOCK columns at a time (elementwise: the blocks change no bit) */
#define BLOCKS(D, ...)                                                                             \
    for (int64_t j = 0; j < (D); j += BLOCK) {                                                     \
        const int64_t n = (D)-j < BLOCK ? (D)-j : BLOCK;                                           \
        __VA_ARGS__                                                                                \
    }

static void add_div(const sn_bf16 *a, const sn_bf16 *b, float c, sn_bf16 *out, int64_t D, int acc,
                    int nt) {
    (void)nt;
    float p[BLOCK], q[BLOCK], o[BLOCK];
    BLOCKS(D, {
        if (acc) wid(out + j, n, o);
        K32->add_div(wid(a + j, n, p), wid(b + j, n, q), c, o, n, acc, 0);
        rnd(o, n, out + j);
    })
}

static void apply(const sn_bf16 *z, const sn_bf16 *u, const sn_bf16 *y, float c, sn_bf16 *xo,
                  sn_bf16 *yo, int64_t D, int nt) {
    (void)nt;
    float p[BLOCK], q[BLOCK], o[BLOCK];
    BLOCKS(D, {
        K32->apply(wid(z + j, n, p), wid(u + j, n, q), wid(y + j, n, o), c, q, o, n, 0);
        rnd(q, n, xo + j);
        rnd(o, n, yo + j);
    })
}

static void axpy(const sn_bf16 *a, const sn_bf16 *b, float alpha, sn_bf16 *out, int64_t D, int nt) {
    (void)nt;
    float p[BLOCK], q[BLOCK];
    BLOCKS(D, {
        K32->axpy(wid(a + j, n, p), wid(b + j, n, q), alpha, p, n, 0);
        rnd(p, n, out + j);
    })
}

/* Hyper-Connections: columns in blocks of HC_BLOCK, every input of a block widened before any
 * output of it is rounded (so an output may equal an input, as in the fp32 slot) */
#define HC_BLOCK 128
static void hc_mix(const sn_bf16 *const *in, int nin, const float *w, sn_bf16 *const *out, int nout,
                   int64_t D, int nt) {
    (void)nt;
    float v[SN_K_HC_MATS][HC_BLOCK], o[SN_K_HC_MATS][HC_BLOCK];
    const float *vp[SN_K_HC_MATS];
    float *op[SN_K_HC_MATS];
    for (int k = 0; k < SN_K_HC_MATS; k++) vp[k] = v[k], op[k] = o[k];
    for (int64_t j = 0; j < D; j += HC_BLOCK) {
        const int64_t n = D - j < HC_BLOCK ? D - j : HC_BLOCK;
        for (int k = 0; k < nin; k++) wid(in[k] + j, n, v[k]);
        K32->hc_mix(vp, nin, w, op, nout, n, 0);
        for (int k = 0; k < nout; k++) rnd(o[k], n, out[k] + j);
    }
}

/* the fp32 slot's sums carried over the blocks: the same column order, the same bits */
static void hc_dots(const sn_bf16 *const *a, int na, const sn_bf16 *const *b, int nb, int64_t D,
                    float *out) {
    float va[SN_K_HC_MATS][HC_BLOCK], vb[SN_K_HC_MATS][HC_BLOCK];
    const float *ap[SN_K_HC_MATS], *bp[SN_K_HC_MATS];
    for (int k = 0; k < SN_K_HC_MATS; k++) ap[k] = va[k], bp[k] = vb[k];
    for (int64_t j = 0; j < D; j += HC_BLOCK) {
        const int64_t n = D - j < HC_BLOCK ? D - j : HC_BLOCK;
        for (int k = 0; k < na; k++) wid(a[k] + j, n, va[k]);
        for (int k = 0; k < nb; k++) wid(b[k] + j, n, vb[k]);
        K32->hc_dots(ap, na, bp, nb, n, out);
    }
}

static void hc_proj(const sn_bf16 *x, int64_t D, const float *const *w, int nw, float *out) {
    float v[HC_BLOCK];
    const float *wj[SN_K_HC_MATS];
    for (int64_t j = 0; j < D; j += HC_BLOCK) {
        const int64_t n = D - j < HC_BLOCK ? D - j : HC_BLOCK;
        for (int c = 0; c < nw; c++) wj[c] = w[c] + j;
        K32->hc_proj(wid(x + j, n, v), n, wj, nw, out);
    }
}

static void hc_wmix(const float *const *w, int nw, const float *coef, sn_bf16 *out, int64_t D,
                    int nt) {
    (void)nt;
    float o[HC_BLOCK];
    const float *wj[SN_K_HC_MATS];
    for (int64_t j = 0; j < D; j += HC_BLOCK) {
        const int64_t n = D - j < HC_BLOCK ? D - j : HC_BLOCK;
        for (int c = 0; c < nw; c++) wj[c] = w[c] + j;
        K32->hc_wmix(wj, nw, coef, o, n, 0);
        rnd(o, n, out + j);
    }
}

static void hc_wsum(const sn_bf16 *x, int64_t n, const float *coef, int nw, float *const *dw) {
    float v[HC_BLOCK];
    float *dj[SN_K_HC_MATS];
    for (int64_t j = 0; j < n; j += HC_BLOCK) {
        const int64_t m = n - j < HC_BLOCK ? n - j : HC_BLOCK;
        for (int c = 0; c < nw; c++) dj[c] = dw[c] + j;
        K32->hc_wsum(wid(x + j, m, v), m, coef, nw, dj);
    }
}

static void copy(const sn_bf16 *a, sn_bf16 *out, int64_t D) {
    float p[BLOCK];
    BLOCKS(D, { rnd(wid(a + j, n, p), n, out + j); })
}

/* float rows: the fp32 slot itself */
static void fold(const float *s, int64_t lds, int64_t n, float *d, int64_t D) {
    K32->fold(s, lds, n, d, D);
}

const sn_kern16 sn_kern16_scalar = {
    .norm_row = norm_row,
    .norm_s = norm_s,
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
    .copy = copy,
    .widen = sn_k_bf16_widen_row,
    .round = sn_k_bf16_round_row,
    .fold = fold,
    /* pair_w_fwd, pair_w_bwd 0: stats2 and norm_bwd2 are two calls of the one-row functions */
};
