/* The placement layer: one description of a network's norm placement, and the same
 * split / enter / exit / merge calls (and their backwards) for every placement.
 *
 * Each placement is a choice of ops per sub-layer, and each stage's place in params, acts and
 * the statistics planes follows from the stages before it: both in net_layout.h, which a
 * call resolves its stage through (sn_net_stage).
 * work holds the stream gradients, one slot per stream (dx, then dy; SpanNorm two; OP_HC n and
 * two rows for h0 and its gradient). The SiameseNorm family's sub-layers are the two-stream
 * case with fixed connections (x and y mixed only through their norms), Hyper-Connections' the
 * n-stream case with learned ones (no norms between the streams). */
#include <math.h>
#include <string.h>

#include "drive.h"
#include "finite.h"
#include "net_layout.h"

#define SN_MAX_SUBLAYERS (1 << 10) /* the largest S tested (tests/test_net_deep.c) */
/* every placement the header names is handled here (a new one: SN_PLACEMENT_COUNT + 1) */
_Static_assert(SN_PLACEMENT_HYPER_CONN + 1 == SN_PLACEMENT_COUNT,
               "SN_PLACEMENT_COUNT ends at the last placement of the header");

sn_status sn_net_check(const sn_net *net) {
    if (!net) return SN_ERR_NULL;
    if (net->placement < SN_PLACEMENT_PRE_NORM || net->placement >= SN_PLACEMENT_COUNT)
        return SN_ERR_PLACEMENT;
    if (net->n_sublayers < 1 || net->n_sublayers > SN_MAX_SUBLAYERS) return SN_ERR_SHAPE;
    sn_status st = sn_check_dims(1, net->d);
    /* Every size derived below stays representable: a stage keeps at most 3D + 8 floats per
     * row and has at most 6D parameters, and there are S + 2 stages. */
    if (st == SN_OK && (int64_t)net->n_sublayers + 2 > SN_MAX_FLOATS / 8 / (net->d + 1))
        st = SN_ERR_SHAPE;
    /* Hyper-Connections: at most (n + 2) D + 100 floats per row and (n + 4) D + 82 parameters a
     * stage, n <= 8 */
    if (st == SN_OK && net->placement == SN_PLACEMENT_HYPER_CONN &&
        (int64_t)net->n_sublayers + 2 > SN_MAX_FLOATS / 16 / (net->d + 8))
        st = SN_ERR_SHAPE;
    if (st == SN_OK) st = sn_check_norm(&net->norm, net->d, 0);
    if (st == SN_OK) st = sn_check_norm(&net->input_norm, net->d, 0);
    if (st != SN_OK) return st;
    if (net->flags != 0 || net->act_dtype >= SN_DTYPE_COUNT) return SN_ERR_CONFIG;
    for (size_t k = 0; k < sizeof net->reserved / sizeof net->reserved[0]; k++)
        if (net->reserved[k] != 0) return SN_ERR_CONFIG;
    if (net->placement == SN_PLACEMENT_HYPER_CONN) {
        if (net->hc_rate < 1 || net->hc_rate > SN_HC_MAX_RATE) return SN_ERR_STREAMS;
        if (net->hc_dynamic > 1) return SN_ERR_CONFIG;
    } else if (net->hc_rate != 0 || net->hc_dynamic != 0) {
        return SN_ERR_CONFIG;
    }
    if (net->placement == SN_PLACEMENT_MIX_LN) {
        if (!(net->mix_fraction >= 0.0f && net->mix_fraction <= 1.0f)) return SN_ERR_CONFIG;
    } else if (net->mix_fraction != 0.0f) {
        return SN_ERR_CONFIG;
    }
    switch (net->scale_rule) {
    case SN_SCALE_DEFAULT:
    case SN_SCALE_NONE:
        if (net->scales) return SN_ERR_CONFIG;
        break;
    case SN_SCALE_EXPLICIT:
        if (!net->scales) return SN_ERR_SCALE;
        if ((uintptr_t)net->scales % sizeof(float)) return SN_ERR_ALIGN;
        for (int32_t i = 0; i < net->n_sublayers; i++)
            if (sn_check_scale(net->scales[i]) != SN_OK) return SN_ERR_SCALE;
        break;
    default: return SN_ERR_CONFIG;
    }
    return sn_check_row_dt(net->d, (sn_dtype)net->act_dtype);
}

sn_status sn_net_init(sn_net *net, sn_placement placement, int32_t n_sublayers, int64_t D,
                      sn_norm_kind kind, float eps) {
    if (!net) return SN_ERR_NULL;
    sn_net n;
    memset(&n, 0, sizeof n);
    n.placement = (int32_t)placement;
    n.n_sublayers = n_sublayers;
    n.d = D;
    n.norm.kind = (int32_t)kind;
    n.norm.affine = kind == SN_NORM_LAYERNORM ? SN_AFFINE_SCALE_SHIFT
                    : kind == SN_NORM_RMSNORM ? SN_AFFINE_SCALE
                                              : SN_AFFINE_NONE;
    n.norm.group = 0;
    n.norm.eps = eps;
    n.input_norm = n.norm;
    n.scale_rule = SN_SCALE_DEFAULT;
    n.scales = NULL;
    if (placement == SN_PLACEMENT_MIX_LN) n.mix_fraction = 0.25f;
    if (placement == SN_PLACEMENT_HYPER_CONN) { /* the paper's main setting */
        n.hc_rate = 4;
        n.hc_dynamic = 1;
    }
    sn_status st = sn_net_check(&n);
    if (st == SN_OK) *net = n;
    return st;
}

/* Floats that n slots of `rows` rows take (bf16 slots: two elements a float, rounded up). */
static int64_t slot_floats(const netl *L, int64_t n, int64_t rows) {
    return (n * rows * L->D * L->esz + 3) / 4;
}
static int64_t acts_per_row(const netl *L) { return slot_floats(L, L->nslots, 1) + L->spr; }
/* dynamic OP_HC's per-row floats in work after the slots: the per-row weight gradients
 * (alpha's n(n + 1), beta's n) and one stream's projection coefficients (n + 2) */
static int64_t hc_wf_per_row(const netl *L) {
    return L->dyn ? (int64_t)L->ns * (L->ns + 2) + L->ns + 2 : 0;
}
static int64_t work_per_row(const netl *L) {
    return slot_floats(L, L->wslots, 1) + hc_wf_per_row(L);
}

/* The inference state's slots: x_k in slot k % 2, then y (two streams), then the temporary;
 * Hyper-Connections: the n streams, updated in place. */
static int64_t infer_nslots(const netl *L) {
    return L->placement == SN_PLACEMENT_HYPER_CONN ? L->ns : 2 + (L->ns == 2) + L->any_aux;
}
static int64_t state_per_row(const netl *L) {
    return slot_floats(L, infer_nslots(L), 1) + L->max_spr;
}

sn_status sn_net_infer_sizes(const sn_net *net, int64_t *spr) {
    netl L;
    sn_status st = sn_net_resolve(net, &L);
    if (st != SN_OK) return st;
    if (!spr) return SN_ERR_NULL;
    *spr = state_per_row(&L);
    return SN_OK;
}

/* The one spelling of each placement (the header's enumerator names, lower case). */
static const char *const placement_names[] = {
    [SN_PLACEMENT_PRE_NORM] = "pre_norm",
    [SN_PLACEMENT_POST_NORM] = "post_norm",
    [SN_PLACEMENT_SIAMESE] = "siamese",
    [SN_PLACEMENT_SIAMESE_PAPER] = "siamese_paper",
    [SN_PLACEMENT_SIAMESE_HYBRID_PRE] = "siamese_hybrid_pre",
    [SN_PLACEMENT_DEEPNORM] = "deepnorm",
    [SN_PLACEMENT_PERI_LN] = "peri_ln",
    [SN_PLACEMENT_MIX_LN] = "mix_ln",
    [SN_PLACEMENT_HYBRIDNORM] = "hybridnorm",
    [SN_PLACEMENT_HYBRIDNORM_STAR] = "hybridnorm_star",
    [SN_PLACEMENT_SPAN_NORM] = "span_norm",
    [SN_PLACEMENT_HYPER_CONN] = "hyper_connections",
};
_Static_assert(sizeof placement_names / sizeof placement_names[0] == SN_PLACEMENT_COUNT,
               "a name for every placement");

