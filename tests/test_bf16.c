/* bf16 storage: the conversions against an independent reference, and every `_bf16` primitive
 * against its fp32 twin on the same (widened) inputs, on every path and thread count.
 *
 * The header's contract is exact: each element a bf16 call writes is sn_bf16_from_f32 of what
 * the fp32 call writes, and statistics and parameter gradients are the fp32 call's bits. So the
 * checks here are bitwise; the float64 checks below bound what that means in accuracy: a bf16
 * output is within one bf16 rounding (2^-8 relative) of the fp32 one, which is itself within the
 * fp32 tests' tolerances of the float64 reference. */
#include <math.h>
#include <string.h>

#include "ref64.h"
#include "testutil.h"

/* ---- the rounding, from its definition -------------------------------------------------- */

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The bf16 nearest to f, ties to the even one, by comparing distances in double: the two
 * candidates are f truncated to bf16 and the next bf16 away from zero (beyond the largest
 * finite one, 2^128 stands for infinity, as IEEE's overflow rule says). */
static uint16_t ref_round(float f) {
    const uint32_t u = bits_of(f);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40u);
    const uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    if ((u & 0xffffu) == 0) return lo;
    const double a = fabs((double)f), vlo = fabs((double)float_of((uint32_t)lo << 16));
    const double vhi =
        (hi & 0x7fffu) == 0x7f80u ? ldexp(1.0, 128) : fabs((double)float_of((uint32_t)hi << 16));
    if (a - vlo < vhi - a) return lo;
    if (a - vlo > vhi - a) return hi;
    return (lo & 1u) ? hi : lo;
}

static void test_scalar_rounding(void) {
    static const uint32_t lows[] = {0x0000, 0x0001, 0x4000, 0x7fff, 0x8000,
                                    0x8001, 0xbfff, 0xc000, 0xfffe, 0xffff};
    long bad = 0;
    for (uint32_t hi = 0; hi < 0x10000u; hi++)
        for (size_t k = 0; k < sizeof lows / sizeof lows[0]; k++) {
            const float f = float_of(hi << 16 | lows[k]);
            const uint16_t want = ref_round(f), got = sn_bf16_from_f32(f);
            if (got != want && bad++ < 5)
                TU_FAIL("round(0x%08x) = 0x%04x, want 0x%04x", (unsigned)bits_of(f), got, want);
            tu_checks++;
        }
    tu_rng g = {7};
    for (int k = 0; k < 1 << 20; k++) {
        const float f = float_of((uint32_t)tu_next(&g));
        CHECK(sn_bf16_from_f32(f) == ref_round(f));
    }
    /* widening is exact, and round(widen(b)) = b for every non-NaN b */
    for (uint32_t b = 0; b < 0x10000u; b++) {
        const float f = sn_bf16_to_f32((sn_bf16)b);
        CHECK(bits_of(f) == b << 16);
        if (!isnan(f)) CHECK(sn_bf16_from_f32(f) == b);
    }
    /* named cases */
    CHECK(sn_bf16_from_f32(1.0f + 0x1p-8f) == 0x3f80);        /* tie, to even (down) */
    CHECK(sn_bf16_from_f32(1.0f + 3 * 0x1p-8f) == 0x3f82);    /* tie, to even (up) */
    CHECK(sn_bf16_from_f32(float_of(0x7f7fffffu)) == 0x7f80); /* FLT_MAX -> inf */
    CHECK(sn_bf16_from_f32(float_of(0x00000001u)) == 0x0000); /* smallest subnormal */
    CHECK(sn_bf16_from_f32(float_of(0x00008000u)) == 0x0000); /* tie at 0: even */
    CHECK(sn_bf16_from_f32(float_of(0x00018000u)) == 0x0002); /* subnormal tie, kept */
    CHECK(sn_bf16_from_f32(float_of(0x7fffffffu)) == 0x7fff); /* NaN stays NaN */
    CHECK(sn_bf16_from_f32(float_of(0xff800001u)) == 0xffc0); /* sNaN quieted, sign kept */
    CHECK(sn_bf16_from_f32(-0.0f) == 0x8000);
}

/* ---- matrices in both types --------------------------------------------------------------- */

/* A matrix held twice with the same layout: b in bf16, f the same values widened (the fp32
 * call's copy). Padding columns hold canaries. */
typedef struct pair {
    int64_t R, D, ld;
    sn_bf16 *b;
    float *f;
} pair;

