/* The placement layer's layout (net_layout.h): the stages of a network and their places. */
#include <math.h>
#include <string.h>

#include "net_layout.h"

/* c_i of the SiameseNorm family and SpanNorm, alpha of DeepNorm, 1 otherwise. */
float sn_net_scale_of(const sn_net *net, int64_t i) {
    const int p = net->placement;
    if (!two_streams(p) && p != SN_PLACEMENT_DEEPNORM && p != SN_PLACEMENT_SPAN_NORM) return 1.0f;
    if (net->scale_rule == SN_SCALE_NONE) return 1.0f;
    if (net->scale_rule == SN_SCALE_EXPLICIT) return net->scales[i];
    if (p == SN_PLACEMENT_DEEPNORM)
        return (float)pow(2.0 * (double)n_layers(net->n_sublayers), 0.25);
    if (p == SN_PLACEMENT_SPAN_NORM) return (float)sqrt((double)n_layers(net->n_sublayers));
    return sqrtf((float)(2 * (i / 2 + 1)));
}

/* Mix-LN: the layers that are Post-Norm, the first floor(fraction * L), the fraction read as
 * the decimal its float stands for. That float is within 2^-24 of it (relative), so the
 * factor 1 + 2^-23 lifts a product such as 0.7f * 10 = 6.99999988 to 7, as the reference's
 * double arithmetic gives; it moves only products within 2^-23 (relative) below an integer,
 * where no float can tell the decimal k / L from one just below it. */
static int64_t mix_post_layers(const sn_net *net) {
    const double L = (double)n_layers(net->n_sublayers);
    return (int64_t)floor((double)net->mix_fraction * L * (1.0 + 0x1p-23));
}

/* The op and norms of sub-layer i (its place: sn_walk_step). */
static void sublayer_kind(const sn_net *net, int64_t i, stage *s) {
    const sn_norm N = net->norm, IN = net->input_norm;
    const sn_norm ID = {SN_NORM_IDENTITY, SN_AFFINE_NONE, 0, 0.0f};
    const sn_norm C1 = {SN_NORM_SCALE, SN_AFFINE_SCALE, 0, 0.0f};
    const int64_t layer = i / 2, attn = (i % 2) == 0;
    s->nn = 1;
    s->n[0] = N;
    switch (net->placement) {
    case SN_PLACEMENT_PRE_NORM: s->op = OP_PRE; break;
    case SN_PLACEMENT_POST_NORM:
    case SN_PLACEMENT_DEEPNORM: s->op = OP_POST; break;
    case SN_PLACEMENT_PERI_LN:
        s->op = OP_PERI;
        s->nn = 2;
        s->n[1] = N;
        break;
    case SN_PLACEMENT_MIX_LN: s->op = layer < mix_post_layers(net) ? OP_POST : OP_PRE; break;
    case SN_PLACEMENT_HYBRIDNORM:
    case SN_PLACEMENT_HYBRIDNORM_STAR:
        if (net->placement == SN_PLACEMENT_HYBRIDNORM_STAR && layer == 0) {
            s->op = OP_PRE;
        } else if (attn) {
            s->op = OP_PRE; /* no norm before attention: h = x (q/k/v norms are the block's) */
            s->n[0] = ID;
        } else {
            s->op = OP_HMLP;
        }
        break;
    case SN_PLACEMENT_HYPER_CONN: /* [N_i] (dynamic: [N_i, N_hc]), then the connections */
        s->op = OP_HC;
        s->nn = net->hc_dynamic ? 2 : 1;
        s->n[1] = N;
        break;
    case SN_PLACEMENT_SPAN_NORM: /* [N_i]: the attention's post-norm, the MLP's span norm */
        s->op = OP_SPAN;
        s->open = attn;
        s->close = !attn || i == net->n_sublayers - 1;
        break;
    case SN_PLACEMENT_SIAMESE_HYBRID_PRE:
        if (attn) {
            s->op = OP_SIAMX;
            s->nn = 2;
            s->n[0] = C1;
            s->n[1] = N;
            break;
        }
        /* the MLP sub-layer is the default SiameseNorm sub-layer */
        s->op = OP_SIAM;
        s->nn = 3;
        s->n[1] = N;
        s->n[2] = IN;
        break;
    default: /* SN_PLACEMENT_SIAMESE, SN_PLACEMENT_SIAMESE_PAPER: [N_post, N_pre, N_in] */
        s->op = net->placement == SN_PLACEMENT_SIAMESE ? OP_SIAM : OP_SIAMP;
        s->nn = 3;
        s->n[1] = N;
        s->n[2] = IN;
        break;
    }
}

