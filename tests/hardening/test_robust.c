/* Numerical robustness of the row statistics, on every kernel path, against a float64
 * reference computed from the same fp32 inputs. Each case states its expectation; the
 * tolerances are documented in docs/reliability.md ("Numerical robustness") with the errors
 * measured when they were set. SN_TEST_VERBOSE=1 prints every measured error. The reference
 * is tests/ref64.c, the core tests' (written from the formulas, computed in double from the same
 * fp32 inputs).
 *
 *   big-mean     |mean| = 1e4 * std: the two-pass statistics keep LayerNorm accurate
 *                (forward and backward within 2e-3 of the float64 result relative to the
 *                largest output, i.e. the fp32 rounding of the inputs' mean dominates).
 *   constant     zero-variance rows: LayerNorm outputs beta to within |gamma| * delta * rstd,
 *                where delta, the fp32 error of the row mean, stays below 4 * sqrt(D) ulps of
 *                |c| and rstd = 1/sqrt(eps); beta exactly when the mean is exact. RMSNorm
 *                matches the reference. Gradients finite.
 *   near-eps     variance eps/100, eps, 100 eps: within 1e-5 (forward) / 1e-4 (backward).
 *   subnormal    rows of subnormal values: finite, within 1e-6 of the reference (which is
 *                x / sqrt(eps), itself subnormal-small) relative to max(|ref|, 1).
 *   huge         |x| ~ 1e15 and ~ 1e30 (x^2 overflows fp32; the row's statistics are
 *                recomputed in float64): accurate (1e-5).
 *   D = 1        LayerNorm gives beta exactly and dx = 0 exactly; RMSNorm x/sqrt(x^2+eps).
 *   D = 1 << 20  one-megafloat rows within 1e-4 (1024-wide groups of them within 1e-5). */
#include "ref64.h"
#include "testutil.h"

static const char *g_path;
static int verbose;

static void report(const char *what, double err, double tol) {
    char label[160];
    snprintf(label, sizeof label, "%-8s %s", g_path, what);
    CHECK_ERR(label, err, tol);
}

/* Runs norm `kind` (affine scale+shift for LayerNorm, scale for RMSNorm) forward and backward
 * on R x D rows x, compares with the float64 reference (ref64.h); records checks. */
static void run_case(sn_ctx *ctx, const char *label, int kind, int64_t R, int64_t D, const float *x,
                     float eps, double tol_f, double tol_b, double floor_) {
    sn_norm n = {kind, kind == SN_NORM_LAYERNORM ? SN_AFFINE_SCALE_SHIFT : SN_AFFINE_SCALE, 0, eps};
    int64_t np = 0, spr = 0;
    CHECK_OK(sn_norm_query(&n, D, &np, &spr));
    float *p = tu_fzeros(np), *dp = tu_fzeros(np), *out = tu_fzeros(R * D),
          *st = tu_fzeros(R * spr + 1), *dout = tu_fzeros(R * D), *dx = tu_fzeros(R * D);
    double *pd = tu_dzeros(np), *xd = tu_dzeros(R * D), *dd = tu_dzeros(R * D),
           *ro = tu_dzeros(R * D), *rdx = tu_dzeros(R * D);
    tu_rng rng = {(uint64_t)D * 7919u + (uint64_t)kind};
    for (int64_t j = 0; j < D; j++) {
        p[j] = (float)(1.0 + 0.5 * tu_unif(&rng, -1.0, 1.0));
        if (np > D) p[D + j] = (float)(0.25 * tu_unif(&rng, -1.0, 1.0));
    }
    for (int64_t k = 0; k < R * D; k++) dout[k] = (float)tu_unif(&rng, -1.0, 1.0);
    CHECK_OK(sn_norm_forward(ctx, &n, R, D, x, D, p, out, D, st));
    CHECK_OK(sn_norm_backward(ctx, &n, R, D, dout, D, x, D, p, st, dx, D, dp, 0));
    tu_to_double(p, 1, np, np, pd, np);
    tu_to_double(x, R, D, D, xd, D);
    tu_to_double(dout, R, D, D, dd, D);
    ref_norm_fwd(&n, R, D, xd, D, pd, ro, D, NULL);
    ref_norm_bwd(&n, R, D, dd, D, xd, D, pd, rdx, D);
    char what[128];
    snprintf(what, sizeof what, "%s %s fwd", label, kind == SN_NORM_LAYERNORM ? "LN" : "RMS");
    CHECK_MSG(tu_all_finite(out, R * D), "[%s] %s: non-finite output", g_path, what);
    report(what, tu_err(out, ro, R * D, floor_), tol_f);
    snprintf(what, sizeof what, "%s %s bwd", label, kind == SN_NORM_LAYERNORM ? "LN" : "RMS");
    CHECK_MSG(tu_all_finite(dx, R * D) && tu_all_finite(dp, np), "[%s] %s: non-finite gradient",
              g_path, what);
    report(what, tu_err(dx, rdx, R * D, floor_), tol_b);
    free(p), free(dp), free(out), free(st), free(dout), free(dx), free(pd), free(xd), free(dd),
        free(ro), free(rdx);
}

