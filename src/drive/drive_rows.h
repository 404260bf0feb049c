/* The drivers (see drive.h), written once for every element type: included by drive_f32.c and
 * drive_bf16.c after they define
 *   SN_T            the element type of the row matrices (float or sn_bf16)
 *   SN_KT           its kernel table type (sn_kern or sn_kern16), SN_KERN_FOR its lookup by path
 *   SN_DRIVE_TABLE  the name of the sn_drive table to define.
 * Everything below is the same for every type but the element size: thresholds in bytes count
 * sizeof(SN_T), and a row's conversions are its kernel table's.
 *
 * A call runs on the kernel table of its context's path. Rows are split into contiguous
 * pieces, one parallel-for task each; every row is computed by the same kernel calls whatever
 * the split, so forward outputs and input gradients do not depend on the thread count.
 *
 * Parameter gradients are sums over rows, computed the same way on every path, for every thread
 * count, hook and NULL context: fixed chunks of rows (their size depends on D only), each
 * chunk's partial sum a left fold over its rows from zero, the partials added onto dparams in
 * chunk order (see pg_run). Each row is visited once while it sits in L1 (reductions,
 * parameter gradients, input gradients). Stack use: at most about 70 KiB here (the slots of
 * the chunk partials when the context has no larger scratch, and a bf16 fuse forward's s row)
 * plus a kernel's stack rows (up to 44 KiB in a SIMD bf16 fuse_bwd2, 96 KiB of staged rows in
 * the scalar path's bf16 kernels); tests/test_stack.c holds every call to the header's bounds.
 * No include guard: included once per element type. */
#include <math.h>
#include <string.h>

#include "ctx.h"
#include "drive.h"

/* Fuse forward rows up to SN_K_STACK_ROW_MAX build s on the stack, so that h is written once;
 * wider fp32 rows build it in h. A bf16 row cannot hold the float s: its s is always on the
 * stack (bf16 rows are at most SN_K16_ROW_MAX wide). */
#define FUSE_S_FLOATS (sizeof(SN_T) == sizeof(float) ? SN_K_STACK_ROW_MAX : SN_K16_ROW_MAX)

#define COL_QUANTUM     SN_D_COL_QUANTUM
#define PG_CHUNK_MAX    SN_D_PG_CHUNK_MAX
#define PG_STACK_FLOATS SN_D_PG_STACK_FLOATS

/* A matrix a call reads (in) or writes (out): row r starts at p + r * ld. */
typedef struct mat_in {
    const SN_T *p;
    int64_t ld;
} mat_in;
typedef struct mat_out {
    SN_T *p;
    int64_t ld;
} mat_out;
static const SN_T *in_row(mat_in m, int64_t r) { return m.p + r * m.ld; }
static SN_T *out_row(mat_out m, int64_t r) { return m.p + r * m.ld; }

/* How a call runs, the same for every driver: its kernel table, its rows and their split into
 * tasks, the memory hints and, for a backward pass with parameter gradients, the chunks of
 * pg_run. What the call computes is in the driver's own struct (norm_job, fuse_job, apply_job,
 * ...), whose first member is the job: the tasks get that struct as their argument. */
typedef struct job {
    const SN_KT *K;
    const sn_kern *K32; /* the fp32 table of the same path (parameter-gradient slots) */
    /* K and K32 are the tables for these three and the placement of tier and off32
     * (tables_of): */
    sn_isa isa;     /* the context's path setting */
    int64_t W;      /* the row width the kernels see */
    sn_k_call call; /* the kind of call */
    int off32;      /* a row or parameter vector starts off a 32-byte boundary (set_rows_place) */
    int64_t R, D;   /* rows of the call; elements per row */
    int64_t Dlast;  /* elements in the last row: D, but in a flat view (flat_view) */
    int64_t pieces; /* tasks of the parallel for under way (row runs, chunk runs or columns) */
    int nt;         /* streaming stores (see SN_D_NT_MIN_BYTES) */
    int pf;         /* software prefetch of the rows ahead (see SN_D_PF_MIN_BYTES) */
    unsigned tier;  /* auto's size tier, 0 .. 3 (kernels.h, SN_K_PLACE_*; set_mem_at) */
    /* backward passes with parameter gradients (see pg_run) */
    float *dparams;   /* the call's parameter gradients (accumulated) */
    int64_t npg;      /* floats of the parameter block */
    int64_t C, slot;  /* rows per chunk; floats per slot */
    int64_t c0, nk;   /* the current super-block: chunks [c0, c0 + nk) in slots [0, nk) */
    float *buf;       /* the slots */
    int64_t nbuf;     /* floats in buf */
    sn_task_fn ctask; /* the chunk task of pg_run */
} job;

/* J's kernel tables, for its path setting, width, kind of call and placement (kernels.h,
 * SN_K_PLACE_*: tier and off32; auto's tables differ by those only in speed, never in bits) */
static void tables_of(job *J) {
    const unsigned place = J->tier | (J->off32 ? SN_K_PLACE_OFF32 : 0u);
    J->K = SN_KERN_FOR(J->isa, J->W, place, J->call);
    J->K32 = sn_kern_for(J->isa, J->W, place, J->call);
}

/* The job of a call of kind `call` over R rows of D elements on ctx's kernel tables for rows of
 * W elements (the rows the kernels see: D, or a norm's group width), at placement 0 until
 * set_mem_at and set_rows_place say otherwise. */
static job job_of_kind(const sn_ctx *ctx, int64_t R, int64_t D, int64_t W, sn_k_call call) {
    job J;
    memset(&J, 0, sizeof J);
    J.isa = sn_ctx_isa_setting(ctx);
    J.W = W;
    J.call = call;
    tables_of(&J);
    J.R = R;
    J.D = D;
    J.Dlast = D;
    return J;
}

static job job_of(const sn_ctx *ctx, int64_t R, int64_t D) {
    return job_of_kind(ctx, R, D, D, SN_K_CALL_OTHER);
}

static void range(int64_t n, int64_t pieces, int64_t i, int64_t *lo, int64_t *hi) {
    *lo = n * i / pieces;
    *hi = n * (i + 1) / pieces;
}

/* the column run [j0, j1) of task i of a column split of W columns */
static void col_range(int64_t W, int64_t pieces, int64_t i, int64_t *j0, int64_t *j1) {
    const int64_t nq = (W + COL_QUANTUM - 1) / COL_QUANTUM;
    int64_t q0, q1;
    range(nq, pieces, i, &q0, &q1);
    *j0 = q0 * COL_QUANTUM;
    *j1 = q1 * COL_QUANTUM < W ? q1 * COL_QUANTUM : W;
}

/* the bytes of nmat R x D matrices of the call's element type */
static double mats_bytes(int64_t R, int64_t D, int nmat) {
    return (double)R * (double)D * (double)nmat * sizeof(SN_T);
}

/* streaming stores (beyond nt_min bytes), prefetch and the size tier (drive.h) for a call over
 * nmat R x D matrices, and the tables that follow */
static void set_mem_at(job *J, int64_t R, int64_t D, int nmat, double nt_min) {
    const double bytes = mats_bytes(R, D, nmat);
    J->nt = bytes > nt_min;
    J->pf = bytes > SN_D_PF_MIN_BYTES;
    J->tier = J->nt                            ? SN_K_PLACE_STREAMS
              : bytes > SN_D_FAR_MIN_BYTES     ? SN_K_PLACE_FAR
              : bytes > SN_D_PAST_L2_MIN_BYTES ? SN_K_PLACE_PAST_L2
                                               : 0u;
    tables_of(J);
}
static void set_mem(job *J, int64_t R, int64_t D, int nmat) {
    set_mem_at(J, R, D, nmat, SN_D_NT_MIN_BYTES);
}

/* Sets J's off32 (placement bit SN_K_PLACE_OFF32) when a row of one of the n row matrices
 * (first rows p[], NULL: none; row strides ld[] in elements) or a vector of the parameter block
 * params (NULL: none; vectors J->W floats apart) starts off a 32-byte boundary. Before set_mem or
 * set_mem_at, which look the tables up. */
