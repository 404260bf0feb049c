/* Test: train, save a checkpoint, train on; a fresh trainer (other seed) that loads the
 * checkpoint reproduces the same losses and parameters bit for bit. Once for SiameseNorm and
 * once for HybridNorm, whose per-head q/k/v norms (trainer parameters outside the sn_net
 * block) must travel with the checkpoint too. A checkpoint of another model is refused.
 * Then hostile checkpoints (issue 26, N1, N7): a valid file with one field changed, for every
 * header field (vocab, sizes, enums, eps, n_params, step, q/k/v mode) and for the values
 * (NaN, infinity, a negative second moment) and the length, is refused by checkpoint_peek or
 * checkpoint_load. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"

#define STEPS 8

/* Trains `cfg`, checkpoints it at STEPS and checks the resumed run; then tries to load the
 * checkpoint into `other`, which must refuse it. 1 on success. */
static int resume_check(const char *path, gpt_config cfg, gpt_config other) {
    optim_config opt = {3e-3f, 0.1f, 3, 2 * STEPS, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    dataset data;
    trainer a, b;
    if (data_addition(&data, 2, cfg.ctx, 64) != 0 ||
        trainer_create(&a, &cfg, &opt, &data, 8, 11) != 0 ||
        trainer_create(&b, &cfg, &opt, &data, 8, 12) != 0)
        return 0;
    printf("%s, qk-norm %s (%zu q/k/v norm parameters):\n", gpt_placement_name(cfg.placement),
           gpt_qk_norm_name(a.model.cfg.qk_norm), a.model.size[P_QKNORM]);
    for (int s = 0; s < STEPS; s++) trainer_step(&a);
    if (checkpoint_save(&a, path) != 0 || checkpoint_load(&b, path) != 0) {
        printf("checkpoint save/load failed\n");
        return 0;
    }
    int same = b.step == a.step &&
               memcmp(a.model.params, b.model.params, a.model.n_params * sizeof(float)) == 0;
    float la[STEPS], lb[STEPS];
    for (int s = 0; s < STEPS; s++) {
        la[s] = trainer_step(&a).loss;
        lb[s] = trainer_step(&b).loss;
        printf("  step %2d: straight %.9g resumed %.9g\n", a.step, (double)la[s], (double)lb[s]);
    }
    eval_result ea = trainer_eval(&a), eb = trainer_eval(&b);
    same = same && memcmp(la, lb, sizeof la) == 0 && isfinite(la[STEPS - 1]) &&
           memcmp(a.model.params, b.model.params, a.model.n_params * sizeof(float)) == 0 &&
           memcmp(a.mom, b.mom, a.model.n_params * sizeof(float)) == 0 && ea.loss == eb.loss;
    printf("  val loss straight %.9g resumed %.9g: %s\n", ea.loss, eb.loss,
           same ? "bit-identical" : "FAIL");
    trainer c;
    if (trainer_create(&c, &other, &opt, &data, 8, 1) != 0) return 0;
    int refused = checkpoint_load(&c, path) != 0;
    printf("  loading into %s, qk-norm %s: %s\n", gpt_placement_name(other.placement),
           gpt_qk_norm_name(c.model.cfg.qk_norm), refused ? "refused (ok)" : "accepted (FAIL)");
    trainer_free(&a);
    trainer_free(&b);
    trainer_free(&c);
    data_free(&data);
    remove(path);
    return same && refused;
}

typedef struct mutation {
    const char *what;
    long offset; /* from the start; < 0: from the start of the floats (88), in floats */
    uint32_t bits;
} mutation;

/* Writes `orig` (n bytes) to path with one int32 / float changed (or the length changed by
 * `grow` bytes) and runs what --load runs: peek, create a trainer of that config, load. 1 when
 * refused. */
static int refused(const char *path, const unsigned char *orig, size_t n, const mutation *m,
                   long grow, const optim_config *opt, dataset *data) {
    unsigned char *b = calloc(n + 8, 1);
    memcpy(b, orig, n);
    if (m) {
        long at = m->offset >= 0 ? m->offset : 88 + 4 * (-m->offset - 1);
        memcpy(b + at, &m->bits, 4);
    }
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, (size_t)((long)n + grow), f);
    fclose(f);
    free(b);
    gpt_config c = {0};
    if (checkpoint_peek(path, &c) != 0) return 1;
    trainer t;
    if (trainer_create(&t, &c, opt, data, 8, 1) != 0) return 1;
    int rc = checkpoint_load(&t, path);
    trainer_free(&t);
    return rc != 0;
}

