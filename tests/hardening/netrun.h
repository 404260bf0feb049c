/* One forward and backward pass of a whole network through the placement layer, with a toy
 * row-wise block z = 0.5 * tanh(h) + 0.1 * h (so rows never mix: a row's outputs depend on that
 * row's inputs only). Used by the determinism and non-finite tests. */
#ifndef SN_NETRUN_H
#define SN_NETRUN_H

#include "testutil.h"

typedef struct netrun {
    sn_net net;
    int64_t R, np, apr, wpr;
    float *params, *grads, *acts, *work, *h, *z, *out, *dout, *dz, *dh, *de;
} netrun;

/* Allocates and fills the buffers: params perturbed from the defaults, dout pseudo-random. */
static inline int netrun_init(netrun *n, sn_placement pl, int S, int64_t D, int64_t R,
                              sn_norm_kind kind, uint64_t seed) {
    memset(n, 0, sizeof *n);
    if (sn_net_init(&n->net, pl, S, D, kind, 1e-5f) != SN_OK ||
        sn_net_sizes(&n->net, &n->np, &n->apr, &n->wpr) != SN_OK)
        return -1;
    n->R = R;
    n->params = tu_fzeros(n->np);
    n->grads = tu_fzeros(n->np);
    n->acts = tu_fzeros(R * n->apr);
    n->work = tu_fzeros(R * n->wpr);
    n->h = tu_fzeros((int64_t)S * R * D);
    n->z = tu_fzeros(R * D);
    n->out = tu_fzeros(R * D);
    n->dout = tu_fzeros(R * D);
    n->dz = tu_fzeros(R * D);
    n->dh = tu_fzeros(R * D);
    n->de = tu_fzeros(R * D);
    tu_rng g = {seed};
    if (sn_net_init_params(&n->net, n->params) != SN_OK) return -1;
    for (int64_t k = 0; k < n->np; k++) n->params[k] += (float)(0.1 * tu_unif(&g, -1.0, 1.0));
    for (int64_t k = 0; k < R * D; k++) n->dout[k] = (float)tu_unif(&g, -1.0, 1.0);
    return 0;
}

static inline void netrun_free(netrun *n) {
    free(n->params), free(n->grads), free(n->acts), free(n->work), free(n->h), free(n->z);
    free(n->out), free(n->dout), free(n->dz), free(n->dh), free(n->de);
}

static inline void netrun_block(int64_t len, const float *h, float *z) {
    for (int64_t k = 0; k < len; k++) z[k] = 0.5f * tanhf(h[k]) + 0.1f * h[k];
}

static inline void netrun_block_bwd(int64_t len, const float *h, const float *dz, float *dh) {
    for (int64_t k = 0; k < len; k++) {
        float t = tanhf(h[k]);
        dh[k] = dz[k] * (0.5f * (1.0f - t * t) + 0.1f);
    }
}

/* Forward from e (R x D, contiguous) and backward from n->dout; returns the first non-OK
 * status. Results: out, grads (zeroed first), de. */
static inline sn_status netrun_pass(const sn_ctx *ctx, netrun *n, const float *e) {
    const sn_net *net = &n->net;
    int64_t R = n->R, D = net->d, RD = R * D;
    int S = net->n_sublayers;
    sn_status st;
    memset(n->grads, 0, (size_t)n->np * sizeof(float));
#define NR_TRY(call)                                                                               \
    do {                                                                                           \
        if ((st = (call)) != SN_OK) return st;                                                     \
    } while (0)
    const sn_net_pass pass = {R, n->params, n->acts, n->grads, n->work};
    NR_TRY(sn_net_split(ctx, net, &pass, e, D));
    for (int i = 0; i < S; i++) {
        NR_TRY(sn_net_enter(ctx, net, &pass, i, n->h + i * RD, D));
        netrun_block(RD, n->h + i * RD, n->z);
        NR_TRY(sn_net_exit(ctx, net, &pass, i, n->z, D));
    }
    NR_TRY(sn_net_merge(ctx, net, &pass, n->out, D));
    NR_TRY(sn_net_merge_backward(ctx, net, &pass, n->dout, D));
    for (int i = S - 1; i >= 0; i--) {
        NR_TRY(sn_net_exit_backward(ctx, net, &pass, i, n->dz, D, 0));
        netrun_block_bwd(RD, n->h + i * RD, n->dz, n->dh);
        NR_TRY(sn_net_enter_backward(ctx, net, &pass, i, n->dh, D));
    }
    NR_TRY(sn_net_split_backward(ctx, net, &pass, n->de, D, 0));
#undef NR_TRY
    return SN_OK;
}

#endif