/* a stage's parameters: its norms', then (OP_HC) its connection weights */
static int64_t stage_params(const sn_net *net, const stage *s) {
    return norms_params(s, net->d) + (s->op == OP_HC ? hc_conn_floats(net) : 0);
}
/* a stage's saved floats per row: its norms' statistics; dynamic OP_HC: N_hc's of every stream
 * (n planes of its statistics after N_i's), then the per-row tanh values (n(n + 2) a row: for
 * stream k, tanh of its projections onto Wa_0 .. Wa_n, then onto Wb) */
static int64_t stage_spr(const sn_net *net, const stage *s) {
    const int64_t n = net->hc_rate;
    if (s->op != OP_HC || !net->hc_dynamic) return norms_spr(s, net->d);
    return norms_spr(s, net->d) + (n - 1) * sn_norm_spr(&s->n[1], net->d) + n * (n + 2);
}

/* The merge (i == S) or split (i == -1) stage's norms. */
static void end_kind(const netl *L, int64_t i, stage *s) {
    const sn_norm N = L->net->norm, ID = {SN_NORM_IDENTITY, SN_AFFINE_NONE, 0, 0.0f};
    memset(s, 0, sizeof *s);
    s->aux = -1;
    if (i < 0) {
        s->nn = L->split_norm;
        s->n[0] = N;
    } else if (L->merge == MERGE_NORM || L->merge == MERGE_SUM) {
        s->nn = 1;
        s->n[0] = N;
    } else if (L->merge == MERGE_FUSE) {
        s->nn = 3;
        s->n[0] = s->n[1] = s->n[2] = N;
        if (L->placement == SN_PLACEMENT_SIAMESE_PAPER) s->n[0] = s->n[2] = ID; /* x + N_f(y) */
    }
}

void sn_walk_start(const netl *L, sn_walk *w) {
    memset(w, 0, sizeof *w);
    w->slot = L->split_norm ? 2 : 1; /* slot 0: e; slot 1: x_0 if normed */
    for (int k = 0; k < SN_HC_MAX_RATE; k++)
        w->cur[k] = k < L->ns ? 0 : -1; /* the split's share e's */
    if (L->split_norm) w->cur[0] = 1;
}

void sn_walk_step(const netl *L, sn_walk *w, stage *s) {
    memset(s, 0, sizeof *s);
    sublayer_kind(L->net, w->i, s);
    s->p = w->p;
    s->np = stage_params(L->net, s);
    s->st = w->spr;
    for (int k = 0; k < SN_HC_MAX_RATE; k++) {
        s->in[k] = w->cur[k];
        s->out[k] = k < L->ns ? w->slot++ : -1;
    }
    s->aux = (forward_temp(s->op) || s->op == OP_PERI || s->op == OP_HC) ? w->slot++ : -1;
    if (s->op == OP_SPAN) { /* y is the layer's input x; the closing sub-layer's x' is y' */
        if (s->open) s->in[1] = s->in[0];
        s->out[1] = s->close ? s->out[0] : s->in[1];
    }
    const int64_t spr = stage_spr(L->net, s);
    w->p += s->np;
    w->spr += spr;
    if (spr > w->max_spr) w->max_spr = spr;
    if (forward_temp(s->op)) w->any_aux = 1;
    for (int k = 0; k < SN_HC_MAX_RATE; k++) w->cur[k] = s->out[k];
    w->i++;
}

/* The sub-layer (even, 0 < c < S) from which sublayer_kind's pattern of two changes, or 0:
 * before and after it, sub-layer i + 2 is of sub-layer i's kind and so takes as many
 * parameters, statistics and slots. A placement whose kinds change elsewhere says so here;
 * the last sub-layer needs no entry (walk_run steps through the sub-layers after the last whole
 * pair: SpanNorm's closes its layer at odd S). */
static int64_t kind_change(const sn_net *net) {
    int64_t c = 0;
    if (net->placement == SN_PLACEMENT_MIX_LN) c = 2 * mix_post_layers(net); /* Post, then Pre */
    if (net->placement == SN_PLACEMENT_HYBRIDNORM_STAR) c = 2; /* layer 0 is Pre-Norm */
    return c < net->n_sublayers ? c : 0;
}

