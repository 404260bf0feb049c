/*
 * libsiamesenorm — SiameseNorm dual-stream normalisation primitives for C/C++ trainers.
 *
 * SiameseNorm (Li et al., ICML 2026) replaces the single Pre-Norm residual stream of a
 * transformer with two streams that share every block: a Post-Norm-like stream x and a
 * Pre-Norm-like stream y with a clean identity path, fused before each block. This header is
 * the whole public contract of the library. The mathematics is restated next to each call.
 *
 * ---------------------------------------------------------------------------------------------
 * Conventions (they hold for every function below unless its comment says otherwise)
 * ---------------------------------------------------------------------------------------------
 * Tensors   fp32, row-major, R rows (tokens) by D columns (model width). Every matrix argument
 *           comes as a pointer plus a row stride `ld*` counted in floats (ld >= D), so views into
 *           larger buffers work: element (r, j) of `x` is x[r * ldx + j].
 * Roles     "reads" arguments are const and only read. "writes" arguments are overwritten.
 *           "accumulates" arguments have the result added (+=) to what they hold. Backward
 *           passes always accumulate parameter gradients; input gradients are written unless
 *           the flag SN_ACCUMULATE (or SN_ACCUMULATE_Y) asks to accumulate them.
 * Aliasing  Buffers must not overlap, except where a comment says "may alias": then the two
 *           arguments may be the very same view (same pointer and same row stride), which
 *           makes the call in-place. Any other overlap between a buffer the call writes and any
 *           other buffer of the call is rejected with SN_ERR_ALIAS. Overlap is judged on the
 *           address ranges the views span.
 * Alignment Every float pointer a call reads or writes (matrices, parameters, statistics,
 *           gradients, acts, work, explicit scales) must be aligned to 4 bytes (the alignment
 *           of float). The calls that take buffers reject a misaligned one with SN_ERR_ALIGN
 *           before touching anything (the scratch of sn_ctx_set_scratch may have any
 *           alignment).
 * Errors    Every call validates all its arguments before it touches memory and returns a
 *           sn_status. On any status other than SN_OK no output buffer has been modified.
 *           The library never aborts, prints, or calls exit.
 * Memory    No call allocates except sn_ctx_create and sn_ctx_set_threads (the worker threads).
 *           No forward or backward call allocates. Parameters, saved activations and
 *           gradients live in caller-owned buffers whose sizes the *_query / sn_net_sizes
 *           functions report.
 * Threads   There is no global mutable state (the process-wide data are write-once caches of
 *           the CPU's features, which every thread fills with the same bits, and of the kernel
 *           tables SN_ISA_AUTO composes from them, filled once under pthread_once). Every
 *           function is reentrant and thread-safe
 *           for calls whose written buffers are disjoint. A NULL sn_ctx is always valid and
 *           means "defaults"; a non-NULL sn_ctx may be used by one call at a time.
 * Numerics  Row statistics are computed in fp32 with a two-pass method (mean, then the sum of
 *           squared deviations), which stays accurate when |mean| >> std. Results are
 *           deterministic: the same inputs give bitwise-identical outputs on every call. On
 *           one kernel path (see sn_isa) every call normalises a row with the same arithmetic,
 *           so a norm computed by sn_norm_forward, inside sn_fuse_forward or by the placement
 *           layer gives the same bits for the same row and parameters.
 * Norm params  A norm's parameters are one contiguous block: gamma (W floats) then beta (W
 *           floats, present only with SN_AFFINE_SCALE_SHIFT), where W is the norm's width (D,
 *           or the group size G). Its parameter gradients use the same layout.
 * Norm stats   Saved statistics are stored per row: row r's block starts at
 *           stats + r * stats_per_row. For LayerNorm the block holds the mean of each of the
 *           row's groups followed by their rstd; for RMSNorm only the rstd; for the identity
 *           nothing. stats_per_row comes from the *_query calls.
 *
 * ABI policy: enums only grow at the end (SN_PLACEMENT_COUNT grows with its enum); sn_norm
 * and sn_fuse are frozen value types; sn_net grows only by giving meaning to its reserved
 * words, whose zero value keeps the old behaviour (sn_net_init zeroes them); sn_ctx is
 * opaque. New behaviour arrives as new functions or new enum values, never as a changed
 * signature within a major version; while the major version is 0, a minor version may break
 * this, and the README's changelog says how (0.2.0 did: at most 2^10 sub-layers, SN_ERR_ALIGN;
 * 0.3.0 did: the pass calls take an sn_net_pass, and the shared object's name carries the minor
 * version while the major is 0; 0.4.0 added bf16 storage as new calls and gave sn_net's
 * reserved32 its meaning, act_dtype, breaking nothing but that field's name; 0.4.1 changed
 * only how the bf16 calls compute, not what they write; 0.5.0 added a placement, the norm
 * roles and sn_dtype_from_name as new values and calls, and narrowed one promise: NaN outputs'
 * sign and payload bits may differ between thread counts on the SIMD paths; 0.6.0 added a
 * placement, a status and sn_net_conn_at, and gave sn_net's first reserved word its meaning,
 * hc_rate and hc_dynamic, whose zero keeps the old behaviour; 0.6.1 changed no call and no bit
 * and replaced the stack figures by tested bounds: an fp32 call at most 112 KiB, where 0.6.0
 * said "about 90" and used up to 97; 0.6.2 changed no call and no bit; 0.6.3 changed no call
 * and no bit, and let SN_ISA_AUTO take some kernels from another path, with the same bits, see
 * sn_isa; 0.6.4 changed no call, gave the AVX-512 path the AVX2 path's bits (one summation
 * order for both) and changed the AVX2 path's in sums over rows whose width is not a multiple
 * of 8; 0.6.5 changed no call and, on every path, the bits of the parameter gradients of the
 * backward calls for row widths D at which 16384 / D is odd and above 1 (the rows per
 * parameter-gradient chunk are now even: 768 columns, 21 -> 20 rows); 0.6.6 and 0.6.7 changed
 * no call and no bit; 0.6.8 changed no call and no bit, and runs SN_ISA_AVX512 only where the CPU
 * also has AVX512BW (every AVX-512 CPU but Xeon Phi, which now runs SN_ISA_AVX2); 0.6.9,
 * 0.6.10, 0.6.11, 0.6.12, 0.6.13, 0.6.14, 0.6.15, 0.6.16, 0.6.17 and 0.6.18 changed no call and no
 * bit; 0.6.19 changed no call, and the bits only of Mix-LN nets whose mix_fraction * L lies
 * within a float's rounding below an integer (0.7 of 10 layers: 7 Post-Norm layers, was 6);
 * 0.6.20 changed no call and no bit.
 */
#ifndef SIAMESENORM_H
#define SIAMESENORM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ------------------------------------------------------------------------------ */

#define SN_VERSION_MAJOR 0
#define SN_VERSION_MINOR 6
#define SN_VERSION_PATCH 20
/* MAJOR * 10000 + MINOR * 100 + PATCH */
#define SN_VERSION_NUMBER (SN_VERSION_MAJOR * 10000 + SN_VERSION_MINOR * 100 + SN_VERSION_PATCH)
#define SN_VERSION_STRING "0.6.20"

/* ---- export macro ------------------------------------------------------------------------- */

#if defined(_WIN32) && defined(SN_BUILDING_DLL)
#define SN_API __declspec(dllexport)
#elif defined(_WIN32) && defined(SN_USING_DLL)
#define SN_API __declspec(dllimport)
#elif defined(__GNUC__) && __GNUC__ >= 4
#define SN_API __attribute__((visibility("default")))
#else
#define SN_API
#endif

/* The runtime version of the linked library: SN_VERSION_NUMBER and SN_VERSION_STRING as they
 * were when the library was built. Compare with the macros to detect a header/library mismatch. */
SN_API unsigned sn_version_number(void);
SN_API const char *sn_version_string(void);

/* ---- status codes ------------------------------------------------------------------------- */

typedef enum sn_status {
    SN_OK = 0,
    SN_ERR_NULL = 1,         /* a required pointer argument is NULL */
    SN_ERR_SHAPE = 2,        /* R, D or the number of sub-layers is <= 0 or too large */
    SN_ERR_STRIDE = 3,       /* a row stride is smaller than D */
    SN_ERR_EPS = 4,          /* eps is <= 0, NaN or infinite */
    SN_ERR_SCALE = 5,        /* a residual scale c is <= 0, NaN or infinite */
    SN_ERR_ALIAS = 6,        /* a written buffer overlaps another buffer in a forbidden way */
    SN_ERR_PLACEMENT = 7,    /* unknown placement */
    SN_ERR_NORM = 8,         /* unknown norm kind or affine mode, or one not allowed here */
    SN_ERR_GROUP = 9,        /* group size is negative or does not divide D */
    SN_ERR_FLAGS = 10,       /* unknown bits in a flags argument */
    SN_ERR_INDEX = 11,       /* sub-layer (or norm) index out of range */
    SN_ERR_CONFIG = 12,      /* inconsistent configuration (e.g. nonzero reserved words) */
    SN_ERR_UNSUPPORTED = 13, /* the request is valid but not available in this build/CPU */
    SN_ERR_NOMEM = 14,       /* sn_ctx_create could not allocate */
    SN_ERR_NONFINITE = 15,   /* checked mode: an input holds a NaN or an infinity */
    SN_ERR_ALIGN = 16,       /* a buffer is not aligned to its element's size (float: 4 bytes,
                                sn_bf16: 2 bytes) */
    SN_ERR_DTYPE = 17,       /* a placement-layer call's element type is not the net's act_dtype */
    SN_ERR_STREAMS = 18      /* Hyper-Connections: the expansion rate hc_rate is outside
                                1 .. SN_HC_MAX_RATE */
} sn_status;

/* A static, human-readable, English description of a status (never NULL; unknown codes get
 * "unknown status"). */
SN_API const char *sn_status_string(sn_status status);

/* Flags for backward passes.
 *   SN_ACCUMULATE    add the (first) input gradient into its buffer instead of writing it
 *   SN_ACCUMULATE_Y  sn_fuse_backward / sn_merge_backward: add into dy instead of writing;
 *                    SN_ERR_FLAGS for every other call */
