/* sn_norm_query / sn_norm_init_params / sn_norm_forward / sn_norm_backward against the float64
 * reference (forward, saved statistics) and float64 central finite differences of the scalar loss
 * L = sum(w * N(x)) (backward: dx, dgamma, dbeta), for LayerNorm and RMSNorm with and without
 * beta, non-affine, identity and grouped norms, over a spread of R, D, eps and row strides.
 *
 * Error metric (tests/testutil.h): err = max|a - b| / max(max|b|, floor).
 *  - Forward, tol 2e-5: the fp32 two-pass row statistics over D <= 1000 terms carry a typical
 *    relative error ~ sqrt(D) * 2^-24 ~ 2e-6 which rstd and the affine map amplify by at most a
 *    few; 2e-5 keeps ~3-10x margin while a formula error such as an unbiased variance (D - 1)
 *    at D = 1000 (5e-4) or a wrong eps placement is caught. floor = 1e-3.
 *  - Gradients, tol 1e-4: fp32 backward (two more row reductions, parameter sums over up to
 *    256 rows, i.e. ~16 * 2^-24 growth relative to the largest entry) vs float64 central FD
 *    whose own error is ~1e-9 here (h = 1e-5 (1 + |v|), smooth functions, row-local losses).
 *    Input gradients use floor = max |rstd * gamma * dout|: dx is a difference of terms of that
 *    size, so fp32 can only be accurate relative to it (this matters where the true gradient is
 *    ~0: D = 1, or RMSNorm at D = 1 where dx ~ eps). Parameter gradients use floor = 1.
 *  - Rows with |mean| >> std (mean 1000, std 1), tol 1e-3 forward and backward: the inputs
 *    themselves are only known to ulp(1000) = 6e-5 relative to std in fp32, so ~1e-4 is the
 *    inherent limit; a one-pass E[x^2] - E[x]^2 in fp32 is off by > 1e-1 and is caught. */
#include "ref64.h"
#include "testutil.h"

#define TOL_FWD     2e-5
#define TOL_BWD     1e-4
#define TOL_BIGMEAN 1e-3

typedef struct norm_loss {
    const sn_norm *n;
    int64_t R, D, row; /* row >= 0: only that row contributes (row-local FD of an input) */
    double *x;         /* R x D contiguous */
    double *p;
    double *w; /* R x D contiguous */
    double *tmp;
} norm_loss;

static double norm_loss_eval(void *vctx) {
    norm_loss *c = (norm_loss *)vctx;
    int64_t r0 = c->row >= 0 ? c->row : 0, nr = c->row >= 0 ? 1 : c->R;
    ref_norm_fwd(c->n, nr, c->D, c->x + r0 * c->D, c->D, c->p, c->tmp, c->D, NULL);
    double L = 0.0;
    for (int64_t k = 0; k < nr * c->D; k++) L += c->w[r0 * c->D + k] * c->tmp[k];
    return L;
}

static const char *kind_name(const sn_norm *n) {
    static const char *k[] = {"LN", "RMS", "ID", "SCALE"};
    static const char *a[] = {"scale+shift", "scale", "none"};
    static char buf[64];
    snprintf(buf, sizeof buf, "%s/%s/G%d/eps%g", k[n->kind],
             n->kind == SN_NORM_IDENTITY ? "-" : a[n->affine], (int)n->group, (double)n->eps);
    return buf;
}

