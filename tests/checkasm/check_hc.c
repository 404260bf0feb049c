/* checkasm: Hyper-Connections' slots (hc_mix, hc_dots): fp32 rows against scalar, bf16 rows
 * against the path's fp32 slots on the widened inputs (bf16 outputs bitwise the rounding, the
 * dot products bitwise), outputs equal to inputs (the mix in place, as the placement layer runs
 * it), streaming stores, and the weights 0 and 1 giving a plain sum bit for bit (what makes
 * Hyper-Connections start as Pre-Norm). Every stream count 1 .. SN_HC_MAX_RATE plus the block
 * output, and the accumulated output's extra input. Dynamic HC's hc_proj, hc_wmix, hc_wsum
 * (float parameter rows): the same, hc_wsum also over a run of columns. */
#include "checkasm.h"

#include <string.h>

enum { NM = SN_K_HC_MATS };

/* weights w[o * nin + k] in [-1, 1) */
static void rand_w(float *w, int n) {
    for (int k = 0; k < n; k++) w[k] = ca_rand();
}

/* dynamic HC's slots, nw float rows w of D against a row x (fp32 or, t = CA_BF16, bf16) */
static void check_proj(const ca_path *p, const ca_path *ref, int64_t D, int off, ca_type ty) {
    for (int nw = 1; nw <= NM; nw += 3) {
        const float *w[NM];
        float coef[NM];
        rand_w(coef, nw);
        for (int c = 0; c < nw; c++) w[c] = ca_row_rand(D, off + c, 0.5f, 0.0f);
        const float *xf = ca_row_rand(D, off, 1.0f, 0.5f);
        const sn_bf16 *x16 = ca_b16_rand(D, off, 1.0f, 0.5f);
        const float *x16f = ca_widen16(x16, D);
        float pr[NM], pr_r[NM], *o = ca_row(D, off + 1), *o_r = ca_row(D, 0);
        float *dw[NM], *dw_r[NM], *dw_c[NM];
        for (int c = 0; c < nw; c++) {
            pr[c] = pr_r[c] = 0.25f;
            dw[c] = ca_row_rand(D, off + c, 1.0f, 0.0f);
            dw_r[c] = ca_row_copy(dw[c], D, 0), dw_c[c] = ca_row_copy(dw[c], D, 0);
        }
        if (ty == CA_F32) {
            p->K->hc_proj(xf, D, w, nw, pr);
            ref->K->hc_proj(xf, D, w, nw, pr_r);
            ca_close("hc_proj", pr, pr_r, nw);
            p->K->hc_wmix(w, nw, coef, o, D, 0);
            ref->K->hc_wmix(w, nw, coef, o_r, D, 0);
            ca_close("hc_wmix", o, o_r, D);
            p->K->hc_wmix(w, nw, coef, o_r, D, 1);
            ca_same("hc_wmix streaming", o_r, o, D);
            p->K->hc_wsum(xf, D, coef, nw, dw);
            ref->K->hc_wsum(xf, D, coef, nw, dw_r);
            for (int c = 0; c < nw; c++) ca_close("hc_wsum", dw[c], dw_r[c], D);
            /* a run of columns: the same bits */
            float *dc[NM];
            const int64_t j0 = D / 3;
            for (int c = 0; c < nw; c++) dc[c] = dw_c[c] + j0;
            p->K->hc_wsum(xf, j0, coef, nw, dw_c);
            p->K->hc_wsum(xf + j0, D - j0, coef, nw, dc);
            for (int c = 0; c < nw; c++) ca_same("hc_wsum in two runs", dw_c[c], dw[c], D);
        } else {
            sn_bf16 *o16 = ca_row16(D, off + 2);
            p->K->hc_proj(x16f, D, w, nw, pr_r);
            p->K16->hc_proj(x16, D, w, nw, pr);
            ca_same("bf16 hc_proj", pr, pr_r, nw);
            p->K->hc_wmix(w, nw, coef, o_r, D, 0);
            p->K16->hc_wmix(w, nw, coef, o16, D, 0);
            ca_same16("bf16 hc_wmix", o16, o_r, D);
            p->K->hc_wsum(x16f, D, coef, nw, dw_r);
            p->K16->hc_wsum(x16, D, coef, nw, dw);
            for (int c = 0; c < nw; c++) ca_same("bf16 hc_wsum", dw[c], dw_r[c], D);
        }
        ca_rows_ok("hc dynamic");
    }
}

