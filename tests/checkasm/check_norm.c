/* checkasm: the one-norm slots (norm_fwd, stats2, norm_row, norm_s, norm_pg, norm_bwd, norm_bwd2)
 * of kernels.h, for every norm kind and affine mode, on fp32 rows (against scalar) and on bf16
 * rows (against the path's fp32 slots, bitwise). The statistics every backward slot reads are
 * the scalar forward's, so each slot is compared on the same inputs. */
#include "checkasm.h"

#include <string.h>

/* one norm on one row (a second row for the two-row slots), inputs and resolved norms */
typedef struct nc {
    sn_norm n;
    int64_t W;
    const float *v[2], *dout[2], *params;
    sn_rnorm q0, q[2]; /* without statistics; with row 0's and row 1's (the scalar forward's) */
} nc;

static void setup(nc *c, const ca_path *ref, sn_norm n, int64_t W, int off, int adjacent) {
    c->n = n;
    c->W = W;
    float *v, *dout;
    if (adjacent) { /* the two rows are two groups of one row */
        v = ca_row(2 * W, off);
        dout = ca_row_rand(2 * W, off + 3, 1.0f, 0.0f);
        for (int64_t j = 0; j < 2 * W; j++) v[j] = (j < W ? 2.0f : -1.5f) + ca_rand();
        c->v[0] = v, c->v[1] = v + W, c->dout[0] = dout, c->dout[1] = dout + W;
    } else {
        c->v[0] = ca_row_rand(W, off, 1.0f, 3.0f * ca_rand()); /* |mean| > std */
        c->v[1] = ca_row_rand(W, off + 5, 1.0f, 3.0f * ca_rand());
        c->dout[0] = ca_row_rand(W, off + 1, 1.0f, 0.0f);
        c->dout[1] = ca_row_rand(W, off + 7, 1.0f, 0.0f);
    }
    c->params = ca_row_rand(2 * W, off + 2, 0.5f, 1.0f);
    c->q0 = sn_k_resolve(&n, W, c->params, 0.0f, 1.0f);
    for (int k = 0; k < 2; k++) {
        float m, r;
        float *tmp = ca_row(W, 0);
        ref->K->norm_fwd(&n, &c->q0, c->v[k], W, tmp, &m, &r);
        c->q[k] = sn_k_resolve(&n, W, c->params, m, r);
    }
}

/* norm_fwd against scalar, and bitwise: stats2 on the row then norm_row; in place; streaming */
static void check_fwd(const ca_path *p, const ca_path *ref, const nc *c, int off) {
    const int64_t W = c->W;
    float *out = ca_row(W, off + 9), *out_r = ca_row(W, 0);
    float m, r, m_r, r_r;
    p->K->norm_fwd(&c->n, &c->q0, c->v[0], W, out, &m, &r);
    ref->K->norm_fwd(&c->n, &c->q0, c->v[0], W, out_r, &m_r, &r_r);
    ca_close("norm_fwd out", out, out_r, W);
    ca_close("norm_fwd mean", &m, &m_r, 1);
    ca_close("norm_fwd rstd", &r, &r_r, 1);

    /* stats2 then norm_row; each stats2 row the same whatever the other row and its norm */
    for (int k = 0; k < 4; k++) {
        const sn_norm nb = ca_norm(3 * k);
        float ma, ra, mb, rb, mb_r, rb_r, ma_r, ra_r;
        p->K->stats2(&c->n, c->v[0], &nb, c->v[1], W, &ma, &ra, &mb, &rb);
        ca_same("stats2 row a vs norm_fwd mean", &ma, &m, 1);
        ca_same("stats2 row a vs norm_fwd rstd", &ra, &r, 1);
        ref->K->stats2(&c->n, c->v[0], &nb, c->v[1], W, &ma_r, &ra_r, &mb_r, &rb_r);
        ca_close("stats2 mean b", &mb, &mb_r, 1);
        ca_close("stats2 rstd b", &rb, &rb_r, 1);
        float mb2, rb2, mx, rx;
        p->K->stats2(&nb, c->v[1], &c->n, c->v[0], W, &mb2, &rb2, &mx, &rx);
        ca_same("stats2 row b vs row b in place a", &mb2, &mb, 1);
        ca_same("stats2 rstd b vs rstd b in place a", &rb2, &rb, 1);
        ca_same("stats2 row a in place b", &mx, &m, 1);
        ca_same("stats2 rstd a in place b", &rx, &r, 1);
    }
    sn_rnorm q = c->q0;
    sn_k_set_stats(&q, c->n.kind, m, r);
    float *out2 = ca_row(W, off + 4);
    p->K->norm_row(&q, c->v[0], W, out2);
    ca_same("norm_fwd vs stats2 + norm_row", out, out2, W);

    float *io = ca_row_copy(c->v[0], W, off + 9); /* out may equal v */
    p->K->norm_fwd(&c->n, &c->q0, io, W, io, &m, &r);
    ca_same("norm_fwd in place", io, out, W);
    sn_rnorm q0nt = c->q0;
    q0nt.nt = 1;
    float *nt = ca_row(W, 0); /* vector-aligned: streaming stores taken */
    p->K->norm_fwd(&c->n, &q0nt, c->v[0], W, nt, &m, &r);
    ca_same("norm_fwd streaming", nt, out, W);
    ca_rows_ok("norm_fwd/stats2/norm_row");
}

