/* checkasm: the bf16 tables (sn_kern16 of kernels.h, every slot) of every path (the scalar
 * path's stages its rows, the SIMD paths' are kernels_simd.h on bf16 rows), each slot against the same path's fp32 slot on the widened inputs: every bf16 output is
 * bitwise sn_k_bf16_round of the fp32 slot's output, every float output (statistics, parameter
 * gradients) bitwise the fp32 slot's; the aliasing the fp32 slot allows gives the same bits;
 * streaming stores change nothing; nothing is written outside the rows. The conversions widen
 * and round against sn_k_bf16_widen and sn_k_bf16_round. The fp32 slots themselves are checked
 * against scalar in the other check_* files. */
#include "checkasm.h"

#include <stdio.h>
#include <string.h>

/* ---- bf16 rows (ca_row16) ----------------------------------------------------------------- */

static sn_bf16 *b16_rand(int64_t n, int off, float scale, float shift) {
    sn_bf16 *p = ca_row16(n, off);
    for (int64_t j = 0; j < n; j++) p[j] = sn_k_bf16_round(shift + scale * ca_rand());
    return p;
}

static sn_bf16 *b16_copy(const sn_bf16 *src, int64_t n, int off) {
    sn_bf16 *p = ca_row16(n, off);
    memcpy(p, src, (size_t)n * sizeof *p);
    return p;
}

/* the fp32 row of a bf16 row's values */
static float *widen(const sn_bf16 *b, int64_t n) {
    float *f = ca_row(n, 0);
    for (int64_t j = 0; j < n; j++) f[j] = sn_k_bf16_widen(b[j]);
    return f;
}

/* bf16 row a is bitwise the rounding of fp32 row r */
static void same16(const char *what, const sn_bf16 *a, const float *r, int64_t n) {
    for (int64_t j = 0; j < n; j++)
        if (a[j] != sn_k_bf16_round(r[j])) {
            ca_check(0, "%s: [%lld] is %04x, the rounding of the fp32 slot's %.9g is %04x", what,
                     (long long)j, a[j], (double)r[j], sn_k_bf16_round(r[j]));
            return;
        }
    ca_check(1, "");
}
static void same16b(const char *what, const sn_bf16 *a, const sn_bf16 *b, int64_t n) {
    ca_check(memcmp(a, b, (size_t)n * sizeof *a) == 0, "%s: not bitwise the same", what);
}

/* ---- norms --------------------------------------------------------------------------------- */

