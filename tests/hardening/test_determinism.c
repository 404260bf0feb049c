/* Determinism: identical inputs give bitwise-identical outputs and gradients
 *   - on repeated calls (3 passes of every placement, same context),
 *   - across thread counts: NULL context, 1, 2 and 4 built-in threads, and a caller hook
 *     that runs the tasks in reverse order (same kernel path: the header's promise),
 *   - across buffer placements: the same rows at every float offset 0..15 of a 64-byte
 *     aligned block and with row strides D..D+5 (SIMD kernels must not let the alignment of
 *     a view change the arithmetic),
 *   - across runs: `test_determinism --digest` prints a digest of every result per kernel
 *     path; the test 'determinism-runs' runs it twice in different environments (malloc
 *     perturbation, SN_THREADS) and compares.
 * Every kernel path of this CPU is checked against itself. */
#include "netrun.h"

#include <stdalign.h>

static const char *g_path;

static uint64_t fnv(uint64_t h, const float *p, int64_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (int64_t k = 0; k < n * (int64_t)sizeof(float); k++) h = (h ^ b[k]) * 0x100000001B3ull;
    return h;
}

static uint64_t digest(const netrun *n) {
    uint64_t h = 0xCBF29CE484222325ull;
    int64_t RD = n->R * n->net.d;
    h = fnv(h, n->out, RD);
    h = fnv(h, n->grads, n->np);
    return fnv(h, n->de, RD);
}

static void reverse_hook(void *user, int64_t n_tasks, sn_task_fn task, void *arg) {
    (void)user;
    for (int64_t i = n_tasks - 1; i >= 0; i--) task(arg, i);
}

/* Every placement, LayerNorm and RMSNorm: one digest per (path); checks repeats and threads. */
static uint64_t nets(sn_isa isa, int check_threads) {
    uint64_t all = 0xCBF29CE484222325ull;
    const int64_t R = 32, D = 544; /* 17 K elements per matrix: above the threading cut-off */
    float *e = tu_fzeros(R * D);
    tu_rng g = {2024};
    for (int64_t k = 0; k < R * D; k++) e[k] = (float)(2.0 * tu_gauss(&g) + 0.3);
    for (int pl = 0; pl < SN_PLACEMENT_COUNT; pl++)
        for (int kind = 0; kind < 2; kind++) {
            netrun n;
            if (netrun_init(&n, (sn_placement)pl, 4, D, R, (sn_norm_kind)kind, 77 + (uint64_t)pl)) {
                CHECK_MSG(0, "netrun_init placement %d", pl);
                continue;
            }
            sn_ctx *base = tu_isa_ctx(isa);
            CHECK_OK(netrun_pass(base, &n, e));
            uint64_t ref = digest(&n);
            for (int rep = 0; rep < 2; rep++) {
                CHECK_OK(netrun_pass(base, &n, e));
                CHECK_MSG(digest(&n) == ref, "[%s] placement %d kind %d: repeat %d differs", g_path,
                          pl, kind, rep + 1);
            }
            if (check_threads) {
                for (int t = 2; t <= 5; t += t == 2 ? 2 : 1) { /* 2, 4 threads; the hook */
                    sn_ctx *c = tu_isa_ctx(isa);
                    if (t <= 4) CHECK_OK(sn_ctx_set_threads(c, t));
                    else CHECK_OK(sn_ctx_set_parallel_for(c, reverse_hook, NULL, 4));
                    CHECK_OK(netrun_pass(c, &n, e));
                    CHECK_MSG(digest(&n) == ref,
                              "[%s] placement %d kind %d: %s differs from "
                              "1 thread",
                              g_path, pl, kind, t <= 4 ? "threads" : "reverse hook");
                    sn_ctx_destroy(c);
                }
                if (isa == sn_ctx_isa(NULL)) {
                    CHECK_OK(netrun_pass(NULL, &n, e));
                    CHECK_MSG(digest(&n) == ref, "[%s] placement %d: NULL ctx differs", g_path, pl);
                }
            }
            all ^= ref + 0x9E3779B97F4A7C15ull + (all << 6) + (all >> 2);
            sn_ctx_destroy(base);
            netrun_free(&n);
        }
    free(e);
    return all;
}

