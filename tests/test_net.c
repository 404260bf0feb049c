/* The placement layer end to end: a network of S sub-layers (6 unless stated) whose block is
 * z = tanh(h W_i) with a random D x D matrix per sub-layer (float in the library run, double in
 * the reference), run through sn_net_split / enter / exit / merge and their backwards in the
 * three placements. Checked against the float64 reference network (ref64.c, written from the
 * header's placement comments): every block input h_i and the output; the loss
 * L = sum(w * out) gradient with respect to the embedding e and to EVERY norm parameter vs
 * float64 central finite differences of the reference. Also: sn_net_scale for every scale rule,
 * the parameter layout reported by sn_net_norm_at (disjoint, covering n_params, right norm
 * descriptions), default init, buffer guards (acts / work / grads written only inside the sizes
 * the library reported), stride padding of every caller buffer, SN_ACCUMULATE in exit_backward
 * and split_backward, grads accumulating onto a prefill, determinism; every kernel path.
 *
 * Tolerances (err = max|a - b| / max(max|b|, floor)):
 *   forward (h_i, out) 1e-4, floor 1e-3: six sub-layers each adding the fp32 error of up to three
 *     norms (~1e-6 each, see test_norm.c) and of the caller's fp32 block (sqrt(D) * 2^-24),
 *     amplified by at most ~10 through the chain: ~1e-5 expected, 10x margin.
 *   gradients 2e-4, floor 1: the same chain twice (forward then backward) in fp32, including the
 *     test's own fp32 block backward, vs FD of the double reference (h = 1e-6, error ~1e-8);
 *     gradients are sums over R rows and up to 6 sub-layers: ~2e-5 expected, 10x margin
 *     (measured ~2e-6). A wrong formula anywhere (a missing 1/c, a lost residual branch, a
 *     wrong norm, the scale rule counting sub-layers instead of layers) gives errors of order
 *     1e-2 or more. */
#include "ref64.h"
#include "testutil.h"
#include "block.h"

static sn_ctx *g_ctx; /* kernel path under test */

#define TOL_FWD 1e-4
#define TOL_BWD 2e-4

typedef struct net_loss {
    const ref_net *rn;
    int64_t R;
    double *e, *p, *w, *out;
    blk *b;
} net_loss;

static double net_loss_eval(void *vc) {
    net_loss *c = (net_loss *)vc;
    int64_t D = c->rn->D;
    ref_net_fwd(c->rn, c->R, c->e, D, c->p, blk_fwd_d, c->b, c->out, D, NULL);
    double L = 0.0;
    for (int64_t k = 0; k < c->R * D; k++) L += c->w[k] * c->out[k];
    return L;
}

/* Library run of the whole network. Strides of the caller buffers are all distinct and > D. */
typedef struct run {
    float *out, *de, *grads, **h;
    int64_t ldh, ldo, ldde;
} run;

typedef struct geom {
    int64_t np, apr, wpr, R, D;
    int S;
} geom;

#define GUARD 16