static void set_rows_place(job *J, const void *const p[], const int64_t ld[], int n,
                           const float *params) {
    uintptr_t any = params ? (uintptr_t)params | (uintptr_t)J->W * sizeof(float) : 0;
    for (int k = 0; k < n; k++)
        if (p[k]) any |= (uintptr_t)p[k] | (uintptr_t)ld[k] * sizeof(SN_T);
    J->off32 = any % 32 != 0;
}

/* ---- elementwise calls on contiguous matrices ----------------------------------------------
 *
 * An elementwise kernel computes each output element from the same element of its inputs alone,
 * so a call over R x D matrices that are all contiguous (every ld equal to D) is the same call,
 * bit for bit, over one row of R * D elements. The elementwise drivers run such calls as rows of
 * FLAT_W elements, the last one shorter: rows narrower than that no longer cost a kernel call
 * each, and auto's table is the one for rows of FLAT_W whatever D (docs/performance.md,
 * "Elementwise calls as one row, and placements"). */
#define FLAT_W 2048

/* Views J's call (R x D, not yet given its memory hints: set_mem comes after) as rows of FLAT_W
 * when the n matrices whose row strides ld[] point to are contiguous and D < FLAT_W, setting
 * those strides to FLAT_W; leaves it as it is otherwise. */
static void flat_view(job *J, const sn_ctx *ctx, int64_t *const ld[], int n) {
    if (J->R < 2 || J->D >= FLAT_W) return;
    for (int k = 0; k < n; k++)
        if (*ld[k] != J->D) return;
    const int64_t N = J->R * J->D;
    *J = job_of_kind(ctx, (N + FLAT_W - 1) / FLAT_W, FLAT_W, FLAT_W, J->call);
    J->Dlast = N - (J->R - 1) * FLAT_W;
    for (int k = 0; k < n; k++) *ld[k] = FLAT_W;
}

/* the elements of row r of the call: D, but in the last row of a flat view */
static int64_t row_d(const job *J, int64_t r) { return r == J->R - 1 ? J->Dlast : J->D; }

/* Runs fn over the rows of the call in J->pieces tasks; arg is the driver's struct, whose
 * first member is J. */
static void run_rows(const sn_ctx *ctx, job *J, sn_task_fn fn, void *arg) {
    J->pieces = sn_d_row_pieces(ctx, J->R, J->D);
    sn_ctx_par(ctx, J->pieces, fn, arg);
}

/* the rows [lo, hi) of row task i */
static void task_rows(const job *J, int64_t i, int64_t *lo, int64_t *hi) {
    range(J->R, J->pieces, i, lo, hi);
}

/* ---- parameter gradients: fixed row chunks folded in chunk order ----------------------------
 *
 * A backward pass with parameter gradients cuts the rows into chunks of sn_d_pg_chunk_rows(D) rows
 * (a function of D alone, never of the threads). Each chunk's contribution is a left fold over
 * its rows (and groups) starting from zero, computed into a slot (same layout as dparams); the
 * slots are then added onto dparams in chunk order: dparams = ((dparams + P_0) + P_1) + ...
 * Every path, thread count, hook and NULL context runs this same scheme, so the bits never
 * depend on how the chunks were spread over threads. A chunk's rows are done in one visit each
 * (reductions, parameter gradients, input gradients) while they sit in L1; threads take runs of
 * adjacent chunks (pg_range_task).
 *
 * The slots live in the context's scratch (sn_ctx_set_scratch) when it is larger, else in a
 * bounded stack buffer. Threads take chunks in super-blocks of as many slots as fit, then fold
 * them (columns split over threads). Without room for two slots the call runs on the calling
 * thread; without room for one (very wide rows), chunks are done in column blocks. */

/* the buffer for the slots: the context's scratch or the stack buffer, whichever is larger */
static void pg_buffer(const sn_ctx *ctx, float *stack, int64_t nstack, float **buf, int64_t *n) {
    sn_ctx_scratch(ctx, buf, n);
    if (*n < nstack) {
        *buf = stack;
        *n = nstack;
    }
}

/* folds slots [0, J->nk) onto dparams over the columns of task i */
static void pg_fold_task(void *arg, int64_t i) {
    const job *J = arg;
    int64_t j0, j1;
    col_range(J->npg, J->pieces, i, &j0, &j1);
    /* dparams += the slots in chunk order, in one sweep (the path's fp32 fold: the same bits
     * on every path) */
    J->K32->fold(J->buf + j0, J->slot, J->nk, J->dparams + j0, j1 - j0);
}

/* Threads take the chunks of a super-block in runs of adjacent chunks, PG_RUNS_PER_THREAD runs
 * per thread (a run is one task, claimed as any task): each thread then works through adjacent
 * rows and slots (docs/performance.md, "Measurements behind the code"). The bits never depend on
 * it: a chunk's sum never depends on who computes it. */
#define PG_RUNS_PER_THREAD 2

/* chunks [lo, hi) of the current super-block for task i of J->pieces, in order (arg: the
 * driver's struct, whose first member is the job) */
static void pg_range_task(void *arg, int64_t i) {
    const job *J = arg;
    int64_t lo, hi;
    range(J->nk, J->pieces, i, &lo, &hi);
    for (int64_t c = lo; c < hi; c++) J->ctask(arg, c);
}

/* The chunks of a backward pass over the J->R rows: chunk_task(arg, i) does chunk J->c0 + i
 * into slot i (zeroed first); wide(arg) does all chunks in column blocks when not even one slot
 * fits. arg is the driver's struct, whose first member is J. */
static void pg_run(const sn_ctx *ctx, job *J, void *arg, sn_task_fn chunk_task,
                   void (*wide)(void *arg)) {
    _Alignas(64) float stack[PG_STACK_FLOATS];
    const int64_t R = J->R;
    int64_t nbuf;
    pg_buffer(ctx, stack, PG_STACK_FLOATS, &J->buf, &nbuf);
    J->nbuf = nbuf;
    J->C = sn_d_pg_chunk_rows(J->D);
    J->slot = sn_d_pg_slot_floats(J->npg);
    const int64_t nch = (R + J->C - 1) / J->C;
    int64_t K = nbuf / J->slot;
    if (K < 1) {
        J->buf = stack;
        J->nbuf = PG_STACK_FLOATS;
        wide(arg);
        return;
    }
    /* the calling thread alone: the chunks of a super-block one after the other, then one fold */
    const int alone = sn_d_row_pieces(ctx, R, J->D) == 1 || K < 2 || nch < 2;
    if (K > nch) K = nch;
    for (int64_t c0 = 0; c0 < nch; c0 += K) {
        J->c0 = c0;
        J->nk = nch - c0 < K ? nch - c0 : K;
        if (alone) {
            for (int64_t i = 0; i < J->nk; i++) chunk_task(arg, i);
            J->pieces = 1;
            pg_fold_task(J, 0);
            continue;
        }
        J->ctask = chunk_task;
        J->pieces = PG_RUNS_PER_THREAD * (int64_t)sn_ctx_width(ctx);
        if (J->pieces > J->nk) J->pieces = J->nk;
        sn_ctx_par(ctx, J->pieces, pg_range_task, arg);
        const int64_t nq = (J->npg + COL_QUANTUM - 1) / COL_QUANTUM, w = sn_ctx_width(ctx);
        J->pieces = nq < w ? nq : w;
        sn_ctx_par(ctx, J->pieces, pg_fold_task, J);
    }
}

/* rows [lo, hi) of chunk i of the current super-block, and its slot, zeroed */
static float *pg_chunk(const job *J, int64_t i, int64_t *lo, int64_t *hi) {
    *lo = (J->c0 + i) * J->C;
    *hi = *lo + J->C < J->R ? *lo + J->C : J->R;
    float *s = J->buf + i * J->slot;
    memset(s, 0, (size_t)J->npg * sizeof(float));
    return s;
}

/* ---- norms --------------------------------------------------------------------------------- */

/* A norm call: the forward reads x and writes out (and stats_out unless NULL); the backward
 * reads dout, x and stats, writes or accumulates (acc) dx, and accumulates the parameter
 * gradients into run.dparams unless NULL. */
