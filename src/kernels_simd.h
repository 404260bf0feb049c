/* SIMD row kernels, written once for any vector width. Included by kernels_avx2.c and
 * kernels_avx512.c, each compiled with its own -m flags, after they define:
 *   V, M          the vector and lane-mask types; VW the number of float lanes
 *   vld vst       unaligned load / store;  vldm vstm  masked load / store (lanes off: 0 / kept)
 *   vmaskz        zero the lanes a mask leaves off;  mask_n(k) the first k lanes (0 < k < VW)
 *   MFULL         a mask value for full vectors (never used by a masked operation)
 *   vset1 vadd vsub vmul vdiv vfma(a,b,c)=a*b+c  vfnma(a,b,c)=c-a*b  vfms(a,b,c)=a*b-c
 *   hsum          horizontal sum in a fixed order
 *   SN_KERN_TABLE the name of the sn_kern table to define
 * Every column, including the last partial vector (handled with masks), goes through the same
 * vector arithmetic, so results do not depend on where a row starts or how columns are split.
 * Each quantity has one definition below (xhat, s, ds, ...), used by every kernel that needs it:
 * the backward recomputes the forward's s with exactly the forward's arithmetic. */
#include <math.h>

#include "kernels.h"

/* Runs BODY for the columns [0, n) in steps of VW; BODY sees j (first column), t (1 on the
 * partial last step) and m (its mask). The body is the variadic part, so it may hold commas. */
#define COLS(n, ...)                                                                              \
    do {                                                                                          \
        int64_t j = 0;                                                                            \
        for (; j + VW <= (n); j += VW) {                                                          \
            const int t = 0;                                                                      \
            const M m = MFULL;                                                                    \
            __VA_ARGS__                                                                           \
        }                                                                                         \
        if (j < (n)) {                                                                            \
            const int t = 1;                                                                      \
            const M m = mask_n((int)((n) - j));                                                   \
            __VA_ARGS__                                                                           \
        }                                                                                         \
    } while (0)

static inline V LD(const float *p, int t, M m) { return t ? vldm(p, m) : vld(p); }
static inline void ST(float *p, V v, int t, M m) {
    if (t)
        vstm(p, m, v);
    else
        vst(p, v);
}
/* the lanes a partial step leaves off contribute 0 to reductions */
static inline V KEEP(V v, int t, M m) { return t ? vmaskz(m, v) : v; }
static inline V GAM(const float *g, int64_t j, int t, M m) {
    return g ? LD(g + j, t, m) : vset1(1.0f);
}
static inline V BET(const float *b, int64_t j, int t, M m) {
    return b ? LD(b + j, t, m) : vset1(0.0f);
}

/* xhat = (v - m) * r */
static inline V XHAT(const sn_rnorm *q, V v) { return vmul(vsub(v, vset1(q->m)), vset1(q->r)); }
/* gamma * xhat + beta */
static inline V NRM(const sn_rnorm *q, V xh, int64_t j, int t, M m) {
    return vfma(GAM(q->gamma, j, t, m), xh, BET(q->beta, j, t, m));
}

/* ---- statistics ---------------------------------------------------------------------------- */

static float vsum(const float *v, int64_t n) {
    V a = vset1(0.0f);
    COLS(n, { a = vadd(a, KEEP(LD(v + j, t, m), t, m)); });
    return hsum(a);
}

static float vsum_sqdev(const float *v, int64_t n, float mean) {
    V a = vset1(0.0f);
    const V mu = vset1(mean);
    COLS(n, {
        V d = KEEP(vsub(LD(v + j, t, m), mu), t, m);
        a = vfma(d, d, a);
    });
    return hsum(a);
}

static void stats(const sn_norm *n, const float *v, int64_t W, float *m, float *r) {
    *m = 0.0f;
    *r = 1.0f;
    if (n->kind == SN_NORM_LAYERNORM) {
        float mean = vsum(v, W) / (float)W;
        float var = vsum_sqdev(v, W, mean) / (float)W;
        *m = mean;
        *r = 1.0f / sqrtf(var + n->eps);
    } else if (n->kind == SN_NORM_RMSNORM) {
        float ms = vsum_sqdev(v, W, 0.0f) / (float)W;
        *r = 1.0f / sqrtf(ms + n->eps);
    }
}

/* ---- one norm ------------------------------------------------------------------------------ */

static void norm_row(const sn_rnorm *q, const float *v, int64_t W, float *out) {
    COLS(W, { ST(out + j, NRM(q, XHAT(q, LD(v + j, t, m)), j, t, m), t, m); });
}