/* norm_row against scalar; in place; streaming */
static void check_row(const ca_path *p, const ca_path *ref, const nc *c, int off) {
    const int64_t W = c->W;
    float *out = ca_row(W, off + 6), *out_r = ca_row(W, 0);
    p->K->norm_row(&c->q[0], c->v[0], W, out);
    ref->K->norm_row(&c->q[0], c->v[0], W, out_r);
    ca_close("norm_row", out, out_r, W);
    float *io = ca_row_copy(c->v[0], W, off);
    p->K->norm_row(&c->q[0], io, W, io);
    ca_same("norm_row in place", io, out, W);
    sn_rnorm qnt = c->q[0];
    qnt.nt = 1;
    float *nt = ca_row(W, 0);
    p->K->norm_row(&qnt, c->v[0], W, nt);
    ca_same("norm_row streaming", nt, out, W);
    /* out 64 bytes past v modulo 4 KiB (the SIMD paths sweep down: sweep_down and COLS_EITHER, simd_rows.h),
     * then 64 bytes before it (up): the same bits */
    const int64_t gap = (W + 1023) / 1024 * 1024 + 16;
    float *two = ca_row(gap + W, 0);
    memcpy(two, c->v[0], (size_t)W * sizeof(float));
    p->K->norm_row(&c->q[0], two, W, two + gap);
    ca_same("norm_row swept down", two + gap, out, W);
    memcpy(two + gap, c->v[0], (size_t)W * sizeof(float));
    p->K->norm_row(&c->q[0], two + gap, W, two);
    ca_same("norm_row swept up", two, out, W);
    ca_rows_ok("norm_row");
}

/* norm_pg against scalar; any split of the columns; either gradient alone */
static void check_pg(const ca_path *p, const ca_path *ref, const nc *c, int off) {
    const int64_t W = c->W;
    const sn_rnorm *q = &c->q[0];
    float *dg = ca_row(W, off + 1), *db = ca_row(W, off + 2);
    float *dg_r = ca_row(W, 0), *db_r = ca_row(W, 0);
    p->K->norm_pg(q, c->dout[0], c->v[0], W, dg, db);
    ref->K->norm_pg(q, c->dout[0], c->v[0], W, dg_r, db_r);
    ca_close("norm_pg dgamma", dg, dg_r, W);
    ca_close("norm_pg dbeta", db, db_r, W);
    const int64_t cut = W * 5 / 11;
    float *dg2 = ca_row(W, off + 3), *db2 = ca_row(W, off + 4);
    p->K->norm_pg(q, c->dout[0], c->v[0], cut, dg2, db2);
    p->K->norm_pg(q, c->dout[0] + cut, c->v[0] + cut, W - cut, dg2 + cut, db2 + cut);
    ca_same("norm_pg split columns dgamma", dg2, dg, W);
    ca_same("norm_pg split columns dbeta", db2, db, W);
    float *dg3 = ca_row(W, off + 5), *db3 = ca_row(W, off + 6);
    p->K->norm_pg(q, c->dout[0], c->v[0], W, dg3, NULL);
    p->K->norm_pg(q, c->dout[0], c->v[0], W, NULL, db3);
    ca_same("norm_pg dgamma alone", dg3, dg, W);
    ca_same("norm_pg dbeta alone", db3, db, W);
    ca_rows_ok("norm_pg");
}

