/* sn-ab: two builds of libsiamesenorm timed in one process. It loads both shared objects
 * (dlopen, each its own copy: give two different paths), gives each its own context and its own
 * copy of the inputs, and times one backward call of each in turn, A B B A A B ..., so that
 * both see the same machine state; it prints each build's fastest and median call and their
 * ratios. Separate processes of one binary differ by 5-12% on a shared VM (docs/performance.md);
 * here two copies of one build agree within about 2%.
 *
 * Usage: sn-ab LIB_A LIB_B fuse|merge f32|bf16 scalar|avx2|avx512|auto ROWS COLS ROUNDS
 * The call is a SiameseNorm sub-layer's (fuse: du set, dx aliasing du, dy accumulated, with
 * parameter gradients) or the merge's, one thread, LayerNorm with gamma and beta. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "siamesenorm.h"

enum { NBUF = 7, MAX_ROUNDS = 100000 };

/* the calls sn-ab makes, looked up in one shared object */
typedef struct lib {
    void *so;
    __typeof__(&sn_ctx_create) ctx_create;
    __typeof__(&sn_ctx_destroy) ctx_destroy;
    __typeof__(&sn_ctx_set_threads) set_threads;
    __typeof__(&sn_ctx_set_isa) set_isa;
    __typeof__(&sn_ctx_isa) ctx_isa;
    __typeof__(&sn_isa_name) isa_name;
    __typeof__(&sn_fuse_init) fuse_init;
    __typeof__(&sn_fuse_query) fuse_query;
    __typeof__(&sn_fuse_init_params) init_params;
    __typeof__(&sn_to_bf16) to_bf16;
    __typeof__(&sn_fuse_forward) fwd;
    __typeof__(&sn_fuse_forward_bf16) fwd16;
    __typeof__(&sn_fuse_backward) bwd;
    __typeof__(&sn_fuse_backward_bf16) bwd16;
    __typeof__(&sn_merge_backward) mbwd;
    __typeof__(&sn_merge_backward_bf16) mbwd16;
    sn_ctx *ctx;
    sn_fuse f;
    float *b[NBUF], *p, *dp, *st;
    sn_bf16 *h[NBUF];
} lib;

static int fail(const char *what) {
    fprintf(stderr, "sn-ab: %s\n", what);
    return 1;
}

/* *fp = the symbol name of l (POSIX: a function pointer through a void *) */
static int sym(lib *l, void *fp, const char *name) {
    void *s = dlsym(l->so, name);
    if (!s) return fprintf(stderr, "sn-ab: %s: no %s\n", dlerror(), name), 1;
    memcpy(fp, &s, sizeof s);
    return 0;
}

static int load(lib *l, const char *path) {
    memset(l, 0, sizeof *l);
    l->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!l->so) return fail(dlerror());
    return sym(l, &l->ctx_create, "sn_ctx_create") || sym(l, &l->ctx_destroy, "sn_ctx_destroy") ||
           sym(l, &l->set_threads, "sn_ctx_set_threads") || sym(l, &l->set_isa, "sn_ctx_set_isa") ||
           sym(l, &l->ctx_isa, "sn_ctx_isa") || sym(l, &l->isa_name, "sn_isa_name") ||
           sym(l, &l->fuse_init, "sn_fuse_init") || sym(l, &l->fuse_query, "sn_fuse_query") ||
           sym(l, &l->init_params, "sn_fuse_init_params") || sym(l, &l->to_bf16, "sn_to_bf16") ||
           sym(l, &l->fwd, "sn_fuse_forward") || sym(l, &l->fwd16, "sn_fuse_forward_bf16") ||
           sym(l, &l->bwd, "sn_fuse_backward") || sym(l, &l->bwd16, "sn_fuse_backward_bf16") ||
           sym(l, &l->mbwd, "sn_merge_backward") || sym(l, &l->mbwd16, "sn_merge_backward_bf16");
}

/* l's context on the path named isa (sn_isa_name's names), its inputs (a fixed pattern),
 * parameters and the forward's statistics */
static int setup(lib *l, const char *isa, int64_t R, int64_t D) {
    int64_t np, spr;
    sn_isa want = SN_ISA_AUTO;
    for (sn_isa i = SN_ISA_AUTO; i <= SN_ISA_AVX512; i++)
        if (!strcmp(isa, l->isa_name(i))) want = i;
    if (strcmp(isa, l->isa_name(want))) return fail("unknown path (auto, scalar, avx2, avx512)");
    if (l->ctx_create(&l->ctx) || l->set_threads(l->ctx, 1) || l->set_isa(l->ctx, want) ||
        l->fuse_init(&l->f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f) ||
        l->fuse_query(&l->f, D, &np, &spr))
        return fail("setup failed (is the path available on this CPU?)");
    const size_t n = (size_t)R * (size_t)D;
    for (int i = 0; i < NBUF; i++) {
        l->b[i] = malloc(n * sizeof(float));
        l->h[i] = malloc(n * sizeof(sn_bf16));
        if (!l->b[i] || !l->h[i]) return fail("out of memory");
        for (size_t k = 0; k < n; k++) /* in [-1, 1) */
            l->b[i][k] = (float)((k * 2654435761u + (size_t)i * 97u) % 1000u) / 500.0f - 1.0f;
        if (l->to_bf16(l->ctx, R, D, l->b[i], D, l->h[i], D)) return fail("sn_to_bf16 failed");
    }
    l->p = malloc((size_t)np * sizeof(float));
    l->dp = calloc((size_t)np, sizeof(float));
    l->st = malloc((size_t)(R * spr) * sizeof(float));
    if (!l->p || !l->dp || !l->st) return fail("out of memory");
    if (l->init_params(&l->f, D, l->p)) return fail("sn_fuse_init_params failed");
    for (int64_t i = 0; i < np; i++) l->p[i] += 0.01f * (float)(i % 7);
    sn_status s =
        l->fwd(l->ctx, &l->f, R, D, l->b[0], D, l->b[1], D, l->p, l->b[2], D, l->b[3], D, l->st);
    s |= l->fwd16(l->ctx, &l->f, R, D, l->h[0], D, l->h[1], D, l->p, l->h[2], D, l->h[3], D, l->st);
    return s ? fail("forward failed") : 0;
}

