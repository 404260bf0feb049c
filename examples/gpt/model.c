/* The GPT: parameter layout, init, forward and backward. The residual wiring (split, block
 * inputs, residual updates, merge) and every norm are libsiamesenorm's sn_net calls, so the
 * placement (--norm) is one field of m->net and nothing else in this file depends on it.
 * The one other switch is the per-head q/k/v norms inside attention (--qk-norm, on by default
 * only for the placements whose definition has them: HybridNorm(*), SiameseNorm hybrid_pre),
 * libsiamesenorm's grouped norm (sn_norm_forward/backward with group = D/heads). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"

/* Stops the program on a library error: with a valid sn_net and buffers sized by sn_net_sizes
 * every call returns SN_OK, so any other status is a bug in this trainer. */
#define SN_CHECK(call)                                                                             \
    do {                                                                                           \
        sn_status st_ = (call);                                                                    \
        if (st_ != SN_OK) {                                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, sn_status_string(st_));  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The --norm names are the library's (sn_placement_name); the per-head attention norms each
 * placement's definition includes (--qk-norm auto) are the trainer's. A placement added to the
 * library needs nothing here unless its definition has q/k/v norms. */
static int placement_qk(int placement) {
    switch (placement) {
    case SN_PLACEMENT_SIAMESE_HYBRID_PRE:
    case SN_PLACEMENT_HYBRIDNORM:
    case SN_PLACEMENT_HYBRIDNORM_STAR: return GPT_QK_QKV;
    default: return GPT_QK_NONE;
    }
}

int gpt_placement_from_name(const char *name) {
    sn_placement p;
    return sn_placement_from_name(name, &p) == SN_OK ? (int)p : -1;
}

const char *gpt_placement_name(int placement) {
    const char *name = sn_placement_name((sn_placement)placement);
    return name ? name : "?";
}

void gpt_placement_list(FILE *f) {
    for (int i = 0; i < SN_PLACEMENT_COUNT; i++)
        fprintf(f, "%s%s", i ? "|" : "", gpt_placement_name(i));
}

/* A name table's index of `name` (-1 when absent), and the name at index i ("?" outside). */
static int index_of(const char *const *names, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

static const char *name_at(const char *const *names, int n, int i) {
    return i >= 0 && i < n ? names[i] : "?";
}

static const char *const qk_names[] = {"auto", "none", "qk", "qkv"};

int gpt_qk_norm_resolve(int placement, int mode) {
    return mode != GPT_QK_AUTO ? mode : placement_qk(placement);
}

int gpt_qk_norm_from_name(const char *name) { return index_of(qk_names, 4, name); }

const char *gpt_qk_norm_name(int mode) { return name_at(qk_names, 4, mode); }

int gpt_qk_norm_count(int mode) { return mode == GPT_QK_QK ? 2 : mode == GPT_QK_QKV ? 3 : 0; }

static const char *const init_names[] = {"gpt2", "flat", "mitchell"};

int gpt_init_from_name(const char *name) { return index_of(init_names, 3, name); }

const char *gpt_init_name(int init) { return name_at(init_names, 3, init); }

static const char *const tensor_names[P_COUNT] = {
    "wte", "wpe",     "qkvw",    "qkvb",  "attprojw", "attprojb", "fcw",
    "fcb", "fcprojw", "fcprojb", "norms", "qknorms",  "head",
};

const char *gpt_tensor_name(int t) { return t >= 0 && t < P_COUNT ? tensor_names[t] : "?"; }

static float *alloc_floats(size_t n, int *failed) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p) *failed = 1;
    return p;
}