typedef struct norm_job {
    job run; /* first: the tasks get the norm_job */
    const sn_norm *n;
    int64_t W, ng, spr; /* segment width (the group, or D); segments per row; stats per row */
    const float *params;
    mat_in x;
    mat_out out;        /* forward */
    float *stats_out;   /* forward */
    mat_in dout;        /* backward */
    const float *stats; /* backward: the forward's stats_out */
    mat_out dx;         /* backward */
    int acc;            /* backward: dx += instead of = */
    int pairs;          /* segments go two at a time (norm_pairs) */
} norm_job;

/* The row-independent part of every row's resolved norm (gamma, beta, ca, cb, nt), computed once
 * per task; a row only fills in its statistics, as sn_k_resolve would. */
static sn_rnorm norm_q0(const norm_job *J) {
    sn_rnorm q = sn_k_resolve(J->n, J->W, J->params, 0.0f, 1.0f);
    q.nt = J->run.nt;
    return q;
}

/* The forward of segment g of row r (a row, or a group of a row). */
static void norm_fwd_seg(const norm_job *J, const sn_rnorm *q0, int64_t r, int64_t g) {
    float m, rs;
    J->run.K->norm_fwd(J->n, q0, in_row(J->x, r) + g * J->W, J->W, out_row(J->out, r) + g * J->W,
                       &m, &rs);
    if (J->stats_out) sn_k_stats_put(J->n->kind, J->stats_out + r * J->spr, J->ng, g, m, rs);
}

/* The forward of segments (r0, g0) and (r1, g1): both statistics in the same sweeps (stats2,
 * the same bits as stats on each), then norm_row on each. */
static inline void norm_fwd_seg2(const norm_job *J, const sn_rnorm *q0, int64_t r0, int64_t g0,
                                 int64_t r1, int64_t g1) {
    const SN_KT *K = J->run.K;
    const int32_t kind = J->n->kind;
    const SN_T *v0 = in_row(J->x, r0) + g0 * J->W, *v1 = in_row(J->x, r1) + g1 * J->W;
    float m0, rs0, m1, rs1;
    K->stats2(J->n, v0, J->n, v1, J->W, &m0, &rs0, &m1, &rs1);
    sn_rnorm q = *q0;
    sn_k_set_stats(&q, kind, m0, rs0);
    K->norm_row(&q, v0, J->W, out_row(J->out, r0) + g0 * J->W);
    q = *q0;
    sn_k_set_stats(&q, kind, m1, rs1);
    K->norm_row(&q, v1, J->W, out_row(J->out, r1) + g1 * J->W);
    if (J->stats_out) {
        sn_k_stats_put(kind, J->stats_out + r0 * J->spr, J->ng, g0, m0, rs0);
        sn_k_stats_put(kind, J->stats_out + r1 * J->spr, J->ng, g1, m1, rs1);
    }
}

/* Whether a norm call over nmat R x D matrices takes its segments two at a time, so that the two
 * statistics chains (sums, division, square root) overlap: short segments always
 * (docs/performance.md, "Measurements behind the code"); longer ones up to the path's width w
 * (pair_w_fwd, pair_w_bwd) when the call spans at most SN_D_NORM_PAIR_MAX_BYTES (larger calls,
 * whose rows come from the L3 or memory, took up to twice the time in pairs: docs/performance.md,
 * "Norm rows in pairs"). */
static int norm_pairs(const norm_job *J, int64_t w, int nmat) {
    return J->W <= SN_D_NORM_PAIR_MAX_W ||
           (J->W <= w && mats_bytes(J->run.R, J->run.D, nmat) <= SN_D_NORM_PAIR_MAX_BYTES);
}

static void norm_fwd_task(void *arg, int64_t i) {
    const norm_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    const sn_rnorm q0 = norm_q0(J);
    if (!J->pairs) {
        for (int64_t r = lo; r < hi; r++)
            for (int64_t g = 0; g < J->ng; g++) norm_fwd_seg(J, &q0, r, g);
        return;
    }
    int64_t pr = 0, pg = 0; /* a segment waiting for its partner, when `waiting` */
    int waiting = 0;
    for (int64_t r = lo; r < hi; r++)
        for (int64_t g = 0; g < J->ng; g++) {
            if (waiting) norm_fwd_seg2(J, &q0, pr, pg, r, g);
            else pr = r, pg = g;
            waiting = !waiting;
        }
    if (waiting) norm_fwd_seg(J, &q0, pr, pg);
}

static norm_job norm_job_of(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                            const float *params) {
    norm_job J;
    memset(&J, 0, sizeof J);
    J.W = n->group ? n->group : D;
    J.run = job_of_kind(ctx, R, D, J.W,
                        n->kind == SN_NORM_LAYERNORM ? SN_K_CALL_LAYERNORM
                        : n->kind == SN_NORM_RMSNORM ? SN_K_CALL_RMSNORM
                                                     : SN_K_CALL_OTHER);
    J.n = n;
    J.ng = D / J.W;
    J.spr = sn_norm_spr(n, D);
    J.params = params;
    return J;
}

static void d_norm_fwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const void *x,
                       int64_t ldx, const float *params, void *out, int64_t ldo, float *stats) {
    norm_job J = norm_job_of(ctx, n, R, D, params);
    J.x = (mat_in){x, ldx};
    J.out = (mat_out){out, ldo};
    J.stats_out = stats;
    set_rows_place(&J.run, (const void *const[]){x, out}, (const int64_t[]){ldx, ldo}, 2, params);
    set_mem(&J.run, R, D, 2);
    J.pairs = norm_pairs(&J, J.run.K->pair_w_fwd, 2);
    run_rows(ctx, &J.run, norm_fwd_task, &J);
}

/* row r's group g resolved from q0 (norm_q0) and its saved statistics */
static inline sn_rnorm norm_row_q(const norm_job *J, const sn_rnorm *q0, int64_t r, int64_t g) {
    sn_rnorm q = *q0;
    if (J->stats) sn_k_stats_get(&q, J->n->kind, J->stats + r * J->spr, J->ng, g);
    return q;
}

/* the whole backward of rows [lo, hi), one visit each; parameter gradients accumulated into the
 * block pg (the params layout) unless it is NULL */
static void norm_bwd_rows(const norm_job *J, int64_t lo, int64_t hi, float *pg) {
    const SN_KT *K = J->run.K;
    const int64_t W = J->W, ng = J->ng;
    const int acc = J->acc;
    const mat_in dout_m = J->dout, x_m = J->x;
    const mat_out dx_m = J->dx;
    const sn_rnorm dp = pg ? sn_k_resolve(J->n, W, pg, 0, 0) : (sn_rnorm){0};
    float *const dg = (float *)dp.gamma, *const db = (float *)dp.beta;
    const sn_rnorm q0 = norm_q0(J);
    const int pairs = J->pairs;
    sn_rnorm q[2];
    const SN_T *dout[2], *v[2];
    SN_T *dv[2];
    int n = 0;
    for (int64_t r = lo; r < hi; r++) {
        for (int64_t g = 0; g < ng; g++) {
            q[n] = norm_row_q(J, &q0, r, g);
            dout[n] = in_row(dout_m, r) + g * W;
            v[n] = in_row(x_m, r) + g * W;
            dv[n] = out_row(dx_m, r) + g * W;
            if (!pairs) {
                K->norm_bwd(&q[0], dout[0], v[0], W, dv[0], acc, dg, db);
            } else if (++n == 2) {
                K->norm_bwd2(q, dout, v, W, dv, acc, dg, db);
                n = 0;
            }
        }
    }
    if (n) K->norm_bwd(&q[0], dout[0], v[0], W, dv[0], acc, dg, db);
}

static void norm_bwd_dx_task(void *arg, int64_t i) {
    const norm_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    norm_bwd_rows(J, lo, hi, NULL);
}

static void norm_bwd_chunk_task(void *arg, int64_t i) {
    const norm_job *J = arg;
    int64_t lo, hi;
    float *s = pg_chunk(&J->run, i, &lo, &hi);
    norm_bwd_rows(J, lo, hi, s);
}

/* rows too wide for one slot: each chunk's parameter gradients in column blocks (the same sums,
 * column by column), then its input gradients */
