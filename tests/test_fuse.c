/* sn_fuse_* and sn_merge_* against the float64 reference and float64 central finite
 * differences. Loss for the fuse: L = sum(wh * h) + sum(wu * u) (du = wu is the gradient
 * reaching u through the residual path); for the merge and for du = NULL: L = sum(wh * h).
 * Covers LayerNorm / RMSNorm with and without beta, non-affine and identity N_out (absent input
 * norm), identity N_x (the paper's merge x + N_f(y)), mixed kinds, every flag combination, the
 * sub-layer calling convention (dx aliasing du, dy accumulating dy_{i+1}), row strides > D.
 *
 * Error metric err = max|a - b| / max(max|b|, floor) (testutil.h):
 *   forward (u, h, stats) tol 2e-5, floor 1e-3: see test_norm.c; a fuse chains two norms, each
 *     with typical fp32 error ~1e-6 relative at D <= 1000.
 *   gradients tol 1e-4, floor 1: the fp32 backward through up to two norms in series vs FD
 *     (error ~1e-9); observed errors for single norms are ~1e-6. The floor 1 is the natural
 *     gradient scale here (dout ~ U(-1,1), gammas ~ 1, rows with std ~ 1) and only matters
 *     where the true gradient vanishes (D = 1 LayerNorm: every input gradient is exactly 0). */
#include "ref64.h"
#include "testutil.h"

static sn_ctx *g_ctx; /* kernel path under test */

#define TOL_FWD 2e-5
#define TOL_BWD 1e-4

typedef struct fuse_loss {
    const sn_fuse *f;
    int64_t R, D, row;
    double *x, *y, *p, *wh, *wu; /* wu NULL: no u term */
    double *u, *h;
} fuse_loss;

static double fuse_loss_eval(void *vc) {
    fuse_loss *c = (fuse_loss *)vc;
    int64_t r0 = c->row >= 0 ? c->row : 0, nr = c->row >= 0 ? 1 : c->R, D = c->D;
    ref_fuse_fwd(c->f, nr, D, c->x + r0 * D, D, c->y + r0 * D, D, c->p, c->u, D, c->h, D);
    double L = 0.0;
    for (int64_t k = 0; k < nr * D; k++)
        L += c->wh[r0 * D + k] * c->h[k] + (c->wu ? c->wu[r0 * D + k] * c->u[k] : 0.0);
    return L;
}

static char *fuse_name(const sn_fuse *f, int64_t R, int64_t D) {
    static char buf[128];
    static const char *k[] = {"LN", "RMS", "ID"}, *a[] = {"ss", "s", "n"};
    snprintf(buf, sizeof buf, "[%s/%s %s/%s %s/%s eps %g] R=%lld D=%lld", k[f->x.kind],
             a[f->x.affine], k[f->y.kind], a[f->y.affine], k[f->out.kind], a[f->out.affine],
             (double)f->x.eps, (long long)R, (long long)D);
    return buf;
}

/* gradient samples: input coordinates (x and y) and parameter indices */
typedef struct samples {
    int64_t n_in, n_p;
    int64_t *in, *p;
    double *fdx, *fdy, *fdp;       /* L = h term + u term */
    double *fdx_h, *fdy_h, *fdp_h; /* L = h term only */
} samples;

static double err_view_at(const float *a, int64_t lda, const int64_t *idx, const double *fd,
                          int64_t n, int64_t D, const float *pre, double flo) {
    double *v = tu_dalloc(n), e;
    for (int64_t k = 0; k < n; k++) {
        int64_t o = (idx[k] / D) * lda + idx[k] % D;
        v[k] = (double)a[o] - (pre ? (double)pre[o] : 0.0);
    }
    e = tu_err_dd(v, fd, n, flo);
    free(v);
    return e;
}

static double err_params(const float *dp, const float *pre, const samples *s, const double *fd) {
    double *v = tu_dalloc(s->n_p + 1), e;
    for (int64_t k = 0; k < s->n_p; k++) v[k] = (double)dp[s->p[k]] - (double)pre[s->p[k]];
    e = tu_err_dd(v, fd, s->n_p, 1.0);
    free(v);
    return e;
}

