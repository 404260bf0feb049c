/* checkasm: the dual-stream fuse slots (fuse_s, fuse_fwd2, fuse_red, fuse_pg, fuse_dx, fuse_bwd,
 * fuse_bwd2) of kernels.h, for fuses that mix every norm kind and affine mode, and the fuses
 * fuse_fwd2 takes, on fp32 rows (against scalar) and on bf16 rows (against the path's fp32
 * slots, bitwise). The statistics every backward slot reads are the scalar forward's. */
#include "checkasm.h"

#include <string.h>

/* the fuses: indices of ca_norm (kind * 3 + affine) for N_x, N_y, N_out */
static const int FUSES[][3] = {
    {0, 0, 0}, {4, 4, 4}, {4, 4, 0}, {0, 0, 4}, {2, 2, 2},   {3, 3, 5}, {1, 2, 3},
    {4, 0, 0}, {9, 0, 4}, {6, 0, 0}, {0, 6, 3}, {10, 11, 7}, {0, 0, 6}, {5, 3, 9},
};
#define N_FUSES ((int)(sizeof FUSES / sizeof FUSES[0]))

/* one fuse on two rows: inputs, the norms resolved without statistics (F0) and with each row's
 * (F, from the scalar forward; reductions zero) */
typedef struct fc {
    sn_fuse f;
    int64_t D;
    const float *x[2], *y[2], *dh[2], *du[2], *params;
    sn_rfuse F0, F[2];
} fc;

static void setup(fc *c, const ca_path *ref, int fi, int64_t D, int off) {
    c->f.x = ca_norm(FUSES[fi][0]);
    c->f.y = ca_norm(FUSES[fi][1]);
    c->f.out = ca_norm(FUSES[fi][2]);
    c->D = D;
    for (int k = 0; k < 2; k++) {
        c->x[k] = ca_row_rand(D, off + k, 1.0f, 2.0f * ca_rand());
        c->y[k] = ca_row_rand(D, off + 2 + k, 1.5f, ca_rand());
        c->dh[k] = ca_row_rand(D, off + 4 + k, 1.0f, 0.0f);
        c->du[k] = ca_row_rand(D, off + 6 + k, 0.5f, 0.0f);
    }
    c->params = ca_row_rand(6 * D, off + 1, 0.5f, 1.0f);
    const sn_fuse_layout L = sn_k_fuse_layout(&c->f, D);
    memset(&c->F0, 0, sizeof c->F0);
    c->F0.X = sn_k_resolve(&c->f.x, D, c->params + L.px, 0.0f, 1.0f);
    c->F0.Y = sn_k_resolve(&c->f.y, D, c->params + L.py, 0.0f, 1.0f);
    c->F0.O = sn_k_resolve(&c->f.out, D, c->params + L.po, 0.0f, 1.0f);
    for (int k = 0; k < 2; k++) {
        sn_rfuse F = c->F0;
        float mx, rx, my, ry, mo, ro;
        ref->K->stats2(&c->f.x, c->x[k], &c->f.y, c->y[k], D, &mx, &rx, &my, &ry);
        sn_k_set_stats(&F.X, c->f.x.kind, mx, rx);
        sn_k_set_stats(&F.Y, c->f.y.kind, my, ry);
        float *h = ca_row(D, 0);
        ref->K->fuse_s(&F, D, c->x[k], c->y[k], NULL, h, &c->f.out, &mo, &ro);
        sn_k_set_stats(&F.O, c->f.out.kind, mo, ro);
        c->F[k] = F;
    }
}

static void close1(const char *what, float a, float r) { ca_close(what, &a, &r, 1); }
static void same1(const char *what, float a, float b) { ca_same(what, &a, &b, 1); }