/* The same rows placed at every offset and stride: norm forward/backward and fuse forward. */
static void placements(sn_ctx *ctx) {
    static const int64_t Ds[] = {1, 3, 8, 17, 64, 100, 257};
    for (size_t di = 0; di < sizeof Ds / sizeof Ds[0]; di++) {
        /* cap: a multiple of 16 floats, as C11's aligned_alloc(64, bytes) requires */
        const int64_t R = 5, D = Ds[di], cap = (R * (D + 5) + 16 + 64 + 15) / 16 * 16;
        float *x0 = tu_fzeros(R * D), *d0 = tu_fzeros(R * D);
        tu_rng g = {(uint64_t)D};
        for (int64_t k = 0; k < R * D; k++)
            x0[k] = (float)(tu_gauss(&g) + 0.5), d0[k] = (float)tu_unif(&g, -1.0, 1.0);
        sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
        sn_fuse f;
        CHECK_OK(sn_fuse_init(&f, SN_NORM_RMSNORM, SN_AFFINE_SCALE, 1e-5f));
        float *p = tu_fzeros(3 * D), *ref_o = tu_fzeros(R * D), *ref_dx = tu_fzeros(R * D),
              *ref_dp = tu_fzeros(2 * D), *ref_h = tu_fzeros(R * D);
        for (int64_t j = 0; j < 3 * D; j++) p[j] = (float)(1.0 + 0.3 * tu_unif(&g, -1.0, 1.0));
        /* 64-byte aligned arenas, views at offset off (floats) with stride ld */
        float *ax = aligned_alloc(64, (size_t)cap * 4), *ad = aligned_alloc(64, (size_t)cap * 4),
              *ao = aligned_alloc(64, (size_t)cap * 4), *ay = aligned_alloc(64, (size_t)cap * 4),
              *st = tu_fzeros(2 * R + 3 * R), *dx = tu_fzeros(R * D), *dp = tu_fzeros(2 * D);
        for (int off = 0; off < 16; off++)
            for (int64_t ld = D; ld <= D + 5; ld++) {
                float *x = ax + off, *dd = ad + (15 - off), *o = ao + off, *y = ay + (off * 7) % 16;
                for (int64_t r = 0; r < R; r++)
                    for (int64_t j = 0; j < D; j++)
                        x[r * ld + j] = x0[r * D + j], dd[r * ld + j] = d0[r * D + j],
                                   y[r * ld + j] = d0[r * D + j] * 3.0f;
                memset(dp, 0, (size_t)(2 * D) * 4);
                CHECK_OK(sn_norm_forward(ctx, &n, R, D, x, ld, p, o, ld, st));
                CHECK_OK(sn_norm_backward(ctx, &n, R, D, dd, ld, x, ld, p, st, dx, D, dp, 0));
                int same = 1;
                for (int64_t r = 0; r < R; r++)
                    for (int64_t j = 0; j < D; j++) {
                        if (off == 0 && ld == D) ref_o[r * D + j] = o[r * ld + j];
                        same &= memcmp(&o[r * ld + j], &ref_o[r * D + j], 4) == 0;
                    }
                if (off == 0 && ld == D)
                    memcpy(ref_dx, dx, (size_t)(R * D) * 4),
                        memcpy(ref_dp, dp, (size_t)(2 * D) * 4);
                same &= memcmp(dx, ref_dx, (size_t)(R * D) * 4) == 0;
                same &= memcmp(dp, ref_dp, (size_t)(2 * D) * 4) == 0;
                CHECK_MSG(same, "[%s] norm D=%lld at offset %d stride %lld differs from offset 0",
                          g_path, (long long)D, off, (long long)ld);
                CHECK_OK(sn_fuse_forward(ctx, &f, R, D, x, ld, y, ld, p, NULL, 0, o, ld, NULL));
                same = 1;
                for (int64_t r = 0; r < R; r++)
                    for (int64_t j = 0; j < D; j++) {
                        if (off == 0 && ld == D) ref_h[r * D + j] = o[r * ld + j];
                        same &= memcmp(&o[r * ld + j], &ref_h[r * D + j], 4) == 0;
                    }
                CHECK_MSG(same, "[%s] fuse D=%lld at offset %d stride %lld differs from offset 0",
                          g_path, (long long)D, off, (long long)ld);
            }
        free(x0), free(d0), free(p), free(ref_o), free(ref_dx), free(ref_dp), free(ref_h);
        free(ax), free(ad), free(ao), free(ay), free(st), free(dx), free(dp);
    }
}

int main(int argc, char **argv) {
    int digest_only = argc > 1 && strcmp(argv[1], "--digest") == 0;
    static const sn_isa isas[] = {SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512};
    for (size_t i = 0; i < 3; i++) {
        sn_ctx *ctx = tu_isa_ctx(isas[i]);
        if (!ctx) continue;
        g_path = sn_isa_name(isas[i]);
        if (digest_only) {
            printf("%s %016llx\n", g_path, (unsigned long long)nets(isas[i], 0));
        } else {
            nets(isas[i], 1);
            placements(ctx);
        }
        sn_ctx_destroy(ctx);
    }
    return digest_only ? (tu_failures ? 1 : 0) : tu_finish("determinism");
}