static void check_fuse(const sn_fuse *f, int64_t R, int64_t D, int64_t pad, uint64_t seed) {
    char label[256];
    tu_rng g = {seed};
    const char *name = fuse_name(f, R, D);
    char nm[128];
    snprintf(nm, sizeof nm, "%s", name);
    const int64_t ldx = D + pad, ldy = D + 2 * pad, ldu = D + pad + 1, ldh = D + 3 * pad;
    const int64_t lddh = D + pad + 2, lddu = D + 2 * pad + 1, lddx = D + pad + 3,
                  lddy = D + 4 * pad;
    int64_t np = -1, ns = -1;
    CHECK_OK(sn_fuse_query(f, D, &np, &ns));
    int64_t npx = ref_norm_nparams(&f->x, D), npy = ref_norm_nparams(&f->y, D);
    int64_t nsx = ref_norm_nstats(&f->x, D), nsy = ref_norm_nstats(&f->y, D);
    int64_t nso = ref_norm_nstats(&f->out, D);
    CHECK_MSG(np == ref_fuse_nparams(f, D) && ns == nsx + nsy + nso,
              "%s: fuse_query %lld %lld, expected %lld %lld", nm, (long long)np, (long long)ns,
              (long long)ref_fuse_nparams(f, D), (long long)(nsx + nsy + nso));
    np = ref_fuse_nparams(f, D);
    ns = nsx + nsy + nso;

    float *x = tu_falloc(R * ldx), *y = tu_falloc(R * ldy), *dh = tu_falloc(R * lddh);
    float *du = tu_falloc(R * lddu);
    tu_canary_fill(x, R * ldx), tu_canary_fill(y, R * ldy), tu_canary_fill(dh, R * lddh);
    tu_canary_fill(du, R * lddu);
    for (int64_t r = 0; r < R; r++) {
        double ox = tu_unif(&g, -2, 2), sx = tu_unif(&g, 0.3, 3), oy = tu_unif(&g, -2, 2),
               sy = tu_unif(&g, 0.3, 3);
        for (int64_t j = 0; j < D; j++) {
            x[r * ldx + j] = (float)(ox + sx * tu_unif(&g, -1.7, 1.7));
            y[r * ldy + j] = (float)(oy + sy * tu_unif(&g, -1.7, 1.7));
        }
    }
    tu_fill_view(&g, dh, R, D, lddh, -1, 1);
    tu_fill_view(&g, du, R, D, lddu, -1, 1);
    float *p = tu_falloc(np + 1), *pi = tu_falloc(np + 1);
    CHECK_OK(sn_fuse_init_params(f, D, np ? pi : NULL));
    {
        /* default init: each norm's gamma 1 then beta 0 */
        const sn_norm *ns3[3] = {&f->x, &f->y, &f->out};
        int64_t o = 0;
        for (int k = 0; k < 3; k++) {
            int64_t n1 = ref_norm_nparams(ns3[k], D);
            for (int64_t q = 0; q < n1; q++)
                CHECK_MSG(pi[o + q] == (q < D ? 1.0f : 0.0f), "%s init_params[%lld] = %g", nm,
                          (long long)(o + q), (double)pi[o + q]);
            for (int64_t q = 0; q < n1; q++)
                p[o + q] = (float)(q < D ? tu_unif(&g, 0.5, 1.5) : tu_unif(&g, -0.5, 0.5));
            o += n1;
        }
    }

    double *xd = tu_dalloc(R * D), *yd = tu_dalloc(R * D), *whd = tu_dalloc(R * D);
    double *wud = tu_dalloc(R * D), *pd = tu_dalloc(np + 1), *ud = tu_dalloc(R * D);
    double *hd = tu_dalloc(R * D), *sd = tu_dalloc(R * D), *tmp1 = tu_dalloc(R * D),
           *tmp2 = tu_dalloc(R * D);
    double *stx = tu_dalloc(R * nsx + 1), *sty = tu_dalloc(R * nsy + 1),
           *sto = tu_dalloc(R * nso + 1);
    tu_to_double(x, R, D, ldx, xd, D), tu_to_double(y, R, D, ldy, yd, D);
    tu_to_double(dh, R, D, lddh, whd, D), tu_to_double(du, R, D, lddu, wud, D);
    for (int64_t k = 0; k < np; k++) pd[k] = p[k];
    ref_norm_fwd(&f->x, R, D, xd, D, pd, ud, D, stx);
    ref_norm_fwd(&f->y, R, D, yd, D, pd + npx, sd, D, sty);
    for (int64_t k = 0; k < R * D; k++) sd[k] += ud[k];
    ref_norm_fwd(&f->out, R, D, sd, D, pd + npx + npy, hd, D, sto);

    /* ---- forward ---- */
    float *u = tu_falloc(R * ldu), *h = tu_falloc(R * ldh), *st = tu_falloc(R * ns + 8);
    tu_canary_fill(u, R * ldu), tu_canary_fill(h, R * ldh), tu_canary_fill(st, R * ns + 8);
    CHECK_OK(sn_fuse_forward(g_ctx, f, R, D, x, ldx, y, ldy, np ? p : NULL, u, ldu, h, ldh, st));
    snprintf(label, sizeof label, "fuse fwd u %s", nm);
    CHECK_ERR(label, tu_err_view(u, ldu, ud, D, R, D, 1e-3), TOL_FWD);
    snprintf(label, sizeof label, "fuse fwd h %s", nm);
    CHECK_ERR(label, tu_err_view(h, ldh, hd, D, R, D, 1e-3), TOL_FWD);
    CHECK_MSG(tu_padding_damage(u, R, D, ldu) == 0 && tu_padding_damage(h, R, D, ldh) == 0,
              "%s: padding of u/h modified", nm);
    CHECK_MSG(tu_guard_damage(st, R * ns, R * ns + 8) == 0, "%s: wrote past stats", nm);
    snprintf(label, sizeof label, "fuse stats %s", nm);
    {
        double e = 0, e1;
        if (nsx) e1 = tu_stats_err(f->x.kind, 1, R, st, ns, stx, nsx), e = e1 > e ? e1 : e;
        if (nsy) e1 = tu_stats_err(f->y.kind, 1, R, st + nsx, ns, sty, nsy), e = e1 > e ? e1 : e;
        if (nso)
            e1 = tu_stats_err(f->out.kind, 1, R, st + nsx + nsy, ns, sto, nso), e = e1 > e ? e1 : e;
        CHECK_ERR(label, e, TOL_FWD);
    }
    /* inference: u NULL, stats NULL */
    float *h2 = tu_falloc(R * ldh);
    tu_canary_fill(h2, R * ldh);
    CHECK_OK(sn_fuse_forward(g_ctx, f, R, D, x, ldx, y, ldy, np ? p : NULL, NULL, 0 * ldu + D, h2,
                             ldh, NULL));
    snprintf(label, sizeof label, "fuse fwd-infer h %s", nm);
    CHECK_ERR(label, tu_err_view(h2, ldh, hd, D, R, D, 1e-3), TOL_FWD);
    /* merge forward: out = N_out(N_x(x) + N_y(y)) = h */
    float *mo = tu_falloc(R * ldh), *mst = tu_falloc(R * ns + 8);
    tu_canary_fill(mo, R * ldh), tu_canary_fill(mst, R * ns + 8);
    CHECK_OK(sn_merge_forward(g_ctx, f, R, D, x, ldx, y, ldy, np ? p : NULL, mo, ldh, mst));
    snprintf(label, sizeof label, "merge fwd %s", nm);
    CHECK_ERR(label, tu_err_view(mo, ldh, hd, D, R, D, 1e-3), TOL_FWD);
    CHECK_MSG(tu_padding_damage(mo, R, D, ldh) == 0 &&
                  tu_guard_damage(mst, R * ns, R * ns + 8) == 0,
              "%s: merge wrote outside its buffers", nm);

    /* ---- finite differences ---- */
    samples s;
    s.n_in = tu_fd_count(R * D > 300 ? 200 : R * D);
    s.n_p = tu_fd_count((np > 48 && R * D > 5000) ? 48 : np);
    s.in = (int64_t *)tu_xalloc((size_t)s.n_in * sizeof(int64_t));
    s.p = (int64_t *)tu_xalloc((size_t)(s.n_p + 1) * sizeof(int64_t));
    s.fdx = tu_dalloc(s.n_in), s.fdy = tu_dalloc(s.n_in), s.fdp = tu_dalloc(s.n_p + 1);
    s.fdx_h = tu_dalloc(s.n_in), s.fdy_h = tu_dalloc(s.n_in), s.fdp_h = tu_dalloc(s.n_p + 1);
    fuse_loss L = {f, R, D, -1, xd, yd, pd, whd, wud, tmp1, tmp2};
    for (int pass = 0; pass < 2; pass++) {
        L.wu = pass == 0 ? wud : NULL;
        double *fx = pass == 0 ? s.fdx : s.fdx_h, *fy = pass == 0 ? s.fdy : s.fdy_h;
        double *fp = pass == 0 ? s.fdp : s.fdp_h;
        tu_rng gi = {seed * 7 + 1};
        for (int64_t k = 0; k < s.n_in; k++) {
            s.in[k] = s.n_in == R * D ? k : tu_randint(&gi, R * D);
            L.row = s.in[k] / D;
            fx[k] = tu_fd(fuse_loss_eval, &L, &xd[s.in[k]], 1e-5 * (1 + fabs(xd[s.in[k]])));
            fy[k] = tu_fd(fuse_loss_eval, &L, &yd[s.in[k]], 1e-5 * (1 + fabs(yd[s.in[k]])));
        }
        L.row = -1;
        for (int64_t k = 0; k < s.n_p; k++) {
            s.p[k] = s.n_p == np ? k : tu_randint(&gi, np);
            fp[k] = tu_fd(fuse_loss_eval, &L, &pd[s.p[k]], 1e-5 * (1 + fabs(pd[s.p[k]])));
        }
    }

    /* ---- backward variants ---- */
    float *dx = tu_falloc(R * lddx), *dy = tu_falloc(R * lddy), *dp = tu_falloc(np + 8);
    float *dx0 = tu_falloc(R * lddx), *dy0 = tu_falloc(R * lddy), *dp0 = tu_falloc(np + 8);
    float *dxw = tu_falloc(R * lddx), *dyw = tu_falloc(R * lddy), *dpw = tu_falloc(np + 8);
    float *dpw0 = tu_falloc(np + 8);
    static const uint32_t flagsets[] = {0, SN_ACCUMULATE, SN_ACCUMULATE_Y,
                                        SN_ACCUMULATE | SN_ACCUMULATE_Y};
    for (int merge = 0; merge < 2; merge++)
        for (int with_du = 0; with_du < 2 - merge; with_du++)
            for (int fl = 0; fl < 4; fl++) {
                uint32_t flags = flagsets[fl];
                tu_canary_fill(dx, R * lddx), tu_canary_fill(dy, R * lddy);
                tu_canary_fill(dp, np + 8);
                if (flags & SN_ACCUMULATE) tu_fill_view(&g, dx, R, D, lddx, -1, 1);
                if (flags & SN_ACCUMULATE_Y) tu_fill_view(&g, dy, R, D, lddy, -1, 1);
                tu_fill(&g, dp, np, -0.5, 0.5);
                memcpy(dx0, dx, (size_t)(R * lddx) * sizeof(float));
                memcpy(dy0, dy, (size_t)(R * lddy) * sizeof(float));
                memcpy(dp0, dp, (size_t)(np + 8) * sizeof(float));
                const float *pp = np ? p : NULL;
                const float *sp = ns ? st : NULL;
                if (merge)
                    CHECK_OK(sn_merge_backward(g_ctx, f, R, D, dh, lddh, x, ldx, y, ldy, pp, sp, dx,
                                               lddx, dy, lddy, np ? dp : NULL, flags));
                else
                    CHECK_OK(sn_fuse_backward(g_ctx, f, R, D, dh, lddh, with_du ? du : NULL, lddu,
                                              x, ldx, y, ldy, pp, sp, dx, lddx, dy, lddy,
                                              np ? dp : NULL, flags));
                const double *fx = with_du ? s.fdx : s.fdx_h, *fy = with_du ? s.fdy : s.fdy_h;
                const double *fp = with_du ? s.fdp : s.fdp_h;
                snprintf(label, sizeof label, "%s bwd%s flags %u dx %s", merge ? "merge" : "fuse",
                         with_du ? "(du)" : "", flags, nm);
                CHECK_ERR(label,
                          err_view_at(dx, lddx, s.in, fx, s.n_in, D,
                                      (flags & SN_ACCUMULATE) ? dx0 : NULL, 1.0),
                          TOL_BWD);
                snprintf(label, sizeof label, "%s bwd%s flags %u dy %s", merge ? "merge" : "fuse",
                         with_du ? "(du)" : "", flags, nm);
                CHECK_ERR(label,
                          err_view_at(dy, lddy, s.in, fy, s.n_in, D,
                                      (flags & SN_ACCUMULATE_Y) ? dy0 : NULL, 1.0),
                          TOL_BWD);
                if (np) {
                    snprintf(label, sizeof label, "%s bwd%s flags %u dparams %s",
                             merge ? "merge" : "fuse", with_du ? "(du)" : "", flags, nm);
                    CHECK_ERR(label, err_params(dp, dp0, &s, fp), TOL_BWD);
                }
                CHECK_MSG(tu_padding_damage(dx, R, D, lddx) == 0 &&
                              tu_padding_damage(dy, R, D, lddy) == 0 &&
                              tu_guard_damage(dp, np, np + 8) == 0,
                          "%s: backward wrote outside its views", label);
                if (!merge && with_du && flags == 0) { /* keep for the aliasing comparison */
                    memcpy(dxw, dx, (size_t)(R * lddx) * sizeof(float));
                    memcpy(dyw, dy, (size_t)(R * lddy) * sizeof(float));
                    memcpy(dpw, dp, (size_t)(np + 8) * sizeof(float));
                    memcpy(dpw0, dp0, (size_t)(np + 8) * sizeof(float));
                }
            }

    /* ---- sub-layer convention: dx aliasing du (holding dx_{i+1}), dy holding dy_{i+1} with
     * SN_ACCUMULATE_Y. dx aliasing du without flags must equal the separate-buffer call
     * bitwise. ---- */
    {
        float *dio = tu_falloc(R * lddu);
        memcpy(dio, du, (size_t)(R * lddu) * sizeof(float));
        tu_canary_fill(dy, R * lddy);
        memcpy(dp, dpw0, (size_t)(np + 8) * sizeof(float));
        CHECK_OK(sn_fuse_backward(g_ctx, f, R, D, dh, lddh, dio, lddu, x, ldx, y, ldy,
                                  np ? p : NULL, ns ? st : NULL, dio, lddu, dy, lddy,
                                  np ? dp : NULL, 0));
        int64_t bad = 0;
        for (int64_t r = 0; r < R; r++)
            bad += memcmp(dio + r * lddu, dxw + r * lddx, (size_t)D * sizeof(float)) != 0;
        CHECK_MSG(bad == 0, "%s: dx aliasing du differs from separate buffers (%lld rows)", nm,
                  (long long)bad);
        CHECK_MSG(tu_padding_damage(dio, R, D, lddu) == 0, "%s: aliased dx padding", nm);
        CHECK_MSG(memcmp(dpw, dp, (size_t)np * sizeof(float)) == 0,
                  "%s: dparams differ with dx aliasing du (same prefill)", nm);

        memcpy(dio, du, (size_t)(R * lddu) * sizeof(float));
        tu_canary_fill(dy, R * lddy);
        tu_fill_view(&g, dy, R, D, lddy, -1, 1);
        memcpy(dy0, dy, (size_t)(R * lddy) * sizeof(float));
        CHECK_OK(sn_fuse_backward(g_ctx, f, R, D, dh, lddh, dio, lddu, x, ldx, y, ldy,
                                  np ? p : NULL, ns ? st : NULL, dio, lddu, dy, lddy, NULL,
                                  SN_ACCUMULATE_Y));
        snprintf(label, sizeof label, "fuse sub-layer convention dx_i %s", nm);
        CHECK_ERR(label, err_view_at(dio, lddu, s.in, s.fdx, s.n_in, D, NULL, 1.0), TOL_BWD);
        snprintf(label, sizeof label, "fuse sub-layer convention dy_i %s", nm);
        CHECK_ERR(label, err_view_at(dy, lddy, s.in, s.fdy, s.n_in, D, dy0, 1.0), TOL_BWD);
        free(dio);
    }

    free(x), free(y), free(dh), free(du), free(p), free(pi), free(xd), free(yd), free(whd);
    free(wud), free(pd), free(ud), free(hd), free(sd), free(tmp1), free(tmp2), free(stx);
    free(sty), free(sto), free(u), free(h), free(st), free(h2), free(mo), free(mst), free(s.in);
    free(s.p), free(s.fdx), free(s.fdy), free(s.fdp), free(s.fdx_h), free(s.fdy_h);
    free(s.fdp_h), free(dx), free(dy), free(dp), free(dx0), free(dy0), free(dp0), free(dxw);
    free(dyw), free(dpw), free(dpw0);
}