static pair pair_new(tu_rng *g, int64_t R, int64_t D, int64_t ld, double scale) {
    pair p = {R, D, ld, tu_xalloc((size_t)(R * ld) * sizeof(sn_bf16)), tu_falloc(R * ld)};
    for (int64_t k = 0; k < R * ld; k++) {
        const int pad = k % ld >= D;
        p.b[k] = pad ? (sn_bf16)(0x7e00 + k % 17) : sn_bf16_from_f32((float)(scale * tu_gauss(g)));
        p.f[k] = sn_bf16_to_f32(p.b[k]);
    }
    return p;
}
static void pair_free(pair *p) {
    free(p->b);
    free(p->f);
}

/* every element of p.b is the rounding of p.f (padding: untouched in both); then p.f is set to
 * p.b widened, so that both copies hold the same values for the calls that read p next */
static void check_pair(const pair *p, const char *what, int isa, int threads) {
    int64_t bad = 0, first = -1;
    for (int64_t k = 0; k < p->R * p->ld; k++) {
        const int pad = k % p->ld >= p->D;
        const sn_bf16 want = pad ? (sn_bf16)(0x7e00 + k % 17) : sn_bf16_from_f32(p->f[k]);
        if (p->b[k] != want && bad++ == 0) first = k;
    }
    tu_checks++;
    if (bad)
        TU_FAIL("%s (isa %d, %d threads, R %lld, D %lld): %lld elements differ, first at %lld: "
                "0x%04x vs round(%a) = 0x%04x",
                what, isa, threads, (long long)p->R, (long long)p->D, (long long)bad,
                (long long)first, p->b[first], (double)p->f[first], sn_bf16_from_f32(p->f[first]));
    for (int64_t k = 0; k < p->R * p->ld; k++) p->f[k] = sn_bf16_to_f32(p->b[k]);
}

static void check_same(const float *a, const float *b, int64_t n, const char *what, int isa,
                       int threads, int64_t D) {
    tu_checks++;
    if (n > 0 && memcmp(a, b, (size_t)n * sizeof(float)) != 0)
        TU_FAIL("%s (isa %d, %d threads, D %lld): fp32 side outputs differ", what, isa, threads,
                (long long)D);
}

static float *params_new(tu_rng *g, int64_t n) {
    float *p = tu_falloc(n > 0 ? n : 1);
    for (int64_t k = 0; k < n; k++) p[k] = (float)(1.0 + 0.3 * tu_gauss(g));
    return p;
}

/* ---- the primitives ----------------------------------------------------------------------- */

typedef struct cfg {
    sn_ctx *ctx;
    int isa, threads;
    int64_t R, D, ld;
} cfg;

static void test_norm(const cfg *c, tu_rng *g, sn_norm n) {
    const int64_t R = c->R, D = c->D, ld = c->ld;
    int64_t np, spr;
    CHECK_OK(sn_norm_query(&n, D, &np, &spr));
    float *p = params_new(g, np);
    pair x = pair_new(g, R, D, ld, 2.0), o = pair_new(g, R, D, ld, 1.0);
    float *s32 = tu_fzeros(R * spr + 1), *s16 = tu_fzeros(R * spr + 1);
    CHECK_OK(sn_norm_forward(c->ctx, &n, R, D, x.f, ld, p, o.f, ld, s32));
    CHECK_OK(sn_norm_forward_bf16(c->ctx, &n, R, D, x.b, ld, p, o.b, ld, s16));
    check_pair(&o, "norm forward", c->isa, c->threads);
    check_same(s32, s16, R * spr, "norm forward stats", c->isa, c->threads, D);
    for (int acc = 0; acc < 2; acc++) {
        pair d = pair_new(g, R, D, ld, 1.0), dx = pair_new(g, R, D, ld, 0.5);
        float *g32 = params_new(g, np), *g16 = tu_falloc(np + 1);
        memcpy(g16, g32, (size_t)np * sizeof(float));
        const uint32_t fl = acc ? SN_ACCUMULATE : 0;
        CHECK_OK(sn_norm_backward(c->ctx, &n, R, D, d.f, ld, x.f, ld, p, s32, dx.f, ld, g32, fl));
        CHECK_OK(
            sn_norm_backward_bf16(c->ctx, &n, R, D, d.b, ld, x.b, ld, p, s16, dx.b, ld, g16, fl));
        check_pair(&dx, acc ? "norm backward, accumulated" : "norm backward", c->isa, c->threads);
        check_same(g32, g16, np, "norm backward dparams", c->isa, c->threads, D);
        if (!acc) { /* in place: dx aliases dout */
            CHECK_OK(
                sn_norm_backward(c->ctx, &n, R, D, d.f, ld, x.f, ld, p, s32, d.f, ld, NULL, 0));
            CHECK_OK(sn_norm_backward_bf16(c->ctx, &n, R, D, d.b, ld, x.b, ld, p, s16, d.b, ld,
                                           NULL, 0));
            check_pair(&d, "norm backward in place", c->isa, c->threads);
        }
        pair_free(&d);
        pair_free(&dx);
        free(g32);
        free(g16);
    }
    /* forward in place */
    CHECK_OK(sn_norm_forward(c->ctx, &n, R, D, x.f, ld, p, x.f, ld, NULL));
    CHECK_OK(sn_norm_forward_bf16(c->ctx, &n, R, D, x.b, ld, p, x.b, ld, NULL));
    check_pair(&x, "norm forward in place", c->isa, c->threads);
    pair_free(&x);
    pair_free(&o);
    free(p);
    free(s32);
    free(s16);
}