static void check_norm16(const ca_path *p, int64_t W, int off) {
    for (int ni = 0; ni < CA_NNORMS; ni++) {
        const sn_norm n = ca_norm(ni);
        const float *prm = ca_row_rand(2 * W, off, 0.5f, 1.0f);
        const sn_rnorm q0 = sn_k_resolve(&n, W, prm, 0.0f, 1.0f);
        const sn_bf16 *v = b16_rand(W, off, 1.0f, 2.0f * ca_rand());
        const float *vf = widen(v, W);
        float *o32 = ca_row(W, 0), m32, r32, m16, r16v;
        sn_bf16 *o16 = ca_row16(W, off + 1);
        p->K->norm_fwd(&n, &q0, vf, W, o32, &m32, &r32);
        p->K16->norm_fwd(&n, &q0, v, W, o16, &m16, &r16v);
        same16("norm_fwd out", o16, o32, W);
        ca_same("norm_fwd mean", &m16, &m32, 1);
        ca_same("norm_fwd rstd", &r16v, &r32, 1);
        sn_bf16 *io = b16_copy(v, W, off);
        p->K16->norm_fwd(&n, &q0, io, W, io, &m16, &r16v);
        same16b("norm_fwd out = v", io, o16, W);

        /* stats2 (with a second row and another norm) and norm_row */
        const sn_norm n2 = ca_norm((ni + 4) % CA_NNORMS);
        const sn_bf16 *v2 = b16_rand(W, off + 4, 2.0f, ca_rand());
        const float *v2f = widen(v2, W);
        float s32[4], s16[4];
        p->K->stats2(&n, vf, &n2, v2f, W, &s32[0], &s32[1], &s32[2], &s32[3]);
        p->K16->stats2(&n, v, &n2, v2, W, &s16[0], &s16[1], &s16[2], &s16[3]);
        ca_same("stats2", s16, s32, 4);
        sn_rnorm qs = q0;
        sn_k_set_stats(&qs, n.kind, s32[0], s32[1]);
        float *row32 = ca_row(W, 0);
        sn_bf16 *row16 = ca_row16(W, off + 5);
        p->K->norm_row(&qs, vf, W, row32);
        p->K16->norm_row(&qs, v, W, row16);
        same16("norm_row", row16, row32, W);
        sn_bf16 *rows16 = ca_row16(W, off + 9);
        p->K16->norm_s(&qs, vf, W, rows16);
        same16("norm_s", rows16, row32, W);

        sn_rnorm q = sn_k_resolve(&n, W, prm, m32, r32);
        const sn_bf16 *dout = b16_rand(W, off + 2, 1.0f, 0.0f);
        const float *doutf = widen(dout, W);
        for (int acc = 0; acc < 2; acc++) {
            const float *g0 = ca_row_rand(2 * W, off, 0.25f, 0.0f);
            float *dg32 = ca_row_copy(g0, 2 * W, 0), *dg16 = ca_row_copy(g0, 2 * W, 0);
            sn_bf16 *dv16 = b16_rand(W, off + 3, 1.0f, 0.0f);
            float *dv32 = widen(dv16, W);
            float *gm32 = q.gamma ? dg32 : NULL, *bt32 = q.beta ? dg32 + W : NULL;
            float *gm16 = q.gamma ? dg16 : NULL, *bt16 = q.beta ? dg16 + W : NULL;
            p->K->norm_bwd(&q, doutf, vf, W, dv32, acc, gm32, bt32);
            p->K16->norm_bwd(&q, dout, v, W, dv16, acc, gm16, bt16);
            same16("norm_bwd dv", dv16, dv32, W);
            ca_same("norm_bwd dgamma, dbeta", dg16, dg32, 2 * W);
            /* norm_bwd2: two segments (the second with the other row's statistics) */
            sn_rnorm q2[2] = {q, sn_k_resolve(&n, W, prm, s32[0], s32[1])};
            const sn_bf16 *dd[2] = {dout, b16_rand(W, off + 6, 1.0f, 0.0f)};
            const float *ddf[2] = {doutf, widen(dd[1], W)};
            const sn_bf16 *vv[2] = {v, v2};
            const float *vvf[2] = {vf, v2f};
            sn_bf16 *o2[2] = {b16_rand(W, off + 7, 1.0f, 0.0f), b16_rand(W, off + 8, 1.0f, 0.0f)};
            float *o2f[2] = {widen(o2[0], W), widen(o2[1], W)};
            p->K->norm_bwd2(q2, ddf, vvf, W, o2f, acc, gm32, bt32);
            p->K16->norm_bwd2(q2, dd, vv, W, o2, acc, gm16, bt16);
            same16("norm_bwd2 dv 0", o2[0], o2f[0], W);
            same16("norm_bwd2 dv 1", o2[1], o2f[1], W);
            ca_same("norm_bwd2 dgamma, dbeta", dg16, dg32, 2 * W);
            /* norm_pg over the columns from 1 on */
            if (W > 1) {
                p->K->norm_pg(&q, doutf + 1, vf + 1, W - 1, gm32 ? gm32 + 1 : NULL,
                              bt32 ? bt32 + 1 : NULL);
                p->K16->norm_pg(&q, dout + 1, v + 1, W - 1, gm16 ? gm16 + 1 : NULL,
                                bt16 ? bt16 + 1 : NULL);
                ca_same("norm_pg", dg16, dg32, 2 * W);
            }
            if (acc) continue;
            sn_bf16 *id = b16_copy(dout, W, off + 2);
            p->K16->norm_bwd(&q, id, v, W, id, 0, NULL, NULL);
            same16b("norm_bwd dv = dout", id, dv16, W);
        }
        ca_rows_ok("bf16 norm");
        ca_rows_reset();
    }
}

