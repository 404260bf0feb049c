/* Stack use of the public calls against the header's bounds (sn_ctx: at most 112 KiB per call;
 * bf16 storage: at most 208 KiB per bf16 call), and of every placement's training pass. Each call runs on a thread whose stack is a
 * buffer painted beforehand (pthread_attr_setstack); after the join, the lowest byte that
 * changed gives the thread's high-water mark, less that of a thread running nothing. Every path
 * this CPU runs, fp32 and bf16, one thread and no scratch (the parameter-gradient slots then live
 * on the stack), rows at the edges of the kernels' stack rows (D = 1024, the widest one-sweep
 * fuse row; 1040, the narrowest wider one; 4096, the widest bf16 row).
 *
 * Prints every call's use; fails if one exceeds its bound. Unoptimised builds and sanitizer
 * builds (SN_TEST_SMALL: their redzones grow every frame) only print: the bounds are those of the
 * optimised library. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "siamesenorm.h"

#define KIB         1024L
#define F32_BOUND   (112 * KIB) /* the header, sn_ctx */
#define BF16_BOUND  (208 * KIB) /* the header, bf16 storage */
#define STACK_BYTES (4L << 20)
#define PAINT       0xA5
#define R           6

typedef struct bufs {
    const sn_ctx *ctx;
    sn_fuse f;
    sn_norm n;
    int64_t D;
    float *a, *b, *c, *d, *o1, *o2, *p, *dp, *st;
    sn_bf16 *ha, *hb, *hc, *hd, *ho1, *ho2;
} bufs;

typedef struct call {
    const char *name;
    int bf16;
    sn_status (*run)(const bufs *B);
} call;

static sn_status c_norm_fwd(const bufs *B) {
    return sn_norm_forward(B->ctx, &B->n, R, B->D, B->a, B->D, B->p, B->o1, B->D, B->st);
}
static sn_status c_norm_bwd(const bufs *B) {
    return sn_norm_backward(B->ctx, &B->n, R, B->D, B->b, B->D, B->a, B->D, B->p, B->st, B->o1,
                            B->D, B->dp, 0);
}
static sn_status c_fuse_fwd(const bufs *B) {
    return sn_fuse_forward(B->ctx, &B->f, R, B->D, B->a, B->D, B->b, B->D, B->p, B->o1, B->D, B->o2,
                           B->D, B->st);
}
static sn_status c_fuse_bwd(const bufs *B) {
    return sn_fuse_backward(B->ctx, &B->f, R, B->D, B->c, B->D, B->d, B->D, B->a, B->D, B->b, B->D,
                            B->p, B->st, B->o1, B->D, B->o2, B->D, B->dp, 0);
}
static sn_status c_fuse_bwd_nodp(const bufs *B) {
    return sn_fuse_backward(B->ctx, &B->f, R, B->D, B->c, B->D, B->d, B->D, B->a, B->D, B->b, B->D,
                            B->p, B->st, B->o1, B->D, B->o2, B->D, NULL, 0);
}
static sn_status c_merge_bwd(const bufs *B) {
    return sn_merge_backward(B->ctx, &B->f, R, B->D, B->c, B->D, B->a, B->D, B->b, B->D, B->p,
                             B->st, B->o1, B->D, B->o2, B->D, B->dp, 0);
}
static sn_status c_apply_fwd(const bufs *B) {
    return sn_apply_forward(B->ctx, R, B->D, 1.5f, B->a, B->D, B->b, B->D, B->c, B->D, B->o1, B->D,
                            B->o2, B->D);
}
static sn_status h_norm_fwd(const bufs *B) {
    return sn_norm_forward_bf16(B->ctx, &B->n, R, B->D, B->ha, B->D, B->p, B->ho1, B->D, B->st);
}
static sn_status h_norm_bwd(const bufs *B) {
    return sn_norm_backward_bf16(B->ctx, &B->n, R, B->D, B->hb, B->D, B->ha, B->D, B->p, B->st,
                                 B->ho1, B->D, B->dp, 0);
}
static sn_status h_fuse_fwd(const bufs *B) {
    return sn_fuse_forward_bf16(B->ctx, &B->f, R, B->D, B->ha, B->D, B->hb, B->D, B->p, B->ho1,
                                B->D, B->ho2, B->D, B->st);
}
static sn_status h_fuse_bwd(const bufs *B) {
    return sn_fuse_backward_bf16(B->ctx, &B->f, R, B->D, B->hc, B->D, B->hd, B->D, B->ha, B->D,
                                 B->hb, B->D, B->p, B->st, B->ho1, B->D, B->ho2, B->D, B->dp, 0);
}
static sn_status h_fuse_bwd_nodp(const bufs *B) {
    return sn_fuse_backward_bf16(B->ctx, &B->f, R, B->D, B->hc, B->D, B->hd, B->D, B->ha, B->D,
                                 B->hb, B->D, B->p, B->st, B->ho1, B->D, B->ho2, B->D, NULL, 0);
}
static sn_status h_merge_bwd(const bufs *B) {
    return sn_merge_backward_bf16(B->ctx, &B->f, R, B->D, B->hc, B->D, B->ha, B->D, B->hb, B->D,
                                  B->p, B->st, B->ho1, B->D, B->ho2, B->D, B->dp, 0);
}
static sn_status h_apply_fwd(const bufs *B) {
    return sn_apply_forward_bf16(B->ctx, R, B->D, 1.5f, B->ha, B->D, B->hb, B->D, B->hc, B->D,
                                 B->ho1, B->D, B->ho2, B->D);
}

