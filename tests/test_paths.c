/* Kernel paths and threads through the public calls: every SIMD path the CPU offers against the
 * portable scalar path, and every thread count (built-in pool and a caller hook) on the best
 * path, on awkward shapes. The kernels themselves, slot by slot on every path (agreement with
 * scalar, and the bitwise promises that make the thread split invisible: norm_bwd2 as norm_bwd
 * twice, fuse_fwd2 as stats2 + fuse_s + norm_row, fuse_bwd as fuse_red + fuse_pg + fuse_dx), are
 * tests/checkasm's; this test keeps what checkasm cannot see: the drivers, the threads, the
 * scratch and the public calls.
 *
 * For every primitive and shape:
 *   - the scalar path with 1 thread is the reference;
 *   - every path, 1 thread, agrees with it within TOL (relative to the largest magnitude of the
 *     output buffer; the SIMD paths use fused multiply-add and their own summation order);
 *   - every SIMD path, 1 thread, gives the first SIMD path's bits (one summation order, 0.6.4);
 *   - on the best path, every thread count (1, 2, 3 threads, a hook that runs its tasks
 *     backwards), with and without caller scratch (full size, too small, misaligned), and a NULL
 *     context give bitwise-identical outputs, parameter gradients included.
 * Shapes: D in {1, 7, 15, 16, 17, 32, 33, 64, 768, 1000, 3000, 9000} (32 and 64: the rows of
 * exactly four vectors that the fuse kernels specialise on AVX2 and AVX-512), R = 1, a few
 * rows, and enough rows to be threaded; base pointers one float off 64-byte alignment; row
 * strides > D; and, for the fuse and elementwise calls, 2816 rows of 768 on 64-byte boundaries,
 * beyond the sizes from which the calls stream their stores. Built with SN_TEST_SMALL
 * (sanitizer builds), rows of 768 and 1000 floats come in fewer rows (still more chunks than a
 * 2-thread backward has slots), and the streaming shape is left out. */
#include "testutil.h"

/* Paths may differ by this much, relative to the output's largest magnitude. */
#define TOL 5e-5

/* the inputs: uniform in [-1, 1) */
static tu_xs rng = {88172645463325252ull};
static float urand(void) { return tu_xs_unif(&rng); }

/* ---- the operations under test ------------------------------------------------------------- */

enum { N_IN = 6, N_OUT = 4 };

typedef struct shape {
    int64_t R, D, ld;
    int aligned; /* matrices on 64-byte boundaries (else one float off) */
} shape;

/* Inputs (read-only, shared by every run) and outputs of one run. Matrices are R x ld; in[] are
 * filled once; out[] are cleared to a pattern before each run (so accumulation is tested). */
typedef struct bufs {
    float *in[N_IN];
    float *out[N_OUT];
    float *stats, *dparams, *params;
    int64_t nout[N_OUT], nstats, nparams;
    float *out_init; /* what every output holds before a run (span floats) */
} bufs;

typedef struct op {
    const char *name;
    int kind;    /* 0 norm fwd, 1 norm bwd, 2 fuse fwd, 3 fuse bwd, 4 apply fwd, 5 apply bwd,
                 6 split fwd, 7 split bwd */
    sn_norm n;   /* norm ops; group -1: pick a divisor of D */
    sn_fuse f;   /* fuse ops */
    int with_du; /* fuse bwd */
    uint32_t flags;
} op;

#define NON                                                                                        \
    { 0, 0, 0, 0.0f }
#define NOF                                                                                        \
    { NON, NON, NON }