/* One full check of a norm configuration. offset: added to every row (|mean| >> std test). */
static void check_norm(const sn_norm *n, int64_t R, int64_t D, int64_t pad, uint64_t seed,
                       double offset, const sn_ctx *ctx) {
    char label[160];
    tu_rng g = {seed};
    const double tol_f = offset != 0.0 ? TOL_BIGMEAN : TOL_FWD;
    const double tol_b = offset != 0.0 ? TOL_BIGMEAN : TOL_BWD;
    const int64_t ldx = D + pad, ldo = D + 2 * pad + 1, lddo = D + pad + 3, lddx = D + 3 * pad;
    int64_t np = -1, ns = -1;
    CHECK_OK(sn_norm_query(n, D, &np, &ns));
    CHECK_MSG(np == ref_norm_nparams(n, D) && ns == ref_norm_nstats(n, D),
              "%s D=%lld: query n_params %lld stats %lld, expected %lld %lld", kind_name(n),
              (long long)D, (long long)np, (long long)ns, (long long)ref_norm_nparams(n, D),
              (long long)ref_norm_nstats(n, D));
    np = ref_norm_nparams(n, D);
    ns = ref_norm_nstats(n, D);
    const int64_t W = ref_norm_width(n, D);
    const int has_beta = np == 2 * W;

    /* inputs */
    float *x = tu_falloc(R * ldx), *dout = tu_falloc(R * lddo);
    tu_canary_fill(x, R * ldx);
    tu_canary_fill(dout, R * lddo);
    for (int64_t r = 0; r < R; r++) {
        double rowoff = offset != 0.0 ? offset : tu_unif(&g, -1.0, 1.0);
        double scale = offset != 0.0 ? 1.0 : tu_unif(&g, 0.3, 3.0);
        for (int64_t j = 0; j < D; j++)
            x[r * ldx + j] = (float)(rowoff + scale * tu_unif(&g, -1.7, 1.7));
    }
    tu_fill_view(&g, dout, R, D, lddo, -1.0, 1.0);
    float *p = tu_falloc(np + 1), *pinit = tu_falloc(np + 1);
    CHECK_OK(sn_norm_init_params(n, D, np ? pinit : NULL));
    for (int64_t k = 0; k < np; k++) {
        CHECK_MSG(pinit[k] == (k < W ? 1.0f : 0.0f), "init_params %s [%lld] = %g", kind_name(n),
                  (long long)k, (double)pinit[k]);
        p[k] = (float)(k < W ? tu_unif(&g, 0.4, 1.6) * (tu_unif(&g, 0, 1) < 0.2 ? -1 : 1)
                             : tu_unif(&g, -0.6, 0.6));
    }

    /* double copies */
    double *xd = tu_dalloc(R * D), *wd = tu_dalloc(R * D), *pd = tu_dalloc(np + 1);
    double *outd = tu_dalloc(R * D), *statsd = tu_dalloc(R * ns + 1), *tmp = tu_dalloc(R * D);
    tu_to_double(x, R, D, ldx, xd, D);
    tu_to_double(dout, R, D, lddo, wd, D);
    for (int64_t k = 0; k < np; k++) pd[k] = p[k];
    ref_norm_fwd(n, R, D, xd, D, pd, outd, D, statsd);

    /* ---- forward (training), padding and stats guard ---- */
    float *out = tu_falloc(R * ldo), *stats = tu_falloc(R * ns + 8);
    tu_canary_fill(out, R * ldo);
    tu_canary_fill(stats, R * ns + 8);
    CHECK_OK(sn_norm_forward(ctx, n, R, D, x, ldx, np ? p : NULL, out, ldo, stats));
    snprintf(label, sizeof label, "fwd %s R=%lld D=%lld", kind_name(n), (long long)R, (long long)D);
    CHECK_ERR(label, tu_err_view(out, ldo, outd, D, R, D, 1e-3), tol_f);
    CHECK_MSG(tu_padding_damage(out, R, D, ldo) == 0, "%s: out padding modified", label);
    CHECK_MSG(tu_guard_damage(stats, R * ns, R * ns + 8) == 0, "%s: wrote past stats", label);
    if (ns) {
        /* stats vs reference: means then rstds per row; rstd relative to itself */
        double emax = 0.0;
        for (int64_t k = 0; k < R * ns; k++) {
            int64_t col = k % ns;
            int is_rstd = n->kind == SN_NORM_RMSNORM || col >= ns / 2;
            double ref = statsd[k];
            double scale = is_rstd ? fabs(ref) : 1.0 / statsd[k - col + ns / 2 + col % (ns / 2)];
            /* mean: error relative to the row's std (1/rstd), as that is what matters */
            double e = fabs((double)stats[k] - ref) / scale;
            if (!(e <= emax)) emax = e != e ? INFINITY : e;
        }
        snprintf(label, sizeof label, "stats %s R=%lld D=%lld", kind_name(n), (long long)R,
                 (long long)D);
        CHECK_ERR(label, emax, tol_f);
    }

    /* inference forward: same values within tolerance; in-place (out aliasing x) bitwise equal
     * to the non-aliased inference call. */
    float *out2 = tu_falloc(R * ldo), *xin = tu_falloc(R * ldx);
    tu_canary_fill(out2, R * ldo);
    CHECK_OK(sn_norm_forward(ctx, n, R, D, x, ldx, np ? p : NULL, out2, ldo, NULL));
    snprintf(label, sizeof label, "fwd-infer %s R=%lld D=%lld", kind_name(n), (long long)R,
             (long long)D);
    CHECK_ERR(label, tu_err_view(out2, ldo, outd, D, R, D, 1e-3), tol_f);
    memcpy(xin, x, (size_t)(R * ldx) * sizeof(float));
    CHECK_OK(sn_norm_forward(ctx, n, R, D, xin, ldx, np ? p : NULL, xin, ldx, NULL));
    {
        int64_t bad = 0;
        for (int64_t r = 0; r < R; r++)
            bad += memcmp(xin + r * ldx, out2 + r * ldo, (size_t)D * sizeof(float)) != 0;
        CHECK_MSG(bad == 0, "%s: in-place forward differs from out-of-place in %lld rows", label,
                  (long long)bad);
        CHECK_MSG(tu_padding_damage(xin, R, D, ldx) == 0, "%s: in-place padding", label);
    }

    /* ---- finite differences ---- */
    norm_loss L = {n, R, D, -1, xd, pd, wd, tmp};
    const int64_t nin = tu_fd_count(R * D > 600 ? 400 : R * D);
    const int64_t npc = tu_fd_count((np > 64 && R * D > 20000) ? 64 : np);
    int64_t *in_idx = (int64_t *)tu_xalloc((size_t)nin * sizeof(int64_t));
    int64_t *p_idx = (int64_t *)tu_xalloc((size_t)(npc + 1) * sizeof(int64_t));
    double *fd_in = tu_dalloc(nin), *fd_p = tu_dalloc(npc + 1);
    double dx_floor = 1e-30;
    for (int64_t k = 0; k < nin; k++) {
        in_idx[k] = nin == R * D ? k : tu_randint(&g, R * D);
        L.row = in_idx[k] / D;
        double *v = &xd[in_idx[k]];
        fd_in[k] = tu_fd(norm_loss_eval, &L, v, 1e-5 * (1.0 + fabs(*v)));
    }
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) {
            double rstd = 1.0;
            if (n->kind == SN_NORM_LAYERNORM) rstd = statsd[r * ns + ns / 2 + j / W];
            else if (n->kind == SN_NORM_RMSNORM) rstd = statsd[r * ns + j / W];
            double gam = (np ? pd[j % W] : 1.0);
            double t = fabs(rstd * gam * wd[r * D + j]);
            if (t > dx_floor) dx_floor = t;
        }
    L.row = -1;
    for (int64_t k = 0; k < npc; k++) {
        p_idx[k] = npc == np ? k : tu_randint(&g, np);
        fd_p[k] = tu_fd(norm_loss_eval, &L, &pd[p_idx[k]], 1e-5 * (1.0 + fabs(pd[p_idx[k]])));
    }

    /* ---- backward, write mode, dparams accumulate onto a nonzero prefill ---- */
    float *dx = tu_falloc(R * lddx), *dp = tu_falloc(np + 8), *dp0 = tu_falloc(np + 8);
    tu_canary_fill(dx, R * lddx);
    tu_canary_fill(dp, np + 8);
    tu_fill(&g, dp, np, -0.5, 0.5);
    memcpy(dp0, dp, (size_t)(np + 8) * sizeof(float));
    CHECK_OK(sn_norm_backward(ctx, n, R, D, dout, lddo, x, ldx, np ? p : NULL, ns ? stats : NULL,
                              dx, lddx, np ? dp : NULL, 0));
    double *a_in = tu_dalloc(nin), *a_p = tu_dalloc(npc + 1);
    for (int64_t k = 0; k < nin; k++) a_in[k] = dx[(in_idx[k] / D) * lddx + in_idx[k] % D];
    for (int64_t k = 0; k < npc; k++) a_p[k] = (double)dp[p_idx[k]] - (double)dp0[p_idx[k]];
    snprintf(label, sizeof label, "dx %s R=%lld D=%lld", kind_name(n), (long long)R, (long long)D);
    CHECK_ERR(label, tu_err_dd(a_in, fd_in, nin, dx_floor), tol_b);
    CHECK_MSG(tu_padding_damage(dx, R, D, lddx) == 0, "%s: dx padding modified", label);
    CHECK_MSG(tu_guard_damage(dp, np, np + 8) == 0, "%s: wrote past dparams", label);
    if (np) {
        snprintf(label, sizeof label, "dgamma%s %s R=%lld D=%lld", has_beta ? "/dbeta" : "",
                 kind_name(n), (long long)R, (long long)D);
        CHECK_ERR(label, tu_err_dd(a_p, fd_p, npc, 1.0), tol_b);
    }

    /* ---- backward, SN_ACCUMULATE into a prefilled dx, dparams NULL ---- */
    float *dxa = tu_falloc(R * lddx), *dxa0 = tu_falloc(R * lddx);
    tu_canary_fill(dxa, R * lddx);
    tu_fill_view(&g, dxa, R, D, lddx, -2.0, 2.0);
    memcpy(dxa0, dxa, (size_t)(R * lddx) * sizeof(float));
    CHECK_OK(sn_norm_backward(ctx, n, R, D, dout, lddo, x, ldx, np ? p : NULL, ns ? stats : NULL,
                              dxa, lddx, NULL, SN_ACCUMULATE));
    for (int64_t k = 0; k < nin; k++) {
        int64_t o = (in_idx[k] / D) * lddx + in_idx[k] % D;
        a_in[k] = (double)dxa[o] - (double)dxa0[o];
    }
    snprintf(label, sizeof label, "dx(accumulate) %s R=%lld D=%lld", kind_name(n), (long long)R,
             (long long)D);
    /* the prefill (|q| <= 2) adds at most ulp(2) = 2.4e-7 absolute rounding per element */
    CHECK_ERR(label, tu_err_dd(a_in, fd_in, nin, dx_floor), tol_b);
    CHECK_MSG(tu_padding_damage(dxa, R, D, lddx) == 0, "%s: padding modified", label);

    /* ---- backward in place: dx aliasing dout (write mode) equals the separate call ---- */
    float *dio = tu_falloc(R * lddo), *dpx = tu_falloc(np + 1);
    memcpy(dio, dout, (size_t)(R * lddo) * sizeof(float));
    memcpy(dpx, dp0, (size_t)np * sizeof(float));
    CHECK_OK(sn_norm_backward(ctx, n, R, D, dio, lddo, x, ldx, np ? p : NULL, ns ? stats : NULL,
                              dio, lddo, np ? dpx : NULL, 0));
    {
        int64_t bad = 0;
        for (int64_t r = 0; r < R; r++)
            bad += memcmp(dio + r * lddo, dx + r * lddx, (size_t)D * sizeof(float)) != 0;
        CHECK_MSG(bad == 0, "%s: in-place backward differs in %lld rows", kind_name(n),
                  (long long)bad);
        CHECK_MSG(np == 0 || memcmp(dpx, dp, (size_t)np * sizeof(float)) == 0,
                  "%s: in-place backward dparams differ", kind_name(n));
        CHECK_MSG(tu_padding_damage(dio, R, D, lddo) == 0, "%s: in-place backward padding",
                  kind_name(n));
    }

    free(x), free(dout), free(p), free(pinit), free(xd), free(wd), free(pd), free(outd);
    free(statsd), free(tmp), free(out), free(stats), free(out2), free(xin), free(in_idx);
    free(p_idx), free(fd_in), free(fd_p), free(dx), free(dp), free(dp0), free(a_in), free(a_p);
    free(dxa), free(dxa0), free(dio), free(dpx);
}