static void norm_bwd_wide(void *arg) {
    const norm_job *J = arg;
    const job *P = &J->run;
    const sn_rnorm dp = sn_k_resolve(J->n, J->W, P->dparams, 0, 0);
    float *dst[2] = {(float *)dp.gamma, (float *)dp.beta};
    const int64_t per = dst[1] ? 2 : 1, bw = P->nbuf / per / COL_QUANTUM * COL_QUANTUM;
    const sn_rnorm q0 = norm_q0(J);
    for (int64_t lo = 0; lo < P->R; lo += P->C) {
        const int64_t hi = lo + P->C < P->R ? lo + P->C : P->R;
        for (int64_t j0 = 0; j0 < J->W; j0 += bw) {
            const int64_t n = J->W - j0 < bw ? J->W - j0 : bw;
            float *p[2] = {P->buf, dst[1] ? P->buf + bw : NULL};
            memset(P->buf, 0, (size_t)(per * bw) * sizeof(float));
            for (int64_t r = lo; r < hi; r++)
                for (int64_t g = 0; g < J->ng; g++) {
                    const sn_rnorm q = norm_row_q(J, &q0, r, g);
                    const int64_t c = g * J->W + j0;
                    P->K->norm_pg(&q, in_row(J->dout, r) + c, in_row(J->x, r) + c, n, p[0], p[1]);
                }
            for (int k = 0; k < 2; k++)
                if (dst[k])
                    for (int64_t j = 0; j < n; j++) dst[k][j0 + j] += p[k][j];
        }
        norm_bwd_rows(J, lo, hi, NULL);
    }
}

static void d_norm_bwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const void *dout,
                       int64_t lddo, const void *x, int64_t ldx, const float *params,
                       const float *stats, void *dx, int64_t lddx, float *dparams, int acc) {
    norm_job J = norm_job_of(ctx, n, R, D, params);
    J.dout = (mat_in){dout, lddo};
    J.x = (mat_in){x, ldx};
    J.stats = stats;
    J.dx = (mat_out){dx, lddx};
    J.acc = acc;
    set_rows_place(&J.run, (const void *const[]){dout, x, dx}, (const int64_t[]){lddo, ldx, lddx},
                   3, params);
    set_mem(&J.run, R, D, 3 + acc);
    J.pairs = norm_pairs(&J, J.run.K->pair_w_bwd, 3 + acc);
    if (!dparams || n->kind == SN_NORM_IDENTITY || n->affine == SN_AFFINE_NONE) {
        run_rows(ctx, &J.run, norm_bwd_dx_task, &J);
        return;
    }
    J.run.dparams = dparams;
    J.run.npg = n->affine == SN_AFFINE_SCALE_SHIFT ? 2 * J.W : J.W;
    pg_run(ctx, &J.run, &J, norm_bwd_chunk_task, norm_bwd_wide);
}

/* ---- dual-stream fuse ---------------------------------------------------------------------- */

/* A fuse call: the forward reads x and y and writes u (unless u.p is NULL), h and stats_out
 * (unless NULL); the backward reads dh, du (du.p NULL: zero), x, y and stats, writes or
 * accumulates (accx, accy) dx and dy, and accumulates the parameter gradients into run.dparams
 * unless NULL. */
typedef struct fuse_job {
    job run; /* first: the tasks get the fuse_job */
    const sn_fuse *f;
    sn_fuse_layout L;
    int64_t spr; /* stats per row */
    const float *params;
    sn_rfuse F0;     /* the three norms resolved once per call (m = 0, r = 1), see fuse_F0 */
    int32_t kind[3]; /* the kinds of f->x, f->y and f->out */
    mat_in x, y;
    mat_out u, h;       /* forward */
    float *stats_out;   /* forward */
    mat_in dh, du;      /* backward */
    const float *stats; /* backward: the forward's stats_out */
    mat_out dx, dy;     /* backward */
    int accx, accy;     /* backward: dx += and dy += instead of = */
    int pf_spread; /* forward: the pair kernel prefetches (see SN_D_FUSE_PF_SPREAD_MIN_BYTES) */
} fuse_job;

/* the fuse call's job, with F0: the parts of every row's sn_rfuse that do not depend on the
 * row (set_mem first: F0 takes nt) */
static void fuse_job_init(fuse_job *J, const sn_fuse *f, const float *params) {
    const int64_t D = J->run.D;
    J->f = f;
    J->L = sn_k_fuse_layout(f, D);
    J->spr = J->L.spr;
    J->params = params;
    const float *P = params;
    memset(&J->F0, 0, sizeof J->F0);
    J->F0.X = sn_k_resolve(&f->x, D, P ? P + J->L.px : NULL, 0.0f, 1.0f);
    J->F0.Y = sn_k_resolve(&f->y, D, P ? P + J->L.py : NULL, 0.0f, 1.0f);
    J->F0.O = sn_k_resolve(&f->out, D, P ? P + J->L.po : NULL, 0.0f, 1.0f);
    J->F0.nt = J->run.nt;
    J->kind[0] = f->x.kind, J->kind[1] = f->y.kind, J->kind[2] = f->out.kind;
}

/* Beyond L2 (pf), the forward kernel working on rows r, r + 1 prefetches the x and y rows of
 * q and q + 1 (q = r + SN_D_PF_AHEAD; those below R) through F->pf, as the backward's does: four
 * pointers (q's repeated when q + 1 is past the end; the kernel takes four), none when q is. */
static void fuse_fwd_pf(const fuse_job *J, int64_t q, sn_rfuse *F) {
    int k = 0;
    for (; q < J->run.R && k < 4; q++) {
        F->pf[k++] = in_row(J->x, q);
        F->pf[k++] = in_row(J->y, q);
    }
    for (; k > 0 && k < 4; k++) F->pf[k] = F->pf[k - 2];
    F->npf = k;
}

static void fuse_fwd_task(void *arg, int64_t i) {
    const fuse_job *J = arg;
    const job *P = &J->run;
    const SN_KT *K = P->K;
    const sn_fuse *f = J->f;
    const sn_fuse_layout *L = &J->L;
    const int64_t D = P->D;
    int64_t lo, hi;
    task_rows(P, i, &lo, &hi);
    /* rows in pairs (fuse_fwd2) where the kinds and width allow, except at the widths at which
     * the table runs them one at a time */
    const int two = sn_k_fuse2_ok(f, D) && !sn_k_widths_has(K->single.fwd, D);
    const int near = !P->pf;
    const int64_t rend = P->R, rb = D * (int64_t)sizeof(SN_T);
    for (int64_t r = lo; r < hi; r++) {
        const SN_T *x = in_row(J->x, r), *y = in_row(J->y, r);
        SN_T *h = out_row(J->h, r);
        SN_T *u = J->u.p ? out_row(J->u, r) : NULL;
        float mx, rx, my, ry, mo, ro;
        const int pair = two && r + 1 < hi;
        int prefetch_pair = 0;
        for (int64_t q = r + SN_D_PF_NEAR; near && q <= r + SN_D_PF_NEAR + pair && q < rend; q++) {
            sn_d_prefetch_near(out_row(J->h, q), rb);
            if (J->u.p) sn_d_prefetch_near(out_row(J->u, q), rb);
        }
        /* in calls beyond SN_D_FUSE_PF_SPREAD_MIN_BYTES a pair's kernel spreads the prefetches over
         * a sweep (fuse_fwd_pf); other rows get them here, at once */
        for (int64_t q = r + SN_D_PF_AHEAD; P->pf && q <= r + SN_D_PF_AHEAD + pair && q < rend;
             q++) {
            if (pair && J->pf_spread) {
                prefetch_pair = 1;
                break;
            }
            sn_d_prefetch_row(in_row(J->x, q), rb);
            sn_d_prefetch_row(in_row(J->y, q), rb);
        }
        if (pair) { /* two rows interleaved, the same bits as two rows one by one */
            const SN_T *const xs[2] = {x, in_row(J->x, r + 1)};
            const SN_T *const ys[2] = {y, in_row(J->y, r + 1)};
            SN_T *const us[2] = {u, J->u.p ? out_row(J->u, r + 1) : NULL};
            SN_T *const hs[2] = {h, out_row(J->h, r + 1)};
            float st2[2][6];
            if (prefetch_pair) {
                sn_rfuse F0 = J->F0;
                fuse_fwd_pf(J, r + SN_D_PF_AHEAD, &F0);
                K->fuse_fwd2(&F0, f, D, xs, ys, us, hs, st2);
            } else {
                K->fuse_fwd2(&J->F0, f, D, xs, ys, us, hs, st2);
            }
            for (int q = 0; q < 2 && J->stats_out; q++) {
                float *st = J->stats_out + (r + q) * J->spr;
                sn_k_stats_put(f->x.kind, st + L->sx, 1, 0, st2[q][0], st2[q][1]);
                sn_k_stats_put(f->y.kind, st + L->sy, 1, 0, st2[q][2], st2[q][3]);
                sn_k_stats_put(f->out.kind, st + L->so, 1, 0, st2[q][4], st2[q][5]);
            }
            r++;
            continue;
        }
        sn_rfuse F = J->F0;
        K->stats2(&f->x, x, &f->y, y, D, &mx, &rx, &my, &ry);
        sn_k_set_stats(&F.X, f->x.kind, mx, rx);
        sn_k_set_stats(&F.Y, f->y.kind, my, ry);
        /* s = N_x(x) + N_y(y) on the stack (or in h for wide fp32 rows), then h = N_out(s) */
        float sbuf[FUSE_S_FLOATS];
        float *sp = D <= FUSE_S_FLOATS ? sbuf : (float *)(void *)h;
        K->fuse_s(&F, D, x, y, u, sp, &f->out, &mo, &ro);
        if (f->out.kind != SN_NORM_IDENTITY) {
            sn_k_set_stats(&F.O, f->out.kind, mo, ro);
            F.O.nt = P->nt;
            K->norm_s(&F.O, sp, D, h);
        } else if ((void *)sp != (void *)h) {
            K->round(sp, D, h);
        }
        if (J->stats_out) {
            float *st = J->stats_out + r * J->spr;
            sn_k_stats_put(f->x.kind, st + L->sx, 1, 0, mx, rx);
            sn_k_stats_put(f->y.kind, st + L->sy, 1, 0, my, ry);
            sn_k_stats_put(f->out.kind, st + L->so, 1, 0, mo, ro);
        }
    }
}

