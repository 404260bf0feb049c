/* Test: the whole model's analytic gradient (gpt_backward, including libsiamesenorm's
 * placement backwards) against central finite differences of the loss, in every placement
 * --norm knows (and SiameseNorm with RMSNorm).
 *
 * The model is fp32, so single-element finite differences are noisy: the loss (~3.5) carries
 * rounding noise of order 1e-6, which divided by 2*eps = 2e-2 is ~5e-5, the size of many
 * single-parameter gradients. Two checks keep the test both sensitive and robust:
 *  1. direction check, per tensor and per norm of the network: perturb the whole tensor along
 *     a random +-1 direction v; (L(p + eps v) - L(p - eps v)) / 2 eps must match g.v. The
 *     signal g.v sums over all the tensor's entries, far above the noise. eps = 3e-3 per entry
 *     for whole tensors, 1e-2 for one norm's 16-32 parameters (smaller g.v, so a larger step
 *     to stay above the noise; at 3e-2 the truncation error starts to show). Observed errors
 *     are <= 5e-3, so a 2% relative tolerance (plus a 1e-4 absolute floor for the rare tensor
 *     whose g.v is tiny) has a wide margin for float noise, yet catches real mistakes: scaling
 *     the embedding gradient by 1.03 fails it, and a wrong c_i or a missing term is >= 10%.
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

static double loss_at(void)
{
    return (double)gpt_forward(&m, tokens, targets, B);
}

/* FD along v (n floats at p) vs analytic g.v. Returns the relative error. */
static double direction_check(float *p, const float *g, size_t n, uint64_t *rng, float eps,
                              double *an_out, double *fd_out)
{
    float *v = malloc(n * sizeof(float)), *saved = malloc(n * sizeof(float));
    double an = 0.0;
    for (size_t i = 0; i < n; i++) {
        v[i] = (rng_next(rng) & 1) ? 1.0f : -1.0f;
        an += (double)g[i] * v[i];
        saved[i] = p[i];
    }
    for (size_t i = 0; i < n; i++)
        p[i] = saved[i] + eps * v[i];
    double lp = loss_at();
    for (size_t i = 0; i < n; i++)
        p[i] = saved[i] - eps * v[i];
    double lm = loss_at();
    for (size_t i = 0; i < n; i++)
        p[i] = saved[i];
    double fd = (lp - lm) / (2.0 * eps);
    free(v);
    free(saved);
    *an_out = an;
    *fd_out = fd;
    return fabs(fd - an) / fmax(fmax(fabs(fd), fabs(an)), 1e-30);
}

/* 2% relative, plus an absolute floor of 1e-4 for tensors whose g.v is itself near the noise
 * (the noise of (L+ - L-) / 2 eps is ~1e-6 / 6e-3 ~ 2e-4 at worst, observed <= 3e-5). */
static int direction_bad(double an, double fd)
{
    return fabs(fd - an) > 2e-2 * fmax(fabs(fd), fabs(an)) + 1e-4;
}

static int element_check(float *p, const float *g, size_t n, uint64_t *rng, const char *name)
{
    size_t pick[5];
    for (int k = 0; k < 3; k++) {
        size_t best = 0;
        for (size_t i = 0; i < n; i++) {
            int taken = 0;
            for (int q = 0; q < k; q++)
                taken |= pick[q] == i;
            if (!taken && fabsf(g[i]) > fabsf(g[best]))
                best = i;
        }
        pick[k] = best;
    }
    pick[3] = rng_next(rng) % n;
    pick[4] = rng_next(rng) % n;
    int bad = 0;
    const float eps = 1e-2f;
    for (int k = 0; k < 5; k++) {
        size_t i = pick[k];
        float saved = p[i];
        p[i] = saved + eps;
        double lp = loss_at();
        p[i] = saved - eps;
        double lm = loss_at();
        p[i] = saved;
        double fd = (lp - lm) / (2.0 * eps);
        double err = fabs(fd - g[i]);
        if (err > 2e-4 + 5e-2 * fmax(fabs(fd), fabs(g[i]))) {
            printf("    %s[%zu]: analytic %.6g finite-diff %.6g: FAIL\n", name, i, (double)g[i],
                   fd);
            bad = 1;
        }
    }
    return bad;
}

static int check_placement(int placement, int norm_kind)
{
    /* 4 layers, so that Mix-LN has one Post-Norm layer (floor(0.25 * 4)) */
    gpt_config cfg = {32, 6, 4, 2, 16, 0, placement, norm_kind};
    if (gpt_model_create(&m, &cfg, B) != 0)
        return 1;
    uint64_t rng = 1234;
    gpt_model_init(&m, 5);
    for (int t = 0; t < P_COUNT; t++)
        for (size_t i = 0; i < m.size[t]; i++) {
            float r = rng_normal(&rng);
            if (t == P_NORMS)
                m.p[t][i] += 0.3f * r; /* gamma 1 +- 0.3, beta +- 0.3 */
            else
                m.p[t][i] = 0.15f * r;
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
    for (size_t i = 0; i < m.n_params; i++)
        g[i] = m.grads[i];
    int bad = 0;
    double worst = 0.0;
    printf("%s/%s: loss %.4f\n", gpt_placement_name(placement),
           norm_kind == SN_NORM_RMSNORM ? "rmsnorm" : "layernorm", l0);
    for (int t = 0; t < P_COUNT; t++) {
        if (m.size[t] == 0)
            continue;
        size_t off = (size_t)(m.p[t] - m.params);
        double an, fd;
        double err = direction_check(m.p[t], g + off, m.size[t], &rng, 3e-3f, &an, &fd);
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
    for (int stage = 0; stage <= 2 * cfg.layers; stage++)
        for (int j = 0;; j++) {
            sn_norm nd;
            int64_t offset, np;
            if (sn_net_norm_at(&m.net, stage, j, &nd, &offset) != SN_OK)
                break;
            if (sn_norm_query(&nd, cfg.width, &np, NULL) != SN_OK || np == 0)
                continue;
            double an, fd;
            float *p = m.p[P_NORMS] + offset;
            const float *gn = g + (size_t)(m.p[P_NORMS] - m.params) + offset;
            double err = direction_check(p, gn, (size_t)np, &rng, 1e-2f, &an, &fd);
            worst = fmax(worst, err);
            n_norms++;
            int fail = direction_bad(an, fd);
            if (getenv("GRADCHECK_VERBOSE") || fail)
                printf("  norm %d of stage %d: g.v %+.6e fd %+.6e rel err %.1e%s\n", j, stage,
                       an, fd, err, fail ? "  FAIL" : "");
            bad |= fail;
        }
    printf("  %d norms checked one by one; worst direction rel err %.1e: %s\n", n_norms, worst,
           bad ? "FAIL" : "ok");
    if (n_norms == 0)
        bad = 1;
    free(g);
    gpt_model_free(&m);
    return bad;
}

int main(void)
{
    int bad = 0;
    for (int i = 0; i < gpt_placement_count(); i++)
        bad |= check_placement(gpt_placement_at(i), SN_NORM_LAYERNORM);
    bad |= check_placement(SN_PLACEMENT_SIAMESE, SN_NORM_RMSNORM);
    return bad;
}