const char *sn_placement_name(sn_placement placement) {
    if ((int)placement < 0 || (int)placement >= SN_PLACEMENT_COUNT) return NULL;
    return placement_names[placement];
}

sn_status sn_placement_from_name(const char *name, sn_placement *placement) {
    if (!name || !placement) return SN_ERR_NULL;
    for (int k = 0; k < SN_PLACEMENT_COUNT; k++)
        if (placement_names[k] && strcmp(name, placement_names[k]) == 0) {
            *placement = (sn_placement)k;
            return SN_OK;
        }
    return SN_ERR_PLACEMENT;
}

sn_status sn_net_sizes(const sn_net *net, int64_t *np, int64_t *apr, int64_t *wpr) {
    netl L;
    sn_status st = sn_net_resolve(net, &L);
    if (st != SN_OK) return st;
    if (np) *np = L.np;
    if (apr) *apr = acts_per_row(&L);
    if (wpr) *wpr = work_per_row(&L);
    return SN_OK;
}

sn_status sn_net_scale(const sn_net *net, int32_t i, float *c) {
    netl L;
    sn_status st = sn_net_resolve(net, &L);
    if (st != SN_OK) return st;
    if (!c) return SN_ERR_NULL;
    if (i < 0 || i >= L.S) return SN_ERR_INDEX;
    *c = sn_net_scale_of(net, i);
    return SN_OK;
}

sn_status sn_net_init_gain(const sn_net *net, float *gain) {
    netl L;
    sn_status st = sn_net_resolve(net, &L);
    if (st != SN_OK) return st;
    if (!gain) return SN_ERR_NULL;
    *gain = L.placement == SN_PLACEMENT_DEEPNORM ? (float)pow(8.0 * (double)n_layers(L.S), -0.25)
                                                 : 1.0f;
    return SN_OK;
}

/* Stage i of a validated net, which must have a norm j (sn_net_norm_at, sn_net_norm_role). */
static sn_status stage_with_norm(const sn_net *net, int32_t i, int32_t j, netl *L, stage *s) {
    sn_status st = sn_net_resolve(net, L);
    if (st != SN_OK) return st;
    if (i < -1 || i > L->S || j < 0) return SN_ERR_INDEX;
    sn_net_stage(L, i, s);
    return j < s->nn ? SN_OK : SN_ERR_INDEX;
}

sn_status sn_net_norm_at(const sn_net *net, int32_t i, int32_t j, sn_norm *norm, int64_t *offset) {
    netl L;
    stage s;
    sn_status st = stage_with_norm(net, i, j, &L, &s);
    if (st != SN_OK) return st;
    int64_t off = s.p;
    for (int32_t k = 0; k < j; k++) off += sn_norm_nparams(&s.n[k], L.D);
    if (norm) *norm = s.n[j];
    if (offset) *offset = off;
    return SN_OK;
}

sn_status sn_net_init_params(const sn_net *net, float *params) {
    netl L;
    sn_status st = sn_net_resolve(net, &L);
    if (st != SN_OK) return st;
    if (L.np > 0 && !params) return SN_ERR_NULL;
    if ((uintptr_t)params % sizeof(float)) return SN_ERR_ALIGN;
    /* the sub-layers in one walk, O(S) in all; then the merge and the split through
     * sn_net_norm_at */
    sn_walk w;
    sn_walk_start(&L, &w);
    for (int64_t i = 0; i < L.S; i++) {
        stage s;
        sn_walk_step(&L, &w, &s);
        int64_t p = s.p;
        for (int k = 0; k < s.nn; k++) {
            const int64_t n = sn_norm_nparams(&s.n[k], L.D);
            if (n > 0) sn_norm_init_params(&s.n[k], L.D, params + p);
            p += n;
        }
        if (s.op == OP_HC) { /* the paper's: A_m = e_{i mod n}, A_r = I, B = 1 (Wa = Wb = 0) */
            const int n = L.ns;
            float *al = params + p;
            memset(al, 0, (size_t)hc_conn_floats(net) * sizeof(float));
            HC_AM(al, n, i % n) = 1.0f;
            for (int k = 0; k < n; k++) HC_AR(al, n, k, k) = 1.0f, HC_B(al, n, k) = 1.0f;
            if (L.dyn) al[hc_conn_floats(net) - 2] = al[hc_conn_floats(net) - 1] = 0.01f;
        }
    }
    const int32_t ends[2] = {-1, L.S}; /* the split (i = -1) and the merge (i = S) */
    for (int e = 0; e < 2; e++) {
        sn_norm n;
        int64_t off;
        for (int32_t j = 0; sn_net_norm_at(net, ends[e], j, &n, &off) == SN_OK; j++)
            if (sn_norm_nparams(&n, L.D) > 0) sn_norm_init_params(&n, L.D, params + off);
    }
    return SN_OK;
}

sn_status sn_net_conn_at(const sn_net *net, int32_t i, int64_t *offset, int64_t *count) {
    sn_status st = sn_net_check(net);
    if (st != SN_OK) return st;
    if (net->placement != SN_PLACEMENT_HYPER_CONN || i < 0 || i >= net->n_sublayers)
        return SN_ERR_INDEX;
    netl L;
    stage s;
    sn_net_resolve(net, &L);
    sn_net_stage(&L, i, &s);
    if (offset) *offset = s.p + norms_params(&s, L.D);
    if (count) *count = hc_conn_floats(net);
    return SN_OK;
}

/* ---- shared plumbing of the pass calls -------------------------------------------------------- */

/* Everything a pass call needs, resolved and validated. */
typedef struct pass {
    netl L;
    stage s; /* the stage this call works on, its slots those of acts or of the inference state */
    int64_t R;
    const float *params;
    float *acts; /* training: acts (only read by backward calls); inference: the state */
    float *grads;
    float *work;
    int infer;
} pass;

enum { FWD, BWD, INFER };            /* the direction of a pass call */
enum { AT_SPLIT, AT_SUB, AT_MERGE }; /* the stage it works on */

/* One pass call, as begin() validates it: direction, stage, and the caller's matrix. */
typedef struct call {
    int dir;        /* FWD, BWD or INFER */
    int at;         /* AT_SPLIT, AT_SUB (sub-layer i) or AT_MERGE */
    int32_t i;      /* the sub-layer, for AT_SUB */
    const void *in; /* the caller's R x D matrix, row stride ld: the one it reads, */
    void *out;      /* or the one it writes (the other is NULL) */
    int64_t ld;
    sn_dtype dt; /* the type of its elements, which must be the net's act_dtype */
    uint32_t flags;
    uint32_t allowed; /* the flags this call knows */
} call;

/* The inference state's slots for stage s (sn_net_stage gave those of acts): x_k in slot k % 2,
 * y in slot 2, the temporary after them; statistics from the start of the planes. */
static void infer_slots(const netl *L, int at, int64_t i, stage *s) {
    const int64_t tmp = 2 + (L->ns == 2);
    s->st = 0;
    if (L->placement == SN_PLACEMENT_HYPER_CONN) { /* stream k in slot k, mixed in place */
        for (int k = 0; k < SN_HC_MAX_RATE; k++) s->in[k] = s->out[k] = k < L->ns ? k : -1;
        s->aux = -1;
        return;
    }
    if (at == AT_SPLIT) { /* Peri-LN: e in slot 1, then x_0 = N_emb(e) in slot 0 */
        s->in[0] = L->split_norm ? 1 : 0;
        s->out[0] = 0;
        s->out[1] = L->ns == 2 ? 2 : -1;
    } else {
        const int64_t k = at == AT_MERGE ? L->S : i;
        s->in[0] = k % 2;
        s->out[0] = (k + 1) % 2;
        s->in[1] = s->out[1] = L->ns == 2 ? 2 : -1;
        s->aux = forward_temp(s->op) ? tmp : -1;
        if (s->op == OP_SPAN) { /* the layer's input: slot k % 2 when opening, else (k+1) % 2 */
            s->in[1] = s->open ? s->in[0] : s->out[0];
            s->out[1] = s->close ? s->out[0] : s->in[1];
        }
    }
    s->st = 0;
}