#define SN_ACCUMULATE   1u
#define SN_ACCUMULATE_Y 2u

/* ---- context ------------------------------------------------------------------------------ */

/* Execution context: optional, may be NULL everywhere (NULL means single-threaded, best kernels
 * for this CPU). A context is the only object the library allocates. One context serves one
 * call at a time (it may be reused by any thread, one call after another).
 *
 * Determinism: the number of threads never changes a result bit for bit within a path (NaN
 * bits aside, below): every row's arithmetic is the same whatever the thread count, and
 * parameter gradients are always summed the same way: the rows are cut into fixed chunks whose
 * size depends on D only (16384 / D rows, rounded down, then down to even from 2 up, between 1
 * and 256), each chunk's sum is a left fold over its rows starting from zero, and the chunk
 * sums are added onto the gradient in chunk order,
 *     dgamma = ((dgamma + P_0) + P_1) + ...,   P_k = ((0 + t_{kC}) + t_{kC+1}) + ...
 * So a NULL context, a context with 1 thread and one with N threads (built-in pool or caller
 * hook), with or without scratch, give bitwise-identical outputs on the same path. (This
 * rounds slightly differently from one fold over all rows; the difference is within the
 * path tolerance below.) One carve-out, as in the bf16 contract: NaN bits. An output that is
 * a NaN with one thread count is a NaN with every other, and every output that is not a NaN
 * is bitwise the same, but on the AVX2 and AVX-512 paths the sign and payload bits of a NaN
 * output may differ between thread counts when the inputs hold NaNs of different signs or
 * payloads (tests/test_threads.c checks the rule; with SN_TEST_NAN_BITS=1 it compares the NaN
 * bits too and shows the difference on AVX2). None was seen on the scalar path, but NaN bits
 * are promised on no path. The scalar path and the SIMD paths round differently (the SIMD
 * paths use fused multiply-add and their own summation order): each output agrees with the
 * scalar path within 5e-5 of the largest magnitude in that output (about 1e-5 observed,
 * tests/test_paths.c; see docs/performance.md). The AVX2 and AVX-512 paths give the same bits
 * (since 0.6.4: one summation order, whatever the vector width; NaN sign and payload bits
 * aside), so a call's outputs on a CPU with AVX-512 are bitwise those on one with AVX2 only.
 * Within one path, the recomputations of a backward pass use the same arithmetic as its
 * forward pass. No call needs scratch memory: temporaries live in bounded stack buffers (at
 * most 112 KiB of a thread's stack per call, 104 KiB measured: 64 KiB of parameter-gradient
 * slots and a kernel's stack rows, in the AVX2 fuse backward of a SiameseNorm net;
 * tests/test_stack.c checks the primitives and every placement's pass on every path); scratch
 * given with sn_ctx_set_scratch only lets threads work on more chunks at once. All paths keep
 * IEEE semantics (no fast-math). */
typedef struct sn_ctx sn_ctx;

/* Allocates a context with default settings: kernel path SN_ISA_AUTO, 1 thread. Two
 * environment variables, read here only (never by any other call), override the defaults:
 *   SN_ISA      "auto", "scalar", "avx2" or "avx512": the kernel path. A path this build or
 *               CPU lacks falls back to the best available one below it.
 *   SN_THREADS  a positive integer: as sn_ctx_set_threads (a failure to start the threads
 *               leaves 1 thread, it does not fail the creation).
 * Returns SN_ERR_NULL if out is NULL and SN_ERR_NOMEM if memory is exhausted (then *out is
 * NULL). */
SN_API sn_status sn_ctx_create(sn_ctx **out);
/* Frees a context, stopping and joining the worker threads it started. NULL is a no-op. */
SN_API void sn_ctx_destroy(sn_ctx *ctx);

/* Kernel paths. Only grows at the end. */
typedef enum sn_isa {
    SN_ISA_AUTO = 0,   /* the best path this build and CPU support (the default); on CPU
                        * families where another path runs some kernels faster (measured by
                        * tests/checkasm's --bench on rows in L1 and bench/sn-auto-calls
                        * through the public calls, docs/performance.md), auto takes those
                        * kernels from it, per row width, kind of call (a LayerNorm's or an
                        * RMSNorm's, a sub-layer's fuse or a merge) and placement (the size
                        * of the call's matrices: within the L2, past it, beyond 8 MiB, or
                        * written with streaming stores; and whether every row and parameter
                        * vector starts on a 32-byte boundary): from another SIMD path
                        * (they give the same bits in every kernel) or, for plain copies, from
                        * the scalar path; and it
                        * may run rows one at a time that a forced path runs in pairs (the
                        * same bits). The results are bitwise those of the path sn_ctx_isa
                        * names */
    SN_ISA_SCALAR = 1, /* portable C, any CPU: the reference path */
    SN_ISA_AVX2 = 2,   /* x86-64 AVX2 + FMA */
    SN_ISA_AVX512 = 3  /* x86-64 AVX-512F with AVX512BW (every AVX-512 CPU but Xeon Phi) */
} sn_isa;

/* 1 if calls can run on path isa in this build on this CPU (SN_ISA_AUTO and SN_ISA_SCALAR:
 * always), else 0. Detected with CPUID (and the OS's saved-register support) on the first
 * query of the process and remembered (CPUID traps to the hypervisor in a virtual machine,
 * tens of microseconds, which calls with a NULL ctx would otherwise pay each time). */
SN_API int sn_isa_available(sn_isa isa);

/* A static lower-case name of a path ("auto", "scalar", "avx2", "avx512"; "unknown"). */
SN_API const char *sn_isa_name(sn_isa isa);

/* Forces the kernel path of calls made with ctx (SN_ISA_AUTO: the best available, with the
 * per-CPU-family choices of SN_ISA_AUTO; a forced path runs only its own kernels).
 * Errors: SN_ERR_NULL (ctx), SN_ERR_CONFIG (unknown value), SN_ERR_UNSUPPORTED (the path is
 * not available, see sn_isa_available; the context is unchanged). */
SN_API sn_status sn_ctx_set_isa(sn_ctx *ctx, sn_isa isa);

/* The path calls made with ctx run on, resolved (never SN_ISA_AUTO); NULL ctx: the best. */
SN_API sn_isa sn_ctx_isa(const sn_ctx *ctx);

/* Threads with the built-in pool: calls made with ctx split their rows (backward passes: their
 * chunks of rows, see "Determinism") over n threads, the calling thread and n - 1 workers the
 * context starts now and keeps, sleeping between calls, until sn_ctx_destroy or the next
 * sn_ctx_set_threads / sn_ctx_set_parallel_for. n = 1 is single-threaded (the default);
 * n = 0 means the number of online CPUs. Calls on fewer than 16384 elements stay on the
 * calling thread. The calling thread never waits for a worker to wake up: it runs whatever
 * work no worker has claimed. Like sn_ctx_create, this call allocates (the workers' stacks).
 * Errors: SN_ERR_NULL, SN_ERR_CONFIG (n < 0 or n > SN_MAX_THREADS), SN_ERR_UNSUPPORTED (n > 1
 * in a build without threads), SN_ERR_NOMEM (a thread could not be started: the context is
 * left single-threaded). */
#define SN_MAX_THREADS 256
SN_API sn_status sn_ctx_set_threads(sn_ctx *ctx, int n);

/* A caller-supplied parallel for, to run the library's work on the caller's own pool (OpenMP,
 * TBB, a job system) instead of the built-in one. The library calls
 *     fn(user, n_tasks, task, task_arg)
 * from inside a library call; fn must call task(task_arg, i) exactly once for every i in
 * [0, n_tasks), in any order and on any threads, concurrently or not, and return only when
 * all have returned. The tasks never block on each other, so running them one after another
 * on the calling thread is valid. A task called with an index outside [0, n_tasks) does
 * nothing (a faulty hook cannot make the library touch memory outside the call's buffers and
 * scratch; but the outputs of a call whose hook skipped indices are unspecified: a backward
 * call's parameter gradients may then take in stale scratch). */
typedef void (*sn_task_fn)(void *task_arg, int64_t i);
typedef void (*sn_parallel_for_fn)(void *user, int64_t n_tasks, sn_task_fn task, void *task_arg);

/* Makes calls with ctx run their parallel parts through fn (see sn_parallel_for_fn), split
 * into about n pieces (n: the width of the caller's pool, 1..SN_MAX_THREADS). Stops the
 * built-in workers if any. fn NULL returns to single-threaded execution (n ignored).
 * Errors: SN_ERR_NULL (ctx), SN_ERR_CONFIG (fn non-NULL and n out of range). */
SN_API sn_status sn_ctx_set_parallel_for(sn_ctx *ctx, sn_parallel_for_fn fn, void *user, int n);

/* The number of threads (or hook pieces) calls made with ctx use; 1 for NULL ctx. */
SN_API int sn_ctx_threads(const sn_ctx *ctx);

/* Scratch memory for the parameter gradients of backward passes (sn_norm_backward,
 * sn_fuse_backward, sn_merge_backward and the placement layer's backward calls). With several
 * threads, such a call computes the sums of its row chunks (see "Determinism") into slots of
 * one parameter block each, as many at once as the slots fit, then adds them in chunk order.
 * Without scratch the slots live in a 64 KiB stack buffer: enough for a LayerNorm backward at
 * D = 768 to use 2 threads fully, but a fuse backward (six parameter vectors) at that width
 * fits only 3 slots, and rows wider than about 2700 (fuse) or 8000 (norm) columns fit none,
 * and then run on the calling thread. Scratch never changes a result, only the speed.
 *
 * sn_scratch_bytes(ctx, D) is the number of bytes with which every backward call of ctx on rows
 * of D columns runs on all of ctx's threads at full width: 8 slots per thread (1 for a
 * single-threaded ctx) of 6 * D floats each, plus 64 bytes of alignment slack, for any R
 * (dynamic Hyper-Connections with n > 4 streams need (n + 2) * D floats a slot for their
 * projections' gradients: with less they run on fewer threads or in column blocks).
 * It depends on sn_ctx_threads(ctx) (NULL ctx: 1 thread); 0 when D < 1; SIZE_MAX when the
 * size does not fit in an int64_t or a size_t (D beyond any valid call).
 *
 * sn_ctx_set_scratch(ctx, buf, bytes) makes calls with ctx use buf (any alignment; the library
 * aligns it to 64 bytes inside) as scratch; buf NULL or bytes 0 removes it. The context keeps
 * the pointer, does not free it, and reads and writes it during calls made with ctx: the
 * caller keeps it alive, does not touch it during those calls, and does not pass it (or let
 * it overlap) any buffer of those calls; nothing is checked. Any size works: a smaller buffer
 * only means fewer slots at once. The setting survives sn_ctx_set_threads and
 * sn_ctx_set_parallel_for (query the size again after changing the threads).
 * Errors: SN_ERR_NULL (ctx NULL, or buf NULL with bytes > 0). */
