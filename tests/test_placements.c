/* Every placement of the placement layer against a float64 reference written here from SPEC's
 * equations (not from the library's ops), with float64 central finite differences of a scalar
 * loss: the network output, and the gradients of the loss with respect to the embedding and to
 * every norm parameter. Also the placements' bad configurations, sizes and helpers.
 *
 * Metric: max |lib - ref| / max |ref| over a tensor (tu_err_dd). The library runs in fp32 over
 * S <= 8 sub-layers of width D <= 16; fp32 rounding (~6e-8 per operation) grows with depth to
 * the 1e-7..2e-6 seen here, so outputs must agree within 1e-5 and gradients within 5e-5: 5 to
 * 25 times the observed error, while a wrong formula (a scale off by one layer, a missing
 * norm) costs percents. The finite differences use h = 1e-5 in float64 (truncation ~1e-10,
 * rounding ~1e-11). */
#include "block.h"

typedef struct cfg {
    const char *name;
    int placement, kind, S;
    int64_t D, R;
    int input;          /* 0 default, 1 identity, 2 non-affine input norm */
    int scale_rule;     /* sn_scale_rule */
    float mix_fraction; /* Mix-LN only */
} cfg;

/* ---- float64 reference ---------------------------------------------------------------------- */

typedef struct refnet {
    const sn_net *net;
    const double *params;
    const blk *b;
} refnet;

/* One norm over R rows of width D (group 0), parameters in the per-norm layout. */
static void dnorm(const sn_norm *n, int64_t R, int64_t D, const double *p, const double *in,
                  double *out) {
    const int affine = n->kind != SN_NORM_IDENTITY && n->affine != SN_AFFINE_NONE;
    const int shift = n->kind != SN_NORM_IDENTITY && n->affine == SN_AFFINE_SCALE_SHIFT;
    for (int64_t r = 0; r < R; r++) {
        const double *v = in + r * D;
        double m = 0.0, q = 0.0, rs = 1.0;
        if (n->kind == SN_NORM_LAYERNORM) {
            for (int64_t j = 0; j < D; j++) m += v[j];
            m /= (double)D;
            for (int64_t j = 0; j < D; j++) q += (v[j] - m) * (v[j] - m);
            rs = 1.0 / sqrt(q / (double)D + n->eps);
        } else if (n->kind == SN_NORM_RMSNORM) {
            for (int64_t j = 0; j < D; j++) q += v[j] * v[j];
            rs = 1.0 / sqrt(q / (double)D + n->eps);
        }
        for (int64_t j = 0; j < D; j++)
            out[r * D + j] = (affine ? p[j] : 1.0) * (v[j] - m) * rs + (shift ? p[D + j] : 0.0);
    }
}

/* Norm j of stage i, through the documented layout. */
static void rnorm(const refnet *q, int i, int j, int64_t R, const double *in, double *out) {
    sn_norm n;
    int64_t off;
    if (sn_net_norm_at(q->net, i, j, &n, &off) != SN_OK) {
        TU_FAIL("stage %d has no norm %d", i, j);
        memcpy(out, in, (size_t)(R * q->net->d) * sizeof(double));
        return;
    }
    dnorm(&n, R, q->net->d, q->params + off, in, out);
}

/* out = a * x + b * y, elementwise over n */
static void lin(int64_t n, double a, const double *x, double b, const double *y, double *out) {
    for (int64_t k = 0; k < n; k++) out[k] = a * x[k] + b * y[k];
}