int gpt_config_check(const gpt_config *c, char *why, size_t n) {
    const char *bad = NULL;
    int qk = gpt_qk_norm_resolve(c->placement, c->qk_norm);
    if (c->vocab < 2 || c->vocab > GPT_VOCAB) bad = "vocab outside 2..256";
    else if (c->ctx < 1 || c->ctx > GPT_MAX_CTX) bad = "ctx outside 1..8192";
    else if (c->layers < 1 || c->layers > GPT_MAX_LAYERS) bad = "layers outside 1..1024";
    else if (c->width < 1 || c->width > GPT_MAX_WIDTH) bad = "width outside 1..8192";
    else if (c->heads < 1 || c->heads > c->width || c->width % c->heads != 0)
        bad = "heads do not divide width";
    else if (c->tied != 0 && c->tied != 1) bad = "tied is neither 0 nor 1";
    else if (c->placement < 0 || c->placement >= SN_PLACEMENT_COUNT) bad = "unknown placement";
    else if (c->norm_kind != SN_NORM_LAYERNORM && c->norm_kind != SN_NORM_RMSNORM)
        bad = "unknown norm kind";
    else if (c->qk_norm < GPT_QK_AUTO || c->qk_norm > GPT_QK_QKV || qk < GPT_QK_NONE)
        bad = "unknown qk-norm mode";
    else if (c->init < GPT_INIT_GPT2 || c->init > GPT_INIT_MITCHELL) bad = "unknown init";
    else if (!(c->eps > 0.0f && c->eps <= 1.0f)) bad = "eps outside (0, 1]";
    else if (c->scale_rule != SN_SCALE_DEFAULT && c->scale_rule != SN_SCALE_NONE)
        bad = "unknown scale rule";
    else if (c->no_input_norm != 0 && c->no_input_norm != 1)
        bad = "no_input_norm is neither 0 nor 1";
    else if (c->act_dtype != SN_DTYPE_F32 && c->act_dtype != SN_DTYPE_BF16)
        bad = "unknown act dtype";
    else if (c->placement == SN_PLACEMENT_HYPER_CONN &&
             (c->hc_rate < 1 || c->hc_rate > SN_HC_MAX_RATE))
        bad = "hyper_connections' rate outside 1..8";
    else if (c->placement == SN_PLACEMENT_HYPER_CONN && c->hc_dynamic != 0 && c->hc_dynamic != 1)
        bad = "hyper_connections' mode is neither static nor dynamic";
    else if (c->placement != SN_PLACEMENT_HYPER_CONN && (c->hc_rate != 0 || c->hc_dynamic != 0))
        bad = "hyper-connection settings on another placement";
    if (bad) snprintf(why, n, "%s", bad);
    return bad ? -1 : 0;
}

/* The placement layer's network, the per-head norm and every tensor's size for a config that
 * passed gpt_config_check: gpt_model_create's layout, and gpt_param_count's. */
static sn_status model_layout(const gpt_config *cfg, int qk_mode, sn_net *net, sn_norm *qkn,
                              int64_t *qkn_params, int64_t *qkn_stats, int64_t *acts_per_row,
                              int64_t *work_per_row, size_t sizes[P_COUNT]) {
    int V = cfg->vocab, T = cfg->ctx, L = cfg->layers, D = cfg->width, NH = cfg->heads;
    sn_status st = sn_net_init(net, (sn_placement)cfg->placement, 2 * L, D,
                               (sn_norm_kind)cfg->norm_kind, cfg->eps);
    if (st == SN_OK) {
        net->scale_rule = (sn_scale_rule)cfg->scale_rule;
        net->act_dtype = (uint32_t)cfg->act_dtype;
        if (cfg->no_input_norm) net->input_norm.kind = SN_NORM_IDENTITY;
        if (cfg->placement == SN_PLACEMENT_HYPER_CONN) {
            net->hc_rate = cfg->hc_rate;
            net->hc_dynamic = (uint32_t)cfg->hc_dynamic;
        }
    }
    int64_t n_norm = 0;
    if (st == SN_OK) st = sn_net_sizes(net, &n_norm, acts_per_row, work_per_row);
    /* the per-head q/k/v norms: the network's norm kind and affine mode, on groups of hs */
    *qkn = net->norm;
    qkn->group = D / NH;
    if (st == SN_OK) st = sn_norm_query(qkn, D, qkn_params, qkn_stats);
    if (st != SN_OK) return st;
    size_t s[P_COUNT] = {
        (size_t)V * D,
        (size_t)T * D,
        (size_t)L * 3 * D * D,
        (size_t)L * 3 * D,
        (size_t)L * D * D,
        (size_t)L * D,
        (size_t)L * 4 * D * D,
        (size_t)L * 4 * D,
        (size_t)L * D * 4 * D,
        (size_t)L * D,
        (size_t)n_norm,
        (size_t)L * (size_t)gpt_qk_norm_count(qk_mode) * (size_t)*qkn_params,
        cfg->tied ? 0 : (size_t)V * D,
    };
    memcpy(sizes, s, sizeof s);
    return SN_OK;
}