static int hostile_check(const char *path, gpt_config cfg) {
    optim_config opt = {3e-3f, 0.1f, 3, 2 * STEPS, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    dataset data;
    trainer a;
    if (data_addition(&data, 2, cfg.ctx, 64) != 0 ||
        trainer_create(&a, &cfg, &opt, &data, 8, 11) != 0)
        return 0;
    trainer_step(&a);
    int ok = checkpoint_save(&a, path) == 0;
    size_t n = 88 + 12 * a.model.n_params;
    uint32_t np = (uint32_t)a.model.n_params;
    trainer_free(&a);
    unsigned char *orig = malloc(n);
    FILE *f = fopen(path, "rb");
    ok = ok && f && fread(orig, 1, n, f) == n && fgetc(f) == EOF;
    if (f) fclose(f);
    const mutation ms[] = {
        {"vocab 255", 8, 255},
        {"vocab 0", 8, 0},
        {"vocab -1", 8, 0xffffffffu},
        {"vocab 257", 8, 257},
        {"ctx 0", 12, 0},
        {"ctx -5", 12, (uint32_t)-5},
        {"ctx 8193", 12, 8193},
        {"layers 0", 16, 0},
        {"layers 1025", 16, 1025},
        {"layers 2^30", 16, 1u << 30},
        {"heads 0", 20, 0},
        {"heads 3 (not dividing 32)", 20, 3},
        {"heads 64 > width", 20, 64},
        {"width 0", 24, 0},
        {"width 8193", 24, 8193},
        {"tied 2", 28, 2},
        {"placement -1", 32, 0xffffffffu},
        {"placement COUNT", 32, SN_PLACEMENT_COUNT},
        {"norm kind identity", 36, SN_NORM_IDENTITY},
        {"norm kind 99", 36, 99},
        {"init 3", 40, 3},
        {"scale rule explicit", 44, SN_SCALE_EXPLICIT},
        {"no_input_norm 2", 48, 2},
        {"eps NaN", 52, 0x7fc00000u},
        {"eps 0", 52, 0},
        {"eps -1", 52, 0xbf800000u},
        {"eps inf", 52, 0x7f800000u},
        {"eps 2", 52, 0x40000000u},
        {"hc rate 1 on another placement", 56, 1},
        {"hc mode 1 on another placement", 60, 1},
        {"n_params + 1", 64, np + 1},
        {"n_params - 1", 64, np - 1},
        {"n_params negative", 68, 0x80000000u},
        {"step -1 (N7)", 72, 0xffffffffu},
        {"step INT_MIN (N7)", 72, 0x80000000u},
        {"step 10^9 + 1", 72, 1000000001u},
        {"qk mode auto (unresolved)", 76, GPT_QK_AUTO},
        {"qk mode 4", 76, 4},
        {"a NaN parameter", -1, 0x7fc00000u},
        {"an infinite first moment", -(1 + (long)np + 5), 0x7f800000u},
        {"a negative second moment", -(1 + 2 * (long)np + 3), 0xbf800000u},
        {"a NaN second moment", -(1 + 2 * (long)np), 0xffc00001u},
    };
    int n_ok = 0, n_ms = (int)(sizeof ms / sizeof ms[0]);
    for (int i = 0; ok && i < n_ms; i++) {
        int r = refused(path, orig, n, &ms[i], 0, &opt, &data);
        if (!r) printf("  hostile checkpoint accepted: %s (FAIL)\n", ms[i].what);
        n_ok += r;
    }
    int lengths = ok && refused(path, orig, n, NULL, -1, &opt, &data) &&
                  refused(path, orig, n, NULL, 4, &opt, &data) &&
                  refused(path, orig, n, NULL, -(long)n + 87, &opt, &data);
    int intact = ok && !refused(path, orig, n, NULL, 0, &opt, &data);
    /* a version 2 file (no hyper-connection words, magic ...K2) of the same model loads */
    unsigned char *v2 = malloc(n);
    memcpy(v2, orig, 56);
    v2[7] = '2';
    memcpy(v2 + 56, orig + 64, n - 64);
    intact = intact && !refused(path, v2, n - 8, NULL, 0, &opt, &data);
    free(v2);
    printf("hostile checkpoints: %d of %d one-field changes refused; lengths -1, +4 and a lone "
           "partial header %s; the unchanged file %s\n",
           n_ok, n_ms, lengths ? "refused" : "ACCEPTED (FAIL)", intact ? "loads" : "FAILS");
    free(orig);
    data_free(&data);
    remove(path);
    return ok && n_ok == n_ms && lengths && intact;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "gpt-test.ckpt";
    gpt_config siamese = {.vocab = 256,
                          .ctx = addition_ctx(2),
                          .layers = 2,
                          .heads = 2,
                          .width = 32,
                          .tied = 0,
                          .placement = SN_PLACEMENT_SIAMESE,
                          .norm_kind = SN_NORM_LAYERNORM,
                          .qk_norm = GPT_QK_AUTO,
                          .eps = 1e-5f};
    gpt_config pre = siamese, hybrid = siamese, hybrid_qk = siamese, mitchell = siamese;
    mitchell.init = GPT_INIT_MITCHELL; /* same placement, another init: a different model */
    pre.placement = SN_PLACEMENT_PRE_NORM;
    hybrid.placement = hybrid_qk.placement = SN_PLACEMENT_HYBRIDNORM;
    hybrid_qk.qk_norm = GPT_QK_QK; /* same placement, q/k norms only: a different model */
    int ok = resume_check(path, siamese, pre);
    ok &= resume_check(path, hybrid, hybrid_qk);
    ok &= resume_check(path, siamese, mitchell);
    ok &= hostile_check(path, hybrid);
    return ok ? 0 : 1;
}