/* The network output for input e, straight from SPEC. */
static void ref_forward(const refnet *q, int64_t R, const double *e, double *out) {
    const sn_net *net = q->net;
    const int64_t D = net->d, n = R * D, S = net->n_sublayers, L = (S + 1) / 2;
    const int P = net->placement;
    double *x = tu_dalloc(n), *y = tu_dalloc(n), *h = tu_dalloc(n), *z = tu_dalloc(n);
    double *u = tu_dalloc(n), *t = tu_dalloc(n);
    memcpy(x, e, (size_t)n * sizeof(double));
    memcpy(y, e, (size_t)n * sizeof(double));
    if (P == SN_PLACEMENT_PERI_LN) rnorm(q, -1, 0, R, e, x);
    for (int64_t i = 0; i < S; i++) {
        const int64_t l = i / 2;
        const int attn = (i % 2) == 0;
        double c = sqrt(2.0 * (double)(l + 1));
        if (net->scale_rule == SN_SCALE_NONE) c = 1.0;
        if (net->scale_rule == SN_SCALE_EXPLICIT) c = net->scales[i];
        double alpha = net->scale_rule == SN_SCALE_DEFAULT ? pow(2.0 * (double)L, 0.25) : c;
        int op = P; /* which single-stream rule applies to this sub-layer */
        if (P == SN_PLACEMENT_MIX_LN)
            op = l < (int64_t)floor(net->mix_fraction * (double)L) ? SN_PLACEMENT_POST_NORM
                                                                    : SN_PLACEMENT_PRE_NORM;
        if (P == SN_PLACEMENT_HYBRIDNORM_STAR && l == 0) op = SN_PLACEMENT_PRE_NORM;
        switch (op) {
        case SN_PLACEMENT_PRE_NORM:
            rnorm(q, (int)i, 0, R, x, h);
            blk_fwd_d((void *)q->b, (int)i, R, D, h, z);
            lin(n, 1, x, 1, z, x);
            break;
        case SN_PLACEMENT_POST_NORM:
        case SN_PLACEMENT_DEEPNORM: {
            double a = op == SN_PLACEMENT_DEEPNORM ? alpha : 1.0;
            blk_fwd_d((void *)q->b, (int)i, R, D, x, z);
            lin(n, a, x, 1, z, t);
            rnorm(q, (int)i, 0, R, t, x);
            break;
        }
        case SN_PLACEMENT_PERI_LN:
            rnorm(q, (int)i, 0, R, x, h);
            blk_fwd_d((void *)q->b, (int)i, R, D, h, z);
            rnorm(q, (int)i, 1, R, z, t);
            lin(n, 1, x, 1, t, x);
            break;
        case SN_PLACEMENT_HYBRIDNORM:
        case SN_PLACEMENT_HYBRIDNORM_STAR:
            if (attn) { /* h = x, x' = x + z */
                blk_fwd_d((void *)q->b, (int)i, R, D, x, z);
                lin(n, 1, x, 1, z, x);
            } else { /* u = N(x), x' = u + FFN(u) */
                rnorm(q, (int)i, 0, R, x, u);
                blk_fwd_d((void *)q->b, (int)i, R, D, u, z);
                lin(n, 1, u, 1, z, x);
            }
            break;
        case SN_PLACEMENT_SIAMESE_PAPER: /* h = N_in(x + N_pre(y)), x' = N_post(x + z/c) */
            rnorm(q, (int)i, 1, R, y, t);
            lin(n, 1, x, 1, t, t);
            rnorm(q, (int)i, 2, R, t, h);
            blk_fwd_d((void *)q->b, (int)i, R, D, h, z);
            lin(n, 1, x, 1.0 / c, z, t);
            rnorm(q, (int)i, 0, R, t, x);
            lin(n, 1, y, 1, z, y);
            break;
        default: /* SIAMESE, SIAMESE_HYBRID_PRE */
            if (P == SN_PLACEMENT_SIAMESE_HYBRID_PRE && attn) { /* h = c1 x + N_pre(y) */
                rnorm(q, (int)i, 0, R, x, u);
                rnorm(q, (int)i, 1, R, y, t);
                lin(n, 1, u, 1, t, h);
                blk_fwd_d((void *)q->b, (int)i, R, D, h, z);
                lin(n, 1, x, 1.0 / c, z, x);
            } else { /* u = N_post(x), h = N_in(u + N_pre(y)), x' = u + z/c */
                rnorm(q, (int)i, 0, R, x, u);
                rnorm(q, (int)i, 1, R, y, t);
                lin(n, 1, u, 1, t, t);
                rnorm(q, (int)i, 2, R, t, h);
                blk_fwd_d((void *)q->b, (int)i, R, D, h, z);
                lin(n, 1, u, 1.0 / c, z, x);
            }
            lin(n, 1, y, 1, z, y);
            break;
        }
    }
    switch (P) {
    case SN_PLACEMENT_POST_NORM:
    case SN_PLACEMENT_DEEPNORM:
        memcpy(out, x, (size_t)n * sizeof(double));
        break;
    case SN_PLACEMENT_SIAMESE:
    case SN_PLACEMENT_SIAMESE_HYBRID_PRE: /* N_f(N_a(x) + N_b(y)) */
        rnorm(q, (int)S, 0, R, x, u);
        rnorm(q, (int)S, 1, R, y, t);
        lin(n, 1, u, 1, t, t);
        rnorm(q, (int)S, 2, R, t, out);
        break;
    case SN_PLACEMENT_SIAMESE_PAPER: /* x + N_f(y) */
        rnorm(q, (int)S, 1, R, y, t);
        lin(n, 1, x, 1, t, out);
        break;
    default:
        rnorm(q, (int)S, 0, R, x, out);
        break;
    }
    free(x), free(y), free(h), free(z), free(u), free(t);
}

