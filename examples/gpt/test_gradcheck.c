/* Test: the whole model's analytic gradient (gpt_backward, including libsiamesenorm's
 * placement backwards and the per-head q/k/v norms' grouped-norm backwards) against central
 * finite differences of the loss, in every placement --norm knows with its default q/k/v
 * norms (on for hybridnorm, hybridnorm_star, siamese_hybrid_pre), and in a few combinations
 * switched by hand (Pre-Norm + qk, SiameseNorm + qkv, RMSNorm, SpanNorm with RMSNorm).
 *
 * The model is fp32, so single-element finite differences are noisy: the loss (~3.5) carries
 * rounding noise of order 1e-6, which divided by 2*eps = 2e-2 is ~5e-5, the size of many
 * single-parameter gradients. Two checks keep the test both sensitive and robust:
 *  1. direction check, per tensor, per norm of the network and per q/k/v norm: perturb the
 *     whole tensor along a random +-1 direction v; the finite difference of L along v must
 *     match g.v. The signal g.v sums over all the tensor's entries, far above the noise.
 *     Central differences at eps and eps/2 are combined by Richardson extrapolation (see
 *     richardson()), which cancels the eps^2 truncation term: eps = 6e-3 per entry for whole
 *     tensors, 2e-2 for one norm's 8-32 parameters (smaller g.v, so a larger step to stay
 *     above the noise). Observed tensor errors are <= 7e-3, so a 2% relative tolerance (plus a
 *     1e-4 absolute floor for the rare norm whose g.v is tiny) has a margin for float noise,
 *     yet catches real mistakes: scaling the embedding gradient by 1.03 fails it, a wrong c_i
 *     or a missing term is >= 10%, and a q/k/v norm backward skipped, or its parameter
 *     gradient dropped, or given another norm's statistics, fails by 30% or more.
 *  2. element check: the 3 entries with the largest |g| in each tensor plus 2 random ones,
 *     with tolerance 5% relative + 2e-4 absolute (the noise bound above, with margin).
 * Weights are drawn larger than at init and the norms' gammas/betas randomised, so every
 * path carries a non-trivial gradient; every target is a real token (no masking). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt.h"

#define B 2

static gpt_model m;
static int tokens[B * 64], targets[B * 64];

static double loss_at(void) { return (double)gpt_forward(&m, tokens, targets, B); }

/* (L(p + eps v) - L(p - eps v)) / 2 eps, p restored to saved afterwards. */
static double central_diff(float *p, const float *saved, const float *v, size_t n, float eps) {
    for (size_t i = 0; i < n; i++) p[i] = saved[i] + eps * v[i];
    double lp = loss_at();
    for (size_t i = 0; i < n; i++) p[i] = saved[i] - eps * v[i];
    double lm = loss_at();
    for (size_t i = 0; i < n; i++) p[i] = saved[i];
    return (lp - lm) / (2.0 * eps);
}

/* Richardson extrapolation of central differences at eps and eps/2: cancels their eps^2 term
 * (the loss's third derivative along v), leaving O(eps^4). Needed because the per-head q/k/v
 * norms make the loss strongly curved in qkvw: a LayerNorm over hs = 8 columns of a small raw
 * q divides by that small std, so at eps = 3e-3 the plain central difference of qkvw was 9%
 * off in HybridNorm* (and 0.9% at 1e-3, 93% at 1e-2: the eps^2 law of truncation). */
static double richardson(double fd_eps, double fd_half) { return (4.0 * fd_half - fd_eps) / 3.0; }

/* FD along v (n floats at p) vs analytic g.v. Returns the relative error. */
static double direction_check(float *p, const float *g, size_t n, uint64_t *rng, float eps,
                              double *an_out, double *fd_out) {
    float *v = malloc(n * sizeof(float)), *saved = malloc(n * sizeof(float));
    double an = 0.0;
    for (size_t i = 0; i < n; i++) {
        v[i] = (rng_next(rng) & 1) ? 1.0f : -1.0f;
        an += (double)g[i] * v[i];
        saved[i] = p[i];
    }
    double fd =
        richardson(central_diff(p, saved, v, n, eps), central_diff(p, saved, v, n, 0.5f * eps));
    free(v);
    free(saved);
    *an_out = an;
    *fd_out = fd;
    return fabs(fd - an) / fmax(fmax(fabs(fd), fabs(an)), 1e-30);
}