int gpt_param_count(const gpt_config *cfg, size_t *n_params, char *why, size_t n) {
    sn_net net;
    sn_norm qkn;
    int64_t qp, qs, acts, work;
    size_t sizes[P_COUNT];
    sn_status st = model_layout(cfg, gpt_qk_norm_resolve(cfg->placement, cfg->qk_norm), &net, &qkn,
                                &qp, &qs, &acts, &work, sizes);
    if (st != SN_OK) {
        snprintf(why, n, "sn_net: %s", sn_status_string(st));
        return -1;
    }
    *n_params = 0;
    for (int i = 0; i < P_COUNT; i++) *n_params += sizes[i];
    return 0;
}

int gpt_model_create(gpt_model *m, const gpt_config *cfg, int max_b) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->max_b = max_b;
    int V = cfg->vocab, T = cfg->ctx, L = cfg->layers, D = cfg->width, NH = cfg->heads;
    m->cfg.qk_norm = gpt_qk_norm_resolve(cfg->placement, cfg->qk_norm);
    char why[96];
    if (gpt_config_check(cfg, why, sizeof why) != 0 || max_b < 1) {
        fprintf(stderr, "invalid model config: %s\n", max_b < 1 ? "no rows" : why);
        return -1;
    }
    /* the context reads SN_ISA and SN_THREADS from the environment */
    sn_status st = sn_ctx_create(&m->ctx);
    int64_t acts_per_row = 0, work_per_row = 0;
    size_t sizes[P_COUNT];
    m->n_qkn = gpt_qk_norm_count(m->cfg.qk_norm);
    if (st == SN_OK)
        st = model_layout(cfg, m->cfg.qk_norm, &m->net, &m->qkn, &m->qkn_params, &m->qkn_stats,
                          &acts_per_row, &work_per_row, sizes);
    if (st != SN_OK) {
        fprintf(stderr, "sn_net: %s\n", sn_status_string(st));
        sn_ctx_destroy(m->ctx);
        m->ctx = NULL;
        return -1;
    }
    m->n_params = 0;
    for (int i = 0; i < P_COUNT; i++) {
        m->size[i] = sizes[i];
        m->n_params += sizes[i];
    }
    int failed = 0;
    m->params = alloc_floats(m->n_params, &failed);
    m->grads = alloc_floats(m->n_params, &failed);
    if (failed) {
        fprintf(stderr, "out of memory\n");
        return -1;
    }
    size_t off = 0;
    for (int i = 0; i < P_COUNT; i++) {
        m->p[i] = m->params + off;
        m->g[i] = m->grads + off;
        off += sizes[i];
    }
    if (cfg->tied) {
        m->p[P_HEAD] = m->p[P_WTE];
        m->g[P_HEAD] = m->g[P_WTE];
    }
    size_t R = (size_t)max_b * T, S = 2 * (size_t)L;
    m->e = alloc_floats(R * D, &failed);
    const int bf16 = cfg->act_dtype == SN_DTYPE_BF16;
    m->h = alloc_floats(bf16 ? R * D : S * R * D, &failed);
    if (bf16) {
        m->h16 = calloc(S * R * D, sizeof(sn_bf16));
        m->t16 = calloc(R * D, sizeof(sn_bf16));
        if (!m->h16 || !m->t16) failed = 1;
    }
    m->qkv = alloc_floats(L * R * 3 * D, &failed);
    m->qkvr = alloc_floats(m->n_qkn ? L * R * 3 * D : 0, &failed);
    m->qkstats = alloc_floats(L * m->n_qkn * R * (size_t)m->qkn_stats, &failed);
    m->att = alloc_floats((size_t)L * max_b * NH * T * T, &failed);
    m->atty = alloc_floats(L * R * D, &failed);
    m->fch = alloc_floats(L * R * 4 * D, &failed);
    m->fchg = alloc_floats(L * R * 4 * D, &failed);
    m->z = alloc_floats(R * D, &failed);
    m->out = alloc_floats(R * D, &failed);
    m->logits = alloc_floats(R * V, &failed);
    m->losses = alloc_floats(R, &failed);
    m->acts = alloc_floats(R * (size_t)acts_per_row, &failed);
    m->work = alloc_floats(R * (size_t)work_per_row, &failed);
    m->dz = alloc_floats(R * D, &failed);
    m->dh = alloc_floats(R * D, &failed);
    m->dqkv = alloc_floats(R * 3 * D, &failed);
    m->datty = alloc_floats(R * D, &failed);
    m->dfch = alloc_floats(R * 4 * D, &failed);
    m->dfchg = alloc_floats(R * 4 * D, &failed);
    m->dout = alloc_floats(R * D, &failed);
    m->de = alloc_floats(R * D, &failed);
    m->dscratch = alloc_floats((size_t)T, &failed);
    if (failed) {
        fprintf(stderr, "out of memory\n");
        gpt_model_free(m);
        return -1;
    }
    return 0;
}