static void test_fuse(const cfg *c, tu_rng *g, sn_fuse f) {
    const int64_t R = c->R, D = c->D, ld = c->ld;
    int64_t np, spr;
    CHECK_OK(sn_fuse_query(&f, D, &np, &spr));
    float *p = params_new(g, np);
    pair x = pair_new(g, R, D, ld, 2.0), y = pair_new(g, R, D, ld, 1.0);
    pair u = pair_new(g, R, D, ld, 1.0), h = pair_new(g, R, D, ld, 1.0);
    float *s32 = tu_fzeros(R * spr + 1), *s16 = tu_fzeros(R * spr + 1);
    CHECK_OK(sn_fuse_forward(c->ctx, &f, R, D, x.f, ld, y.f, ld, p, u.f, ld, h.f, ld, s32));
    CHECK_OK(sn_fuse_forward_bf16(c->ctx, &f, R, D, x.b, ld, y.b, ld, p, u.b, ld, h.b, ld, s16));
    check_pair(&u, "fuse forward u", c->isa, c->threads);
    check_pair(&h, "fuse forward h", c->isa, c->threads);
    check_same(s32, s16, R * spr, "fuse forward stats", c->isa, c->threads, D);
    CHECK_OK(sn_merge_forward(c->ctx, &f, R, D, x.f, ld, y.f, ld, p, h.f, ld, NULL));
    CHECK_OK(sn_merge_forward_bf16(c->ctx, &f, R, D, x.b, ld, y.b, ld, p, h.b, ld, NULL));
    check_pair(&h, "merge forward", c->isa, c->threads);
    for (uint32_t fl = 0; fl < 4; fl++) {
        for (int with_du = 0; with_du < 2; with_du++) {
            pair dh = pair_new(g, R, D, ld, 1.0), du = pair_new(g, R, D, ld, 1.0);
            pair dx = pair_new(g, R, D, ld, 0.5), dy = pair_new(g, R, D, ld, 0.5);
            float *g32 = params_new(g, np), *g16 = tu_falloc(np + 1);
            memcpy(g16, g32, (size_t)np * sizeof(float));
            /* without accumulation into dx, dx aliases du (the sub-layer's call) */
            const int inplace = with_du && !(fl & SN_ACCUMULATE);
            pair *dxp = inplace ? &du : &dx;
            CHECK_OK(sn_fuse_backward(c->ctx, &f, R, D, dh.f, ld, with_du ? du.f : NULL, ld, x.f,
                                      ld, y.f, ld, p, s32, dxp->f, ld, dy.f, ld, g32, fl));
            CHECK_OK(sn_fuse_backward_bf16(c->ctx, &f, R, D, dh.b, ld, with_du ? du.b : NULL, ld,
                                           x.b, ld, y.b, ld, p, s16, dxp->b, ld, dy.b, ld, g16,
                                           fl));
            check_pair(dxp, "fuse backward dx", c->isa, c->threads);
            check_pair(&dy, "fuse backward dy", c->isa, c->threads);
            check_same(g32, g16, np, "fuse backward dparams", c->isa, c->threads, D);
            pair_free(&dh);
            pair_free(&du);
            pair_free(&dx);
            pair_free(&dy);
            free(g32);
            free(g16);
        }
    }
    pair_free(&x);
    pair_free(&y);
    pair_free(&u);
    pair_free(&h);
    free(p);
    free(s32);
    free(s16);
}

