/* Portable scalar row kernels: the sn_kern_scalar table (see kernels.h).
 *
 * Reductions run over 8 independent partial sums combined in a fixed order at the end: the
 * compiler can keep them in vector registers without -ffast-math (it may not reassociate a
 * single float accumulator), and the result is the same on every run. */
#include "kernels.h"

#include <math.h>
#include <string.h>

#define LANES 8

static inline float lanes_sum(const float a[LANES]) {
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

static inline float gam(const float *gamma, int64_t j) { return gamma ? gamma[j] : 1.0f; }
static inline float bet(const float *beta, int64_t j) { return beta ? beta[j] : 0.0f; }

/* ---- statistics ---------------------------------------------------------------------------- */

static float sum(const float *v, int64_t n) {
    float a[LANES] = {0};
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++) a[k] += v[j + k];
    float t = 0.0f;
    for (; j < n; j++) t += v[j];
    return lanes_sum(a) + t;
}

/* sum of (v - m)^2 */
static float sum_sqdev(const float *v, int64_t n, float m) {
    float a[LANES] = {0};
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++) {
            float d = v[j + k] - m;
            a[k] += d * d;
        }
    float t = 0.0f;
    for (; j < n; j++) {
        float d = v[j] - m;
        t += d * d;
    }
    return lanes_sum(a) + t;
}

/* sn_k_stats_f64 on a row of floats (v) or of bf16 (v16, when v is NULL) */
static void stats_f64(const sn_norm *n, const float *v, const sn_bf16 *v16, int64_t W, float *m,
                      float *r) {
    if (n->kind != SN_NORM_LAYERNORM && n->kind != SN_NORM_RMSNORM) return;
    double s = 0.0, q = 0.0;
    for (int64_t j = 0; j < W; j++) {
        const float f = v ? v[j] : sn_k_bf16_widen(v16[j]);
        if (!isfinite(f)) return; /* NaN / infinity: keep propagating */
        s += f;
    }
    const double mean = n->kind == SN_NORM_LAYERNORM ? s / (double)W : 0.0;
    for (int64_t j = 0; j < W; j++) {
        const double d = (double)(v ? v[j] : sn_k_bf16_widen(v16[j])) - mean;
        q += d * d;
    }
    *m = (float)mean;
    *r = (float)(1.0 / sqrt(q / (double)W + (double)n->eps));
}

void sn_k_stats_f64(const sn_norm *n, const float *v, int64_t W, float *m, float *r) {
    stats_f64(n, v, NULL, W, m, r);
}

void sn_k_stats_f64_16(const sn_norm *n, const sn_bf16 *v, int64_t W, float *m, float *r) {
    stats_f64(n, NULL, v, W, m, r);
}

static void stats(const sn_norm *n, const float *v, int64_t W, float *m, float *r) {
    *m = 0.0f;
    *r = 1.0f;
    if (n->kind == SN_NORM_LAYERNORM) {
        float mean = sum(v, W) / (float)W;
        float var = sum_sqdev(v, W, mean) / (float)W;
        *m = mean;
        *r = 1.0f / sqrtf(var + n->eps);
    } else if (n->kind == SN_NORM_RMSNORM) {
        float ms = sum_sqdev(v, W, 0.0f) / (float)W;
        *r = 1.0f / sqrtf(ms + n->eps);
    }
    sn_k_stats_guard(n, v, W, m, r);
}

/* ---- one norm ------------------------------------------------------------------------------ */

static inline float nrm(const sn_rnorm *q, const float *v, int64_t j) {
    return gam(q->gamma, j) * ((v[j] - q->m) * q->r) + bet(q->beta, j);
}

static void norm_row(const sn_rnorm *q, const float *v, int64_t W, float *out) {
    for (int64_t j = 0; j < W; j++) out[j] = nrm(q, v, j);
}

static void norm_fwd(const sn_norm *n, const sn_rnorm *q0, const float *v, int64_t W, float *out,
                     float *m, float *r) {
    stats(n, v, W, m, r);
    sn_rnorm q = *q0;
    sn_k_set_stats(&q, n->kind, *m, *r);
    norm_row(&q, v, W, out);
}