/* fuse_s against scalar; N_out's statistics bitwise those of stats2 on h; u NULL; streaming */
static void check_s(const ca_path *p, const ca_path *ref, const fc *c, int off) {
    const int64_t D = c->D;
    sn_rfuse F = c->F[0];
    float *u = ca_row(D, off + 3), *h = ca_row(D, off + 5), *u_r = ca_row(D, 0),
          *h_r = ca_row(D, 0);
    float mo, ro, mo_r, ro_r, m2, r2, m3, r3;
    p->K->fuse_s(&F, D, c->x[0], c->y[0], u, h, &c->f.out, &mo, &ro);
    ref->K->fuse_s(&F, D, c->x[0], c->y[0], u_r, h_r, &c->f.out, &mo_r, &ro_r);
    ca_close("fuse_s u", u, u_r, D);
    ca_close("fuse_s h", h, h_r, D);
    close1("fuse_s N_out mean", mo, mo_r);
    close1("fuse_s N_out rstd", ro, ro_r);
    p->K->stats2(&c->f.out, h, &c->f.out, h, D, &m2, &r2, &m3, &r3);
    same1("fuse_s N_out mean vs stats2 on h", mo, m2);
    same1("fuse_s N_out rstd vs stats2 on h", ro, r2);
    float *h2 = ca_row(D, off + 2);
    p->K->fuse_s(&F, D, c->x[0], c->y[0], NULL, h2, &c->f.out, &m2, &r2);
    ca_same("fuse_s h without u", h2, h, D);
    F.nt = 1;
    float *u3 = ca_row(D, 0), *h3 = ca_row(D, 0);
    p->K->fuse_s(&F, D, c->x[0], c->y[0], u3, h3, &c->f.out, &m2, &r2);
    ca_same("fuse_s streaming u", u3, u, D);
    ca_same("fuse_s streaming h", h3, h, D);
    ca_rows_ok("fuse_s");
}

/* fuse_fwd2 bitwise as stats2, fuse_s and norm_row on each row; against scalar */
static void check_fwd2(const ca_path *p, const ca_path *ref, const fc *c, int off) {
    const int64_t D = c->D;
    if (!sn_k_fuse2_ok(&c->f, D)) return;
    float *u[2] = {ca_row(D, off + 1), ca_row(D, off + 2)};
    float *h[2] = {ca_row(D, off + 3), ca_row(D, off + 4)};
    float *u_r[2] = {ca_row(D, 0), ca_row(D, 0)}, *h_r[2] = {ca_row(D, 0), ca_row(D, 0)};
    float st[2][6], st_r[2][6];
    p->K->fuse_fwd2(&c->F0, &c->f, D, c->x, c->y, u, h, st);
    ref->K->fuse_fwd2(&c->F0, &c->f, D, c->x, c->y, u_r, h_r, st_r);
    for (int k = 0; k < 2; k++) {
        ca_close("fuse_fwd2 u", u[k], u_r[k], D);
        ca_close("fuse_fwd2 h", h[k], h_r[k], D);
        ca_close("fuse_fwd2 stats", st[k], st_r[k], 6);
        sn_rfuse F = c->F0;
        float s1[6];
        p->K->stats2(&c->f.x, c->x[k], &c->f.y, c->y[k], D, &s1[0], &s1[1], &s1[2], &s1[3]);
        F.X.m = s1[0], F.X.r = s1[1], F.Y.m = s1[2], F.Y.r = s1[3];
        float *u1 = ca_row(D, off), *s = ca_row(D, off + 7), *h1 = ca_row(D, off + 6);
        p->K->fuse_s(&F, D, c->x[k], c->y[k], u1, s, &c->f.out, &s1[4], &s1[5]);
        F.O.m = s1[4], F.O.r = s1[5];
        p->K->norm_row(&F.O, s, D, h1);
        ca_same("fuse_fwd2 stats vs stats2 + fuse_s", st[k], s1, 6);
        ca_same("fuse_fwd2 u vs fuse_s", u[k], u1, D);
        ca_same("fuse_fwd2 h vs fuse_s + norm_row", h[k], h1, D);
    }
    float *const none[2] = {NULL, NULL};
    float *h2[2] = {ca_row(D, off + 8), ca_row(D, off + 9)};
    float st2[2][6];
    p->K->fuse_fwd2(&c->F0, &c->f, D, c->x, c->y, none, h2, st2);
    sn_rfuse F0nt = c->F0;
    F0nt.nt = 1;
    float *u3[2] = {ca_row(D, 0), ca_row(D, 0)}, *h3[2] = {ca_row(D, 0), ca_row(D, 0)};
    p->K->fuse_fwd2(&F0nt, &c->f, D, c->x, c->y, u3, h3, st2);
    for (int k = 0; k < 2; k++) {
        ca_same("fuse_fwd2 h without u", h2[k], h[k], D);
        ca_same("fuse_fwd2 streaming u", u3[k], u[k], D);
        ca_same("fuse_fwd2 streaming h", h3[k], h[k], D);
    }
    ca_rows_ok("fuse_fwd2");
}