/* Rows of order 1e30, whose fp32 sums of squares overflow: the statistics come from the
 * float64 fallback, on the bf16 rows as on the fp32 ones (sn_k_stats_guard16) */
static void test_big(const cfg *c, tu_rng *g) {
    const int64_t R = c->R, D = c->D, ld = c->ld;
    sn_norm ns[2] = {{SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f},
                     {SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0, 1e-5f}};
    pair x = pair_new(g, R, D, ld, 1e30), y = pair_new(g, R, D, ld, 3e29);
    pair o = pair_new(g, R, D, ld, 1.0), u = pair_new(g, R, D, ld, 1.0);
    for (int k = 0; k < 2; k++) {
        int64_t np, spr;
        CHECK_OK(sn_norm_query(&ns[k], D, &np, &spr));
        float *p = params_new(g, np), *s32 = tu_fzeros(R * spr + 1), *s16 = tu_fzeros(R * spr + 1);
        CHECK_OK(sn_norm_forward(c->ctx, &ns[k], R, D, x.f, ld, p, o.f, ld, s32));
        CHECK_OK(sn_norm_forward_bf16(c->ctx, &ns[k], R, D, x.b, ld, p, o.b, ld, s16));
        check_pair(&o, "norm forward, rows of 1e30", c->isa, c->threads);
        check_same(s32, s16, R * spr, "norm forward stats, rows of 1e30", c->isa, c->threads, D);
        free(p), free(s32), free(s16);
        sn_fuse f;
        sn_fuse_init(&f, (sn_norm_kind)ns[k].kind, (sn_affine)ns[k].affine, 1e-5f);
        CHECK_OK(sn_fuse_query(&f, D, &np, &spr));
        p = params_new(g, np), s32 = tu_fzeros(R * spr + 1), s16 = tu_fzeros(R * spr + 1);
        CHECK_OK(sn_fuse_forward(c->ctx, &f, R, D, x.f, ld, y.f, ld, p, u.f, ld, o.f, ld, s32));
        CHECK_OK(
            sn_fuse_forward_bf16(c->ctx, &f, R, D, x.b, ld, y.b, ld, p, u.b, ld, o.b, ld, s16));
        check_pair(&u, "fuse forward u, rows of 1e30", c->isa, c->threads);
        check_pair(&o, "fuse forward h, rows of 1e30", c->isa, c->threads);
        check_same(s32, s16, R * spr, "fuse forward stats, rows of 1e30", c->isa, c->threads, D);
        free(p), free(s32), free(s16);
    }
    pair_free(&x), pair_free(&y), pair_free(&o), pair_free(&u);
}