static double ref_loss(const refnet *q, int64_t R, const double *e, const double *w) {
    const int64_t n = R * q->net->d;
    double *out = tu_dalloc(n), s = 0.0;
    ref_forward(q, R, e, out);
    for (int64_t k = 0; k < n; k++) s += w[k] * out[k];
    free(out);
    return s;
}

/* ---- one configuration ------------------------------------------------------------------------ */

static void run(const cfg *C, uint64_t seed) {
    tu_rng g = {seed};
    const int64_t D = C->D, R = C->R, n = R * D;
    const int S = C->S;
    float scales[16];
    sn_net net;
    CHECK_OK(sn_net_init(&net, (sn_placement)C->placement, S, D, (sn_norm_kind)C->kind, 1e-5f));
    if (C->input == 1) net.input_norm.kind = SN_NORM_IDENTITY;
    if (C->input == 2) net.input_norm.affine = SN_AFFINE_NONE;
    if (C->placement == SN_PLACEMENT_MIX_LN) net.mix_fraction = C->mix_fraction;
    net.scale_rule = C->scale_rule;
    if (C->scale_rule == SN_SCALE_EXPLICIT) {
        for (int i = 0; i < S; i++) scales[i] = (float)tu_unif(&g, 0.5, 3.0);
        net.scales = scales;
    }
    CHECK_OK(sn_net_check(&net));
    int64_t np, apr, wpr;
    CHECK_OK(sn_net_sizes(&net, &np, &apr, &wpr));

    /* parameters: defaults, then perturbed so no gamma is 1 and no beta 0 */
    float *pf = tu_falloc(np > 0 ? np : 1);
    double *pd = tu_dalloc(np > 0 ? np : 1);
    CHECK_OK(sn_net_init_params(&net, pf));
    for (int64_t k = 0; k < np; k++) pd[k] = pf[k] = pf[k] + (float)tu_unif(&g, -0.3, 0.3);

    float *ef = tu_falloc(n), *wf = tu_falloc(n), *out = tu_falloc(n);
    double *ed = tu_dalloc(n), *wd = tu_dalloc(n), *outd = tu_dalloc(n);
    for (int64_t k = 0; k < n; k++) {
        ed[k] = ef[k] = (float)tu_unif(&g, -1.5, 1.5);
        wd[k] = wf[k] = (float)tu_unif(&g, -1.0, 1.0);
    }
    blk b;
    blk_init(&b, S, D, seed ^ 0xb10cull);

    /* library: forward and backward through the placement layer */
    float *acts = tu_falloc(R * apr), *work = tu_falloc(R * wpr), *grads = tu_falloc(np ? np : 1);
    float *h = tu_falloc((int64_t)S * n), *z = tu_falloc((int64_t)S * n);
    float *dz = tu_falloc(n), *dh = tu_falloc(n), *de = tu_falloc(n);
    for (int64_t k = 0; k < np; k++) grads[k] = 0.25f; /* prefill: the calls accumulate */
    CHECK_OK(sn_net_split(NULL, &net, R, ef, D, pf, acts));
    for (int i = 0; i < S; i++) {
        CHECK_OK(sn_net_enter(NULL, &net, i, R, pf, acts, h + i * n, D));
        blk_fwd_f(&b, i, R, h + i * n, D, z + i * n, D);
        CHECK_OK(sn_net_exit(NULL, &net, i, R, z + i * n, D, pf, acts));
    }
    CHECK_OK(sn_net_merge(NULL, &net, R, pf, acts, out, D));
    CHECK_OK(sn_net_merge_backward(NULL, &net, R, wf, D, pf, acts, grads, work));
    for (int i = S - 1; i >= 0; i--) {
        CHECK_OK(sn_net_exit_backward(NULL, &net, i, R, pf, acts, grads, work, dz, D, 0));
        blk_bwd_f(&b, i, R, z + i * n, D, dz, D, dh, D);
        CHECK_OK(sn_net_enter_backward(NULL, &net, i, R, dh, D, pf, acts, grads, work));
    }
    CHECK_OK(sn_net_split_backward(NULL, &net, R, pf, acts, grads, work, de, D, 0));

    /* reference: forward, and finite differences of the loss */
    refnet q = {&net, pd, &b};
    ref_forward(&q, R, ed, outd);
    double *a = tu_dalloc(n > np ? n : np), *fd = tu_dalloc(n > np ? n : np);
    const double step = 1e-5;
    char label[160];
    for (int64_t k = 0; k < n; k++) a[k] = out[k];
    snprintf(label, sizeof label, "%s: output", C->name);
    CHECK_ERR(label, tu_err_dd(a, outd, n, 1e-3), 1e-5);
    for (int64_t k = 0; k < n; k++) {
        double s = ed[k];
        ed[k] = s + step;
        double lp = ref_loss(&q, R, ed, wd);
        ed[k] = s - step;
        double lm = ref_loss(&q, R, ed, wd);
        ed[k] = s;
        fd[k] = (lp - lm) / (2 * step);
        a[k] = de[k];
    }
    snprintf(label, sizeof label, "%s: d loss / d e", C->name);
    CHECK_ERR(label, tu_err_dd(a, fd, n, 1e-3), 5e-5);
    for (int64_t k = 0; k < np; k++) {
        double s = pd[k];
        pd[k] = s + step;
        double lp = ref_loss(&q, R, ed, wd);
        pd[k] = s - step;
        double lm = ref_loss(&q, R, ed, wd);
        pd[k] = s;
        fd[k] = (lp - lm) / (2 * step);
        a[k] = (double)grads[k] - 0.25;
    }
    snprintf(label, sizeof label, "%s: d loss / d params (%lld)", C->name, (long long)np);
    if (np > 0) CHECK_ERR(label, tu_err_dd(a, fd, np, 1e-3), 5e-5);

    /* grads = NULL skips the parameter gradients and changes nothing else */
    float *de2 = tu_falloc(n);
    CHECK_OK(sn_net_merge_backward(NULL, &net, R, wf, D, pf, acts, NULL, work));
    for (int i = S - 1; i >= 0; i--) {
        CHECK_OK(sn_net_exit_backward(NULL, &net, i, R, pf, acts, NULL, work, dz, D, 0));
        blk_bwd_f(&b, i, R, z + i * n, D, dz, D, dh, D);
        CHECK_OK(sn_net_enter_backward(NULL, &net, i, R, dh, D, pf, acts, NULL, work));
    }
    CHECK_OK(sn_net_split_backward(NULL, &net, R, pf, acts, NULL, work, de2, D, 0));
    CHECK_MSG(memcmp(de, de2, (size_t)n * sizeof(float)) == 0, "%s: grads = NULL changed de",
              C->name);

    free(pf), free(pd), free(ef), free(wf), free(out), free(ed), free(wd), free(outd);
    free(acts), free(work), free(grads), free(h), free(z), free(dz), free(dh), free(de), free(de2);
    free(a), free(fd), free(b.Wf), free(b.Wd);
}