static void check_hc32(const ca_path *p, const ca_path *ref, int64_t D, int off) {
    for (int nin = 1; nin <= NM; nin += nin < 3 ? 1 : 3) {
        const int nout = nin < NM ? nin : NM - 1;
        float w[NM * NM];
        rand_w(w, nin * nout);
        const float *in[NM];
        float *o[NM], *o_r[NM], *o_nt[NM];
        for (int k = 0; k < nin; k++) in[k] = ca_row_rand(D, off + k, 1.0f, 0.25f * k);
        for (int k = 0; k < nout; k++)
            o[k] = ca_row(D, off + k + 1), o_r[k] = ca_row(D, 0), o_nt[k] = ca_row(D, 0);
        p->K->hc_mix(in, nin, w, o, nout, D, 0);
        ref->K->hc_mix(in, nin, w, o_r, nout, D, 0);
        p->K->hc_mix(in, nin, w, o_nt, nout, D, 1);
        for (int k = 0; k < nout; k++) {
            ca_close("hc_mix", o[k], o_r[k], D);
            ca_same("hc_mix streaming", o_nt[k], o[k], D);
        }
        /* in place: out[k] = in[k] */
        float *io[NM];
        for (int k = 0; k < nin; k++) io[k] = ca_row_copy(in[k], D, off + k);
        p->K->hc_mix((const float *const *)io, nin, w, io, nout, D, 0);
        for (int k = 0; k < nout; k++) ca_same("hc_mix out = in", io[k], o[k], D);
        /* weights 0 and 1: out = in[k], bit for bit */
        float e[NM * NM] = {0};
        for (int k = 0; k < nout; k++) e[k * nin + k % nin] = 1.0f;
        p->K->hc_mix(in, nin, e, o, nout, D, 0);
        for (int k = 0; k < nout; k++) ca_same("hc_mix e_k", o[k], in[k % nin], D);
        /* dot products: fp32 against scalar */
        float d[NM * NM] = {0}, d_r[NM * NM] = {0};
        p->K->hc_dots(in, nin, (const float *const *)o_r, nout, D, d);
        ref->K->hc_dots(in, nin, (const float *const *)o_r, nout, D, d_r);
        ca_close("hc_dots", d, d_r, nin * nout);
        ca_rows_ok("hc");
    }
}

static void check_hc16(const ca_path *p, int64_t D, int off) {
    for (int nin = 1; nin <= NM; nin += nin < 3 ? 1 : 3) {
        const int nout = nin < NM ? nin : NM - 1;
        float w[NM * NM];
        rand_w(w, nin * nout);
        const sn_bf16 *in[NM];
        const float *inf[NM];
        sn_bf16 *o[NM], *io[NM];
        float *of[NM];
        for (int k = 0; k < nin; k++) {
            in[k] = ca_b16_rand(D, off + k, 1.0f, 0.25f * k);
            inf[k] = ca_widen16(in[k], D);
            io[k] = ca_b16_copy(in[k], D, off + k);
        }
        for (int k = 0; k < nout; k++) o[k] = ca_row16(D, off + k + 1), of[k] = ca_row(D, 0);
        for (int nt = 0; nt < 2; nt++) {
            p->K->hc_mix(inf, nin, w, of, nout, D, 0);
            p->K16->hc_mix(in, nin, w, o, nout, D, nt);
            for (int k = 0; k < nout; k++) ca_same16("bf16 hc_mix", o[k], of[k], D);
        }
        p->K16->hc_mix((const sn_bf16 *const *)io, nin, w, io, nout, D, 0);
        for (int k = 0; k < nout; k++) ca_same16b("bf16 hc_mix out = in", io[k], o[k], D);
        float d[NM * NM], d32[NM * NM];
        for (int k = 0; k < NM * NM; k++) d[k] = d32[k] = 0.5f; /* accumulated onto */
        p->K16->hc_dots(in, nin, (const sn_bf16 *const *)o, nout, D, d);
        const float *owf[NM];
        for (int k = 0; k < nout; k++) owf[k] = ca_widen16(o[k], D);
        p->K->hc_dots(inf, nin, owf, nout, D, d32);
        ca_same("bf16 hc_dots", d, d32, nin * nout);
        ca_rows_ok("bf16 hc");
    }
}

void check_hc(const ca_path *p, const ca_path *ref, ca_type t) {
    for (int wi = 0; wi < ca_nwidths; wi++) {
        const int64_t D = ca_widths[wi];
        const int off = (int)(D % 16);
        ca_seed((uint64_t)D + 29);
        ca_where(p->name, t == CA_F32 ? "hc" : "bf16 hc", D, "offset %d", off);
        if (t == CA_F32) check_hc32(p, ref, D, off);
        else check_hc16(p, D, off);
        check_proj(p, ref, D, off, t);
        ca_rows_reset();
    }
}