static void test_elementwise(const cfg *c, tu_rng *g) {
    const int64_t R = c->R, D = c->D, ld = c->ld;
    pair z = pair_new(g, R, D, ld, 1.0), u = pair_new(g, R, D, ld, 1.0);
    pair y = pair_new(g, R, D, ld, 1.0), xo = pair_new(g, R, D, ld, 1.0);
    pair yo = pair_new(g, R, D, ld, 1.0);
    const float cc = 1.7320508f;
    CHECK_OK(sn_apply_forward(c->ctx, R, D, cc, z.f, ld, u.f, ld, y.f, ld, xo.f, ld, yo.f, ld));
    CHECK_OK(
        sn_apply_forward_bf16(c->ctx, R, D, cc, z.b, ld, u.b, ld, y.b, ld, xo.b, ld, yo.b, ld));
    check_pair(&xo, "apply forward xo", c->isa, c->threads);
    check_pair(&yo, "apply forward yo", c->isa, c->threads);
    CHECK_OK(sn_apply_forward(c->ctx, R, D, cc, z.f, ld, u.f, ld, y.f, ld, u.f, ld, y.f, ld));
    CHECK_OK(sn_apply_forward_bf16(c->ctx, R, D, cc, z.b, ld, u.b, ld, y.b, ld, u.b, ld, y.b, ld));
    check_pair(&u, "apply forward in place xo", c->isa, c->threads);
    check_pair(&y, "apply forward in place yo", c->isa, c->threads);
    for (uint32_t fl = 0; fl < 2; fl++) {
        CHECK_OK(sn_apply_backward(c->ctx, R, D, cc, z.f, ld, u.f, ld, xo.f, ld, fl));
        CHECK_OK(sn_apply_backward_bf16(c->ctx, R, D, cc, z.b, ld, u.b, ld, xo.b, ld, fl));
        check_pair(&xo, fl ? "apply backward, accumulated" : "apply backward", c->isa, c->threads);
        CHECK_OK(sn_split_backward(c->ctx, R, D, z.f, ld, u.f, ld, yo.f, ld, fl));
        CHECK_OK(sn_split_backward_bf16(c->ctx, R, D, z.b, ld, u.b, ld, yo.b, ld, fl));
        check_pair(&yo, fl ? "split backward, accumulated" : "split backward", c->isa, c->threads);
    }
    CHECK_OK(sn_split_forward(c->ctx, R, D, z.f, ld, z.f, ld, y.f, ld)); /* x aliases e */
    CHECK_OK(sn_split_forward_bf16(c->ctx, R, D, z.b, ld, z.b, ld, y.b, ld));
    check_pair(&z, "split forward x", c->isa, c->threads);
    check_pair(&y, "split forward y", c->isa, c->threads);
    /* the matrix conversions: per element what the one-value calls give */
    float *f = tu_falloc(R * ld);
    for (int64_t k = 0; k < R * ld; k++) f[k] = (float)tu_gauss(g) * 3.0f;
    f[0] = float_of(0x7fc00001u);
    if (R * D > 3) f[1] = float_of(0x00018000u), f[2] = 1.0f + 0x1p-8f;
    CHECK_OK(sn_to_bf16(c->ctx, R, D, f, ld, xo.b, ld));
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) xo.f[r * ld + j] = f[r * ld + j];
    check_pair(&xo, "sn_to_bf16", c->isa, c->threads);
    CHECK_OK(sn_from_bf16(c->ctx, R, D, xo.b, ld, f, ld));
    int64_t bad = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++)
            bad += bits_of(f[r * ld + j]) != (uint32_t)xo.b[r * ld + j] << 16;
    CHECK_MSG(bad == 0, "sn_from_bf16: %lld elements differ", (long long)bad);
    free(f);
    pair_free(&z);
    pair_free(&u);
    pair_free(&y);
    pair_free(&xo);
    pair_free(&yo);
}

/* ---- accuracy against float64: what the bitwise contract amounts to ------------------------ */

/* Norm forward and backward and fuse forward in bf16 against the float64 reference on the same
 * (bf16) inputs: within one bf16 rounding (2^-8 of the largest magnitude, as errors are
 * measured: tu_err) plus the fp32 tolerance, 1e-4. */
static void test_accuracy(tu_rng *g) {
    const int64_t R = 9, D = 100;
    const double tol = 0x1p-8 + 1e-4;
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    int64_t np, spr;
    sn_norm_query(&n, D, &np, &spr);
    float *p = params_new(g, np), *st = tu_falloc(R * spr);
    pair x = pair_new(g, R, D, D, 2.0), o = pair_new(g, R, D, D, 1.0),
         d = pair_new(g, R, D, D, 1.0);
    double *xd = tu_dalloc(R * D), *pd = tu_dalloc(np), *od = tu_dalloc(R * D),
           *dd = tu_dalloc(R * D);
    tu_to_double(x.f, R, D, D, xd, D);
    tu_to_double(d.f, R, D, D, dd, D);
    for (int64_t k = 0; k < np; k++) pd[k] = p[k];
    CHECK_OK(sn_norm_forward_bf16(NULL, &n, R, D, x.b, D, p, o.b, D, st));
    for (int64_t k = 0; k < R * D; k++) o.f[k] = sn_bf16_to_f32(o.b[k]);
    ref_norm_fwd(&n, R, D, xd, D, pd, od, D, NULL);
    CHECK_ERR("bf16 LayerNorm forward vs float64", tu_err(o.f, od, R * D, 1.0), tol);
    CHECK_OK(sn_norm_backward_bf16(NULL, &n, R, D, d.b, D, x.b, D, p, st, o.b, D, NULL, 0));
    for (int64_t k = 0; k < R * D; k++) o.f[k] = sn_bf16_to_f32(o.b[k]);
    ref_norm_bwd(&n, R, D, dd, D, xd, D, pd, od, D);
    CHECK_ERR("bf16 LayerNorm backward vs float64", tu_err(o.f, od, R * D, 1.0), tol);
    sn_fuse f;
    sn_fuse_init(&f, SN_NORM_RMSNORM, SN_AFFINE_SCALE, 1e-5f);
    int64_t fp;
    sn_fuse_query(&f, D, &fp, &spr);
    float *q = params_new(g, fp), *fst = tu_falloc(R * spr);
    double *qd = tu_dalloc(fp);
    for (int64_t k = 0; k < fp; k++) qd[k] = q[k];
    CHECK_OK(sn_fuse_forward_bf16(NULL, &f, R, D, x.b, D, d.b, D, q, NULL, 0, o.b, D, fst));
    for (int64_t k = 0; k < R * D; k++) o.f[k] = sn_bf16_to_f32(o.b[k]);
    ref_fuse_fwd(&f, R, D, xd, D, dd, D, qd, NULL, 0, od, D);
    CHECK_ERR("bf16 fuse forward vs float64", tu_err(o.f, od, R * D, 1.0), tol);
    pair_free(&x);
    pair_free(&o);
    pair_free(&d);
    free(p), free(st), free(q), free(fst), free(xd), free(pd), free(od), free(dd), free(qd);
}

