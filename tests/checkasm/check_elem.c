/* checkasm: the elementwise slots (add_div, apply, axpy, copy, fold) and the conversions (widen,
 * round) of kernels.h: fp32 rows against scalar, bf16 rows against the path's fp32 slots
 * (bitwise), every aliasing the header allows, and streaming stores. */
#include "checkasm.h"

#include <stdlib.h>
#include <string.h>

static void check_add_div(const ca_path *p, const ca_path *ref, int64_t D, int off) {
    const float *a = ca_row_rand(D, off, 1.0f, 0.0f), *b = ca_row_rand(D, off + 1, 2.0f, 0.5f);
    const float c = 1.7f;
    for (int acc = 0; acc < 2; acc++) {
        float *out = ca_row(D, off + 2), *out_r = ca_row(D, 0);
        p->K->add_div(a, b, c, out, D, acc, 0);
        ref->K->add_div(a, b, c, out_r, D, acc, 0);
        ca_close("add_div", out, out_r, D);
        if (acc) continue;
        float *ia = ca_row_copy(a, D, off), *ib = ca_row_copy(b, D, off + 1), *nt = ca_row(D, 0);
        p->K->add_div(ia, b, c, ia, D, 0, 0);
        p->K->add_div(a, ib, c, ib, D, 0, 0);
        p->K->add_div(a, b, c, nt, D, 0, 1);
        ca_same("add_div out = a", ia, out, D);
        ca_same("add_div out = b", ib, out, D);
        ca_same("add_div streaming", nt, out, D);
    }
    ca_rows_ok("add_div");
}

static void check_apply(const ca_path *p, const ca_path *ref, int64_t D, int off) {
    const float *z = ca_row_rand(D, off, 1.0f, 0.0f), *u = ca_row_rand(D, off + 1, 1.0f, 1.0f),
                *y = ca_row_rand(D, off + 2, 3.0f, 0.0f);
    const float c = 2.3f;
    float *xo = ca_row(D, off + 3), *yo = ca_row(D, off + 4);
    float *xo_r = ca_row(D, 0), *yo_r = ca_row(D, 0);
    p->K->apply(z, u, y, c, xo, yo, D, 0);
    ref->K->apply(z, u, y, c, xo_r, yo_r, D, 0);
    ca_close("apply xo", xo, xo_r, D);
    ca_close("apply yo", yo, yo_r, D);
    float *iu = ca_row_copy(u, D, off + 1), *iy = ca_row_copy(y, D, off + 2);
    p->K->apply(z, iu, iy, c, iu, iy, D, 0);
    ca_same("apply xo = u", iu, xo, D);
    ca_same("apply yo = y", iy, yo, D);
    float *nx = ca_row(D, 0), *ny = ca_row(D, 0);
    p->K->apply(z, u, y, c, nx, ny, D, 1);
    ca_same("apply streaming xo", nx, xo, D);
    ca_same("apply streaming yo", ny, yo, D);
    ca_rows_ok("apply");
}

static void check_axpy(const ca_path *p, const ca_path *ref, int64_t D, int off) {
    const float *a = ca_row_rand(D, off, 1.0f, 0.0f), *b = ca_row_rand(D, off + 1, 1.0f, 0.25f);
    const float alpha = 1.3f;
    float *out = ca_row(D, off + 2), *out_r = ca_row(D, 0);
    p->K->axpy(a, b, alpha, out, D, 0);
    ref->K->axpy(a, b, alpha, out_r, D, 0);
    ca_close("axpy", out, out_r, D);
    float *ia = ca_row_copy(a, D, off), *ib = ca_row_copy(b, D, off + 1), *nt = ca_row(D, 0);
    p->K->axpy(ia, b, alpha, ia, D, 0);
    p->K->axpy(a, ib, alpha, ib, D, 0);
    p->K->axpy(a, b, alpha, nt, D, 1);
    ca_same("axpy out = a", ia, out, D);
    ca_same("axpy out = b", ib, out, D);
    ca_same("axpy streaming", nt, out, D);
    ca_rows_ok("axpy");
}

/* fold: plain additions in one order, so every path gives the scalar path's bits, for 1 .. 6
 * slots (the four-slot sweeps and each remainder) a stride apart */
static void check_fold(const ca_path *p, const ca_path *ref, int64_t D, int off) {
    const int64_t lds = D + 5;
    const float *s = ca_row_rand(6 * lds, off, 1.0f, 0.1f);
    for (int n = 1; n <= 6; n++) {
        float *d = ca_row_rand(D, off + 1, 2.0f, -0.3f), *d_r = ca_row_copy(d, D, 0);
        float *d16 = ca_row_copy(d, D, 0);
        p->K->fold(s, lds, n, d, D);
        ref->K->fold(s, lds, n, d_r, D);
        ca_same("fold", d, d_r, D);
        p->K16->fold(s, lds, n, d16, D); /* float rows in both tables: the same function's bits */
        ca_same("fold (bf16 table)", d16, d, D);
    }
    ca_rows_ok("fold");
}

