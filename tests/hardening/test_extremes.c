/* Rows at the edges of the fp32 range, on every kernel path of this CPU (defects 1 and 2 of the
 * audit table in docs/reliability.md):
 *   - defect 1: LayerNorm backward of a constant row whose mean * rstd exceeds FLT_MAX (1e37
 *     with eps 1e-5, 1e24 with eps 1e-30) at widths with a partial last vector: dx, dparams
 *     finite (the SIMD tails once gave NaN: 0 * inf in lanes masked off); the same for the fuse
 *     backward and a whole placement pass;
 *   - defect 2: the boundary of the accuracy promise of docs/reliability.md: LayerNorm is
 *     accurate on every finite row whose |x_j - mean| stays <= FLT_MAX, which every row with
 *     max |x_j| <= FLT_MAX / 2 satisfies: {M, -M, -M, -M} at M = 2^127 (the largest such M) is
 *     checked against float64 forward and backward. */
#include "netrun.h"
#include "ref64.h"

#include <float.h>

static const sn_isa isas[] = {SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512};

/* defect 1: norm backward of a constant row */
static void const_row_norm(sn_ctx *ctx, const char *isa, float v, float eps, int64_t D) {
    const int64_t R = 3;
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, eps};
    float *x = tu_fzeros(R * D), *out = tu_fzeros(R * D), *st = tu_fzeros(2 * R),
          *dout = tu_fzeros(R * D), *dx = tu_fzeros(R * D), *p = tu_fzeros(2 * D),
          *dp = tu_fzeros(2 * D);
    tu_rng g = {(uint64_t)D};
    for (int64_t k = 0; k < R * D; k++) x[k] = v, dout[k] = (float)tu_unif(&g, -1.0, 1.0);
    CHECK_OK(sn_norm_init_params(&n, D, p));
    CHECK_OK(sn_norm_forward(ctx, &n, R, D, x, D, p, out, D, st));
    CHECK_OK(sn_norm_backward(ctx, &n, R, D, dout, D, x, D, p, st, dx, D, dp, 0));
    CHECK_MSG(tu_all_finite(out, R * D) && tu_all_finite(dx, R * D) && tu_all_finite(dp, 2 * D),
              "%s: norm backward of a constant row %g, eps %g, D %lld: not finite", isa, v, eps,
              (long long)D);
    free(x), free(out), free(st), free(dout), free(dx), free(p), free(dp);
}

/* defect 1: fuse backward with constant rows in x and y */
static void const_row_fuse(sn_ctx *ctx, const char *isa, float v, float eps, int64_t D) {
    const int64_t R = 3;
    sn_fuse f;
    int64_t np, spr;
    CHECK_OK(sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, eps));
    CHECK_OK(sn_fuse_query(&f, D, &np, &spr));
    float *x = tu_fzeros(R * D), *y = tu_fzeros(R * D), *u = tu_fzeros(R * D),
          *h = tu_fzeros(R * D), *st = tu_fzeros(R * spr), *dh = tu_fzeros(R * D),
          *dx = tu_fzeros(R * D), *dy = tu_fzeros(R * D), *p = tu_fzeros(np), *dp = tu_fzeros(np);
    tu_rng g = {(uint64_t)D + 7};
    for (int64_t k = 0; k < R * D; k++) x[k] = v, y[k] = -v, dh[k] = (float)tu_unif(&g, -1.0, 1.0);
    CHECK_OK(sn_fuse_init_params(&f, D, p));
    CHECK_OK(sn_fuse_forward(ctx, &f, R, D, x, D, y, D, p, u, D, h, D, st));
    CHECK_OK(
        sn_fuse_backward(ctx, &f, R, D, dh, D, NULL, D, x, D, y, D, p, st, dx, D, dy, D, dp, 0));
    CHECK_MSG(tu_all_finite(dx, R * D) && tu_all_finite(dy, R * D) && tu_all_finite(dp, np),
              "%s: fuse backward of constant rows %g, eps %g, D %lld: not finite", isa, v, eps,
              (long long)D);
    free(x), free(y), free(u), free(h), free(st), free(dh), free(dx), free(dy), free(p), free(dp);
}