/* ---- fuses --------------------------------------------------------------------------------- */

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
            x[k] = b16_rand(D, off + k, 1.0f, 2.0f * ca_rand());
            y[k] = b16_rand(D, off + 2 + k, 1.5f, ca_rand());
            dh[k] = b16_rand(D, off + 4 + k, 1.0f, 0.0f);
            du[k] = b16_rand(D, off + 6 + k, 0.5f, 0.0f);
            xf[k] = widen(x[k], D), yf[k] = widen(y[k], D);
            dhf[k] = widen(dh[k], D), duf[k] = widen(du[k], D);
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
            same16("fuse_s u", u16, u32, D);
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
                    same16("fuse_fwd2 h", h16[k], h32[k], D);
                    same16b("fuse_fwd2 streaming h", hnt[k], h16[k], D);
                    if (withu) {
                        same16("fuse_fwd2 u", u16[k], u32[k], D);
                        same16b("fuse_fwd2 streaming u", unt[k], u16[k], D);
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
                dx16[k] = b16_rand(D, off + 12 + k, 1.0f, 0.0f);
                dy16[k] = b16_rand(D, off + 14 + k, 1.0f, 0.0f);
                dx32[k] = widen(dx16[k], D), dy32[k] = widen(dy16[k], D);
            }
            const sn_bf16 *du16[2] = {withdu ? du[0] : NULL, withdu ? du[1] : NULL};
            const float *du32[2] = {withdu ? duf[0] : NULL, withdu ? duf[1] : NULL};
            /* row 0 alone (fuse_bwd), then both rows (fuse_bwd2) onto the same outputs */
            sn_rfuse Fa = F[0], Fb = F[0];
            p->K->fuse_bwd(&Fa, D, dhf[0], du32[0], xf[0], yf[0], dx32[0], dy32[0], accx, accy,
                           &dp32);
            p->K16->fuse_bwd(&Fb, D, dh[0], du16[0], x[0], y[0], dx16[0], dy16[0], accx, accy,
                             &dp16);
            same16("fuse_bwd dx", dx16[0], dx32[0], D);
            same16("fuse_bwd dy", dy16[0], dy32[0], D);
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
                same16("fuse_bwd2 dx", dx16[k], dx32[k], D);
                same16("fuse_bwd2 dy", dy16[k], dy32[k], D);
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
            same16("fuse_dx dx", dx16[1], dx32[1], D);
            same16("fuse_dx dy", dy16[1], dy32[1], D);
            if (accx || !withdu) continue;
            /* dx = du, streaming stores, no parameter gradients: the same input gradients */
            sn_bf16 *ref = ca_row16(D, 0), *io = b16_copy(du[0], D, off + 6);
            sn_bf16 *sdy = b16_copy(dy16[0], D, 0), *ddy = b16_copy(dy16[0], D, 0);
            Fa = F[0];
            p->K16->fuse_bwd(&Fa, D, dh[0], du[0], x[0], y[0], ref, sdy, 0, accy, NULL);
            Fa = F[0];
            p->K16->fuse_bwd(&Fa, D, dh[0], io, x[0], y[0], io, ddy, 0, accy, NULL);
            same16b("fuse_bwd dx = du", io, ref, D);
            same16b("fuse_bwd dx = du (dy)", ddy, sdy, D);
            sn_bf16 *ndx = ca_row16(D, 0), *ady = b16_copy(dy16[0], D, 0);
            Fa = F[0];
            Fa.nt = 1;
            p->K16->fuse_bwd(&Fa, D, dh[0], du[0], x[0], y[0], ndx, ady, 0, accy, NULL);
            same16b("fuse_bwd streaming dx", ndx, ref, D);
            same16b("fuse_bwd streaming dy", ady, sdy, D);
        }
        ca_rows_ok("bf16 fuse");
        ca_rows_reset();
    }
}

/* ---- elementwise --------------------------------------------------------------------------- */