static void norm_red(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float *sa,
                     float *sb) {
    float a[LANES] = {0}, b[LANES] = {0};
    float ta = 0.0f, tb = 0.0f;
    int64_t j = 0;
    for (; j + LANES <= W; j += LANES)
        for (int k = 0; k < LANES; k++) {
            float xh = (v[j + k] - q->m) * q->r, g = gam(q->gamma, j + k) * dout[j + k];
            a[k] += g;
            b[k] += g * xh;
        }
    for (; j < W; j++) {
        float xh = (v[j] - q->m) * q->r, g = gam(q->gamma, j) * dout[j];
        ta += g;
        tb += g * xh;
    }
    *sa = q->ca * (lanes_sum(a) + ta) / (float)W;
    *sb = q->cb * (lanes_sum(b) + tb) / (float)W;
}

static void norm_pg(const sn_rnorm *q, const float *dout, const float *v, int64_t n, float *dgamma,
                    float *dbeta) {
    const float m = q->m, r = q->r; /* locals: the stores below cannot change them */
    if (dgamma)
        for (int64_t j = 0; j < n; j++) dgamma[j] += dout[j] * ((v[j] - m) * r);
    if (dbeta)
        for (int64_t j = 0; j < n; j++) dbeta[j] += dout[j];
}

static void norm_dx(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float sa,
                    float sb, float *dv, int acc) {
    const sn_rnorm Q = *q; /* a local copy: the stores below cannot change it */
    for (int64_t j = 0; j < W; j++) {
        float xh = (v[j] - Q.m) * Q.r, g = gam(Q.gamma, j) * dout[j];
        float d = Q.r * (g - sa - xh * sb);
        dv[j] = acc ? dv[j] + d : d;
    }
}

static void norm_bwd(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float *dv,
                     int acc, float *dgamma, float *dbeta) {
    float sa, sb;
    norm_red(q, dout, v, W, &sa, &sb);
    norm_pg(q, dout, v, W, dgamma, dbeta);
    norm_dx(q, dout, v, W, sa, sb, dv, acc);
}

static void norm_bwd2(const sn_rnorm *q2, const float *const *dout2, const float *const *v2,
                      int64_t W, float *const *dv2, int acc, float *dgamma, float *dbeta) {
    norm_bwd(&q2[0], dout2[0], v2[0], W, dv2[0], acc, dgamma, dbeta);
    norm_bwd(&q2[1], dout2[1], v2[1], W, dv2[1], acc, dgamma, dbeta);
}

/* ---- dual-stream fuse ---------------------------------------------------------------------- */

static void stats2(const sn_norm *na, const float *va, const sn_norm *nb, const float *vb,
                   int64_t W, float *ma, float *ra, float *mb, float *rb) {
    stats(na, va, W, ma, ra);
    stats(nb, vb, W, mb, rb);
}

static void fuse_s(const sn_rfuse *F, int64_t D, const float *x, const float *y, float *u, float *h,
                   const sn_norm *no, float *mo, float *ro) {
    for (int64_t j = 0; j < D; j++) {
        float ux = nrm(&F->X, x, j);
        if (u) u[j] = ux;
        h[j] = ux + nrm(&F->Y, y, j);
    }
    stats(no, h, D, mo, ro);
}

static void fuse_fwd2(const sn_rfuse *F0, const sn_fuse *f, int64_t D, const float *const x[2],
                      const float *const y[2], float *const u[2], float *const h[2],
                      float st[2][6]) {
    sn_k_prefetch_rows(F0, D * (int64_t)sizeof(float));
    float s[SN_K_STACK_ROW_MAX];
    for (int q = 0; q < 2; q++) {
        sn_rfuse F = *F0;
        float *o = st[q];
        stats2(&f->x, x[q], &f->y, y[q], D, &o[0], &o[1], &o[2], &o[3]);
        F.X.m = o[0], F.X.r = o[1], F.Y.m = o[2], F.Y.r = o[3]; /* RMSNorm: m is 0 either way */
        fuse_s(&F, D, x[q], y[q], u[q], s, &f->out, &o[4], &o[5]);
        F.O.m = o[4], F.O.r = o[5];
        norm_row(&F.O, s, D, h[q]);
    }
}

/* The quantities of the fuse backward at column j, each defined once for fuse_red, fuse_pg,
 * fuse_dx and fuse_bwd_rows: xhat of v under N; N_out's xhat of s = N_x(x) + N_y(y) from xx,
 * yy; ds, N_out's backward of dh; a norm's input gradient r * (g - a - xhat * b). */
