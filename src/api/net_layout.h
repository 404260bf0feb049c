/* The placement layer's layout: what each stage of a network is (its op and norms) and where its
 * parameters, slots and statistics planes lie, and the network's sizes. net.c's calls resolve
 * their stage here.
 *
 * Every placement is a choice, per sub-layer, of one of a few "ops", plus a split and a merge:
 *   OP_PRE    h = N(x),                      x' = x + z                 (Pre-Norm)
 *   OP_POST   h = x,                         x' = N(alpha * x + z)      (Post-Norm, DeepNorm)
 *   OP_PERI   h = N_in(x),                   x' = x + N_out(z)          (Peri-LN)
 *   OP_HMLP   u = N(x), h = u,               x' = u + z                 (HybridNorm FFN)
 *   OP_SIAM   u = N_post(x), h = N_in(u + N_pre(y)),  x' = u + z/c,  y' = y + z
 *   OP_SIAMX  h = N_x(x) + N_pre(y),                  x' = x + z/c,  y' = y + z  (hybrid_pre attn)
 *   OP_SIAMP  h = N_in(x + N_pre(y)),   x' = N_post(x + z/c),       y' = y + z  (paper form)
 *   OP_SPAN   h = v,  t = v + z,  x' = N(t), or where the sub-layer closes its layer
 *             x' = y' = y + N(t)/c  (SpanNorm: v = x inside a layer, v = y = x when the
 *             sub-layer opens it; y, the layer's input, is the clean residual spanning it)
 *   OP_HC     h = N(sum_k A_m[k] H_k),  H'_j = sum_k A_r[k][j] H_k + B[j] z  (Hyper-Connections)
 * A network has ns residual streams: 1, 2 (the SiameseNorm family: x = stream 0, y = stream 1)
 * or Hyper-Connections' n. A stage's streams are in[k] (entering) and out[k] (leaving). The
 * streams are kept in acts as R x D "slots" (row stride D): slot 0 holds e, which every stream
 * of the split shares (Peri-LN's x_0 = N_emb(e) has slot 1); every stream a sub-layer produces
 * has its own slot; OP_POST/OP_SIAMP also keep their pre-norm sum t and OP_PERI and OP_HC
 * their block output z (their backward needs them). Each norm's (or fuse's) saved statistics
 * form a "plane" of R x stats_per_row floats after the slots.
 *
 * A stage's place follows from the stages before it. Sub-layers come in pairs (attention, MLP)
 * that repeat between the few sub-layers where a placement changes its pattern, so finding
 * stage i walks O(1) stages, not i (sn_net_stage); sn_walk_step is the one step both use. */
#ifndef SN_NET_LAYOUT_H
#define SN_NET_LAYOUT_H

#include "check.h"

enum { OP_PRE, OP_POST, OP_PERI, OP_HMLP, OP_SIAM, OP_SIAMX, OP_SIAMP, OP_SPAN, OP_HC, OP_COUNT };
enum { MERGE_NONE, MERGE_NORM, MERGE_FUSE, MERGE_SUM }; /* MERGE_SUM: N_f(sum of the streams) */

/* One sub-layer (or the merge, or the split) resolved: its norms in parameter order, where its
 * parameters start, and its slots and statistics planes (in floats per row: the caller's R
 * multiplies them). */
typedef struct stage {
    int op;
    int nn;                      /* number of norms */
    sn_norm n[3];                /* in parameter (and norm_at) order */
    int64_t p;                   /* parameter offset */
    int64_t np;                  /* parameter count */
    int64_t in[SN_HC_MAX_RATE];  /* the slots of the streams entering (x_i, y_i, ...) */
    int64_t out[SN_HC_MAX_RATE]; /* ... and leaving; -1 past the streams it has */
    int64_t aux; /* t (OP_POST, OP_SIAMP, OP_SPAN) or z (OP_PERI, OP_HC) slot, -1 if none */
    int64_t st;  /* first stats plane, in floats per row from the start of the planes */
    float c;     /* z scale c_i (SiameseNorm), alpha (OP_POST) or the span's c (OP_SPAN) */
    int open;    /* OP_SPAN: the sub-layer opens its layer (v = y = x, the layer's input), */
    int close;   /* ... and/or closes it (x' = y' = y + N(t)/c) */
} stage;