void gpt_model_free(gpt_model *m) {
    float *bufs[] = {m->params, m->grads, m->e,    m->h,    m->qkv,     m->qkvr, m->qkstats,
                     m->att,    m->atty,  m->fch,  m->fchg, m->z,       m->out,  m->logits,
                     m->losses, m->acts,  m->work, m->dz,   m->dh,      m->dqkv, m->datty,
                     m->dfch,   m->dfchg, m->dout, m->de,   m->dscratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(m->h16);
    free(m->t16);
    sn_ctx_destroy(m->ctx);
    memset(m, 0, sizeof *m);
}

/* N(0, std^2), redrawn beyond `cut` standard deviations when cut > 0 */
static float draw(uint64_t *rng, float std, float cut) {
    float z;
    do z = rng_normal(rng);
    while (cut > 0.0f && fabsf(z) > cut);
    return std * z;
}

void gpt_model_init(gpt_model *m, uint64_t seed) {
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    int L = m->cfg.layers, D = m->cfg.width, rule = m->cfg.init;
    float cut = rule == GPT_INIT_MITCHELL ? 3.0f : 0.0f;
    memset(m->params, 0, m->n_params * sizeof(float));
    for (int t = 0; t < P_COUNT; t++) {
        int is_out = t == P_ATTPW || t == P_FCPW;
        int is_weight =
            is_out || t == P_WTE || t == P_WPE || t == P_QKVW || t == P_FCW || t == P_HEAD;
        if (!is_weight) continue;
        size_t per_layer = is_out ? m->size[t] / (size_t)L : m->size[t];
        for (size_t i = 0; i < m->size[t]; i++) {
            float std = 0.02f;
            if (rule == GPT_INIT_GPT2 && is_out) std = 0.02f / sqrtf(2.0f * (float)L);
            else if (rule == GPT_INIT_MITCHELL) {
                int l = (int)(i / per_layer), fan_in = t == P_FCPW ? 4 * D : D;
                std = is_out ? 1.0f / sqrtf(2.0f * (float)fan_in * (float)(l + 1))
                             : 1.0f / sqrtf((float)D);
            }
            m->p[t][i] = draw(&rng, std, cut);
        }
    }
    /* DeepNorm scales the value, output and FFN weights at init (gain 1 for the others) */
    float gain = 1.0f;
    SN_CHECK(sn_net_init_gain(&m->net, &gain));
    if (gain != 1.0f) {
        int L = m->cfg.layers, D = m->cfg.width;
        for (int l = 0; l < L; l++)
            for (size_t i = 0; i < (size_t)D * D; i++) /* v rows of qkvw */
                m->p[P_QKVW][(size_t)l * 3 * D * D + 2 * (size_t)D * D + i] *= gain;
        for (int t = P_ATTPW; t <= P_FCPW; t += 2) /* attprojw, fcw, fcprojw */
            for (size_t i = 0; i < m->size[t]; i++) m->p[t][i] *= gain;
    }
    SN_CHECK(sn_net_init_params(&m->net, m->p[P_NORMS]));
    for (int k = 0; k < m->cfg.layers * m->n_qkn; k++)
        SN_CHECK(sn_norm_init_params(&m->qkn, m->cfg.width, m->p[P_QKNORM] + k * m->qkn_params));
}

/* The per-head q/k/v norms of layer l (only called when they are on): q, k (and v) of the raw
 * projection qkvr [R x 3D] are normalised into qkv [R x 3D], head by head (group = hs); a v
 * left unnormalised is copied. Each norm is one sn_norm_forward on a strided view (ld 3D). */
static void qk_norm_forward(gpt_model *m, int l, int R) {
    int D = m->cfg.width;
    size_t RD3 = (size_t)R * 3 * D;
    const float *raw = m->qkvr + l * RD3;
    float *qkv = m->qkv + l * RD3;
    for (int j = 0; j < m->n_qkn; j++)
        SN_CHECK(sn_norm_forward(m->ctx, &m->qkn, R, D, raw + j * D, 3 * D,
                                 m->p[P_QKNORM] + (l * m->n_qkn + j) * m->qkn_params, qkv + j * D,
                                 3 * D,
                                 m->qkstats + (size_t)(l * m->n_qkn + j) * R * m->qkn_stats));
    if (m->n_qkn == 2)
        for (int r = 0; r < R; r++)
            memcpy(qkv + (size_t)r * 3 * D + 2 * D, raw + (size_t)r * 3 * D + 2 * D,
                   (size_t)D * sizeof(float));
}

/* Their backward, in place on dqkv [R x 3D]: the gradients of the normalised q, k (v) become
 * those of the raw projection; parameter gradients accumulate into P_QKNORM's. */
static void qk_norm_backward(gpt_model *m, int l, int R) {
    int D = m->cfg.width;
    const float *raw = m->qkvr + l * (size_t)R * 3 * D;
    for (int j = 0; j < m->n_qkn; j++) {
        size_t k = (size_t)(l * m->n_qkn + j);
        SN_CHECK(sn_norm_backward(m->ctx, &m->qkn, R, D, m->dqkv + j * D, 3 * D, raw + j * D, 3 * D,
                                  m->p[P_QKNORM] + k * m->qkn_params,
                                  m->qkstats + k * R * m->qkn_stats, m->dqkv + j * D, 3 * D,
                                  m->g[P_QKNORM] + k * m->qkn_params, 0));
    }
}

/* ---- the layer calls, in the streams' type ---------------------------------------------------
 * With act_dtype bf16 the layer's streams and the matrices it exchanges are bf16, while the
 * matmuls read and write fp32: each call converts its one matrix at that boundary (t16), and the
 * block inputs are kept in bf16 (h16) and widened into h when a matmul reads them. */

static int bf16_acts(const gpt_model *m) { return m->cfg.act_dtype == SN_DTYPE_BF16; }

static void layer_split(gpt_model *m, const sn_net_pass *p, int R) {
    const int D = m->cfg.width;
    if (!bf16_acts(m)) {
        SN_CHECK(sn_net_split(m->ctx, &m->net, p, m->e, D));
        return;
    }
    SN_CHECK(sn_to_bf16(m->ctx, R, D, m->e, D, m->t16, D));
    SN_CHECK(sn_net_split_bf16(m->ctx, &m->net, p, m->t16, D));
}

/* sub-layer i's block input, as the matmul reads it */
static const float *layer_enter(gpt_model *m, const sn_net_pass *p, int i, int R) {
    const int D = m->cfg.width;
    const size_t RD = (size_t)R * D;
    if (!bf16_acts(m)) {
        float *h = m->h + (size_t)i * RD;
        SN_CHECK(sn_net_enter(m->ctx, &m->net, p, i, h, D));
        return h;
    }
    SN_CHECK(sn_net_enter_bf16(m->ctx, &m->net, p, i, m->h16 + (size_t)i * RD, D));
    SN_CHECK(sn_from_bf16(m->ctx, R, D, m->h16 + (size_t)i * RD, D, m->h, D));
    return m->h;
}

/* sub-layer i's saved block input again, for its matmul's backward */
static const float *saved_h(gpt_model *m, int i, int R) {
    const int D = m->cfg.width;
    const size_t RD = (size_t)R * D;
    if (!bf16_acts(m)) return m->h + (size_t)i * RD;
    SN_CHECK(sn_from_bf16(m->ctx, R, D, m->h16 + (size_t)i * RD, D, m->h, D));
    return m->h;
}

static void layer_exit(gpt_model *m, const sn_net_pass *p, int i, int R) {
    const int D = m->cfg.width;
    if (!bf16_acts(m)) {
        SN_CHECK(sn_net_exit(m->ctx, &m->net, p, i, m->z, D));
        return;
    }
    SN_CHECK(sn_to_bf16(m->ctx, R, D, m->z, D, m->t16, D));
    SN_CHECK(sn_net_exit_bf16(m->ctx, &m->net, p, i, m->t16, D));
}

static void layer_merge(gpt_model *m, const sn_net_pass *p, int R) {
    const int D = m->cfg.width;
    if (!bf16_acts(m)) {
        SN_CHECK(sn_net_merge(m->ctx, &m->net, p, m->out, D));
        return;
    }
    SN_CHECK(sn_net_merge_bf16(m->ctx, &m->net, p, m->t16, D));
    SN_CHECK(sn_from_bf16(m->ctx, R, D, m->t16, D, m->out, D));
}

static void layer_merge_backward(gpt_model *m, const sn_net_pass *p, int R) {
    const int D = m->cfg.width;
    if (!bf16_acts(m)) {
        SN_CHECK(sn_net_merge_backward(m->ctx, &m->net, p, m->dout, D));
        return;
    }
    SN_CHECK(sn_to_bf16(m->ctx, R, D, m->dout, D, m->t16, D));
    SN_CHECK(sn_net_merge_backward_bf16(m->ctx, &m->net, p, m->t16, D));
}

static void layer_exit_backward(gpt_model *m, const sn_net_pass *p, int i, int R) {
    const int D = m->cfg.width;
    if (!bf16_acts(m)) {
        SN_CHECK(sn_net_exit_backward(m->ctx, &m->net, p, i, m->dz, D, 0));
        return;
    }
    SN_CHECK(sn_net_exit_backward_bf16(m->ctx, &m->net, p, i, m->t16, D, 0));
    SN_CHECK(sn_from_bf16(m->ctx, R, D, m->t16, D, m->dz, D));
}

static void layer_enter_backward(gpt_model *m, const sn_net_pass *p, int i, int R) {
    const int D = m->cfg.width;
    if (!bf16_acts(m)) {
        SN_CHECK(sn_net_enter_backward(m->ctx, &m->net, p, i, m->dh, D));
        return;
    }
    SN_CHECK(sn_to_bf16(m->ctx, R, D, m->dh, D, m->t16, D));
    SN_CHECK(sn_net_enter_backward_bf16(m->ctx, &m->net, p, i, m->t16, D));
}

static void layer_split_backward(gpt_model *m, const sn_net_pass *p, int R) {
    const int D = m->cfg.width;
    if (!bf16_acts(m)) {
        SN_CHECK(sn_net_split_backward(m->ctx, &m->net, p, m->de, D, 0));
        return;
    }
    SN_CHECK(sn_net_split_backward_bf16(m->ctx, &m->net, p, m->t16, D, 0));
    SN_CHECK(sn_from_bf16(m->ctx, R, D, m->t16, D, m->de, D));
}

void gpt_zero_grad(gpt_model *m) { memset(m->grads, 0, m->n_params * sizeof(float)); }

float gpt_forward(gpt_model *m, const int *tokens, const int *targets, int b) {
    const gpt_config *c = &m->cfg;
    int T = c->ctx, D = c->width, L = c->layers, NH = c->heads, V = c->vocab;
    int R = b * T;
    size_t RD = (size_t)R * D;
    const sn_net_pass pass = {.rows = R, .params = m->p[P_NORMS], .acts = m->acts};
    m->tokens = tokens;
    m->targets = targets;
    m->last_b = b;

    encoder_forward(m->e, tokens, m->p[P_WTE], m->p[P_WPE], b, T, D);
    layer_split(m, &pass, R);
    for (int l = 0; l < L; l++) {
        float *qkv = m->qkv + (size_t)l * R * 3 * D, *atty = m->atty + l * RD;
        float *att = m->att + (size_t)l * b * NH * T * T;
        float *fch = m->fch + (size_t)l * R * 4 * D, *fchg = m->fchg + (size_t)l * R * 4 * D;

        /* attention sub-layer 2l */
        const float *h_att = layer_enter(m, &pass, 2 * l, R);
        matmul_forward(m->n_qkn ? m->qkvr + (size_t)l * R * 3 * D : qkv, h_att,
                       m->p[P_QKVW] + (size_t)l * 3 * D * D, m->p[P_QKVB] + (size_t)l * 3 * D, R, D,
                       3 * D);
        if (m->n_qkn) qk_norm_forward(m, l, R);
        attention_forward(atty, att, qkv, b, T, D, NH);
        matmul_forward(m->z, atty, m->p[P_ATTPW] + (size_t)l * D * D, m->p[P_ATTPB] + (size_t)l * D,
                       R, D, D);
        layer_exit(m, &pass, 2 * l, R);

        /* MLP sub-layer 2l + 1 */
        const float *h_mlp = layer_enter(m, &pass, 2 * l + 1, R);
        matmul_forward(fch, h_mlp, m->p[P_FCW] + (size_t)l * 4 * D * D,
                       m->p[P_FCB] + (size_t)l * 4 * D, R, D, 4 * D);
        gelu_forward(fchg, fch, (size_t)R * 4 * D);
        matmul_forward(m->z, fchg, m->p[P_FCPW] + (size_t)l * D * 4 * D,
                       m->p[P_FCPB] + (size_t)l * D, R, 4 * D, D);
        layer_exit(m, &pass, 2 * l + 1, R);
    }
    layer_merge(m, &pass, R);
    matmul_forward(m->logits, m->out, m->p[P_HEAD], NULL, R, D, V);
    m->n_valid = crossentropy_forward(m->logits, m->losses, targets, R, V);
    double sum = 0.0;
    for (int r = 0; r < R; r++) sum += m->losses[r];
    return m->n_valid ? (float)(sum / m->n_valid) : NAN;
}

void gpt_backward(gpt_model *m) {
    const gpt_config *c = &m->cfg;
    int T = c->ctx, D = c->width, L = c->layers, NH = c->heads, V = c->vocab, b = m->last_b;
    int R = b * T;
    size_t RD = (size_t)R * D;
    const sn_net_pass pass = {.rows = R,
                              .params = m->p[P_NORMS],
                              .acts = m->acts,
                              .grads = m->g[P_NORMS],
                              .work = m->work};
    if (m->n_valid == 0) return;

    /* d(mean loss)/d(logits) = (p - onehot) / N, N the targets of the whole (global) batch */
    long n = m->loss_count > 0 ? m->loss_count : m->n_valid;
    crossentropy_backward(m->logits, m->targets, R, V, 1.0f / (float)n);
    matmul_backward(m->dout, m->g[P_HEAD], NULL, m->logits, m->out, m->p[P_HEAD], R, D, V);
    layer_merge_backward(m, &pass, R);
    for (int l = L - 1; l >= 0; l--) {
        const float *qkv = m->qkv + (size_t)l * R * 3 * D, *atty = m->atty + l * RD;
        const float *att = m->att + (size_t)l * b * NH * T * T;
        const float *fch = m->fch + (size_t)l * R * 4 * D;
        const float *fchg = m->fchg + (size_t)l * R * 4 * D;

        /* MLP sub-layer 2l + 1 */
        layer_exit_backward(m, &pass, 2 * l + 1, R);
        matmul_backward(m->dfchg, m->g[P_FCPW] + (size_t)l * D * 4 * D,
                        m->g[P_FCPB] + (size_t)l * D, m->dz, fchg,
                        m->p[P_FCPW] + (size_t)l * D * 4 * D, R, 4 * D, D);
        gelu_backward(m->dfch, fch, m->dfchg, (size_t)R * 4 * D);
        matmul_backward(m->dh, m->g[P_FCW] + (size_t)l * 4 * D * D, m->g[P_FCB] + (size_t)l * 4 * D,
                        m->dfch, saved_h(m, 2 * l + 1, R), m->p[P_FCW] + (size_t)l * 4 * D * D, R,
                        D, 4 * D);
        layer_enter_backward(m, &pass, 2 * l + 1, R);

        /* attention sub-layer 2l */
        layer_exit_backward(m, &pass, 2 * l, R);
        matmul_backward(m->datty, m->g[P_ATTPW] + (size_t)l * D * D, m->g[P_ATTPB] + (size_t)l * D,
                        m->dz, atty, m->p[P_ATTPW] + (size_t)l * D * D, R, D, D);
        attention_backward(m->dqkv, m->dscratch, m->datty, qkv, att, b, T, D, NH);
        if (m->n_qkn) qk_norm_backward(m, l, R);
        matmul_backward(m->dh, m->g[P_QKVW] + (size_t)l * 3 * D * D,
                        m->g[P_QKVB] + (size_t)l * 3 * D, m->dqkv, saved_h(m, 2 * l, R),
                        m->p[P_QKVW] + (size_t)l * 3 * D * D, R, D, 3 * D);
        layer_enter_backward(m, &pass, 2 * l, R);
    }
    layer_split_backward(m, &pass, R);
    encoder_backward(m->g[P_WTE], m->g[P_WPE], m->de, m->tokens, b, T, D);
}