/* defect 1: a whole SiameseNorm pass from a constant input row */
static void const_row_net(sn_ctx *ctx, const char *isa, float v, int64_t D) {
    netrun n;
    CHECK_MSG(netrun_init(&n, SN_PLACEMENT_SIAMESE, 4, D, 2, SN_NORM_LAYERNORM, 3) == 0,
              "netrun_init");
    float *e = tu_fzeros(2 * D);
    for (int64_t k = 0; k < 2 * D; k++) e[k] = v;
    CHECK_OK(netrun_pass(ctx, &n, e));
    CHECK_MSG(tu_all_finite(n.de, 2 * D) && tu_all_finite(n.grads, n.np),
              "%s: placement pass from a constant row %g, D %lld: not finite", isa, v,
              (long long)D);
    free(e);
    netrun_free(&n);
}

/* defect 2: the boundary row {M, -M, -M, -M} (and its widths with tails) against float64 */
static void boundary_row(sn_ctx *ctx, const char *isa, float M, int64_t D) {
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    float *x = tu_fzeros(D), *out = tu_fzeros(D), *st = tu_fzeros(2), *dout = tu_fzeros(D),
          *dx = tu_fzeros(D), *p = tu_fzeros(2 * D), *dp = tu_fzeros(2 * D);
    double *pd = tu_dzeros(2 * D), *xd = tu_dzeros(D), *dd = tu_dzeros(D), *ref = tu_dzeros(D),
           *rdx = tu_dzeros(D);
    tu_rng g = {(uint64_t)D + 11};
    for (int64_t j = 0; j < D; j++)
        x[j] = j % 4 == 0 ? M : -M, dout[j] = (float)tu_unif(&g, -1.0, 1.0);
    CHECK_OK(sn_norm_init_params(&n, D, p)); /* gamma 1, beta 0 */
    CHECK_OK(sn_norm_forward(ctx, &n, 1, D, x, D, p, out, D, st));
    CHECK_OK(sn_norm_backward(ctx, &n, 1, D, dout, D, x, D, p, st, dx, D, dp, 0));
    tu_to_double(p, 1, 2 * D, 2 * D, pd, 2 * D);
    tu_to_double(x, 1, D, D, xd, D);
    tu_to_double(dout, 1, D, D, dd, D);
    ref_norm_fwd(&n, 1, D, xd, D, pd, ref, D, NULL);
    ref_norm_bwd(&n, 1, D, dd, D, xd, D, pd, rdx, D);
    const double ef = tu_err(out, ref, D, 1.0), eb = tu_err(dx, rdx, D, 1e-30);
    CHECK_MSG(tu_all_finite(out, D) && ef < 1e-5,
              "%s: row {M, -M, -M, -M}, M = %g, D %lld: forward error %g", isa, M, (long long)D,
              ef);
    CHECK_MSG(tu_all_finite(dx, D) && tu_all_finite(dp, 2 * D) && eb < 1e-4,
              "%s: row {M, -M, -M, -M}, M = %g, D %lld: backward error %g", isa, M, (long long)D,
              eb);
    free(x), free(out), free(st), free(dout), free(dx), free(p), free(dp), free(pd), free(xd),
        free(dd), free(ref), free(rdx);
}

int main(void) {
    static const int64_t widths[] = {1, 2, 3, 5, 7, 9, 12, 15, 17, 20, 31, 33, 47, 63, 65, 100};
    const int nw = (int)(sizeof widths / sizeof widths[0]);
    for (int i = 0; i < 3; i++) {
        sn_ctx *ctx = tu_isa_ctx(isas[i]);
        if (!ctx) continue;
        const char *name = sn_isa_name(isas[i]);
        for (int w = 0; w < nw; w++) {
            const int64_t D = widths[w];
            const_row_norm(ctx, name, 1e37f, 1e-5f, D);
            const_row_norm(ctx, name, -1e37f, 1e-5f, D);
            const_row_norm(ctx, name, 1e24f, 1e-30f, D);
            const_row_fuse(ctx, name, 1e37f, 1e-5f, D);
            const_row_fuse(ctx, name, 1e24f, 1e-30f, D);
            const_row_net(ctx, name, 1e37f, D);
            if (D >= 4) {
                boundary_row(ctx, name, 0x1p127f, D); /* FLT_MAX / 2, rounded: the boundary */
                boundary_row(ctx, name, -0x1p127f, D);
                boundary_row(ctx, name, 1e38f, D);
            }
        }
        sn_ctx_destroy(ctx);
    }
    return tu_finish("extremes");
}