static void d_fuse_fwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const void *x,
                       int64_t ldx, const void *y, int64_t ldy, const float *params, void *u,
                       int64_t ldu, void *h, int64_t ldh, float *stats) {
    fuse_job J;
    memset(&J, 0, sizeof J);
    J.run = job_of_kind(ctx, R, D, D, u ? SN_K_CALL_SUBLAYER : SN_K_CALL_MERGE);
    set_rows_place(&J.run, (const void *const[]){x, y, u, h}, (const int64_t[]){ldx, ldy, ldu, ldh},
                   4, params);
    set_mem_at(&J.run, R, D, u ? 4 : 3, SN_D_FUSE_NT_MIN_BYTES);
    J.pf_spread = mats_bytes(R, D, u ? 4 : 3) > SN_D_FUSE_PF_SPREAD_MIN_BYTES;
    fuse_job_init(&J, f, params);
    J.x = (mat_in){x, ldx};
    J.y = (mat_in){y, ldy};
    J.u = (mat_out){u, ldu};
    J.h = (mat_out){h, ldh};
    J.stats_out = stats;
    run_rows(ctx, &J.run, fuse_fwd_task, &J);
}

/* the backward's input rows of row r */
typedef struct frow {
    const SN_T *dh, *du, *x, *y;
} frow;

static frow fuse_row(const fuse_job *J, int64_t r) {
    frow w = {in_row(J->dh, r), J->du.p ? in_row(J->du, r) : NULL, in_row(J->x, r),
              in_row(J->y, r)};
    return w;
}

/* row r's statistics into *F, an sn_rfuse that holds J->F0 but for the fields a row sets (its
 * statistics, its prefetch rows; the kernels assign the reductions before they read them): no
 * prefetch rows */
static inline void fuse_row_stats(const fuse_job *J, int64_t r, sn_rfuse *F) {
    F->npf = 0;
    if (J->stats) {
        const float *st = J->stats + r * J->spr;
        sn_k_stats_get(&F->X, J->kind[0], st + J->L.sx, 1, 0);
        sn_k_stats_get(&F->Y, J->kind[1], st + J->L.sy, 1, 0);
        sn_k_stats_get(&F->O, J->kind[2], st + J->L.so, 1, 0);
    }
}

/* row r's sn_rfuse into *F: J->F0 with the row's saved statistics, the reductions zeroed */
static void fuse_row_F(const fuse_job *J, int64_t r, sn_rfuse *F) {
    *F = J->F0;
    fuse_row_stats(J, r, F);
}

/* Beyond L2 (pf), the kernel working on row r prefetches row r + SN_D_PF_AHEAD: the SIMD kernels
 * spread the prefetches over their second sweep, so that the misses overlap the arithmetic
 * (issued here at once before each call, they stalled it: docs/performance.md, "Measurements
 * behind the code"). */
static void fuse_row_pf(const fuse_job *J, int64_t q, sn_rfuse *F) {
    if (!J->run.pf || q >= J->run.R) return;
    const frow n = fuse_row(J, q);
    int k = 0;
    F->pf[k++] = n.dh;
    if (n.du) F->pf[k++] = n.du;
    F->pf[k++] = n.x;
    F->pf[k++] = n.y;
    if (J->accy) F->pf[k++] = out_row(J->dy, q);
    if (J->accx && k < SN_K_PF_ROWS) F->pf[k++] = out_row(J->dx, q); /* (not with du and dy) */
    F->npf = k;
}

/* the whole backward of rows [lo, hi), one visit each; parameter gradients accumulated into the
 * block pg (the params layout) unless it is NULL */
static void fuse_bwd_rows(const fuse_job *J, int64_t lo, int64_t hi, float *pg) {
    const job *P = &J->run;
    const SN_KT *K = P->K;
    const int64_t D = P->D;
    const sn_dfuse dp = sn_k_fuse_dparams(J->f, &J->L, D, pg);
    const int64_t rend = P->R, rb = D * (int64_t)sizeof(SN_T);
    sn_rfuse F[2] = {J->F0, J->F0}; /* a row sets only its own fields (fuse_row_stats) */
    /* rows in pairs with parameter gradients (two rows per load and store of them), except at
     * the widths at which the table runs them one at a time */
    const int pairs = pg && !sn_k_widths_has(K->single.bwd, D);
    /* the rows touched ahead (below SN_D_PF_MIN_BYTES): x, y, and the input gradients that are
     * written, not read (not dx when du is given: in a sub-layer dx is du's row) */
    const int near = !P->pf, near_dx = !J->accx && !J->du.p, near_dy = !J->accy;
    for (int64_t r = lo; r < hi; r++) {
        const int pair = pairs && r + 1 < hi;
        for (int64_t q = r + SN_D_PF_NEAR; near && q <= r + SN_D_PF_NEAR + pair && q < rend; q++) {
            sn_d_prefetch_near(in_row(J->x, q), rb);
            sn_d_prefetch_near(in_row(J->y, q), rb);
            if (near_dx) sn_d_prefetch_near(out_row(J->dx, q), rb);
            if (near_dy) sn_d_prefetch_near(out_row(J->dy, q), rb);
        }
        fuse_row_stats(J, r, &F[0]);
        fuse_row_pf(J, r + SN_D_PF_AHEAD, &F[0]);
        const frow w = fuse_row(J, r);
        if (pair) { /* two rows per load and store of the parameter gradients */
            fuse_row_stats(J, r + 1, &F[1]);
            fuse_row_pf(J, r + 1 + SN_D_PF_AHEAD, &F[1]);
            const frow v = fuse_row(J, r + 1);
            const SN_T *const dh[2] = {w.dh, v.dh}, *const du[2] = {w.du, v.du};
            const SN_T *const x[2] = {w.x, v.x}, *const y[2] = {w.y, v.y};
            SN_T *const dx[2] = {out_row(J->dx, r), out_row(J->dx, r + 1)};
            SN_T *const dy[2] = {out_row(J->dy, r), out_row(J->dy, r + 1)};
            K->fuse_bwd2(F, D, dh, du, x, y, dx, dy, J->accx, J->accy, &dp);
            r++;
            continue;
        }
        K->fuse_bwd(&F[0], D, w.dh, w.du, w.x, w.y, out_row(J->dx, r), out_row(J->dy, r), J->accx,
                    J->accy, pg ? &dp : NULL);
    }
}