static void check_elem16(const ca_path *p, int64_t D, int off) {
    const sn_bf16 *a = b16_rand(D, off, 1.0f, 0.0f), *b = b16_rand(D, off + 1, 2.0f, 0.5f),
                  *c = b16_rand(D, off + 2, 3.0f, 0.0f);
    const float *af = widen(a, D), *bf = widen(b, D), *cf = widen(c, D);
    for (int acc = 0; acc < 2; acc++) {
        sn_bf16 *o16 = b16_rand(D, off + 3, 1.0f, 0.0f), *ont = b16_copy(o16, D, 0);
        float *o32 = widen(o16, D);
        p->K->add_div(af, bf, 1.7f, o32, D, acc, 0);
        p->K16->add_div(a, b, 1.7f, o16, D, acc, 0);
        same16("add_div", o16, o32, D);
        if (acc) continue;
        p->K16->add_div(a, b, 1.7f, ont, D, 0, 1);
        same16b("add_div streaming", ont, o16, D);
        sn_bf16 *ia = b16_copy(a, D, off), *ib = b16_copy(b, D, off + 1);
        p->K16->add_div(ia, b, 1.7f, ia, D, 0, 0);
        p->K16->add_div(a, ib, 1.7f, ib, D, 0, 0);
        same16b("add_div out = a", ia, o16, D);
        same16b("add_div out = b", ib, o16, D);
    }
    for (int nt = 0; nt < 2; nt++) {
        sn_bf16 *xo = ca_row16(D, off + 4), *yo = ca_row16(D, off + 5), *ax = ca_row16(D, off + 6);
        float *xo32 = ca_row(D, 0), *yo32 = ca_row(D, 0), *ax32 = ca_row(D, 0);
        p->K->apply(af, bf, cf, 2.3f, xo32, yo32, D, 0);
        p->K16->apply(a, b, c, 2.3f, xo, yo, D, nt);
        same16("apply xo", xo, xo32, D);
        same16("apply yo", yo, yo32, D);
        p->K->axpy(af, bf, 1.3f, ax32, D, 0);
        p->K16->axpy(a, b, 1.3f, ax, D, nt);
        same16("axpy", ax, ax32, D);
    }
    /* copy: widened and rounded (bitwise the rounding of the values: NaNs quieted), also in
     * place */
    sn_bf16 *cp = ca_row16(D, off + 7), *ic = b16_copy(a, D, off);
    p->K16->copy(a, cp, D);
    same16("copy", cp, af, D);
    p->K16->copy(ic, ic, D);
    same16b("copy out = a", ic, cp, D);
    sn_bf16 *iu = b16_copy(b, D, off + 1), *iy = b16_copy(c, D, off + 2);
    float *xo32 = ca_row(D, 0), *yo32 = ca_row(D, 0);
    p->K->apply(af, bf, cf, 2.3f, xo32, yo32, D, 0);
    p->K16->apply(a, iu, iy, 2.3f, iu, iy, D, 0);
    same16("apply xo = u", iu, xo32, D);
    same16("apply yo = y", iy, yo32, D);
    ca_rows_ok("bf16 elementwise");
}

/* the table's rounding against sn_k_bf16_round: special values (ties, NaNs, infinities,
 * subnormals, overflow) at every width; and all 2^32 floats for the table that rounds with
 * AVX512-BF16 (a different instruction: its agreement is the claim to check), every 257th for
 * the others (the same integer formula as the scalar one) and under the sanitizers */
static void check_round16(const ca_path *p, int64_t D, int off) {
    float *v = ca_row_rand(D, off, 3.0f, 0.0f);
    static const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x7fc00001u, 0xff800001u,
                                       0x7f7fffffu, 0x00018000u, 0x80000001u, 0x7f800000u,
                                       0x007fffffu, 0x807f8000u, 0xffffffffu, 0x7f808000u};
    for (int64_t j = 0; j < D && j < 12; j++) memcpy(&v[(j * 5) % D], &special[j], sizeof(float));
    sn_bf16 *b = ca_row16(D, off + 1);
    p->K16->round(v, D, b);
    same16("round", b, v, D);
    /* and back: bitwise sn_k_bf16_widen (of these values, NaN payloads included) */
    float *w = ca_row(D, off + 2);
    p->K16->widen(b, D, w);
    ca_check(memcmp(w, widen(b, D), (size_t)D * sizeof *w) == 0, "widen: not sn_k_bf16_widen");
    ca_rows_ok("bf16 conversions");
}

