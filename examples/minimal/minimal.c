/* sn-minimal: the smallest complete use of libsiamesenorm's placement layer.
 *
 * A SiameseNorm network of 4 sub-layers whose blocks are a toy z = 0.5 * tanh(h) runs one
 * forward and one backward pass on buffers this program allocates, with the loss
 * L = 0.5 * sum((out - target)^2). It prints a checksum of the output and the norms of the gradients.
 * Replacing SN_PLACEMENT_SIAMESE by SN_PLACEMENT_PRE_NORM or SN_PLACEMENT_POST_NORM runs the
 * very same loop with another norm placement.
 *
 * Build against an installed library:
 *   cc -std=c11 -O2 minimal.c $(pkg-config --cflags --libs siamesenorm) -lm -o sn-minimal
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <siamesenorm.h>

/* Every library call returns a status: print its description and stop on the first error. */
#define CHECK(call)                                                                                \
    do {                                                                                           \
        sn_status st_ = (call);                                                                    \
        if (st_ != SN_OK) {                                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, sn_status_string(st_));  \
            exit(EXIT_FAILURE);                                                                    \
        }                                                                                          \
    } while (0)

enum { S = 4, R = 8, D = 32 }; /* sub-layers, rows (tokens), model width */

/* The caller's block: z = 0.5 * tanh(h); backward dh = dz * 0.5 * (1 - tanh(h)^2). */
static void block_forward(const float *h, float *z) {
    for (int k = 0; k < R * D; k++) z[k] = 0.5f * tanhf(h[k]);
}

static void block_backward(const float *h, const float *dz, float *dh) {
    for (int k = 0; k < R * D; k++) {
        float t = tanhf(h[k]);
        dh[k] = dz[k] * 0.5f * (1.0f - t * t);
    }
}

/* Zero-filled floats; exits when memory is exhausted. */
static float *alloc(int64_t n) {
    float *p = calloc((size_t)n, sizeof *p);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(EXIT_FAILURE);
    }
    return p;
}

static double sum_sq(const float *v, int64_t n) {
    double s = 0.0;
    for (int64_t k = 0; k < n; k++) s += (double)v[k] * v[k];
    return s;
}

