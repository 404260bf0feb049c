/* SIMD row kernels, written once for any vector width. Included by kernels_avx2.c and
 * kernels_avx512.c, each compiled with its own -m flags, after they define:
 *   V, M          the vector and lane-mask types; VW the number of float lanes
 *   vld vst       unaligned load / store;  vldm vstm  masked load / store (lanes off: 0 / kept)
 *   vmaskz        zero the lanes a mask leaves off;  mask_n(k) the first k lanes (0 < k < VW)
 *   MFULL         a mask value for full vectors (never used by a masked operation)
 *   vset1 vadd vsub vmul vdiv vfma(a,b,c)=a*b+c  vfnma(a,b,c)=c-a*b  vfms(a,b,c)=a*b-c
 *   hsum          horizontal sum in a fixed order
 *   vstream       streaming store to an address aligned to a whole vector; vfence after them
 *   SN_KERN_TABLE the name of the sn_kern table to define
 * Every column, including the last partial vector (handled with masks), goes through the same
 * vector arithmetic, so results do not depend on where a row starts or how columns are split.
 * Each quantity has one definition below (xhat, s, ds, ...), used by every kernel that needs it:
 * the backward recomputes the forward's s with exactly the forward's arithmetic. */
#include <math.h>
#include <stdint.h>

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

/* Like COLS for reductions: full vectors alternate between two accumulator sets (k = 0, 1)
 * to halve the dependency chains; the partial last step uses set k = 1. Every reduction of a
 * path uses this one pattern, so a sum is the same bits wherever it is computed. */
