/* The execution context: kernel path and threading (see the header's context section). The
 * environment is read in sn_ctx_create only. */
#if (defined(__unix__) || defined(__APPLE__)) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#define SN_HAVE_SYSCONF 1
#endif
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#include <xmmintrin.h>
#define SN_HAVE_SFENCE 1
#endif

#include "cpu.h"
#include "ctx.h"
#include "parallel.h"

struct sn_ctx {
    sn_isa isa;            /* as set: SN_ISA_AUTO or an available path */
    int width;             /* threads or hook pieces, >= 1 */
    sn_pool *pool;         /* built-in workers (width > 1, no hook) */
    sn_parallel_for_fn fn; /* caller's hook, or NULL */
    void *user;
    void *scratch; /* caller's scratch (sn_ctx_set_scratch), or NULL */
    size_t scratch_bytes;
    int check_finite;      /* checked mode (sn_ctx_set_check_finite) */
    sn_ctx_report *report; /* what calls found (see ctx.h); never NULL */
};

static sn_isa isa_from_env(void) {
    const char *s = getenv("SN_ISA");
    sn_isa want = SN_ISA_AUTO;
    if (!s || !*s || !strcmp(s, "auto")) return SN_ISA_AUTO;
    if (!strcmp(s, "scalar")) want = SN_ISA_SCALAR;
    else if (!strcmp(s, "avx2")) want = SN_ISA_AVX2;
    else if (!strcmp(s, "avx512")) want = SN_ISA_AVX512;
    else return SN_ISA_AUTO;
    while (want > SN_ISA_SCALAR && !sn_cpu_has(want)) want = (sn_isa)(want - 1);
    return want;
}

sn_status sn_ctx_create(sn_ctx **out) {
    if (!out) return SN_ERR_NULL;
    sn_ctx *c = calloc(1, sizeof(sn_ctx));
    sn_ctx_report *rep = malloc(sizeof(sn_ctx_report));
    if (!c || !rep) {
        free(c);
        free(rep);
        *out = NULL;
        return SN_ERR_NOMEM;
    }
    *out = c;
    c->report = rep;
    c->report->nonfinite_row = SN_NONFINITE_NONE;
    c->isa = isa_from_env();
    c->width = 1;
    const char *t = getenv("SN_THREADS");
    if (t && *t) {
        char *end;
        long n = strtol(t, &end, 10);
        if (*end == '\0' && n > 1 && n <= SN_MAX_THREADS) sn_ctx_set_threads(c, (int)n);
    }
    return SN_OK;
}

static void drop_threads(sn_ctx *c) {
    sn_pool_stop(c->pool);
    c->pool = NULL;
    c->fn = NULL;
    c->user = NULL;
    c->width = 1;
}

void sn_ctx_destroy(sn_ctx *ctx) {
    if (!ctx) return;
    drop_threads(ctx);
    free(ctx->report);
    free(ctx);
}

int sn_isa_available(sn_isa isa) { return isa == SN_ISA_AUTO || sn_cpu_has(isa); }

const char *sn_isa_name(sn_isa isa) {
    switch (isa) {
    case SN_ISA_AUTO: return "auto";
    case SN_ISA_SCALAR: return "scalar";
    case SN_ISA_AVX2: return "avx2";
    case SN_ISA_AVX512: return "avx512";
    }
    return "unknown";
}

sn_status sn_ctx_set_isa(sn_ctx *ctx, sn_isa isa) {
    if (!ctx) return SN_ERR_NULL;
    if ((int)isa < SN_ISA_AUTO || (int)isa > SN_ISA_AVX512) return SN_ERR_CONFIG;
    if (isa != SN_ISA_AUTO && !sn_cpu_has(isa)) return SN_ERR_UNSUPPORTED;
    ctx->isa = isa;
    return SN_OK;
}

sn_isa sn_ctx_isa(const sn_ctx *ctx) {
    return ctx && ctx->isa != SN_ISA_AUTO ? ctx->isa : sn_cpu_best();
}

sn_isa sn_ctx_isa_setting(const sn_ctx *ctx) { return ctx ? ctx->isa : SN_ISA_AUTO; }