static inline float bwd_xh(const sn_rnorm *N, const float *v, int64_t j) {
    return (v[j] - N->m) * N->r;
}
static inline float bwd_xs(const sn_rnorm *X, const sn_rnorm *Y, const sn_rnorm *O, float xx,
                           float yy, int64_t j) {
    const float s =
        (gam(X->gamma, j) * xx + bet(X->beta, j)) + (gam(Y->gamma, j) * yy + bet(Y->beta, j));
    return (s - O->m) * O->r;
}
static inline float bwd_ds(const sn_rnorm *O, float oa, float ob, float dh, float xs, int64_t j) {
    return O->r * (gam(O->gamma, j) * dh - oa - xs * ob);
}
static inline float bwd_dv(const sn_rnorm *N, float g, float a, float b, float xh) {
    return N->r * (g - a - xh * b);
}

/* The recomputation shared by the backward pieces: one column j of a row. */
#define FUSE_BWD_ELEM(j)                                                                           \
    float xx = bwd_xh(X, x, j), yy = bwd_xh(Y, y, j);                                              \
    float xs = bwd_xs(X, Y, O, xx, yy, j);                                                         \
    float ds = bwd_ds(O, F->oa, F->ob, dh[j], xs, j);                                              \
    float dt = (du ? du[j] : 0.0f) + ds;                                                           \
    float gx = gam(X->gamma, j) * dt, gy = gam(Y->gamma, j) * ds

static void fuse_red(sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                     const float *y) {
    const sn_rnorm *X = &F->X, *Y = &F->Y, *O = &F->O;
    const float fD = (float)D;
    /* pass 1: N_out's reductions over g = gamma_out * dh, with s recomputed from x and y */
    float a[LANES] = {0}, b[LANES] = {0}, ta = 0.0f, tb = 0.0f;
    int64_t j = 0;
    for (; j + LANES <= D; j += LANES)
        for (int k = 0; k < LANES; k++) {
            float s = nrm(X, x, j + k) + nrm(Y, y, j + k);
            float xs = (s - O->m) * O->r, g = gam(O->gamma, j + k) * dh[j + k];
            a[k] += g;
            b[k] += g * xs;
        }
    for (; j < D; j++) {
        float s = nrm(X, x, j) + nrm(Y, y, j);
        float xs = (s - O->m) * O->r, g = gam(O->gamma, j) * dh[j];
        ta += g;
        tb += g * xs;
    }
    F->oa = O->ca * (lanes_sum(a) + ta) / fD;
    F->ob = O->cb * (lanes_sum(b) + tb) / fD;

    /* pass 2: ds = N_out backward, dt = du + ds; reductions of N_x over dt and N_y over ds */
    float ax[LANES] = {0}, bx[LANES] = {0}, ay[LANES] = {0}, by[LANES] = {0};
    float tax = 0.0f, tbx = 0.0f, tay = 0.0f, tby = 0.0f;
    for (j = 0; j + LANES <= D; j += LANES)
        for (int k = 0; k < LANES; k++) {
            FUSE_BWD_ELEM(j + k);
            ax[k] += gx;
            bx[k] += gx * xx;
            ay[k] += gy;
            by[k] += gy * yy;
        }
    for (; j < D; j++) {
        FUSE_BWD_ELEM(j);
        tax += gx;
        tbx += gx * xx;
        tay += gy;
        tby += gy * yy;
    }
    F->xa = X->ca * (lanes_sum(ax) + tax) / fD;
    F->xb = X->cb * (lanes_sum(bx) + tbx) / fD;
    F->ya = Y->ca * (lanes_sum(ay) + tay) / fD;
    F->yb = Y->cb * (lanes_sum(by) + tby) / fD;
}

static void fuse_pg(const sn_rfuse *F, int64_t n, const float *dh, const float *du, const float *x,
                    const float *y, const sn_dfuse *dp) {
    const sn_rnorm *X = &F->X, *Y = &F->Y, *O = &F->O;
    for (int64_t j = 0; j < n; j++) {
        FUSE_BWD_ELEM(j);
        (void)gx;
        (void)gy;
        if (dp->go) dp->go[j] += dh[j] * xs;
        if (dp->bo) dp->bo[j] += dh[j];
        if (dp->gx) dp->gx[j] += dt * xx;
        if (dp->bx) dp->bx[j] += dt;
        if (dp->gy) dp->gy[j] += ds * yy;
        if (dp->by) dp->by[j] += ds;
    }
}

static void fuse_dx(const sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                    const float *y, float *dx, float *dy, int accx, int accy) {
    const sn_rnorm *X = &F->X, *Y = &F->Y, *O = &F->O;
    /* du[j] is read before dx[j] is written: dx may be du */
    for (int64_t j = 0; j < D; j++) {
        FUSE_BWD_ELEM(j);
        float ddx = bwd_dv(X, gx, F->xa, F->xb, xx);
        float ddy = bwd_dv(Y, gy, F->ya, F->yb, yy);
        dx[j] = accx ? dx[j] + ddx : ddx;
        dy[j] = accy ? dy[j] + ddy : ddy;
    }
}
#undef FUSE_BWD_ELEM