SN_API size_t sn_scratch_bytes(const sn_ctx *ctx, int64_t D);
SN_API sn_status sn_ctx_set_scratch(sn_ctx *ctx, void *buf, size_t bytes);

/* ---- checked mode ------------------------------------------------------------------------- */

/* NaN and infinity policy. By default the library propagates them: a non-finite input value
 * makes the outputs of its own row (and, through parameter gradients, the parameter gradients)
 * non-finite, and never other rows' outputs; nothing is checked, nothing costs extra.
 * Checked mode, a setting of a context, makes every call of that context first scan the floats
 * the caller passes in (the R x D matrices it reads and the parameter block; not buffers it
 * only writes or accumulates into, nor acts, work or saved statistics, which the library
 * wrote itself) and, when one is a NaN or an infinity, return
 * SN_ERR_NONFINITE before writing anything. sn_ctx_nonfinite_row then names where: the
 * smallest row index holding one in any input matrix, or SN_NONFINITE_PARAMS when only the
 * parameters hold one. The scan reads every input once more. */
#define SN_NONFINITE_NONE   (-1) /* the last checked call found nothing (or none ran) */
#define SN_NONFINITE_PARAMS (-2) /* ... found one in the parameter block only */

/* Turns checked mode on (on != 0) or off for the calls made with ctx, and clears the record
 * (sn_ctx_nonfinite_row gives SN_NONFINITE_NONE). Errors: SN_ERR_NULL. */
SN_API sn_status sn_ctx_set_check_finite(sn_ctx *ctx, int on);

/* Where the last call made with ctx in checked mode found a non-finite input: a row index,
 * SN_NONFINITE_PARAMS, or SN_NONFINITE_NONE (also for a NULL ctx). Calls take the context as
 * const: they never change its settings, only this record, which the context keeps apart from
 * them (allocated by sn_ctx_create). It belongs to the one call the context serves at a time
 * (see "Threads" at the top): read it before the next call with that ctx. */
SN_API int64_t sn_ctx_nonfinite_row(const sn_ctx *ctx);

/* Scans x [R x D, ldx] (read) and writes to *row the first row holding a NaN or an infinity,
 * or SN_NONFINITE_NONE. Needs no context. Errors: SN_ERR_SHAPE, SN_ERR_NULL, SN_ERR_STRIDE. */
SN_API sn_status sn_find_nonfinite(int64_t R, int64_t D, const float *x, int64_t ldx, int64_t *row);

/* ---- norms -------------------------------------------------------------------------------- */

typedef enum sn_norm_kind {
    SN_NORM_LAYERNORM = 0, /* N(v) = gamma * (v - mean(v)) * rstd + beta, rstd = 1/sqrt(var + eps),
                              var biased (mean of squared deviations) */
    SN_NORM_RMSNORM = 1,   /* N(v) = gamma * v * rstd + beta, rstd = 1/sqrt(mean(v^2) + eps) */
    SN_NORM_IDENTITY = 2,  /* N(v) = v: no parameters, no statistics (an absent norm) */
    SN_NORM_SCALE = 3      /* N(v) = gamma * v + beta: a learned per-column scale (and shift)
                              without normalisation, e.g. hybrid_pre's c1; no statistics */
} sn_norm_kind;

typedef enum sn_affine {
    SN_AFFINE_SCALE_SHIFT = 0, /* learned gamma and beta */
    SN_AFFINE_SCALE = 1,       /* learned gamma, no beta (bias-free) */
    SN_AFFINE_NONE = 2         /* gamma fixed at 1, no beta: no parameters */
} sn_affine;

/* One normalisation. Frozen layout (16 bytes).
 *   kind    sn_norm_kind.
 *   affine  sn_affine (ignored for SN_NORM_IDENTITY; SN_NORM_SCALE with SN_AFFINE_NONE is the
 *           identity).
 *   group   0 normalises each whole row of D columns. G > 0 normalises each run of G
 *           consecutive columns of a row separately (per-head q/k norms): D % G == 0, the row
 *           holds D/G groups, statistics are kept per group, and gamma/beta have G entries shared
 *           by every group (like torch.nn.LayerNorm(G) applied to a [R, D/G, G] view).
 *   eps     > 0 and finite (PyTorch's LayerNorm default is 1e-5). Ignored (not checked) for
 *           SN_NORM_IDENTITY and SN_NORM_SCALE. */
typedef struct sn_norm {
    int32_t kind;
    int32_t affine;
    int32_t group;
    float eps;
} sn_norm;

/* Sizes of one norm applied to rows of D columns: *n_params receives the parameter count
 * (gamma then beta, see "Norm params"), *stats_per_row the floats saved per row by a training
 * forward (LayerNorm 2 * D/G, RMSNorm D/G, identity and scale 0). Either output may be NULL.
 * Errors: SN_ERR_NULL (n), SN_ERR_SHAPE (D <= 0), SN_ERR_NORM, SN_ERR_GROUP, SN_ERR_EPS. */
SN_API sn_status sn_norm_query(const sn_norm *n, int64_t D, int64_t *n_params,
                               int64_t *stats_per_row);

/* Default initialisation: writes gamma = 1 and beta = 0 into params (sn_norm_query's n_params
 * floats). params may be NULL when the norm has no parameters. */
SN_API sn_status sn_norm_init_params(const sn_norm *n, int64_t D, float *params);

/* Forward: out = N(x), row by row. Accuracy (docs/reliability.md): the statistics hold for any
 * finite row; LayerNorm's outputs and gradients hold while every |x_j - mean| <= FLT_MAX (true
 * for max |x_j| <= 2^127); beyond that an element may come out as +-inf with SN_OK. RMSNorm
 * has no such limit.
 *   reads   x [R x D, ldx], params (NULL allowed when the norm has none)
 *   writes  out [R x D, ldo]; out may alias x.
 *           stats [R x stats_per_row] when non-NULL (training); NULL runs inference and saves
 *           nothing.
 * Errors: SN_ERR_NULL, SN_ERR_SHAPE, SN_ERR_STRIDE, SN_ERR_NORM, SN_ERR_GROUP, SN_ERR_EPS,
 *         SN_ERR_ALIAS. */
SN_API sn_status sn_norm_forward(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                                 const float *x, int64_t ldx, const float *params, float *out,
                                 int64_t ldo, float *stats);

/* Backward of sn_norm_forward. With xhat = (x - mean) * rstd (RMSNorm: x * rstd) recomputed
 * from x and the saved stats, and g = gamma * dout:
 *   LayerNorm  dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
 *   RMSNorm    dx = rstd * (g - xhat * mean(g * xhat))
 *   identity   dx = dout
 *   dgamma += sum over rows (and groups) of dout * xhat;  dbeta += sum of dout.
 *   reads        dout [R x D, lddo], x [R x D, ldx], params, stats (as written by the forward
 *                over the same rows)
 *   writes       dx [R x D, lddx]; accumulates into it instead with flags & SN_ACCUMULATE.
 *                dx may alias dout (not with SN_ACCUMULATE).
 *   accumulates  dparams (same layout as params) when non-NULL; NULL skips parameter
 *                gradients.
 * Errors: as sn_norm_forward, plus SN_ERR_FLAGS. */
SN_API sn_status sn_norm_backward(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                                  const float *dout, int64_t lddo, const float *x, int64_t ldx,
                                  const float *params, const float *stats, float *dx, int64_t lddx,
                                  float *dparams, uint32_t flags);

/* ---- dual-stream fuse and merge ----------------------------------------------------------- */

/* Three norms combining the two streams (frozen layout):
 *   u = N_x(x),   s = u + N_y(y),   h = N_out(s)
 * As the sub-layer fuse: N_x = N_post, N_y = N_pre, N_out = N_in (SN_NORM_IDENTITY when the
 * block has no input norm, SN_AFFINE_NONE for a non-affine input norm).
 * As the merge at the end of the network: N_x = N_a, N_y = N_b, N_out = N_f; the paper's merge
 * out = x + N_f(y) is N_x = identity, N_y = N_f, N_out = identity.
 * The three norms must have group == 0. Parameters are one block [N_x | N_y | N_out], each in
 * the per-norm layout; statistics per row are [N_x | N_y | N_out] likewise. */
typedef struct sn_fuse {
    sn_norm x;
    sn_norm y;
    sn_norm out;
} sn_fuse;

/* Sets f->x, f->y and f->out all to {kind, affine, 0, eps} once that norm is valid.
 * Errors: SN_ERR_NULL (f), SN_ERR_NORM, SN_ERR_EPS; *f is unchanged on error. */
SN_API sn_status sn_fuse_init(sn_fuse *f, sn_norm_kind kind, sn_affine affine, float eps);

/* Sizes: parameter floats and saved floats per row of the three norms together. Either output
 * may be NULL. Errors: as sn_norm_query, plus SN_ERR_GROUP when a group is nonzero. */
SN_API sn_status sn_fuse_query(const sn_fuse *f, int64_t D, int64_t *n_params,
                               int64_t *stats_per_row);

/* Default initialisation of the fuse's parameter block (gammas 1, betas 0). */
SN_API sn_status sn_fuse_init_params(const sn_fuse *f, int64_t D, float *params);

