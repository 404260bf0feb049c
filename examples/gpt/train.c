/* The trainer: one optimisation step, held-out evaluation, checkpoints. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "dist.h"
#include "gpt.h"

int trainer_create(trainer *t, const gpt_config *cfg, const optim_config *o, dataset *d, int batch,
                   uint64_t seed) {
    return trainer_create_dist(t, cfg, o, d, batch, seed, NULL);
}

int trainer_create_dist(trainer *t, const gpt_config *cfg, const optim_config *o, dataset *d,
                        int batch, uint64_t seed, dist *dist) {
    memset(t, 0, sizeof *t);
    int P = dist ? dist->size : 1, k = dist ? dist->rank : 0;
    if (batch < P) {
        fprintf(stderr, "--batch %d: fewer rows than the %d ranks\n", batch, P);
        return -1;
    }
    t->first = (int)((long)batch * k / P);
    t->rows = (int)((long)batch * (k + 1) / P) - t->first;
    t->dist = dist;
    /* the model's buffers hold this rank's rows only */
    if (gpt_model_create(&t->model, cfg, t->rows) != 0) return -1;
    t->opt = *o;
    t->data = d;
    t->batch = batch;
    t->rng = seed ^ 0xD1B54A32D192ED03ull;
    size_t n = t->model.n_params, R = (size_t)batch * cfg->ctx;
    t->mom = calloc(n, sizeof(float));
    t->vel = calloc(n, sizeof(float));
    t->tokens = calloc(R, sizeof(int));
    t->targets = calloc(R, sizeof(int));
    if (!t->mom || !t->vel || !t->tokens || !t->targets) {
        fprintf(stderr, "out of memory\n");
        trainer_free(t);
        return -1;
    }
    gpt_model_init(&t->model, seed);
    return 0;
}

void trainer_free(trainer *t) {
    gpt_model_free(&t->model);
    free(t->mom);
    free(t->vel);
    free(t->tokens);
    free(t->targets);
    memset(t, 0, sizeof *t);
}

step_result trainer_step(trainer *t) {
    step_result r;
    gpt_model *m = &t->model;
    size_t T = (size_t)m->cfg.ctx;
    /* every rank draws the whole global batch (the same RNG stream on each: they stay in step)
     * and trains on its own rows of it */
    data_batch(t->data, &t->rng, t->batch, t->tokens, t->targets);
    gpt_zero_grad(m);
    gpt_forward(m, t->tokens + t->first * T, t->targets + t->first * T, t->rows);
    /* the global batch's mean loss: the ranks' loss sums and target counts, summed in rank
     * order (one rank: exactly gpt_forward's mean) */
    double sums[2] = {0.0, (double)m->n_valid};
    for (size_t i = 0; i < (size_t)t->rows * T; i++) sums[0] += m->losses[i];
    if (t->dist) dist_sum_doubles(t->dist, sums, 2);
    m->loss_count = (long)sums[1];
    r.loss = sums[1] > 0 ? (float)(sums[0] / sums[1]) : NAN;
    gpt_backward(m);
    /* each rank's gradient is its rows' share of d(global mean)/dw: their sum is the whole
     * batch's gradient, the same bytes on every rank */
    if (t->dist) dist_sum_floats(t->dist, m->grads, m->n_params);
    r.grad_norm = clip_grad(&t->model, t->opt.clip);
    r.lr = lr_at(&t->opt, t->step);
    if (isfinite(r.loss) && isfinite(r.grad_norm))
        adamw_update(&t->model, t->mom, t->vel, &t->opt, r.lr, t->step + 1);
    t->step++;
    return r;
}

eval_result trainer_eval(trainer *t) {
    const dataset *d = t->data;
    gpt_model *m = &t->model;
    int T = d->T, V = m->cfg.vocab;
    double loss_sum = 0.0;
    long tokens = 0, correct = 0;
    for (int first = 0; first < d->n_val; first += m->max_b) {
        int b = d->n_val - first < m->max_b ? d->n_val - first : m->max_b;
        const int *tok = d->val_tokens + (size_t)first * T;
        const int *tgt = d->val_targets + (size_t)first * T;
        float loss = gpt_forward(m, tok, tgt, b);
        if (m->n_valid == 0) continue;
        loss_sum += (double)loss * m->n_valid;
        tokens += m->n_valid;
        /* exact match under teacher forcing: every answer byte is the argmax. That is the same
         * as greedy decoding getting the whole answer right. */
        for (int r = 0; r < b; r++) {
            int ok = 1;
            for (int p = 0; p < T && ok; p++) {
                int y = tgt[r * T + p];
                if (y < 0) continue;
                ok = argmax(m->logits + ((size_t)r * T + p) * V, V) == y;
            }
            correct += ok;
        }
    }
    eval_result e;
    e.loss = tokens ? loss_sum / (double)tokens : NAN;
    e.accuracy = d->kind == DATA_ADDITION ? (double)correct / d->n_val : -1.0;
    return e;
}