static void fuse_bwd_all_task(void *arg, int64_t i) {
    const fuse_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    fuse_bwd_rows(J, lo, hi, NULL);
}

static void fuse_bwd_chunk_task(void *arg, int64_t i) {
    const fuse_job *J = arg;
    int64_t lo, hi;
    float *s = pg_chunk(&J->run, i, &lo, &hi);
    fuse_bwd_rows(J, lo, hi, s);
}

static const float *off(const float *p, int64_t j) { return p ? p + j : NULL; }
static const SN_T *off_row(const SN_T *p, int64_t j) { return p ? p + j : NULL; }

/* row r's sn_rfuse with the reductions saved in o (fuse_bwd_wide) */
static void fuse_row_F_red(const fuse_job *J, int64_t r, const float *o, sn_rfuse *F) {
    fuse_row_F(J, r, F);
    F->oa = o[0], F->ob = o[1], F->xa = o[2], F->xb = o[3], F->ya = o[4], F->yb = o[5];
}

/* rows too wide for one slot: per chunk, the row reductions, then the parameter gradients in
 * column blocks (fuse_pg is elementwise: the same sums, column by column), then the input
 * gradients from the saved reductions (fuse_bwd is fuse_red + fuse_pg + fuse_dx bit for bit) */
static void fuse_bwd_wide(void *arg) {
    const fuse_job *J = arg;
    const job *P = &J->run;
    const SN_KT *K = P->K;
    const int64_t D = P->D;
    const sn_dfuse d = sn_k_fuse_dparams(J->f, &J->L, D, P->dparams);
    float *dst[6] = {d.gx, d.bx, d.gy, d.by, d.go, d.bo};
    int64_t per = 0;
    for (int k = 0; k < 6; k++) per += dst[k] != NULL;
    const int64_t bw = P->nbuf / per / COL_QUANTUM * COL_QUANTUM;
    float red[PG_CHUNK_MAX * 6];
    for (int64_t lo = 0; lo < P->R; lo += P->C) {
        const int64_t hi = lo + P->C < P->R ? lo + P->C : P->R;
        sn_rfuse F[1];
        for (int64_t r = lo; r < hi; r++) {
            fuse_row_F(J, r, &F[0]);
            const frow w = fuse_row(J, r);
            K->fuse_red(F, D, w.dh, w.du, w.x, w.y);
            float *o = red + (r - lo) * 6;
            o[0] = F->oa, o[1] = F->ob, o[2] = F->xa, o[3] = F->xb, o[4] = F->ya, o[5] = F->yb;
        }
        for (int64_t j0 = 0; j0 < D; j0 += bw) {
            const int64_t n = D - j0 < bw ? D - j0 : bw;
            float *p[6];
            for (int k = 0, q = 0; k < 6; k++) p[k] = dst[k] ? P->buf + (q++) * bw : NULL;
            memset(P->buf, 0, (size_t)(per * bw) * sizeof(float));
            const sn_dfuse dp = {p[0], p[1], p[2], p[3], p[4], p[5]};
            for (int64_t r = lo; r < hi; r++) {
                fuse_row_F_red(J, r, red + (r - lo) * 6, &F[0]);
                sn_rnorm *ns[3] = {&F->X, &F->Y, &F->O};
                for (int k = 0; k < 3; k++) {
                    ns[k]->gamma = off(ns[k]->gamma, j0);
                    ns[k]->beta = off(ns[k]->beta, j0);
                }
                const frow w = fuse_row(J, r);
                K->fuse_pg(F, n, w.dh + j0, off_row(w.du, j0), w.x + j0, w.y + j0, &dp);
            }
            for (int k = 0; k < 6; k++)
                if (dst[k])
                    for (int64_t j = 0; j < n; j++) dst[k][j0 + j] += p[k][j];
        }
        for (int64_t r = lo; r < hi; r++) {
            fuse_row_F_red(J, r, red + (r - lo) * 6, &F[0]);
            const frow w = fuse_row(J, r);
            K->fuse_dx(F, D, w.dh, w.du, w.x, w.y, out_row(J->dx, r), out_row(J->dy, r), J->accx,
                       J->accy);
        }
    }
}

static void d_fuse_bwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const void *dh,
                       int64_t lddh, const void *du, int64_t lddu, const void *x, int64_t ldx,
                       const void *y, int64_t ldy, const float *params, const float *stats,
                       void *dx, int64_t lddx, void *dy, int64_t lddy, float *dparams,
                       uint32_t flags) {
    fuse_job J;
    memset(&J, 0, sizeof J);
    J.run = job_of_kind(ctx, R, D, D, du ? SN_K_CALL_SUBLAYER : SN_K_CALL_MERGE);
    J.accx = (flags & SN_ACCUMULATE) != 0;
    J.accy = (flags & SN_ACCUMULATE_Y) != 0;
    set_rows_place(&J.run, (const void *const[]){dh, du, x, y, dx, dy},
                   (const int64_t[]){lddh, lddu, ldx, ldy, lddx, lddy}, 6, params);
    set_mem_at(&J.run, R, D, 5 + (du != NULL) + J.accx + J.accy, SN_D_FUSE_NT_MIN_BYTES);
    fuse_job_init(&J, f, params);
    J.dh = (mat_in){dh, lddh};
    J.du = (mat_in){du, lddu};
    J.x = (mat_in){x, ldx};
    J.y = (mat_in){y, ldy};
    J.stats = stats;
    J.dx = (mat_out){dx, lddx};
    J.dy = (mat_out){dy, lddy};
    int64_t npg = 0;
    if (dparams) npg = J.L.np;
    if (npg == 0) {
        run_rows(ctx, &J.run, fuse_bwd_all_task, &J);
        return;
    }
    J.run.dparams = dparams;
    J.run.npg = npg;
    pg_run(ctx, &J.run, &J, fuse_bwd_chunk_task, fuse_bwd_wide);
}

/* ---- elementwise --------------------------------------------------------------------------- */

/* xo = u + z / c, yo = y + z */
typedef struct apply_job {
    job run; /* first: the tasks get the apply_job */
    float c;
    mat_in z, u, y;
    mat_out xo, yo;
} apply_job;

static void apply_task(void *arg, int64_t i) {
    const apply_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    for (int64_t r = lo; r < hi; r++)
        J->run.K->apply(in_row(J->z, r), in_row(J->u, r), in_row(J->y, r), J->c, out_row(J->xo, r),
                        out_row(J->yo, r), row_d(&J->run, r), J->run.nt);
}

static void d_apply(const sn_ctx *ctx, int64_t R, int64_t D, float c, const void *z, int64_t ldz,
                    const void *u, int64_t ldu, const void *y, int64_t ldy, void *xo, int64_t ldxo,
                    void *yo, int64_t ldyo) {
    apply_job J = {job_of(ctx, R, D), c, {z, ldz}, {u, ldu}, {y, ldy}, {xo, ldxo}, {yo, ldyo}};
    flat_view(&J.run, ctx, (int64_t *const[]){&J.z.ld, &J.u.ld, &J.y.ld, &J.xo.ld, &J.yo.ld}, 5);
    set_rows_place(&J.run, (const void *const[]){z, u, y, xo, yo},
                   (const int64_t[]){J.z.ld, J.u.ld, J.y.ld, J.xo.ld, J.yo.ld}, 5, NULL);
    set_mem(&J.run, R, D, 5);
    run_rows(ctx, &J.run, apply_task, &J);
}

/* out = (+= with acc) a + b / c */
typedef struct add_div_job {
    job run; /* first: the tasks get the add_div_job */
    float c;
    mat_in a, b;
    mat_out out;
    int acc;
} add_div_job;

static void add_div_task(void *arg, int64_t i) {
    const add_div_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        J->run.K->add_div(in_row(J->a, r), in_row(J->b, r), J->c, out_row(J->out, r),
                          row_d(&J->run, r), J->acc, J->run.nt);
    }
}

