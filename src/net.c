/* The placement layer: one description of a network's norm placement, and the same
 * split / enter / exit / merge calls (and their backwards) for every placement.
 *
 * What each placement keeps in acts (R x D "slots", then per-sub-layer statistics):
 *   Pre-Norm    slot k = x_k for k = 0..S                     (x_0 = e)
 *   Post-Norm   slot 0 = e, slot i+1 = t_i = x_i + z_i        (x_{i+1} = N_i(t_i) is recomputed
 *               from t_i and its saved statistics whenever it is needed)
 *   SiameseNorm slot 0 = e (= x_0 = y_0), slot i = x_i and slot S+i = y_i for i = 1..S;
 *               enter(i) writes u_i into x_{i+1}'s slot and exit(i) adds z_i / c_i to it.
 * work holds the stream gradients: dx (all placements), then dy (SiameseNorm). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "drive.h"

#define SN_MAX_SUBLAYERS (1 << 20)

/* A validated description with its sizes resolved. */
typedef struct netl {
    int placement;
    int64_t S, D;
    sn_norm norm;      /* Pre/Post: N_i and N_f */
    sn_fuse sub, mrg;  /* SiameseNorm: {N_post, N_pre, N_in} and {N_a, N_b, N_f} */
    int64_t p_sub;     /* parameters of one sub-layer */
    int64_t p_merge;   /* parameters of the merge */
    int64_t s_sub;     /* saved statistics per row of one sub-layer */
    int64_t s_merge;   /* ... of the merge */
    int64_t nslots;    /* R x D stream slots in acts */
    int64_t wslots;    /* R x D gradient slots in work */
} netl;

sn_status sn_net_check(const sn_net *net) {
    if (!net) return SN_ERR_NULL;
    if (net->placement < SN_PLACEMENT_PRE_NORM || net->placement > SN_PLACEMENT_SIAMESE)
        return SN_ERR_PLACEMENT;
    if (net->n_sublayers < 1 || net->n_sublayers > SN_MAX_SUBLAYERS) return SN_ERR_SHAPE;
    sn_status st = sn_check_dims(1, net->d);
    if (st == SN_OK) st = sn_check_norm(&net->norm, net->d, 0);
    if (st == SN_OK) st = sn_check_norm(&net->input_norm, net->d, 0);
    if (st != SN_OK) return st;
    if (net->flags != 0) return SN_ERR_CONFIG;
    for (size_t k = 0; k < sizeof net->reserved / sizeof net->reserved[0]; k++)
        if (net->reserved[k] != 0) return SN_ERR_CONFIG;
    switch (net->scale_rule) {
    case SN_SCALE_DEFAULT:
    case SN_SCALE_NONE:
        if (net->scales) return SN_ERR_CONFIG;
        break;
    case SN_SCALE_EXPLICIT:
        if (!net->scales) return SN_ERR_SCALE;
        for (int32_t i = 0; i < net->n_sublayers; i++)
            if (sn_check_scale(net->scales[i]) != SN_OK) return SN_ERR_SCALE;
        break;
    default:
        return SN_ERR_CONFIG;
    }
    return SN_OK;
}

sn_status sn_net_init(sn_net *net, sn_placement placement, int32_t n_sublayers, int64_t D,
                      sn_norm_kind kind, float eps) {
    if (!net) return SN_ERR_NULL;
    memset(net, 0, sizeof *net);
    net->placement = (int32_t)placement;
    net->n_sublayers = n_sublayers;
    net->d = D;
    net->norm.kind = (int32_t)kind;
    net->norm.affine = kind == SN_NORM_LAYERNORM ? SN_AFFINE_SCALE_SHIFT
                       : kind == SN_NORM_RMSNORM ? SN_AFFINE_SCALE
                                                 : SN_AFFINE_NONE;
    net->norm.group = 0;
    net->norm.eps = eps;
    net->input_norm = net->norm;
    net->scale_rule = SN_SCALE_DEFAULT;
    net->scales = NULL;
    return sn_net_check(net);
}

