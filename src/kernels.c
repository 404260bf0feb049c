/* Portable row kernels (see kernels.h).
 *
 * Reductions run over 8 independent partial sums combined in a fixed order at the end: the
 * compiler can keep them in vector registers without -ffast-math (it may not reassociate a
 * single float accumulator), and the result is the same on every run. */
#include "kernels.h"

#include <math.h>

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

void sn_k_stats(const sn_norm *n, const float *v, int64_t W, float *m, float *r) {
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
}

sn_rnorm sn_k_resolve(const sn_norm *n, int64_t W, const float *params, float m, float r) {
    sn_rnorm q = {0.0f, 1.0f, 0.0f, 0.0f, NULL, NULL};
    if (n->kind == SN_NORM_IDENTITY) return q;
    if (n->kind != SN_NORM_SCALE) {
        q.r = r;
        q.cb = 1.0f;
    }
    if (n->kind == SN_NORM_LAYERNORM) {
        q.m = m;
        q.ca = 1.0f;
    }
    if (n->affine != SN_AFFINE_NONE) q.gamma = params;
    if (n->affine == SN_AFFINE_SCALE_SHIFT) q.beta = params + W;
    return q;
}

void sn_k_stats_put(const sn_norm *n, float *blk, int64_t ng, int64_t g, float m, float r) {
    if (n->kind == SN_NORM_LAYERNORM) {
        blk[g] = m;
        blk[ng + g] = r;
    } else if (n->kind == SN_NORM_RMSNORM) {
        blk[g] = r;
    }
}

void sn_k_stats_get(const sn_norm *n, const float *blk, int64_t ng, int64_t g, float *m,
                    float *r) {
    *m = 0.0f;
    *r = 1.0f;
    if (n->kind == SN_NORM_LAYERNORM) {
        *m = blk[g];
        *r = blk[ng + g];
    } else if (n->kind == SN_NORM_RMSNORM) {
        *r = blk[g];
    }
}

/* ---- one norm ------------------------------------------------------------------------------ */

static inline float nrm(const sn_rnorm *q, const float *v, int64_t j) {
    return gam(q->gamma, j) * ((v[j] - q->m) * q->r) + bet(q->beta, j);
}

void sn_k_norm_row(const sn_rnorm *q, const float *v, int64_t W, float *out) {
    for (int64_t j = 0; j < W; j++) out[j] = nrm(q, v, j);
}

void sn_k_norm_bwd_row(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float *dv,
                       int acc, float *dgamma, float *dbeta) {
    /* pass 1: mean(g) and mean(g * xhat), and the parameter gradients */
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
    if (dgamma)
        for (j = 0; j < W; j++) dgamma[j] += dout[j] * ((v[j] - q->m) * q->r);
    if (dbeta)
        for (j = 0; j < W; j++) dbeta[j] += dout[j];
    float ma = q->ca * (lanes_sum(a) + ta) / (float)W;
    float mb = q->cb * (lanes_sum(b) + tb) / (float)W;
    /* pass 2: the input gradient */
    for (j = 0; j < W; j++) {
        float xh = (v[j] - q->m) * q->r, g = gam(q->gamma, j) * dout[j];
        float d = q->r * (g - ma - xh * mb);
        dv[j] = acc ? dv[j] + d : d;
    }
}

/* ---- dual-stream fuse ---------------------------------------------------------------------- */

/* Parameter block of each of the fuse's norms, and of their stats within a row block. */
typedef struct fuse_layout {
    int64_t px, py, po; /* parameter offsets */
    int64_t sx, sy, so; /* stats offsets within a row block */
} fuse_layout;