/* the parameter-gradient rows a fuse has (the others NULL, as the drivers pass them) */
static sn_dfuse dp_rows(const fc *c, int off) {
    const sn_rfuse *F = &c->F0;
    const int64_t D = c->D;
    sn_dfuse d;
    d.gx = F->X.gamma ? ca_row(D, off) : NULL;
    d.bx = F->X.beta ? ca_row(D, off + 1) : NULL;
    d.gy = F->Y.gamma ? ca_row(D, off + 2) : NULL;
    d.by = F->Y.beta ? ca_row(D, off + 3) : NULL;
    d.go = F->O.gamma ? ca_row(D, off + 4) : NULL;
    d.bo = F->O.beta ? ca_row(D, off + 5) : NULL;
    return d;
}
static void dp_check(const char *what, const sn_dfuse *a, const sn_dfuse *b, int64_t n,
                     int bitwise) {
    const float *pa[6] = {a->gx, a->bx, a->gy, a->by, a->go, a->bo};
    const float *pb[6] = {b->gx, b->bx, b->gy, b->by, b->go, b->bo};
    for (int i = 0; i < 6; i++)
        if (pa[i]) (bitwise ? ca_same : ca_close)(what, pa[i], pb[i], n);
}
static void reds_close(const char *what, const sn_rfuse *a, const sn_rfuse *r) {
    const float va[6] = {a->oa, a->ob, a->xa, a->xb, a->ya, a->yb};
    const float vr[6] = {r->oa, r->ob, r->xa, r->xb, r->ya, r->yb};
    for (int i = 0; i < 6; i++) close1(what, va[i], vr[i]);
}

/* fuse_red, fuse_pg, fuse_dx against scalar; fuse_pg over any split of the columns; fuse_dx in
 * place; fuse_bwd bitwise as the three (and without parameter gradients), in place, streaming,
 * prefetching */