/* ---- checkpoints -------------------------------------------------------------------------- */

/* version 2: the config gained init, scale rule, input norm and eps; version 3: the
 * hyper-connections' rate and mode (cfg[12], cfg[13]); version 2 files still load (as 0, 0) */
static const char ckpt_magic[8] = {'S', 'N', 'G', 'P', 'T', 'C', 'K', '3'};
static const char ckpt_magic2[8] = {'S', 'N', 'G', 'P', 'T', 'C', 'K', '2'};

#define CKPT_CFG  14
#define CKPT_CFG2 12 /* version 2 */
typedef struct ckpt_header {
    char magic[8];
    int32_t cfg[CKPT_CFG];
    int64_t n_params;
    int32_t step;
    int32_t qk_norm; /* gpt_qk_norm, resolved */
    uint64_t rng;
} ckpt_header;

static void cfg_to_ints(const gpt_config *c, int32_t *v) {
    v[0] = c->vocab, v[1] = c->ctx, v[2] = c->layers, v[3] = c->heads;
    v[4] = c->width, v[5] = c->tied, v[6] = c->placement, v[7] = c->norm_kind;
    v[8] = c->init, v[9] = c->scale_rule;
    v[10] = c->no_input_norm;
    memcpy(&v[11], &c->eps, sizeof(float));
    v[12] = c->hc_rate, v[13] = c->hc_dynamic;
}

static void ints_to_cfg(const int32_t *v, gpt_config *c) {
    c->vocab = v[0], c->ctx = v[1], c->layers = v[2], c->heads = v[3];
    c->width = v[4], c->tied = v[5], c->placement = v[6], c->norm_kind = v[7];
    c->init = v[8], c->scale_rule = v[9], c->no_input_norm = v[10];
    memcpy(&c->eps, &v[11], sizeof(float));
    c->hc_rate = v[12], c->hc_dynamic = v[13];
}

int checkpoint_save(const trainer *t, const char *path) {
    ckpt_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ckpt_magic, sizeof h.magic);
    cfg_to_ints(&t->model.cfg, h.cfg);
    h.n_params = (int64_t)t->model.n_params;
    h.step = t->step;
    h.qk_norm = t->model.cfg.qk_norm;
    h.rng = t->rng;
    /* whole or not at all: a failed save (disk full, a file size limit, a kill) leaves the
     * previous file at path, which may be the one this run was loaded from */
    af_file a;
    if (af_open(&a, path) != 0) return -1;
    size_t n = t->model.n_params;
    if (fwrite(&h, sizeof h, 1, a.f) != 1 || fwrite(t->model.params, sizeof(float), n, a.f) != n ||
        fwrite(t->mom, sizeof(float), n, a.f) != n || fwrite(t->vel, sizeof(float), n, a.f) != n) {
        fprintf(stderr, "%s: write failed; the file is as it was\n", path);
        af_abort(&a);
        return -1;
    }
    return af_commit(&a);
}

int ckpt_read_header(FILE *f, uint64_t len, ckpt_info *info, char *why, size_t n) {
    ckpt_header h;
    memset(&h, 0, sizeof h);
    /* version 2: the same fields without cfg[12], cfg[13] */
    const size_t tail = sizeof h - offsetof(ckpt_header, n_params);
    int v2 = 0;
    if (len >= sizeof h.magic && fread(h.magic, sizeof h.magic, 1, f) == 1)
        v2 = memcmp(h.magic, ckpt_magic2, sizeof h.magic) == 0;
    const size_t hsize = v2 ? sizeof h - (CKPT_CFG - CKPT_CFG2) * sizeof(int32_t) : sizeof h;
    if (len < hsize || (!v2 && memcmp(h.magic, ckpt_magic, sizeof h.magic) != 0) ||
        fread(h.cfg, sizeof(int32_t), v2 ? CKPT_CFG2 : CKPT_CFG, f) !=
            (v2 ? CKPT_CFG2 : CKPT_CFG) ||
        fread(&h.n_params, tail, 1, f) != 1) {
        snprintf(why, n, "not an sn-gpt-train checkpoint");
        return -1;
    }
    gpt_config c;
    memset(&c, 0, sizeof c);
    ints_to_cfg(h.cfg, &c);
    c.qk_norm = h.qk_norm;
    /* every field against its use: the tokens are bytes, the sizes build buffers, step counts
     * AdamW's t from 1, n_params and the file's length must agree with the config */
    char bad[96];
    size_t want = 0;
    if (c.vocab != GPT_VOCAB) {
        snprintf(why, n, "vocab %d, but the tasks' tokens are bytes (vocab %d)", c.vocab,
                 GPT_VOCAB);
        return -1;
    }
    if (gpt_config_check(&c, bad, sizeof bad) != 0) {
        snprintf(why, n, "invalid model config: %s", bad);
        return -1;
    }
    if (h.qk_norm < GPT_QK_NONE || h.qk_norm > GPT_QK_QKV) {
        snprintf(why, n, "invalid q/k/v norm mode %d", (int)h.qk_norm);
        return -1;
    }
    if (h.step < 0 || h.step > GPT_MAX_STEPS) {
        snprintf(why, n, "step %d outside 0..%ld", (int)h.step, GPT_MAX_STEPS);
        return -1;
    }
    if (gpt_param_count(&c, &want, bad, sizeof bad) != 0) {
        snprintf(why, n, "invalid model config: %s", bad);
        return -1;
    }
    if (h.n_params != (int64_t)want) {
        snprintf(why, n, "%lld parameters, but its config has %zu", (long long)h.n_params, want);
        return -1;
    }
    /* want <= ~2^43 (gpt_limits.h): 3 * 4 * want + sizeof h cannot overflow */
    uint64_t body = 3u * (uint64_t)want * sizeof(float);
    if (len - hsize != body) {
        snprintf(why, n, "%llu bytes, but its config needs %llu", (unsigned long long)len,
                 (unsigned long long)(body + hsize));
        return -1;
    }
    info->cfg = c;
    info->step = h.step;
    info->rng = h.rng;
    info->n_params = want;
    return 0;
}