/* Validates a pass call: the description, the pass's buffers (for an inference call: rows,
 * params and the state in acts), the stage, the caller's matrix, the flags and every overlap
 * between them; then resolves the stage into P. */
static sn_status begin(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *p, const call *c,
                       pass *P) {
    sn_status st = sn_net_resolve(net, &P->L);
    if (st != SN_OK) return st;
    if (!p) return SN_ERR_NULL;
    const netl *L = &P->L;
    if (c->dt != L->dt) return SN_ERR_DTYPE;
    const int64_t R = p->rows;
    const int bwd = c->dir == BWD;
    const int64_t per_row = c->dir == INFER ? state_per_row(L) : acts_per_row(L);
    st = sn_check_dims(R, L->D);
    if (st == SN_OK) st = sn_check_dims(R, per_row);
    const void *mat = c->out ? c->out : c->in;
    if (st == SN_OK) st = sn_check_mat_dt(mat, R, L->D, c->ld, L->dt);
    if (st != SN_OK) return st;
    if (!p->acts || (L->np > 0 && !p->params) || (bwd && !p->work)) return SN_ERR_NULL;
    if (c->at == AT_SUB && (c->i < 0 || c->i >= L->S)) return SN_ERR_INDEX;
    if (c->flags & ~c->allowed) return SN_ERR_FLAGS;
    const int work_w = bwd && c->at != AT_SPLIT; /* split_backward only reads the gradients */
    const sn_buf bufs[] = {
        sn_vec_buf(p->params, L->np, 0),
        sn_vec_buf(p->acts, R * per_row, !bwd),
        sn_vec_buf(bwd ? p->grads : NULL, L->np, 1),
        sn_vec_buf(bwd ? p->work : NULL, R * work_per_row(L), work_w),
        sn_mat_buf_dt(mat, R, L->D, c->ld, L->dt, c->out != NULL, 0),
        /* explicit scales are read by the call: no written buffer may overlap them */
        sn_vec_buf(net->scale_rule == SN_SCALE_EXPLICIT ? net->scales : NULL, L->S, 0),
    };
    st = sn_check_alias(bufs, 6);
    if (st != SN_OK) return st;
    st = sn_check_inputs_dt(ctx, L->dt, R, L->D, &c->in, &c->ld, 1, p->params, L->np); /* checked */
    if (st != SN_OK) return st;
    const int64_t i = c->at == AT_SPLIT ? -1 : c->at == AT_MERGE ? L->S : c->i;
    sn_net_stage(&P->L, i, &P->s);
    if (c->dir == INFER) infer_slots(L, c->at, i, &P->s);
    P->R = R;
    P->params = p->params;
    P->acts = p->acts;
    P->grads = bwd ? p->grads : NULL;
    P->work = bwd ? p->work : NULL;
    P->infer = c->dir == INFER;
    return SN_OK;
}

/* Slot k of acts (R x D elements of the net's type, row stride D). */
static void *slot(const pass *P, int64_t k) {
    return (char *)P->acts + k * P->R * P->L.D * P->L.esz;
}
/* The statistics plane of the stage's norm k (R rows of that norm's stats_per_row), or, with
 * fuse = 1, of the fuse made of norms k, k+1, k+2. */
static float *plane(const pass *P, int k) {
    int64_t off = P->s.st;
    for (int q = 0; q < k; q++) off += sn_norm_spr(&P->s.n[q], P->L.D);
    const int64_t nslots = P->infer ? infer_nslots(&P->L) : P->L.nslots; /* before the planes */
    return P->acts + slot_floats(&P->L, nslots, P->R) + off * P->R;
}
/* Parameters (and gradients) of the stage's norm k. */
static int64_t poff(const pass *P, int k) {
    int64_t off = P->s.p;
    for (int q = 0; q < k; q++) off += sn_norm_nparams(&P->s.n[q], P->L.D);
    return off;
}
static const float *par(const pass *P, int k) { return P->params ? P->params + poff(P, k) : NULL; }
static float *grd(const pass *P, int k) { return P->grads ? P->grads + poff(P, k) : NULL; }
/* The fuse of a SiameseNorm-family stage: N_x, N_y, N_out, and the index of its first norm. */
static sn_fuse fuse_of(const pass *P, int *first) {
    const sn_norm ID = {SN_NORM_IDENTITY, SN_AFFINE_NONE, 0, 0.0f};
    sn_fuse f;
    *first = 0;
    if (P->s.op == OP_SIAMX) { /* [c1, N_pre], no input norm */
        f.x = P->s.n[0];
        f.y = P->s.n[1];
        f.out = ID;
    } else if (P->s.op == OP_SIAMP) { /* [N_post, N_pre, N_in]: the fuse is (id, N_pre, N_in) */
        f.x = ID;
        f.y = P->s.n[1];
        f.out = P->s.n[2];
        *first = 1;
    } else { /* OP_SIAM and the merge */
        f.x = P->s.n[0];
        f.y = P->s.n[1];
        f.out = P->s.n[2];
    }
    return f;
}
static void *dxw(const pass *P) { return P->work; }
static void *dyw(const pass *P) { return (char *)P->work + P->R * P->L.D * P->L.esz; }

/* ---- Hyper-Connections (OP_HC, MERGE_SUM): the stream mixing through sn_hc_rows ------------ */

/* slot k of work (R x D elements of the net's type): dH_k for k < n, then h0 and dh0 */
static void *wk(const pass *P, int64_t k) { return (char *)P->work + k * P->R * P->L.D * P->L.esz; }
/* the stage's connection weights (after its norms) and their gradients (NULL: none) */
static const float *conn(const pass *P) { return P->params + poff(P, P->s.nn); }
static float *conn_grad(const pass *P) { return P->grads ? P->grads + poff(P, P->s.nn) : NULL; }

/* the n streams entering the stage as the mix's inputs 0 .. n-1 */
static void hc_in_streams(const pass *P, sn_hc_rows *h) {
    for (int k = 0; k < P->L.ns; k++) h->in[k] = slot(P, P->s.in[k]), h->ldin[k] = P->L.D;
}

/* dst = src_0 + ... + src_{n-1} (+ extra when non-NULL), src_k the n consecutive slots of R x D
 * at src (row stride D): the merge's sum of the streams (src: the streams' slots when NULL) and
 * the split backward's de */
static void hc_sum(const sn_ctx *ctx, const pass *P, const void *src, const void *extra,
                   int64_t lde, void *dst, int64_t ldd) {
    const int n = P->L.ns;
    const float ones[SN_K_HC_MATS] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    sn_hc_rows h;
    memset(&h, 0, sizeof h);
    if (src)
        for (int k = 0; k < n; k++)
            h.in[k] = (const char *)src + k * P->R * P->L.D * P->L.esz, h.ldin[k] = P->L.D;
    else hc_in_streams(P, &h);
    h.nin = n;
    if (extra) h.in[n] = extra, h.ldin[n] = lde, h.nin = n + 1;
    h.nout = 1;
    h.out[0] = dst, h.ldout[0] = ldd;
    h.w = ones;
    sn_dt_hc_rows(ctx, P->L.dt, P->R, P->L.D, &h);
}

/* Dynamic OP_HC: N_hc's statistics of stream k and the per-row tanh values (R rows of
 * n(n + 2): for stream k, tanh(<Hbar_k, Wa_c>) at HC_TA(n, k, c), tanh(<Hbar_k, Wb>) at
 * HC_TB(n, k)), in the stage's planes after N_i's; the scales s_a, s_b; the per-row floats of
 * work (hc_wf_per_row: alpha's and beta's per-row gradients, then the coefficients). */
#define HC_TA(n, k, c) ((k) * ((n) + 2) + (c))
#define HC_TB(n, k)    ((k) * ((n) + 2) + (n) + 1)
static float *hc_stats(const pass *P, int k) {
    return plane(P, 1) + k * P->R * sn_norm_spr(&P->s.n[1], P->L.D);
}
static float *hc_t(const pass *P) { return hc_stats(P, P->L.ns); }
static const float *hc_W(const pass *P) { /* Wa (n + 1 rows of D), then Wb */
    return conn(P) + P->L.ns * (P->L.ns + 2);
}
static float hc_scale(const pass *P, int b) { return hc_W(P)[(P->L.ns + 2) * P->L.D + b]; }
static float *hc_wf(const pass *P) {
    return (float *)P->work + slot_floats(&P->L, P->L.wslots, P->R);
}