static fuse_layout layout_of(const sn_fuse *f, int64_t D) {
    fuse_layout L;
    int64_t nx = 0, ny = 0;
    if (f->x.kind != SN_NORM_IDENTITY && f->x.affine != SN_AFFINE_NONE)
        nx = f->x.affine == SN_AFFINE_SCALE_SHIFT ? 2 * D : D;
    if (f->y.kind != SN_NORM_IDENTITY && f->y.affine != SN_AFFINE_NONE)
        ny = f->y.affine == SN_AFFINE_SCALE_SHIFT ? 2 * D : D;
    L.px = 0;
    L.py = nx;
    L.po = nx + ny;
    int64_t kx = f->x.kind == SN_NORM_LAYERNORM ? 2 : f->x.kind == SN_NORM_RMSNORM ? 1 : 0;
    int64_t ky = f->y.kind == SN_NORM_LAYERNORM ? 2 : f->y.kind == SN_NORM_RMSNORM ? 1 : 0;
    L.sx = 0;
    L.sy = kx;
    L.so = kx + ky;
    return L;
}

void sn_k_fuse_fwd_row(const sn_fuse *f, int64_t D, const float *x, const float *y,
                       const float *params, float *u, float *h, float *stats) {
    fuse_layout L = layout_of(f, D);
    float mx, rx, my, ry, mo, ro;
    sn_k_stats(&f->x, x, D, &mx, &rx);
    sn_k_stats(&f->y, y, D, &my, &ry);
    sn_rnorm X = sn_k_resolve(&f->x, D, params ? params + L.px : NULL, mx, rx);
    sn_rnorm Y = sn_k_resolve(&f->y, D, params ? params + L.py : NULL, my, ry);
    /* s = N_x(x) + N_y(y), built in h (h aliases nothing) */
    for (int64_t j = 0; j < D; j++) {
        float ux = nrm(&X, x, j);
        if (u) u[j] = ux;
        h[j] = ux + nrm(&Y, y, j);
    }
    sn_k_stats(&f->out, h, D, &mo, &ro);
    sn_rnorm O = sn_k_resolve(&f->out, D, params ? params + L.po : NULL, mo, ro);
    if (f->out.kind != SN_NORM_IDENTITY) sn_k_norm_row(&O, h, D, h);
    if (stats) {
        sn_k_stats_put(&f->x, stats + L.sx, 1, 0, mx, rx);
        sn_k_stats_put(&f->y, stats + L.sy, 1, 0, my, ry);
        sn_k_stats_put(&f->out, stats + L.so, 1, 0, mo, ro);
    }
}