static void big_mean(sn_ctx *ctx) {
    static const int64_t Ds[] = {64, 1000, 4096};
    for (size_t i = 0; i < sizeof Ds / sizeof Ds[0]; i++) {
        int64_t R = 8, D = Ds[i];
        float *x = tu_fzeros(R * D);
        tu_rng rng = {42 + (uint64_t)D};
        for (int64_t r = 0; r < R; r++) {
            double mean = (r & 1 ? -1e4 : 1e4) * (1 + r), std = 1 + r;
            for (int64_t j = 0; j < D; j++) x[r * D + j] = (float)(mean + std * tu_gauss(&rng));
        }
        char l[64];
        snprintf(l, sizeof l, "big-mean D=%lld", (long long)D);
        run_case(ctx, l, SN_NORM_LAYERNORM, R, D, x, 1e-5f, 2e-3, 2e-3, 0.0);
        run_case(ctx, l, SN_NORM_RMSNORM, R, D, x, 1e-5f, 1e-5, 1e-4, 0.0);
        free(x);
    }
}

static void constant_rows(sn_ctx *ctx) {
    static const float cs[] = {0.0f, 1.0f, 0.1f, -3.7f, 1e4f, 1e-20f, 65504.0f};
    static const int64_t Ds[] = {1, 7, 1024, 4099};
    for (size_t i = 0; i < sizeof Ds / sizeof Ds[0]; i++) {
        int64_t R = (int64_t)(sizeof cs / sizeof cs[0]), D = Ds[i];
        float *x = tu_fzeros(R * D);
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++) x[r * D + j] = cs[r];
        /* LayerNorm: the exact output is beta. fp32's mean of D copies of c is off by some
         * ulps of c (delta, growing with D); then out - beta = gamma * delta * rstd with
         * rstd = 1/sqrt(var + eps) ~ 1/sqrt(eps). Bound: |gamma| <= 1.5, delta <= 4 sqrt(D)
         * ulps of |c| (measured worst: 1.3 sqrt(D) ulps, scalar path, D = 4099). */
        sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
        float *p = tu_fzeros(2 * D), *out = tu_fzeros(R * D), *st = tu_fzeros(2 * R),
              *dout = tu_fzeros(R * D), *dx = tu_fzeros(R * D), *dp = tu_fzeros(2 * D);
        tu_rng rng = {7 + (uint64_t)D};
        for (int64_t j = 0; j < D; j++)
            p[j] = (float)(1 + 0.5 * tu_unif(&rng, -1.0, 1.0)),
            p[D + j] = (float)(0.25 * tu_unif(&rng, -1.0, 1.0));
        for (int64_t k = 0; k < R * D; k++) dout[k] = (float)tu_unif(&rng, -1.0, 1.0);
        CHECK_OK(sn_norm_forward(ctx, &n, R, D, x, D, p, out, D, st));
        CHECK_OK(sn_norm_backward(ctx, &n, R, D, dout, D, x, D, p, st, dx, D, dp, 0));
        double worst = 0.0;
        for (int64_t r = 0; r < R; r++) {
            double bound =
                1.5 * 4.0 * sqrt((double)D) * ldexp(fabs((double)cs[r]), -23) / sqrt(1e-5) + 1e-7;
            for (int64_t j = 0; j < D; j++) {
                double dev = fabs((double)out[r * D + j] - (double)p[D + j]);
                if (dev / bound > worst) worst = dev / bound;
            }
        }
        if (verbose)
            printf("  %-8s constant LN D=%-5lld worst |out-beta| / bound = %.3f\n", g_path,
                   (long long)D, worst);
        CHECK_MSG(worst <= 1.0, "[%s] constant rows D=%lld: |out - beta| is %.2f x the bound",
                  g_path, (long long)D, worst);
        CHECK_MSG(tu_all_finite(dx, R * D) && tu_all_finite(dp, 2 * D),
                  "[%s] constant rows D=%lld: non-finite gradients", g_path, (long long)D);
        /* rows whose mean is exact in fp32 (0, 1, and D a power of two) give beta exactly */
        for (int64_t j = 0; j < D && (D & (D - 1)) == 0; j++)
            CHECK_MSG(out[j] == p[D + j] && out[D + j] == p[D + j],
                      "[%s] constant rows 0 and 1, D=%lld: out != beta exactly", g_path,
                      (long long)D);
        char l[64];
        snprintf(l, sizeof l, "constant D=%lld", (long long)D);
        run_case(ctx, l, SN_NORM_RMSNORM, R, D, x, 1e-5f, 1e-5, 1e-4, 1.0);
        free(x), free(p), free(out), free(st), free(dout), free(dx), free(dp);
    }
}