/* The whole backward of one row, bitwise the same as fuse_red, fuse_pg and fuse_dx (the same
 * expressions on the same values) in fewer instructions: pass 1 keeps xx, yy and xs in stack rows
 * and pass 2 keeps dt and ds, so that the parameter and input gradients read them instead of
 * recomputing them. Rows wider than SN_K_STACK_ROW_MAX take the three pieces. */
static void fuse_bwd_rows(sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                          const float *y, float *dx, float *dy, int accx, int accy,
                          const sn_dfuse *dp) {
    float kx[SN_K_STACK_ROW_MAX], ky[SN_K_STACK_ROW_MAX], ks[SN_K_STACK_ROW_MAX],
        kt[SN_K_STACK_ROW_MAX], kd[SN_K_STACK_ROW_MAX];
    const sn_rnorm X = F->X, Y = F->Y, O = F->O; /* local copies: the stores cannot change them */
    const float fD = (float)D;
    /* pass 1: fuse_red's first sweep */
    float a[LANES] = {0}, b[LANES] = {0}, ta = 0.0f, tb = 0.0f;
    int64_t j = 0;
    for (; j <= D; j += LANES) {
        const int n = j + LANES <= D ? LANES : (int)(D - j), tail = j + LANES > D;
        for (int k = 0; k < n; k++) {
            const int64_t c = j + k;
            const float xx = bwd_xh(&X, x, c), yy = bwd_xh(&Y, y, c);
            const float xs = bwd_xs(&X, &Y, &O, xx, yy, c), g = gam(O.gamma, c) * dh[c];
            kx[c] = xx, ky[c] = yy, ks[c] = xs;
            if (tail) ta += g, tb += g * xs;
            else a[k] += g, b[k] += g * xs;
        }
    }
    const float oa = O.ca * (lanes_sum(a) + ta) / fD, ob = O.cb * (lanes_sum(b) + tb) / fD;
    F->oa = oa, F->ob = ob;
    /* pass 2: fuse_red's second sweep */
    float ax[LANES] = {0}, bx[LANES] = {0}, ay[LANES] = {0}, by[LANES] = {0};
    float tax = 0.0f, tbx = 0.0f, tay = 0.0f, tby = 0.0f;
    for (j = 0; j <= D; j += LANES) {
        const int n = j + LANES <= D ? LANES : (int)(D - j), tail = j + LANES > D;
        for (int k = 0; k < n; k++) {
            const int64_t c = j + k;
            const float ds = bwd_ds(&O, oa, ob, dh[c], ks[c], c);
            const float dt = (du ? du[c] : 0.0f) + ds;
            const float gx = gam(X.gamma, c) * dt, gy = gam(Y.gamma, c) * ds;
            kt[c] = dt, kd[c] = ds;
            if (tail) tax += gx, tbx += gx * kx[c], tay += gy, tby += gy * ky[c];
            else ax[k] += gx, bx[k] += gx * kx[c], ay[k] += gy, by[k] += gy * ky[c];
        }
    }
    const float xa = X.ca * (lanes_sum(ax) + tax) / fD, xb = X.cb * (lanes_sum(bx) + tbx) / fD;
    const float ya = Y.ca * (lanes_sum(ay) + tay) / fD, yb = Y.cb * (lanes_sum(by) + tby) / fD;
    F->xa = xa, F->xb = xb, F->ya = ya, F->yb = yb;
    /* fuse_pg's and fuse_dx's sweeps */
    if (dp) {
        const sn_dfuse P = *dp;
        for (j = 0; j < D; j++) {
            if (P.go) P.go[j] += dh[j] * ks[j];
            if (P.bo) P.bo[j] += dh[j];
            if (P.gx) P.gx[j] += kt[j] * kx[j];
            if (P.bx) P.bx[j] += kt[j];
            if (P.gy) P.gy[j] += kd[j] * ky[j];
            if (P.by) P.by[j] += kd[j];
        }
    }
    for (j = 0; j < D; j++) {
        const float ddx = bwd_dv(&X, gam(X.gamma, j) * kt[j], xa, xb, kx[j]);
        const float ddy = bwd_dv(&Y, gam(Y.gamma, j) * kd[j], ya, yb, ky[j]);
        dx[j] = accx ? dx[j] + ddx : ddx;
        dy[j] = accy ? dy[j] + ddy : ddy;
    }
}