/* Fuse forward: u = N_x(x), h = N_out(u + N_y(y)).
 *   reads   x [R x D, ldx], y [R x D, ldy], params (NULL allowed when the fuse has none)
 *   writes  u [R x D, ldu] (NULL: not written), h [R x D, ldh],
 *           stats [R x stats_per_row] (NULL: inference).
 *   No aliasing between any of the buffers.
 * Errors: SN_ERR_NULL, SN_ERR_SHAPE, SN_ERR_STRIDE, SN_ERR_NORM, SN_ERR_GROUP, SN_ERR_EPS,
 *         SN_ERR_ALIAS. */
SN_API sn_status sn_fuse_forward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                 const float *x, int64_t ldx, const float *y, int64_t ldy,
                                 const float *params, float *u, int64_t ldu, float *h, int64_t ldh,
                                 float *stats);

/* Fuse backward. Given dh (gradient of h) and du (gradient reaching u through the residual
 * path, NULL meaning zero):
 *   ds = N_out backward of dh
 *   dx = N_x backward of (du + ds)    written, or accumulated with SN_ACCUMULATE
 *   dy = N_y backward of ds           written, or accumulated with SN_ACCUMULATE_Y
 *   dparams += the gradients of all three norms' parameters (NULL skips them).
 *   reads   dh, du, x, y, params (NULL allowed when the fuse has none), stats (from the
 *           training forward over the same rows; required when stats_per_row > 0)
 *   dx and dy are both required. dx may alias du (not with SN_ACCUMULATE); dy may not alias
 *   anything.
 * In a SiameseNorm sub-layer call it with du = dx_{i+1}, dx aliasing du, and dy holding
 * dy_{i+1} with SN_ACCUMULATE_Y: afterwards the two buffers hold dx_i and dy_i.
 * Errors: as sn_fuse_forward, plus SN_ERR_FLAGS. */
SN_API sn_status sn_fuse_backward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                  const float *dh, int64_t lddh, const float *du, int64_t lddu,
                                  const float *x, int64_t ldx, const float *y, int64_t ldy,
                                  const float *params, const float *stats, float *dx, int64_t lddx,
                                  float *dy, int64_t lddy, float *dparams, uint32_t flags);

/* Merge forward: out = N_out(N_x(x) + N_y(y)) — sn_fuse_forward without u. */
SN_API sn_status sn_merge_forward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                  const float *x, int64_t ldx, const float *y, int64_t ldy,
                                  const float *params, float *out, int64_t ldo, float *stats);

/* Merge backward — sn_fuse_backward with du = NULL. */
SN_API sn_status sn_merge_backward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                   const float *dout, int64_t lddo, const float *x, int64_t ldx,
                                   const float *y, int64_t ldy, const float *params,
                                   const float *stats, float *dx, int64_t lddx, float *dy,
                                   int64_t lddy, float *dparams, uint32_t flags);

/* ---- shared block apply, split -------------------------------------------------------------- */

/* Shared block apply: the block output z feeds both streams, scaled down on x only.
 *   xo = u + z / c,   yo = y + z
 *   reads   z, u, y [R x D each]; writes xo, yo. xo may alias u, yo may alias y.
 *   c > 0 and finite.
 * Errors: SN_ERR_NULL, SN_ERR_SHAPE, SN_ERR_STRIDE, SN_ERR_SCALE, SN_ERR_ALIAS. */
SN_API sn_status sn_apply_forward(const sn_ctx *ctx, int64_t R, int64_t D, float c, const float *z,
                                  int64_t ldz, const float *u, int64_t ldu, const float *y,
                                  int64_t ldy, float *xo, int64_t ldxo, float *yo, int64_t ldyo);

/* Backward of sn_apply_forward: dz = dxo / c + dyo (written, or accumulated with
 * SN_ACCUMULATE). The gradients of u and y are dxo and dyo themselves: nothing to compute.
 * dz may alias dxo or dyo (not with SN_ACCUMULATE).
 * Errors: as sn_apply_forward, plus SN_ERR_FLAGS. */
SN_API sn_status sn_apply_backward(const sn_ctx *ctx, int64_t R, int64_t D, float c,
                                   const float *dxo, int64_t lddxo, const float *dyo, int64_t lddyo,
                                   float *dz, int64_t lddz, uint32_t flags);

/* Split at the start of the network: x = e, y = e (copies). x may alias e; y may not alias x.
 * Errors: SN_ERR_NULL, SN_ERR_SHAPE, SN_ERR_STRIDE, SN_ERR_ALIAS. */
SN_API sn_status sn_split_forward(const sn_ctx *ctx, int64_t R, int64_t D, const float *e,
                                  int64_t lde, float *x, int64_t ldx, float *y, int64_t ldy);

/* Backward of the split: de = dx + dy (written, or accumulated with SN_ACCUMULATE).
 * de may alias dx or dy (not with SN_ACCUMULATE).
 * Errors: as sn_split_forward, plus SN_ERR_FLAGS. */
SN_API sn_status sn_split_backward(const sn_ctx *ctx, int64_t R, int64_t D, const float *dx,
                                   int64_t lddx, const float *dy, int64_t lddy, float *de,
                                   int64_t ldde, uint32_t flags);

/* ---- bf16 storage ------------------------------------------------------------------------ */

/* bfloat16: the upper 16 bits of an IEEE binary32 (1 sign, 8 exponent, 7 fraction bits), so it
 * has fp32's range with 8 bits of precision. The library uses it as a storage type only: every
 * `_bf16` call below loads its bf16 matrices exactly into fp32, runs the same fp32 arithmetic
 * as the matching fp32 call on the same kernel path, and rounds each element it writes once.
 *
 * Which buffers are bf16: in a `_bf16` call every R x D matrix argument (the inputs, outputs
 * and their gradients: x, y, u, h, out, z, e, dout, dh, du, dx, dy, dz, de, ...), with its row
 * stride ld counted in elements. Parameters, parameter gradients and saved statistics stay
 * fp32 (`float *`) with the layouts of the fp32 calls. sn_bf16 pointers must be aligned to 2
 * bytes (SN_ERR_ALIGN); float pointers to 4 as everywhere.
 *
 * Rounding (sn_bf16_from_f32, and every bf16 store of every call): to nearest, ties to even, on
 * the fp32 bit pattern; a NaN stays a NaN (quiet, sign kept), infinities stay infinities,
 * subnormal inputs and results are kept (no flush to zero), and MXCSR is neither read nor
 * changed. Every kernel path (scalar, AVX2, AVX-512) gives these same bits. Since 0.4.1 the
 * AVX-512 path, on CPUs with AVX512-BF16 (and AVX512DQ), rounds with vcvtneps2bf16, which gives
 * them too except that it reads a subnormal input as zero: each vector is tested for
 * subnormals and one that holds any is rounded with the integer rounding instead (checked on
 * all 2^32 floats by tests/checkasm).
 *
 * Accuracy contract, tested (tests/test_bf16.c): on the same inputs (bf16 values, widened), a
 * `_bf16` call's every written element is bitwise sn_bf16_from_f32 of what the fp32 call
 * writes on the same path, thread count and flags (with SN_ACCUMULATE the fp32 call
 * accumulating into the widened bf16 values). So each output is within one bf16 rounding
 * (a relative 2^-8) of the fp32 result, and parameter gradients and statistics, which stay
 * fp32, are bitwise the fp32 call's (a NaN output is a NaN in both, but its sign and payload
 * may differ). Determinism across thread counts holds as for fp32.
 *
 * How (since 0.5.0): on the AVX2 and AVX-512 paths every row kernel reads bf16 and writes
 * bf16 itself (each vector widened as it is loaded and rounded as it is stored, the arithmetic
 * the fp32 kernels' own); the scalar path's bf16 kernels widen a row into fp32 rows on the
 * stack, run the fp32 kernels and round what they wrote. A fuse forward keeps its row of s in
 * fp32 on the stack. No R x D fp32 copy is ever made. The norm, fuse and merge calls therefore
 * take D <= 4096 and return SN_ERR_UNSUPPORTED beyond (after every other check; the elementwise
 * calls and the conversions take any D), and use at most 208 KiB of a thread's stack per call
 * (186 KiB measured, in the scalar path's fuse backward: 96 KiB of staged rows, 64 KiB of
 * parameter-gradient slots; tests/test_stack.c). Speed against the fp32 calls:
 * docs/performance.md, "bf16". */
typedef uint16_t sn_bf16;

/* Element types of the R x D matrices. Only grows at the end. */
typedef enum sn_dtype {
    SN_DTYPE_F32 = 0, /* float */
    SN_DTYPE_BF16 = 1 /* sn_bf16 */
} sn_dtype;
#define SN_DTYPE_COUNT 2

/* A static lower-case name ("f32", "bf16"); NULL for a value outside 0 .. SN_DTYPE_COUNT - 1. */
SN_API const char *sn_dtype_name(sn_dtype dtype);

/* The element type named `name` (exactly as sn_dtype_name spells it) into *dtype: the one
 * parser of the names, for command lines and configuration files. Errors: SN_ERR_NULL (name or
 * dtype), SN_ERR_DTYPE (no such name; *dtype is unchanged). */
SN_API sn_status sn_dtype_from_name(const char *name, sn_dtype *dtype);

/* One value: fp32 -> bf16 rounded as above, and bf16 -> fp32 (exact). */
SN_API sn_bf16 sn_bf16_from_f32(float v);
SN_API float sn_bf16_to_f32(sn_bf16 v);

/* Matrix conversions, for the boundary with a GEMM or a framework without bf16 (threaded by
 * ctx like every call; no allocation).
 *   sn_to_bf16    reads src [R x D, lds] (float), writes dst [R x D, ldd] (sn_bf16), rounded.
 *   sn_from_bf16  reads src [R x D, lds] (sn_bf16), writes dst [R x D, ldd] (float), exact.
 * No overlap between src and dst. In checked mode both scan src (since 0.6.19; before, they
 * neither scanned nor updated the record). Errors: SN_ERR_NULL, SN_ERR_SHAPE, SN_ERR_STRIDE,
 * SN_ERR_ALIAS, SN_ERR_ALIGN, SN_ERR_NONFINITE (checked mode). */
SN_API sn_status sn_to_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const float *src, int64_t lds,
                            sn_bf16 *dst, int64_t ldd);
SN_API sn_status sn_from_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *src,
                              int64_t lds, float *dst, int64_t ldd);