int main(void) {
    typedef struct {
        int xk, xa, yk, ya, ok, oa;
    } cfg;
    static const cfg cfgs[] = {
        {0, 0, 0, 0, 0, 0}, /* LayerNorm everywhere, with beta */
        {1, 1, 1, 1, 1, 1}, /* RMSNorm everywhere, bias-free */
        {0, 1, 0, 1, 0, 2}, /* LayerNorm bias-free, non-affine N_in (DiT) */
        {0, 0, 0, 0, 2, 0}, /* no input norm (OLMo hybrid_pre) */
        {2, 0, 0, 0, 2, 0}, /* the paper's merge: x + N_f(y) */
        {1, 0, 0, 0, 1, 2}, /* mixed: RMS with beta, LN, non-affine RMS */
        {1, 2, 1, 2, 0, 1}, /* non-affine RMS streams, LN without beta */
    };
    static const float epss[] = {1e-5f, 1e-6f, 1e-2f, 0.3f};
    static const int64_t Ds[] = {1, 3, 64, 768, 1000};
    const int nc = (int)(sizeof cfgs / sizeof cfgs[0]);
    for (int isa = SN_ISA_SCALAR; isa <= SN_ISA_AVX512; isa++) {
        g_ctx = tu_isa_ctx(isa);
        if (!g_ctx) {
            printf("kernel path %s not available: skipped\n", sn_isa_name((sn_isa)isa));
            continue;
        }
        printf("kernel path %s\n", sn_isa_name((sn_isa)isa));
        uint64_t seed = 77;
        for (int c = 0; c < nc; c++)
            for (int d = 0; d < 5; d++) {
                sn_fuse f;
                float eps = epss[(c + d) % 4];
                CHECK_OK(sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, eps));
                CHECK(f.x.kind == 0 && f.y.affine == 0 && f.out.group == 0 && f.out.eps == eps);
                sn_norm a = {cfgs[c].xk, cfgs[c].xa, 0, eps}, b = {cfgs[c].yk, cfgs[c].ya, 0, eps},
                        o = {cfgs[c].ok, cfgs[c].oa, 0, eps * 2};
                f.x = a, f.y = b, f.out = o;
                int64_t R = Ds[d] >= 768 ? ((c + d) % 2 ? 1 : 7) : ((c + d) % 3 == 0 ? 256 : 7);
                check_fuse(&f, R, Ds[d], (c + d) % 4 == 0 ? 0 : 1 + (c * 3 + d) % 11, seed++);
            }
        /* sn_fuse_init fills the three norms alike */
        {
            sn_fuse f;
            CHECK_OK(sn_fuse_init(&f, SN_NORM_RMSNORM, SN_AFFINE_NONE, 1e-6f));
            CHECK(f.x.kind == 1 && f.y.kind == 1 && f.out.kind == 1 && f.x.affine == 2 &&
                  f.y.affine == 2 && f.out.affine == 2 && f.x.group == 0 && f.y.group == 0 &&
                  f.out.group == 0 && f.x.eps == 1e-6f && f.y.eps == 1e-6f && f.out.eps == 1e-6f);
            check_fuse(&f, 7, 64, 3, seed++);
        }
        sn_ctx_destroy(g_ctx);
    }
    return tu_finish("test_fuse");
}