static void d_add_div(const sn_ctx *ctx, int64_t R, int64_t D, const void *a, int64_t lda,
                      const void *b, int64_t ldb, float c, void *out, int64_t ldo, int acc) {
    add_div_job J = {job_of(ctx, R, D), c, {a, lda}, {b, ldb}, {out, ldo}, acc};
    flat_view(&J.run, ctx, (int64_t *const[]){&J.a.ld, &J.b.ld, &J.out.ld}, 3);
    set_rows_place(&J.run, (const void *const[]){a, b, out},
                   (const int64_t[]){J.a.ld, J.b.ld, J.out.ld}, 3, NULL);
    set_mem(&J.run, R, D, 3 + acc);
    run_rows(ctx, &J.run, add_div_task, &J);
}

/* out = alpha * a + b */
typedef struct axpy_job {
    job run; /* first: the tasks get the axpy_job */
    float alpha;
    mat_in a, b;
    mat_out out;
} axpy_job;

static void axpy_task(void *arg, int64_t i) {
    const axpy_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    for (int64_t r = lo; r < hi; r++)
        J->run.K->axpy(in_row(J->a, r), in_row(J->b, r), J->alpha, out_row(J->out, r),
                       row_d(&J->run, r), J->run.nt);
}

static void d_axpy(const sn_ctx *ctx, int64_t R, int64_t D, float alpha, const void *a, int64_t lda,
                   const void *b, int64_t ldb, void *out, int64_t ldo) {
    axpy_job J = {job_of(ctx, R, D), alpha, {a, lda}, {b, ldb}, {out, ldo}};
    flat_view(&J.run, ctx, (int64_t *const[]){&J.a.ld, &J.b.ld, &J.out.ld}, 3);
    set_rows_place(&J.run, (const void *const[]){a, b, out},
                   (const int64_t[]){J.a.ld, J.b.ld, J.out.ld}, 3, NULL);
    set_mem(&J.run, R, D, 3);
    run_rows(ctx, &J.run, axpy_task, &J);
}

/* out = a / c, each element widened, divided in float and rounded (no kernel slot: the
 * SpanNorm backward runs it once per layer). out may equal a. */
typedef struct div_job {
    job run; /* first: the tasks get the div_job */
    float c;
    mat_in a;
    mat_out out;
} div_job;

enum { DIV_CHUNK = 256 };

static void div_task(void *arg, int64_t i) {
    const div_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    float v[DIV_CHUNK];
    for (int64_t r = lo; r < hi; r++)
        for (int64_t j = 0, d = row_d(&J->run, r); j < d; j += DIV_CHUNK) {
            const int64_t n = d - j < DIV_CHUNK ? d - j : DIV_CHUNK;
            J->run.K->widen(in_row(J->a, r) + j, n, v);
            for (int64_t k = 0; k < n; k++) v[k] /= J->c;
            J->run.K->round(v, n, out_row(J->out, r) + j);
        }
}

static void d_div(const sn_ctx *ctx, int64_t R, int64_t D, const void *a, int64_t lda, float c,
                  void *out, int64_t ldo) {
    div_job J = {job_of(ctx, R, D), c, {a, lda}, {out, ldo}};
    flat_view(&J.run, ctx, (int64_t *const[]){&J.a.ld, &J.out.ld}, 2);
    run_rows(ctx, &J.run, div_task, &J);
}

/* out = a */
typedef struct copy_job {
    job run; /* first: the tasks get the copy_job */
    mat_in a;
    mat_out out;
} copy_job;

static void copy_task(void *arg, int64_t i) {
    const copy_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    for (int64_t r = lo; r < hi; r++)
        J->run.K->copy(in_row(J->a, r), out_row(J->out, r), row_d(&J->run, r));
}

static void d_copy(const sn_ctx *ctx, int64_t R, int64_t D, const void *a, int64_t lda, void *out,
                   int64_t ldo) {
    copy_job J = {job_of(ctx, R, D), {a, lda}, {out, ldo}};
    flat_view(&J.run, ctx, (int64_t *const[]){&J.a.ld, &J.out.ld}, 2);
    run_rows(ctx, &J.run, copy_task, &J);
}

/* ---- Hyper-Connections --------------------------------------------------------------------- */

/* Every Hyper-Connections driver is "the rows [lo, hi), with the parameter-gradient slot pg of
 * their chunk or NULL": one function per driver (rows), run by hc_task over the row split and
 * by hc_chunk_task over pg_run's chunks. */
typedef struct hc_job hc_job;
struct hc_job {
    job run; /* first: the tasks get the hc_job */
    void (*rows)(const hc_job *J, int64_t lo, int64_t hi, float *pg);
    const sn_hc_rows *h; /* hc_rows */
    mat_in x;            /* hc_proj, hc_wsum */
    mat_out o;           /* hc_wmix */
    const float *const *w;
    int nw;
    const float *coef; /* hc_wmix, hc_wsum */
    int64_t ldc;
    float *t; /* hc_proj's outputs, hc_tanh's rows */
    int64_t ldt;
};

static void hc_task(void *arg, int64_t i) {
    const hc_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    J->rows(J, lo, hi, NULL);
}

static void hc_chunk_task(void *arg, int64_t i) {
    const hc_job *J = arg;
    int64_t lo, hi;
    float *s = pg_chunk(&J->run, i, &lo, &hi);
    J->rows(J, lo, hi, s);
}

static hc_job hc_job_of(const sn_ctx *ctx, int64_t R, int64_t D,
                        void (*rows)(const hc_job *, int64_t, int64_t, float *)) {
    hc_job J;
    memset(&J, 0, sizeof J);
    J.run = job_of(ctx, R, D);
    J.rows = rows;
    return J;
}

/* rows [lo, hi): the dot products into pg (when non-NULL) and dpr, then the mix */
static void hc_rows_run(const hc_job *J, int64_t lo, int64_t hi, float *pg) {
    const sn_hc_rows *h = J->h;
    const SN_KT *K = J->run.K;
    const int64_t D = J->run.D;
    const SN_T *in[SN_K_HC_MATS], *a[SN_K_HC_MATS], *b[SN_K_HC_MATS];
    SN_T *out[SN_K_HC_MATS];
    float d[SN_K_HC_MATS * SN_K_HC_MATS], w[SN_K_HC_MATS * SN_K_HC_MATS];
    for (int64_t r = lo; r < hi; r++) {
        if (pg || h->dpr) {
            for (int p = 0; p < h->na; p++) a[p] = (const SN_T *)h->a[p] + r * h->lda[p];
            for (int q = 0; q < h->nb; q++) b[q] = (const SN_T *)h->b[q] + r * h->ldb[q];
            memset(d, 0, sizeof d);
            K->hc_dots(a, h->na, b, h->nb, D, d);
            for (int k = 0; pg && k < h->na * h->nb; k++) pg[k] += d[k];
            if (h->dpr) memcpy(h->dpr + r * h->lddpr, d, (size_t)(h->na * h->nb) * sizeof(float));
        }
        if (h->nout > 0) {
            const float *wr = h->w;
            if (h->t) {
                const float *tr = h->t + r * h->ldt;
                for (int q = 0; q < h->nin * h->nout; q++)
                    w[q] = h->tidx[q] < 0 ? h->w[q] : h->w[q] + h->tsc[q] * tr[h->tidx[q]];
                wr = w;
            }
            for (int k = 0; k < h->nin; k++) in[k] = (const SN_T *)h->in[k] + r * h->ldin[k];
            for (int o = 0; o < h->nout; o++) out[o] = (SN_T *)h->out[o] + r * h->ldout[o];
            K->hc_mix(in, h->nin, wr, out, h->nout, D, J->run.nt);
        }
    }
}

/* never reached (a slot of at most SN_K_HC_MATS^2 floats always fits the stack buffer), but
 * correct: the chunks one after another through one slot */
static void hc_rows_wide(void *arg) {
    hc_job *J = arg;
    job *P = &J->run;
    P->c0 = 0;
    for (int64_t lo = 0; lo < P->R; lo += P->C) {
        float s[SN_K_HC_MATS * SN_K_HC_MATS] = {0};
        hc_rows_run(J, lo, lo + P->C < P->R ? lo + P->C : P->R, s);
        for (int64_t k = 0; k < P->npg; k++) P->dparams[k] += s[k];
    }
}