/* 2% relative, plus an absolute floor of 1e-4 for tensors whose g.v is itself near the noise
 * (the noise of (L+ - L-) / 2 eps is ~1e-6 / 6e-3 ~ 2e-4 at worst, observed <= 3e-5). */
static int direction_bad(double an, double fd) {
    return fabs(fd - an) > 2e-2 * fmax(fabs(fd), fabs(an)) + 1e-4;
}

static int element_check(float *p, const float *g, size_t n, uint64_t *rng, const char *name) {
    size_t pick[5];
    for (int k = 0; k < 3; k++) {
        size_t best = 0;
        for (size_t i = 0; i < n; i++) {
            int taken = 0;
            for (int q = 0; q < k; q++) taken |= pick[q] == i;
            if (!taken && fabsf(g[i]) > fabsf(g[best])) best = i;
        }
        pick[k] = best;
    }
    pick[3] = rng_next(rng) % n;
    pick[4] = rng_next(rng) % n;
    int bad = 0;
    const float eps = 2e-2f;
    for (int k = 0; k < 5; k++) {
        size_t i = pick[k];
        float saved = p[i], one = 1.0f;
        double fd = richardson(central_diff(p + i, &saved, &one, 1, eps),
                               central_diff(p + i, &saved, &one, 1, 0.5f * eps));
        double err = fabs(fd - g[i]);
        if (err > 2e-4 + 5e-2 * fmax(fabs(fd), fabs(g[i]))) {
            printf("    %s[%zu]: analytic %.6g finite-diff %.6g: FAIL\n", name, i, (double)g[i],
                   fd);
            bad = 1;
        }
    }
    return bad;
}

/* One norm's parameters (np floats at p, gradient gn) along a random direction. */
static int norm_check(float *p, const float *gn, int64_t np, uint64_t *rng, const char *what, int j,
                      int stage, double *worst) {
    double an, fd;
    double err = direction_check(p, gn, (size_t)np, rng, 2e-2f, &an, &fd);
    *worst = fmax(*worst, err);
    int fail = direction_bad(an, fd);
    if (getenv("GRADCHECK_VERBOSE") || fail)
        printf("  %s %d of %s %d: g.v %+.6e fd %+.6e rel err %.1e%s\n", what, j,
               what[0] == 'n' ? "stage" : "layer", stage, an, fd, err, fail ? "  FAIL" : "");
    return fail;
}