static sn_status call(lib *l, int fuse, int bf, int64_t R, int64_t D) {
    if (fuse && bf)
        return l->bwd16(l->ctx, &l->f, R, D, l->h[4], D, l->h[5], D, l->h[0], D, l->h[1], D, l->p,
                        l->st, l->h[5], D, l->h[6], D, l->dp, SN_ACCUMULATE_Y);
    if (fuse)
        return l->bwd(l->ctx, &l->f, R, D, l->b[4], D, l->b[5], D, l->b[0], D, l->b[1], D, l->p,
                      l->st, l->b[5], D, l->b[6], D, l->dp, SN_ACCUMULATE_Y);
    if (bf)
        return l->mbwd16(l->ctx, &l->f, R, D, l->h[4], D, l->h[0], D, l->h[1], D, l->p, l->st,
                         l->h[5], D, l->h[6], D, l->dp, 0);
    return l->mbwd(l->ctx, &l->f, R, D, l->b[4], D, l->b[0], D, l->b[1], D, l->p, l->st, l->b[5], D,
                   l->b[6], D, l->dp, 0);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int by_value(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* a whole number in [lo, hi], else -1 */
static long long number(const char *s, long long lo, long long hi) {
    char *end;
    const long long v = strtoll(s, &end, 10);
    return *s && !*end && v >= lo && v <= hi ? v : -1;
}

int main(int argc, char **argv) {
    const long long R = argc == 9 ? number(argv[6], 1, 1 << 20) : -1;
    const long long D = argc == 9 ? number(argv[7], 1, 1 << 16) : -1;
    const long long rounds = argc == 9 ? number(argv[8], 1, MAX_ROUNDS) : -1;
    if (argc != 9 || (strcmp(argv[3], "fuse") && strcmp(argv[3], "merge")) ||
        (strcmp(argv[4], "f32") && strcmp(argv[4], "bf16")) || R < 0 || D < 0 || rounds < 0 ||
        (double)R * (double)D > 1.0e8) {
        fprintf(stderr, "usage: sn-ab LIB_A LIB_B fuse|merge f32|bf16 scalar|avx2|avx512|auto "
                        "ROWS COLS ROUNDS\n  (ROWS x COLS at most 1e8, ROUNDS at most 100000)\n");
        return 2;
    }
    const int fuse = !strcmp(argv[3], "fuse"), bf = !strcmp(argv[4], "bf16");
    lib L[2];
    double *t[2] = {malloc((size_t)rounds * sizeof(double)),
                    malloc((size_t)rounds * sizeof(double))};
    if (!t[0] || !t[1]) return fail("out of memory");
    for (int i = 0; i < 2; i++)
        if (load(&L[i], argv[1 + i]) || setup(&L[i], argv[5], R, D)) return 1;
    if (L[0].so == L[1].so)
        fprintf(stderr, "sn-ab: both paths load the same object (copy it to compare a build with "
                        "itself)\n");
    for (long long r = 0; r < rounds; r++)
        for (int q = 0; q < 2; q++) {
            const int i = (r & 1) ? 1 - q : q; /* A B, then B A */
            const double t0 = now();
            if (call(&L[i], fuse, bf, R, D)) return fail("the call failed");
            t[i][r] = now() - t0;
        }
    for (int i = 0; i < 2; i++) qsort(t[i], (size_t)rounds, sizeof(double), by_value);
    const double a0 = t[0][0], b0 = t[1][0], am = t[0][rounds / 2], bm = t[1][rounds / 2];
    printf("sn-ab: %s backward %s, %s (A runs %s, B %s), %lld x %lld, one thread, %lld rounds\n",
           argv[3], argv[4], argv[5], L[0].isa_name(L[0].ctx_isa(L[0].ctx)),
           L[1].isa_name(L[1].ctx_isa(L[1].ctx)), R, D, rounds);
    printf("  A %s: fastest %.4f ms, median %.4f ms\n", argv[1], 1e3 * a0, 1e3 * am);
    printf("  B %s: fastest %.4f ms, median %.4f ms\n", argv[2], 1e3 * b0, 1e3 * bm);
    printf("  B / A: fastest %.3f, median %.3f\n", b0 / a0, bm / am);
    for (int i = 0; i < 2; i++) L[i].ctx_destroy(L[i].ctx);
    return 0;
}