static void check_round16_all(const ca_path *p) {
    enum { N = 4096 };
    float *v = ca_row(N, 0);
    sn_bf16 *b = ca_row16(N, 0);
    uint64_t step = 257;
#if defined(SN_HAVE_AVX512BF16) && !defined(SN_TEST_SMALL)
    if (p->K16 == &sn_kern16_avx512bf16) step = 1;
#endif
    uint64_t bad = 0, first = 0;
    for (uint64_t u0 = 0; u0 < (1ull << 32); u0 += N * step) {
        for (uint64_t k = 0; k < N; k++) {
            const uint32_t u = (uint32_t)(u0 + k * step);
            memcpy(&v[k], &u, sizeof u);
        }
        p->K16->round(v, N, b);
        for (uint64_t k = 0; k < N; k++)
            if (b[k] != sn_k_bf16_round(v[k]) && bad++ == 0) first = u0 + k * step;
    }
    ca_check(bad == 0, "round: %llu of 2^32 / %llu floats round differently, first %08llx",
             (unsigned long long)bad, (unsigned long long)step, (unsigned long long)first);
    ca_rows_ok("bf16 round");
    ca_rows_reset();
}

void check_bf16k(const ca_path *p) {
    if (!p->K16) return;
    ca_where(p->name, "bf16 round", 0, "all floats");
    check_round16_all(p);
    for (int wi = 0; wi < ca_nwidths; wi++) {
        const int64_t D = ca_widths[wi];
        const int off = (int)(D % 16);
        ca_seed((uint64_t)D + 7);
        ca_where(p->name, "bf16 norm", D, "offset %d", off);
        check_norm16(p, D, off);
        ca_rows_reset();
        ca_where(p->name, "bf16 fuse", D, "offset %d", off);
        check_fuse16(p, D, off);
        ca_where(p->name, "bf16 elementwise", D, "offset %d", off);
        check_elem16(p, D, off);
        check_round16(p, D, off);
        ca_rows_reset();
    }
}

/* ---- --bench: each bf16 slot beside its fp32 slot ------------------------------------------ */

typedef struct bb {
    const ca_path *p;
    int64_t D;
    sn_norm n;
    sn_fuse f;
    sn_rnorm q0, q;
    sn_rfuse F0, F[2];
    sn_dfuse dp;
    const float *xf[2], *yf[2], *dhf[2], *duf[2];
    float *of[4], st[2][6];
    const sn_bf16 *x[2], *y[2], *dh[2], *du[2];
    sn_bf16 *o[4];
} bb;

static void b32_nfwd(void *a) {
    bb *e = a;
    float m, r;
    e->p->K->norm_fwd(&e->n, &e->q0, e->xf[0], e->D, e->of[0], &m, &r);
}
static void b16_nfwd(void *a) {
    bb *e = a;
    float m, r;
    e->p->K16->norm_fwd(&e->n, &e->q0, e->x[0], e->D, e->o[0], &m, &r);
}
static void b32_nbwd(void *a) {
    bb *e = a;
    e->p->K->norm_bwd(&e->q, e->dhf[0], e->xf[0], e->D, e->of[0], 0, e->of[2], e->of[3]);
}
static void b16_nbwd(void *a) {
    bb *e = a;
    e->p->K16->norm_bwd(&e->q, e->dh[0], e->x[0], e->D, e->o[0], 0, e->of[2], e->of[3]);
}
static void b32_ffwd2(void *a) {
    bb *e = a;
    float *u[2] = {e->of[0], e->of[1]}, *h[2] = {e->of[2], e->of[3]};
    e->p->K->fuse_fwd2(&e->F0, &e->f, e->D, e->xf, e->yf, u, h, e->st);
}
static void b16_ffwd2(void *a) {
    bb *e = a;
    sn_bf16 *u[2] = {e->o[0], e->o[1]}, *h[2] = {e->o[2], e->o[3]};
    e->p->K16->fuse_fwd2(&e->F0, &e->f, e->D, e->x, e->y, u, h, e->st);
}
static void b32_fbwd2(void *a) {
    bb *e = a;
    sn_rfuse F[2] = {e->F[0], e->F[1]};
    float *dx[2] = {e->of[0], e->of[1]}, *dy[2] = {e->of[2], e->of[3]};
    e->p->K->fuse_bwd2(F, e->D, e->dhf, e->duf, e->xf, e->yf, dx, dy, 0, 1, &e->dp);
}
static void b16_fbwd2(void *a) {
    bb *e = a;
    sn_rfuse F[2] = {e->F[0], e->F[1]};
    sn_bf16 *dx[2] = {e->o[0], e->o[1]}, *dy[2] = {e->o[2], e->o[3]};
    e->p->K16->fuse_bwd2(F, e->D, e->dh, e->du, e->x, e->y, dx, dy, 0, 1, &e->dp);
}
static void b32_apply(void *a) {
    bb *e = a;
    e->p->K->apply(e->xf[0], e->yf[0], e->dhf[0], 2.3f, e->of[0], e->of[1], e->D, 0);
}
static void b16_apply(void *a) {
    bb *e = a;
    e->p->K16->apply(e->x[0], e->y[0], e->dh[0], 2.3f, e->o[0], e->o[1], e->D, 0);
}
static void b16_round(void *a) {
    bb *e = a;
    e->p->K16->round(e->xf[0], e->D, e->o[0]);
}
static void b16_widen(void *a) {
    bb *e = a;
    e->p->K16->widen(e->x[0], e->D, e->of[0]);
}