static const op OPS[] = {
    {"layernorm fwd", 0, {0, 0, 0, 1e-5f}, NOF, 0, 0},
    {"rmsnorm fwd grouped", 0, {1, 1, -1, 1e-5f}, NOF, 0, 0},
    {"layernorm bwd", 1, {0, 0, 0, 1e-5f}, NOF, 0, 0},
    {"layernorm bwd non-affine acc", 1, {0, 2, 0, 1e-5f}, NOF, 0, SN_ACCUMULATE},
    {"rmsnorm bwd grouped acc", 1, {1, 1, -1, 1e-5f}, NOF, 0, SN_ACCUMULATE},
    {"layernorm bwd grouped", 1, {0, 0, -1, 1e-5f}, NOF, 0, 0},
    {"scale norm fwd", 0, {3, 0, 0, 1e-5f}, NOF, 0, 0},
    {"scale norm bwd", 1, {3, 0, 0, 1e-5f}, NOF, 0, 0},
    {"fuse fwd layernorm", 2, NON, {{0, 0, 0, 1e-5f}, {0, 0, 0, 1e-5f}, {0, 0, 0, 1e-5f}}, 0, 0},
    {"fuse fwd mixed", 2, NON, {{1, 1, 0, 1e-5f}, {0, 0, 0, 1e-5f}, {2, 0, 0, 1e-5f}}, 0, 0},
    {"fuse bwd layernorm",
     3,
     NON,
     {{0, 0, 0, 1e-5f}, {0, 0, 0, 1e-5f}, {0, 0, 0, 1e-5f}},
     1,
     SN_ACCUMULATE_Y},
    {"fuse bwd rms/non-affine",
     3,
     NON,
     {{1, 1, 0, 1e-5f}, {1, 1, 0, 1e-5f}, {0, 2, 0, 1e-5f}},
     1,
     SN_ACCUMULATE},
    {"merge bwd mixed", 3, NON, {{2, 0, 0, 1e-5f}, {0, 0, 0, 1e-5f}, {1, 1, 0, 1e-5f}}, 0, 0},
    {"apply fwd", 4, {0}, NOF, 0, 0},
    {"apply bwd acc", 5, {0}, NOF, 0, SN_ACCUMULATE},
    {"split fwd", 6, {0}, NOF, 0, 0},
    {"split bwd", 7, {0}, NOF, 0, 0},
};
#define N_OPS ((int)(sizeof OPS / sizeof OPS[0]))

static int64_t group_of(const op *o, int64_t D) {
    if (o->n.group >= 0) return o->n.group;
    for (int64_t g = D / 2; g > 1; g--) /* a proper divisor, or 0 for primes */
        if (D % g == 0 && g <= 64) return g;
    return 0;
}