/* ---- configurations, layout and errors ---------------------------------------------------------- */

static void test_configs(void) {
    const int LN = SN_NORM_LAYERNORM, RMS = SN_NORM_RMSNORM;
    const cfg cs[] = {
        {"pre LN", SN_PLACEMENT_PRE_NORM, LN, 6, 16, 5, 0, 0, 0},
        {"post RMS", SN_PLACEMENT_POST_NORM, RMS, 6, 16, 5, 0, 0, 0},
        {"siamese LN", SN_PLACEMENT_SIAMESE, LN, 6, 16, 5, 0, 0, 0},
        {"siamese RMS no input norm", SN_PLACEMENT_SIAMESE, RMS, 6, 12, 4, 1, 0, 0},
        {"siamese LN non-affine input, c=1", SN_PLACEMENT_SIAMESE, LN, 5, 12, 4, 2, 1, 0},
        {"siamese paper LN", SN_PLACEMENT_SIAMESE_PAPER, LN, 6, 16, 5, 0, 0, 0},
        {"siamese paper RMS explicit c", SN_PLACEMENT_SIAMESE_PAPER, RMS, 6, 16, 3, 0, 2, 0},
        {"siamese hybrid_pre LN", SN_PLACEMENT_SIAMESE_HYBRID_PRE, LN, 6, 16, 5, 0, 0, 0},
        {"siamese hybrid_pre RMS", SN_PLACEMENT_SIAMESE_HYBRID_PRE, RMS, 7, 8, 3, 0, 0, 0},
        {"deepnorm LN", SN_PLACEMENT_DEEPNORM, LN, 6, 16, 5, 0, 0, 0},
        {"deepnorm RMS explicit alpha", SN_PLACEMENT_DEEPNORM, RMS, 4, 16, 5, 0, 2, 0},
        {"peri-ln LN", SN_PLACEMENT_PERI_LN, LN, 6, 16, 5, 0, 0, 0},
        {"peri-ln RMS", SN_PLACEMENT_PERI_LN, RMS, 3, 8, 2, 0, 0, 0},
        {"mix-ln LN 0.25", SN_PLACEMENT_MIX_LN, LN, 8, 16, 4, 0, 0, 0.25f},
        {"mix-ln RMS 0.5", SN_PLACEMENT_MIX_LN, RMS, 8, 16, 4, 0, 0, 0.5f},
        {"mix-ln LN 1.0", SN_PLACEMENT_MIX_LN, LN, 4, 16, 4, 0, 0, 1.0f},
        {"mix-ln LN 0.0", SN_PLACEMENT_MIX_LN, LN, 4, 16, 4, 0, 0, 0.0f},
        {"hybridnorm LN", SN_PLACEMENT_HYBRIDNORM, LN, 6, 16, 5, 0, 0, 0},
        {"hybridnorm* RMS", SN_PLACEMENT_HYBRIDNORM_STAR, RMS, 6, 16, 5, 0, 0, 0},
        {"hybridnorm* LN D=1", SN_PLACEMENT_HYBRIDNORM_STAR, LN, 4, 1, 3, 0, 0, 0},
    };
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) run(&cs[k], 1000 + k);
}

