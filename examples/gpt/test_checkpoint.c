/* Test: train, save a checkpoint, train on; a fresh trainer (other seed) that loads the
 * checkpoint reproduces the same losses and parameters bit for bit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpt.h"

#define STEPS 8

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "gpt-test.ckpt";
    gpt_config cfg = {256, addition_ctx(2), 2, 2, 32, 0, SN_PLACEMENT_SIAMESE, SN_NORM_LAYERNORM};
    optim_config opt = {3e-3f, 0.1f, 3, 2 * STEPS, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    dataset data;
    trainer a, b;
    if (data_addition(&data, 2, cfg.ctx, 64) != 0 ||
        trainer_create(&a, &cfg, &opt, &data, 8, 11) != 0 ||
        trainer_create(&b, &cfg, &opt, &data, 8, 12) != 0)
        return 1;
    for (int s = 0; s < STEPS; s++)
        trainer_step(&a);
    if (checkpoint_save(&a, path) != 0 || checkpoint_load(&b, path) != 0) {
        printf("checkpoint save/load failed\n");
        return 1;
    }
    int same = b.step == a.step && memcmp(a.model.params, b.model.params,
                                          a.model.n_params * sizeof(float)) == 0;
    float la[STEPS], lb[STEPS];
    for (int s = 0; s < STEPS; s++) {
        la[s] = trainer_step(&a).loss;
        lb[s] = trainer_step(&b).loss;
        printf("step %2d: straight %.9g resumed %.9g\n", a.step, (double)la[s], (double)lb[s]);
    }
    eval_result ea = trainer_eval(&a), eb = trainer_eval(&b);
    same = same && memcmp(la, lb, sizeof la) == 0 && isfinite(la[STEPS - 1]) &&
           memcmp(a.model.params, b.model.params, a.model.n_params * sizeof(float)) == 0 &&
           memcmp(a.mom, b.mom, a.model.n_params * sizeof(float)) == 0 && ea.loss == eb.loss;
    printf("val loss straight %.9g resumed %.9g: %s\n", ea.loss, eb.loss,
           same ? "bit-identical" : "FAIL");
    /* a checkpoint of another model must be refused */
    gpt_config other = cfg;
    other.placement = SN_PLACEMENT_PRE_NORM;
    trainer c;
    if (trainer_create(&c, &other, &opt, &data, 8, 1) != 0)
        return 1;
    int refused = checkpoint_load(&c, path) != 0;
    printf("loading into a pre-norm model: %s\n", refused ? "refused (ok)" : "accepted (FAIL)");
    trainer_free(&a);
    trainer_free(&b);
    trainer_free(&c);
    data_free(&data);
    remove(path);
    return same && refused ? 0 : 1;
}