static sn_status resolve(const sn_net *net, netl *L) {
    sn_status st = sn_net_check(net);
    if (st != SN_OK) return st;
    memset(L, 0, sizeof *L);
    L->placement = net->placement;
    L->S = net->n_sublayers;
    L->D = net->d;
    L->norm = net->norm;
    L->sub.x = L->sub.y = L->mrg.x = L->mrg.y = L->mrg.out = net->norm;
    L->sub.out = net->input_norm;
    const int64_t S = L->S, D = L->D;
    const int64_t np = sn_norm_nparams(&L->norm, D), spr = sn_norm_spr(&L->norm, D);
    switch (L->placement) {
    case SN_PLACEMENT_PRE_NORM:
        L->p_sub = L->p_merge = np;
        L->s_sub = L->s_merge = spr;
        L->nslots = S + 1;
        L->wslots = 1;
        break;
    case SN_PLACEMENT_POST_NORM:
        L->p_sub = np;
        L->s_sub = spr;
        L->nslots = S + 1;
        L->wslots = 1;
        break;
    default: /* SN_PLACEMENT_SIAMESE */
        sn_fuse_query(&L->sub, D, &L->p_sub, &L->s_sub);
        sn_fuse_query(&L->mrg, D, &L->p_merge, &L->s_merge);
        L->nslots = 2 * S + 1;
        L->wslots = 2;
        break;
    }
    return SN_OK;
}

static int64_t n_params(const netl *L) { return L->S * L->p_sub + L->p_merge; }
static int64_t acts_per_row(const netl *L) {
    return L->nslots * L->D + L->S * L->s_sub + L->s_merge;
}

sn_status sn_net_sizes(const sn_net *net, int64_t *np, int64_t *apr, int64_t *wpr) {
    netl L;
    sn_status st = resolve(net, &L);
    if (st != SN_OK) return st;
    if (np) *np = n_params(&L);
    if (apr) *apr = acts_per_row(&L);
    if (wpr) *wpr = L.wslots * L.D;
    return SN_OK;
}

static float scale_of(const sn_net *net, int64_t i) {
    if (net->placement != SN_PLACEMENT_SIAMESE) return 1.0f;
    switch (net->scale_rule) {
    case SN_SCALE_NONE: return 1.0f;
    case SN_SCALE_EXPLICIT: return net->scales[i];
    default: return sqrtf((float)(2 * (i / 2 + 1)));
    }
}

sn_status sn_net_scale(const sn_net *net, int32_t i, float *c) {
    netl L;
    sn_status st = resolve(net, &L);
    if (st != SN_OK) return st;
    if (!c) return SN_ERR_NULL;
    if (i < 0 || i >= L.S) return SN_ERR_INDEX;
    *c = scale_of(net, i);
    return SN_OK;
}

sn_status sn_net_norm_at(const sn_net *net, int32_t i, int32_t j, sn_norm *norm,
                         int64_t *offset) {
    netl L;
    sn_status st = resolve(net, &L);
    if (st != SN_OK) return st;
    if (i < 0 || i > L.S || j < 0) return SN_ERR_INDEX;
    const sn_norm *found = NULL;
    int64_t off = i * L.p_sub;
    if (L.placement == SN_PLACEMENT_SIAMESE) {
        const sn_fuse *f = i < L.S ? &L.sub : &L.mrg;
        const sn_norm *ns[3] = {&f->x, &f->y, &f->out};
        if (j < 3) {
            for (int32_t k = 0; k < j; k++) off += sn_norm_nparams(ns[k], L.D);
            found = ns[j];
        }
    } else if (j == 0 && (i < L.S || L.placement == SN_PLACEMENT_PRE_NORM)) {
        found = &L.norm;
    }
    if (!found) return SN_ERR_INDEX;
    if (norm) *norm = *found;
    if (offset) *offset = off;
    return SN_OK;
}

sn_status sn_net_init_params(const sn_net *net, float *params) {
    netl L;
    sn_status st = resolve(net, &L);
    if (st != SN_OK) return st;
    if (n_params(&L) > 0 && !params) return SN_ERR_NULL;
    sn_norm n;
    int64_t off;
    for (int32_t i = 0; i <= L.S; i++)
        for (int32_t j = 0; sn_net_norm_at(net, i, j, &n, &off) == SN_OK; j++)
            sn_norm_init_params(&n, L.D, params + off);
    return SN_OK;
}

/* ---- shared plumbing of the pass calls -------------------------------------------------------- */

/* Everything a pass call needs, resolved and validated. */
typedef struct pass {
    netl L;
    int64_t R;
    const float *params;
    float *acts; /* const in backward calls: only read there */
    float *grads;
    float *work;
} pass;

/* Validates the common arguments of a pass call and the aliasing between the network's own
 * buffers and the caller's matrices (mats: up to 2 views; which are written is in mat_w). */
