/* Determinism across thread counts (header, sn_ctx): on one kernel path, a context with 1 thread,
 * the built-in pool with 2 and 3 threads, a caller parallel-for hook (tasks run in reverse
 * order, or interleaved) and 2 threads with caller scratch must give bitwise-identical outputs
 * for every primitive and for a whole network pass, on shapes large enough to be split
 * (R * D well above the ~16 K threshold). The NULL context must match the context on the best
 * path. Two identical calls must also match.
 *
 * Then again with rows holding NaNs of different signs and payloads (issue 26, N8), under the
 * header's carve-out: every output that is not a NaN stays bitwise identical across thread
 * counts, and a NaN output stays a NaN, but its sign and payload may differ on the SIMD paths.
 * SN_TEST_NAN_BITS=1 compares those bits too (and fails on AVX2/AVX-512: the carve-out is
 * needed). */
#include "block.h"
#include "testutil.h"

static void pfor_reverse(void *user, int64_t n, sn_task_fn task, void *arg) {
    (void)user;
    for (int64_t i = n - 1; i >= 0; i--) task(arg, i);
}

static void pfor_interleave(void *user, int64_t n, sn_task_fn task, void *arg) {
    (void)user;
    for (int64_t i = 1; i < n; i += 2) task(arg, i);
    for (int64_t i = 0; i < n; i += 2) task(arg, i);
}

/* 256 rows, 64 in sanitizer builds (SN_TEST_SMALL): either is well above the split threshold
 * (16 K elements) and spans several parameter-gradient chunks (16 rows of 1000) */
#ifdef SN_TEST_SMALL
#define R 64
#else
#define R 256
#endif
#define D 1000
#define N (R * D)

typedef struct outs {
    float *buf[40];
    int64_t len[40];
    int n;
} outs;

static float *out_new(outs *o, int64_t len) {
    float *p = tu_falloc(len);
    tu_canary_fill(p, len);
    o->buf[o->n] = p, o->len[o->n] = len, o->n++;
    return p;
}

/* inputs shared by every run */
static float *X, *Y, *W, *W2, *P;

static void run_prims(const sn_ctx *ctx, outs *o) {
    const sn_norm norms[3] = {{SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f},
                              {SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0, 1e-6f},
                              {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 40, 1e-5f}};
    o->n = 0;
    for (int k = 0; k < 3; k++) {
        float *out = out_new(o, N), *st = out_new(o, 2 * R * 25), *dx = out_new(o, N);
        float *dp = out_new(o, 2 * D);
        memcpy(dp, W2, 2 * D * sizeof(float)); /* nonzero prefill */
        CHECK_OK(sn_norm_forward(ctx, &norms[k], R, D, X, D, P, out, D, st));
        CHECK_OK(sn_norm_backward(ctx, &norms[k], R, D, W, D, X, D, P, st, dx, D, dp, 0));
    }
    sn_fuse f;
    CHECK_OK(sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f));
    f.y.kind = SN_NORM_RMSNORM;
    float *u = out_new(o, N), *h = out_new(o, N), *st = out_new(o, 5 * R);
    float *dx = out_new(o, N), *dy = out_new(o, N), *dp = out_new(o, 6 * D);
    memcpy(dp, W2, 6 * D * sizeof(float));
    CHECK_OK(sn_fuse_forward(ctx, &f, R, D, X, D, Y, D, P, u, D, h, D, st));
    memcpy(dy, W2, (size_t)N * sizeof(float));
    CHECK_OK(sn_fuse_backward(ctx, &f, R, D, W, D, W2, D, X, D, Y, D, P, st, dx, D, dy, D, dp,
                              SN_ACCUMULATE_Y));
    float *mo = out_new(o, N), *mst = out_new(o, 5 * R), *mdx = out_new(o, N);
    float *mdy = out_new(o, N), *mdp = out_new(o, 6 * D);
    CHECK_OK(sn_merge_forward(ctx, &f, R, D, X, D, Y, D, P, mo, D, mst));
    CHECK_OK(sn_merge_backward(ctx, &f, R, D, W, D, X, D, Y, D, P, mst, mdx, D, mdy, D, mdp, 0));
    float *xo = out_new(o, N), *yo = out_new(o, N), *dz = out_new(o, N), *de = out_new(o, N);
    CHECK_OK(sn_apply_forward(ctx, R, D, 1.7f, W, D, X, D, Y, D, xo, D, yo, D));
    CHECK_OK(sn_apply_backward(ctx, R, D, 1.7f, W, D, W2, D, dz, D, 0));
    CHECK_OK(sn_split_backward(ctx, R, D, W, D, W2, D, de, D, 0));
}

/* The network pass's block (block.h: z = tanh(h W_i), 256 x 256 per sub-layer) and its
 * backward are the test's own arithmetic, the same in every run: each is computed once per
 * distinct input and replayed when a run hands it bitwise the same input (the library's outputs
 * are still compared in full). Without this they took 85% of the test's time in sanitizer
 * builds. */