void sn_k_fuse_bwd_row(const sn_fuse *f, int64_t D, const float *dh, const float *du,
                       const float *x, const float *y, const float *params, const float *stats,
                       float *dx, float *dy, float *dparams, uint32_t flags) {
    fuse_layout L = layout_of(f, D);
    float mx, rx, my, ry, mo, ro;
    /* stats and params are NULL when all three norms have none: no offset may be applied */
    sn_k_stats_get(&f->x, stats ? stats + L.sx : NULL, 1, 0, &mx, &rx);
    sn_k_stats_get(&f->y, stats ? stats + L.sy : NULL, 1, 0, &my, &ry);
    sn_k_stats_get(&f->out, stats ? stats + L.so : NULL, 1, 0, &mo, &ro);
    sn_rnorm X = sn_k_resolve(&f->x, D, params ? params + L.px : NULL, mx, rx);
    sn_rnorm Y = sn_k_resolve(&f->y, D, params ? params + L.py : NULL, my, ry);
    sn_rnorm O = sn_k_resolve(&f->out, D, params ? params + L.po : NULL, mo, ro);
    sn_rnorm dP = {0};
    sn_rnorm dX = dparams ? sn_k_resolve(&f->x, D, dparams + L.px, 0, 0) : dP;
    sn_rnorm dY = dparams ? sn_k_resolve(&f->y, D, dparams + L.py, 0, 0) : dP;
    sn_rnorm dO = dparams ? sn_k_resolve(&f->out, D, dparams + L.po, 0, 0) : dP;
    float *dgx = (float *)dX.gamma, *dbx = (float *)dX.beta;
    float *dgy = (float *)dY.gamma, *dby = (float *)dY.beta;
    float *dgo = (float *)dO.gamma, *dbo = (float *)dO.beta;
    const float fD = (float)D;

    /* pass 1: N_out's reductions over g = gamma_out * dh, with s recomputed from x and y */
    float a[LANES] = {0}, b[LANES] = {0}, ta = 0.0f, tb = 0.0f;
    int64_t j = 0;
    for (; j + LANES <= D; j += LANES)
        for (int k = 0; k < LANES; k++) {
            float s = nrm(&X, x, j + k) + nrm(&Y, y, j + k);
            float xs = (s - O.m) * O.r, g = gam(O.gamma, j + k) * dh[j + k];
            a[k] += g;
            b[k] += g * xs;
        }
    for (; j < D; j++) {
        float s = nrm(&X, x, j) + nrm(&Y, y, j);
        float xs = (s - O.m) * O.r, g = gam(O.gamma, j) * dh[j];
        ta += g;
        tb += g * xs;
    }
    const float oa = O.ca * (lanes_sum(a) + ta) / fD, ob = O.cb * (lanes_sum(b) + tb) / fD;

    /* pass 2: ds = N_out backward, dt = du + ds; reductions of N_x over dt and N_y over ds;
     * every parameter gradient */
    float ax[LANES] = {0}, bx[LANES] = {0}, ay[LANES] = {0}, by[LANES] = {0};
    float tax = 0.0f, tbx = 0.0f, tay = 0.0f, tby = 0.0f;
#define FUSE_BWD_ELEM(j)                                                                          \
    float xx = (x[j] - X.m) * X.r, yy = (y[j] - Y.m) * Y.r;                                       \
    float s = (gam(X.gamma, j) * xx + bet(X.beta, j)) + (gam(Y.gamma, j) * yy + bet(Y.beta, j));  \
    float xs = (s - O.m) * O.r;                                                                   \
    float ds = O.r * (gam(O.gamma, j) * dh[j] - oa - xs * ob);                                    \
    float dt = (du ? du[j] : 0.0f) + ds;                                                          \
    float gx = gam(X.gamma, j) * dt, gy = gam(Y.gamma, j) * ds
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
    if (dparams)
        for (j = 0; j < D; j++) {
            FUSE_BWD_ELEM(j);
            (void)gx;
            (void)gy;
            if (dgo) dgo[j] += dh[j] * xs;
            if (dbo) dbo[j] += dh[j];
            if (dgx) dgx[j] += dt * xx;
            if (dbx) dbx[j] += dt;
            if (dgy) dgy[j] += ds * yy;
            if (dby) dby[j] += ds;
        }
    const float xa = X.ca * (lanes_sum(ax) + tax) / fD, xb = X.cb * (lanes_sum(bx) + tbx) / fD;
    const float ya = Y.ca * (lanes_sum(ay) + tay) / fD, yb = Y.cb * (lanes_sum(by) + tby) / fD;

    /* pass 3: the input gradients (dx may be du: du[j] is read before dx[j] is written) */
    const int accx = (flags & SN_ACCUMULATE) != 0, accy = (flags & SN_ACCUMULATE_Y) != 0;
    for (j = 0; j < D; j++) {
        FUSE_BWD_ELEM(j);
        float ddx = X.r * (gx - xa - xx * xb);
        float ddy = Y.r * (gy - ya - yy * yb);
        dx[j] = accx ? dx[j] + ddx : ddx;
        dy[j] = accy ? dy[j] + ddy : ddy;
    }
#undef FUSE_BWD_ELEM
}

/* ---- elementwise --------------------------------------------------------------------------- */

void sn_k_add_div_row(const float *a, const float *b, float c, float *out, int64_t D, int acc) {
    if (acc)
        for (int64_t j = 0; j < D; j++) out[j] += a[j] + b[j] / c;
    else
        for (int64_t j = 0; j < D; j++) out[j] = a[j] + b[j] / c;
}

void sn_k_axpy_row(float alpha, const float *a, const float *b, float *out, int64_t D) {
    for (int64_t j = 0; j < D; j++) out[j] = alpha * a[j] + b[j];
}