static sn_status begin(pass *P, const sn_net *net, int64_t R, const float *params,
                       const float *acts, int acts_w, float *grads, const float *work, int work_w,
                       const float *const *mats, const int64_t *lds, const int *mat_w,
                       int nmats) {
    sn_status st = resolve(net, &P->L);
    if (st != SN_OK) return st;
    const netl *L = &P->L;
    st = sn_check_dims(R, L->D);
    if (st == SN_OK) st = sn_check_dims(R, acts_per_row(L));
    if (st != SN_OK) return st;
    for (int k = 0; k < nmats; k++) {
        st = sn_check_mat(mats[k], R, L->D, lds[k]);
        if (st != SN_OK) return st;
    }
    const int64_t np = n_params(L);
    if (!acts || (np > 0 && !params)) return SN_ERR_NULL;
    sn_buf bufs[6];
    int n = 0;
    bufs[n++] = sn_vec_buf(params, np, 0);
    bufs[n++] = sn_vec_buf(acts, R * acts_per_row(L), acts_w);
    bufs[n++] = sn_vec_buf(grads, np, 1);
    bufs[n++] = sn_vec_buf(work, R * L->wslots * L->D, work_w);
    for (int k = 0; k < nmats; k++) bufs[n++] = sn_mat_buf(mats[k], R, L->D, lds[k], mat_w[k], 0);
    st = sn_check_alias(bufs, n);
    if (st != SN_OK) return st;
    P->R = R;
    P->params = params;
    P->acts = (float *)acts;
    P->grads = grads;
    P->work = (float *)work;
    return SN_OK;
}

static sn_status check_index(const pass *P, int32_t i) {
    return (i < 0 || i >= P->L.S) ? SN_ERR_INDEX : SN_OK;
}

/* Slot k of acts (R x D, row stride D). */
static float *slot(const pass *P, int64_t k) { return P->acts + k * P->R * P->L.D; }
/* Saved statistics of sub-layer i (i == S: the merge), R rows of s_sub (s_merge) floats. */
static float *stats_of(const pass *P, int64_t i) {
    return P->acts + P->L.nslots * P->R * P->L.D + i * P->R * P->L.s_sub;
}
static const float *params_of(const pass *P, int64_t i) {
    return P->params ? P->params + i * P->L.p_sub : NULL;
}
static float *grads_of(const pass *P, int64_t i) {
    return P->grads ? P->grads + i * P->L.p_sub : NULL;
}
/* The SiameseNorm streams x_i, y_i (slot 0 holds e = x_0 = y_0). */
static float *xs(const pass *P, int64_t i) { return slot(P, i); }
static float *ys(const pass *P, int64_t i) { return slot(P, i ? P->L.S + i : 0); }
/* Work slots: dx, dy. */
static float *dxw(const pass *P) { return P->work; }
static float *dyw(const pass *P) { return P->work + P->R * P->L.D; }

/* Post-Norm: x_i into out (x_0 = e; x_i = N_{i-1}(t_{i-1}) from saved statistics). */
static void post_x(const sn_ctx *ctx, const pass *P, int64_t i, float *out, int64_t ldo) {
    const int64_t R = P->R, D = P->L.D;
    if (i == 0)
        sn_d_copy(ctx, R, D, slot(P, 0), D, out, ldo);
    else
        sn_d_norm_apply(ctx, &P->L.norm, R, D, slot(P, i), D, params_of(P, i - 1),
                        stats_of(P, i - 1), out, ldo);
}

/* ---- forward ------------------------------------------------------------------------------- */

sn_status sn_net_split(const sn_ctx *ctx, const sn_net *net, int64_t R, const float *e,
                       int64_t lde, const float *params, float *acts) {
    pass P;
    const float *m[] = {e};
    const int64_t ld[] = {lde};
    const int w[] = {0};
    sn_status st = begin(&P, net, R, params, acts, 1, NULL, NULL, 0, m, ld, w, 1);
    if (st != SN_OK) return st;
    sn_d_copy(ctx, R, P.L.D, e, lde, slot(&P, 0), P.L.D);
    return SN_OK;
}

sn_status sn_net_enter(const sn_ctx *ctx, const sn_net *net, int32_t i, int64_t R,
                       const float *params, float *acts, float *h, int64_t ldh) {
    pass P;
    const float *m[] = {h};
    const int64_t ld[] = {ldh};
    const int w[] = {1};
    sn_status st = begin(&P, net, R, params, acts, 1, NULL, NULL, 0, m, ld, w, 1);
    if (st == SN_OK) st = check_index(&P, i);
    if (st != SN_OK) return st;
    const int64_t D = P.L.D;
    switch (P.L.placement) {
    case SN_PLACEMENT_PRE_NORM:
        sn_d_norm_fwd(ctx, &P.L.norm, R, D, slot(&P, i), D, params_of(&P, i), h, ldh,
                      stats_of(&P, i));
        break;
    case SN_PLACEMENT_POST_NORM:
        post_x(ctx, &P, i, h, ldh);
        break;
    default: /* u_i goes into x_{i+1}'s slot, where exit(i) completes it */
        sn_d_fuse_fwd(ctx, &P.L.sub, R, D, xs(&P, i), D, ys(&P, i), D, params_of(&P, i),
                      xs(&P, i + 1), D, h, ldh, stats_of(&P, i));
        break;
    }
    return SN_OK;
}