static void check_bwd(const ca_path *p, const ca_path *ref, const fc *c, int off, int accx,
                      int accy, int with_du) {
    const int64_t D = c->D;
    const float *du = with_du ? c->du[0] : NULL, *x = c->x[0], *y = c->y[0], *dh = c->dh[0];
    /* each path with its own reductions (the input gradients of a row of near-zero variance,
     * W = 1, amplify a difference in them by rstd) */
    sn_rfuse F = c->F[0], F_r = c->F[0];
    p->K->fuse_red(&F, D, dh, du, x, y);
    ref->K->fuse_red(&F_r, D, dh, du, x, y);
    reds_close("fuse_red", &F, &F_r);

    sn_dfuse dp = dp_rows(c, off), dp_r = dp_rows(c, 0), dp2 = dp_rows(c, off + 2);
    p->K->fuse_pg(&F, D, dh, du, x, y, &dp);
    ref->K->fuse_pg(&F_r, D, dh, du, x, y, &dp_r);
    dp_check("fuse_pg", &dp, &dp_r, D, 0);
    const int64_t cut = D * 7 / 13;
    p->K->fuse_pg(&F, cut, dh, du, x, y, &dp2);
    sn_dfuse tail = dp2;
    float **t[6] = {&tail.gx, &tail.bx, &tail.gy, &tail.by, &tail.go, &tail.bo};
    for (int i = 0; i < 6; i++)
        if (*t[i]) *t[i] += cut;
    sn_rfuse Ft = F; /* and the norms' parameters, as the drivers offset them */
    sn_rnorm *ns[3] = {&Ft.X, &Ft.Y, &Ft.O};
    for (int i = 0; i < 3; i++) {
        if (ns[i]->gamma) ns[i]->gamma += cut;
        if (ns[i]->beta) ns[i]->beta += cut;
    }
    p->K->fuse_pg(&Ft, D - cut, dh + cut, du ? du + cut : NULL, x + cut, y + cut, &tail);
    dp_check("fuse_pg split columns", &dp2, &dp, D, 1);

    float *dx = ca_row(D, off + 1), *dy = ca_row(D, off + 2);
    float *dx_r = ca_row(D, 0), *dy_r = ca_row(D, 0);
    p->K->fuse_dx(&F, D, dh, du, x, y, dx, dy, accx, accy);
    ref->K->fuse_dx(&F_r, D, dh, du, x, y, dx_r, dy_r, accx, accy);
    ca_close("fuse_dx dx", dx, dx_r, D);
    ca_close("fuse_dx dy", dy, dy_r, D);
    if (du && !accx) {
        float *io = ca_row_copy(du, D, off + 1), *dy2 = ca_row(D, off + 3);
        p->K->fuse_dx(&F, D, dh, io, x, y, io, dy2, 0, accy);
        ca_same("fuse_dx in place dx", io, dx, D);
    }

    /* fuse_bwd: the same bits as the three above */
    sn_rfuse Fb = c->F[0];
    sn_dfuse dpb = dp_rows(c, off + 3);
    float *dxb = ca_row(D, off + 4), *dyb = ca_row(D, off + 5);
    p->K->fuse_bwd(&Fb, D, dh, du, x, y, dxb, dyb, accx, accy, &dpb);
    ca_same("fuse_bwd dx vs fuse_red + fuse_pg + fuse_dx", dxb, dx, D);
    ca_same("fuse_bwd dy vs fuse_red + fuse_pg + fuse_dx", dyb, dy, D);
    dp_check("fuse_bwd parameter gradients vs fuse_pg", &dpb, &dp, D, 1);
    sn_rfuse F_rb = c->F[0];
    sn_dfuse dpb_r = dp_rows(c, 0);
    float *dxb_r = ca_row(D, 0), *dyb_r = ca_row(D, 0);
    ref->K->fuse_bwd(&F_rb, D, dh, du, x, y, dxb_r, dyb_r, accx, accy, &dpb_r);
    ca_close("fuse_bwd dx", dxb, dxb_r, D);
    ca_close("fuse_bwd dy", dyb, dyb_r, D);
    dp_check("fuse_bwd parameter gradients", &dpb, &dpb_r, D, 0);

    /* without parameter gradients, prefetching other rows, streaming, in place */
    Fb = c->F[0];
    Fb.npf = 2, Fb.pf[0] = c->x[1], Fb.pf[1] = c->y[1];
    float *dx2 = ca_row(D, off + 6), *dy2 = ca_row(D, off + 7);
    p->K->fuse_bwd(&Fb, D, dh, du, x, y, dx2, dy2, accx, accy, NULL);
    ca_same("fuse_bwd dx without parameter gradients", dx2, dx, D);
    ca_same("fuse_bwd dy without parameter gradients", dy2, dy, D);
    if (!accx && !accy) {
        Fb = c->F[0];
        Fb.nt = 1;
        float *dx3 = ca_row(D, 0), *dy3 = ca_row(D, 0);
        p->K->fuse_bwd(&Fb, D, dh, du, x, y, dx3, dy3, 0, 0, NULL);
        ca_same("fuse_bwd streaming dx", dx3, dx, D);
        ca_same("fuse_bwd streaming dy", dy3, dy, D);
    }
    if (du && !accx) {
        Fb = c->F[0];
        float *io = ca_row_copy(du, D, off + 2), *dy4 = ca_row(D, off + 8);
        p->K->fuse_bwd(&Fb, D, dh, io, x, y, io, dy4, 0, accy, NULL);
        ca_same("fuse_bwd in place dx", io, dx, D);
    }
    ca_rows_ok("fuse_red/fuse_pg/fuse_dx/fuse_bwd");
}

/* fuse_bwd2 bitwise as fuse_bwd on row 0 then row 1 (without parameter gradients, with them,
 * and with them and prefetch rows: a call beyond the L2, where a pair whose written rows start at
 * different offsets within their lines runs as two single rows); against scalar */
