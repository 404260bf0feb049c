/* sn-net-calls: what the placement layer's calls cost per sub-layer as the network deepens. For
 * each placement, nets of S = 2, 24, 96, 384 and 1024 sub-layers (1 .. 512 layers) at D = 768
 * run over one row (a decoding step): the inference pass (sn_net_infer_split, enter and exit
 * per sub-layer, merge) and the training pass (sn_net_split .. merge, then merge_backward ..
 * split_backward), with the block z = h. It prints the median time of a pass per sub-layer and
 * its ratio to the S = 2 net's: a call's own cost is then the same at every depth, so the
 * ratio stays near 1 unless the calls' bookkeeping grows with S (the parameters and acts, which
 * do grow, are read only for the one stage a call works on).
 * Usage: sn-net-calls [--quick] [PLACEMENT ...]   (default: pre_norm siamese hyper_connections;
 * --quick: S = 2 and 24, one short sample, for the smoke test). SN_ISA picks the path. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "siamesenorm.h"

enum { D = 768, NSAMPLES = 7 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *falloc(int64_t n) {
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    if (!p) {
        fprintf(stderr, "sn-net-calls: out of memory\n");
        exit(1);
    }
    return p;
}

typedef struct bufs {
    sn_net net;
    float *params, *grads, *acts, *work, *state, *e, *h, *z, *out, *de;
} bufs;

/* one pass of the given kind; nonzero on a failed call */
static int pass(const sn_ctx *ctx, bufs *b, int training) {
    const sn_net *n = &b->net;
    const int32_t S = n->n_sublayers;
    int st = 0;
    if (!training) {
        const sn_net_infer inf = {.rows = 1, .params = b->params, .state = b->state};
        st |= sn_net_infer_split(ctx, n, &inf, b->e, D);
        for (int32_t i = 0; i < S; i++) {
            st |= sn_net_infer_enter(ctx, n, &inf, i, b->h, D);
            st |= sn_net_infer_exit(ctx, n, &inf, i, b->h, D); /* z = h */
        }
        return st | sn_net_infer_merge(ctx, n, &inf, b->out, D);
    }
    const sn_net_pass p = {
        .rows = 1, .params = b->params, .acts = b->acts, .grads = b->grads, .work = b->work};
    st |= sn_net_split(ctx, n, &p, b->e, D);
    for (int32_t i = 0; i < S; i++) {
        st |= sn_net_enter(ctx, n, &p, i, b->h, D);
        st |= sn_net_exit(ctx, n, &p, i, b->h, D);
    }
    st |= sn_net_merge(ctx, n, &p, b->out, D);
    st |= sn_net_merge_backward(ctx, n, &p, b->out, D);
    for (int32_t i = S - 1; i >= 0; i--) {
        st |= sn_net_exit_backward(ctx, n, &p, i, b->z, D, 0);
        st |= sn_net_enter_backward(ctx, n, &p, i, b->z, D);
    }
    return st | sn_net_split_backward(ctx, n, &p, b->de, D, 0);
}

/* the median over the samples of a pass's time, in seconds; < 0 on a failed call */
static double time_pass(const sn_ctx *ctx, bufs *b, int training, int samples, double min_s) {
    double t[NSAMPLES];
    for (int s = 0; s < samples; s++) {
        long reps = 0;
        const double t0 = now();
        double t1 = t0;
        while (t1 - t0 < min_s) {
            if (pass(ctx, b, training)) return -1.0;
            reps++;
            t1 = now();
        }
        t[s] = (t1 - t0) / (double)reps;
    }
    for (int i = 1; i < samples; i++) /* insertion sort */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            const double x = t[j];
            t[j] = t[j - 1], t[j - 1] = x;
        }
    return t[samples / 2];
}

static int run(const sn_ctx *ctx, sn_placement pl, int quick) {
    static const int32_t depths[] = {2, 24, 96, 384, 1024};
    const int nd = quick ? 2 : (int)(sizeof depths / sizeof depths[0]);
    double base[2] = {0.0, 0.0};
    for (int d = 0; d < nd; d++) {
        bufs b;
        int64_t np, apr, wpr, spr;
        if (sn_net_init(&b.net, pl, depths[d], D, SN_NORM_LAYERNORM, 1e-5f) ||
            sn_net_sizes(&b.net, &np, &apr, &wpr) || sn_net_infer_sizes(&b.net, &spr)) {
            fprintf(stderr, "sn-net-calls: %s: setup failed\n", sn_placement_name(pl));
            return 1;
        }
        b.params = falloc(np), b.grads = falloc(np), b.acts = falloc(apr), b.work = falloc(wpr);
        b.state = falloc(spr), b.e = falloc(D), b.h = falloc(D), b.z = falloc(D);
        b.out = falloc(D), b.de = falloc(D);
        if (sn_net_init_params(&b.net, b.params)) return 1;
        for (int k = 0; k < D; k++) b.e[k] = (float)(k % 7) - 3.0f, b.z[k] = 0.01f;
        double us[2];
        for (int training = 0; training < 2; training++) {
            const double t =
                time_pass(ctx, &b, training, quick ? 1 : NSAMPLES, quick ? 1e-3 : 0.02);
            if (t < 0) {
                fprintf(stderr, "sn-net-calls: %s: a call failed\n", sn_placement_name(pl));
                return 1;
            }
            us[training] = t * 1e6 / depths[d];
            if (d == 0) base[training] = us[training];
        }
        printf("%-18s S = %4d   inference %7.2f us a sub-layer (%5.2fx S = 2's)   "
               "training %7.2f us (%5.2fx)\n",
               sn_placement_name(pl), depths[d], us[0], us[0] / base[0], us[1], us[1] / base[1]);
        fflush(stdout);
        free(b.params), free(b.grads), free(b.acts), free(b.work), free(b.state), free(b.e);
        free(b.h), free(b.z), free(b.out), free(b.de);
    }
    return 0;
}

int main(int argc, char **argv) {
    int quick = 0, first = 1;
    if (argc > 1 && !strcmp(argv[1], "--quick")) quick = 1, first = 2;
    sn_placement pls[SN_PLACEMENT_COUNT];
    int npl = 0;
    for (int a = first; a < argc; a++) {
        if (npl == SN_PLACEMENT_COUNT || sn_placement_from_name(argv[a], &pls[npl]) != SN_OK) {
            fprintf(stderr,
                    "usage: sn-net-calls [--quick] [PLACEMENT ...] (at most %d; names as "
                    "sn_placement_name gives them)\n",
                    SN_PLACEMENT_COUNT);
            return 2;
        }
        npl++;
    }
    if (npl == 0) {
        pls[npl++] = SN_PLACEMENT_PRE_NORM;
        pls[npl++] = SN_PLACEMENT_SIAMESE;
        pls[npl++] = SN_PLACEMENT_HYPER_CONN;
    }
    sn_ctx *ctx;
    if (sn_ctx_create(&ctx) || sn_ctx_set_threads(ctx, 1)) {
        fprintf(stderr, "sn-net-calls: no context\n");
        return 1;
    }
    printf("sn-net-calls: one row of D = %d, one thread, path %s; median of %d samples\n", D,
           sn_isa_name(sn_ctx_isa(ctx)), quick ? 1 : NSAMPLES);
    int rc = 0;
    for (int p = 0; p < npl && !rc; p++) rc = run(ctx, pls[p], quick);
    sn_ctx_destroy(ctx);
    return rc;
}