static void lib_run(const sn_ctx *ctx, const sn_net *net, const geom *G, const blk *b,
                    const float *e, int64_t lde, const float *params, const float *wout,
                    int64_t lddo, const float *grads_prefill, int accumulate, uint64_t seed,
                    run *res, const char *label) {
    const int64_t R = G->R, D = G->D, np = G->np;
    const int S = G->S;
    tu_rng g = {seed};
    const int64_t ldh = D + 1, ldz = D + 5, ldo = D + 2, lddz = D + 3, lddh = D + 6, ldde = D + 7;
    float *acts = tu_falloc(R * G->apr + GUARD), *work = tu_falloc(R * G->wpr + GUARD);
    float *grads = tu_falloc(np + GUARD);
    tu_canary_fill(acts, R * G->apr + GUARD), tu_canary_fill(work, R * G->wpr + GUARD);
    tu_canary_fill(grads, np + GUARD);
    memcpy(grads, grads_prefill, (size_t)np * sizeof(float));
    float **h = (float **)tu_xalloc((size_t)S * sizeof(float *));
    float **z = (float **)tu_xalloc((size_t)S * sizeof(float *));
    float *out = tu_falloc(R * ldo), *dz = tu_falloc(R * lddz), *dh = tu_falloc(R * lddh);
    float *de = tu_falloc(R * ldde), *q = tu_falloc(R * lddz);
    tu_canary_fill(out, R * ldo), tu_canary_fill(de, R * ldde);
    for (int i = 0; i < S; i++) {
        h[i] = tu_falloc(R * ldh), z[i] = tu_falloc(R * ldz);
        tu_canary_fill(h[i], R * ldh), tu_canary_fill(z[i], R * ldz);
    }
    const sn_net_pass pass = {R, params, acts, grads, work};
    CHECK_OK(sn_net_split(ctx, net, &pass, e, lde));
    for (int i = 0; i < S; i++) {
        CHECK_OK(sn_net_enter(ctx, net, &pass, i, h[i], ldh));
        blk_fwd_f(b, i, R, h[i], ldh, z[i], ldz);
        CHECK_OK(sn_net_exit(ctx, net, &pass, i, z[i], ldz));
        CHECK_MSG(tu_padding_damage(h[i], R, D, ldh) == 0, "%s: h[%d] padding", label, i);
    }
    CHECK_OK(sn_net_merge(ctx, net, &pass, out, ldo));
    CHECK_MSG(tu_padding_damage(out, R, D, ldo) == 0, "%s: out padding", label);
    CHECK_OK(sn_net_merge_backward(ctx, net, &pass, wout, lddo));
    for (int i = S - 1; i >= 0; i--) {
        tu_canary_fill(dz, R * lddz);
        if (accumulate) {
            tu_fill_view(&g, dz, R, D, lddz, -0.5, 0.5);
            memcpy(q, dz, (size_t)(R * lddz) * sizeof(float));
        }
        CHECK_OK(
            sn_net_exit_backward(ctx, net, &pass, i, dz, lddz, accumulate ? SN_ACCUMULATE : 0));
        CHECK_MSG(tu_padding_damage(dz, R, D, lddz) == 0, "%s: dz padding (i=%d)", label, i);
        if (accumulate)
            for (int64_t r = 0; r < R; r++)
                for (int64_t j = 0; j < D; j++) dz[r * lddz + j] -= q[r * lddz + j];
        tu_canary_fill(dh, R * lddh);
        blk_bwd_f(b, i, R, z[i], ldz, dz, lddz, dh, lddh);
        CHECK_OK(sn_net_enter_backward(ctx, net, &pass, i, dh, lddh));
    }
    if (accumulate) {
        tu_fill_view(&g, de, R, D, ldde, -0.5, 0.5);
        float *pre = tu_falloc(R * ldde);
        memcpy(pre, de, (size_t)(R * ldde) * sizeof(float));
        CHECK_OK(sn_net_split_backward(ctx, net, &pass, de, ldde, SN_ACCUMULATE));
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++) de[r * ldde + j] -= pre[r * ldde + j];
        free(pre);
    } else {
        CHECK_OK(sn_net_split_backward(ctx, net, &pass, de, ldde, 0));
    }
    CHECK_MSG(tu_padding_damage(de, R, D, ldde) == 0, "%s: de padding", label);
    CHECK_MSG(tu_guard_damage(acts, R * G->apr, R * G->apr + GUARD) == 0,
              "%s: wrote past acts (R * acts_per_row = %lld)", label, (long long)(R * G->apr));
    CHECK_MSG(tu_guard_damage(work, R * G->wpr, R * G->wpr + GUARD) == 0,
              "%s: wrote past work (R * work_per_row = %lld)", label, (long long)(R * G->wpr));
    CHECK_MSG(tu_guard_damage(grads, np, np + GUARD) == 0, "%s: wrote past grads", label);
    res->out = out, res->de = de, res->grads = grads, res->h = h;
    res->ldh = ldh, res->ldo = ldo, res->ldde = ldde;
    for (int i = 0; i < S; i++) free(z[i]);
    free(z), free(acts), free(work), free(dz), free(dh), free(q);
}

static void run_free(run *r, int S) {
    for (int i = 0; i < S; i++) free(r->h[i]);
    free(r->h), free(r->out), free(r->de), free(r->grads);
}

static int norm_eq(const sn_norm *a, const sn_norm *b) {
    return a->kind == b->kind && a->affine == b->affine && a->group == b->group && a->eps == b->eps;
}