static void norm_red(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float *sa,
                     float *sb) {
    V a = vset1(0.0f), b = vset1(0.0f);
    COLS(W, {
        V xh = XHAT(q, LD(v + j, t, m));
        V g = KEEP(vmul(GAM(q->gamma, j, t, m), LD(dout + j, t, m)), t, m);
        a = vadd(a, g);
        b = vfma(g, xh, b);
    });
    *sa = q->ca * hsum(a) / (float)W;
    *sb = q->cb * hsum(b) / (float)W;
}

static void norm_pg(const sn_rnorm *q, const float *dout, const float *v, int64_t n,
                    float *dgamma, float *dbeta) {
    if (dgamma && dbeta)
        COLS(n, {
            V d = LD(dout + j, t, m);
            ST(dgamma + j, vfma(d, XHAT(q, LD(v + j, t, m)), LD(dgamma + j, t, m)), t, m);
            ST(dbeta + j, vadd(LD(dbeta + j, t, m), d), t, m);
        });
    else if (dgamma)
        COLS(n, {
            V d = LD(dout + j, t, m);
            ST(dgamma + j, vfma(d, XHAT(q, LD(v + j, t, m)), LD(dgamma + j, t, m)), t, m);
        });
    else if (dbeta)
        COLS(n, { ST(dbeta + j, vadd(LD(dbeta + j, t, m), LD(dout + j, t, m)), t, m); });
}

static void norm_dx(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float sa,
                    float sb, float *dv, int acc) {
    const V r = vset1(q->r), va = vset1(sa), vb = vset1(sb);
    if (acc)
        COLS(W, {
            V xh = XHAT(q, LD(v + j, t, m));
            V g = vmul(GAM(q->gamma, j, t, m), LD(dout + j, t, m));
            V d = vmul(r, vfnma(xh, vb, vsub(g, va)));
            ST(dv + j, vadd(LD(dv + j, t, m), d), t, m);
        });
    else
        COLS(W, {
            V xh = XHAT(q, LD(v + j, t, m));
            V g = vmul(GAM(q->gamma, j, t, m), LD(dout + j, t, m));
            ST(dv + j, vmul(r, vfnma(xh, vb, vsub(g, va))), t, m);
        });
}

/* ---- dual-stream fuse ---------------------------------------------------------------------- */

static void fuse_s(const sn_rfuse *F, int64_t D, const float *x, const float *y, float *u,
                   float *h) {
    if (u)
        COLS(D, {
            V ux = NRM(&F->X, XHAT(&F->X, LD(x + j, t, m)), j, t, m);
            ST(u + j, ux, t, m);
            ST(h + j, vadd(ux, NRM(&F->Y, XHAT(&F->Y, LD(y + j, t, m)), j, t, m)), t, m);
        });
    else
        COLS(D, {
            V ux = NRM(&F->X, XHAT(&F->X, LD(x + j, t, m)), j, t, m);
            ST(h + j, vadd(ux, NRM(&F->Y, XHAT(&F->Y, LD(y + j, t, m)), j, t, m)), t, m);
        });
}

/* One step of the backward recomputation: everything a backward kernel needs at columns j.. */
typedef struct belem {
    V xx, yy, xs, ds, dt, gx, gy, dh;
} belem;

static inline belem BELEM(const sn_rfuse *F, int64_t j, int t, M m, const float *dh,
                          const float *du, const float *x, const float *y) {
    belem e;
    e.xx = XHAT(&F->X, LD(x + j, t, m));
    e.yy = XHAT(&F->Y, LD(y + j, t, m));
    const V s = vadd(NRM(&F->X, e.xx, j, t, m), NRM(&F->Y, e.yy, j, t, m));
    e.xs = XHAT(&F->O, s);
    e.dh = LD(dh + j, t, m);
    const V g = vfms(GAM(F->O.gamma, j, t, m), e.dh, vset1(F->oa));
    e.ds = vmul(vset1(F->O.r), vfnma(e.xs, vset1(F->ob), g));
    e.dt = du ? vadd(LD(du + j, t, m), e.ds) : e.ds;
    e.gx = vmul(GAM(F->X.gamma, j, t, m), e.dt);
    e.gy = vmul(GAM(F->Y.gamma, j, t, m), e.ds);
    return e;
}