/* norm_bwd against scalar; dv the same without parameter gradients; those the same as
 * norm_pg's; in place; streaming */
static void check_bwd(const ca_path *p, const ca_path *ref, const nc *c, int off, int acc) {
    const int64_t W = c->W;
    const sn_rnorm *q = &c->q[0];
    float *dv = ca_row(W, off + 3), *dv_r = ca_row(W, 0);
    float *dg = q->gamma ? ca_row(W, off + 1) : NULL, *db = q->beta ? ca_row(W, off + 2) : NULL;
    float *dg_r = q->gamma ? ca_row(W, 0) : NULL, *db_r = q->beta ? ca_row(W, 0) : NULL;
    p->K->norm_bwd(q, c->dout[0], c->v[0], W, dv, acc, dg, db);
    ref->K->norm_bwd(q, c->dout[0], c->v[0], W, dv_r, acc, dg_r, db_r);
    ca_close("norm_bwd dv", dv, dv_r, W);
    if (dg) ca_close("norm_bwd dgamma", dg, dg_r, W);
    if (db) ca_close("norm_bwd dbeta", db, db_r, W);
    float *dv2 = ca_row(W, off + 4);
    p->K->norm_bwd(q, c->dout[0], c->v[0], W, dv2, acc, NULL, NULL);
    ca_same("norm_bwd dv without parameter gradients", dv2, dv, W);
    /* dv 64 bytes past dout and 128 past v modulo 4 KiB (the SIMD paths sweep down:
     * sweep_down, simd_rows.h), from dv's starting values: the same bits */
    const int64_t gap = (W + 1023) / 1024 * 1024 + 16;
    float *three = ca_row(2 * gap + W, 0), *init = ca_row(W, 0);
    memcpy(three, c->v[0], (size_t)W * sizeof(float));
    memcpy(three + gap, c->dout[0], (size_t)W * sizeof(float));
    memcpy(three + 2 * gap, init, (size_t)W * sizeof(float));
    p->K->norm_bwd(q, three + gap, three, W, three + 2 * gap, acc, NULL, NULL);
    ca_same("norm_bwd swept down", three + 2 * gap, dv, W);
    if (dg || db) {
        float *pg = dg ? ca_row(W, off) : NULL, *pb = db ? ca_row(W, off + 5) : NULL;
        p->K->norm_pg(q, c->dout[0], c->v[0], W, pg, pb);
        if (dg) ca_same("norm_bwd dgamma vs norm_pg", dg, pg, W);
        if (db) ca_same("norm_bwd dbeta vs norm_pg", db, pb, W);
    }
    if (!acc) {
        float *io = ca_row_copy(c->dout[0], W, off + 3); /* dv may equal dout */
        p->K->norm_bwd(q, io, c->v[0], W, io, 0, NULL, NULL);
        ca_same("norm_bwd in place", io, dv, W);
        sn_rnorm qnt = *q;
        qnt.nt = 1;
        float *nt = ca_row(W, 0);
        p->K->norm_bwd(&qnt, c->dout[0], c->v[0], W, nt, 0, NULL, NULL);
        ca_same("norm_bwd streaming", nt, dv, W);
    }
    ca_rows_ok("norm_bwd");
}