static const call calls[] = {
    {"norm fwd", 0, c_norm_fwd},
    {"norm bwd", 0, c_norm_bwd},
    {"fuse fwd", 0, c_fuse_fwd},
    {"fuse bwd", 0, c_fuse_bwd},
    {"fuse bwd no dp", 0, c_fuse_bwd_nodp},
    {"merge bwd", 0, c_merge_bwd},
    {"apply fwd", 0, c_apply_fwd},
    {"norm fwd bf16", 1, h_norm_fwd},
    {"norm bwd bf16", 1, h_norm_bwd},
    {"fuse fwd bf16", 1, h_fuse_fwd},
    {"fuse bwd bf16", 1, h_fuse_bwd},
    {"fuse bwd no dp bf16", 1, h_fuse_bwd_nodp},
    {"merge bwd bf16", 1, h_merge_bwd},
    {"apply fwd bf16", 1, h_apply_fwd},
};

/* A whole training pass of a net (every placement, S = 2): each of its calls is a public call
 * under the same bounds, so the pass's high-water mark is the largest of theirs. */
typedef struct netpass {
    const sn_ctx *ctx;
    sn_net net;
    int64_t D;
    int bf16;
    sn_net_pass ps;
    float *e, *h, *z, *o, *g;        /* fp32 rows */
    sn_bf16 *he, *hh, *hz, *ho, *hg; /* bf16 rows */
} netpass;

static sn_status net_run(const netpass *P) {
    const sn_net *n = &P->net;
    const sn_net_pass *ps = &P->ps;
    const int64_t D = P->D;
    sn_status st = SN_OK;
#define NC(c16, c32)                                                                               \
    do {                                                                                           \
        const sn_status s_ = P->bf16 ? (c16) : (c32);                                              \
        if (s_ != SN_OK) st = s_;                                                                  \
    } while (0)
    NC(sn_net_split_bf16(P->ctx, n, ps, P->he, D), sn_net_split(P->ctx, n, ps, P->e, D));
    for (int i = 0; i < n->n_sublayers; i++) {
        NC(sn_net_enter_bf16(P->ctx, n, ps, i, P->hh, D), sn_net_enter(P->ctx, n, ps, i, P->h, D));
        NC(sn_net_exit_bf16(P->ctx, n, ps, i, P->hz, D), sn_net_exit(P->ctx, n, ps, i, P->z, D));
    }
    NC(sn_net_merge_bf16(P->ctx, n, ps, P->ho, D), sn_net_merge(P->ctx, n, ps, P->o, D));
    NC(sn_net_merge_backward_bf16(P->ctx, n, ps, P->hg, D),
       sn_net_merge_backward(P->ctx, n, ps, P->g, D));
    for (int i = n->n_sublayers - 1; i >= 0; i--) {
        NC(sn_net_exit_backward_bf16(P->ctx, n, ps, i, P->hz, D, 0),
           sn_net_exit_backward(P->ctx, n, ps, i, P->z, D, 0));
        NC(sn_net_enter_backward_bf16(P->ctx, n, ps, i, P->hg, D),
           sn_net_enter_backward(P->ctx, n, ps, i, P->g, D));
    }
    NC(sn_net_split_backward_bf16(P->ctx, n, ps, P->he, D, 0),
       sn_net_split_backward(P->ctx, n, ps, P->e, D, 0));
#undef NC
    return st;
}

