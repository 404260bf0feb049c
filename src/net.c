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
#include "kernels.h"

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

/* Post-Norm: row r of x_i into out (x_0 = e; x_i = N_{i-1}(t_{i-1}) from saved statistics). */
static void post_x_row(const pass *P, int64_t i, int64_t r, float *out) {
    const int64_t D = P->L.D;
    if (i == 0) {
        memcpy(out, slot(P, 0) + r * D, (size_t)D * sizeof(float));
        return;
    }
    float m, rs;
    sn_k_stats_get(&P->L.norm, stats_of(P, i - 1) + r * P->L.s_sub, 1, 0, &m, &rs);
    sn_rnorm q = sn_k_resolve(&P->L.norm, D, params_of(P, i - 1), m, rs);
    sn_k_norm_row(&q, slot(P, i) + r * D, D, out);
}

/* Pre/Post-Norm: one norm over R rows of src (row stride D), with the sub-layer's statistics. */
static void norm_rows_fwd(const pass *P, int64_t i, const float *src, float *out, int64_t ldo) {
    const int64_t D = P->L.D, spr = (i < P->L.S) ? P->L.s_sub : P->L.s_merge;
    for (int64_t r = 0; r < P->R; r++) {
        float m, rs, *st = stats_of(P, i) + r * spr;
        sn_k_stats(&P->L.norm, src + r * D, D, &m, &rs);
        sn_rnorm q = sn_k_resolve(&P->L.norm, D, params_of(P, i), m, rs);
        sn_k_norm_row(&q, src + r * D, D, out + r * ldo);
        sn_k_stats_put(&P->L.norm, st, 1, 0, m, rs);
    }
}

/* Pre/Post-Norm backward of that norm: dv (=|+=) N backward of dout, parameter gradients +=. */
static void norm_rows_bwd(const pass *P, int64_t i, const float *dout, int64_t lddo,
                          const float *src, float *dv, int acc) {
    const int64_t D = P->L.D, spr = (i < P->L.S) ? P->L.s_sub : P->L.s_merge;
    float *g = grads_of(P, i);
    sn_rnorm dp = g ? sn_k_resolve(&P->L.norm, D, g, 0, 0) : (sn_rnorm){0};
    for (int64_t r = 0; r < P->R; r++) {
        float m, rs;
        sn_k_stats_get(&P->L.norm, stats_of(P, i) + r * spr, 1, 0, &m, &rs);
        sn_rnorm q = sn_k_resolve(&P->L.norm, D, params_of(P, i), m, rs);
        sn_k_norm_bwd_row(&q, dout + r * lddo, src + r * D, D, dv + r * D, acc,
                          (float *)dp.gamma, (float *)dp.beta);
    }
}

/* ---- forward ------------------------------------------------------------------------------- */

sn_status sn_net_split(const sn_ctx *ctx, const sn_net *net, int64_t R, const float *e,
                       int64_t lde, const float *params, float *acts) {
    (void)ctx;
    pass P;
    const float *m[] = {e};
    const int64_t ld[] = {lde};
    const int w[] = {0};
    sn_status st = begin(&P, net, R, params, acts, 1, NULL, NULL, 0, m, ld, w, 1);
    if (st != SN_OK) return st;
    const int64_t D = P.L.D;
    for (int64_t r = 0; r < R; r++)
        memcpy(slot(&P, 0) + r * D, e + r * lde, (size_t)D * sizeof(float));
    return SN_OK;
}

sn_status sn_net_enter(const sn_ctx *ctx, const sn_net *net, int32_t i, int64_t R,
                       const float *params, float *acts, float *h, int64_t ldh) {
    (void)ctx;
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
        norm_rows_fwd(&P, i, slot(&P, i), h, ldh);
        break;
    case SN_PLACEMENT_POST_NORM:
        for (int64_t r = 0; r < R; r++) post_x_row(&P, i, r, h + r * ldh);
        break;
    default:
        for (int64_t r = 0; r < R; r++)
            sn_k_fuse_fwd_row(&P.L.sub, D, xs(&P, i) + r * D, ys(&P, i) + r * D, params_of(&P, i),
                              xs(&P, i + 1) + r * D, h + r * ldh, stats_of(&P, i) + r * P.L.s_sub);
        break;
    }
    return SN_OK;
}

sn_status sn_net_exit(const sn_ctx *ctx, const sn_net *net, int32_t i, int64_t R, const float *z,
                      int64_t ldz, const float *params, float *acts) {
    (void)ctx;
    pass P;
    const float *m[] = {z};
    const int64_t ld[] = {ldz};
    const int w[] = {0};
    sn_status st = begin(&P, net, R, params, acts, 1, NULL, NULL, 0, m, ld, w, 1);
    if (st == SN_OK) st = check_index(&P, i);
    if (st != SN_OK) return st;
    const int64_t D = P.L.D;
    for (int64_t r = 0; r < R; r++) {
        const float *zr = z + r * ldz;
        switch (P.L.placement) {
        case SN_PLACEMENT_PRE_NORM:
            sn_k_add_div_row(slot(&P, i) + r * D, zr, 1.0f, slot(&P, i + 1) + r * D, D, 0);
            break;
        case SN_PLACEMENT_POST_NORM: {
            /* t_i = x_i + z_i, and the statistics of N_i(t_i) */
            float *t = slot(&P, i + 1) + r * D, mm, rs;
            post_x_row(&P, i, r, t);
            sn_k_add_div_row(t, zr, 1.0f, t, D, 0);
            sn_k_stats(&P.L.norm, t, D, &mm, &rs);
            sn_k_stats_put(&P.L.norm, stats_of(&P, i) + r * P.L.s_sub, 1, 0, mm, rs);
            break;
        }
        default: {
            float *x1 = xs(&P, i + 1) + r * D; /* holds u_i */
            sn_k_add_div_row(x1, zr, scale_of(net, i), x1, D, 0);
            sn_k_add_div_row(ys(&P, i) + r * D, zr, 1.0f, ys(&P, i + 1) + r * D, D, 0);
            break;
        }
        }
    }
    return SN_OK;
}

