/* sn-bwd-calls: a fixed workload for instruction counts (valgrind --tool=callgrind), not a
 * timing: four sn_fuse_backward (du set, dx aliasing du, dy accumulated: a SiameseNorm
 * sub-layer's call) or four sn_merge_backward calls on 256 x 768 rows, fp32 or bf16, one thread,
 * after one forward for the statistics. docs/performance.md reads the inclusive count of the
 * public call off callgrind_annotate --inclusive=yes and divides it by the 1,024 rows.
 * Usage: sn-bwd-calls fuse|merge f32|bf16 (SN_ISA picks the path). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "siamesenorm.h"

enum { R = 256, D = 768, REPS = 4, NBUF = 7 };

static void *xalloc(size_t n) {
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "sn-bwd-calls: out of memory\n");
        exit(1);
    }
    return p;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "fuse") && strcmp(argv[1], "merge")) ||
        (strcmp(argv[2], "f32") && strcmp(argv[2], "bf16"))) {
        fprintf(stderr, "usage: sn-bwd-calls fuse|merge f32|bf16\n");
        return 2;
    }
    const int fuse = !strcmp(argv[1], "fuse"), bf = !strcmp(argv[2], "bf16");
    sn_ctx *ctx;
    sn_fuse f;
    int64_t np, spr;
    if (sn_ctx_create(&ctx) || sn_ctx_set_threads(ctx, 1) ||
        sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f) ||
        sn_fuse_query(&f, D, &np, &spr)) {
        fprintf(stderr, "sn-bwd-calls: setup failed\n");
        return 1;
    }
    const size_t n = (size_t)R * D;
    float *b[NBUF];
    sn_bf16 *h[NBUF];
    for (int i = 0; i < NBUF; i++) {
        b[i] = xalloc(n * sizeof(float));
        h[i] = xalloc(n * sizeof(sn_bf16));
        for (size_t k = 0; k < n; k++) /* a fixed pattern in [-1, 1) */
            b[i][k] = (float)((k * 2654435761u + (size_t)i * 97u) % 1000u) / 500.0f - 1.0f;
    }
    float *p = xalloc((size_t)np * sizeof(float)), *dp = calloc((size_t)np, sizeof(float));
    float *st = xalloc((size_t)(R * spr) * sizeof(float));
    if (!dp) return 1;
    sn_status s = sn_fuse_init_params(&f, D, p);
    for (int64_t i = 0; i < np; i++) p[i] += 0.01f * (float)(i % 7);
    for (int i = 0; i < NBUF; i++) s |= sn_to_bf16(ctx, R, D, b[i], D, h[i], D);
    if (bf) s |= sn_fuse_forward_bf16(ctx, &f, R, D, h[0], D, h[1], D, p, h[2], D, h[3], D, st);
    else s |= sn_fuse_forward(ctx, &f, R, D, b[0], D, b[1], D, p, b[2], D, b[3], D, st);
    for (int r = 0; r < REPS; r++) {
        if (fuse && bf)
            s |= sn_fuse_backward_bf16(ctx, &f, R, D, h[4], D, h[5], D, h[0], D, h[1], D, p, st,
                                       h[5], D, h[6], D, dp, SN_ACCUMULATE_Y);
        else if (fuse)
            s |= sn_fuse_backward(ctx, &f, R, D, b[4], D, b[5], D, b[0], D, b[1], D, p, st, b[5], D,
                                  b[6], D, dp, SN_ACCUMULATE_Y);
        else if (bf)
            s |= sn_merge_backward_bf16(ctx, &f, R, D, h[4], D, h[0], D, h[1], D, p, st, h[5], D,
                                        h[6], D, dp, 0);
        else
            s |= sn_merge_backward(ctx, &f, R, D, b[4], D, b[0], D, b[1], D, p, st, b[5], D, b[6],
                                   D, dp, 0);
    }
    printf("sn-bwd-calls: %s %s on %s, status %d\n", argv[1], argv[2], sn_isa_name(sn_ctx_isa(ctx)),
           (int)s);
    sn_ctx_destroy(ctx);
    return s != SN_OK;
}