sn_status sn_net_exit(const sn_ctx *ctx, const sn_net *net, int32_t i, int64_t R, const float *z,
                      int64_t ldz, const float *params, float *acts) {
    pass P;
    const float *m[] = {z};
    const int64_t ld[] = {ldz};
    const int w[] = {0};
    sn_status st = begin(&P, net, R, params, acts, 1, NULL, NULL, 0, m, ld, w, 1);
    if (st == SN_OK) st = check_index(&P, i);
    if (st != SN_OK) return st;
    const int64_t D = P.L.D;
    switch (P.L.placement) {
    case SN_PLACEMENT_PRE_NORM:
        sn_d_add_div(ctx, R, D, slot(&P, i), D, z, ldz, 1.0f, slot(&P, i + 1), D, 0);
        break;
    case SN_PLACEMENT_POST_NORM: {
        /* t_i = x_i + z_i, and the statistics of N_i(t_i) */
        float *t = slot(&P, i + 1);
        post_x(ctx, &P, i, t, D);
        sn_d_add_div(ctx, R, D, t, D, z, ldz, 1.0f, t, D, 0);
        sn_d_norm_stats(ctx, &P.L.norm, R, D, t, D, stats_of(&P, i));
        break;
    }
    default:
        sn_d_apply(ctx, R, D, scale_of(net, i), z, ldz, xs(&P, i + 1), D, ys(&P, i), D,
                   xs(&P, i + 1), D, ys(&P, i + 1), D);
        break;
    }
    return SN_OK;
}

sn_status sn_net_merge(const sn_ctx *ctx, const sn_net *net, int64_t R, const float *params,
                       float *acts, float *out, int64_t ldo) {
    pass P;
    const float *m[] = {out};
    const int64_t ld[] = {ldo};
    const int w[] = {1};
    sn_status st = begin(&P, net, R, params, acts, 1, NULL, NULL, 0, m, ld, w, 1);
    if (st != SN_OK) return st;
    const int64_t D = P.L.D, S = P.L.S;
    switch (P.L.placement) {
    case SN_PLACEMENT_PRE_NORM:
        sn_d_norm_fwd(ctx, &P.L.norm, R, D, slot(&P, S), D, params_of(&P, S), out, ldo,
                      stats_of(&P, S));
        break;
    case SN_PLACEMENT_POST_NORM:
        post_x(ctx, &P, S, out, ldo);
        break;
    default:
        sn_d_fuse_fwd(ctx, &P.L.mrg, R, D, xs(&P, S), D, ys(&P, S), D, params_of(&P, S), NULL, 0,
                      out, ldo, stats_of(&P, S));
        break;
    }
    return SN_OK;
}

/* ---- backward ------------------------------------------------------------------------------ */

sn_status sn_net_merge_backward(const sn_ctx *ctx, const sn_net *net, int64_t R,
                                const float *dout, int64_t lddo, const float *params,
                                const float *acts, float *grads, float *work) {
    pass P;
    const float *m[] = {dout};
    const int64_t ld[] = {lddo};
    const int w[] = {0};
    if (!work) return SN_ERR_NULL;
    sn_status st = begin(&P, net, R, params, acts, 0, grads, work, 1, m, ld, w, 1);
    if (st != SN_OK) return st;
    const int64_t D = P.L.D, S = P.L.S;
    switch (P.L.placement) {
    case SN_PLACEMENT_PRE_NORM:
        sn_d_norm_bwd(ctx, &P.L.norm, R, D, dout, lddo, slot(&P, S), D, params_of(&P, S),
                      stats_of(&P, S), dxw(&P), D, grads_of(&P, S), 0);
        break;
    case SN_PLACEMENT_POST_NORM:
        sn_d_copy(ctx, R, D, dout, lddo, dxw(&P), D);
        break;
    default:
        sn_d_fuse_bwd(ctx, &P.L.mrg, R, D, dout, lddo, NULL, 0, xs(&P, S), D, ys(&P, S), D,
                      params_of(&P, S), stats_of(&P, S), dxw(&P), D, dyw(&P), D, grads_of(&P, S),
                      0);
        break;
    }
    return SN_OK;
}