/* norm_bwd2 bitwise as norm_bwd on segment 0 then segment 1; against scalar */
static void check_bwd2(const ca_path *p, const ca_path *ref, const nc *c, int off, int acc) {
    const int64_t W = c->W;
    const sn_rnorm *q = c->q;
    float *dv[2] = {ca_row(W, off + 1), ca_row(W, off + 2)};
    float *dv1[2] = {ca_row(W, off + 3), ca_row(W, off + 4)};
    float *dv_r[2] = {ca_row(W, 0), ca_row(W, 0)};
    float *dg = q->gamma ? ca_row(W, off) : NULL, *db = q->beta ? ca_row(W, off + 5) : NULL;
    float *dg1 = q->gamma ? ca_row(W, off + 6) : NULL, *db1 = q->beta ? ca_row(W, off + 7) : NULL;
    float *dg_r = q->gamma ? ca_row(W, 0) : NULL, *db_r = q->beta ? ca_row(W, 0) : NULL;
    p->K->norm_bwd2(q, c->dout, c->v, W, dv, acc, dg, db);
    for (int k = 0; k < 2; k++)
        p->K->norm_bwd(&q[k], c->dout[k], c->v[k], W, dv1[k], acc, dg1, db1);
    ref->K->norm_bwd2(q, c->dout, c->v, W, dv_r, acc, dg_r, db_r);
    for (int k = 0; k < 2; k++) {
        ca_same("norm_bwd2 dv vs norm_bwd twice", dv[k], dv1[k], W);
        ca_close("norm_bwd2 dv", dv[k], dv_r[k], W);
    }
    if (dg) ca_same("norm_bwd2 dgamma vs norm_bwd twice", dg, dg1, W);
    if (db) ca_same("norm_bwd2 dbeta vs norm_bwd twice", db, db1, W);
    if (dg) ca_close("norm_bwd2 dgamma", dg, dg_r, W);
    if (db) ca_close("norm_bwd2 dbeta", db, db_r, W);
    ca_rows_ok("norm_bwd2");
}

static void check_norm_f32(const ca_path *p, const ca_path *ref) {
    for (int wi = 0; wi < ca_nwidths; wi++) {
        const int64_t W = ca_widths[wi];
        for (int i = 0; i < CA_NNORMS; i++) {
            const sn_norm n = ca_norm(i);
            const int off = (int)((W + 3 * i) % 16);
            for (int adjacent = 0; adjacent < 2; adjacent++) {
                ca_seed((uint64_t)(W * 64 + i * 2 + adjacent));
                nc c;
                setup(&c, ref, n, W, off, adjacent);
                ca_where(p->name, "norm", W, "norm kind %d affine %d, offset %d%s", n.kind,
                         n.affine, off, adjacent ? ", groups" : "");
                if (!adjacent) {
                    check_fwd(p, ref, &c, off);
                    check_row(p, ref, &c, off);
                    check_pg(p, ref, &c, off);
                    check_bwd(p, ref, &c, off, 0);
                    check_bwd(p, ref, &c, off, 1);
                }
                check_bwd2(p, ref, &c, off, adjacent);
                ca_rows_reset();
            }
        }
    }
}

/* ---- bf16 rows: each slot against the same path's fp32 slot on the widened inputs ------- */