/* the weights of h's mix: w[q] (static), and for dynamic HC row r's term scale[q] * t[tix[q]]
 * (tix[q] = -1: none) */
typedef struct hc_w {
    float w[SN_K_HC_MATS * SN_K_HC_MATS], sc[SN_K_HC_MATS * SN_K_HC_MATS];
    int tix[SN_K_HC_MATS * SN_K_HC_MATS];
} hc_w;
/* weight q: the static value v, and for dynamic HC the tanh value at index ti (-1: none) with
 * the scale of alpha (b = 0) or beta (b = 1) */
static void hc_set(const pass *P, hc_w *W, int q, float v, int ti, int b) {
    W->w[q] = v;
    W->tix[q] = ti;
    W->sc[q] = P->L.dyn && ti >= 0 ? hc_scale(P, b) : 0.0f;
}
static void hc_attach(const pass *P, const hc_w *W, sn_hc_rows *h) {
    h->w = W->w;
    if (!P->L.dyn) return;
    h->t = hc_t(P);
    h->ldt = P->L.ns * (P->L.ns + 2);
    h->tidx = W->tix;
    h->tsc = W->sc;
}

/* h0 = sum_k A_m[k] H_k into dst */
static void hc_h0(const sn_ctx *ctx, const pass *P, void *dst, int64_t ldd) {
    const int n = P->L.ns;
    const float *al = conn(P);
    hc_w W;
    for (int k = 0; k < n; k++) hc_set(P, &W, k, HC_AM(al, n, k), HC_TA(n, k, 0), 0);
    sn_hc_rows h;
    memset(&h, 0, sizeof h);
    hc_in_streams(P, &h);
    h.nin = n;
    h.nout = 1;
    h.out[0] = dst, h.ldout[0] = ldd;
    hc_attach(P, &W, &h);
    sn_dt_hc_rows(ctx, P->L.dt, P->R, P->L.D, &h);
}

/* the rows Wa_0 .. Wa_n, Wb of dynamic HC's projections */
static void hc_Wrows(const pass *P, const float **W) {
    for (int c = 0; c < P->L.ns + 2; c++) W[c] = hc_W(P) + c * P->L.D;
}

/* dynamic HC's per-row terms: for every stream, N_hc's statistics and the tanh of its
 * projections (Hbar_k built in h, which the enter overwrites next) */
static void hc_dyn_fwd(const sn_ctx *ctx, const pass *P, void *h, int64_t ldh) {
    const int n = P->L.ns;
    const int64_t R = P->R, D = P->L.D, lt = n * (n + 2);
    const float *W[SN_K_HC_MATS];
    hc_Wrows(P, W);
    float *t = hc_t(P);
    for (int k = 0; k < n; k++) {
        sn_dt_norm_fwd(ctx, P->L.dt, &P->s.n[1], R, D, slot(P, P->s.in[k]), D, par(P, 1), h, ldh,
                       hc_stats(P, k));
        sn_dt_hc_proj(ctx, P->L.dt, R, D, h, ldh, W, n + 2, t + HC_TA(n, k, 0), lt);
    }
    sn_dt_hc_tanh(ctx, P->L.dt, R, lt, t, lt);
}

/* enter: h = N_i(h0), h0 built in h */
static void hc_enter_fwd(const sn_ctx *ctx, const pass *P, void *h, int64_t ldh) {
    if (P->L.dyn) hc_dyn_fwd(ctx, P, h, ldh);
    hc_h0(ctx, P, h, ldh);
    sn_dt_norm_fwd(ctx, P->L.dt, &P->s.n[0], P->R, P->L.D, h, ldh, par(P, 0), h, ldh, plane(P, 0));
}

/* exit: H'_j = sum_k A_r[k][j] H_k + B[j] z (training keeps z for the gradient of B) */
static void hc_exit_fwd(const sn_ctx *ctx, const pass *P, const void *z, int64_t ldz) {
    const int n = P->L.ns;
    const int64_t D = P->L.D;
    const float *al = conn(P);
    hc_w W;
    for (int j = 0; j < n; j++) {
        for (int k = 0; k < n; k++)
            hc_set(P, &W, j * (n + 1) + k, HC_AR(al, n, k, j), HC_TA(n, k, 1 + j), 0);
        hc_set(P, &W, j * (n + 1) + n, HC_B(al, n, j), HC_TB(n, j), 1);
    }
    if (!P->infer) sn_dt_copy(ctx, P->L.dt, P->R, D, z, ldz, slot(P, P->s.aux), D);
    sn_hc_rows h;
    memset(&h, 0, sizeof h);
    hc_in_streams(P, &h);
    h.in[n] = z, h.ldin[n] = ldz;
    h.nin = n + 1;
    for (int j = 0; j < n; j++) h.out[j] = slot(P, P->s.out[j]), h.ldout[j] = D;
    h.nout = n;
    hc_attach(P, &W, &h);
    sn_dt_hc_rows(ctx, P->L.dt, P->R, D, &h);
}

/* merge: out = N_f(sum_k H_k), the sum built in out */
static void hc_merge_fwd(const sn_ctx *ctx, const pass *P, void *out, int64_t ldo) {
    hc_sum(ctx, P, NULL, NULL, 0, out, ldo);
    sn_dt_norm_fwd(ctx, P->L.dt, &P->s.n[0], P->R, P->L.D, out, ldo, par(P, 0), out, ldo,
                   plane(P, 0));
}

/* merge backward: dH_k = N_f backward of dout for every k (the sum recomputed in work's slot n) */
static void hc_merge_bwd(const sn_ctx *ctx, const pass *P, const void *dout, int64_t lddo) {
    const int n = P->L.ns;
    const int64_t R = P->R, D = P->L.D;
    void *t = wk(P, n);
    hc_sum(ctx, P, NULL, NULL, 0, t, D);
    sn_dt_norm_bwd(ctx, P->L.dt, &P->s.n[0], R, D, dout, lddo, t, D, par(P, 0), plane(P, 0),
                   wk(P, 0), D, grd(P, 0), 0);
    for (int k = 1; k < n; k++) sn_dt_copy(ctx, P->L.dt, R, D, wk(P, 0), D, wk(P, k), D);
}

/* exit backward: dz (=|+=) sum_j B[j] G_j; dB[j] += sum_rows <G_j, z> (dynamic HC: each row's
 * <G_j, z> also kept in work for the enter backward) */
static void hc_exit_bwd(const sn_ctx *ctx, const pass *P, void *dz, int64_t lddz, int acc) {
    const int n = P->L.ns;
    const int64_t D = P->L.D;
    float *g = conn_grad(P);
    hc_w W;
    for (int j = 0; j < n; j++) hc_set(P, &W, j, HC_B(conn(P), n, j), HC_TB(n, j), 1);
    hc_set(P, &W, n, 1.0f, -1, 0);
    sn_hc_rows h;
    memset(&h, 0, sizeof h);
    for (int j = 0; j < n; j++) {
        h.in[j] = h.a[j] = wk(P, j);
        h.ldin[j] = h.lda[j] = D;
    }
    h.nin = n + acc;
    h.in[n] = dz, h.ldin[n] = lddz;
    h.nout = 1;
    h.out[0] = dz, h.ldout[0] = lddz;
    hc_attach(P, &W, &h);
    h.na = n;
    h.nb = 1;
    h.b[0] = slot(P, P->s.aux), h.ldb[0] = D;
    h.dp = g ? g + n * (n + 1) : NULL;
    if (P->L.dyn) h.dpr = hc_wf(P) + n * (n + 1), h.lddpr = hc_wf_per_row(&P->L);
    sn_dt_hc_rows(ctx, P->L.dt, P->R, D, &h);
}

/* dynamic HC's backward through the per-row terms, once alpha's and beta's per-row gradients
 * (da, db) are in work: ds_a, ds_b; then for each stream k the coefficients
 * pa[c] = s_a (1 - ta[k][c]^2) da[k][c], pb = s_b (1 - tb[k]^2) db[k], dWa_c += pa[c] Hbar_k,
 * dWb += pb Hbar_k (Hbar_k recomputed in work's slot n), dHbar_k = sum_c pa[c] Wa_c + pb Wb
 * (in slot n + 1) and dH_k += N_hc backward of dHbar_k */