static void fuse_bwd(sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                     const float *y, float *dx, float *dy, int accx, int accy, const sn_dfuse *dp) {
    sn_k_prefetch_rows(F, D * (int64_t)sizeof(float));
    if (D <= SN_K_STACK_ROW_MAX) {
        fuse_bwd_rows(F, D, dh, du, x, y, dx, dy, accx, accy, dp);
        return;
    }
    fuse_red(F, D, dh, du, x, y);
    if (dp) fuse_pg(F, D, dh, du, x, y, dp);
    fuse_dx(F, D, dh, du, x, y, dx, dy, accx, accy);
}

static void fuse_bwd2(sn_rfuse F[2], int64_t D, const float *const dh[2], const float *const du[2],
                      const float *const x[2], const float *const y[2], float *const dx[2],
                      float *const dy[2], int accx, int accy, const sn_dfuse *dp) {
    for (int q = 0; q < 2; q++)
        fuse_bwd(&F[q], D, dh[q], du[q], x[q], y[q], dx[q], dy[q], accx, accy, dp);
}

/* ---- elementwise --------------------------------------------------------------------------- */

static void add_div(const float *a, const float *b, float c, float *out, int64_t D, int acc,
                    int nt) {
    (void)nt;
    if (acc)
        for (int64_t j = 0; j < D; j++) out[j] += a[j] + b[j] / c;
    else
        for (int64_t j = 0; j < D; j++) out[j] = a[j] + b[j] / c;
}

static void apply(const float *z, const float *u, const float *y, float c, float *xo, float *yo,
                  int64_t D, int nt) {
    (void)nt;
    for (int64_t j = 0; j < D; j++) {
        const float zj = z[j];
        xo[j] = u[j] + zj / c;
        yo[j] = y[j] + zj;
    }
}

static void axpy(const float *a, const float *b, float alpha, float *out, int64_t D, int nt) {
    (void)nt;
    for (int64_t j = 0; j < D; j++) out[j] = alpha * a[j] + b[j];
}

static void fold(const float *s, int64_t lds, int64_t n, float *d, int64_t D) {
    for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < D; j++) d[j] += s[k * lds + j];
}

/* ---- Hyper-Connections --------------------------------------------------------------------- */

static void hc_mix(const float *const *in, int nin, const float *w, float *const *out, int nout,
                   int64_t D, int nt) {
    (void)nt;
    for (int64_t j = 0; j < D; j++) {
        float v[SN_K_HC_MATS];
        for (int k = 0; k < nin; k++) v[k] = in[k][j];
        for (int o = 0; o < nout; o++) {
            const float *wo = w + o * nin;
            float acc = wo[0] * v[0];
            for (int k = 1; k < nin; k++) acc = acc + wo[k] * v[k];
            out[o][j] = acc;
        }
    }
}

static void hc_dots(const float *const *a, int na, const float *const *b, int nb, int64_t D,
                    float *out) {
    for (int p = 0; p < na; p++)
        for (int q = 0; q < nb; q++) {
            float s = out[p * nb + q];
            for (int64_t j = 0; j < D; j++) s = s + a[p][j] * b[q][j];
            out[p * nb + q] = s;
        }
}

static void hc_proj(const float *x, int64_t D, const float *const *w, int nw, float *out) {
    for (int c = 0; c < nw; c++) {
        float s = out[c];
        for (int64_t j = 0; j < D; j++) s = s + x[j] * w[c][j];
        out[c] = s;
    }
}

static void hc_wmix(const float *const *w, int nw, const float *coef, float *out, int64_t D,
                    int nt) {
    (void)nt;
    for (int64_t j = 0; j < D; j++) {
        float acc = coef[0] * w[0][j];
        for (int c = 1; c < nw; c++) acc = acc + coef[c] * w[c][j];
        out[j] = acc;
    }
}

static void hc_wsum(const float *x, int64_t n, const float *coef, int nw, float *const *dw) {
    for (int c = 0; c < nw; c++)
        for (int64_t j = 0; j < n; j++) dw[c][j] += coef[c] * x[j];
}

const sn_kern sn_kern_scalar = {
    .norm_row = norm_row,
    .norm_s = norm_row,
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
    .copy = sn_k_copy_f32,
    .widen = sn_k_move_f32,
    .round = sn_k_move_f32,
    .fold = fold,
    /* pair_w_fwd, pair_w_bwd 0: stats2 and norm_bwd2 are two calls of the one-row functions */
};