sn_status sn_net_merge(const sn_ctx *ctx, const sn_net *net, int64_t R, const float *params,
                       float *acts, float *out, int64_t ldo) {
    (void)ctx;
    pass P;
    const float *m[] = {out};
    const int64_t ld[] = {ldo};
    const int w[] = {1};
    sn_status st = begin(&P, net, R, params, acts, 1, NULL, NULL, 0, m, ld, w, 1);
    if (st != SN_OK) return st;
    const int64_t D = P.L.D, S = P.L.S;
    switch (P.L.placement) {
    case SN_PLACEMENT_PRE_NORM:
        norm_rows_fwd(&P, S, slot(&P, S), out, ldo);
        break;
    case SN_PLACEMENT_POST_NORM:
        for (int64_t r = 0; r < R; r++) post_x_row(&P, S, r, out + r * ldo);
        break;
    default:
        for (int64_t r = 0; r < R; r++)
            sn_k_fuse_fwd_row(&P.L.mrg, D, xs(&P, S) + r * D, ys(&P, S) + r * D,
                              params_of(&P, S), NULL, out + r * ldo,
                              stats_of(&P, S) + r * P.L.s_merge);
        break;
    }
    return SN_OK;
}

/* ---- backward ------------------------------------------------------------------------------ */

sn_status sn_net_merge_backward(const sn_ctx *ctx, const sn_net *net, int64_t R,
                                const float *dout, int64_t lddo, const float *params,
                                const float *acts, float *grads, float *work) {
    (void)ctx;
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
        norm_rows_bwd(&P, S, dout, lddo, slot(&P, S), dxw(&P), 0);
        break;
    case SN_PLACEMENT_POST_NORM:
        for (int64_t r = 0; r < R; r++)
            memcpy(dxw(&P) + r * D, dout + r * lddo, (size_t)D * sizeof(float));
        break;
    default:
        for (int64_t r = 0; r < R; r++)
            sn_k_fuse_bwd_row(&P.L.mrg, D, dout + r * lddo, NULL, xs(&P, S) + r * D,
                              ys(&P, S) + r * D, params_of(&P, S),
                              stats_of(&P, S) + r * P.L.s_merge, dxw(&P) + r * D,
                              dyw(&P) + r * D, grads_of(&P, S), 0);
        break;
    }
    return SN_OK;
}

sn_status sn_net_exit_backward(const sn_ctx *ctx, const sn_net *net, int32_t i, int64_t R,
                               const float *params, const float *acts, float *grads, float *work,
                               float *dz, int64_t lddz, uint32_t flags) {
    (void)ctx;
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
    /* Post-Norm first takes dx_{i+1} back through N_i, in place: dt_i */
    if (P.L.placement == SN_PLACEMENT_POST_NORM)
        norm_rows_bwd(&P, i, dxw(&P), D, slot(&P, i + 1), dxw(&P), 0);
    for (int64_t r = 0; r < R; r++) {
        const float *dx = dxw(&P) + r * D;
        float *dst = dz + r * lddz;
        if (P.L.placement == SN_PLACEMENT_SIAMESE)
            sn_k_add_div_row(dyw(&P) + r * D, dx, scale_of(net, i), dst, D, acc);
        else
            for (int64_t j = 0; j < D; j++) dst[j] = acc ? dst[j] + dx[j] : dx[j];
    }
    return SN_OK;
}

sn_status sn_net_enter_backward(const sn_ctx *ctx, const sn_net *net, int32_t i, int64_t R,
                                const float *dh, int64_t lddh, const float *params,
                                const float *acts, float *grads, float *work) {
    (void)ctx;
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
        norm_rows_bwd(&P, i, dh, lddh, slot(&P, i), dxw(&P), 1);
        break;
    case SN_PLACEMENT_POST_NORM:
        for (int64_t r = 0; r < R; r++) sn_k_add_div_row(dxw(&P) + r * D, dh + r * lddh, 1.0f,
                                                         dxw(&P) + r * D, D, 0);
        break;
    default:
        for (int64_t r = 0; r < R; r++)
            sn_k_fuse_bwd_row(&P.L.sub, D, dh + r * lddh, dxw(&P) + r * D, xs(&P, i) + r * D,
                              ys(&P, i) + r * D, params_of(&P, i), stats_of(&P, i) + r * P.L.s_sub,
                              dxw(&P) + r * D, dyw(&P) + r * D, grads_of(&P, i), SN_ACCUMULATE_Y);
        break;
    }
    return SN_OK;
}

sn_status sn_net_split_backward(const sn_ctx *ctx, const sn_net *net, int64_t R,
                                const float *params, const float *acts, float *grads,
                                const float *work, float *de, int64_t ldde, uint32_t flags) {
    (void)ctx;
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
    for (int64_t r = 0; r < R; r++) {
        const float *dx = dxw(&P) + r * D;
        float *dst = de + r * ldde;
        if (P.L.placement == SN_PLACEMENT_SIAMESE)
            sn_k_add_div_row(dx, dyw(&P) + r * D, 1.0f, dst, D, acc);
        else
            for (int64_t j = 0; j < D; j++) dst[j] = acc ? dst[j] + dx[j] : dx[j];
    }
    return SN_OK;
}