/* ---- finite differences: the bf16 backward passes against the float64 forward ---------------
 * L = sum(wh * h) + sum(wu * u) through the float64 reference fuse (tests/ref64.c); the bf16
 * fuse backward given dh = wh, du = wu must give dL/dx, dL/dy within one bf16 rounding plus the
 * fp32 tolerance (2^-7 of the largest gradient), and the norm backward likewise for L = sum(w *
 * N(x)). */
typedef struct fdl {
    const sn_fuse *f;
    const sn_norm *n;
    int64_t R, D;
    double *x, *y, *p, *wh, *wu, *h, *u;
} fdl;

static double fd_loss(void *arg) {
    const fdl *c = arg;
    const int64_t n = c->R * c->D;
    double L = 0.0;
    if (c->f) {
        ref_fuse_fwd(c->f, c->R, c->D, c->x, c->D, c->y, c->D, c->p, c->u, c->D, c->h, c->D);
        for (int64_t k = 0; k < n; k++) L += c->wh[k] * c->h[k] + c->wu[k] * c->u[k];
    } else {
        ref_norm_fwd(c->n, c->R, c->D, c->x, c->D, c->p, c->h, c->D, NULL);
        for (int64_t k = 0; k < n; k++) L += c->wh[k] * c->h[k];
    }
    return L;
}

/* the largest |lib - fd| over the largest |fd| for the gradient of v, lib given in bf16 */
static double fd_err(fdl *c, double *v, const sn_bf16 *lib) {
    const int64_t n = c->R * c->D;
    double e = 0.0, m = 1e-30;
    for (int64_t k = 0; k < n; k++) {
        const double g = tu_fd(fd_loss, c, &v[k], 1e-6);
        e = fmax(e, fabs((double)sn_bf16_to_f32(lib[k]) - g));
        m = fmax(m, fabs(g));
    }
    return e / m;
}

static void test_fd(tu_rng *g) {
    const int64_t R = 3, D = 7, n = R * D;
    sn_fuse f;
    sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f);
    int64_t np, spr;
    sn_fuse_query(&f, D, &np, &spr);
    float *p = params_new(g, np), *st = tu_falloc(R * spr);
    pair x = pair_new(g, R, D, D, 2.0), y = pair_new(g, R, D, D, 1.0);
    pair wh = pair_new(g, R, D, D, 1.0), wu = pair_new(g, R, D, D, 1.0);
    pair u = pair_new(g, R, D, D, 1.0), h = pair_new(g, R, D, D, 1.0);
    pair dx = pair_new(g, R, D, D, 1.0), dy = pair_new(g, R, D, D, 1.0);
    double *d[7];
    for (int k = 0; k < 7; k++) d[k] = tu_dalloc(k == 2 ? np : n);
    const float *src[6] = {x.f, y.f, p, wh.f, wu.f, NULL};
    for (int k = 0; k < 5; k++)
        for (int64_t j = 0; j < (k == 2 ? np : n); j++) d[k][j] = src[k][j];
    fdl c = {&f, NULL, R, D, d[0], d[1], d[2], d[3], d[4], d[5], d[6]};
    CHECK_OK(sn_fuse_forward_bf16(NULL, &f, R, D, x.b, D, y.b, D, p, u.b, D, h.b, D, st));
    CHECK_OK(sn_fuse_backward_bf16(NULL, &f, R, D, wh.b, D, wu.b, D, x.b, D, y.b, D, p, st, dx.b, D,
                                   dy.b, D, NULL, 0));
    CHECK_ERR("bf16 fuse backward dx vs float64 finite differences", fd_err(&c, c.x, dx.b), 0x1p-7);
    CHECK_ERR("bf16 fuse backward dy vs float64 finite differences", fd_err(&c, c.y, dy.b), 0x1p-7);
    sn_norm rms = {SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0, 1e-5f};
    c.f = NULL;
    c.n = &rms;
    CHECK_OK(sn_norm_forward_bf16(NULL, &rms, R, D, x.b, D, p, h.b, D, st));
    CHECK_OK(sn_norm_backward_bf16(NULL, &rms, R, D, wh.b, D, x.b, D, p, st, dx.b, D, NULL, 0));
    CHECK_ERR("bf16 RMSNorm backward vs float64 finite differences", fd_err(&c, c.x, dx.b), 0x1p-7);
    pair *ps[] = {&x, &y, &wh, &wu, &u, &h, &dx, &dy};
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) pair_free(ps[k]);
    for (int k = 0; k < 7; k++) free(d[k]);
    free(p), free(st);
}