static void hc_dyn_bwd(const sn_ctx *ctx, const pass *P) {
    const int n = P->L.ns;
    const int64_t R = P->R, D = P->L.D, lt = n * (n + 2), lw = hc_wf_per_row(&P->L);
    const float *t = hc_t(P), sa = hc_scale(P, 0), sb = hc_scale(P, 1);
    float *wf = hc_wf(P), *g = conn_grad(P);
    if (g) { /* the scales' gradients: one fold over the rows, in row order */
        float dsa = 0.0f, dsb = 0.0f;
        for (int64_t r = 0; r < R; r++)
            for (int k = 0; k < n; k++) {
                for (int c = 0; c <= n; c++)
                    dsa += t[r * lt + HC_TA(n, k, c)] * wf[r * lw + k * (n + 1) + c];
                dsb += t[r * lt + HC_TB(n, k)] * wf[r * lw + n * (n + 1) + k];
            }
        g[n * (n + 2) + (n + 2) * D] += dsa;
        g[n * (n + 2) + (n + 2) * D + 1] += dsb;
    }
    const float *W[SN_K_HC_MATS];
    hc_Wrows(P, W);
    float *coef = wf + n * (n + 2);
    for (int k = 0; k < n; k++) {
        for (int64_t r = 0; r < R; r++) {
            const float *tr = t + r * lt, *dr = wf + r * lw;
            for (int c = 0; c <= n; c++) {
                const float ta = tr[HC_TA(n, k, c)];
                coef[r * lw + c] = sa * (1.0f - ta * ta) * dr[k * (n + 1) + c];
            }
            const float tb = tr[HC_TB(n, k)];
            coef[r * lw + n + 1] = sb * (1.0f - tb * tb) * dr[n * (n + 1) + k];
        }
        const void *Hk = slot(P, P->s.in[k]);
        sn_dt_norm_fwd(ctx, P->L.dt, &P->s.n[1], R, D, Hk, D, par(P, 1), wk(P, n), D, NULL);
        if (g) sn_dt_hc_wsum(ctx, P->L.dt, R, D, wk(P, n), D, coef, lw, n + 2, g + n * (n + 2));
        sn_dt_hc_wmix(ctx, P->L.dt, R, D, W, n + 2, coef, lw, wk(P, n + 1), D);
        sn_dt_norm_bwd(ctx, P->L.dt, &P->s.n[1], R, D, wk(P, n + 1), D, Hk, D, par(P, 1),
                       hc_stats(P, k), wk(P, k), D, grd(P, 1), 1);
    }
}

/* enter backward: dh0 = N_i backward of dh (h0 recomputed), then dA_m[k] += <H_k, dh0>,
 * dA_r[k][j] += <H_k, G_j> and dH_k = sum_j A_r[k][j] G_j + A_m[k] dh0, in place of G_k;
 * dynamic HC then adds the per-row terms' backward */
static void hc_enter_bwd(const sn_ctx *ctx, const pass *P, const void *dh, int64_t lddh) {
    const int n = P->L.ns;
    const int64_t R = P->R, D = P->L.D;
    const float *al = conn(P);
    void *h0 = wk(P, n), *dh0 = wk(P, n + 1);
    hc_h0(ctx, P, h0, D);
    sn_dt_norm_bwd(ctx, P->L.dt, &P->s.n[0], R, D, dh, lddh, h0, D, par(P, 0), plane(P, 0), dh0, D,
                   grd(P, 0), 0);
    hc_w W;
    for (int k = 0; k < n; k++) {
        for (int j = 0; j < n; j++)
            hc_set(P, &W, k * (n + 1) + j, HC_AR(al, n, k, j), HC_TA(n, k, 1 + j), 0);
        hc_set(P, &W, k * (n + 1) + n, HC_AM(al, n, k), HC_TA(n, k, 0), 0);
    }
    sn_hc_rows h;
    memset(&h, 0, sizeof h);
    for (int k = 0; k < n; k++) {
        h.a[k] = slot(P, P->s.in[k]), h.lda[k] = D;
        h.b[1 + k] = h.in[k] = h.out[k] = wk(P, k);
        h.ldb[1 + k] = h.ldin[k] = h.ldout[k] = D;
    }
    h.b[0] = h.in[n] = dh0;
    h.ldb[0] = h.ldin[n] = D;
    h.na = n;
    h.nb = n + 1;
    h.dp = conn_grad(P);
    if (P->L.dyn) h.dpr = hc_wf(P), h.lddpr = hc_wf_per_row(&P->L);
    h.nin = n + 1;
    h.nout = n;
    hc_attach(P, &W, &h);
    sn_dt_hc_rows(ctx, P->L.dt, R, D, &h);
    if (P->L.dyn) hc_dyn_bwd(ctx, P);
}

/* ---- forward ------------------------------------------------------------------------------- */

static void split_fwd(const sn_ctx *ctx, const pass *P, const void *e, int64_t lde) {
    const sn_dtype dt = P->L.dt;
    const int64_t R = P->R, D = P->L.D;
    sn_dt_copy(ctx, dt, R, D, e, lde, slot(P, P->s.in[0]), D);
    if (P->L.split_norm)
        sn_dt_norm_fwd(ctx, dt, &P->s.n[0], R, D, slot(P, P->s.in[0]), D, par(P, 0),
                       slot(P, P->s.out[0]), D, plane(P, 0));
    /* training's y_0 (H_k) shares x_0's slot; the state updates y (H_k) in place */
    for (int k = 1; P->infer && k < P->L.ns; k++)
        sn_dt_copy(ctx, dt, R, D, e, lde, slot(P, P->s.out[k]), D);
}

static void enter_fwd(const sn_ctx *ctx, const pass *P, void *h, int64_t ldh) {
    const sn_dtype dt = P->L.dt;
    const stage *s = &P->s;
    const int64_t R = P->R, D = P->L.D;
    const void *x = slot(P, s->in[0]);
    int first;
    sn_fuse f;
    switch (s->op) {
    case OP_HC: hc_enter_fwd(ctx, P, h, ldh); break;
    case OP_PRE:
    case OP_PERI:
        sn_dt_norm_fwd(ctx, dt, &s->n[0], R, D, x, D, par(P, 0), h, ldh, plane(P, 0));
        break;
    case OP_POST:
    case OP_SPAN: sn_dt_copy(ctx, dt, R, D, x, D, h, ldh); break;
    case OP_HMLP: /* u into x_{i+1}'s slot, where exit(i) completes it; h = u */
        sn_dt_norm_fwd(ctx, dt, &s->n[0], R, D, x, D, par(P, 0), slot(P, s->out[0]), D,
                       plane(P, 0));
        sn_dt_copy(ctx, dt, R, D, slot(P, s->out[0]), D, h, ldh);
        break;
    default: /* the SiameseNorm family; OP_SIAM keeps u in x_{i+1}'s slot */
        f = fuse_of(P, &first);
        sn_dt_fuse_fwd(ctx, dt, &f, R, D, x, D, slot(P, s->in[1]), D, par(P, first),
                       s->op == OP_SIAM ? slot(P, s->out[0]) : NULL, D, h, ldh, plane(P, first));
        break;
    }
}