static void check_elem_f32(const ca_path *p, const ca_path *ref) {
    for (int wi = 0; wi < ca_nwidths; wi++) {
        const int64_t D = ca_widths[wi];
        const int off = (int)(D % 16);
        ca_seed((uint64_t)D);
        ca_where(p->name, "elementwise", D, "offset %d", off);
        check_add_div(p, ref, D, off);
        check_apply(p, ref, D, off);
        check_axpy(p, ref, D, off);
        check_fold(p, ref, D, off);
        ca_rows_reset();
    }
}

/* ---- bf16 rows: each slot against the same path's fp32 slot on the widened inputs ------- */

static void check_elem16(const ca_path *p, int64_t D, int off) {
    const sn_bf16 *a = ca_b16_rand(D, off, 1.0f, 0.0f), *b = ca_b16_rand(D, off + 1, 2.0f, 0.5f),
                  *c = ca_b16_rand(D, off + 2, 3.0f, 0.0f);
    const float *af = ca_widen16(a, D), *bf = ca_widen16(b, D), *cf = ca_widen16(c, D);
    for (int acc = 0; acc < 2; acc++) {
        sn_bf16 *o16 = ca_b16_rand(D, off + 3, 1.0f, 0.0f), *ont = ca_b16_copy(o16, D, 0);
        float *o32 = ca_widen16(o16, D);
        p->K->add_div(af, bf, 1.7f, o32, D, acc, 0);
        p->K16->add_div(a, b, 1.7f, o16, D, acc, 0);
        ca_same16("add_div", o16, o32, D);
        if (acc) continue;
        p->K16->add_div(a, b, 1.7f, ont, D, 0, 1);
        ca_same16b("add_div streaming", ont, o16, D);
        sn_bf16 *ia = ca_b16_copy(a, D, off), *ib = ca_b16_copy(b, D, off + 1);
        p->K16->add_div(ia, b, 1.7f, ia, D, 0, 0);
        p->K16->add_div(a, ib, 1.7f, ib, D, 0, 0);
        ca_same16b("add_div out = a", ia, o16, D);
        ca_same16b("add_div out = b", ib, o16, D);
    }
    for (int nt = 0; nt < 2; nt++) {
        sn_bf16 *xo = ca_row16(D, off + 4), *yo = ca_row16(D, off + 5), *ax = ca_row16(D, off + 6);
        float *xo32 = ca_row(D, 0), *yo32 = ca_row(D, 0), *ax32 = ca_row(D, 0);
        p->K->apply(af, bf, cf, 2.3f, xo32, yo32, D, 0);
        p->K16->apply(a, b, c, 2.3f, xo, yo, D, nt);
        ca_same16("apply xo", xo, xo32, D);
        ca_same16("apply yo", yo, yo32, D);
        p->K->axpy(af, bf, 1.3f, ax32, D, 0);
        p->K16->axpy(a, b, 1.3f, ax, D, nt);
        ca_same16("axpy", ax, ax32, D);
    }
    /* copy: widened and rounded (bitwise the rounding of the values: NaNs quieted), also in
     * place */
    sn_bf16 *cp = ca_row16(D, off + 7), *ic = ca_b16_copy(a, D, off);
    p->K16->copy(a, cp, D);
    ca_same16("copy", cp, af, D);
    p->K16->copy(ic, ic, D);
    ca_same16b("copy out = a", ic, cp, D);
    sn_bf16 *iu = ca_b16_copy(b, D, off + 1), *iy = ca_b16_copy(c, D, off + 2);
    float *xo32 = ca_row(D, 0), *yo32 = ca_row(D, 0);
    p->K->apply(af, bf, cf, 2.3f, xo32, yo32, D, 0);
    p->K16->apply(a, iu, iy, 2.3f, iu, iy, D, 0);
    ca_same16("apply xo = u", iu, xo32, D);
    ca_same16("apply yo = y", iy, yo32, D);
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
    ca_same16("round", b, v, D);
    /* and back: bitwise sn_k_bf16_widen (of these values, NaN payloads included) */
    float *w = ca_row(D, off + 2);
    p->K16->widen(b, D, w);
    ca_check(memcmp(w, ca_widen16(b, D), (size_t)D * sizeof *w) == 0, "widen: not sn_k_bf16_widen");
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

static void check_elem_bf16(const ca_path *p, const ca_path *ref) {
    (void)ref;
    ca_where(p->name, "bf16 round", 0, "all floats");
    check_round16_all(p);
    for (int wi = 0; wi < ca_nwidths; wi++) {
        const int64_t D = ca_widths[wi];
        const int off = (int)(D % 16);
        ca_seed((uint64_t)D + 7);
        ca_where(p->name, "bf16 elementwise", D, "offset %d", off);
        check_elem16(p, D, off);
        check_round16(p, D, off);
        ca_rows_reset();
    }
}

void check_elem(const ca_path *p, const ca_path *ref, ca_type t) {
    static void (*const by_type[CA_NTYPES])(const ca_path *, const ca_path *) = {check_elem_f32,
                                                                                 check_elem_bf16};
    by_type[t](p, ref);
}