static void d_hc_rows(const sn_ctx *ctx, int64_t R, int64_t D, const sn_hc_rows *h) {
    hc_job J = hc_job_of(ctx, R, D, hc_rows_run);
    J.h = h;
    set_mem(&J.run, R, D, h->nin + h->nout + (h->dp ? h->na + h->nb : 0));
    if (!h->dp) {
        run_rows(ctx, &J.run, hc_task, &J);
        return;
    }
    J.run.dparams = h->dp;
    J.run.npg = (int64_t)h->na * h->nb;
    pg_run(ctx, &J.run, &J, hc_chunk_task, hc_rows_wide);
}

/* dynamic Hyper-Connections: a row matrix against float parameter rows w, and the tanh */
static void hc_proj_rows(const hc_job *J, int64_t lo, int64_t hi, float *pg) {
    (void)pg;
    for (int64_t r = lo; r < hi; r++) {
        float *o = J->t + r * J->ldt;
        for (int c = 0; c < J->nw; c++) o[c] = 0.0f;
        J->run.K->hc_proj(in_row(J->x, r), J->run.D, J->w, J->nw, o);
    }
}

static void d_hc_proj(const sn_ctx *ctx, int64_t R, int64_t D, const void *x, int64_t ldx,
                      const float *const *w, int nw, float *out, int64_t ldo) {
    hc_job J = hc_job_of(ctx, R, D, hc_proj_rows);
    J.x = (mat_in){x, ldx};
    J.w = w, J.nw = nw, J.t = out, J.ldt = ldo;
    run_rows(ctx, &J.run, hc_task, &J);
}

static void hc_wmix_rows(const hc_job *J, int64_t lo, int64_t hi, float *pg) {
    (void)pg;
    for (int64_t r = lo; r < hi; r++)
        J->run.K->hc_wmix(J->w, J->nw, J->coef + r * J->ldc, out_row(J->o, r), J->run.D, J->run.nt);
}

static void d_hc_wmix(const sn_ctx *ctx, int64_t R, int64_t D, const float *const *w, int nw,
                      const float *coef, int64_t ldc, void *out, int64_t ldo) {
    hc_job J = hc_job_of(ctx, R, D, hc_wmix_rows);
    J.o = (mat_out){out, ldo};
    J.w = w, J.nw = nw, J.coef = coef, J.ldc = ldc;
    set_mem(&J.run, R, D, 1);
    run_rows(ctx, &J.run, hc_task, &J);
}

/* the rows [lo, hi) into the nw slot rows of width n starting at pg, columns [j0, j0 + n) */
static void hc_wsum_cols(const hc_job *J, int64_t lo, int64_t hi, int64_t j0, int64_t n, float *pg,
                         int64_t ld) {
    float *dw[SN_K_HC_MATS];
    for (int c = 0; c < J->nw; c++) dw[c] = pg + c * ld;
    for (int64_t r = lo; r < hi; r++)
        J->run.K->hc_wsum(in_row(J->x, r) + j0, n, J->coef + r * J->ldc, J->nw, dw);
}
static void hc_wsum_rows(const hc_job *J, int64_t lo, int64_t hi, float *pg) {
    hc_wsum_cols(J, lo, hi, 0, J->run.D, pg, J->run.D);
}

/* rows too wide for one slot: each chunk in column blocks (the same sums, column by column) */
static void hc_wsum_wide(void *arg) {
    const hc_job *J = arg;
    const job *P = &J->run;
    const int64_t D = P->D, bw = P->nbuf / J->nw / COL_QUANTUM * COL_QUANTUM;
    for (int64_t lo = 0; lo < P->R; lo += P->C) {
        const int64_t hi = lo + P->C < P->R ? lo + P->C : P->R;
        for (int64_t j0 = 0; j0 < D; j0 += bw) {
            const int64_t n = D - j0 < bw ? D - j0 : bw;
            memset(P->buf, 0, (size_t)(J->nw * bw) * sizeof(float));
            hc_wsum_cols(J, lo, hi, j0, n, P->buf, bw);
            for (int c = 0; c < J->nw; c++)
                for (int64_t j = 0; j < n; j++) P->dparams[c * D + j0 + j] += P->buf[c * bw + j];
        }
    }
}

static void d_hc_wsum(const sn_ctx *ctx, int64_t R, int64_t D, const void *x, int64_t ldx,
                      const float *coef, int64_t ldc, int nw, float *dw) {
    hc_job J = hc_job_of(ctx, R, D, hc_wsum_rows);
    J.x = (mat_in){x, ldx};
    J.nw = nw, J.coef = coef, J.ldc = ldc;
    J.run.dparams = dw;
    J.run.npg = nw * D;
    pg_run(ctx, &J.run, &J, hc_chunk_task, hc_wsum_wide);
}

/* tanhf of R rows of n floats, in place (row by row: no bit depends on the split) */
static void hc_tanh_rows(const hc_job *J, int64_t lo, int64_t hi, float *pg) {
    (void)pg;
    for (int64_t r = lo; r < hi; r++)
        for (int64_t q = 0; q < J->run.D; q++) J->t[r * J->ldt + q] = tanhf(J->t[r * J->ldt + q]);
}

static void d_hc_tanh(const sn_ctx *ctx, int64_t R, int64_t n, float *t, int64_t ldt) {
    hc_job J = hc_job_of(ctx, R, n, hc_tanh_rows);
    J.t = t, J.ldt = ldt;
    run_rows(ctx, &J.run, hc_task, &J);
}

/* ---- conversions from and to float matrices ------------------------------------------------ */

/* dst = round(src) (to_t: float rows into SN_T rows) or dst = widen(src) (SN_T rows into float
 * rows), with the kernel table's conversions */
typedef struct convert_job {
    job run; /* first: the tasks get the convert_job */
    const float *f32_in;
    int64_t ld_f32_in;
    mat_out t_out; /* from_f32 */
    mat_in t_in;   /* to_f32 */
    float *f32_out;
    int64_t ld_f32_out;
} convert_job;

static void from_f32_task(void *arg, int64_t i) {
    const convert_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    for (int64_t r = lo; r < hi; r++)
        J->run.K->round(J->f32_in + r * J->ld_f32_in, row_d(&J->run, r), out_row(J->t_out, r));
}

static void to_f32_task(void *arg, int64_t i) {
    const convert_job *J = arg;
    int64_t lo, hi;
    task_rows(&J->run, i, &lo, &hi);
    for (int64_t r = lo; r < hi; r++)
        J->run.K->widen(in_row(J->t_in, r), row_d(&J->run, r), J->f32_out + r * J->ld_f32_out);
}

static void d_from_f32(const sn_ctx *ctx, int64_t R, int64_t D, const float *src, int64_t lds,
                       void *dst, int64_t ldd) {
    convert_job J;
    memset(&J, 0, sizeof J);
    J.run = job_of(ctx, R, D);
    J.f32_in = src, J.ld_f32_in = lds;
    J.t_out = (mat_out){dst, ldd};
    flat_view(&J.run, ctx, (int64_t *const[]){&J.ld_f32_in, &J.t_out.ld}, 2);
    run_rows(ctx, &J.run, from_f32_task, &J);
}

static void d_to_f32(const sn_ctx *ctx, int64_t R, int64_t D, const void *src, int64_t lds,
                     float *dst, int64_t ldd) {
    convert_job J;
    memset(&J, 0, sizeof J);
    J.run = job_of(ctx, R, D);
    J.t_in = (mat_in){src, lds};
    J.f32_out = dst, J.ld_f32_out = ldd;
    flat_view(&J.run, ctx, (int64_t *const[]){&J.t_in.ld, &J.ld_f32_out}, 2);
    run_rows(ctx, &J.run, to_f32_task, &J);
}

const sn_drive SN_DRIVE_TABLE = {
    .norm_fwd = d_norm_fwd,
    .norm_bwd = d_norm_bwd,
    .fuse_fwd = d_fuse_fwd,
    .fuse_bwd = d_fuse_bwd,
    .apply = d_apply,
    .add_div = d_add_div,
    .axpy = d_axpy,
    .div = d_div,
    .copy = d_copy,
    .hc_rows = d_hc_rows,
    .hc_proj = d_hc_proj,
    .hc_wmix = d_hc_wmix,
    .hc_wsum = d_hc_wsum,
    .hc_tanh = d_hc_tanh,
    .from_f32 = d_from_f32,
    .to_f32 = d_to_f32,
};