/* Full check of one network description. n_e / n_p: FD samples (0 = all). */
static void check_net(const sn_net *net, int64_t R, uint64_t seed, const char *name, int64_t n_e,
                      int64_t n_p) {
    char label[200];
    tu_rng g = {seed};
    CHECK_OK(sn_net_check(net));
    geom G = {0, 0, 0, R, net->d, net->n_sublayers};
    CHECK_OK(sn_net_sizes(net, &G.np, &G.apr, &G.wpr));
    CHECK_MSG(G.np >= 0 && G.apr > 0 && G.wpr > 0, "%s: sizes %lld %lld %lld", name,
              (long long)G.np, (long long)G.apr, (long long)G.wpr);
    const int S = net->n_sublayers;
    const int64_t D = net->d, np = G.np;

    /* reference description, written from the header */
    ref_net rn;
    memset(&rn, 0, sizeof rn);
    rn.placement = net->placement, rn.S = S, rn.D = D, rn.norm = net->norm;
    rn.input_norm = net->input_norm, rn.scale_rule = net->scale_rule;
    rn.scales_in = net->scales, rn.mix_fraction = net->mix_fraction;
    rn.hc_rate = net->hc_rate, rn.hc_dynamic = (int)net->hc_dynamic;
    ref_net_layout(&rn);
    for (int i = 0; i < S; i++) {
        double c = rn.scales[i];
        float cl = -1.0f;
        CHECK_OK(sn_net_scale(net, i, &cl));
        CHECK_MSG(fabs((double)cl - c) <= 1e-6 * c, "%s: sn_net_scale(%d) = %.9g, expected %.9g",
                  name, i, (double)cl, c);
    }
    {
        float gain = -1.0f;
        CHECK_OK(sn_net_init_gain(net, &gain));
        CHECK_MSG(fabs((double)gain - ref_net_init_gain(&rn)) <= 1e-6,
                  "%s: sn_net_init_gain = %.9g, expected %.9g", name, (double)gain,
                  ref_net_init_gain(&rn));
    }

    /* layout: count norms per stage, check descriptions, offsets disjoint and covering */
    unsigned char *cover = (unsigned char *)calloc((size_t)np + 1, 1);
    int64_t total = 0;
    for (int i = -1; i <= S; i++) {
        int j = 0;
        for (;; j++) {
            sn_norm nd;
            int64_t off = -7;
            sn_status st = sn_net_norm_at(net, i, j, &nd, &off);
            if (st == SN_ERR_INDEX) break;
            CHECK_OK(st);
            if (st != SN_OK || j >= 3 || j >= rn.nn[REF_ST(i)]) break;
            const sn_norm *want = &rn.nd[REF_ST(i)][j];
            /* identity: only the kind matters; SN_NORM_SCALE: eps is ignored */
            int same = want->kind == SN_NORM_IDENTITY ? nd.kind == SN_NORM_IDENTITY
                       : want->kind == SN_NORM_SCALE
                           ? nd.kind == want->kind && nd.affine == want->affine && nd.group == 0
                           : norm_eq(&nd, want);
            CHECK_MSG(same, "%s: norm_at(%d,%d) = {%d,%d,%d,%g}, expected {%d,%d,%d,%g}", name, i,
                      j, (int)nd.kind, (int)nd.affine, (int)nd.group, (double)nd.eps,
                      (int)want->kind, (int)want->affine, (int)want->group, (double)want->eps);
            int64_t k = ref_norm_nparams(want, D);
            rn.off[REF_ST(i)][j] = k > 0 ? off : 0;
            if (k > 0) {
                CHECK_MSG(off >= 0 && off + k <= np, "%s: norm_at(%d,%d) offset %lld outside %lld",
                          name, i, j, (long long)off, (long long)np);
                if (off >= 0 && off + k <= np)
                    for (int64_t q = off; q < off + k; q++) {
                        CHECK_MSG(cover[q] == 0, "%s: params overlap at %lld", name, (long long)q);
                        cover[q] = 1;
                    }
                else rn.off[REF_ST(i)][j] = 0;
            }
            total += k;
        }
        CHECK_MSG(j == rn.nn[REF_ST(i)], "%s: stage %d has %d norms, expected %d", name, i, j,
                  rn.nn[REF_ST(i)]);
        CHECK_STATUS(sn_net_norm_at(net, i, -1, NULL, NULL), SN_ERR_INDEX);
    }
    /* Hyper-Connections' connection weights (sn_net_conn_at): disjoint from the norms, the
     * documented count; every other placement has none */
    const int hc = net->placement == SN_PLACEMENT_HYPER_CONN, nh = net->hc_rate;
    const int64_t hc_count = hc ? nh * (nh + 2) + (net->hc_dynamic ? (nh + 2) * D + 2 : 0) : 0;
    for (int i = 0; i < S; i++) {
        int64_t off = -1, cnt = -1;
        sn_status st = sn_net_conn_at(net, i, &off, &cnt);
        if (!hc) {
            CHECK_STATUS(st, SN_ERR_INDEX);
            continue;
        }
        CHECK_OK(st);
        CHECK_MSG(cnt == hc_count && off >= 0 && off + cnt <= np,
                  "%s: conn_at(%d) = %lld + %lld, expected %lld floats in %lld", name, i,
                  (long long)off, (long long)cnt, (long long)hc_count, (long long)np);
        if (st != SN_OK || cnt != hc_count || off < 0 || off + cnt > np) continue;
        for (int64_t q = off; q < off + cnt; q++) {
            CHECK_MSG(cover[q] == 0, "%s: connection weights overlap at %lld", name, (long long)q);
            cover[q] = 1;
        }
        rn.conn_off[i] = off;
        total += cnt;
    }
    CHECK_STATUS(sn_net_conn_at(net, S, NULL, NULL), SN_ERR_INDEX);
    CHECK_STATUS(sn_net_conn_at(net, -1, NULL, NULL), SN_ERR_INDEX);
    CHECK_MSG(total == np, "%s: norms hold %lld params, n_params %lld", name, (long long)total,
              (long long)np);
    CHECK_STATUS(sn_net_norm_at(net, -2, 0, NULL, NULL), SN_ERR_INDEX);
    CHECK_STATUS(sn_net_norm_at(net, S + 1, 0, NULL, NULL), SN_ERR_INDEX);
    free(cover);

    /* default init then random non-trivial parameters */
    float *params = tu_falloc(np + 1), *pre = tu_falloc(np + 1), *zero = tu_falloc(np + 1);
    double *pd = tu_dalloc(np + 1);
    CHECK_OK(sn_net_init_params(net, params));
    for (int i = -1; i <= S; i++)
        for (int j = 0; j < rn.nn[REF_ST(i)]; j++) {
            const sn_norm *nd = &rn.nd[REF_ST(i)][j];
            int64_t k = ref_norm_nparams(nd, D), o = rn.off[REF_ST(i)][j];
            for (int64_t q = 0; q < k; q++) {
                CHECK_MSG(params[o + q] == (q < D ? 1.0f : 0.0f),
                          "%s: init stage %d norm %d param %lld = %g", name, i, j, (long long)q,
                          (double)params[o + q]);
                params[o + q] = (float)(q < D ? tu_unif(&g, 0.5, 1.5) : tu_unif(&g, -0.3, 0.3));
            }
        }
    for (int i = 0; hc && i < S; i++) { /* the paper's initialisation, then random weights */
        float *al = params + rn.conn_off[i];
        for (int64_t q = 0; q < hc_count; q++) {
            const int64_t k = q / (nh + 1), c = q % (nh + 1);
            const float want = q < nh * (nh + 1)   ? (c == 0 ? (k == i % nh) : (c - 1 == k))
                               : q < nh * (nh + 2) ? 1.0f
                               : q >= hc_count - 2 ? 0.01f
                                                   : 0.0f;
            CHECK_MSG(al[q] == want,
                      "%s: init of sub-layer %d connection weight %lld = %g, "
                      "expected %g",
                      name, i, (long long)q, (double)al[q], (double)want);
            al[q] = q < nh * (nh + 2)   ? al[q] + (float)tu_unif(&g, -0.3, 0.3)
                    : q >= hc_count - 2 ? (float)tu_unif(&g, 0.3, 0.8)
                                        : (float)tu_unif(&g, -1.0, 1.0) / sqrtf((float)D);
        }
    }
    for (int64_t k = 0; k < np; k++)
        pd[k] = params[k], pre[k] = (float)tu_unif(&g, -0.5, 0.5), zero[k] = 0.0f;

    /* embedding and output weights, with stride padding */
    const int64_t lde = D + 3, lddo = D + 4;
    float *e = tu_falloc(R * lde), *wo = tu_falloc(R * lddo);
    tu_canary_fill(e, R * lde), tu_canary_fill(wo, R * lddo);
    tu_fill_view(&g, e, R, D, lde, -1.5, 1.5), tu_fill_view(&g, wo, R, D, lddo, -1, 1);
    double *ed = tu_dalloc(R * D), *wd = tu_dalloc(R * D), *outd = tu_dalloc(R * D);
    double *hs = tu_dalloc((int64_t)S * R * D), *tmp = tu_dalloc(R * D);
    tu_to_double(e, R, D, lde, ed, D), tu_to_double(wo, R, D, lddo, wd, D);
    blk b;
    blk_init(&b, S, D, seed ^ 0xABCDEF);
    ref_net_fwd(&rn, R, ed, D, pd, blk_fwd_d, &b, outd, D, hs);

    geom *Gp = &G;
    run a, a2, ac, ax;
    lib_run(g_ctx, net, Gp, &b, e, lde, params, wo, lddo, zero, 0, seed, &a, name);
    CHECK_MSG(tu_padding_damage(e, R, D, lde) == 0 && tu_padding_damage(wo, R, D, lddo) == 0,
              "%s: input padding modified", name);
    for (int i = 0; i < S; i++) {
        snprintf(label, sizeof label, "%s: h[%d]", name, i);
        CHECK_ERR(label, tu_err_view(a.h[i], a.ldh, hs + (int64_t)i * R * D, D, R, D, 1e-3),
                  TOL_FWD);
    }
    snprintf(label, sizeof label, "%s: out", name);
    CHECK_ERR(label, tu_err_view(a.out, a.ldo, outd, D, R, D, 1e-3), TOL_FWD);

    /* finite differences of L = sum(w * out) */
    net_loss L = {&rn, R, ed, pd, wd, tmp, &b};
    const int64_t ne = tu_fd_count(n_e ? n_e : R * D), npp = tu_fd_count(n_p ? n_p : np);
    double *fde = tu_dalloc(ne), *fdp = tu_dalloc(npp + 1), *ge = tu_dalloc(ne);
    double *gp = tu_dalloc(npp + 1), *gpa = tu_dalloc(npp + 1);
    int64_t *ie = (int64_t *)tu_xalloc((size_t)ne * sizeof(int64_t));
    int64_t *ip = (int64_t *)tu_xalloc((size_t)(npp + 1) * sizeof(int64_t));
    for (int64_t k = 0; k < ne; k++) {
        ie[k] = n_e || ne < R * D ? tu_randint(&g, R * D) : k;
        fde[k] = tu_fd(net_loss_eval, &L, &ed[ie[k]], 1e-6);
    }
    for (int64_t k = 0; k < npp; k++) {
        ip[k] = n_p || npp < np ? tu_randint(&g, np) : k;
        fdp[k] = tu_fd(net_loss_eval, &L, &pd[ip[k]], 1e-6);
    }
    for (int64_t k = 0; k < ne; k++) ge[k] = a.de[(ie[k] / D) * a.ldde + ie[k] % D];
    for (int64_t k = 0; k < npp; k++) gp[k] = a.grads[ip[k]];
    snprintf(label, sizeof label, "%s: dL/de", name);
    CHECK_ERR(label, tu_err_dd(ge, fde, ne, 1.0), TOL_BWD);
    snprintf(label, sizeof label, "%s: dL/dparams", name);
    CHECK_ERR(label, tu_err_dd(gp, fdp, npp, 1.0), TOL_BWD);

    /* determinism: a second identical run gives the same bits */
    lib_run(g_ctx, net, Gp, &b, e, lde, params, wo, lddo, zero, 0, seed, &a2, name);
    CHECK_MSG(memcmp(a.out, a2.out, (size_t)(R * a.ldo) * sizeof(float)) == 0 &&
                  memcmp(a.de, a2.de, (size_t)(R * a.ldde) * sizeof(float)) == 0 &&
                  memcmp(a.grads, a2.grads, (size_t)np * sizeof(float)) == 0,
              "%s: two identical runs differ", name);
    /* another context on the same path with 2 threads: same bits (header: determinism) */
    sn_ctx *ctx = tu_isa_ctx(sn_ctx_isa(g_ctx));
    CHECK(ctx != NULL);
    CHECK_OK(sn_ctx_set_threads(ctx, 2));
    lib_run(ctx, net, Gp, &b, e, lde, params, wo, lddo, zero, 0, seed, &ac, name);
    CHECK_MSG(memcmp(a.out, ac.out, (size_t)(R * a.ldo) * sizeof(float)) == 0 &&
                  memcmp(a.de, ac.de, (size_t)(R * a.ldde) * sizeof(float)) == 0 &&
                  memcmp(a.grads, ac.grads, (size_t)np * sizeof(float)) == 0,
              "%s: a 2-thread context on the same path gives different bits", name);
    sn_ctx_destroy(ctx);
    /* grads accumulate onto a prefill; SN_ACCUMULATE in exit_backward and split_backward */
    lib_run(g_ctx, net, Gp, &b, e, lde, params, wo, lddo, pre, 1, seed + 1, &ax, name);
    for (int64_t k = 0; k < ne; k++) ge[k] = ax.de[(ie[k] / D) * ax.ldde + ie[k] % D];
    for (int64_t k = 0; k < npp; k++) gpa[k] = (double)ax.grads[ip[k]] - (double)pre[ip[k]];
    snprintf(label, sizeof label, "%s: dL/de (SN_ACCUMULATE)", name);
    CHECK_ERR(label, tu_err_dd(ge, fde, ne, 1.0), TOL_BWD);
    snprintf(label, sizeof label, "%s: dL/dparams (accumulated onto prefill)", name);
    CHECK_ERR(label, tu_err_dd(gpa, fdp, npp, 1.0), TOL_BWD);

    run_free(&a, S), run_free(&a2, S), run_free(&ac, S), run_free(&ax, S);
    free(params), free(pre), free(zero), free(pd), free(e), free(wo), free(ed), free(wd);
    free(outd), free(hs), free(tmp), free(fde), free(fdp), free(ge), free(gp), free(gpa);
    free(ie), free(ip), free(b.Wf), free(b.Wd);
}

