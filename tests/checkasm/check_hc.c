/* checkasm: Hyper-Connections' slots (hc_mix, hc_dots): fp32 rows against scalar, bf16 rows
 * against the path's fp32 slots on the widened inputs (bf16 outputs bitwise the rounding, the
 * dot products bitwise), outputs equal to inputs (the mix in place, as the placement layer runs
 * it), streaming stores, and the weights 0 and 1 giving a plain sum bit for bit (what makes
 * Hyper-Connections start as Pre-Norm). Every stream count 1 .. SN_HC_MAX_RATE plus the block
 * output, and the accumulated output's extra input. */
#include "checkasm.h"

#include <string.h>

enum { NM = SN_K_HC_MATS };

/* weights w[o * nin + k] in [-1, 1) */
static void rand_w(float *w, int n) {
    for (int k = 0; k < n; k++) w[k] = ca_rand();
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
        ca_rows_reset();
    }
}