static void near_eps(sn_ctx *ctx) {
    static const double ratios[] = {1e-2, 1.0, 1e2};
    const float eps = 1e-5f;
    for (size_t i = 0; i < 3; i++) {
        int64_t R = 4, D = 768;
        float *x = tu_fzeros(R * D);
        tu_rng rng = {99 + i};
        double std = sqrt(ratios[i] * eps);
        for (int64_t k = 0; k < R * D; k++) x[k] = (float)(0.5 + std * tu_gauss(&rng));
        char l[64];
        snprintf(l, sizeof l, "near-eps var=%g*eps", ratios[i]);
        run_case(ctx, l, SN_NORM_LAYERNORM, R, D, x, eps, 1e-4, 1e-3, 0.0);
        for (int64_t k = 0; k < R * D; k++) x[k] = (float)(std * tu_gauss(&rng));
        run_case(ctx, l, SN_NORM_RMSNORM, R, D, x, eps, 1e-5, 1e-4, 0.0);
        free(x);
    }
}

static void subnormal(sn_ctx *ctx) {
    int64_t R = 3, D = 256;
    float *x = tu_fzeros(R * D);
    tu_rng rng = {5};
    for (int64_t k = 0; k < R * D; k++)
        x[k] = (float)(1e-40 * tu_unif(&rng, -1.0, 1.0)); /* subnormal: below FLT_MIN = 1.18e-38 */
    run_case(ctx, "subnormal", SN_NORM_LAYERNORM, R, D, x, 1e-5f, 1e-6, 1e-5, 1.0);
    run_case(ctx, "subnormal", SN_NORM_RMSNORM, R, D, x, 1e-5f, 1e-6, 1e-5, 1.0);
    free(x);
}

/* Values near 1e30: their squares overflow fp32 (FLT_MAX = 3.4e38), so an fp32 sum of squared
 * deviations is +inf. The library then recomputes that row's statistics in float64 (the
 * kernels' overflow guard), so the results are as accurate as at 1e15: checked against the
 * float64 reference with the same tolerances, for norms and for the fuse (whose x and y
 * statistics come from a two-row kernel of their own). */