static void fuse_red(sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                     const float *y) {
    const float fD = (float)D;
    /* pass 1: N_out's reductions over g = gamma_out * dh, with s recomputed from x and y */
    V a = vset1(0.0f), b = vset1(0.0f);
    COLS(D, {
        V xx = XHAT(&F->X, LD(x + j, t, m)), yy = XHAT(&F->Y, LD(y + j, t, m));
        V s = vadd(NRM(&F->X, xx, j, t, m), NRM(&F->Y, yy, j, t, m));
        V g = KEEP(vmul(GAM(F->O.gamma, j, t, m), LD(dh + j, t, m)), t, m);
        a = vadd(a, g);
        b = vfma(g, XHAT(&F->O, s), b);
    });
    F->oa = F->O.ca * hsum(a) / fD;
    F->ob = F->O.cb * hsum(b) / fD;
    /* pass 2: reductions of N_x over dt = du + ds and of N_y over ds */
    V ax = vset1(0.0f), bx = vset1(0.0f), ay = vset1(0.0f), by = vset1(0.0f);
    COLS(D, {
        belem e = BELEM(F, j, t, m, dh, du, x, y);
        V gx = KEEP(e.gx, t, m), gy = KEEP(e.gy, t, m);
        ax = vadd(ax, gx);
        bx = vfma(gx, e.xx, bx);
        ay = vadd(ay, gy);
        by = vfma(gy, e.yy, by);
    });
    F->xa = F->X.ca * hsum(ax) / fD;
    F->xb = F->X.cb * hsum(bx) / fD;
    F->ya = F->Y.ca * hsum(ay) / fD;
    F->yb = F->Y.cb * hsum(by) / fD;
}

static inline void ACC(float *p, V v, int t, M m) {
    if (p) ST(p, vadd(LD(p, t, m), v), t, m);
}
static inline void ACC_FMA(float *p, V a, V b, int t, M m) {
    if (p) ST(p, vfma(a, b, LD(p, t, m)), t, m);
}

static void fuse_pg(const sn_rfuse *F, int64_t n, const float *dh, const float *du,
                    const float *x, const float *y, const sn_dfuse *dp) {
    COLS(n, {
        belem e = BELEM(F, j, t, m, dh, du, x, y);
        ACC_FMA(dp->go ? dp->go + j : NULL, e.dh, e.xs, t, m);
        ACC(dp->bo ? dp->bo + j : NULL, e.dh, t, m);
        ACC_FMA(dp->gx ? dp->gx + j : NULL, e.dt, e.xx, t, m);
        ACC(dp->bx ? dp->bx + j : NULL, e.dt, t, m);
        ACC_FMA(dp->gy ? dp->gy + j : NULL, e.ds, e.yy, t, m);
        ACC(dp->by ? dp->by + j : NULL, e.ds, t, m);
    });
}

static void fuse_dx(const sn_rfuse *F, int64_t D, const float *dh, const float *du,
                    const float *x, const float *y, float *dx, float *dy, int accx, int accy) {
    const V rx = vset1(F->X.r), ry = vset1(F->Y.r), xa = vset1(F->xa), xb = vset1(F->xb);
    const V ya = vset1(F->ya), yb = vset1(F->yb);
    /* du is read (inside BELEM) before dx is written: dx may be du */
    COLS(D, {
        belem e = BELEM(F, j, t, m, dh, du, x, y);
        V ddx = vmul(rx, vfnma(e.xx, xb, vsub(e.gx, xa)));
        V ddy = vmul(ry, vfnma(e.yy, yb, vsub(e.gy, ya)));
        ST(dx + j, accx ? vadd(LD(dx + j, t, m), ddx) : ddx, t, m);
        ST(dy + j, accy ? vadd(LD(dy + j, t, m), ddy) : ddy, t, m);
    });
}

/* ---- elementwise --------------------------------------------------------------------------- */

static void add_div(const float *a, const float *b, float c, float *out, int64_t D, int acc) {
    const V vc = vset1(c);
    if (acc)
        COLS(D, {
            V r = vadd(LD(a + j, t, m), vdiv(LD(b + j, t, m), vc));
            ST(out + j, vadd(LD(out + j, t, m), r), t, m);
        });
    else
        COLS(D, { ST(out + j, vadd(LD(a + j, t, m), vdiv(LD(b + j, t, m), vc)), t, m); });
}

static void apply(const float *z, const float *u, const float *y, float c, float *xo, float *yo,
                  int64_t D) {
    const V vc = vset1(c);
    COLS(D, {
        V zj = LD(z + j, t, m);
        ST(xo + j, vadd(LD(u + j, t, m), vdiv(zj, vc)), t, m);
        ST(yo + j, vadd(LD(y + j, t, m), zj), t, m);
    });
}

static void axpy(const float *a, const float *b, float alpha, float *out, int64_t D) {
    const V va = vset1(alpha);
    COLS(D, { ST(out + j, vfma(va, LD(a + j, t, m), LD(b + j, t, m)), t, m); });
}

const sn_kern SN_KERN_TABLE = {
    stats, norm_row, norm_red, norm_pg, norm_dx, fuse_s, fuse_red, fuse_pg, fuse_dx, add_div,
    apply, axpy,
};