static void check_norm16(const ca_path *p, int64_t W, int off) {
    for (int ni = 0; ni < CA_NNORMS; ni++) {
        const sn_norm n = ca_norm(ni);
        const float *prm = ca_row_rand(2 * W, off, 0.5f, 1.0f);
        const sn_rnorm q0 = sn_k_resolve(&n, W, prm, 0.0f, 1.0f);
        const sn_bf16 *v = ca_b16_rand(W, off, 1.0f, 2.0f * ca_rand());
        const float *vf = ca_widen16(v, W);
        float *o32 = ca_row(W, 0), m32, r32, m16, r16v;
        sn_bf16 *o16 = ca_row16(W, off + 1);
        p->K->norm_fwd(&n, &q0, vf, W, o32, &m32, &r32);
        p->K16->norm_fwd(&n, &q0, v, W, o16, &m16, &r16v);
        ca_same16("norm_fwd out", o16, o32, W);
        ca_same("norm_fwd mean", &m16, &m32, 1);
        ca_same("norm_fwd rstd", &r16v, &r32, 1);
        sn_bf16 *io = ca_b16_copy(v, W, off);
        p->K16->norm_fwd(&n, &q0, io, W, io, &m16, &r16v);
        ca_same16b("norm_fwd out = v", io, o16, W);

        /* stats2 (with a second row and another norm) and norm_row */
        const sn_norm n2 = ca_norm((ni + 4) % CA_NNORMS);
        const sn_bf16 *v2 = ca_b16_rand(W, off + 4, 2.0f, ca_rand());
        const float *v2f = ca_widen16(v2, W);
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
        ca_same16("norm_row", row16, row32, W);
        sn_bf16 *rows16 = ca_row16(W, off + 9);
        p->K16->norm_s(&qs, vf, W, rows16);
        ca_same16("norm_s", rows16, row32, W);

        sn_rnorm q = sn_k_resolve(&n, W, prm, m32, r32);
        const sn_bf16 *dout = ca_b16_rand(W, off + 2, 1.0f, 0.0f);
        const float *doutf = ca_widen16(dout, W);
        for (int acc = 0; acc < 2; acc++) {
            const float *g0 = ca_row_rand(2 * W, off, 0.25f, 0.0f);
            float *dg32 = ca_row_copy(g0, 2 * W, 0), *dg16 = ca_row_copy(g0, 2 * W, 0);
            sn_bf16 *dv16 = ca_b16_rand(W, off + 3, 1.0f, 0.0f);
            float *dv32 = ca_widen16(dv16, W);
            float *gm32 = q.gamma ? dg32 : NULL, *bt32 = q.beta ? dg32 + W : NULL;
            float *gm16 = q.gamma ? dg16 : NULL, *bt16 = q.beta ? dg16 + W : NULL;
            p->K->norm_bwd(&q, doutf, vf, W, dv32, acc, gm32, bt32);
            p->K16->norm_bwd(&q, dout, v, W, dv16, acc, gm16, bt16);
            ca_same16("norm_bwd dv", dv16, dv32, W);
            ca_same("norm_bwd dgamma, dbeta", dg16, dg32, 2 * W);
            /* norm_bwd2: two segments (the second with the other row's statistics) */
            sn_rnorm q2[2] = {q, sn_k_resolve(&n, W, prm, s32[0], s32[1])};
            const sn_bf16 *dd[2] = {dout, ca_b16_rand(W, off + 6, 1.0f, 0.0f)};
            const float *ddf[2] = {doutf, ca_widen16(dd[1], W)};
            const sn_bf16 *vv[2] = {v, v2};
            const float *vvf[2] = {vf, v2f};
            sn_bf16 *o2[2] = {ca_b16_rand(W, off + 7, 1.0f, 0.0f),
                              ca_b16_rand(W, off + 8, 1.0f, 0.0f)};
            float *o2f[2] = {ca_widen16(o2[0], W), ca_widen16(o2[1], W)};
            p->K->norm_bwd2(q2, ddf, vvf, W, o2f, acc, gm32, bt32);
            p->K16->norm_bwd2(q2, dd, vv, W, o2, acc, gm16, bt16);
            ca_same16("norm_bwd2 dv 0", o2[0], o2f[0], W);
            ca_same16("norm_bwd2 dv 1", o2[1], o2f[1], W);
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
            sn_bf16 *id = ca_b16_copy(dout, W, off + 2);
            p->K16->norm_bwd(&q, id, v, W, id, 0, NULL, NULL);
            ca_same16b("norm_bwd dv = dout", id, dv16, W);
        }
        ca_rows_ok("bf16 norm");
        ca_rows_reset();
    }
}

static void check_norm_bf16(const ca_path *p, const ca_path *ref) {
    (void)ref;
    for (int wi = 0; wi < ca_nwidths; wi++) {
        const int64_t D = ca_widths[wi];
        const int off = (int)(D % 16);
        ca_seed((uint64_t)D + 7);
        ca_where(p->name, "bf16 norm", D, "offset %d", off);
        check_norm16(p, D, off);
        ca_rows_reset();
    }
}

void check_norm(const ca_path *p, const ca_path *ref, ca_type t) {
    static void (*const by_type[CA_NTYPES])(const ca_path *, const ca_path *) = {check_norm_f32,
                                                                                 check_norm_bf16};
    by_type[t](p, ref);
}