/* As sn_find_nonfinite, on a bf16 matrix. */
SN_API sn_status sn_find_nonfinite_bf16(int64_t R, int64_t D, const sn_bf16 *x, int64_t ldx,
                                        int64_t *row);

/* The primitives with bf16 matrices. Each computes, reads, writes and accumulates exactly what
 * the fp32 call of the same name without `_bf16` does (see its comment for the maths, the
 * aliasing rules, the flags and the errors), with the matrices in bf16 as stated above. In
 * checked mode the bf16 inputs are scanned as the fp32 call scans its float inputs. */
SN_API sn_status sn_norm_forward_bf16(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                                      const sn_bf16 *x, int64_t ldx, const float *params,
                                      sn_bf16 *out, int64_t ldo, float *stats);
SN_API sn_status sn_norm_backward_bf16(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                                       const sn_bf16 *dout, int64_t lddo, const sn_bf16 *x,
                                       int64_t ldx, const float *params, const float *stats,
                                       sn_bf16 *dx, int64_t lddx, float *dparams, uint32_t flags);
SN_API sn_status sn_fuse_forward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                      const sn_bf16 *x, int64_t ldx, const sn_bf16 *y, int64_t ldy,
                                      const float *params, sn_bf16 *u, int64_t ldu, sn_bf16 *h,
                                      int64_t ldh, float *stats);
SN_API sn_status sn_fuse_backward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                       const sn_bf16 *dh, int64_t lddh, const sn_bf16 *du,
                                       int64_t lddu, const sn_bf16 *x, int64_t ldx,
                                       const sn_bf16 *y, int64_t ldy, const float *params,
                                       const float *stats, sn_bf16 *dx, int64_t lddx, sn_bf16 *dy,
                                       int64_t lddy, float *dparams, uint32_t flags);
SN_API sn_status sn_merge_forward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                       const sn_bf16 *x, int64_t ldx, const sn_bf16 *y, int64_t ldy,
                                       const float *params, sn_bf16 *out, int64_t ldo,
                                       float *stats);
SN_API sn_status sn_merge_backward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                        const sn_bf16 *dout, int64_t lddo, const sn_bf16 *x,
                                        int64_t ldx, const sn_bf16 *y, int64_t ldy,
                                        const float *params, const float *stats, sn_bf16 *dx,
                                        int64_t lddx, sn_bf16 *dy, int64_t lddy, float *dparams,
                                        uint32_t flags);
SN_API sn_status sn_apply_forward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, float c,
                                       const sn_bf16 *z, int64_t ldz, const sn_bf16 *u, int64_t ldu,
                                       const sn_bf16 *y, int64_t ldy, sn_bf16 *xo, int64_t ldxo,
                                       sn_bf16 *yo, int64_t ldyo);
SN_API sn_status sn_apply_backward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, float c,
                                        const sn_bf16 *dxo, int64_t lddxo, const sn_bf16 *dyo,
                                        int64_t lddyo, sn_bf16 *dz, int64_t lddz, uint32_t flags);
SN_API sn_status sn_split_forward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *e,
                                       int64_t lde, sn_bf16 *x, int64_t ldx, sn_bf16 *y,
                                       int64_t ldy);
SN_API sn_status sn_split_backward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *dx,
                                        int64_t lddx, const sn_bf16 *dy, int64_t lddy, sn_bf16 *de,
                                        int64_t ldde, uint32_t flags);

/* ---- placement layer ------------------------------------------------------------------------ */

/* How a network places its norms. Only grows at the end. Sub-layer i (0 <= i < S) is the
 * attention sub-layer of layer l = floor(i/2) when i is even and its MLP sub-layer when i is
 * odd; L = ceil(S/2) layers. N_* are norms of kind net->norm unless said otherwise; each is its
 * own norm with its own parameters. c_i is the residual scale (see sn_scale_rule). */
typedef enum sn_placement {
    /* h_i = N_i(x_i),  x_{i+1} = x_i + z_i,  out = N_f(x_S) */
    SN_PLACEMENT_PRE_NORM = 0,
    /* h_i = x_i,  x_{i+1} = N_i(x_i + z_i),  out = x_S */
    SN_PLACEMENT_POST_NORM = 1,
    /* SiameseNorm as the official code runs it (SPEC "the default"):
     *   split x_0 = y_0 = e
     *   u_i = N_post,i(x_i),  h_i = N_in,i(u_i + N_pre,i(y_i))     (N_in: net->input_norm)
     *   x_{i+1} = u_i + z_i / c_i,  y_{i+1} = y_i + z_i
     *   out = N_f(N_a(x_S) + N_b(y_S))
     * Its ablations are settings: no input norm = input_norm.kind SN_NORM_IDENTITY; no depth
     * scaling = SN_SCALE_NONE. */
    SN_PLACEMENT_SIAMESE = 2,
    /* SiameseNorm, the paper's Algorithm 1: x_0 = y_0 = e,
     *   h_i = N_in,i(x_i + N_pre,i(y_i)),  x_{i+1} = N_post,i(x_i + z_i / c_i),  y_{i+1} = y_i + z_i,
     *   out = x_S + N_f(y_S) */
    SN_PLACEMENT_SIAMESE_PAPER = 3,
    /* SiameseNorm hybrid_pre (the OLMo variant): x_0 = y_0 = e.
     *   attention (i even):  h = c1_i * x + N_pre,i(y),  x' = x + z / c_i,  y' = y + z
     *                        (c1_i a learned D-vector, a norm of kind SN_NORM_SCALE, init 1; no
     *                        input norm; q/k norms are the caller's, see group in sn_norm)
     *   MLP (i odd):         the default SiameseNorm sub-layer (N_post = HybridNorm's N_ff)
     *   out = N_f(N_a(x_S) + N_b(y_S)) */
    SN_PLACEMENT_SIAMESE_HYBRID_PRE = 4,
    /* DeepNorm: h_i = x_i,  x_{i+1} = N_i(alpha * x_i + z_i),  out = x_S, with
     * alpha = (2L)^(1/4) (SN_SCALE_EXPLICIT: alpha_i = scales[i]; SN_SCALE_NONE: 1). The caller
     * scales its v/out/FFN weights at init by beta = (8L)^(-1/4): see sn_net_init_gain. */
    SN_PLACEMENT_DEEPNORM = 5,
    /* Peri-LN: x_0 = N_emb(e),  h_i = N_in,i(x_i),  x_{i+1} = x_i + N_out,i(z_i),
     * out = N_f(x_S) */
    SN_PLACEMENT_PERI_LN = 6,
    /* Mix-LN: the sub-layers of the first floor(mix_fraction * L) layers are Post-Norm
     * (h = x, x' = N(x + z)), the rest Pre-Norm; out = N_f(x_S). */
    SN_PLACEMENT_MIX_LN = 7,
    /* HybridNorm: attention h = x (QKV norms inside the caller's attention), x' = x + z;
     * MLP u = N_i(x), h = u, x' = u + z; out = N_f(x_S). */
    SN_PLACEMENT_HYBRIDNORM = 8,
    /* HybridNorm*: HybridNorm with both sub-layers of layer 0 Pre-Norm (h = N_i(x), x' = x + z). */
    SN_PLACEMENT_HYBRIDNORM_STAR = 9,
    /* SpanNorm (Wang et al., arXiv 2601.22580; docs/SPEC.md says which parts are the library's
     * reading): a clean residual spans each layer, whose sub-layers are Post-Norm inside it.
     * Layer l with input x (i = 2l attention, i + 1 MLP; the last layer of an odd S has only
     * its attention, which both opens and closes it):
     *   attention  h_i = x,      a = N_i(x + z_i)
     *   MLP        h_{i+1} = a,  x' = x + N_{i+1}(a + z_{i+1}) / c_{i+1}
     *   out = N_f(x_S)
     * c: SN_SCALE_DEFAULT sqrt(L) for every sub-layer (the variance x gains per layer is then
     * 1/L, so it stays bounded at any depth), SN_SCALE_NONE 1, SN_SCALE_EXPLICIT scales[i];
     * only the closing sub-layer's c is used. No parameters beyond one norm per sub-layer. */
    SN_PLACEMENT_SPAN_NORM = 10,
    /* Hyper-Connections (Zhu et al., ICLR 2025, arXiv 2409.19606; docs/SPEC.md, "Hyper-
     * Connections"): n = net->hc_rate residual streams H_0 .. H_{n-1} (R x D each) around a
     * Pre-Norm block, mixed by learned connection weights (A_m: n, A_r: n x n, B: n) per
     * sub-layer:
     *   split    H_k = e for every k
     *   enter    h0 = sum_k A_m[k] H_k,  h_i = N_i(h0)
     *   exit     H'_j = sum_k A_r[k][j] H_k + B[j] z_i
     *   merge    out = N_f(H_0 + H_1 + ... + H_{n-1})
     * Static HC (hc_dynamic 0) learns A_m, A_r, B. Dynamic HC (hc_dynamic 1) adds per-row terms
     * s_a * tanh(<N_hc(H_k), Wa_c>) to A_m and A_r and s_b * tanh(<N_hc(H_k), Wb>) to B.
     * sn_net_init_params sets the paper's initialisation: A_m = e_{i mod n}, A_r = I, B = 1,
     * Wa = Wb = 0, s_a = s_b = 0.01, so the network starts as Pre-Norm (every block input h_i
     * bit for bit; the output N_f(n x_S) differs only through eps and, for n other than 1, 2
     * and 4, the rounding of the sum). The connection weights are parameters like the gammas
     * (sn_net_conn_at gives their offset; layout under sn_net_norm_at). The three SiameseNorm
     * forms keep their two streams in the same per-stage stream slots (n = 2), with their own
     * fixed operations on them. */
    SN_PLACEMENT_HYPER_CONN = 11
} sn_placement;

/* The number of placements this header names: the valid values are 0 .. SN_PLACEMENT_COUNT - 1.
 * A macro, not an enumerator, so that the enum keeps growing only at the end (ABI policy): it
 * grows by one with every placement added, so code built against an older header sees a smaller
 * value, and sn_net_check is what says whether the linked library knows a placement. */
#define SN_PLACEMENT_COUNT 12