static void huge(sn_ctx *ctx) {
    int64_t R = 2, D = 512;
    float *x = tu_fzeros(R * D), *y = tu_fzeros(R * D);
    tu_rng rng = {11};
    static const double scales[] = {1e15, 1e30};
    for (int s = 0; s < 2; s++) {
        for (int64_t k = 0; k < R * D; k++) x[k] = (float)(scales[s] * tu_gauss(&rng));
        const char *label = s ? "scale 1e30" : "scale 1e15";
        run_case(ctx, label, SN_NORM_LAYERNORM, R, D, x, 1e-5f, 1e-5, 1e-4, 0.0);
        run_case(ctx, label, SN_NORM_RMSNORM, R, D, x, 1e-5f, 1e-5, 1e-4, 0.0);
    }
    /* the fuse's u = N_x(x) must be the same bits as sn_norm_forward's N_x(x) */
    for (int64_t k = 0; k < R * D; k++) y[k] = (float)(3e29 * tu_gauss(&rng));
    sn_fuse f;
    CHECK_OK(sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_NONE, 1e-5f));
    float *u = tu_fzeros(R * D), *h = tu_fzeros(R * D), *nx = tu_fzeros(R * D),
          *fs = tu_fzeros(6 * R);
    CHECK_OK(sn_fuse_forward(ctx, &f, R, D, x, D, y, D, NULL, u, D, h, D, fs));
    CHECK_OK(sn_norm_forward(ctx, &f.x, R, D, x, D, NULL, nx, D, NULL));
    CHECK_MSG(memcmp(u, nx, (size_t)(R * D) * sizeof(float)) == 0 && tu_all_finite(h, R * D),
              "[%s] 1e30 fuse: u differs from the norm's output or h is not finite", g_path);
    double umax = 0.0;
    for (int64_t k = 0; k < R * D; k++) umax = fabs(u[k]) > umax ? fabs(u[k]) : umax;
    CHECK_MSG(umax > 1.0 && umax < 10.0, "[%s] 1e30 fuse: |u| max %g, not a normalised row", g_path,
              umax);
    free(x), free(y), free(u), free(h), free(nx), free(fs);
}

static void d_one(sn_ctx *ctx) {
    int64_t R = 5, D = 1;
    float x[5] = {0.0f, 1.0f, -2.5f, 1e4f, 1e-30f};
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    float p[2] = {1.5f, -0.25f}, out[5], st[10], dout[5] = {1, -1, 2, 0.5f, 3}, dx[5],
          dp[2] = {0, 0};
    CHECK_OK(sn_norm_forward(ctx, &n, R, D, x, 1, p, out, 1, st));
    CHECK_OK(sn_norm_backward(ctx, &n, R, D, dout, 1, x, 1, p, st, dx, 1, dp, 0));
    for (int r = 0; r < 5; r++) {
        CHECK_MSG(out[r] == p[1], "[%s] D=1 LayerNorm row %d: out %g != beta", g_path, r,
                  (double)out[r]);
        CHECK_MSG(dx[r] == 0.0f, "[%s] D=1 LayerNorm row %d: dx %g != 0", g_path, r, (double)dx[r]);
    }
    run_case(ctx, "D=1", SN_NORM_RMSNORM, R, D, x, 1e-5f, 1e-6, 1e-5, 0.0);
}

static void d_huge(sn_ctx *ctx) {
    int64_t R = 2, D = (int64_t)1 << 20;
    float *x = tu_fzeros(R * D);
    tu_rng rng = {1234};
    for (int64_t k = 0; k < R * D; k++) x[k] = (float)(3.0 + 2.0 * tu_gauss(&rng));
    run_case(ctx, "D=1<<20", SN_NORM_LAYERNORM, R, D, x, 1e-5f, 1e-4, 1e-4, 0.0);
    run_case(ctx, "D=1<<20", SN_NORM_RMSNORM, R, D, x, 1e-5f, 1e-4, 1e-4, 0.0);
    /* per-head groups of 1024 across the same megafloat rows: forward vs reference per group */
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_NONE, 1024, 1e-5f};
    float *out = tu_fzeros(R * D);
    CHECK_OK(sn_norm_forward(ctx, &n, R, D, x, D, NULL, out, D, NULL));
    double *xd = tu_dzeros(R * D), *ro = tu_dzeros(R * D);
    tu_to_double(x, R, D, D, xd, D);
    ref_norm_fwd(&n, R, D, xd, D, NULL, ro, D, NULL);
    report("D=1<<20 groups of 1024 LN fwd", tu_err(out, ro, R * D, 0.0), 1e-5);
    free(x), free(out), free(xd), free(ro);
}

int main(void) {
    verbose = getenv("SN_TEST_VERBOSE") != NULL;
    static const sn_isa isas[] = {SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512};
    for (size_t i = 0; i < 3; i++) {
        sn_ctx *ctx = tu_isa_ctx(isas[i]);
        if (!ctx) continue;
        g_path = sn_isa_name(isas[i]);
        big_mean(ctx);
        constant_rows(ctx);
        near_eps(ctx);
        subnormal(ctx);
        huge(ctx);
        d_one(ctx);
        d_huge(ctx);
        sn_ctx_destroy(ctx);
    }
    return tu_finish("robust");
}