/* the tall shapes' rows: 256, or 64 in sanitizer builds (SN_TEST_SMALL: still several
 * parameter-gradient chunks and row pairs, the same code paths; stage 1 checks the 256-row sums) */
#ifdef SN_TEST_SMALL
#define TALL 64
#else
#define TALL 256
#endif

int main(void) {
    static const int64_t Ds[] = {1, 3, 64, 768, 1000};
    static const int64_t Rs[] = {1, 7, TALL};
    static const float epss[] = {1e-5f, 1e-6f, 1e-2f, 0.5f};
    static const struct {
        int kind, affine;
    } cfg[] = {
        {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT}, {SN_NORM_LAYERNORM, SN_AFFINE_SCALE},
        {SN_NORM_LAYERNORM, SN_AFFINE_NONE},        {SN_NORM_RMSNORM, SN_AFFINE_SCALE},
        {SN_NORM_RMSNORM, SN_AFFINE_SCALE_SHIFT},   {SN_NORM_RMSNORM, SN_AFFINE_NONE},
        {SN_NORM_SCALE, SN_AFFINE_SCALE},           {SN_NORM_SCALE, SN_AFFINE_SCALE_SHIFT},
        {SN_NORM_IDENTITY, SN_AFFINE_SCALE_SHIFT},
    };
    int ncfg = (int)(sizeof cfg / sizeof cfg[0]);
    for (int isa = SN_ISA_SCALAR; isa <= SN_ISA_AVX512; isa++) {
        sn_ctx *ictx = tu_isa_ctx(isa);
        if (!ictx) {
            printf("kernel path %s not available: skipped\n", sn_isa_name((sn_isa)isa));
            continue;
        }
        printf("kernel path %s\n", sn_isa_name((sn_isa)isa));
        uint64_t seed = 1000;
        for (int c = 0; c < ncfg; c++)
            for (int d = 0; d < 5; d++) {
                /* R = 7 always, plus one more R chosen to cover 1 and 256 across the grid */
                int64_t Rlist[2] = {7, Rs[(c + d) % 3 == 1 ? 0 : 2]};
                for (int k = 0; k < 2; k++) {
                    if (k == 1 && Rlist[1] == TALL && Ds[d] >= 768 && c % 2)
                        Rlist[1] = 1; /* keep the runtime down: half the big shapes use R = 1 */
                    sn_norm n = {cfg[c].kind, cfg[c].affine, 0, epss[(c + d + k) % 4]};
                    check_norm(&n, Rlist[k], Ds[d], (c + d + k) % 3 == 0 ? 0 : 1 + (d * 5 + k) % 17,
                               seed++, 0.0, ictx);
                }
            }
        /* grouped norms (per-head q/k norm): G divides D; G = 1 (each column alone), G = D */
        static const struct {
            int64_t D, G, R;
        } grp[] = {{64, 16, 7},  {768, 64, 7}, {3, 1, 7},
                   {1000, 8, 3}, {64, 64, 7},  {1000, 500, TALL}};
        for (int k = 0; k < 6; k++)
            for (int c = 0; c < ncfg - 1; c++) {
                sn_norm n = {cfg[c].kind, cfg[c].affine, (int32_t)grp[k].G, epss[(k + c) % 4]};
                check_norm(&n, grp[k].R, grp[k].D, 1 + k, seed++, 0.0, ictx);
            }
        /* |mean| >> std: two-pass statistics */
        for (int c = 0; c < 2; c++) {
            sn_norm n = {SN_NORM_LAYERNORM, c ? SN_AFFINE_SCALE : SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
            check_norm(&n, 7, 1000, 3, seed++, 1000.0, ictx);
            check_norm(&n, 7, 64, 0, seed++, -1000.0, ictx);
        }
        sn_ctx_destroy(ictx);
    }
    /* a default context (best path) */
    {
        uint64_t seed = 5000;
        sn_ctx *ctx = NULL;
        CHECK_OK(sn_ctx_create(&ctx));
        CHECK(ctx != NULL);
        sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
        check_norm(&n, 7, 64, 2, seed++, 0.0, ctx);
        sn_ctx_destroy(ctx);
        sn_ctx_destroy(NULL);
    }
    return tu_finish("test_norm");
}