/* The one spelling of each placement, used by the trainer, the Python binding and the docs: the
 * enumerator's name in lower case without the prefix ("pre_norm", "post_norm", "siamese",
 * "siamese_paper", "siamese_hybrid_pre", "deepnorm", "peri_ln", "mix_ln", "hybridnorm",
 * "hybridnorm_star", "span_norm", "hyper_connections"). A static string; NULL for a value outside
 * 0 .. SN_PLACEMENT_COUNT - 1. */
SN_API const char *sn_placement_name(sn_placement placement);

/* The placement named `name` (exactly as sn_placement_name spells it) into *placement.
 * Errors: SN_ERR_NULL (name or placement), SN_ERR_PLACEMENT (no such name; *placement is
 * unchanged). */
SN_API sn_status sn_placement_from_name(const char *name, sn_placement *placement);

typedef enum sn_scale_rule {
    SN_SCALE_DEFAULT = 0, /* SiameseNorm family: c_i = sqrt(2 * (floor(i/2) + 1)), the official
                             code's rule; DeepNorm: alpha = (2L)^(1/4); SpanNorm: sqrt(L) */
    SN_SCALE_NONE = 1,    /* c_i = 1 (no depth scaling; DeepNorm: alpha = 1) */
    SN_SCALE_EXPLICIT = 2 /* c_i = scales[i], S values > 0 and finite, kept by the caller */
} sn_scale_rule;

/* A network's norm placement, described once. Fill it with sn_net_init, then adjust fields.
 *   placement     sn_placement.
 *   n_sublayers   S >= 1 (2 per transformer layer).
 *   d             D, the model width, >= 1.
 *   norm          every norm of the network except N_in and c1 (group must be 0).
 *   input_norm    N_in of SiameseNorm-family sub-layers: like norm by default; kind
 *                 SN_NORM_IDENTITY removes it, affine SN_AFFINE_NONE makes it non-affine.
 *                 Unused by other placements.
 *   scale_rule    sn_scale_rule; used by the SiameseNorm family, DeepNorm and SpanNorm only.
 *   scales        S floats when scale_rule == SN_SCALE_EXPLICIT (read at each call; the caller
 *                 keeps them alive), else NULL. They are one of the buffers of every pass
 *                 call: a written buffer (h, acts, ...) overlapping them is SN_ERR_ALIAS.
 *   flags         must be 0 in this version.
 *   mix_fraction  Mix-LN only (else must be 0): the fraction of layers that are Post-Norm, in
 *                 [0, 1]; sn_net_init sets 0.25.
 *   act_dtype     sn_dtype of the streams: SN_DTYPE_F32 (0, what sn_net_init sets) or
 *                 SN_DTYPE_BF16. With bf16 the streams saved in acts, the stream gradients in
 *                 work, the inference state's streams and every matrix the caller passes (e, h,
 *                 z, out, dout, dz, dh, de) are bf16, and the pass calls are the `_bf16` ones
 *                 below; statistics, parameters and their gradients stay fp32. (It was the
 *                 word reserved32 before 0.4.0: zero keeps the old behaviour.)
 *   hc_rate       Hyper-Connections only (else must be 0): the expansion rate n, the number of
 *                 residual streams, 1 .. SN_HC_MAX_RATE (SN_ERR_STREAMS outside); sn_net_init
 *                 sets 4, the paper's main setting. (It and hc_dynamic were the first
 *                 reserved word: zero keeps the old behaviour.)
 *   hc_dynamic    Hyper-Connections only (else must be 0): 0 static HC, 1 dynamic HC (the
 *                 per-row terms; SN_ERR_CONFIG for other values); sn_net_init sets 1.
 *   reserved      must be zero (see the ABI policy). */
#define SN_HC_MAX_RATE 8
typedef struct sn_net {
    int32_t placement;
    int32_t n_sublayers;
    int64_t d;
    sn_norm norm;
    sn_norm input_norm;
    int32_t scale_rule;
    uint32_t flags;
    const float *scales;
    float mix_fraction;
    uint32_t act_dtype;
    int32_t hc_rate;
    uint32_t hc_dynamic;
    uint64_t reserved[6];
} sn_net;

/* Fills *net: the placement, S, D, norm = {kind, LayerNorm: SN_AFFINE_SCALE_SHIFT, RMSNorm:
 * SN_AFFINE_SCALE, others SN_AFFINE_NONE; group 0, eps}, input_norm = norm, SN_SCALE_DEFAULT,
 * mix_fraction 0.25 for Mix-LN (else 0), hc_rate 4 and hc_dynamic 1 for Hyper-Connections (else
 * 0: the paper's main setting), reserved zero, once that description is valid
 * (sn_net_check's errors); *net is unchanged on error. */
SN_API sn_status sn_net_init(sn_net *net, sn_placement placement, int32_t n_sublayers, int64_t D,
                             sn_norm_kind kind, float eps);

/* Validates a description. S is at most 2^10 (1024 sub-layers, 512 transformer layers), the
 * deepest network the tests run (tests/test_net_deep.c). A call's bookkeeping does not grow
 * with S: it finds its sub-layer's place in O(1) (with explicit scales, it checks all S).
 * Errors: SN_ERR_NULL, SN_ERR_PLACEMENT, SN_ERR_SHAPE (S < 1 or > 2^10, D < 1), SN_ERR_NORM,
 * SN_ERR_GROUP, SN_ERR_EPS, SN_ERR_SCALE (explicit scales NULL or invalid), SN_ERR_ALIGN
 * (explicit scales not aligned to 4 bytes), SN_ERR_CONFIG (unknown scale rule, scales given
 * without SN_SCALE_EXPLICIT, an act_dtype outside 0 .. SN_DTYPE_COUNT - 1, nonzero flags or
 * reserved words, mix_fraction outside [0, 1] or
 * NaN for Mix-LN, nonzero otherwise, hc_rate or hc_dynamic nonzero for a placement other than
 * Hyper-Connections, hc_dynamic not 0 or 1), SN_ERR_STREAMS (Hyper-Connections with hc_rate
 * outside 1 .. SN_HC_MAX_RATE), SN_ERR_UNSUPPORTED (act_dtype bf16 and D > 4096). */
SN_API sn_status sn_net_check(const sn_net *net);

/* The residual scale of sub-layer i into *c: c_i for the SiameseNorm family and SpanNorm, alpha
 * for DeepNorm, 1 otherwise. Errors: as sn_net_check, SN_ERR_NULL (c), SN_ERR_INDEX. */
SN_API sn_status sn_net_scale(const sn_net *net, int32_t i, float *c);

/* The gain the caller should apply at initialisation to its blocks' value, output and FFN
 * weights: DeepNorm's beta = (8L)^(-1/4); 1 for every other placement. */
SN_API sn_status sn_net_init_gain(const sn_net *net, float *gain);

/* Buffer sizes, in floats, for a network run over R rows:
 *   *n_params      the parameter block of the whole network (gradients: same size/layout)
 *   *acts_per_row  saved activations: the acts buffer holds R * acts_per_row floats
 *   *work_per_row  backward workspace (the stream gradients): R * work_per_row floats
 * Any output may be NULL. Saved floats per row: D for the input e, then per sub-layer D for
 * each stream it produces (x; and y for the SiameseNorm family), D more where a norm's input
 * is not otherwise kept (Post-Norm, DeepNorm, Mix-LN's Post-Norm layers, the paper form and
 * SpanNorm keep the sum they normalise; Peri-LN keeps z), plus the norms' statistics
 * (LayerNorm 2, RMSNorm 1 per norm). E.g. LayerNorm: Pre-Norm D + 2, SiameseNorm 2D + 6,
 * SpanNorm 2D + 2 per sub-layer. work: D, or 2D for the
 * SiameseNorm family and SpanNorm.
 * Hyper-Connections with n streams: the split's n streams share e's row; per sub-layer nD for
 * its output streams, D for the block output z (the depth weights' gradient needs it), N_i's
 * statistics, and for dynamic HC the per-row tanh values (n(n + 2) floats, saved by the
 * forward and read by the backward, not recomputed) and N_hc's statistics of the n streams;
 * the block input mix h0 is not saved (the backward recomputes it from the saved streams, the
 * same bits). LayerNorm, per sub-layer: static n = 2: 3D + 2, n = 4: 5D + 2; dynamic n = 2:
 * 3D + 14, n = 4: 5D + 34. work: (n + 2) D (the n stream gradients, then h0 and its gradient;
 * dynamic HC n(n + 2) + n + 2 floats more: the per-row weight gradients). Errors: as
 * sn_net_check. */
SN_API sn_status sn_net_sizes(const sn_net *net, int64_t *n_params, int64_t *acts_per_row,
                              int64_t *work_per_row);

/* Layout of the parameter block. Stage i in 0..S-1 is sub-layer i, stage S the merge, stage -1
 * the split. A stage's norms are numbered j = 0, 1, ... and stored in that order, each in the
 * per-norm layout:
 *   SiameseNorm, paper form, hybrid_pre MLP sub-layers  [N_post, N_pre, N_in]
 *   hybrid_pre attention sub-layers                     [c1, N_pre]
 *   Pre-Norm, Post-Norm, DeepNorm, Mix-LN, HybridNorm(*) [N_i] (HybridNorm attention: an
 *                                                        identity norm, no parameters)
 *   SpanNorm                                            [N_i]
 *   Peri-LN                                             [N_in, N_out]
 *   merge: SiameseNorm, hybrid_pre [N_a, N_b, N_f]; paper form [identity, N_f, identity];
 *          Post-Norm, DeepNorm none; others [N_f]
 *   Hyper-Connections                                   [N_i] static, [N_i, N_hc] dynamic,
 *                                                       then the connection block
 *                                                       (sn_net_conn_at)
 *   split: Peri-LN [N_emb]; others none
 * For norm j of stage i, *norm (may be NULL) receives its description and *offset (may be
 * NULL) the offset in floats of its gamma in the parameter block (beta follows at
 * offset + W). sn_net_norm_role says what each norm is for (below). Errors: SN_ERR_INDEX
 * when stage i has no norm j (the way to count them), and as sn_net_check. */