#define RCOLS2(n, ...)                                                                            \
    do {                                                                                          \
        int64_t j = 0;                                                                            \
        const int t = 0;                                                                          \
        const M m = MFULL;                                                                        \
        for (; j + 2 * VW <= (n); j += 2 * VW) {                                                  \
            {                                                                                     \
                const int k = 0;                                                                  \
                __VA_ARGS__                                                                       \
            }                                                                                     \
            {                                                                                     \
                const int k = 1;                                                                  \
                j += VW;                                                                          \
                __VA_ARGS__                                                                       \
                j -= VW;                                                                          \
            }                                                                                     \
        }                                                                                         \
        if (j + VW <= (n)) {                                                                      \
            const int k = 0;                                                                      \
            __VA_ARGS__                                                                           \
            j += VW;                                                                              \
        }                                                                                         \
        if (j < (n)) {                                                                            \
            const int k = 1, t = 1;                                                               \
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
/* a final output: a streaming store when allowed and the address is aligned, else ST */
static inline void STO(float *p, V v, int t, M m, int nt) {
    if (nt && !t && ((uintptr_t)p & (VW * sizeof(float) - 1)) == 0)
        vstream(p, v);
    else
        ST(p, v, t, m);
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

static inline float hsum2(const V a[2]) { return hsum(vadd(a[0], a[1])); }

static float vsum(const float *v, int64_t n) {
    V a[2] = {vset1(0.0f), vset1(0.0f)};
    RCOLS2(n, { a[k] = vadd(a[k], KEEP(LD(v + j, t, m), t, m)); });
    return hsum2(a);
}

static float vsum_sqdev(const float *v, int64_t n, float mean) {
    V a[2] = {vset1(0.0f), vset1(0.0f)};
    const V mu = vset1(mean);
    RCOLS2(n, {
        V d = KEEP(vsub(LD(v + j, t, m), mu), t, m);
        a[k] = vfma(d, d, a[k]);
    });
    return hsum2(a);
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
    const int nt = q->nt;
    COLS(W, { STO(out + j, NRM(q, XHAT(q, LD(v + j, t, m)), j, t, m), t, m, nt); });
    if (nt) vfence();
}

/* the reduction step of a norm backward: g = gamma * dout, a += g, b += g * xhat */
#define NORM_RED_STEP                                                                             \
    V xh = XHAT(q, LD(v + j, t, m));                                                              \
    V d = LD(dout + j, t, m);                                                                     \
    V g = KEEP(vmul(GAM(q->gamma, j, t, m), d), t, m);                                            \
    a[k] = vadd(a[k], g);                                                                         \
    b[k] = vfma(g, xh, b[k])

static void norm_red(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float *sa,
                     float *sb) {
    V a[2] = {vset1(0.0f), vset1(0.0f)}, b[2] = {vset1(0.0f), vset1(0.0f)};
    RCOLS2(W, { NORM_RED_STEP; });
    *sa = q->ca * hsum2(a) / (float)W;
    *sb = q->cb * hsum2(b) / (float)W;
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
            STO(dv + j, vmul(r, vfnma(xh, vb, vsub(g, va))), t, m, q->nt);
        });
    if (q->nt && !acc) vfence();
}

/* the whole backward of one row: the reductions and the parameter gradients in one sweep (the
 * same arithmetic as norm_red and norm_pg), then norm_dx */
static void norm_bwd(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float *dv,
                     int acc, float *dgamma, float *dbeta) {
    if (!dgamma || !dbeta) {
        float sa, sb;
        norm_red(q, dout, v, W, &sa, &sb);
        norm_pg(q, dout, v, W, dgamma, dbeta);
        norm_dx(q, dout, v, W, sa, sb, dv, acc);
        return;
    }
    V a[2] = {vset1(0.0f), vset1(0.0f)}, b[2] = {vset1(0.0f), vset1(0.0f)};
    RCOLS2(W, {
        NORM_RED_STEP;
        ST(dgamma + j, vfma(d, xh, LD(dgamma + j, t, m)), t, m);
        ST(dbeta + j, vadd(LD(dbeta + j, t, m), d), t, m);
    });
    norm_dx(q, dout, v, W, q->ca * hsum2(a) / (float)W, q->cb * hsum2(b) / (float)W, dv, acc);
}
#undef NORM_RED_STEP

/* ---- dual-stream fuse ---------------------------------------------------------------------- */

static void fuse_s(const sn_rfuse *F, int64_t D, const float *x, const float *y, float *u,
                   float *h) {
    if (u)
        COLS(D, {
            V ux = NRM(&F->X, XHAT(&F->X, LD(x + j, t, m)), j, t, m);
            STO(u + j, ux, t, m, F->nt);
            ST(h + j, vadd(ux, NRM(&F->Y, XHAT(&F->Y, LD(y + j, t, m)), j, t, m)), t, m);
        });
    if (u && F->nt) vfence();
    if (!u)
        COLS(D, {
            V ux = NRM(&F->X, XHAT(&F->X, LD(x + j, t, m)), j, t, m);
            ST(h + j, vadd(ux, NRM(&F->Y, XHAT(&F->Y, LD(y + j, t, m)), j, t, m)), t, m);
        });
}

/* The quantities of a fuse backward, each with its one definition:
 *   xx, yy   xhat of x and y;  xs = xhat_out of s = N_x(x) + N_y(y) (the forward's arithmetic)
 *   ds       = r_out * (gamma_out * dh - oa - xs * ob)
 *   dt       = du + ds;  gx = gamma_x * dt;  gy = gamma_y * ds */
static inline V XS_OF(const sn_rfuse *F, V xx, V yy, int64_t j, int t, M m) {
    return XHAT(&F->O, vadd(NRM(&F->X, xx, j, t, m), NRM(&F->Y, yy, j, t, m)));
}
static inline V DS_OF(const sn_rfuse *F, V xs, V dh, int64_t j, int t, M m) {
    const V g = vfms(GAM(F->O.gamma, j, t, m), dh, vset1(F->oa));
    return vmul(vset1(F->O.r), vfnma(xs, vset1(F->ob), g));
}
static inline V DT_OF(const float *du, V ds, int64_t j, int t, M m) {
    return du ? vadd(LD(du + j, t, m), ds) : ds;
}

typedef struct belem {
    V xx, yy, xs, ds, dt, gx, gy, dh;
} belem;

static inline belem BELEM(const sn_rfuse *F, int64_t j, int t, M m, const float *dh,
                          const float *du, const float *x, const float *y) {
    belem e;
    e.xx = XHAT(&F->X, LD(x + j, t, m));
    e.yy = XHAT(&F->Y, LD(y + j, t, m));
    e.xs = XS_OF(F, e.xx, e.yy, j, t, m);
    e.dh = LD(dh + j, t, m);
    e.ds = DS_OF(F, e.xs, e.dh, j, t, m);
    e.dt = DT_OF(du, e.ds, j, t, m);
    e.gx = vmul(GAM(F->X.gamma, j, t, m), e.dt);
    e.gy = vmul(GAM(F->Y.gamma, j, t, m), e.ds);
    return e;
}

/* pass 1 of the reductions: N_out's, from g = gamma_out * dh and xs */
#define FUSE_RED1_STEP(xs)                                                                        \
    V g = KEEP(vmul(GAM(F->O.gamma, j, t, m), LD(dh + j, t, m)), t, m);                           \
    a[k] = vadd(a[k], g);                                                                         \
    b[k] = vfma(g, (xs), b[k])

/* pass 2: N_x's over dt and N_y's over ds */
#define FUSE_RED2_STEP(e)                                                                         \
    V gx_ = KEEP((e).gx, t, m), gy_ = KEEP((e).gy, t, m);                                         \
    ax[k] = vadd(ax[k], gx_);                                                                     \
    bx[k] = vfma(gx_, (e).xx, bx[k]);                                                             \
    ay[k] = vadd(ay[k], gy_);                                                                     \
    by[k] = vfma(gy_, (e).yy, by[k])

#define ZERO2 {vset1(0.0f), vset1(0.0f)}

static void fuse_red_out(sn_rfuse *F, const V a[2], const V b[2], int64_t D) {
    F->oa = F->O.ca * hsum2(a) / (float)D;
    F->ob = F->O.cb * hsum2(b) / (float)D;
}

static void fuse_red_xy(sn_rfuse *F, const V ax[2], const V bx[2], const V ay[2], const V by[2],
                        int64_t D) {
    const float fD = (float)D;
    F->xa = F->X.ca * hsum2(ax) / fD;
    F->xb = F->X.cb * hsum2(bx) / fD;
    F->ya = F->Y.ca * hsum2(ay) / fD;
    F->yb = F->Y.cb * hsum2(by) / fD;
}

static void fuse_red(sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                     const float *y) {
    V a[2] = ZERO2, b[2] = ZERO2;
    RCOLS2(D, {
        V xx = XHAT(&F->X, LD(x + j, t, m)), yy = XHAT(&F->Y, LD(y + j, t, m));
        FUSE_RED1_STEP(XS_OF(F, xx, yy, j, t, m));
    });
    fuse_red_out(F, a, b, D);
    V ax[2] = ZERO2, bx[2] = ZERO2, ay[2] = ZERO2, by[2] = ZERO2;
    RCOLS2(D, {
        belem e = BELEM(F, j, t, m, dh, du, x, y);
        FUSE_RED2_STEP(e);
    });
    fuse_red_xy(F, ax, bx, ay, by, D);
}

static inline void ACC(float *p, V v, int t, M m) {
    if (p) ST(p, vadd(LD(p, t, m), v), t, m);
}
static inline void ACC_FMA(float *p, V a, V b, int t, M m) {
    if (p) ST(p, vfma(a, b, LD(p, t, m)), t, m);
}
static inline float *AT(float *p, int64_t j) { return p ? p + j : NULL; }

/* the parameter gradients of one step */
static inline void FUSE_PG_STEP(const sn_dfuse *dp, const belem *e, int64_t j, int t, M m) {
    ACC_FMA(AT(dp->go, j), e->dh, e->xs, t, m);
    ACC(AT(dp->bo, j), e->dh, t, m);
    ACC_FMA(AT(dp->gx, j), e->dt, e->xx, t, m);
    ACC(AT(dp->bx, j), e->dt, t, m);
    ACC_FMA(AT(dp->gy, j), e->ds, e->yy, t, m);
    ACC(AT(dp->by, j), e->ds, t, m);
}

static void fuse_pg(const sn_rfuse *F, int64_t n, const float *dh, const float *du,
                    const float *x, const float *y, const sn_dfuse *dp) {
    COLS(n, {
        belem e = BELEM(F, j, t, m, dh, du, x, y);
        FUSE_PG_STEP(dp, &e, j, t, m);
    });
}

/* the input gradients of one step from xx, yy, gx, gy */
static inline void FUSE_DX_STEP(const sn_rfuse *F, V xx, V yy, V gx, V gy, float *dx, float *dy,
                                int accx, int accy, int64_t j, int t, M m) {
    V ddx = vmul(vset1(F->X.r), vfnma(xx, vset1(F->xb), vsub(gx, vset1(F->xa))));
    V ddy = vmul(vset1(F->Y.r), vfnma(yy, vset1(F->yb), vsub(gy, vset1(F->ya))));
    if (accx)
        ST(dx + j, vadd(LD(dx + j, t, m), ddx), t, m);
    else
        STO(dx + j, ddx, t, m, F->nt);
    if (accy)
        ST(dy + j, vadd(LD(dy + j, t, m), ddy), t, m);
    else
        STO(dy + j, ddy, t, m, F->nt);
}

static void fuse_dx(const sn_rfuse *F, int64_t D, const float *dh, const float *du,
                    const float *x, const float *y, float *dx, float *dy, int accx, int accy) {
    /* du is read (inside BELEM) before dx is written: dx may be du */
    COLS(D, {
        belem e = BELEM(F, j, t, m, dh, du, x, y);
        FUSE_DX_STEP(F, e.xx, e.yy, e.gx, e.gy, dx, dy, accx, accy, j, t, m);
    });
    if (F->nt) vfence();
}

/* The whole backward of one row, each quantity computed once: pass 1 keeps xx, yy, xs in a
 * stack buffer, pass 2 (reductions of N_x, N_y and the parameter gradients) replaces xs by gx
 * and keeps gy, pass 3 writes the input gradients. Bitwise the same as fuse_red, fuse_pg,
 * fuse_dx (same formulas on the same values). Rows wider than FUSE_ROW_MAX take those. */
#define FUSE_ROW_MAX 1024
static void fuse_bwd(sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                     const float *y, float *dx, float *dy, int accx, int accy,
                     const sn_dfuse *dp) {
    if (D > FUSE_ROW_MAX) {
        fuse_red(F, D, dh, du, x, y);
        if (dp) fuse_pg(F, D, dh, du, x, y, dp);
        fuse_dx(F, D, dh, du, x, y, dx, dy, accx, accy);
        return;
    }
    float bxx[FUSE_ROW_MAX + VW], byy[FUSE_ROW_MAX + VW], bs[FUSE_ROW_MAX + VW], bg[FUSE_ROW_MAX + VW];
    V a[2] = ZERO2, b[2] = ZERO2;
    RCOLS2(D, {
        V xx = XHAT(&F->X, LD(x + j, t, m)), yy = XHAT(&F->Y, LD(y + j, t, m));
        V xs = XS_OF(F, xx, yy, j, t, m);
        vst(bxx + j, xx); /* the buffers are padded: whole vectors */
        vst(byy + j, yy);
        vst(bs + j, xs);
        FUSE_RED1_STEP(xs);
    });
    fuse_red_out(F, a, b, D);
    V ax[2] = ZERO2, bx[2] = ZERO2, ay[2] = ZERO2, by[2] = ZERO2;
    RCOLS2(D, {
        belem e;
        e.xx = vld(bxx + j);
        e.yy = vld(byy + j);
        e.xs = vld(bs + j);
        e.dh = LD(dh + j, t, m);
        e.ds = DS_OF(F, e.xs, e.dh, j, t, m);
        e.dt = DT_OF(du, e.ds, j, t, m);
        e.gx = vmul(GAM(F->X.gamma, j, t, m), e.dt);
        e.gy = vmul(GAM(F->Y.gamma, j, t, m), e.ds);
        FUSE_RED2_STEP(e);
        if (dp) FUSE_PG_STEP(dp, &e, j, t, m);
        vst(bs + j, e.gx);
        vst(bg + j, e.gy);
    });
    fuse_red_xy(F, ax, bx, ay, by, D);
    COLS(D, {
        FUSE_DX_STEP(F, vld(bxx + j), vld(byy + j), vld(bs + j), vld(bg + j), dx, dy, accx, accy,
                     j, t, m);
    });
    if (F->nt) vfence();
}

/* ---- elementwise --------------------------------------------------------------------------- */

static void add_div(const float *a, const float *b, float c, float *out, int64_t D, int acc,
                    int nt) {
    const V vc = vset1(c);
    if (acc)
        COLS(D, {
            V r = vadd(LD(a + j, t, m), vdiv(LD(b + j, t, m), vc));
            ST(out + j, vadd(LD(out + j, t, m), r), t, m);
        });
    else
        COLS(D, { STO(out + j, vadd(LD(a + j, t, m), vdiv(LD(b + j, t, m), vc)), t, m, nt); });
    if (nt && !acc) vfence();
}

static void apply(const float *z, const float *u, const float *y, float c, float *xo, float *yo,
                  int64_t D, int nt) {
    const V vc = vset1(c);
    COLS(D, {
        V zj = LD(z + j, t, m);
        STO(xo + j, vadd(LD(u + j, t, m), vdiv(zj, vc)), t, m, nt);
        STO(yo + j, vadd(LD(y + j, t, m), zj), t, m, nt);
    });
    if (nt) vfence();
}

static void axpy(const float *a, const float *b, float alpha, float *out, int64_t D, int nt) {
    const V va = vset1(alpha);
    COLS(D, { STO(out + j, vfma(va, LD(a + j, t, m), LD(b + j, t, m)), t, m, nt); });
    if (nt) vfence();
}

const sn_kern SN_KERN_TABLE = {
    stats,   norm_row, norm_red, norm_pg, norm_dx, norm_bwd, fuse_s, fuse_red,
    fuse_pg, fuse_dx,  fuse_bwd, add_div, apply,   axpy,
};