sn_status sn_ctx_set_threads(sn_ctx *ctx, int n) {
    if (!ctx) return SN_ERR_NULL;
    if (n < 0 || n > SN_MAX_THREADS) return SN_ERR_CONFIG;
    if (n == 0) {
        n = 1;
#ifdef SN_HAVE_SYSCONF
        long k = sysconf(_SC_NPROCESSORS_ONLN);
        if (k > 1) n = k > SN_MAX_THREADS ? SN_MAX_THREADS : (int)k;
#endif
    }
    drop_threads(ctx);
    if (n == 1) return SN_OK;
    sn_status st = sn_pool_start(&ctx->pool, n);
    if (st != SN_OK) return st;
    ctx->width = n;
    return SN_OK;
}

sn_status sn_ctx_set_parallel_for(sn_ctx *ctx, sn_parallel_for_fn fn, void *user, int n) {
    if (!ctx) return SN_ERR_NULL;
    if (fn && (n < 1 || n > SN_MAX_THREADS)) return SN_ERR_CONFIG;
    drop_threads(ctx);
    if (!fn) return SN_OK;
    ctx->fn = fn;
    ctx->user = user;
    ctx->width = n;
    return SN_OK;
}

int sn_ctx_threads(const sn_ctx *ctx) { return ctx ? ctx->width : 1; }

sn_status sn_ctx_set_scratch(sn_ctx *ctx, void *buf, size_t bytes) {
    if (!ctx) return SN_ERR_NULL;
    if (!buf && bytes) return SN_ERR_NULL;
    ctx->scratch = bytes ? buf : NULL;
    ctx->scratch_bytes = buf ? bytes : 0;
    return SN_OK;
}

void sn_ctx_scratch(const sn_ctx *ctx, float **p, int64_t *floats) {
    *p = NULL;
    *floats = 0;
    if (!ctx || !ctx->scratch) return;
    const uintptr_t a = (uintptr_t)ctx->scratch, al = (a + 63u) & ~(uintptr_t)63u;
    if (ctx->scratch_bytes < (size_t)(al - a) + sizeof(float)) return;
    *p = (float *)al;
    *floats = (int64_t)((ctx->scratch_bytes - (size_t)(al - a)) / sizeof(float));
}

int sn_ctx_width(const sn_ctx *ctx) { return ctx ? ctx->width : 1; }

/* The row kernels may write with streaming stores, which x86 orders with other stores only
 * through a store fence. The kernels do not fence (a fence per row made streaming calls up to
 * 30% slower: docs/performance.md); every task ends with one instead, on the thread that ran
 * it, before the pool or the caller's hook can learn that it finished, and so before the call
 * returns. */
static void store_fence(void) {
#ifdef SN_HAVE_SFENCE
    _mm_sfence();
#endif
}

/* Each task runs through this one, which fences after it and runs the library's task only for
 * indices in [0, n): an index out of range from a faulty hook is ignored instead of reaching
 * rows that do not exist. */
typedef struct checked_task {
    sn_task_fn task;
    void *arg;
    int64_t n;
} checked_task;
static void run_checked(void *arg, int64_t i) {
    const checked_task *c = arg;
    if (i >= 0 && i < c->n) c->task(c->arg, i);
    store_fence();
}

void sn_ctx_par(const sn_ctx *ctx, int64_t n, sn_task_fn task, void *arg) {
    if (n <= 0) return;
    checked_task c = {task, arg, n};
    if (ctx && n > 1 && ctx->fn) {
        ctx->fn(ctx->user, n, run_checked, &c);
    } else if (ctx && n > 1 && ctx->pool) {
        sn_pool_run(ctx->pool, n, run_checked, &c);
    } else {
        for (int64_t i = 0; i < n; i++) task(arg, i);
        store_fence();
    }
}

/* ---- checked mode's setting and record (ctx.h; the checks are api/finite.c's) ---- */

sn_status sn_ctx_set_check_finite(sn_ctx *ctx, int on) {
    if (!ctx) return SN_ERR_NULL;
    ctx->check_finite = on != 0;
    ctx->report->nonfinite_row = SN_NONFINITE_NONE;
    return SN_OK;
}

int64_t sn_ctx_nonfinite_row(const sn_ctx *ctx) {
    return ctx ? ctx->report->nonfinite_row : SN_NONFINITE_NONE;
}

int sn_ctx_checks_finite(const sn_ctx *ctx) { return ctx && ctx->check_finite; }

/* Calls take their context as const and write the record through its report pointer (ctx.h). */
void sn_ctx_note_nonfinite(const sn_ctx *ctx, int64_t row) { ctx->report->nonfinite_row = row; }