int main(void) {
    /* README example begins */
    sn_net net;
    CHECK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, S, D, SN_NORM_LAYERNORM, 1e-5f));
    int64_t n_params, acts_per_row, work_per_row;
    CHECK(sn_net_sizes(&net, &n_params, &acts_per_row, &work_per_row));
    float *params = alloc(n_params), *grads = alloc(n_params); /* grads start at 0 */
    float *acts = alloc(R * acts_per_row), *work = alloc(R * work_per_row);
    float *e = alloc(R * D), *h = alloc(S * R * D), *z = alloc(R * D), *out = alloc(R * D);
    float *dout = alloc(R * D), *dz = alloc(R * D), *dh = alloc(R * D), *de = alloc(R * D);
    CHECK(sn_net_init_params(&net, params)); /* every gamma 1, every beta 0 */
    for (int k = 0; k < R * D; k++)
        e[k] = sinf(0.37f * (float)k); /* stands in for the token embeddings */

    /* One pass's buffers: every split / enter / exit / merge call (and backward) takes them. */
    const sn_net_pass pass = {
        .rows = R, .params = params, .acts = acts, .grads = grads, .work = work};

    /* Forward: split, then enter -> block -> exit for each sub-layer, then merge. */
    CHECK(sn_net_split(NULL, &net, &pass, e, D));
    for (int i = 0; i < S; i++) {
        CHECK(sn_net_enter(NULL, &net, &pass, i, h + i * R * D, D));
        block_forward(h + i * R * D, z);
        CHECK(sn_net_exit(NULL, &net, &pass, i, z, D));
    }
    CHECK(sn_net_merge(NULL, &net, &pass, out, D));

    /* Backward of L = 0.5 * sum((out - target)^2): the mirror image of the forward. */
    for (int k = 0; k < R * D; k++)
        dout[k] = out[k] - cosf(0.11f * (float)k); /* dL/dout, the target being cos */
    CHECK(sn_net_merge_backward(NULL, &net, &pass, dout, D));
    for (int i = S - 1; i >= 0; i--) {
        CHECK(sn_net_exit_backward(NULL, &net, &pass, i, dz, D, 0));
        block_backward(h + i * R * D, dz, dh);
        CHECK(sn_net_enter_backward(NULL, &net, &pass, i, dh, D));
    }
    CHECK(sn_net_split_backward(NULL, &net, &pass, de, D, 0));
    /* README example ends */

    /* Inference (sampling, evaluation): the same forward on a state that does not grow with S,
     * and the same bits as the training forward's out. */
    int64_t state_per_row;
    CHECK(sn_net_infer_sizes(&net, &state_per_row));
    float *state = alloc(R * state_per_row), *out2 = alloc(R * D), *h2 = alloc(R * D);
    const sn_net_infer inf = {.rows = R, .params = params, .state = state};
    CHECK(sn_net_infer_split(NULL, &net, &inf, e, D));
    for (int i = 0; i < S; i++) {
        CHECK(sn_net_infer_enter(NULL, &net, &inf, i, h2, D));
        block_forward(h2, z);
        CHECK(sn_net_infer_exit(NULL, &net, &inf, i, z, D));
    }
    CHECK(sn_net_infer_merge(NULL, &net, &inf, out2, D));
    if (memcmp(out, out2, (size_t)(R * D) * sizeof(float)) != 0) {
        fprintf(stderr, "inference output differs from the training forward\n");
        return EXIT_FAILURE;
    }

    double checksum = 0.0; /* sum of |out|: the LayerNorm output itself sums to ~0 */
    for (int k = 0; k < R * D; k++) checksum += fabs((double)out[k]);
    double loss = 0.5 * sum_sq(dout, R * D);
    double de_norm = sqrt(sum_sq(de, R * D)), grads_norm = sqrt(sum_sq(grads, n_params));

    printf("libsiamesenorm %s (header %s)\n", sn_version_string(), SN_VERSION_STRING);
    printf("SiameseNorm, %d sub-layers, R=%d, D=%d: %lld parameters, %lld saved floats per row\n",
           S, R, D, (long long)n_params, (long long)acts_per_row);
    printf("output checksum %.6f, loss %.6f\n", checksum, loss);
    printf("inference: %lld state floats per row, output bitwise equal to training's\n",
           (long long)state_per_row);
    printf("|dL/de| = %.6f, |dL/dparams| = %.6f\n", de_norm, grads_norm);

    /* Where the parameter gradients live: norm j of stage i (stage S is the merge). */
    for (int i = 0; i <= S; i++) {
        printf("  stage %d%s:", i, i == S ? " (merge)" : "");
        for (int j = 0;; j++) {
            sn_norm norm;
            int64_t offset, count;
            sn_status st = sn_net_norm_at(&net, i, j, &norm, &offset);
            if (st == SN_ERR_INDEX) break;
            CHECK(st);
            CHECK(sn_norm_query(&norm, D, &count, NULL));
            printf(" |dN%d| = %.6f", j, sqrt(sum_sq(grads + offset, count)));
        }
        printf("\n");
    }

    int ok = sn_version_number() == SN_VERSION_NUMBER && isfinite(loss) && isfinite(de_norm) &&
             isfinite(grads_norm) && de_norm > 1e-3 && grads_norm > 1e-3;
    free(params), free(grads), free(acts), free(work), free(e), free(h), free(z), free(out);
    free(dout), free(dz), free(dh), free(de), free(state), free(out2), free(h2);
    if (!ok) {
        fprintf(stderr, "sn-minimal: unexpected result (version mismatch, or non-finite or "
                        "vanishing gradients)\n");
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}