/* How many norms each stage lists (the documented layout), and the helpers' values. */
static void test_layout(void) {
    struct { int p; int sub_even, sub_odd, merge, split; } want[] = {
        {SN_PLACEMENT_PRE_NORM, 1, 1, 1, 0},        {SN_PLACEMENT_POST_NORM, 1, 1, 0, 0},
        {SN_PLACEMENT_SIAMESE, 3, 3, 3, 0},         {SN_PLACEMENT_SIAMESE_PAPER, 3, 3, 3, 0},
        {SN_PLACEMENT_SIAMESE_HYBRID_PRE, 2, 3, 3, 0}, {SN_PLACEMENT_DEEPNORM, 1, 1, 0, 0},
        {SN_PLACEMENT_PERI_LN, 2, 2, 1, 1},         {SN_PLACEMENT_MIX_LN, 1, 1, 1, 0},
        {SN_PLACEMENT_HYBRIDNORM, 1, 1, 1, 0},      {SN_PLACEMENT_HYBRIDNORM_STAR, 1, 1, 1, 0},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        sn_net net;
        CHECK_OK(sn_net_init(&net, (sn_placement)want[k].p, 4, 8, SN_NORM_LAYERNORM, 1e-5f));
        int stages[4] = {0, 1, 4, -1}, expect[4] = {want[k].sub_even, want[k].sub_odd,
                                                    want[k].merge, want[k].split};
        for (int s = 0; s < 4; s++) {
            int j = 0;
            while (sn_net_norm_at(&net, stages[s], j, NULL, NULL) == SN_OK) j++;
            CHECK_MSG(j == expect[s], "placement %d stage %d: %d norms, expected %d", want[k].p,
                      stages[s], j, expect[s]);
        }
        float gain = 0.0f;
        CHECK_OK(sn_net_init_gain(&net, &gain));
        double g = want[k].p == SN_PLACEMENT_DEEPNORM ? pow(8.0 * 2, -0.25) : 1.0;
        CHECK_MSG(fabs(gain - g) < 1e-6, "placement %d: gain %g, expected %g", want[k].p, gain, g);
    }
    sn_net net;
    float c;
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_DEEPNORM, 24, 8, SN_NORM_LAYERNORM, 1e-5f));
    CHECK_OK(sn_net_scale(&net, 5, &c));
    CHECK_MSG(fabs(c - pow(24.0, 0.25)) < 1e-6, "deepnorm alpha %g", c);
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE_PAPER, 6, 8, SN_NORM_LAYERNORM, 1e-5f));
    CHECK_OK(sn_net_scale(&net, 5, &c));
    CHECK_MSG(c == sqrtf(6.0f), "paper-form c_5 %g", c);
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_HYBRIDNORM, 6, 8, SN_NORM_LAYERNORM, 1e-5f));
    CHECK_OK(sn_net_scale(&net, 3, &c));
    CHECK(c == 1.0f);
    /* the hybrid_pre c1 is a learned scale, initialised to 1 */
    sn_norm n;
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE_HYBRID_PRE, 2, 8, SN_NORM_RMSNORM, 1e-5f));
    CHECK_OK(sn_net_norm_at(&net, 0, 0, &n, NULL));
    CHECK(n.kind == SN_NORM_SCALE && n.affine == SN_AFFINE_SCALE);
}