static void exit_fwd(const sn_ctx *ctx, const pass *P, const void *z, int64_t ldz) {
    const sn_dtype dt = P->L.dt;
    const stage *s = &P->s;
    const int64_t R = P->R, D = P->L.D;
    void *x = slot(P, s->in[0]), *xo = slot(P, s->out[0]);
    switch (s->op) {
    case OP_HC: hc_exit_fwd(ctx, P, z, ldz); break;
    case OP_PRE: sn_dt_add_div(ctx, dt, R, D, x, D, z, ldz, 1.0f, xo, D, 0); break;
    case OP_POST: /* t = alpha * x + z, x' = N(t) */
        sn_dt_axpy(ctx, dt, R, D, s->c, x, D, z, ldz, slot(P, s->aux), D);
        sn_dt_norm_fwd(ctx, dt, &s->n[0], R, D, slot(P, s->aux), D, par(P, 0), xo, D, plane(P, 0));
        break;
    case OP_PERI: /* x' = x + N_out(z); training keeps z for N_out's backward */
        if (!P->infer) sn_dt_copy(ctx, dt, R, D, z, ldz, slot(P, s->aux), D);
        sn_dt_norm_fwd(ctx, dt, &s->n[1], R, D, z, ldz, par(P, 1), xo, D, plane(P, 1));
        sn_dt_add_div(ctx, dt, R, D, xo, D, x, D, 1.0f, xo, D, 0);
        break;
    case OP_HMLP: /* xo holds u */
        sn_dt_add_div(ctx, dt, R, D, xo, D, z, ldz, 1.0f, xo, D, 0);
        break;
    case OP_SPAN: { /* t = v + z; x' = N(t), or closing y' = y + N(t)/c (N(t) in a dead slot:
                     * v's when it is not y, else x''s) */
        sn_dt_add_div(ctx, dt, R, D, x, D, z, ldz, 1.0f, slot(P, s->aux), D, 0);
        void *u = s->close && s->in[0] != s->in[1] ? x : xo;
        sn_dt_norm_fwd(ctx, dt, &s->n[0], R, D, slot(P, s->aux), D, par(P, 0), u, D, plane(P, 0));
        if (s->close) sn_dt_add_div(ctx, dt, R, D, slot(P, s->in[1]), D, u, D, s->c, xo, D, 0);
        break;
    }
    case OP_SIAM: /* xo holds u */
        sn_dt_apply(ctx, dt, R, D, s->c, z, ldz, xo, D, slot(P, s->in[1]), D, xo, D,
                    slot(P, s->out[1]), D);
        break;
    case OP_SIAMX:
        sn_dt_apply(ctx, dt, R, D, s->c, z, ldz, x, D, slot(P, s->in[1]), D, xo, D,
                    slot(P, s->out[1]), D);
        break;
    default: /* OP_SIAMP: t = x + z/c, x' = N_post(t) */
        sn_dt_apply(ctx, dt, R, D, s->c, z, ldz, x, D, slot(P, s->in[1]), D, slot(P, s->aux), D,
                    slot(P, s->out[1]), D);
        sn_dt_norm_fwd(ctx, dt, &s->n[0], R, D, slot(P, s->aux), D, par(P, 0), xo, D, plane(P, 0));
        break;
    }
}

static void merge_fwd(const sn_ctx *ctx, const pass *P, void *out, int64_t ldo) {
    const sn_dtype dt = P->L.dt;
    const int64_t R = P->R, D = P->L.D;
    const void *x = slot(P, P->s.in[0]);
    int first;
    sn_fuse f;
    switch (P->L.merge) {
    case MERGE_SUM: hc_merge_fwd(ctx, P, out, ldo); break;
    case MERGE_NONE: sn_dt_copy(ctx, dt, R, D, x, D, out, ldo); break;
    case MERGE_NORM:
        sn_dt_norm_fwd(ctx, dt, &P->s.n[0], R, D, x, D, par(P, 0), out, ldo, plane(P, 0));
        break;
    default:
        f = fuse_of(P, &first);
        sn_dt_fuse_fwd(ctx, dt, &f, R, D, x, D, slot(P, P->s.in[1]), D, par(P, 0), NULL, 0, out,
                       ldo, plane(P, 0));
        break;
    }
}

/* Every forward call, training (bufs) and inference (the state as acts): validate, then run
 * the stage. */
static sn_status forward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                         const call *c) {
    pass P;
    sn_status st = begin(ctx, net, bufs, c, &P);
    if (st != SN_OK) return st;
    switch (c->at) {
    case AT_SPLIT: split_fwd(ctx, &P, c->in, c->ld); break;
    case AT_MERGE: merge_fwd(ctx, &P, c->out, c->ld); break;
    default: /* enter writes h, exit reads z */
        if (c->out) enter_fwd(ctx, &P, c->out, c->ld);
        else exit_fwd(ctx, &P, c->in, c->ld);
        break;
    }
    return SN_OK;
}

/* An inference call: its buffers as a pass whose acts is the state. */
static sn_status infer(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *q, call c) {
    if (net && !q) return SN_ERR_NULL;
    const sn_net_pass p = {q ? q->rows : 0, q ? q->params : NULL, q ? q->state : NULL, NULL, NULL};
    c.dir = INFER;
    return forward(ctx, net, &p, &c);
}

sn_status sn_net_split(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                       const float *e, int64_t lde) {
    return forward(ctx, net, bufs, &(call){.dir = FWD, .at = AT_SPLIT, .in = e, .ld = lde});
}
sn_status sn_net_enter(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs, int32_t i,
                       float *h, int64_t ldh) {
    return forward(ctx, net, bufs, &(call){.dir = FWD, .at = AT_SUB, .i = i, .out = h, .ld = ldh});
}
sn_status sn_net_exit(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs, int32_t i,
                      const float *z, int64_t ldz) {
    return forward(ctx, net, bufs, &(call){.dir = FWD, .at = AT_SUB, .i = i, .in = z, .ld = ldz});
}
sn_status sn_net_merge(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs, float *out,
                       int64_t ldo) {
    return forward(ctx, net, bufs, &(call){.dir = FWD, .at = AT_MERGE, .out = out, .ld = ldo});
}

sn_status sn_net_infer_split(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                             const float *e, int64_t lde) {
    return infer(ctx, net, inf, (call){.at = AT_SPLIT, .in = e, .ld = lde});
}
sn_status sn_net_infer_enter(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                             int32_t i, float *h, int64_t ldh) {
    return infer(ctx, net, inf, (call){.at = AT_SUB, .i = i, .out = h, .ld = ldh});
}
sn_status sn_net_infer_exit(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                            int32_t i, const float *z, int64_t ldz) {
    return infer(ctx, net, inf, (call){.at = AT_SUB, .i = i, .in = z, .ld = ldz});
}
sn_status sn_net_infer_merge(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                             float *out, int64_t ldo) {
    return infer(ctx, net, inf, (call){.at = AT_MERGE, .out = out, .ld = ldo});
}

sn_status sn_net_split_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                            const sn_bf16 *e, int64_t lde) {
    return forward(ctx, net, bufs,
                   &(call){.dir = FWD, .at = AT_SPLIT, .in = e, .ld = lde, .dt = SN_DTYPE_BF16});
}
sn_status sn_net_enter_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                            int32_t i, sn_bf16 *h, int64_t ldh) {
    return forward(
        ctx, net, bufs,
        &(call){.dir = FWD, .at = AT_SUB, .i = i, .out = h, .ld = ldh, .dt = SN_DTYPE_BF16});
}
sn_status sn_net_exit_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs, int32_t i,
                           const sn_bf16 *z, int64_t ldz) {
    return forward(
        ctx, net, bufs,
        &(call){.dir = FWD, .at = AT_SUB, .i = i, .in = z, .ld = ldz, .dt = SN_DTYPE_BF16});
}
sn_status sn_net_merge_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                            sn_bf16 *out, int64_t ldo) {
    return forward(ctx, net, bufs,
                   &(call){.dir = FWD, .at = AT_MERGE, .out = out, .ld = ldo, .dt = SN_DTYPE_BF16});
}

sn_status sn_net_infer_split_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                  const sn_bf16 *e, int64_t lde) {
    return infer(ctx, net, inf, (call){.at = AT_SPLIT, .in = e, .ld = lde, .dt = SN_DTYPE_BF16});
}
sn_status sn_net_infer_enter_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                  int32_t i, sn_bf16 *h, int64_t ldh) {
    return infer(ctx, net, inf,
                 (call){.at = AT_SUB, .i = i, .out = h, .ld = ldh, .dt = SN_DTYPE_BF16});
}
sn_status sn_net_infer_exit_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                 int32_t i, const sn_bf16 *z, int64_t ldz) {
    return infer(ctx, net, inf,
                 (call){.at = AT_SUB, .i = i, .in = z, .ld = ldz, .dt = SN_DTYPE_BF16});
}
sn_status sn_net_infer_merge_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                  sn_bf16 *out, int64_t ldo) {
    return infer(ctx, net, inf, (call){.at = AT_MERGE, .out = out, .ld = ldo, .dt = SN_DTYPE_BF16});
}