/* ---- errors specific to bf16 --------------------------------------------------------------- */

static void test_errors(void) {
    const int64_t R = 2, D = 8;
    sn_bf16 buf[3 * 16 + 1], out[2 * 8];
    memset(buf, 0, sizeof buf);
    for (int k = 0; k < 16; k++) out[k] = (sn_bf16)(0x1234 + k);
    sn_bf16 snap[16];
    memcpy(snap, out, sizeof out);
    sn_norm n = {SN_NORM_RMSNORM, SN_AFFINE_NONE, 0, 1e-5f};
    /* an odd address is misaligned for bf16 */
    const sn_bf16 *odd = (const sn_bf16 *)((const char *)buf + 1);
    CHECK_STATUS(sn_norm_forward_bf16(NULL, &n, R, D, odd, D, NULL, out, D, NULL), SN_ERR_ALIGN);
    /* a partial overlap of out with x, in bf16 extents */
    CHECK_STATUS(sn_norm_forward_bf16(NULL, &n, R, D, buf, D, NULL, buf + 4, D, NULL),
                 SN_ERR_ALIAS);
    /* the exact alias is allowed; one element further it is not */
    CHECK_OK(sn_norm_forward_bf16(NULL, &n, R, D, buf, D, NULL, buf, D, NULL));
    CHECK_STATUS(sn_norm_forward_bf16(NULL, &n, R, D, buf, D, NULL, buf + 1, D, NULL),
                 SN_ERR_ALIAS);
    /* strides in elements: ld = D - 1 is too small */
    CHECK_STATUS(sn_norm_forward_bf16(NULL, &n, R, D, buf, D - 1, NULL, out, D, NULL),
                 SN_ERR_STRIDE);
    CHECK_STATUS(sn_norm_forward_bf16(NULL, &n, R, D, NULL, D, NULL, out, D, NULL), SN_ERR_NULL);
    float fb[2 * 8 + 1] = {0};
    CHECK_STATUS(sn_to_bf16(NULL, R, D, fb, D, (sn_bf16 *)(void *)(fb + 4), D), SN_ERR_ALIAS);
    CHECK_STATUS(sn_to_bf16(NULL, R, D, (const float *)(const void *)((char *)fb + 2), D, out, D),
                 SN_ERR_ALIGN);
    CHECK_STATUS(sn_from_bf16(NULL, R, D, (const sn_bf16 *)(const void *)fb, D, fb + 2, D),
                 SN_ERR_ALIAS);
    memcpy(out, snap, sizeof out);
    /* rows wider than the staging row (4096) of the norm, fuse and merge calls: every such call
     * refuses them after its other checks and writes nothing */
    const int64_t W = 4097;
    sn_bf16 *wide = tu_xcalloc((size_t)(5 * W) * sizeof(sn_bf16));
    sn_bf16 *const wa = wide, *const wb = wide + W, *const wc = wide + 2 * W;
    sn_bf16 *const wo = wide + 3 * W, *const wp = wide + 4 * W;
    for (int64_t k = 3 * W; k < 5 * W; k++) wide[k] = 0x5555;
    float wst[3] = {1.0f, 1.0f, 1.0f}, wdp[1] = {0.5f};
    sn_fuse wf;
    sn_fuse_init(&wf, SN_NORM_RMSNORM, SN_AFFINE_NONE, 1e-5f);
    CHECK_STATUS(sn_norm_forward_bf16(NULL, &n, 1, W, wa, W, NULL, wo, W, wst), SN_ERR_UNSUPPORTED);
    CHECK_STATUS(sn_norm_backward_bf16(NULL, &n, 1, W, wa, W, wb, W, NULL, wst, wo, W, wdp, 0),
                 SN_ERR_UNSUPPORTED);
    CHECK_STATUS(sn_fuse_forward_bf16(NULL, &wf, 1, W, wa, W, wb, W, NULL, wo, W, wp, W, wst),
                 SN_ERR_UNSUPPORTED);
    CHECK_STATUS(sn_fuse_backward_bf16(NULL, &wf, 1, W, wa, W, wb, W, wc, W, wa, W, NULL, wst, wo,
                                       W, wp, W, wdp, 0),
                 SN_ERR_UNSUPPORTED);
    CHECK_STATUS(sn_merge_forward_bf16(NULL, &wf, 1, W, wa, W, wb, W, NULL, wo, W, wst),
                 SN_ERR_UNSUPPORTED);
    CHECK_STATUS(sn_merge_backward_bf16(NULL, &wf, 1, W, wa, W, wb, W, wc, W, NULL, wst, wo, W, wp,
                                        W, wdp, 0),
                 SN_ERR_UNSUPPORTED);
    int64_t changed = 0;
    for (int64_t k = 3 * W; k < 5 * W; k++) changed += wide[k] != 0x5555;
    CHECK(changed == 0);
    CHECK(wst[0] == 1.0f && wst[1] == 1.0f && wst[2] == 1.0f && wdp[0] == 0.5f);
    free(wide);
    /* checked mode sees a bf16 infinity */
    sn_ctx *ctx;
    CHECK_OK(sn_ctx_create(&ctx));
    CHECK_OK(sn_ctx_set_check_finite(ctx, 1));
    sn_bf16 xin[16] = {0};
    xin[8 + 3] = 0x7f80;
    CHECK_STATUS(sn_norm_forward_bf16(ctx, &n, R, D, xin, D, NULL, out, D, NULL), SN_ERR_NONFINITE);
    CHECK(sn_ctx_nonfinite_row(ctx) == 1);
    CHECK(memcmp(out, snap, sizeof out) == 0);
    int64_t row = -5;
    CHECK_OK(sn_find_nonfinite_bf16(R, D, xin, D, &row));
    CHECK(row == 1);
    sn_ctx_destroy(ctx);
    CHECK(strcmp(sn_dtype_name(SN_DTYPE_BF16), "bf16") == 0);
    CHECK(sn_dtype_name((sn_dtype)SN_DTYPE_COUNT) == NULL);
}