SN_API sn_status sn_net_norm_at(const sn_net *net, int32_t i, int32_t j, sn_norm *norm,
                                int64_t *offset);

/* Writes the default parameters (every gamma 1, every beta 0) into the n_params floats. */
SN_API sn_status sn_net_init_params(const sn_net *net, float *params);

/* The connection weights of Hyper-Connections' sub-layer i (0 <= i < S), which follow the
 * sub-layer's norms in the parameter block: *offset (may be NULL) receives their offset in
 * floats, *count (may be NULL) their number. With n = net->hc_rate, in this order (fp32; the
 * gradients in grads have the same layout):
 *   alpha  n x (n + 1), row-major: alpha[k * (n + 1)] = A_m[k] (the weight of stream k in the
 *          block input h0), alpha[k * (n + 1) + 1 + j] = A_r[k][j] (the weight of stream k in
 *          the new stream j)
 *   beta   n: B[j], the weight of the block output z in the new stream j
 *   and for dynamic HC (hc_dynamic 1) only:
 *   Wa     (n + 1) x D, row-major: row c projects the normalised streams onto the dynamic term
 *          of alpha's column c (the paper's dynamic_alpha_fn, D x (n + 1), transposed)
 *   Wb     D: the projection for beta's dynamic term (dynamic_beta_fn)
 *   s_a, s_b   the scales of the dynamic terms
 * count is n(n + 2) for static HC and n(n + 2) + (n + 2) D + 2 for dynamic HC.
 * sn_net_init_params writes A_m = e_{i mod n}, A_r = I, B = 1, Wa = Wb = 0, s_a = s_b = 0.01.
 * The maths, per row and for the backward: docs/SPEC.md, "Hyper-Connections".
 * Errors: as sn_net_check, SN_ERR_INDEX (i out of range, or the net has no connection
 * weights: every placement but Hyper-Connections). */
SN_API sn_status sn_net_conn_at(const sn_net *net, int32_t i, int64_t *offset, int64_t *count);

/* ---- norm roles: what each norm of a net is for -------------------------------------------- */

/* The role of a norm in its network, whatever the placement: checkpoint mappers (llm.c's
 * ln1/ln2/lnf, the official SiameseNorm checkpoints), name maps and documentation ask for a
 * norm by what it does instead of keeping a (stage, j) table per placement. Each stage holds
 * at most one norm of each role. x and y are the residual streams, h the block input, z the
 * block output. Only grows at the end. */
typedef enum sn_norm_role {
    SN_ROLE_INPUT = 0,   /* its output is the block input h: Pre-Norm's and Mix-LN's Pre-Norm
                            N_i, Peri-LN's N_in, the SiameseNorm family's N_in, HybridNorm's
                            attention norm (an identity: h = x); llm.c's ln1 / ln2 */
    SN_ROLE_POST = 1,    /* its output becomes the stream x: Post-Norm's, DeepNorm's and Mix-LN's
                            Post-Norm N_i (on x + z), the SiameseNorm family's N_post (official
                            form on x, u = N_post(x); paper form on x + z/c), HybridNorm's MLP
                            norm (u = N(x) is both the block input and the stream: x' = u + z),
                            SpanNorm's N_i (on v + z: the attention's is the stream inside the
                            layer; the closing sub-layer's, over c, is what the span adds) */
    SN_ROLE_PRE = 2,     /* normalises the stream y into the block input: N_pre */
    SN_ROLE_OUT = 3,     /* normalises the block output before it joins x: Peri-LN's N_out */
    SN_ROLE_SCALE = 4,   /* a learned per-column scale of x in the block input (SN_NORM_SCALE):
                            hybrid_pre's c1 */
    SN_ROLE_EMBED = 5,   /* normalises the network input e into x_0: Peri-LN's N_emb */
    SN_ROLE_MERGE_X = 6, /* the merge's norm of x_S: N_a (the paper form: an identity) */
    SN_ROLE_MERGE_Y = 7, /* the merge's norm of y_S: N_b (the paper form: N_f, out = x + N_f(y)) */
    SN_ROLE_FINAL = 8,   /* its output is the network output: N_f (a two-stream merge: of
                            N_a(x) + N_b(y); the paper form: an identity); llm.c's lnf */
    SN_ROLE_STREAMS = 9  /* normalises each residual stream separately for dynamic
                            Hyper-Connections' per-row weights: N_hc */
} sn_norm_role;
#define SN_ROLE_COUNT 10

/* The tensor a norm normalises. Only grows at the end. */
typedef enum sn_norm_operand {
    SN_OPERAND_X = 0,        /* the stream x entering the stage (x_i; at the merge x_S) */
    SN_OPERAND_Y = 1,        /* the stream y entering the stage */
    SN_OPERAND_RESIDUAL = 2, /* x after the block's addition: x_i + z_i (DeepNorm
                                alpha * x_i + z_i, the paper form x_i + z_i / c_i) */
    SN_OPERAND_Z = 3,        /* the block output z_i */
    SN_OPERAND_FUSED = 4,    /* the two streams' sum: u_i + N_pre(y_i) (paper form
                                x_i + N_pre(y_i)); at the merge N_a(x_S) + N_b(y_S) */
    SN_OPERAND_E = 5,        /* the network input e */
    SN_OPERAND_MIX = 6,      /* Hyper-Connections' block-input mix h0 = sum_k A_m[k] H_k */
    SN_OPERAND_STREAMS = 7,  /* each of Hyper-Connections' streams H_k, separately */
    SN_OPERAND_SUM = 8       /* the sum of the streams at the merge: H_0 + ... + H_{n-1} */
} sn_norm_operand;
#define SN_OPERAND_COUNT 9

/* Norm j of stage i (numbered as sn_net_norm_at numbers them: stage -1 the split, 0..S-1 the
 * sub-layers, S the merge): its role into *role and the tensor it normalises into *operand
 * (either may be NULL). Every norm sn_net_norm_at reports has a role, identity norms included
 * (HybridNorm's attention INPUT, the paper form's MERGE_X and FINAL): check the norm's kind
 * and its parameter count (sn_norm_query) before moving tensors. What each placement has:
 *   Pre-Norm, Mix-LN Pre-Norm layers, HybridNorm* layer 0   [input(x)]
 *   Post-Norm, DeepNorm, Mix-LN Post-Norm layers            [post(residual)]
 *   Peri-LN                                                 [input(x), out(z)]
 *   HybridNorm(*) attention / MLP                           [input(x)] (identity) / [post(x)]
 *   SiameseNorm, hybrid_pre MLP                             [post(x), pre(y), input(fused)]
 *   paper form                                              [post(residual), pre(y), input(fused)]
 *   SpanNorm                                                [post(residual)]
 *   hybrid_pre attention                                    [scale(x), pre(y)]
 *   merge: two streams [merge_x(x), merge_y(y), final(fused)]; others [final(x)]; none for
 *          Post-Norm and DeepNorm
 *   split: Peri-LN [embed(e)]
 *   Hyper-Connections                                       [input(mix)] static,
 *                                                           [input(mix), streams(streams)]
 *                                                           dynamic; merge [final(sum)]
 * The roles follow from how a stage computes, not from a table per placement, so a placement
 * added later reports its roles the same way. Errors: as sn_net_norm_at. */
SN_API sn_status sn_net_norm_role(const sn_net *net, int32_t i, int32_t j, sn_norm_role *role,
                                  sn_norm_operand *operand);

/* The index j of stage i's norm of the given role into *j (for sn_net_norm_at): e.g. the norm
 * that feeds sub-layer i's block is sn_net_find_norm(net, i, SN_ROLE_INPUT, &j). Errors:
 * SN_ERR_NULL (j), SN_ERR_CONFIG (role outside 0 .. SN_ROLE_COUNT - 1), SN_ERR_INDEX (stage i
 * out of range, or it has no norm of that role; *j is unchanged), and as sn_net_check. */
SN_API sn_status sn_net_find_norm(const sn_net *net, int32_t i, sn_norm_role role, int32_t *j);

/* Static lower-case names: "input", "post", "pre", "out", "scale", "embed", "merge_x",
 * "merge_y", "final", "streams" and "x", "y", "residual", "z", "fused", "e", "mix",
 * "streams", "sum" (the enumerators without
 * their prefix); NULL for a value outside 0 .. COUNT - 1. */
SN_API const char *sn_norm_role_name(sn_norm_role role);
SN_API const char *sn_norm_operand_name(sn_norm_operand operand);

/* The network's buffers for one pass over R rows. Fill one per pass (R and the buffers stay
 * the same for all its calls); the calls read it and keep no pointer to it or into it.
 *   rows    R >= 1.
 *   params  [n_params] read (may be NULL when n_params is 0).
 *   acts    [R * acts_per_row] written by the forward calls, read by the backward calls.
 *   grads   [n_params] accumulated (+=) by the backward calls: zero it before a step. NULL
 *           skips the parameter gradients. Not used by the forward calls.
 *   work    [R * work_per_row] read and written by the backward calls (the stream gradients).
 *           Not used by the forward calls.
 * A forward call neither reads nor checks grads and work, so one sn_net_pass filled for the
 * whole step serves both directions. */
typedef struct sn_net_pass {
    int64_t rows;
    const float *params;
    float *acts;
    float *grads;
    float *work;
} sn_net_pass;