typedef struct job {
    const call *c; /* a call on B, or */
    const bufs *B;
    const netpass *P; /* a net's pass; neither: the empty thread */
    sn_status st;
} job;

static void *thread_main(void *arg) {
    job *j = arg;
    j->st = j->c ? j->c->run(j->B) : j->P ? net_run(j->P) : SN_OK;
    return NULL;
}

static unsigned char *stack_buf;

/* the bytes of the painted stack a thread running j touched (-1 if the thread did not run) */
static long stack_used(job *j) {
    memset(stack_buf, PAINT, STACK_BYTES);
    pthread_attr_t at;
    pthread_t th;
    if (pthread_attr_init(&at) != 0 || pthread_attr_setstack(&at, stack_buf, STACK_BYTES) != 0 ||
        pthread_create(&th, &at, thread_main, j) != 0)
        return -1;
    pthread_join(th, NULL);
    pthread_attr_destroy(&at);
    long low = 0;
    while (low < STACK_BYTES && stack_buf[low] == PAINT) low++;
    return STACK_BYTES - low;
}

/* Runs j on the painted stack, prints its use (less base) as "label D=... path", keeps the worst
 * per element type (h: 0 fp32, 1 bf16) and returns the number of failures (an error status,
 * or a use above the bound when `enforce`). */
static int measure(job *j, const char *label, int64_t D, sn_isa isa, int h, long base,
                   long worst[2], int enforce) {
    const long used = stack_used(j) - base;
    if (j->st != SN_OK) {
        fprintf(stderr, "FAIL: %s D=%lld %s: %s\n", label, (long long)D, sn_isa_name(isa),
                sn_status_string(j->st));
        return 1;
    }
    if (used > worst[h]) worst[h] = used;
    const int over = used > (h ? BF16_BOUND : F32_BOUND);
    printf("  %-24s D=%-5lld %-7s %6.1f KiB%s\n", label, (long long)D, sn_isa_name(isa),
           (double)used / KIB,
           over ? (enforce ? "  OVER THE BOUND" : "  (over the bound: not an optimised build)")
                : "");
    return over && enforce;
}

static float *falloc(int64_t n, float scale) {
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) exit(2);
    for (int64_t i = 0; i < n; i++) p[i] = scale * (float)((i * 7919 % 1013) - 506) / 506.0f;
    return p;
}
static sn_bf16 *halloc(const float *src, int64_t n) {
    sn_bf16 *p = malloc((size_t)n * sizeof *p);
    if (!p) exit(2);
    for (int64_t i = 0; i < n; i++) p[i] = sn_bf16_from_f32(src[i]);
    return p;
}