int main(void) {
    test_scalar_rounding();
    test_errors();
    tu_rng g = {2026};
    test_accuracy(&g);
    test_fd(&g);
    static const int64_t Ds[] = {1, 7, 16, 100, 768, 1030, 4096};
    for (int isa = SN_ISA_SCALAR; isa <= SN_ISA_AVX512; isa++) {
        for (int threads = 1; threads <= 2; threads++) {
            sn_ctx *ctx = tu_isa_ctx(isa);
            if (!ctx) continue;
            if (threads > 1 && sn_ctx_set_threads(ctx, threads) != SN_OK) {
                sn_ctx_destroy(ctx);
                continue;
            }
            for (size_t d = 0; d < sizeof Ds / sizeof Ds[0]; d++) {
                /* R x D beyond 16384 (2 threads split) at D = 100 and from 768 up */
                const int64_t D = Ds[d], R = D >= 768 ? 24 : D == 100 ? 203 : 9;
                cfg c = {ctx, isa, threads, R, D, D + (d % 2 ? 3 : 0)};
                sn_norm ln = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
                sn_norm rms = {SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0, 1e-5f};
                sn_norm scl = {SN_NORM_SCALE, SN_AFFINE_SCALE_SHIFT, 0, 0.0f};
                sn_norm idn = {SN_NORM_IDENTITY, SN_AFFINE_NONE, 0, 0.0f};
                test_norm(&c, &g, ln);
                test_norm(&c, &g, rms);
                test_norm(&c, &g, scl);
                if (D % 4 == 0) {
                    sn_norm grp = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE, (int32_t)(D / 4), 1e-5f};
                    test_norm(&c, &g, grp);
                }
                sn_fuse f;
                sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f);
                test_fuse(&c, &g, f);
                f.out = idn;
                f.y.kind = SN_NORM_RMSNORM;
                f.y.affine = SN_AFFINE_SCALE;
                test_fuse(&c, &g, f);
                test_elementwise(&c, &g);
                test_big(&c, &g);
            }
            sn_ctx_destroy(ctx);
        }
    }
    return tu_finish("test_bf16");
}