sn_status sn_net_exit_backward(const sn_ctx *ctx, const sn_net *net, int32_t i, int64_t R,
                               const float *params, const float *acts, float *grads, float *work,
                               float *dz, int64_t lddz, uint32_t flags) {
    pass P;
    const float *m[] = {dz};
    const int64_t ld[] = {lddz};
    const int w[] = {1};
    if (!work) return SN_ERR_NULL;
    sn_status st = begin(&P, net, R, params, acts, 0, grads, work, 1, m, ld, w, 1);
    if (st == SN_OK) st = check_index(&P, i);
    if (st == SN_OK && (flags & ~SN_ACCUMULATE)) st = SN_ERR_FLAGS;
    if (st != SN_OK) return st;
    const int64_t D = P.L.D;
    const int acc = (flags & SN_ACCUMULATE) != 0;
    if (P.L.placement == SN_PLACEMENT_SIAMESE) {
        sn_d_add_div(ctx, R, D, dyw(&P), D, dxw(&P), D, scale_of(net, i), dz, lddz, acc);
        return SN_OK;
    }
    /* Post-Norm first takes dx_{i+1} back through N_i, in place: dt_i */
    if (P.L.placement == SN_PLACEMENT_POST_NORM)
        sn_d_norm_bwd(ctx, &P.L.norm, R, D, dxw(&P), D, slot(&P, i + 1), D, params_of(&P, i),
                      stats_of(&P, i), dxw(&P), D, grads_of(&P, i), 0);
    if (acc)
        sn_d_add_div(ctx, R, D, dz, lddz, dxw(&P), D, 1.0f, dz, lddz, 0);
    else
        sn_d_copy(ctx, R, D, dxw(&P), D, dz, lddz);
    return SN_OK;
}

sn_status sn_net_enter_backward(const sn_ctx *ctx, const sn_net *net, int32_t i, int64_t R,
                                const float *dh, int64_t lddh, const float *params,
                                const float *acts, float *grads, float *work) {
    pass P;
    const float *m[] = {dh};
    const int64_t ld[] = {lddh};
    const int w[] = {0};
    if (!work) return SN_ERR_NULL;
    sn_status st = begin(&P, net, R, params, acts, 0, grads, work, 1, m, ld, w, 1);
    if (st == SN_OK) st = check_index(&P, i);
    if (st != SN_OK) return st;
    const int64_t D = P.L.D;
    switch (P.L.placement) {
    case SN_PLACEMENT_PRE_NORM:
        sn_d_norm_bwd(ctx, &P.L.norm, R, D, dh, lddh, slot(&P, i), D, params_of(&P, i),
                      stats_of(&P, i), dxw(&P), D, grads_of(&P, i), 1);
        break;
    case SN_PLACEMENT_POST_NORM:
        sn_d_add_div(ctx, R, D, dxw(&P), D, dh, lddh, 1.0f, dxw(&P), D, 0);
        break;
    default: /* dx_i = N_post backward of (dx_{i+1} + ds), in place; dy_i = dy_{i+1} + ... */
        sn_d_fuse_bwd(ctx, &P.L.sub, R, D, dh, lddh, dxw(&P), D, xs(&P, i), D, ys(&P, i), D,
                      params_of(&P, i), stats_of(&P, i), dxw(&P), D, dyw(&P), D, grads_of(&P, i),
                      SN_ACCUMULATE_Y);
        break;
    }
    return SN_OK;
}

sn_status sn_net_split_backward(const sn_ctx *ctx, const sn_net *net, int64_t R,
                                const float *params, const float *acts, float *grads,
                                const float *work, float *de, int64_t ldde, uint32_t flags) {
    pass P;
    const float *m[] = {de};
    const int64_t ld[] = {ldde};
    const int w[] = {1};
    if (!work) return SN_ERR_NULL;
    sn_status st = begin(&P, net, R, params, acts, 0, grads, work, 0, m, ld, w, 1);
    if (st == SN_OK && (flags & ~SN_ACCUMULATE)) st = SN_ERR_FLAGS;
    if (st != SN_OK) return st;
    const int64_t D = P.L.D;
    const int acc = (flags & SN_ACCUMULATE) != 0;
    if (P.L.placement == SN_PLACEMENT_SIAMESE)
        sn_d_add_div(ctx, R, D, dxw(&P), D, dyw(&P), D, 1.0f, de, ldde, acc);
    else if (acc)
        sn_d_add_div(ctx, R, D, de, ldde, dxw(&P), D, 1.0f, de, ldde, 0);
    else
        sn_d_copy(ctx, R, D, dxw(&P), D, de, ldde);
    return SN_OK;
}