static int check_placement(int placement, int norm_kind, int qk) {
    /* 4 layers, so that Mix-LN has one Post-Norm layer (floor(0.25 * 4)) */
    gpt_config cfg = {.vocab = 32,
                      .ctx = 6,
                      .layers = 4,
                      .heads = 2,
                      .width = 16,
                      .tied = 0,
                      .placement = placement,
                      .norm_kind = norm_kind,
                      .qk_norm = qk,
                      .eps = 1e-5f,
                      /* hyper_connections: n = 4, dynamic (the trainer's default) */
                      .hc_rate = placement == SN_PLACEMENT_HYPER_CONN ? 4 : 0,
                      .hc_dynamic = placement == SN_PLACEMENT_HYPER_CONN};
    if (gpt_model_create(&m, &cfg, B) != 0) return 1;
    uint64_t rng = 1234;
    gpt_model_init(&m, 5);
    for (int t = 0; t < P_COUNT; t++)
        for (size_t i = 0; i < m.size[t]; i++) {
            float r = rng_normal(&rng);
            if (t == P_NORMS || t == P_QKNORM)
                m.p[t][i] += 0.3f * r; /* gamma 1 +- 0.3, beta +- 0.3 */
            else m.p[t][i] = 0.15f * r;
        }
    for (int i = 0; i < B * cfg.ctx; i++) {
        tokens[i] = (int)(rng_next(&rng) % (uint64_t)cfg.vocab);
        targets[i] = (int)(rng_next(&rng) % (uint64_t)cfg.vocab);
    }
    gpt_zero_grad(&m);
    double l0 = loss_at();
    gpt_backward(&m);
    /* the gradient is consumed in place by nothing else: copy it to be safe */
    float *g = malloc(m.n_params * sizeof(float));
    for (size_t i = 0; i < m.n_params; i++) g[i] = m.grads[i];
    int bad = 0;
    double worst = 0.0;
    printf("%s/%s/qk-norm %s: loss %.4f\n", gpt_placement_name(placement),
           norm_kind == SN_NORM_RMSNORM ? "rmsnorm" : "layernorm", gpt_qk_norm_name(m.cfg.qk_norm),
           l0);
    for (int t = 0; t < P_COUNT; t++) {
        if (m.size[t] == 0) continue;
        size_t off = (size_t)(m.p[t] - m.params);
        double an, fd;
        double err = direction_check(m.p[t], g + off, m.size[t], &rng, 6e-3f, &an, &fd);
        int eb = element_check(m.p[t], g + off, m.size[t], &rng, gpt_tensor_name(t));
        int fail = direction_bad(an, fd) || eb;
        worst = fmax(worst, err);
        printf("  %-9s %6zu params: g.v %+.6e  fd %+.6e  rel err %.1e%s\n", gpt_tensor_name(t),
               m.size[t], an, fd, err, fail ? "  FAIL" : "");
        bad |= fail;
    }
    /* each norm of the network on its own (sn_net_norm_at), so a wrong gradient of one norm
     * cannot hide in the sum over all of them */
    int n_norms = 0;
    for (int stage = -1; stage <= 2 * cfg.layers; stage++) /* -1: the split */
        for (int j = 0;; j++) {
            sn_norm nd;
            int64_t offset, np;
            if (sn_net_norm_at(&m.net, stage, j, &nd, &offset) != SN_OK) break;
            if (sn_norm_query(&nd, cfg.width, &np, NULL) != SN_OK || np == 0) continue;
            n_norms++;
            bad |= norm_check(m.p[P_NORMS] + offset, g + (size_t)(m.p[P_NORMS] - m.params) + offset,
                              np, &rng, "norm", j, stage, &worst);
        }
    /* and each per-head q/k/v norm (layer l, j = 0 q, 1 k, 2 v) */
    int n_qkn = 0;
    for (int l = 0; l < cfg.layers; l++)
        for (int j = 0; j < m.n_qkn; j++) {
            size_t off = (size_t)(l * m.n_qkn + j) * (size_t)m.qkn_params;
            n_qkn++;
            bad |= norm_check(m.p[P_QKNORM] + off, g + (size_t)(m.p[P_QKNORM] - m.params) + off,
                              m.qkn_params, &rng, "qkv-norm", j, l, &worst);
        }
    printf("  %d norms and %d q/k/v norms checked one by one; worst direction rel err %.1e: %s\n",
           n_norms, n_qkn, worst, bad ? "FAIL" : "ok");
    if (n_norms == 0 || n_qkn != cfg.layers * gpt_qk_norm_count(m.cfg.qk_norm)) bad = 1;
    free(g);
    gpt_model_free(&m);
    return bad;
}

int main(void) {
    int bad = 0;
    for (int p = 0; p < SN_PLACEMENT_COUNT; p++)
        bad |= check_placement(p, SN_NORM_LAYERNORM, GPT_QK_AUTO);
    bad |= check_placement(SN_PLACEMENT_SIAMESE, SN_NORM_RMSNORM, GPT_QK_AUTO);
    bad |= check_placement(SN_PLACEMENT_PRE_NORM, SN_NORM_LAYERNORM, GPT_QK_QK);
    bad |= check_placement(SN_PLACEMENT_SIAMESE, SN_NORM_RMSNORM, GPT_QK_QKV);
    bad |= check_placement(SN_PLACEMENT_HYBRIDNORM, SN_NORM_RMSNORM, GPT_QK_AUTO);
    bad |= check_placement(SN_PLACEMENT_SPAN_NORM, SN_NORM_RMSNORM, GPT_QK_AUTO);
    return bad;
}