/* The training loop, identical for every placement. Every pass call takes its arguments in one
 * order: ctx, net, pass, the sub-layer i (where there is one), the caller's matrix and its row
 * stride, then flags (where there are any).
 *
 *   sn_net_pass p = {.rows = R, .params = params, .acts = acts, .grads = grads, .work = work};
 *   sn_net_split(ctx, net, &p, e, lde);
 *   for (i = 0; i < S; i++) {
 *       sn_net_enter(ctx, net, &p, i, h[i], ldh);        // the block's input
 *       block_forward(h[i]) -> z[i];                     // caller's attention / MLP
 *       sn_net_exit(ctx, net, &p, i, z[i], ldz);         // fold z into the streams
 *   }
 *   sn_net_merge(ctx, net, &p, out, ldo);                // into the output head
 *
 *   sn_net_merge_backward(ctx, net, &p, dout, lddo);
 *   for (i = S - 1; i >= 0; i--) {
 *       sn_net_exit_backward(ctx, net, &p, i, dz, lddz, 0);
 *       block_backward(dz) -> dh;                        // caller's
 *       sn_net_enter_backward(ctx, net, &p, i, dh, lddh);
 *   }
 *   sn_net_split_backward(ctx, net, &p, de, ldde, 0);
 *
 * The calls must come in the order above; each forward call reads what the previous one stored
 * in acts (enter/exit of sub-layer i after those of i-1). Buffers passed by the caller (e, h,
 * z, out, dout, dz, dh, de) must not overlap params, acts, nor (backward calls) grads or work,
 * nor each other within a call; the pass's buffers must not overlap each other.
 * Errors of every pass call: SN_ERR_NULL (pass, acts, the caller's matrix, params when
 * n_params > 0, work in a backward call), SN_ERR_SHAPE (rows), SN_ERR_STRIDE, SN_ERR_INDEX
 * (i), SN_ERR_FLAGS, SN_ERR_ALIAS, SN_ERR_ALIGN, SN_ERR_NONFINITE (checked mode), and those of
 * sn_net_check. */

/* The start of the network: x_0 (and y_0) = e, Peri-LN x_0 = N_emb(e). reads e [R x D, lde];
 * writes acts. */
SN_API sn_status sn_net_split(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                              const float *e, int64_t lde);

/* Computes the block input h_i of sub-layer i into h [R x D, ldh] (written, as the placement
 * defines it: Pre-Norm N_i(x_i), Post-Norm x_i, SiameseNorm N_in(N_post(x_i) + N_pre(y_i)), ...)
 * and stores what the backward needs in acts. */
SN_API sn_status sn_net_enter(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                              int32_t i, float *h, int64_t ldh);

/* Folds the block output z [R x D, ldz] (read) of sub-layer i into the streams held in acts,
 * as the placement defines it (Pre-Norm x_{i+1} = x_i + z, Post-Norm x_{i+1} = N_i(x_i + z),
 * SiameseNorm x_{i+1} = u_i + z / c_i and y_{i+1} = y_i + z, ...). */
SN_API sn_status sn_net_exit(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                             int32_t i, const float *z, int64_t ldz);

/* The network output into out [R x D, ldo] (written), from the streams in acts. */
SN_API sn_status sn_net_merge(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                              float *out, int64_t ldo);

/* Starts the backward pass from dout [R x D, lddo] (read): writes the stream gradients into
 * work and accumulates the merge's parameter gradients into grads. */
SN_API sn_status sn_net_merge_backward(const sn_ctx *ctx, const sn_net *net,
                                       const sn_net_pass *pass, const float *dout, int64_t lddo);

/* Gradient of sub-layer i's block output into dz [R x D, lddz] (written, or accumulated with
 * SN_ACCUMULATE). Pre-Norm dz = dx_{i+1}; SiameseNorm dz = dx_{i+1} / c_i + dy_{i+1};
 * placements with a norm after the block (Post-Norm, DeepNorm, paper form, Peri-LN) first take
 * the stream gradient back through it, accumulating its parameter gradients.
 * Hyper-Connections: dz = sum_j B[j] dH'_j, accumulating the gradients of B (and, dynamic,
 * keeping each row's in work for sn_net_enter_backward). */
SN_API sn_status sn_net_exit_backward(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                                      int32_t i, float *dz, int64_t lddz, uint32_t flags);

/* Takes the block-input gradient dh [R x D, lddh] (read) of sub-layer i back into the stream
 * gradients in work (now those of x_i, y_i) and accumulates sub-layer i's norm gradients.
 * Hyper-Connections: dh0 = N_i backward of dh, dH_k = sum_j A_r[k][j] dH'_j + A_m[k] dh0
 * (dynamic: plus N_hc backward of the per-row weights' gradient), accumulating the gradients
 * of N_i, A_m, A_r (and N_hc, Wa, Wb, s_a, s_b). */
SN_API sn_status sn_net_enter_backward(const sn_ctx *ctx, const sn_net *net,
                                       const sn_net_pass *pass, int32_t i, const float *dh,
                                       int64_t lddh);

/* Gradient of the network input: de [R x D, ldde] = dx_0 (+ dy_0; Peri-LN: through N_emb;
 * Hyper-Connections: the sum of the n stream gradients),
 * written or accumulated with SN_ACCUMULATE. Reads work; accumulates N_emb's gradients. */
SN_API sn_status sn_net_split_backward(const sn_ctx *ctx, const sn_net *net,
                                       const sn_net_pass *pass, float *de, int64_t ldde,
                                       uint32_t flags);

/* ---- inference: the forward without saved state ------------------------------------------- */

/* The network's buffers for an inference pass over R rows: the same loop as training's forward
 * (sn_net_infer_split, then enter/exit for i = 0 .. S-1, then merge), with the same arguments
 * after the struct, but the streams live in a small state instead of acts, so nothing for a
 * backward pass is kept. For sampling and evaluation with a trained model.
 *   rows    R >= 1.
 *   params  [n_params] read (may be NULL when n_params is 0), the training layout.
 *   state   [R * state_per_row] (sn_net_infer_sizes) read and written by every call.
 * h and out are bitwise the same as the training forward's for the same inputs on the same
 * kernel path and thread count. */
typedef struct sn_net_infer {
    int64_t rows;
    const float *params;
    float *state;
} sn_net_infer;

/* *state_per_row: the floats per row of an inference state. It holds the stream x twice (the
 * sub-layer's input and output; SpanNorm: the layer's input x, kept through the layer, and
 * the attention's output a), y for the SiameseNorm family, one more row of D where a
 * sub-layer needs the sum it normalises (Post-Norm's and DeepNorm's alpha x + z, the paper
 * form's x + z/c, SpanNorm's x + z and a + z), and the statistics of one sub-layer's norms
 * (at most 6). It does not grow with S: LayerNorm Pre-Norm 2D + 2, SiameseNorm 3D + 6,
 * Post-Norm and SpanNorm 3D + 2, against
 * acts_per_row's (D + 2) S + ... and (2D + 6) S + ... Hyper-Connections keep their n streams
 * once (each exit mixes them in place) and one sub-layer's statistics and, dynamic, per-row
 * tanh values: LayerNorm static nD + 2, dynamic nD + 2 + 2n + n(n + 2) (n = 4: 4D + 34).
 * Errors: as sn_net_check, SN_ERR_NULL
 * (state_per_row). */
SN_API sn_status sn_net_infer_sizes(const sn_net *net, int64_t *state_per_row);

/* As sn_net_split / sn_net_enter / sn_net_exit / sn_net_merge, on the inference state. Same
 * order rule, same errors (SN_ERR_NULL also for a NULL state). */
SN_API sn_status sn_net_infer_split(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                    const float *e, int64_t lde);
SN_API sn_status sn_net_infer_enter(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                    int32_t i, float *h, int64_t ldh);
SN_API sn_status sn_net_infer_exit(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                   int32_t i, const float *z, int64_t ldz);
SN_API sn_status sn_net_infer_merge(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                    float *out, int64_t ldo);

/* ---- the placement layer with bf16 streams ------------------------------------------------ */

/* For a net with act_dtype SN_DTYPE_BF16: the same calls, in the same order and with the same
 * meaning, arguments and errors as the fp32 ones above, with the caller's matrix in bf16 (row
 * stride in elements). Every stream the layer keeps (acts, work, the inference state) is
 * stored in bf16, so each stage rounds its results once as it stores them, as the bf16
 * primitives do; statistics and parameter gradients stay fp32. sn_net_sizes and
 * sn_net_infer_sizes count the bf16 streams in floats (two elements a float, rounded up), so
 * the buffers are allocated as for fp32. An fp32 pass call on a bf16 net, or a `_bf16` call on
 * an fp32 net, returns SN_ERR_DTYPE. A bf16 net is at most 4096 wide: sn_net_check returns
 * SN_ERR_UNSUPPORTED for a wider one (see "bf16 storage"). */
SN_API sn_status sn_net_split_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                                   const sn_bf16 *e, int64_t lde);
SN_API sn_status sn_net_enter_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                                   int32_t i, sn_bf16 *h, int64_t ldh);
SN_API sn_status sn_net_exit_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                                  int32_t i, const sn_bf16 *z, int64_t ldz);
SN_API sn_status sn_net_merge_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                                   sn_bf16 *out, int64_t ldo);
SN_API sn_status sn_net_merge_backward_bf16(const sn_ctx *ctx, const sn_net *net,
                                            const sn_net_pass *pass, const sn_bf16 *dout,
                                            int64_t lddo);
SN_API sn_status sn_net_exit_backward_bf16(const sn_ctx *ctx, const sn_net *net,
                                           const sn_net_pass *pass, int32_t i, sn_bf16 *dz,
                                           int64_t lddz, uint32_t flags);
SN_API sn_status sn_net_enter_backward_bf16(const sn_ctx *ctx, const sn_net *net,
                                            const sn_net_pass *pass, int32_t i, const sn_bf16 *dh,
                                            int64_t lddh);
SN_API sn_status sn_net_split_backward_bf16(const sn_ctx *ctx, const sn_net *net,
                                            const sn_net_pass *pass, sn_bf16 *de, int64_t ldde,
                                            uint32_t flags);
SN_API sn_status sn_net_infer_split_bf16(const sn_ctx *ctx, const sn_net *net,
                                         const sn_net_infer *inf, const sn_bf16 *e, int64_t lde);
SN_API sn_status sn_net_infer_enter_bf16(const sn_ctx *ctx, const sn_net *net,
                                         const sn_net_infer *inf, int32_t i, sn_bf16 *h,
                                         int64_t ldh);
SN_API sn_status sn_net_infer_exit_bf16(const sn_ctx *ctx, const sn_net *net,
                                        const sn_net_infer *inf, int32_t i, const sn_bf16 *z,
                                        int64_t ldz);
SN_API sn_status sn_net_infer_merge_bf16(const sn_ctx *ctx, const sn_net *net,
                                         const sn_net_infer *inf, sn_bf16 *out, int64_t ldo);

#ifdef __cplusplus
}
#endif

#endif /* SIAMESENORM_H */