/* Hyper-Connections at the paper's initialisation is Pre-Norm: with the same norm parameters
 * and blocks, every block input h_i is bit for bit Pre-Norm's (A_m = e_{i mod n}, A_r = I,
 * B = 1 make every stream the Pre-Norm residual, and the products by 0 and 1 and the sums with
 * 0 are exact), static or dynamic (Wa = Wb = 0 make the dynamic terms exactly 0); the output
 * N_f(n x_S) is bit for bit Pre-Norm's for n = 1 and otherwise within 2e-5 of it: the final
 * norm of n x equals the norm of x with eps / n^2 (relative effect about eps / var, 1e-5 here),
 * and for n = 3 the sum x + x + x is rounded. */
static void hc_is_pre_norm(int nh, int dyn, sn_norm_kind kind, uint64_t seed) {
    char name[96];
    snprintf(name, sizeof name, "HC n=%d %s starts as Pre-Norm (%s)", nh,
             dyn ? "dynamic" : "static", kind == SN_NORM_LAYERNORM ? "LN" : "RMS");
    sn_net pre, hc;
    const int S = 6;
    const int64_t R = 5, D = 16;
    CHECK_OK(sn_net_init(&pre, SN_PLACEMENT_PRE_NORM, S, D, kind, 1e-5f));
    CHECK_OK(sn_net_init(&hc, SN_PLACEMENT_HYPER_CONN, S, D, kind, 1e-5f));
    hc.hc_rate = nh, hc.hc_dynamic = (uint32_t)dyn;
    if (sn_net_check(&hc) == SN_ERR_UNSUPPORTED) return;
    geom Gp = {0, 0, 0, R, D, S}, Gh = {0, 0, 0, R, D, S};
    CHECK_OK(sn_net_sizes(&pre, &Gp.np, &Gp.apr, &Gp.wpr));
    CHECK_OK(sn_net_sizes(&hc, &Gh.np, &Gh.apr, &Gh.wpr));
    float *pp = tu_falloc(Gp.np + 1), *ph = tu_falloc(Gh.np + 1);
    float *zp = tu_falloc(Gp.np + 1), *zh = tu_falloc(Gh.np + 1);
    CHECK_OK(sn_net_init_params(&pre, pp));
    CHECK_OK(sn_net_init_params(&hc, ph));
    tu_rng g = {seed};
    for (int64_t k = 0; k < Gp.np; k++) pp[k] += (float)tu_unif(&g, -0.3, 0.3), zp[k] = 0;
    for (int64_t k = 0; k < Gh.np; k++) zh[k] = 0;
    for (int i = 0; i <= S; i++) { /* the same N_i and N_f */
        int64_t op, oh, np;
        sn_norm n;
        CHECK_OK(sn_net_norm_at(&pre, i, 0, &n, &op));
        CHECK_OK(sn_net_norm_at(&hc, i, 0, NULL, &oh));
        CHECK_OK(sn_norm_query(&n, D, &np, NULL));
        memcpy(ph + oh, pp + op, (size_t)np * sizeof(float));
    }
    const int64_t lde = D + 1, lddo = D;
    float *e = tu_falloc(R * lde), *wo = tu_falloc(R * lddo);
    tu_fill_view(&g, e, R, D, lde, -1.5, 1.5), tu_fill_view(&g, wo, R, D, lddo, -1, 1);
    blk b;
    blk_init(&b, S, D, seed ^ 0x5151);
    run a, c;
    lib_run(g_ctx, &pre, &Gp, &b, e, lde, pp, wo, lddo, zp, 0, seed, &a, name);
    lib_run(g_ctx, &hc, &Gh, &b, e, lde, ph, wo, lddo, zh, 0, seed, &c, name);
    for (int i = 0; i < S; i++)
        for (int64_t r = 0; r < R; r++)
            CHECK_MSG(memcmp(a.h[i] + r * a.ldh, c.h[i] + r * c.ldh, (size_t)D * 4) == 0,
                      "%s: h[%d] row %lld differs from Pre-Norm's", name, i, (long long)r);
    double err = 0, big = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) {
            const double d = fabs((double)a.out[r * a.ldo + j] - (double)c.out[r * c.ldo + j]);
            err = d > err ? d : err;
            big =
                fabs((double)a.out[r * a.ldo + j]) > big ? fabs((double)a.out[r * a.ldo + j]) : big;
        }
    if (nh == 1)
        CHECK_MSG(err == 0, "%s: out differs from Pre-Norm's by %g (n = 1: bitwise)", name, err);
    else CHECK_MSG(err <= 2e-5 * big, "%s: out differs from Pre-Norm's by %g", name, err);
    run_free(&a, S), run_free(&c, S);
    free(pp), free(ph), free(zp), free(zh), free(e), free(wo), free(b.Wf), free(b.Wd);
}