int ckpt_read_body(FILE *f, size_t n_params, float *params, float *mom, float *vel, char *why,
                   size_t n) {
    if (fread(params, sizeof(float), n_params, f) != n_params ||
        fread(mom, sizeof(float), n_params, f) != n_params ||
        fread(vel, sizeof(float), n_params, f) != n_params) {
        snprintf(why, n, "truncated checkpoint");
        return -1;
    }
    /* the weights and moments a finished step leaves are finite, the second moments >= 0
     * (AdamW divides by their square root) */
    for (size_t i = 0; i < n_params; i++)
        if (!isfinite(params[i]) || !isfinite(mom[i]) || !isfinite(vel[i]) || !(vel[i] >= 0.0f)) {
            snprintf(why, n,
                     "parameter %zu or its moments are not finite (or a negative second "
                     "moment)",
                     i);
            return -1;
        }
    return 0;
}

/* A regular file (open_regular) as a FILE, or NULL after a message. */
static FILE *open_regular_file(const char *path) {
    int fd = open_regular("", path, NULL);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        perror(path);
        close(fd);
    }
    return f;
}

int checkpoint_replaceable(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return errno == ENOENT ? 0 : (perror(path), -1);
    struct stat st;
    char head[sizeof ckpt_magic];
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             (st.st_size == 0 || (read(fd, head, sizeof head) == (ssize_t)sizeof head &&
                                  memcmp(head, ckpt_magic, sizeof head - 1) == 0));
    close(fd);
    if (!ok)
        fprintf(stderr, "%s: exists and is not an sn-gpt-train checkpoint: not replacing it\n",
                path);
    return ok ? 0 : -1;
}

/* Opens a checkpoint and reads its header: the open file, or NULL after printing why. */
static FILE *open_checkpoint(const char *path, ckpt_info *info) {
    FILE *f = open_regular_file(path);
    if (!f) return NULL;
    char why[160];
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        fclose(f);
        return NULL;
    }
    if (ckpt_read_header(f, (uint64_t)len, info, why, sizeof why) != 0) {
        fprintf(stderr, "%s: refused: %s\n", path, why);
        fclose(f);
        return NULL;
    }
    return f;
}

int checkpoint_peek(const char *path, gpt_config *cfg) {
    ckpt_info info;
    FILE *f = open_checkpoint(path, &info);
    if (!f) return -1;
    fclose(f);
    int act_dtype = cfg->act_dtype; /* not in the checkpoint: the run's choice */
    *cfg = info.cfg;
    cfg->act_dtype = act_dtype;
    cfg->qk_norm = gpt_qk_norm_resolve(info.cfg.placement, info.cfg.qk_norm);
    return 0;
}

int checkpoint_load(trainer *t, const char *path) {
    ckpt_info info;
    FILE *f = open_checkpoint(path, &info);
    if (!f) return -1;
    int32_t mine[CKPT_CFG], theirs[CKPT_CFG];
    cfg_to_ints(&t->model.cfg, mine);
    cfg_to_ints(&info.cfg, theirs);
    char why[160];
    int rc = 0;
    if (memcmp(mine, theirs, sizeof mine) != 0 || info.n_params != t->model.n_params ||
        info.cfg.qk_norm != t->model.cfg.qk_norm) {
        fprintf(stderr, "%s: checkpoint was written for a different model\n", path);
        rc = -1;
    } else if (ckpt_read_body(f, info.n_params, t->model.params, t->mom, t->vel, why, sizeof why) !=
               0) {
        fprintf(stderr, "%s: refused: %s\n", path, why);
        rc = -1;
    }
    fclose(f);
    if (rc == 0) {
        t->step = info.step;
        t->rng = info.rng;
    }
    return rc;
}