/* A validated description with its global sizes. */
typedef struct netl {
    const sn_net *net;
    int placement;
    int64_t S, D;
    int merge;      /* MERGE_* */
    int split_norm; /* 1: x_0 = N_emb(e) (Peri-LN) */
    int ns;         /* residual streams: 1, 2 (the SiameseNorm family) or n (Hyper-Connections) */
    int dyn;        /* dynamic Hyper-Connections */
    int64_t np;     /* total parameters */
    int64_t nslots;
    int64_t spr;     /* statistics floats per row, all planes */
    int64_t wslots;  /* stream gradients (dx, and dy for two streams and SpanNorm; OP_HC's n and
                        two rows) */
    int64_t max_spr; /* the most statistics floats per row of any one stage (inference) */
    int any_aux;     /* some stage's forward needs a temporary slot (t of OP_POST, _SIAMP, _SPAN) */
    sn_dtype dt;     /* the element type of the streams (net->act_dtype) */
    int64_t esz;     /* ... its size in bytes */
} netl;

/* Where a walk over the sub-layers stands before sub-layer i: the parameters, statistics floats
 * per row and slots the sub-layers before it took, the slots of the streams entering it, and,
 * over the sub-layers before it, the most statistics of one and whether one needs a temporary. */
typedef struct sn_walk {
    int64_t i, p, spr, slot;
    int64_t cur[SN_HC_MAX_RATE];
    int64_t max_spr;
    int any_aux;
} sn_walk;

static inline int two_streams(int placement) {
    return placement == SN_PLACEMENT_SIAMESE || placement == SN_PLACEMENT_SIAMESE_PAPER ||
           placement == SN_PLACEMENT_SIAMESE_HYBRID_PRE;
}
static inline int n_streams(const sn_net *net) {
    return net->placement == SN_PLACEMENT_HYPER_CONN ? net->hc_rate
           : two_streams(net->placement)             ? 2
                                                     : 1;
}
/* Floats of Hyper-Connections' connection weights per sub-layer (docs/SPEC.md): alpha
 * n x (n + 1), beta n; dynamic also Wa (n + 1) x D, Wb D, s_a, s_b. */
static inline int64_t hc_conn_floats(const sn_net *net) {
    const int64_t n = net->hc_rate;
    return n * (n + 2) + (net->hc_dynamic ? (n + 2) * net->d + 2 : 0);
}
/* A_m[k] and A_r[k][j] in alpha (n x (n + 1)), B[j] after it */
#define HC_AM(al, n, k)    ((al)[(k) * ((n) + 1)])
#define HC_AR(al, n, k, j) ((al)[(k) * ((n) + 1) + 1 + (j)])
#define HC_B(al, n, j)     ((al)[(n) * ((n) + 1) + (j)])
static inline int64_t n_layers(int64_t S) { return (S + 1) / 2; }
/* Whether an op's forward needs its aux slot (the pre-norm sum t): OP_PERI keeps z there only
 * for the backward, so the inference state has no slot for it. */
static inline int forward_temp(int op) { return op == OP_POST || op == OP_SIAMP || op == OP_SPAN; }

static inline int64_t norms_params(const stage *s, int64_t D) {
    int64_t np = 0;
    for (int k = 0; k < s->nn; k++) np += sn_norm_nparams(&s->n[k], D);
    return np;
}
static inline int64_t norms_spr(const stage *s, int64_t D) {
    int64_t spr = 0;
    for (int k = 0; k < s->nn; k++) spr += sn_norm_spr(&s->n[k], D);
    return spr;
}

/* Validates net (sn_net_check) and fills L with its streams, merge and sizes. */
sn_status sn_net_resolve(const sn_net *net, netl *L);

/* Stage i of a resolved net (-1: the split, S: the merge), with its scale c for a sub-layer. */
void sn_net_stage(const netl *L, int64_t i, stage *s);

/* c_i of the SiameseNorm family and SpanNorm, alpha of DeepNorm, 1 otherwise. */
float sn_net_scale_of(const sn_net *net, int64_t i);

/* The walk before sub-layer 0; then sub-layer w->i resolved into *s (all but its c) and the
 * walk moved past it. Walking from the start to sub-layer i with sn_walk_step gives the stages
 * sn_net_stage gives (tests/test_net_layout.c). */
void sn_walk_start(const netl *L, sn_walk *w);
void sn_walk_step(const netl *L, sn_walk *w, stage *s);

#endif