static float *alloc_mat(int64_t n, int off) { /* off floats past a 64-byte boundary */
    /* C11 aligned_alloc wants a size that is a multiple of the alignment */
    size_t bytes = ((size_t)(n + 16) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    return p ? p + off : NULL;
}
static void free_mat(float *p, int off) {
    if (p) free(p - off);
}

/* Runs op o on ctx; stats_ref: the statistics the backward reads (from the scalar forward). */
static void run(const op *o, sn_ctx *ctx, const shape *s, bufs *b, const float *stats_ref) {
    const int64_t R = s->R, D = s->D, ld = s->ld;
    /* copied, not computed per run: under the sanitizers these loops were a quarter of the
     * test's time */
    for (int k = 0; k < N_OUT; k++)
        memcpy(b->out[k], b->out_init, (size_t)b->nout[k] * sizeof(float));
    memset(b->stats, 0, (size_t)b->nstats * sizeof(float));
    for (int64_t i = 0; i < b->nparams; i++) b->dparams[i] = 0.125f * (float)(i % 5);
    float **in = b->in, **out = b->out;
    sn_norm n = o->n;
    n.group = (int32_t)group_of(o, D);
    switch (o->kind) {
    case 0:
        CHECK_OK(sn_norm_forward(ctx, &n, R, D, in[0], ld, b->params, out[0], ld, b->stats));
        break;
    case 1:
        CHECK_OK(sn_norm_backward(ctx, &n, R, D, in[1], ld, in[0], ld, b->params, stats_ref, out[0],
                                  ld, b->dparams, o->flags));
        break;
    case 2:
        CHECK_OK(sn_fuse_forward(ctx, &o->f, R, D, in[0], ld, in[2], ld, b->params, out[0], ld,
                                 out[1], ld, b->stats));
        break;
    case 3:
        CHECK_OK(sn_fuse_backward(ctx, &o->f, R, D, in[1], ld, o->with_du ? in[3] : NULL, ld, in[0],
                                  ld, in[2], ld, b->params, stats_ref, out[0], ld, out[1], ld,
                                  b->dparams, o->flags));
        break;
    case 4:
        CHECK_OK(sn_apply_forward(ctx, R, D, 1.7f, in[1], ld, in[0], ld, in[2], ld, out[0], ld,
                                  out[1], ld));
        break;
    case 5:
        CHECK_OK(sn_apply_backward(ctx, R, D, 2.3f, in[1], ld, in[3], ld, out[0], ld, o->flags));
        break;
    case 6: CHECK_OK(sn_split_forward(ctx, R, D, in[0], ld, out[0], ld, out[1], ld)); break;
    case 7: CHECK_OK(sn_split_backward(ctx, R, D, in[1], ld, in[3], ld, out[0], ld, 0)); break;
    }
}

/* the outputs of one run, concatenated */
static int64_t snapshot(const bufs *b, float *dst) {
    int64_t k = 0;
    for (int i = 0; i < N_OUT; i++) {
        memcpy(dst + k, b->out[i], (size_t)b->nout[i] * sizeof(float));
        k += b->nout[i];
    }
    memcpy(dst + k, b->stats, (size_t)b->nstats * sizeof(float));
    k += b->nstats;
    memcpy(dst + k, b->dparams, (size_t)b->nparams * sizeof(float));
    return k + b->nparams;
}

/* max |a - r| / max(1, max |r|) over each part of the snapshot */
static double rel_err(const bufs *b, const float *a, const float *r) {
    int64_t parts[N_OUT + 2], np = 0, k = 0;
    for (int i = 0; i < N_OUT; i++) parts[np++] = b->nout[i];
    parts[np++] = b->nstats;
    parts[np++] = b->nparams;
    double worst = 0.0;
    for (int p = 0; p < np; p++) {
        double mx = 1.0, e = 0.0;
        for (int64_t i = 0; i < parts[p]; i++) mx = fmax(mx, fabs((double)r[k + i]));
        for (int64_t i = 0; i < parts[p]; i++) {
            double d = fabs((double)a[k + i] - (double)r[k + i]);
            if (!(d <= e)) e = d; /* NaN propagates */
        }
        k += parts[p];
        if (!(e / mx <= worst)) worst = e / mx;
    }
    return worst;
}

/* a caller hook that runs the tasks serially, last first */
static int hook_calls;
static void backwards_hook(void *user, int64_t n, sn_task_fn task, void *arg) {
    (void)user;
    hook_calls++;
    for (int64_t i = n - 1; i >= 0; i--) task(arg, i);
}

static double worst_err[N_OPS];

static void test_shape(const op *o, const shape *s, sn_ctx *ctxs[], int nctx) {
    const int64_t R = s->R, D = s->D, ld = s->ld, span = (R - 1) * ld + D;
    const int mis = s->aligned ? 0 : 1;
    bufs b;
    memset(&b, 0, sizeof b);
    for (int k = 0; k < N_IN; k++) {
        b.in[k] = alloc_mat(span, mis);
        for (int64_t r = 0; r < R; r++) {
            const float off = k == 0 ? 3.0f * urand() : 0.0f; /* rows with |mean| > std */
            for (int64_t j = 0; j < ld && r * ld + j < span; j++)
                b.in[k][r * ld + j] = off + urand();
        }
    }
    for (int k = 0; k < N_OUT; k++) {
        b.nout[k] = span;
        b.out[k] = alloc_mat(span, mis);
    }
    b.out_init = tu_falloc(span);
    for (int64_t i = 0; i < span; i++) b.out_init[i] = 0.25f * (float)(i % 7) - 0.5f;
    int64_t np = 0, spr = 0;
    sn_norm n = o->n;
    n.group = (int32_t)group_of(o, D);
    if (o->kind <= 1) CHECK_OK(sn_norm_query(&n, D, &np, &spr));
    else if (o->kind <= 3) CHECK_OK(sn_fuse_query(&o->f, D, &np, &spr));
    b.nparams = np;
    b.nstats = o->kind == 0 || o->kind == 2 ? R * spr : 0;
    b.params = alloc_mat(np, 1);
    b.dparams = alloc_mat(np, 1);
    b.stats = alloc_mat(R * spr, 1);
    for (int64_t i = 0; i < np; i++) b.params[i] = 1.0f + 0.5f * urand();
    float *stats_ref = alloc_mat(R * spr, 1);
    if (o->kind == 1 || o->kind == 3) { /* the scalar forward's statistics */
        op fw = *o;
        fw.kind = o->kind - 1;
        bufs t = b;
        t.nstats = R * spr;
        t.nparams = 0;
        run(&fw, ctxs[0], s, &t, NULL);
        memcpy(stats_ref, b.stats, (size_t)(R * spr) * sizeof(float));
        free_mat(b.stats, 1);
        b.stats = alloc_mat(R * spr, 1);
    }
    const int64_t total = 4 * span + b.nstats + np;
    float *ref = tu_falloc(total);
    float *base = tu_falloc(total);
    float *got = tu_falloc(total);
    float *simd = tu_falloc(total); /* the first SIMD path's bits */
    int have_simd = 0;
    /* ctxs[0] scalar 1 thread; then for each path: 1 thread first, then the others */
    run(o, ctxs[0], s, &b, stats_ref);
    snapshot(&b, ref);
    sn_isa cur = SN_ISA_AUTO;
    for (int c = 0; c < nctx; c++) {
        sn_ctx *ctx = ctxs[c];
        if (sn_ctx_isa(ctx) != cur) { /* a new path: its single-threaded result is the base */
            cur = sn_ctx_isa(ctx);
            run(o, ctx, s, &b, stats_ref);
            snapshot(&b, base);
            double e = rel_err(&b, base, ref);
            CHECK_MSG(e <= TOL, "%s R=%lld D=%lld %s vs scalar: rel. error %.3g > %.1g", o->name,
                      (long long)R, (long long)D, sn_isa_name(cur), e, TOL);
            if (e > worst_err[o - OPS]) worst_err[o - OPS] = e;
            if (cur != SN_ISA_SCALAR && !have_simd) {
                memcpy(simd, base, (size_t)total * sizeof(float));
                have_simd = 1;
            } else if (cur != SN_ISA_SCALAR) { /* every SIMD path: the same bits (0.6.4) */
                CHECK_MSG(!memcmp(simd, base, (size_t)total * sizeof(float)),
                          "%s R=%lld D=%lld: %s differs from the first SIMD path's bits", o->name,
                          (long long)R, (long long)D, sn_isa_name(cur));
            }
            if (cur == sn_ctx_isa(NULL)) { /* NULL context: the best path, 1 thread */
                run(o, NULL, s, &b, stats_ref);
                snapshot(&b, got);
                CHECK_MSG(!memcmp(got, base, (size_t)total * sizeof(float)),
                          "%s R=%lld D=%lld: NULL ctx differs from %s ctx", o->name, (long long)R,
                          (long long)D, sn_isa_name(cur));
            } else {
                continue; /* a path without thread variants: its one context is the base */
            }
        }
        run(o, ctx, s, &b, stats_ref);
        snapshot(&b, got);
        CHECK_MSG(!memcmp(got, base, (size_t)total * sizeof(float)),
                  "%s R=%lld D=%lld %s: %d threads not bitwise identical to 1 thread", o->name,
                  (long long)R, (long long)D, sn_isa_name(cur), sn_ctx_threads(ctx));
    }
    free(ref);
    free(base);
    free(got);
    free(simd);
    free(b.out_init);
    for (int k = 0; k < N_IN; k++) free_mat(b.in[k], mis);
    for (int k = 0; k < N_OUT; k++) free_mat(b.out[k], mis);
    free_mat(b.params, 1);
    free_mat(b.dparams, 1);
    free_mat(b.stats, 1);
    free_mat(stats_ref, 1);
}

int main(void) {
    /* contexts: scalar first, 1 thread per other path; on the best path 1, 2, 3 threads and the
     * hook (4 pieces), then with
     * caller scratch: 2 threads with the queried size (room for every chunk, also for rows
     * too wide for the stack buffer), 3 threads with room for only 2 slots (D = 768 fuse), and
     * the hook with the queried size */
    sn_ctx *ctxs[64];
    void *scratch[64];
    int nctx = 0;
    const sn_isa paths[] = {SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512};
    const sn_isa best = sn_ctx_isa(NULL);
    for (int p = 0; p < 3; p++) {
        if (!sn_isa_available(paths[p])) {
            printf("path %s: not available on this CPU/build, skipped\n", sn_isa_name(paths[p]));
            continue;
        }
        for (int v = 0; v < (paths[p] == best ? 7 : 1); v++) {
            sn_ctx *c = NULL;
            CHECK_OK(sn_ctx_create(&c));
            if (!c) return 1;
            CHECK_OK(sn_ctx_set_isa(c, paths[p]));
            if (v < 3) CHECK_OK(sn_ctx_set_threads(c, v + 1));
            else if (v == 3 || v == 6)
                CHECK_OK(sn_ctx_set_parallel_for(c, backwards_hook, NULL, 4));
            else CHECK_OK(sn_ctx_set_threads(c, v - 2));
            scratch[nctx] = NULL;
            if (v >= 4) {
                size_t sb = v == 5 ? 2 * 6 * 768 * sizeof(float) + 64 : sn_scratch_bytes(c, 9000);
                scratch[nctx] = malloc(sb);
                if (!scratch[nctx]) return 1;
                memset(scratch[nctx], 0x7f, sb); /* garbage: the library must not read it */
                CHECK_OK(sn_ctx_set_scratch(c, (char *)scratch[nctx] + (v == 6), sb - (v == 6)));
            }
            ctxs[nctx++] = c;
        }
    }
    /* the scratch calls' contract */
    {
        sn_ctx *c = NULL;
        CHECK_OK(sn_ctx_create(&c));
        CHECK_STATUS(sn_ctx_set_scratch(NULL, NULL, 0), SN_ERR_NULL);
        CHECK_STATUS(sn_ctx_set_scratch(c, NULL, 16), SN_ERR_NULL);
        CHECK_STATUS(sn_ctx_set_scratch(c, NULL, 0), SN_OK);
        CHECK_MSG(sn_scratch_bytes(c, 0) == 0, "sn_scratch_bytes(D = 0)");
        const size_t one = sn_scratch_bytes(c, 768);
        CHECK_OK(sn_ctx_set_threads(c, 2));
        const size_t two = sn_scratch_bytes(c, 768);
        CHECK_MSG(one >= 6 * 768 * sizeof(float) && two >= 16 * one - 16 * 64,
                  "sn_scratch_bytes: 1 thread %zu, 2 threads %zu", one, two);
        CHECK_MSG(sn_scratch_bytes(NULL, 768) == one, "sn_scratch_bytes(NULL ctx)");
        sn_ctx_destroy(c);
    }
    /* the setters' contract */
    {
        sn_ctx *c = NULL;
        CHECK_OK(sn_ctx_create(&c));
        CHECK_STATUS(sn_ctx_set_isa(c, (sn_isa)99), SN_ERR_CONFIG);
        CHECK_STATUS(sn_ctx_set_threads(c, -1), SN_ERR_CONFIG);
        CHECK_STATUS(sn_ctx_set_threads(NULL, 2), SN_ERR_NULL);
        CHECK_MSG(sn_ctx_threads(NULL) == 1 && sn_ctx_threads(c) == 1, "default threads");
        CHECK_OK(sn_ctx_set_threads(c, 0));
        CHECK_MSG(sn_ctx_threads(c) >= 1, "set_threads(0)");
        sn_ctx_destroy(c);
    }

    /* 3000 and 9000: rows too wide for the stack buffer of chunk sums (fuse, norm): without
     * scratch those run in column blocks on the calling thread, with scratch on all threads */
    const int64_t Ds[] = {1, 7, 15, 16, 17, 32, 33, 64, 768, 1000, 3000, 9000};
    for (int oi = 0; oi < N_OPS; oi++)
        for (size_t di = 0; di < sizeof Ds / sizeof Ds[0]; di++) {
            const int64_t D = Ds[di];
            /* enough rows to cross the threading threshold (16 K elements) */
            /* and, for wide rows, many chunks of a threaded backward pass */
#ifdef SN_TEST_SMALL
            const int64_t big = D >= 3000 ? 25 : D >= 768 ? 400 : (20000 + D - 1) / D;
#else
            const int64_t big = D >= 3000 ? 25 : D >= 768 ? 800 : (20000 + D - 1) / D;
#endif
            const int64_t Rs[] = {1, 5, big};
            for (int ri = 0; ri < 3; ri++) {
                shape s = {Rs[ri], D, D + (ri == 1 ? 0 : 3), 0};
                test_shape(&OPS[oi], &s, ctxs, nctx);
            }
        }
#ifndef SN_TEST_SMALL
    /* fuse and elementwise calls large enough to stream their stores and prefetch (src/drive/drive.h:
     * fuse calls from 32 MiB, the others from 40 MiB; 2816 x 768 floats is 8.25 MiB a matrix,
     * so a fuse forward spans 33 MiB and an apply forward 41), on aligned rows, so that the
     * threads' and the hook's tasks end with streamed rows to fence (ctx.c) */
    for (int oi = 0; oi < N_OPS; oi++) {
        shape s = {2816, 768, 768, 1};
        if (OPS[oi].kind >= 2) test_shape(&OPS[oi], &s, ctxs, nctx);
    }
#endif
    for (int oi = 0; oi < N_OPS; oi++)
        printf("%-32s worst path-vs-scalar rel. error %.2e\n", OPS[oi].name, worst_err[oi]);
    CHECK_MSG(hook_calls > 0, "the parallel-for hook was never called");
    for (int c = 0; c < nctx; c++) {
        sn_ctx_destroy(ctxs[c]);
        free(scratch[c]);
    }
    return tu_finish("test_paths");
}