/* ---- backward ------------------------------------------------------------------------------ */

static sn_status merge_backward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                sn_dtype cdt, const void *dout, int64_t lddo) {
    pass P;
    const call c = {.dir = BWD, .at = AT_MERGE, .in = dout, .ld = lddo, .dt = cdt};
    sn_status st = begin(ctx, net, bufs, &c, &P);
    if (st != SN_OK) return st;
    const int64_t R = P.R, D = P.L.D;
    const sn_dtype dt = P.L.dt;
    const void *x = slot(&P, P.s.in[0]);
    int first;
    sn_fuse f;
    switch (P.L.merge) {
    case MERGE_SUM: hc_merge_bwd(ctx, &P, dout, lddo); break;
    case MERGE_NONE: sn_dt_copy(ctx, dt, R, D, dout, lddo, dxw(&P), D); break;
    case MERGE_NORM:
        sn_dt_norm_bwd(ctx, dt, &P.s.n[0], R, D, dout, lddo, x, D, par(&P, 0), plane(&P, 0),
                       dxw(&P), D, grd(&P, 0), 0);
        break;
    default:
        f = fuse_of(&P, &first);
        sn_dt_fuse_bwd(ctx, dt, &f, R, D, dout, lddo, NULL, 0, x, D, slot(&P, P.s.in[1]), D,
                       par(&P, 0), plane(&P, 0), dxw(&P), D, dyw(&P), D, grd(&P, 0), 0);
        break;
    }
    return SN_OK;
}

static sn_status exit_backward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                               int32_t i, sn_dtype cdt, void *dz, int64_t lddz, uint32_t flags) {
    pass P;
    const call c = {.dir = BWD,
                    .dt = cdt,
                    .at = AT_SUB,
                    .i = i,
                    .out = dz,
                    .ld = lddz,
                    .flags = flags,
                    .allowed = SN_ACCUMULATE};
    sn_status st = begin(ctx, net, bufs, &c, &P);
    if (st != SN_OK) return st;
    const stage *s = &P.s;
    const int64_t R = P.R, D = P.L.D;
    const sn_dtype dt = P.L.dt;
    const int acc = (flags & SN_ACCUMULATE) != 0;
    void *dx = dxw(&P);
    switch (s->op) {
    case OP_HC: hc_exit_bwd(ctx, &P, dz, lddz, acc); return SN_OK;
    case OP_PERI: /* dz = N_out backward of dx_{i+1} */
        sn_dt_norm_bwd(ctx, dt, &s->n[1], R, D, dx, D, slot(&P, s->aux), D, par(&P, 1),
                       plane(&P, 1), dz, lddz, grd(&P, 1), acc);
        return SN_OK;
    case OP_SIAM:
    case OP_SIAMX:
        sn_dt_add_div(ctx, dt, R, D, dyw(&P), D, dx, D, s->c, dz, lddz, acc);
        return SN_OK;
    case OP_SIAMP: /* dt = N_post backward of dx_{i+1}, in place; dz = dt / c + dy */
        sn_dt_norm_bwd(ctx, dt, &s->n[0], R, D, dx, D, slot(&P, s->aux), D, par(&P, 0),
                       plane(&P, 0), dx, D, grd(&P, 0), 0);
        sn_dt_add_div(ctx, dt, R, D, dyw(&P), D, dx, D, s->c, dz, lddz, acc);
        return SN_OK;
    case OP_SPAN: /* closing: dy = g (the span's residual), dx = g / c; then as OP_POST */
        if (s->close) {
            sn_dt_copy(ctx, dt, R, D, dx, D, dyw(&P), D);
            sn_dt_div(ctx, dt, R, D, dyw(&P), D, s->c, dx, D);
        }
        sn_dt_norm_bwd(ctx, dt, &s->n[0], R, D, dx, D, slot(&P, s->aux), D, par(&P, 0),
                       plane(&P, 0), dx, D, grd(&P, 0), 0);
        break;
    case OP_POST: /* dt = N backward of dx_{i+1}, in place; dz = dt */
        sn_dt_norm_bwd(ctx, dt, &s->n[0], R, D, dx, D, slot(&P, s->aux), D, par(&P, 0),
                       plane(&P, 0), dx, D, grd(&P, 0), 0);
        break;
    default: /* OP_PRE, OP_HMLP: dz = dx_{i+1} */ break;
    }
    if (acc) sn_dt_add_div(ctx, dt, R, D, dz, lddz, dx, D, 1.0f, dz, lddz, 0);
    else sn_dt_copy(ctx, dt, R, D, dx, D, dz, lddz);
    return SN_OK;
}

static sn_status enter_backward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                int32_t i, sn_dtype cdt, const void *dh, int64_t lddh) {
    pass P;
    const call c = {.dir = BWD, .at = AT_SUB, .i = i, .in = dh, .ld = lddh, .dt = cdt};
    sn_status st = begin(ctx, net, bufs, &c, &P);
    if (st != SN_OK) return st;
    const stage *s = &P.s;
    const int64_t R = P.R, D = P.L.D;
    const sn_dtype dt = P.L.dt;
    const void *x = slot(&P, s->in[0]);
    void *dx = dxw(&P);
    int first;
    sn_fuse f;
    switch (s->op) {
    case OP_HC: hc_enter_bwd(ctx, &P, dh, lddh); break;
    case OP_PRE:
    case OP_PERI: /* dx_i = dx' + N backward of dh */
        sn_dt_norm_bwd(ctx, dt, &s->n[0], R, D, dh, lddh, x, D, par(&P, 0), plane(&P, 0), dx, D,
                       grd(&P, 0), 1);
        break;
    case OP_POST: /* dx_i = alpha * dt + dh */
        sn_dt_axpy(ctx, dt, R, D, s->c, dx, D, dh, lddh, dx, D);
        break;
    case OP_SPAN: /* dv = dt + dh; opening: the layer input's dx_i = dv + dy */
        if (s->open) sn_dt_add_div(ctx, dt, R, D, dyw(&P), D, dh, lddh, 1.0f, dx, D, 1);
        else sn_dt_add_div(ctx, dt, R, D, dx, D, dh, lddh, 1.0f, dx, D, 0);
        break;
    case OP_HMLP: /* dx_i = N backward of (dx' + dh) */
        sn_dt_add_div(ctx, dt, R, D, dx, D, dh, lddh, 1.0f, dx, D, 0);
        sn_dt_norm_bwd(ctx, dt, &s->n[0], R, D, dx, D, x, D, par(&P, 0), plane(&P, 0), dx, D,
                       grd(&P, 0), 0);
        break;
    default:
        f = fuse_of(&P, &first);
        if (s->op == OP_SIAM) /* dx_i = N_post backward of (dx' + ds), in place */
            sn_dt_fuse_bwd(ctx, dt, &f, R, D, dh, lddh, dx, D, x, D, slot(&P, s->in[1]), D,
                           par(&P, first), plane(&P, first), dx, D, dyw(&P), D, grd(&P, first),
                           SN_ACCUMULATE_Y);
        else /* the residual bypasses N_x: dx_i = dx' + N_x backward of ds */
            sn_dt_fuse_bwd(ctx, dt, &f, R, D, dh, lddh, NULL, 0, x, D, slot(&P, s->in[1]), D,
                           par(&P, first), plane(&P, first), dx, D, dyw(&P), D, grd(&P, first),
                           SN_ACCUMULATE | SN_ACCUMULATE_Y);
        break;
    }
    return SN_OK;
}

static sn_status split_backward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                sn_dtype cdt, void *de, int64_t ldde, uint32_t flags) {
    pass P;
    const call c = {.dir = BWD,
                    .dt = cdt,
                    .at = AT_SPLIT,
                    .out = de,
                    .ld = ldde,
                    .flags = flags,
                    .allowed = SN_ACCUMULATE};
    sn_status st = begin(ctx, net, bufs, &c, &P);
    if (st != SN_OK) return st;
    const int64_t R = P.R, D = P.L.D;
    const sn_dtype dt = P.L.dt;
    const int acc = (flags & SN_ACCUMULATE) != 0;
    if (P.L.placement == SN_PLACEMENT_HYPER_CONN) /* de = sum_k dH_k */
        hc_sum(ctx, &P, P.work, acc ? de : NULL, ldde, de, ldde);
    else if (P.L.ns == 2) sn_dt_add_div(ctx, dt, R, D, dxw(&P), D, dyw(&P), D, 1.0f, de, ldde, acc);
    else if (P.L.split_norm)
        sn_dt_norm_bwd(ctx, dt, &P.s.n[0], R, D, dxw(&P), D, slot(&P, 0), D, par(&P, 0),
                       plane(&P, 0), de, ldde, grd(&P, 0), acc);
    else if (acc) sn_dt_add_div(ctx, dt, R, D, de, ldde, dxw(&P), D, 1.0f, de, ldde, 0);
    else sn_dt_copy(ctx, dt, R, D, dxw(&P), D, de, ldde);
    return SN_OK;
}

