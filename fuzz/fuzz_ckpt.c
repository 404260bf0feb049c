/* libFuzzer harness: sn-gpt-train's checkpoint loader (examples/gpt/train.c: ckpt_read_header
 * and ckpt_read_body, what checkpoint_peek and checkpoint_load run) on arbitrary bytes as the
 * file. Oracle:
 *   - no crash, no out-of-bounds access, no UB (ASan, UBSan);
 *   - a file the loader accepts is one the trainer can use: vocab 256 (the tasks' bytes), a
 *     config gpt_config_check accepts, a resolved q/k/v norm mode, 0 <= step <= GPT_MAX_STEPS,
 *     n_params as the config needs, the length exactly the header and 3 * n_params floats,
 *     every value finite and every second moment >= 0;
 *   - then (when its activations are small enough for the fuzzer's memory limit) a model of
 *     that config, given the loaded parameters, runs a forward and a backward pass over one
 *     row of byte tokens: what --load leads to, where the audit's vocab < 256 wrote out of
 *     bounds (N1). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"

#define REQUIRE(c)                                                                                 \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_ckpt: accepted a checkpoint with !(%s)\n", #c);                  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* One row through a model of the loaded config and parameters. */
static void use(const ckpt_info *in, const float *params) {
    const gpt_config *c = &in->cfg;
    size_t T = (size_t)c->ctx, L = (size_t)c->layers, D = (size_t)c->width;
    if (L * (size_t)c->heads * T * T + L * T * D * 16 > ((size_t)1 << 22)) return;
    gpt_model m;
    REQUIRE(gpt_model_create(&m, c, 1) == 0);
    REQUIRE(m.n_params == in->n_params);
    memcpy(m.params, params, in->n_params * sizeof(float));
    int *tok = malloc(2 * T * sizeof(int));
    if (tok) {
        for (size_t t = 0; t < 2 * T; t++) tok[t] = (int)((t * 37 + 11) % GPT_VOCAB);
        gpt_forward(&m, tok, tok + T, 1);
        gpt_zero_grad(&m);
        gpt_backward(&m);
        free(tok);
    }
    gpt_model_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) return 0;
    ckpt_info in;
    char why[160];
    if (ckpt_read_header(f, size, &in, why, sizeof why) == 0) {
        char bad[96];
        size_t want = 0;
        REQUIRE(in.cfg.vocab == GPT_VOCAB);
        REQUIRE(gpt_config_check(&in.cfg, bad, sizeof bad) == 0);
        REQUIRE(in.cfg.qk_norm >= GPT_QK_NONE && in.cfg.qk_norm <= GPT_QK_QKV);
        REQUIRE(in.step >= 0 && in.step <= GPT_MAX_STEPS);
        REQUIRE(gpt_param_count(&in.cfg, &want, bad, sizeof bad) == 0 && want == in.n_params);
        /* the header: 88 bytes (version 3), 80 (version 2: magic ending in '2') */
        REQUIRE(size == (size >= 8 && data[7] == '2' ? 80 : 88) + 12 * in.n_params);
        float *p = malloc(3 * in.n_params * sizeof(float) + 1);
        if (p && ckpt_read_body(f, in.n_params, p, p + in.n_params, p + 2 * in.n_params, why,
                                sizeof why) == 0) {
            for (size_t i = 0; i < 3 * in.n_params; i++)
                REQUIRE(p[i] - p[i] == 0.0f && (i < 2 * in.n_params || p[i] >= 0.0f));
            use(&in, p);
        }
        free(p);
    }
    fclose(f);
    return 0;
}