static void check_bwd2(const ca_path *p, const ca_path *ref, const fc *c, int off, int accx,
                       int accy, int with_du) {
    const int64_t D = c->D;
    const float *du[2] = {with_du ? c->du[0] : NULL, with_du ? c->du[1] : NULL};
    for (int pg = 0; pg < 3; pg++) {
        sn_rfuse F2[2] = {c->F[0], c->F[1]}, F1[2] = {c->F[0], c->F[1]};
        for (int k = 0; k < 2 && pg == 2; k++)
            F2[k].npf = 2, F2[k].pf[0] = c->x[1], F2[k].pf[1] = c->y[1];
        sn_rfuse Fr[2] = {c->F[0], c->F[1]};
        sn_dfuse dp2 = dp_rows(c, off), dp1 = dp_rows(c, off + 1), dpr = dp_rows(c, 0);
        float *dx2[2] = {ca_row(D, off + 2), ca_row(D, off + 3)};
        float *dy2[2] = {ca_row(D, off + 4), ca_row(D, off + 5)};
        float *dx1[2] = {ca_row(D, off + 6), ca_row(D, off + 7)};
        float *dy1[2] = {ca_row(D, off + 8), ca_row(D, off + 9)};
        float *dxr[2] = {ca_row(D, 0), ca_row(D, 0)}, *dyr[2] = {ca_row(D, 0), ca_row(D, 0)};
        p->K->fuse_bwd2(F2, D, c->dh, du, c->x, c->y, dx2, dy2, accx, accy, pg ? &dp2 : NULL);
        for (int k = 0; k < 2; k++)
            p->K->fuse_bwd(&F1[k], D, c->dh[k], du[k], c->x[k], c->y[k], dx1[k], dy1[k], accx, accy,
                           pg ? &dp1 : NULL);
        ref->K->fuse_bwd2(Fr, D, c->dh, du, c->x, c->y, dxr, dyr, accx, accy, pg ? &dpr : NULL);
        for (int k = 0; k < 2; k++) {
            ca_same("fuse_bwd2 dx vs fuse_bwd twice", dx2[k], dx1[k], D);
            ca_same("fuse_bwd2 dy vs fuse_bwd twice", dy2[k], dy1[k], D);
            ca_close("fuse_bwd2 dx", dx2[k], dxr[k], D);
            ca_close("fuse_bwd2 dy", dy2[k], dyr[k], D);
        }
        if (pg) {
            dp_check("fuse_bwd2 parameter gradients vs fuse_bwd twice", &dp2, &dp1, D, 1);
            dp_check("fuse_bwd2 parameter gradients", &dp2, &dpr, D, 0);
        }
    }
    ca_rows_ok("fuse_bwd2");
}

static void check_fuse_f32(const ca_path *p, const ca_path *ref) {
    for (int wi = 0; wi < ca_nwidths; wi++) {
        const int64_t D = ca_widths[wi];
        for (int fi = 0; fi < N_FUSES; fi++) {
            const int off = (int)((D + 5 * fi) % 16);
            const int mode = (int)((wi + fi) % 6); /* accx, accy, du */
            const int accx = mode & 1, accy = (mode >> 1) & 1, with_du = mode != 4;
            ca_seed((uint64_t)(D * 64 + fi));
            fc c;
            setup(&c, ref, fi, D, off);
            ca_where(p->name, "fuse", D, "fuse %d/%d/%d, offset %d, accx %d accy %d du %d",
                     FUSES[fi][0], FUSES[fi][1], FUSES[fi][2], off, accx, accy, with_du);
            check_s(p, ref, &c, off);
            check_fwd2(p, ref, &c, off);
            check_bwd(p, ref, &c, off, accx, accy, with_du);
            check_bwd2(p, ref, &c, off, accx, accy, with_du);
            ca_rows_reset();
        }
    }
}

/* ---- bf16 rows: each slot against the same path's fp32 slot on the widened inputs ------- */

/* indices of ca_norm for N_x, N_y, N_out: the fuses fuse_fwd2 takes, and others for fuse_bwd */
static const int FUSES16[][3] = {{0, 0, 0}, {4, 4, 4}, {4, 4, 0}, {0, 0, 4}, {1, 1, 3},
                                 {3, 3, 5}, {2, 2, 2}, {1, 2, 3}, {9, 0, 4}, {10, 11, 7}};
#define N_FUSES16 ((int)(sizeof FUSES16 / sizeof FUSES16[0]))