sn_status sn_net_merge_backward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                const float *dout, int64_t lddo) {
    return merge_backward(ctx, net, bufs, SN_DTYPE_F32, dout, lddo);
}
sn_status sn_net_exit_backward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                               int32_t i, float *dz, int64_t lddz, uint32_t flags) {
    return exit_backward(ctx, net, bufs, i, SN_DTYPE_F32, dz, lddz, flags);
}
sn_status sn_net_enter_backward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                int32_t i, const float *dh, int64_t lddh) {
    return enter_backward(ctx, net, bufs, i, SN_DTYPE_F32, dh, lddh);
}
sn_status sn_net_split_backward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                float *de, int64_t ldde, uint32_t flags) {
    return split_backward(ctx, net, bufs, SN_DTYPE_F32, de, ldde, flags);
}

sn_status sn_net_merge_backward_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                     const sn_bf16 *dout, int64_t lddo) {
    return merge_backward(ctx, net, bufs, SN_DTYPE_BF16, dout, lddo);
}
sn_status sn_net_exit_backward_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                    int32_t i, sn_bf16 *dz, int64_t lddz, uint32_t flags) {
    return exit_backward(ctx, net, bufs, i, SN_DTYPE_BF16, dz, lddz, flags);
}
sn_status sn_net_enter_backward_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                     int32_t i, const sn_bf16 *dh, int64_t lddh) {
    return enter_backward(ctx, net, bufs, i, SN_DTYPE_BF16, dh, lddh);
}
sn_status sn_net_split_backward_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *bufs,
                                     sn_bf16 *de, int64_t ldde, uint32_t flags) {
    return split_backward(ctx, net, bufs, SN_DTYPE_BF16, de, ldde, flags);
}

/* ---- norm roles ---------------------------------------------------------------------------- */

/* The roles of a stage's norms, in parameter order: a row per op (a new op adds its row; the
 * assertion below counts them), per merge kind and for the split. */
typedef struct stage_roles {
    int n;
    struct {
        sn_norm_role role;
        sn_norm_operand operand;
    } at[3];
} stage_roles;

static const stage_roles op_roles[] = {
    [OP_PRE] = {1, {{SN_ROLE_INPUT, SN_OPERAND_X}}},
    [OP_POST] = {1, {{SN_ROLE_POST, SN_OPERAND_RESIDUAL}}},
    [OP_PERI] = {2, {{SN_ROLE_INPUT, SN_OPERAND_X}, {SN_ROLE_OUT, SN_OPERAND_Z}}},
    [OP_HMLP] = {1, {{SN_ROLE_POST, SN_OPERAND_X}}},
    [OP_SIAM] = {3,
                 {{SN_ROLE_POST, SN_OPERAND_X},
                  {SN_ROLE_PRE, SN_OPERAND_Y},
                  {SN_ROLE_INPUT, SN_OPERAND_FUSED}}},
    [OP_SIAMX] = {2, {{SN_ROLE_SCALE, SN_OPERAND_X}, {SN_ROLE_PRE, SN_OPERAND_Y}}},
    [OP_SIAMP] = {3,
                  {{SN_ROLE_POST, SN_OPERAND_RESIDUAL},
                   {SN_ROLE_PRE, SN_OPERAND_Y},
                   {SN_ROLE_INPUT, SN_OPERAND_FUSED}}},
    /* SpanNorm: N(v + z) is the layer's next x inside it; the closing one's output, over c,
     * is what the spanning residual adds */
    [OP_SPAN] = {1, {{SN_ROLE_POST, SN_OPERAND_RESIDUAL}}},
    /* Hyper-Connections: N_i of the mix h0, dynamic HC's N_hc of each stream */
    [OP_HC] = {2, {{SN_ROLE_INPUT, SN_OPERAND_MIX}, {SN_ROLE_STREAMS, SN_OPERAND_STREAMS}}},
};
_Static_assert(sizeof op_roles / sizeof op_roles[0] == OP_COUNT, "the roles of every op");
static const stage_roles merge_roles[] = {
    [MERGE_NONE] = {0, {{0, 0}}},
    [MERGE_NORM] = {1, {{SN_ROLE_FINAL, SN_OPERAND_X}}},
    [MERGE_FUSE] = {3,
                    {{SN_ROLE_MERGE_X, SN_OPERAND_X},
                     {SN_ROLE_MERGE_Y, SN_OPERAND_Y},
                     {SN_ROLE_FINAL, SN_OPERAND_FUSED}}},
    [MERGE_SUM] = {1, {{SN_ROLE_FINAL, SN_OPERAND_SUM}}},
};
static const stage_roles split_roles = {1, {{SN_ROLE_EMBED, SN_OPERAND_E}}};

sn_status sn_net_norm_role(const sn_net *net, int32_t i, int32_t j, sn_norm_role *role,
                           sn_norm_operand *operand) {
    netl L;
    stage s;
    sn_status st = stage_with_norm(net, i, j, &L, &s);
    if (st != SN_OK) return st;
    const stage_roles *r = i < 0      ? &split_roles
                           : i == L.S ? &merge_roles[L.merge]
                                      : &op_roles[s.op];
    if (j >= r->n) return SN_ERR_INDEX;
    if (role) *role = r->at[j].role;
    if (operand) *operand = r->at[j].operand;
    return SN_OK;
}

sn_status sn_net_find_norm(const sn_net *net, int32_t i, sn_norm_role role, int32_t *j) {
    sn_status st = sn_net_check(net);
    if (st != SN_OK) return st;
    if (!j) return SN_ERR_NULL;
    if ((int)role < 0 || (int)role >= SN_ROLE_COUNT) return SN_ERR_CONFIG;
    sn_norm_role r;
    for (int32_t k = 0; (st = sn_net_norm_role(net, i, k, &r, NULL)) == SN_OK; k++)
        if (r == role) {
            *j = k;
            return SN_OK;
        }
    return st;
}

static const char *const role_names[] = {
    [SN_ROLE_INPUT] = "input",     [SN_ROLE_POST] = "post",       [SN_ROLE_PRE] = "pre",
    [SN_ROLE_OUT] = "out",         [SN_ROLE_SCALE] = "scale",     [SN_ROLE_EMBED] = "embed",
    [SN_ROLE_MERGE_X] = "merge_x", [SN_ROLE_MERGE_Y] = "merge_y", [SN_ROLE_FINAL] = "final",
    [SN_ROLE_STREAMS] = "streams",
};
_Static_assert(sizeof role_names / sizeof role_names[0] == SN_ROLE_COUNT, "a name per role");
static const char *const operand_names[] = {
    [SN_OPERAND_X] = "x",
    [SN_OPERAND_Y] = "y",
    [SN_OPERAND_RESIDUAL] = "residual",
    [SN_OPERAND_Z] = "z",
    [SN_OPERAND_FUSED] = "fused",
    [SN_OPERAND_E] = "e",
    [SN_OPERAND_MIX] = "mix",
    [SN_OPERAND_STREAMS] = "streams",
    [SN_OPERAND_SUM] = "sum",
};
_Static_assert(sizeof operand_names / sizeof operand_names[0] == SN_OPERAND_COUNT,
               "a name per operand");

const char *sn_norm_role_name(sn_norm_role role) {
    return (int)role >= 0 && (int)role < SN_ROLE_COUNT ? role_names[role] : NULL;
}
const char *sn_norm_operand_name(sn_norm_operand operand) {
    return (int)operand >= 0 && (int)operand < SN_OPERAND_COUNT ? operand_names[operand] : NULL;
}