/* Dynamic HC's projection gradients (Wa, Wb: (n + 2) x D floats a slot) on rows too wide for a
 * slot on the stack go through the column-block fallback (hc_wsum_wide); with scratch large
 * enough they take the chunk slots. Scratch never changes a result: both give the same bits. */
static void hc_wide_rows(sn_isa isa) {
    const int64_t R = 3, D = 3000;
    sn_net net;
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_HYPER_CONN, 2, D, SN_NORM_LAYERNORM, 1e-5f));
    int64_t np, apr, wpr;
    CHECK_OK(sn_net_sizes(&net, &np, &apr, &wpr));
    tu_rng g = {77};
    float *params = tu_falloc(np), *e = tu_falloc(R * D), *h = tu_falloc(R * D);
    float *z = tu_falloc(R * D), *out = tu_falloc(R * D), *acts = tu_falloc(R * apr);
    float *work = tu_falloc(R * wpr), *grads[2], *de[2];
    CHECK_OK(sn_net_init_params(&net, params));
    for (int64_t k = 0; k < np; k++) params[k] += (float)tu_unif(&g, -0.1, 0.1);
    for (int64_t k = 0; k < R * D; k++) e[k] = (float)tu_unif(&g, -1, 1);
    sn_ctx *ctx[2] = {tu_isa_ctx(isa), tu_isa_ctx(isa)};
    const size_t sb = sn_scratch_bytes(ctx[1], D) * 2;
    void *scratch = malloc(sb);
    CHECK_OK(sn_ctx_set_scratch(ctx[1], scratch, sb));
    for (int c = 0; c < 2; c++) {
        grads[c] = tu_falloc(np), de[c] = tu_falloc(R * D);
        memset(grads[c], 0, (size_t)np * sizeof(float));
        const sn_net_pass p = {R, params, acts, grads[c], work};
        CHECK_OK(sn_net_split(ctx[c], &net, &p, e, D));
        for (int i = 0; i < 2; i++) {
            CHECK_OK(sn_net_enter(ctx[c], &net, &p, i, h, D));
            for (int64_t k = 0; k < R * D; k++) z[k] = tanhf(h[k]);
            CHECK_OK(sn_net_exit(ctx[c], &net, &p, i, z, D));
        }
        CHECK_OK(sn_net_merge(ctx[c], &net, &p, out, D));
        CHECK_OK(sn_net_merge_backward(ctx[c], &net, &p, e, D));
        for (int i = 1; i >= 0; i--) {
            CHECK_OK(sn_net_exit_backward(ctx[c], &net, &p, i, z, D, 0));
            CHECK_OK(sn_net_enter_backward(ctx[c], &net, &p, i, z, D));
        }
        CHECK_OK(sn_net_split_backward(ctx[c], &net, &p, de[c], D, 0));
    }
    CHECK_MSG(memcmp(grads[0], grads[1], (size_t)np * sizeof(float)) == 0 &&
                  memcmp(de[0], de[1], (size_t)(R * D) * sizeof(float)) == 0,
              "HC D = 3000 (%s): the column-block fallback and the scratch slots differ",
              sn_isa_name(isa));
    int nz = 0;
    for (int64_t k = 0; k < np; k++) nz += grads[0][k] != 0.0f;
    CHECK_MSG(nz > np / 2, "HC D = 3000: only %d of %lld gradients nonzero", nz, (long long)np);
    sn_ctx_destroy(ctx[0]), sn_ctx_destroy(ctx[1]);
    free(scratch), free(params), free(e), free(h), free(z), free(out), free(acts), free(work);
    free(grads[0]), free(grads[1]), free(de[0]), free(de[1]);
}

