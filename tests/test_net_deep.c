/* The deepest network the library accepts (defect 10 in the audit table of docs/reliability.md):
 * S = 2^10 sub-layers (the header's maximum) for every placement: sn_net_init_params in one
 * walk (once quadratic in S: 59 s at 2^14), and a whole forward and backward pass (R = 1,
 * D = 4), finite; S = 2^10 is valid, 2^10 + 1 is SN_ERR_SHAPE. sn_net_init_params must write
 * what sn_net_norm_at describes (checked for S = 1..9 on every placement, and at 2^10 for one).
 * Each call finds its stage in O(1) (src/api/net_layout.c; until 0.6.19 it walked the layout up
 * to its sub-layer, and the pass took 40 s under the sanitizers). */
#include "testutil.h"

#include <time.h>

#define S_MAX (1 << 10)

/* gammas 1, betas 0, by the norms sn_net_norm_at lists */
static void init_by_norm_at(const sn_net *net, float *p) {
    sn_norm n;
    int64_t off, np;
    for (int32_t i = -1; i <= net->n_sublayers; i++)
        for (int32_t j = 0; sn_net_norm_at(net, i, j, &n, &off) == SN_OK; j++)
            if (sn_norm_query(&n, net->d, &np, NULL) == SN_OK && np > 0)
                sn_norm_init_params(&n, net->d, p + off);
    /* Hyper-Connections' connection weights, as sn_net_conn_at documents their initialisation:
     * A_m = e_{i mod n}, A_r = I, B = 1, Wa = Wb = 0, s_a = s_b = 0.01 */
    for (int32_t i = 0; sn_net_conn_at(net, i, &off, &np) == SN_OK; i++) {
        const int n = net->hc_rate;
        float *a = p + off;
        for (int64_t k = 0; k < np; k++) a[k] = 0.0f;
        a[(i % n) * (n + 1)] = 1.0f;
        for (int k = 0; k < n; k++) a[k * (n + 1) + 1 + k] = a[n * (n + 1) + k] = 1.0f;
        if (net->hc_dynamic) a[np - 2] = a[np - 1] = 0.01f;
    }
}

static double now(void) {
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void deep_pass(sn_placement pl) {
    const int64_t D = 4, R = 1;
    sn_net net;
    CHECK_OK(sn_net_init(&net, pl, S_MAX, D, SN_NORM_LAYERNORM, 1e-5f));
    sn_net bad = net;
    bad.n_sublayers = S_MAX + 1;
    CHECK_STATUS(sn_net_check(&bad), SN_ERR_SHAPE);
    int64_t np, apr, wpr;
    CHECK_OK(sn_net_sizes(&net, &np, &apr, &wpr));
    float *p = tu_falloc(np), *q = tu_falloc(np), *g = tu_falloc(np), *a = tu_falloc(R * apr),
          *w = tu_falloc(R * wpr), *e = tu_falloc(R * D), *h = tu_falloc(R * D),
          *o = tu_falloc(R * D), *d = tu_falloc(R * D);
    const double t0 = now();
    CHECK_OK(sn_net_init_params(&net, p));
    const double t1 = now();
    memset(q, 0xff, (size_t)np * sizeof(float));
    if (pl == SN_PLACEMENT_SIAMESE) { /* through sn_net_norm_at, once */
        init_by_norm_at(&net, q);
        CHECK_MSG(memcmp(p, q, (size_t)np * sizeof(float)) == 0, "placement %d: init differs", pl);
    }
    memset(g, 0, (size_t)np * sizeof(float));
    for (int64_t k = 0; k < R * D; k++) e[k] = (float)k - 1.5f, d[k] = 0.25f * (float)k - 0.3f;
    const sn_net_pass pass = {R, p, a, g, w};
    CHECK_OK(sn_net_split(NULL, &net, &pass, e, D));
    for (int32_t i = 0; i < S_MAX; i++) {
        CHECK_OK(sn_net_enter(NULL, &net, &pass, i, h, D));
        CHECK_OK(sn_net_exit(NULL, &net, &pass, i, h, D));
    }
    CHECK_OK(sn_net_merge(NULL, &net, &pass, o, D));
    CHECK_OK(sn_net_merge_backward(NULL, &net, &pass, d, D));
    for (int32_t i = S_MAX - 1; i >= 0; i--) {
        CHECK_OK(sn_net_exit_backward(NULL, &net, &pass, i, h, D, 0));
        CHECK_OK(sn_net_enter_backward(NULL, &net, &pass, i, h, D));
    }
    CHECK_OK(sn_net_split_backward(NULL, &net, &pass, e, D, 0));
    const double t2 = now();
    int fin = 1;
    for (int64_t k = 0; k < R * D; k++) fin &= isfinite(o[k]) && isfinite(e[k]);
    CHECK_MSG(fin, "placement %d: S = %d pass not finite", pl, S_MAX);
    if (getenv("SN_TEST_VERBOSE"))
        printf("placement %d: S = %d: init_params %.3f s, pass %.3f s\n", pl, S_MAX, t1 - t0,
               t2 - t1);
    free(p), free(q), free(g), free(a), free(w), free(e), free(h), free(o), free(d);
}

int main(void) {
    for (int pl = SN_PLACEMENT_PRE_NORM; pl < SN_PLACEMENT_COUNT; pl++) {
        for (int32_t S = 1; S <= 9; S++) {
            sn_net net;
            int64_t np;
            CHECK_OK(sn_net_init(&net, (sn_placement)pl, S, 6, SN_NORM_LAYERNORM, 1e-5f));
            CHECK_OK(sn_net_sizes(&net, &np, NULL, NULL));
            float *p = tu_falloc(np + 1), *q = tu_falloc(np + 1);
            memset(p, 0xff, (size_t)(np + 1) * sizeof(float));
            memset(q, 0xff, (size_t)(np + 1) * sizeof(float));
            CHECK_OK(sn_net_init_params(&net, p));
            init_by_norm_at(&net, q);
            CHECK_MSG(memcmp(p, q, (size_t)(np + 1) * sizeof(float)) == 0,
                      "placement %d, S = %d: sn_net_init_params differs from sn_net_norm_at", pl,
                      S);
            free(p), free(q);
        }
        deep_pass((sn_placement)pl);
    }
    return tu_finish("net_deep");
}