void bench_bf16k(const ca_path *p) {
    if (!p->K16) return;
    const int64_t Ds[2] = {64, 768};
    for (int di = 0; di < 2; di++) {
        bb e;
        memset(&e, 0, sizeof e);
        e.p = p;
        e.D = Ds[di];
        const int64_t D = e.D;
        e.n = ca_norm(0);
        e.f.x = e.f.y = e.f.out = ca_norm(0);
        const float *prm = ca_row_rand(6 * D, 0, 0.5f, 1.0f);
        e.q0 = sn_k_resolve(&e.n, D, prm, 0.0f, 1.0f);
        e.q = sn_k_resolve(&e.n, D, prm, 0.1f, 1.2f);
        e.F0.X = e.F0.Y = e.F0.O = e.q0;
        e.F[0].X = e.F[0].Y = e.F[0].O = e.q;
        e.F[1] = e.F[0];
        float *slot = ca_row(6 * D, 0);
        e.dp = (sn_dfuse){slot, slot + D, slot + 2 * D, slot + 3 * D, slot + 4 * D, slot + 5 * D};
        for (int k = 0; k < 2; k++) {
            e.x[k] = b16_rand(D, 0, 1.0f, 0.0f), e.y[k] = b16_rand(D, 0, 1.0f, 0.0f);
            e.dh[k] = b16_rand(D, 0, 1.0f, 0.0f), e.du[k] = b16_rand(D, 0, 1.0f, 0.0f);
            e.xf[k] = widen(e.x[k], D), e.yf[k] = widen(e.y[k], D);
            e.dhf[k] = widen(e.dh[k], D), e.duf[k] = widen(e.du[k], D);
        }
        for (int k = 0; k < 4; k++) e.o[k] = ca_row16(D, 0), e.of[k] = ca_row(D, 0);
        /* each slot in fp32, then in bf16; the fuse pairs over 2 * D elements */
        static const struct {
            const char *slot;
            int rows;
            void (*fn[2])(void *);
        } slots[] = {{"norm_fwd", 1, {b32_nfwd, b16_nfwd}},
                     {"norm_bwd", 1, {b32_nbwd, b16_nbwd}},
                     {"fuse_fwd2", 2, {b32_ffwd2, b16_ffwd2}},
                     {"fuse_bwd2", 2, {b32_fbwd2, b16_fbwd2}},
                     {"apply", 1, {b32_apply, b16_apply}}};
        for (int t = 0; t < 2; t++) {
            char name[32];
            snprintf(name, sizeof name, "%s %s", p->name, t ? "bf16" : "f32");
            for (size_t k = 0; k < sizeof slots / sizeof slots[0]; k++)
                ca_bench(slots[k].slot, name, slots[k].rows * D, slots[k].fn[t], &e);
        }
        ca_bench("round", p->name, D, b16_round, &e); /* the conversions: no fp32 twin */
        ca_bench("widen", p->name, D, b16_widen, &e);
        ca_rows_reset();
    }
}