/* argv[1], if given: "scalar" runs only the scalar path, "simd" only the others (meson runs
 * the two as the tests net and net-simd, so that they run side by side, valgrind's stage too) */
int main(int argc, char **argv) {
    const int scalar = argc < 2 || !strcmp(argv[1], "scalar"),
              simd = argc < 2 || !strcmp(argv[1], "simd");
    if (argc > 2 || !(scalar || simd)) {
        fprintf(stderr, "usage: test_net [scalar|simd]\n");
        return 2;
    }
    sn_net net;
    uint64_t seed = 4242;
    static const float explicit_c[6] = {0.5f, 1.0f, 2.0f, 3.0f, 0.7f, 1.3f};

    /* sn_net_init fills the documented defaults */
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 6, 16, SN_NORM_RMSNORM, 1e-6f));
    CHECK(net.placement == SN_PLACEMENT_SIAMESE && net.n_sublayers == 6 && net.d == 16);
    CHECK(net.norm.kind == SN_NORM_RMSNORM && net.norm.affine == SN_AFFINE_SCALE &&
          net.norm.group == 0 && net.norm.eps == 1e-6f);
    CHECK(norm_eq(&net.input_norm, &net.norm) && net.scale_rule == SN_SCALE_DEFAULT &&
          net.flags == 0 && net.scales == NULL);
    for (int k = 0; k < 6; k++) CHECK(net.reserved[k] == 0);
    CHECK(net.act_dtype == SN_DTYPE_F32 && net.mix_fraction == 0.0f);
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_PRE_NORM, 6, 16, SN_NORM_LAYERNORM, 1e-5f));
    CHECK(net.norm.kind == SN_NORM_LAYERNORM && net.norm.affine == SN_AFFINE_SCALE_SHIFT);

    for (int isa = SN_ISA_SCALAR; isa <= SN_ISA_AVX512; isa++) {
        if (!(isa == SN_ISA_SCALAR ? scalar : simd)) continue;
        g_ctx = tu_isa_ctx(isa);
        if (!g_ctx) {
            printf("kernel path %s not available: skipped\n", sn_isa_name((sn_isa)isa));
            continue;
        }
        printf("kernel path %s\n", sn_isa_name((sn_isa)isa));
        static const struct {
            int placement, kind;
            float eps;
            const char *name;
        } basic[] = {
            {SN_PLACEMENT_PRE_NORM, SN_NORM_LAYERNORM, 1e-5f, "pre-norm LN"},
            {SN_PLACEMENT_PRE_NORM, SN_NORM_RMSNORM, 1e-6f, "pre-norm RMS"},
            {SN_PLACEMENT_POST_NORM, SN_NORM_LAYERNORM, 1e-2f, "post-norm LN"},
            {SN_PLACEMENT_POST_NORM, SN_NORM_RMSNORM, 1e-5f, "post-norm RMS"},
            {SN_PLACEMENT_SIAMESE, SN_NORM_LAYERNORM, 1e-5f, "siamese LN"},
            {SN_PLACEMENT_SIAMESE, SN_NORM_RMSNORM, 1e-6f, "siamese RMS"},
        };
        for (int k = 0; k < 6; k++) {
            CHECK_OK(sn_net_init(&net, (sn_placement)basic[k].placement, 6, 16,
                                 (sn_norm_kind)basic[k].kind, basic[k].eps));
            check_net(&net, 5, seed++, basic[k].name, 0, 0);
        }
        /* SiameseNorm variants */
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 6, 16, SN_NORM_LAYERNORM, 1e-5f));
        net.scale_rule = SN_SCALE_NONE;
        check_net(&net, 5, seed++, "siamese LN c=1", 0, 0);
        net.scale_rule = SN_SCALE_EXPLICIT, net.scales = explicit_c;
        check_net(&net, 5, seed++, "siamese LN explicit c", 0, 0);
        net.scale_rule = SN_SCALE_DEFAULT, net.scales = NULL;
        net.input_norm.kind = SN_NORM_IDENTITY;
        check_net(&net, 5, seed++, "siamese LN no input norm", 0, 0);
        net.input_norm = net.norm, net.input_norm.affine = SN_AFFINE_NONE;
        check_net(&net, 5, seed++, "siamese LN non-affine input norm", 0, 0);
        net.norm.affine = SN_AFFINE_SCALE, net.input_norm = net.norm;
        check_net(&net, 3, seed++, "siamese LN bias-free", 0, 0);
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 6, 16, SN_NORM_RMSNORM, 1e-5f));
        net.norm.affine = SN_AFFINE_SCALE_SHIFT, net.input_norm.affine = SN_AFFINE_NONE;
        check_net(&net, 5, seed++, "siamese RMS+beta, non-affine input norm", 0, 0);
        /* other depths and a wider net (sampled FD) */
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 1, 8, SN_NORM_LAYERNORM, 1e-5f));
        check_net(&net, 4, seed++, "siamese LN S=1", 0, 0);
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 5, 8, SN_NORM_RMSNORM, 1e-5f));
        check_net(&net, 4, seed++, "siamese RMS S=5", 0, 0);
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_POST_NORM, 1, 8, SN_NORM_LAYERNORM, 1e-5f));
        check_net(&net, 4, seed++, "post-norm LN S=1", 0, 0);
        /* the other placements the header documents */
        static const struct {
            int placement, kind;
            const char *name;
        } more[] = {
            {SN_PLACEMENT_SIAMESE_PAPER, SN_NORM_LAYERNORM, "siamese paper form LN"},
            {SN_PLACEMENT_SIAMESE_PAPER, SN_NORM_RMSNORM, "siamese paper form RMS"},
            {SN_PLACEMENT_SIAMESE_HYBRID_PRE, SN_NORM_LAYERNORM, "hybrid_pre LN"},
            {SN_PLACEMENT_SIAMESE_HYBRID_PRE, SN_NORM_RMSNORM, "hybrid_pre RMS"},
            {SN_PLACEMENT_DEEPNORM, SN_NORM_LAYERNORM, "deepnorm LN"},
            {SN_PLACEMENT_DEEPNORM, SN_NORM_RMSNORM, "deepnorm RMS"},
            {SN_PLACEMENT_PERI_LN, SN_NORM_LAYERNORM, "peri-ln LN"},
            {SN_PLACEMENT_PERI_LN, SN_NORM_RMSNORM, "peri-ln RMS"},
            {SN_PLACEMENT_MIX_LN, SN_NORM_LAYERNORM, "mix-ln LN"},
            {SN_PLACEMENT_HYBRIDNORM, SN_NORM_LAYERNORM, "hybridnorm LN"},
            {SN_PLACEMENT_HYBRIDNORM_STAR, SN_NORM_RMSNORM, "hybridnorm* RMS"},
            {SN_PLACEMENT_SPAN_NORM, SN_NORM_LAYERNORM, "spannorm LN"},
            {SN_PLACEMENT_SPAN_NORM, SN_NORM_RMSNORM, "spannorm RMS"},
        };
        for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) {
            CHECK_OK(sn_net_init(&net, (sn_placement)more[k].placement, 6, 16,
                                 (sn_norm_kind)more[k].kind, 1e-5f));
            if (more[k].placement == SN_PLACEMENT_MIX_LN) {
                CHECK(net.mix_fraction == 0.25f);
                net.mix_fraction = 0.5f; /* L = 3: floor(0.5 * 3) = 1 Post-Norm layer */
            }
            check_net(&net, 5, seed++, more[k].name, 0, 0);
        }
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_MIX_LN, 6, 16, SN_NORM_RMSNORM, 1e-5f));
        net.mix_fraction = 1.0f;
        check_net(&net, 5, seed++, "mix-ln RMS all Post-Norm", 0, 0);
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_DEEPNORM, 6, 16, SN_NORM_LAYERNORM, 1e-5f));
        net.scale_rule = SN_SCALE_EXPLICIT, net.scales = explicit_c;
        check_net(&net, 5, seed++, "deepnorm explicit alpha", 0, 0);
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SPAN_NORM, 6, 16, SN_NORM_LAYERNORM, 1e-5f));
        net.scale_rule = SN_SCALE_EXPLICIT, net.scales = explicit_c;
        check_net(&net, 5, seed++, "spannorm explicit c", 0, 0);
        net.scale_rule = SN_SCALE_NONE, net.scales = NULL;
        check_net(&net, 5, seed++, "spannorm c=1", 0, 0);
        for (int32_t S = 1; S <= 3; S += 2) { /* a last layer with only its attention */
            CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SPAN_NORM, S, 8, SN_NORM_RMSNORM, 1e-5f));
            check_net(&net, 4, seed++, S == 1 ? "spannorm RMS S=1" : "spannorm RMS S=3", 0, 0);
        }
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE_PAPER, 5, 16, SN_NORM_LAYERNORM, 1e-5f));
        net.input_norm.kind = SN_NORM_IDENTITY, net.scale_rule = SN_SCALE_NONE;
        check_net(&net, 5, seed++, "siamese paper form, no input norm, c=1", 0, 0);
        CHECK_OK(
            sn_net_init(&net, SN_PLACEMENT_SIAMESE_HYBRID_PRE, 5, 16, SN_NORM_LAYERNORM, 1e-5f));
        net.input_norm.affine = SN_AFFINE_NONE;
        check_net(&net, 5, seed++, "hybrid_pre S=5 non-affine input norm", 0, 0);

        /* Hyper-Connections: n = 1, 2, 4, 8, static and dynamic (every parameter by FD: the
         * connection weights, the dynamic projections and scales, N_hc), odd depths, RMSNorm */
        static const struct {
            int rate, dyn, S, kind;
            const char *name;
        } hcs[] = {
            {4, 0, 6, SN_NORM_LAYERNORM, "hyper_connections n=4 static LN"},
            {1, 0, 6, SN_NORM_LAYERNORM, "hyper_connections n=1 static LN"},
            {2, 0, 5, SN_NORM_RMSNORM, "hyper_connections n=2 static RMS S=5"},
            {8, 0, 3, SN_NORM_LAYERNORM, "hyper_connections n=8 static LN S=3"},
            {4, 1, 6, SN_NORM_LAYERNORM, "hyper_connections n=4 dynamic LN"},
            {1, 1, 4, SN_NORM_LAYERNORM, "hyper_connections n=1 dynamic LN S=4"},
            {2, 1, 5, SN_NORM_RMSNORM, "hyper_connections n=2 dynamic RMS S=5"},
            {8, 1, 3, SN_NORM_LAYERNORM, "hyper_connections n=8 dynamic LN S=3"},
        };
        for (size_t k = 0; k < sizeof hcs / sizeof hcs[0]; k++) {
            CHECK_OK(sn_net_init(&net, SN_PLACEMENT_HYPER_CONN, hcs[k].S, 16,
                                 (sn_norm_kind)hcs[k].kind, 1e-5f));
            net.hc_rate = hcs[k].rate, net.hc_dynamic = (uint32_t)hcs[k].dyn;
            if (sn_net_check(&net) == SN_ERR_UNSUPPORTED) continue;
            check_net(&net, 5, seed++, hcs[k].name, 0, 0);
        }
        hc_wide_rows((sn_isa)isa);
        for (int nh = 1; nh <= SN_HC_MAX_RATE; nh++)
            for (int dyn = 0; dyn < 2; dyn++)
                hc_is_pre_norm(nh, dyn, nh % 2 ? SN_NORM_RMSNORM : SN_NORM_LAYERNORM, seed++);
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 6, 64, SN_NORM_LAYERNORM, 1e-6f));
        check_net(&net, 7, seed++, "siamese LN D=64", 120, 200);
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_PRE_NORM, 6, 64, SN_NORM_LAYERNORM, 1e-6f));
        check_net(&net, 7, seed++, "pre-norm LN D=64", 120, 200);
        sn_ctx_destroy(g_ctx);
    }
    return tu_finish("test_net");
}