enum { NET_S = 4, NET_DN = 256, NET_RN = 128 };
static blk net_blk;
static float *memo_fin[NET_S], *memo_fout[NET_S], *memo_bz[NET_S], *memo_bdz[NET_S],
    *memo_bout[NET_S];

static void blk_fwd_memo(int i, int64_t n, const float *h, float *z) {
    if (!memo_fin[i] || memcmp(memo_fin[i], h, (size_t)n * sizeof(float)) != 0) {
        if (!memo_fin[i]) memo_fin[i] = tu_falloc(n), memo_fout[i] = tu_falloc(n);
        blk_fwd_f(&net_blk, i, NET_RN, h, NET_DN, memo_fout[i], NET_DN);
        memcpy(memo_fin[i], h, (size_t)n * sizeof(float));
    }
    memcpy(z, memo_fout[i], (size_t)n * sizeof(float));
}

static void blk_bwd_memo(int i, int64_t n, const float *z, const float *dz, float *dh) {
    if (!memo_bz[i] || memcmp(memo_bz[i], z, (size_t)n * sizeof(float)) != 0 ||
        memcmp(memo_bdz[i], dz, (size_t)n * sizeof(float)) != 0) {
        if (!memo_bz[i])
            memo_bz[i] = tu_falloc(n), memo_bdz[i] = tu_falloc(n), memo_bout[i] = tu_falloc(n);
        blk_bwd_f(&net_blk, i, NET_RN, z, NET_DN, dz, NET_DN, memo_bout[i], NET_DN);
        memcpy(memo_bz[i], z, (size_t)n * sizeof(float));
        memcpy(memo_bdz[i], dz, (size_t)n * sizeof(float));
    }
    memcpy(dh, memo_bout[i], (size_t)n * sizeof(float));
}

/* a SiameseNorm network pass: out, de and grads */
static void run_net(const sn_ctx *ctx, outs *o) {
    enum { S = NET_S, DN = NET_DN, RN = NET_RN };
    sn_net net;
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, S, DN, SN_NORM_LAYERNORM, 1e-5f));
    int64_t np, apr, wpr;
    CHECK_OK(sn_net_sizes(&net, &np, &apr, &wpr));
    float *params = tu_falloc(np), *acts = tu_falloc(RN * apr), *work = tu_falloc(RN * wpr);
    float *h[S], *z[S], *dz = tu_falloc(RN * DN), *dh = tu_falloc(RN * DN);
    CHECK_OK(sn_net_init_params(&net, params));
    for (int64_t k = 0; k < np; k++) params[k] += 0.1f * W[k % N];
    o->n = 0;
    float *out = out_new(o, RN * DN), *de = out_new(o, RN * DN), *grads = out_new(o, np);
    memset(grads, 0, (size_t)np * sizeof(float));
    const sn_net_pass pass = {RN, params, acts, grads, work};
    CHECK_OK(sn_net_split(ctx, &net, &pass, X, DN));
    for (int i = 0; i < S; i++) {
        h[i] = out_new(o, RN * DN), z[i] = tu_falloc(RN * DN);
        CHECK_OK(sn_net_enter(ctx, &net, &pass, i, h[i], DN));
        blk_fwd_memo(i, RN * DN, h[i], z[i]);
        CHECK_OK(sn_net_exit(ctx, &net, &pass, i, z[i], DN));
    }
    CHECK_OK(sn_net_merge(ctx, &net, &pass, out, DN));
    CHECK_OK(sn_net_merge_backward(ctx, &net, &pass, W, DN));
    for (int i = S - 1; i >= 0; i--) {
        CHECK_OK(sn_net_exit_backward(ctx, &net, &pass, i, dz, DN, 0));
        blk_bwd_memo(i, RN * DN, z[i], dz, dh);
        CHECK_OK(sn_net_enter_backward(ctx, &net, &pass, i, dh, DN));
    }
    CHECK_OK(sn_net_split_backward(ctx, &net, &pass, de, DN, 0));
    for (int i = 0; i < S; i++) free(z[i]);
    free(params), free(acts), free(work), free(dz), free(dh);
}

static void outs_free(outs *o) {
    for (int k = 0; k < o->n; k++) free(o->buf[k]);
    o->n = 0;
}

/* 1: two NaNs compare equal whatever their sign and payload bits (the NaN rows' pass) */
static int nan_any_bits;

static void compare(const outs *a, const outs *b, const char *what, const char *path) {
    CHECK_MSG(a->n == b->n, "%s", what);
    for (int k = 0; k < a->n && k < b->n; k++) {
        int64_t bad = 0;
        for (int64_t q = 0; q < a->len[k]; q++)
            bad += memcmp(&a->buf[k][q], &b->buf[k][q], sizeof(float)) != 0 &&
                   !(nan_any_bits && a->buf[k][q] != a->buf[k][q] && b->buf[k][q] != b->buf[k][q]);
        CHECK_MSG(bad == 0, "path %s, %s: output %d differs in %lld of %lld floats", path, what, k,
                  (long long)bad, (long long)a->len[k]);
    }
}