/* The walk from w->i (even) to before sub-layer `end`, over sub-layers whose kinds repeat in
 * pairs: it steps through the first pair and the last sub-layers, and moves over the pairs
 * between by multiples of the first pair's increments (a pair's streams leave in slots it took,
 * so their slots move with the slot count). O(1) in end - w->i. */
static void walk_run(const netl *L, int64_t end, sn_walk *w) {
    const sn_walk a = *w;
    stage s;
    while (w->i < end && w->i < a.i + 2) sn_walk_step(L, w, &s);
    const int64_t n = (end - w->i) / 2;
    if (w->i == a.i + 2 && n > 0) {
        const int64_t dslot = w->slot - a.slot;
        for (int k = 0; k < SN_HC_MAX_RATE; k++)
            if (w->cur[k] >= 0) w->cur[k] += n * dslot;
        w->p += n * (w->p - a.p);
        w->spr += n * (w->spr - a.spr);
        w->slot += n * dslot;
        w->i += 2 * n;
    }
    while (w->i < end) sn_walk_step(L, w, &s);
}

/* The walk from the start to before sub-layer `to` (0 .. S), O(1) in `to`. */
static void walk_to(const netl *L, int64_t to, sn_walk *w) {
    const int64_t c = kind_change(L->net);
    sn_walk_start(L, w);
    if (c > 0 && c < to) walk_run(L, c, w);
    walk_run(L, to, w);
}

void sn_net_stage(const netl *L, int64_t want, stage *out) {
    const int64_t S = L->S, D = L->D;
    sn_walk w;
    walk_to(L, want >= 0 && want < S ? want : S, &w);
    if (want >= 0 && want < S) {
        sn_walk_step(L, &w, out);
        out->c = sn_net_scale_of(L->net, want);
        return;
    }
    stage s;
    end_kind(L, want < 0 ? -1 : S, &s);
    for (int k = 0; k < SN_HC_MAX_RATE; k++) s.in[k] = w.cur[k];
    s.st = w.spr;
    s.np = norms_params(&s, D);
    s.p = w.p;
    if (want < 0) { /* the split's parameters and statistics come after the merge's */
        stage m;
        end_kind(L, S, &m);
        s.p = w.p + norms_params(&m, D);
        s.st = w.spr + norms_spr(&m, D);
        s.in[0] = 0;
        for (int k = 0; k < SN_HC_MAX_RATE; k++) s.out[k] = k < L->ns ? 0 : -1;
        s.out[0] = L->split_norm ? 1 : 0;
    }
    *out = s;
}

sn_status sn_net_resolve(const sn_net *net, netl *L) {
    sn_status st = sn_net_check(net);
    if (st != SN_OK) return st;
    memset(L, 0, sizeof *L);
    L->net = net;
    L->placement = net->placement;
    L->S = net->n_sublayers;
    L->D = net->d;
    L->ns = n_streams(net);
    L->dyn = L->placement == SN_PLACEMENT_HYPER_CONN && net->hc_dynamic;
    L->split_norm = L->placement == SN_PLACEMENT_PERI_LN;
    L->merge = L->placement == SN_PLACEMENT_HYPER_CONN ? MERGE_SUM
               : two_streams(L->placement)             ? MERGE_FUSE
               : (L->placement == SN_PLACEMENT_POST_NORM || L->placement == SN_PLACEMENT_DEEPNORM)
                   ? MERGE_NONE
                   : MERGE_NORM;
    L->wslots = L->placement == SN_PLACEMENT_HYPER_CONN ? L->ns + 2 /* dH_k, then h0 and dh0 */
                : L->ns == 2 || L->placement == SN_PLACEMENT_SPAN_NORM ? 2
                                                                       : 1; /* dx (, dy) */
    L->dt = (sn_dtype)net->act_dtype;
    L->esz = sn_dtype_size(L->dt);
    sn_walk w;
    walk_to(L, L->S, &w);
    stage m, sp;
    end_kind(L, L->S, &m);
    end_kind(L, -1, &sp);
    const int64_t D = L->D, ms = norms_spr(&m, D), ss = norms_spr(&sp, D);
    L->np = w.p + norms_params(&m, D) + norms_params(&sp, D);
    L->spr = w.spr + ms + ss;
    L->nslots = w.slot;
    L->max_spr = w.max_spr > ms ? w.max_spr : ms;
    if (ss > L->max_spr) L->max_spr = ss;
    L->any_aux = w.any_aux;
    return SN_OK;
}