static void check_fuse16(const ca_path *p, int64_t D, int off) {
    for (int fi = 0; fi < N_FUSES16; fi++) {
        sn_fuse f;
        f.x = ca_norm(FUSES16[fi][0]);
        f.y = ca_norm(FUSES16[fi][1]);
        f.out = ca_norm(FUSES16[fi][2]);
        const sn_fuse_layout L = sn_k_fuse_layout(&f, D);
        const float *prm = ca_row_rand(6 * D, off, 0.5f, 1.0f);
        sn_rfuse F0;
        memset(&F0, 0, sizeof F0);
        F0.X = sn_k_resolve(&f.x, D, prm + L.px, 0.0f, 1.0f);
        F0.Y = sn_k_resolve(&f.y, D, prm + L.py, 0.0f, 1.0f);
        F0.O = sn_k_resolve(&f.out, D, prm + L.po, 0.0f, 1.0f);
        const sn_bf16 *x[2], *y[2], *dh[2], *du[2];
        const float *xf[2], *yf[2], *dhf[2], *duf[2];
        sn_rfuse F[2];
        for (int k = 0; k < 2; k++) {
            x[k] = ca_b16_rand(D, off + k, 1.0f, 2.0f * ca_rand());
            y[k] = ca_b16_rand(D, off + 2 + k, 1.5f, ca_rand());
            dh[k] = ca_b16_rand(D, off + 4 + k, 1.0f, 0.0f);
            du[k] = ca_b16_rand(D, off + 6 + k, 0.5f, 0.0f);
            xf[k] = ca_widen16(x[k], D), yf[k] = ca_widen16(y[k], D);
            dhf[k] = ca_widen16(dh[k], D), duf[k] = ca_widen16(du[k], D);
            /* the row's statistics, from the fp32 slots on the widened rows */
            float mx, rx, my, ry, mo, ro;
            F[k] = F0;
            p->K->stats2(&f.x, xf[k], &f.y, yf[k], D, &mx, &rx, &my, &ry);
            sn_k_set_stats(&F[k].X, f.x.kind, mx, rx);
            sn_k_set_stats(&F[k].Y, f.y.kind, my, ry);
            p->K->fuse_s(&F[k], D, xf[k], yf[k], NULL, ca_row(D, 0), &f.out, &mo, &ro);
            sn_k_set_stats(&F[k].O, f.out.kind, mo, ro);
        }
        { /* fuse_s: u and the float s row, and N_out's statistics */
            float *u32 = ca_row(D, 0), *s32 = ca_row(D, 0), *s16 = ca_row(D, 0), st32[2], st16[2];
            sn_bf16 *u16 = ca_row16(D, off + 16);
            p->K->fuse_s(&F[1], D, xf[1], yf[1], u32, s32, &f.out, &st32[0], &st32[1]);
            p->K16->fuse_s(&F[1], D, x[1], y[1], u16, s16, &f.out, &st16[0], &st16[1]);
            ca_same16("fuse_s u", u16, u32, D);
            ca_same("fuse_s s", s16, s32, D);
            ca_same("fuse_s statistics", st16, st32, 2);
        }
        if (sn_k_fuse2_ok(&f, D))
            for (int withu = 0; withu < 2; withu++) {
                float *u32[2], *h32[2], st32[2][6], st16[2][6];
                sn_bf16 *u16[2], *h16[2], *hnt[2], *unt[2];
                for (int k = 0; k < 2; k++) {
                    u32[k] = withu ? ca_row(D, 0) : NULL;
                    h32[k] = ca_row(D, 0);
                    u16[k] = withu ? ca_row16(D, off + 8 + k) : NULL;
                    h16[k] = ca_row16(D, off + 10 + k);
                    unt[k] = withu ? ca_row16(D, 0) : NULL;
                    hnt[k] = ca_row16(D, 0);
                }
                p->K->fuse_fwd2(&F0, &f, D, xf, yf, u32, h32, st32);
                p->K16->fuse_fwd2(&F0, &f, D, x, y, u16, h16, st16);
                sn_rfuse Fn = F0;
                Fn.nt = 1;
                p->K16->fuse_fwd2(&Fn, &f, D, x, y, unt, hnt, st16);
                for (int k = 0; k < 2; k++) {
                    ca_same16("fuse_fwd2 h", h16[k], h32[k], D);
                    ca_same16b("fuse_fwd2 streaming h", hnt[k], h16[k], D);
                    if (withu) {
                        ca_same16("fuse_fwd2 u", u16[k], u32[k], D);
                        ca_same16b("fuse_fwd2 streaming u", unt[k], u16[k], D);
                    }
                }
                ca_same("fuse_fwd2 statistics", &st16[0][0], &st32[0][0], 12);
            }
        int64_t np;
        sn_fuse_query(&f, D, &np, NULL);
        for (int mode = 0; mode < 8; mode++) {
            const int accx = mode & 1, accy = (mode >> 1) & 1, withdu = (mode >> 2) & 1;
            const float *s0 = ca_row_rand(np > 0 ? np : 1, 0, 0.25f, 0.0f);
            float *slot32 = ca_row_copy(s0, np > 0 ? np : 1, 0);
            float *slot16 = ca_row_copy(s0, np > 0 ? np : 1, 0);
            const sn_dfuse dp32 = sn_k_fuse_dparams(&f, &L, D, slot32);
            const sn_dfuse dp16 = sn_k_fuse_dparams(&f, &L, D, slot16);
            sn_bf16 *dx16[2], *dy16[2];
            float *dx32[2], *dy32[2];
            for (int k = 0; k < 2; k++) {
                dx16[k] = ca_b16_rand(D, off + 12 + k, 1.0f, 0.0f);
                dy16[k] = ca_b16_rand(D, off + 14 + k, 1.0f, 0.0f);
                dx32[k] = ca_widen16(dx16[k], D), dy32[k] = ca_widen16(dy16[k], D);
            }
            const sn_bf16 *du16[2] = {withdu ? du[0] : NULL, withdu ? du[1] : NULL};
            const float *du32[2] = {withdu ? duf[0] : NULL, withdu ? duf[1] : NULL};
            /* row 0 alone (fuse_bwd), then both rows (fuse_bwd2) onto the same outputs */
            sn_rfuse Fa = F[0], Fb = F[0];
            p->K->fuse_bwd(&Fa, D, dhf[0], du32[0], xf[0], yf[0], dx32[0], dy32[0], accx, accy,
                           &dp32);
            p->K16->fuse_bwd(&Fb, D, dh[0], du16[0], x[0], y[0], dx16[0], dy16[0], accx, accy,
                             &dp16);
            ca_same16("fuse_bwd dx", dx16[0], dx32[0], D);
            ca_same16("fuse_bwd dy", dy16[0], dy32[0], D);
            ca_same("fuse_bwd parameter gradients", slot16, slot32, np);
            /* the fp32 outputs restarted from the bf16 ones (what a bf16 call accumulates into) */
            for (int k = 0; k < 2; k++)
                for (int64_t j = 0; j < D; j++) {
                    dx32[k][j] = sn_k_bf16_widen(dx16[k][j]);
                    dy32[k][j] = sn_k_bf16_widen(dy16[k][j]);
                }
            sn_rfuse F2a[2] = {F[0], F[1]}, F2b[2] = {F[0], F[1]};
            p->K->fuse_bwd2(F2a, D, dhf, du32, xf, yf, dx32, dy32, accx, accy, &dp32);
            p->K16->fuse_bwd2(F2b, D, dh, du16, x, y, dx16, dy16, accx, accy, &dp16);
            for (int k = 0; k < 2; k++) {
                ca_same16("fuse_bwd2 dx", dx16[k], dx32[k], D);
                ca_same16("fuse_bwd2 dy", dy16[k], dy32[k], D);
            }
            ca_same("fuse_bwd2 parameter gradients", slot16, slot32, np);
            /* the pieces: fuse_red, fuse_pg (from column 1 on), fuse_dx */
            sn_rfuse Ra = F[1], Rb = F[1];
            p->K->fuse_red(&Ra, D, dhf[1], du32[1], xf[1], yf[1]);
            p->K16->fuse_red(&Rb, D, dh[1], du16[1], x[1], y[1]);
            ca_same("fuse_red", &Rb.oa, &Ra.oa, 6);
            if (D > 1) {
                sn_rfuse Pa = Ra, Pb = Rb;
                sn_rnorm *na[3] = {&Pa.X, &Pa.Y, &Pa.O}, *nb[3] = {&Pb.X, &Pb.Y, &Pb.O};
                for (int k = 0; k < 3; k++) {
                    if (na[k]->gamma) na[k]->gamma++, nb[k]->gamma++;
                    if (na[k]->beta) na[k]->beta++, nb[k]->beta++;
                }
                float *d32[6] = {dp32.gx, dp32.bx, dp32.gy, dp32.by, dp32.go, dp32.bo};
                float *d16[6] = {dp16.gx, dp16.bx, dp16.gy, dp16.by, dp16.go, dp16.bo};
                for (int k = 0; k < 6; k++) {
                    if (d32[k]) d32[k]++;
                    if (d16[k]) d16[k]++;
                }
                const sn_dfuse q32 = {d32[0], d32[1], d32[2], d32[3], d32[4], d32[5]};
                const sn_dfuse q16 = {d16[0], d16[1], d16[2], d16[3], d16[4], d16[5]};
                p->K->fuse_pg(&Pa, D - 1, dhf[1] + 1, du32[1] ? du32[1] + 1 : NULL, xf[1] + 1,
                              yf[1] + 1, &q32);
                p->K16->fuse_pg(&Pb, D - 1, dh[1] + 1, du16[1] ? du16[1] + 1 : NULL, x[1] + 1,
                                y[1] + 1, &q16);
                ca_same("fuse_pg", slot16, slot32, np);
            }
            for (int64_t j = 0; j < D; j++) {
                dx32[1][j] = sn_k_bf16_widen(dx16[1][j]);
                dy32[1][j] = sn_k_bf16_widen(dy16[1][j]);
            }
            p->K->fuse_dx(&Ra, D, dhf[1], du32[1], xf[1], yf[1], dx32[1], dy32[1], accx, accy);
            p->K16->fuse_dx(&Rb, D, dh[1], du16[1], x[1], y[1], dx16[1], dy16[1], accx, accy);
            ca_same16("fuse_dx dx", dx16[1], dx32[1], D);
            ca_same16("fuse_dx dy", dy16[1], dy32[1], D);
            if (accx || !withdu) continue;
            /* dx = du, streaming stores, no parameter gradients: the same input gradients */
            sn_bf16 *ref = ca_row16(D, 0), *io = ca_b16_copy(du[0], D, off + 6);
            sn_bf16 *sdy = ca_b16_copy(dy16[0], D, 0), *ddy = ca_b16_copy(dy16[0], D, 0);
            Fa = F[0];
            p->K16->fuse_bwd(&Fa, D, dh[0], du[0], x[0], y[0], ref, sdy, 0, accy, NULL);
            Fa = F[0];
            p->K16->fuse_bwd(&Fa, D, dh[0], io, x[0], y[0], io, ddy, 0, accy, NULL);
            ca_same16b("fuse_bwd dx = du", io, ref, D);
            ca_same16b("fuse_bwd dx = du (dy)", ddy, sdy, D);
            sn_bf16 *ndx = ca_row16(D, 0), *ady = ca_b16_copy(dy16[0], D, 0);
            Fa = F[0];
            Fa.nt = 1;
            p->K16->fuse_bwd(&Fa, D, dh[0], du[0], x[0], y[0], ndx, ady, 0, accy, NULL);
            ca_same16b("fuse_bwd streaming dx", ndx, ref, D);
            ca_same16b("fuse_bwd streaming dy", ady, sdy, D);
        }
        ca_rows_ok("bf16 fuse");
        ca_rows_reset();
    }
}

static void check_fuse_bf16(const ca_path *p, const ca_path *ref) {
    (void)ref;
    for (int wi = 0; wi < ca_nwidths; wi++) {
        const int64_t D = ca_widths[wi];
        const int off = (int)(D % 16);
        ca_seed((uint64_t)D + 7);
        ca_where(p->name, "bf16 fuse", D, "offset %d", off);
        check_fuse16(p, D, off);
        ca_rows_reset();
    }
}

void check_fuse(const ca_path *p, const ca_path *ref, ca_type t) {
    static void (*const by_type[CA_NTYPES])(const ca_path *, const ca_path *) = {check_fuse_f32,
                                                                                 check_fuse_bf16};
    by_type[t](p, ref);
}