/* Every path: the same call twice, 2 and 3 threads, hooks, scratch, NULL ctx, each against a
 * 1-thread context. */
static void check_paths(void) {
    for (int isa = SN_ISA_SCALAR; isa <= SN_ISA_AVX512; isa++) {
        sn_ctx *base = tu_isa_ctx(isa);
        if (!base) continue;
        const char *path = sn_isa_name((sn_isa)isa);
        for (int part = 0; part < 2; part++) {
            void (*run)(const sn_ctx *, outs *) = part ? run_net : run_prims;
            const char *pn = part ? "network pass" : "primitives";
            outs ref = {{0}, {0}, 0}, o = {{0}, {0}, 0};
            run(base, &ref);
            run(base, &o); /* same call twice */
            compare(&ref, &o, pn, path), outs_free(&o);
            for (int t = 2; t <= 3; t++) {
                sn_ctx *c = tu_isa_ctx(isa);
                CHECK_OK(sn_ctx_set_threads(c, t));
                CHECK(sn_ctx_threads(c) == t);
                run(c, &o);
                char what[64];
                snprintf(what, sizeof what, "%s with %d threads", pn, t);
                compare(&ref, &o, what, path), outs_free(&o);
                sn_ctx_destroy(c);
            }
            for (int hk = 0; hk < 2; hk++) {
                sn_ctx *c = tu_isa_ctx(isa);
                CHECK_OK(sn_ctx_set_parallel_for(c, hk ? pfor_interleave : pfor_reverse, NULL,
                                                 hk ? 2 : 4));
                run(c, &o);
                char what[64];
                snprintf(what, sizeof what, "%s with a parallel-for hook (%s)", pn,
                         hk ? "interleaved" : "reverse");
                compare(&ref, &o, what, path), outs_free(&o);
                sn_ctx_destroy(c);
            }
            { /* 2 threads with caller scratch (the queried size): more chunks at once */
                sn_ctx *c = tu_isa_ctx(isa);
                CHECK_OK(sn_ctx_set_threads(c, 2));
                const size_t sb = sn_scratch_bytes(c, D);
                CHECK(sb >= 16 * 6 * D * sizeof(float));
                void *scr = malloc(sb);
                CHECK(scr != NULL);
                CHECK_OK(sn_ctx_set_scratch(c, scr, sb));
                run(c, &o);
                char what[64];
                snprintf(what, sizeof what, "%s with 2 threads and scratch", pn);
                compare(&ref, &o, what, path), outs_free(&o);
                sn_ctx_destroy(c);
                free(scr);
            }
            if (sn_ctx_isa(NULL) == (sn_isa)isa) {
                run(NULL, &o);
                compare(&ref, &o, part ? "network pass, NULL ctx" : "primitives, NULL ctx", path);
                outs_free(&o);
            }
            outs_free(&ref);
        }
        sn_ctx_destroy(base);
    }
}

/* NaNs of both signs and several payloads in some rows of every input matrix. */
static void plant_nans(float *m, int salt) {
    static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7fc12345u,
                                    0xffdeadbeu, 0x7f800001u, 0xff812345u};
    for (int r = salt % 5; r < R; r += 5) {
        uint32_t bits = nans[(r + salt) % 6];
        float v;
        memcpy(&v, &bits, sizeof v);
        m[(int64_t)r * D + (r * 37 + salt) % D] = v;
    }
}

int main(void) {
    tu_rng g = {2024};
    X = tu_falloc(N), Y = tu_falloc(N), W = tu_falloc(N), W2 = tu_falloc(N), P = tu_falloc(6 * D);
    tu_fill(&g, X, N, -2, 3), tu_fill(&g, Y, N, -3, 2), tu_fill(&g, W, N, -1, 1);
    tu_fill(&g, W2, N, -1, 1), tu_fill(&g, P, 6 * D, 0.5, 1.5);
    blk_init(&net_blk, NET_S, NET_DN, 9);
    check_paths();
    plant_nans(X, 0), plant_nans(Y, 1), plant_nans(W, 2), plant_nans(W2, 3);
    const char *strict = getenv("SN_TEST_NAN_BITS");
    nan_any_bits = !(strict && strcmp(strict, "1") == 0);
    check_paths();
    free(X), free(Y), free(W), free(W2), free(P), free(net_blk.Wf), free(net_blk.Wd);
    for (int i = 0; i < NET_S; i++)
        free(memo_fin[i]), free(memo_fout[i]), free(memo_bz[i]), free(memo_bdz[i]),
            free(memo_bout[i]);
    return tu_finish("test_threads");
}
