/* Test: train, save a checkpoint, train on; a fresh trainer (other seed) that loads the
 * checkpoint reproduces the same losses and parameters bit for bit. Once for SiameseNorm and
 * once for HybridNorm, whose per-head q/k/v norms (trainer parameters outside the sn_net
 * block) must travel with the checkpoint too. A checkpoint of another model is refused. */
#include <math.h>
#include <stdio.h>
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
    return ok ? 0 : 1;
}