int main(void) {
    stack_buf = aligned_alloc(4096, STACK_BYTES);
    if (!stack_buf) return 2;
    job empty = {NULL, NULL, NULL, SN_OK};
    const long base = stack_used(&empty);
    if (base < 0) {
        fprintf(stderr, "stack: could not start a thread on a given stack\n");
        return 1;
    }
    int small = 0; /* print only: not the optimised library */
#if defined(SN_TEST_SMALL) || !defined(__OPTIMIZE__)
    small = 1;
#endif
    int fails = 0;
    long worst[2] = {0, 0};
    static const int64_t widths[] = {1024, 1040, 4096};
    static const sn_isa isas[] = {SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512};
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
        bufs B;
        memset(&B, 0, sizeof B);
        B.D = widths[w];
        const int64_t N = R * B.D;
        if (sn_fuse_init(&B.f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f) != SN_OK) return 1;
        B.n = B.f.x;
        int64_t np = 0, spr = 0;
        if (sn_fuse_query(&B.f, B.D, &np, &spr) != SN_OK) return 1;
        B.a = falloc(N, 1.0f), B.b = falloc(N, 0.7f), B.c = falloc(N, 0.3f), B.d = falloc(N, 0.2f);
        B.o1 = falloc(N, 0.0f), B.o2 = falloc(N, 0.0f);
        B.p = falloc(np, 0.1f), B.dp = falloc(np, 0.0f), B.st = falloc(R * spr, 0.0f);
        if (sn_fuse_init_params(&B.f, B.D, B.p) != SN_OK) return 1;
        B.ha = halloc(B.a, N), B.hb = halloc(B.b, N), B.hc = halloc(B.c, N), B.hd = halloc(B.d, N);
        B.ho1 = halloc(B.o1, N), B.ho2 = halloc(B.o2, N);
        for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
            if (!sn_isa_available(isas[i])) continue;
            sn_ctx *ctx = NULL;
            if (sn_ctx_create(&ctx) != SN_OK || sn_ctx_set_isa(ctx, isas[i]) != SN_OK ||
                sn_ctx_set_threads(ctx, 1) != SN_OK)
                return 1;
            B.ctx = ctx;
            /* the forward first: the backward calls read its statistics */
            for (size_t k = 0; k < sizeof calls / sizeof *calls; k++) {
                job j = {&calls[k], &B, NULL, SN_OK};
                fails +=
                    measure(&j, calls[k].name, B.D, isas[i], calls[k].bf16, base, worst, !small);
            }
            sn_ctx_destroy(ctx);
        }
        free(B.a), free(B.b), free(B.c), free(B.d), free(B.o1), free(B.o2);
        free(B.p), free(B.dp), free(B.st);
        free(B.ha), free(B.hb), free(B.hc), free(B.hd), free(B.ho1), free(B.ho2);
    }
    /* every placement's training pass, D = 1024, fp32 and bf16, every path */
    for (int pl = 0; pl < SN_PLACEMENT_COUNT; pl++)
        for (int h = 0; h < 2; h++)
            for (size_t i = 0; i < sizeof isas / sizeof *isas; i++) {
                if (!sn_isa_available(isas[i])) continue;
                netpass P;
                memset(&P, 0, sizeof P);
                P.D = 1024, P.bf16 = h;
                if (sn_net_init(&P.net, (sn_placement)pl, 2, P.D, SN_NORM_LAYERNORM, 1e-5f) !=
                    SN_OK)
                    return 1;
                if (h) P.net.act_dtype = SN_DTYPE_BF16;
                int64_t np = 0, apr = 0, wpr = 0;
                if (sn_net_sizes(&P.net, &np, &apr, &wpr) != SN_OK) return 1;
                const int64_t N = R * P.D;
                float *params = falloc(np + 1, 0.0f), *grads = falloc(np + 1, 0.0f);
                float *acts = falloc(R * apr + 1, 0.0f), *work = falloc(R * wpr + 1, 0.0f);
                if (sn_net_init_params(&P.net, params) != SN_OK) return 1;
                P.ps = (sn_net_pass){R, params, acts, grads, work};
                P.e = falloc(N, 1.0f), P.h = falloc(N, 0.0f), P.z = falloc(N, 0.5f);
                P.o = falloc(N, 0.0f), P.g = falloc(N, 0.3f);
                P.he = halloc(P.e, N), P.hh = halloc(P.h, N), P.hz = halloc(P.z, N);
                P.ho = halloc(P.o, N), P.hg = halloc(P.g, N);
                sn_ctx *ctx = NULL;
                if (sn_ctx_create(&ctx) != SN_OK || sn_ctx_set_isa(ctx, isas[i]) != SN_OK) return 1;
                P.ctx = ctx;
                job j = {NULL, NULL, &P, SN_OK};
                char label[64];
                snprintf(label, sizeof label, "net %s%s", sn_placement_name((sn_placement)pl),
                         h ? " bf16" : "");
                fails += measure(&j, label, P.D, isas[i], h, base, worst, !small);
                sn_ctx_destroy(ctx);
                free(params), free(grads), free(acts), free(work);
                free(P.e), free(P.h), free(P.z), free(P.o), free(P.g);
                free(P.he), free(P.hh), free(P.hz), free(P.ho), free(P.hg);
            }
    printf("stack: worst fp32 call %.1f KiB (bound %ld), worst bf16 call %.1f KiB (bound %ld); an "
           "empty thread %.1f KiB\n",
           (double)worst[0] / KIB, F32_BOUND / KIB, (double)worst[1] / KIB, BF16_BOUND / KIB,
           (double)base / KIB);
    free(stack_buf);
    if (fails) fprintf(stderr, "stack: %d failures\n", fails);
    return fails ? 1 : 0;
}