static void test_bad_configs(void) {
    sn_net net;
    CHECK_STATUS(sn_net_init(&net, (sn_placement)10, 4, 8, SN_NORM_LAYERNORM, 1e-5f),
                 SN_ERR_PLACEMENT);
    CHECK_STATUS(sn_net_init(&net, (sn_placement)-1, 4, 8, SN_NORM_LAYERNORM, 1e-5f),
                 SN_ERR_PLACEMENT);
    CHECK_STATUS(sn_net_init(&net, SN_PLACEMENT_DEEPNORM, 0, 8, SN_NORM_LAYERNORM, 1e-5f),
                 SN_ERR_SHAPE);
    const float bad[] = {-0.01f, 1.01f, NAN, INFINITY};
    for (int k = 0; k < 4; k++) {
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_MIX_LN, 4, 8, SN_NORM_LAYERNORM, 1e-5f));
        net.mix_fraction = bad[k];
        CHECK_STATUS(sn_net_check(&net), SN_ERR_CONFIG);
        int64_t np = -7;
        CHECK_STATUS(sn_net_sizes(&net, &np, NULL, NULL), SN_ERR_CONFIG);
        CHECK(np == -7);
    }
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 4, 8, SN_NORM_LAYERNORM, 1e-5f));
    net.mix_fraction = 0.5f; /* only Mix-LN has a fraction */
    CHECK_STATUS(sn_net_check(&net), SN_ERR_CONFIG);
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_PRE_NORM, 4, 8, SN_NORM_LAYERNORM, 1e-5f));
    net.reserved32 = 1;
    CHECK_STATUS(sn_net_check(&net), SN_ERR_CONFIG);
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_PERI_LN, 4, 8, SN_NORM_LAYERNORM, 1e-5f));
    CHECK_STATUS(sn_net_norm_at(&net, -2, 0, NULL, NULL), SN_ERR_INDEX);
    CHECK_STATUS(sn_net_norm_at(&net, 5, 0, NULL, NULL), SN_ERR_INDEX);
    CHECK_OK(sn_net_norm_at(&net, -1, 0, NULL, NULL));
    float gain = 7.0f;
    CHECK_STATUS(sn_net_init_gain(&net, NULL), SN_ERR_NULL);
    CHECK_STATUS(sn_net_init_gain(NULL, &gain), SN_ERR_NULL);
    CHECK(gain == 7.0f);
    /* the SN_NORM_SCALE kind: valid with any eps, parameters per affine mode, no statistics */
    sn_norm sc = {SN_NORM_SCALE, SN_AFFINE_SCALE_SHIFT, 0, 0.0f};
    int64_t np, spr;
    CHECK_OK(sn_norm_query(&sc, 8, &np, &spr));
    CHECK(np == 16 && spr == 0);
}

int main(void) {
    test_configs();
    test_layout();
    test_bad_configs();
    return tu_finish("test_placements");
}
