/* Drivers: every loop over the rows of a matrix lives here, so that threading and kernel
 * selection have exactly one place to go. A driver takes validated arguments (the public entry
 * points and the placement layer validate first) and runs the row kernels of kernels.h.
 * Statistics are R rows of spr floats each (spr = the norm's or fuse's stats_per_row).
 *
 * One driver source (drive_rows.h) is compiled once per element type (drive_f32.c,
 * drive_bf16.c), each instantiation running its type's kernel table of the context's path and
 * exporting an sn_drive table; sn_dt_* pick the table of the call's element type. Matrices are
 * untyped pointers of elements of that type, strides in elements; parameters, their gradients
 * and statistics are float. Each bf16 output is the rounding of the fp32 driver's output on the
 * widened inputs, and statistics and parameter gradients are the fp32 driver's bits: the same
 * walks call the same slots, whose bf16 versions are the rounding of their fp32 versions. */
#ifndef SN_DRIVE_H
#define SN_DRIVE_H

#include "kernels.h"
#include "siamesenorm.h"

/* Hyper-Connections' row work (the kernel slots hc_dots and hc_mix), one call over R rows: for
 * each row, first (dp non-NULL) the dot products of rows a[p] and b[q], summed over the rows
 * into dp[p * nb + q] (accumulated, by the parameter-gradient chunks of every backward), then
 * (nout > 0) the mix out[o] = sum_k w[o * nin + k] in[k] (out[o] may equal any in[k]). Each
 * matrix has its own row stride (in elements). */
typedef struct sn_hc_rows {
    int nin, nout, na, nb;
    const void *in[SN_K_HC_MATS];
    int64_t ldin[SN_K_HC_MATS];
    void *out[SN_K_HC_MATS];
    int64_t ldout[SN_K_HC_MATS];
    const float *w; /* nout x nin */
    const void *a[SN_K_HC_MATS];
    int64_t lda[SN_K_HC_MATS];
    const void *b[SN_K_HC_MATS];
    int64_t ldb[SN_K_HC_MATS];
    float *dp; /* na x nb, accumulated; NULL: no dot products */
    /* dynamic Hyper-Connections: row r's weights are w[q] + tsc[q] * t[r * ldt + tidx[q]]
     * (tidx[q] < 0: w[q] alone) when t is non-NULL; row r's dot products are also written to
     * dpr + r * lddpr when dpr is non-NULL */
    const float *t;
    int64_t ldt;
    const int *tidx;
    const float *tsc;
    float *dpr;
    int64_t lddpr;
} sn_hc_rows;

typedef struct sn_drive {
    /* out = N(x); stats saved when non-NULL. Grouped norms allowed. out may equal x. */
    void (*norm_fwd)(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const void *x,
                     int64_t ldx, const float *params, void *out, int64_t ldo, float *stats);
    /* dx (=|+= with acc) N backward of dout; dparams += when non-NULL. dx may equal dout
     * (!acc). */
    void (*norm_bwd)(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const void *dout,
                     int64_t lddo, const void *x, int64_t ldx, const float *params,
                     const float *stats, void *dx, int64_t lddx, float *dparams, int acc);
    /* u = N_x(x) (u may be NULL), h = N_out(u + N_y(y)); stats saved when non-NULL. */
    void (*fuse_fwd)(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const void *x,
                     int64_t ldx, const void *y, int64_t ldy, const float *params, void *u,
                     int64_t ldu, void *h, int64_t ldh, float *stats);
    /* Fuse backward (see sn_fuse_backward); du may be NULL, dx may equal du. */
    void (*fuse_bwd)(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const void *dh,
                     int64_t lddh, const void *du, int64_t lddu, const void *x, int64_t ldx,
                     const void *y, int64_t ldy, const float *params, const float *stats, void *dx,
                     int64_t lddx, void *dy, int64_t lddy, float *dparams, uint32_t flags);
    /* Shared block apply: xo = u + z / c, yo = y + z, reading z once. xo may equal u, yo y. */
    void (*apply)(const sn_ctx *ctx, int64_t R, int64_t D, float c, const void *z, int64_t ldz,
                  const void *u, int64_t ldu, const void *y, int64_t ldy, void *xo, int64_t ldxo,
                  void *yo, int64_t ldyo);
    /* out (=|+= with acc) a + b / c. out may equal a or b (!acc). */
    void (*add_div)(const sn_ctx *ctx, int64_t R, int64_t D, const void *a, int64_t lda,
                    const void *b, int64_t ldb, float c, void *out, int64_t ldo, int acc);
    /* out = alpha * a + b. out may equal a or b. */
    void (*axpy)(const sn_ctx *ctx, int64_t R, int64_t D, float alpha, const void *a, int64_t lda,
                 const void *b, int64_t ldb, void *out, int64_t ldo);
    /* out = a / c, each element divided in float. out may equal a. */
    void (*div)(const sn_ctx *ctx, int64_t R, int64_t D, const void *a, int64_t lda, float c,
                void *out, int64_t ldo);
    /* Hyper-Connections' rows (see sn_hc_rows). */
    void (*hc_rows)(const sn_ctx *ctx, int64_t R, int64_t D, const sn_hc_rows *h);
    /* Dynamic Hyper-Connections, with nw <= SN_K_HC_MATS float parameter rows w[c] of D:
     *   hc_proj  out[r * ldo + c] = the dot product of row r of x and w[c] (written)
     *   hc_wmix  row r of out = sum_c coef[r * ldc + c] w[c]
     *   hc_wsum  dw[c * D + j] += sum over the rows of coef[r * ldc + c] x[r][j] (the
     *            parameter-gradient chunks of every backward; dw: nw consecutive rows of D) */
    void (*hc_proj)(const sn_ctx *ctx, int64_t R, int64_t D, const void *x, int64_t ldx,
                    const float *const *w, int nw, float *out, int64_t ldo);
    void (*hc_wmix)(const sn_ctx *ctx, int64_t R, int64_t D, const float *const *w, int nw,
                    const float *coef, int64_t ldc, void *out, int64_t ldo);
    void (*hc_wsum)(const sn_ctx *ctx, int64_t R, int64_t D, const void *x, int64_t ldx,
                    const float *coef, int64_t ldc, int nw, float *dw);
    /*   hc_tanh  t[r * ldt + q] = tanhf(t[r * ldt + q]) for q < n (float rows, in place) */
    void (*hc_tanh)(const sn_ctx *ctx, int64_t R, int64_t n, float *t, int64_t ldt);
    /* out = a (the type's copy: see the kernel tables' copy). */
    void (*copy)(const sn_ctx *ctx, int64_t R, int64_t D, const void *a, int64_t lda, void *out,
                 int64_t ldo);
    /* conversions from and to float matrices: dst = round(src) / dst = widen(src) (fp32:
     * copies) */
    void (*from_f32)(const sn_ctx *ctx, int64_t R, int64_t D, const float *src, int64_t lds,
                     void *dst, int64_t ldd);
    void (*to_f32)(const sn_ctx *ctx, int64_t R, int64_t D, const void *src, int64_t lds,
                   float *dst, int64_t ldd);
} sn_drive;

extern const sn_drive sn_drive_f32, sn_drive_bf16;

/* the drivers of each element type, by sn_dtype (drive.c) */
extern const sn_drive *const sn_drives[SN_DTYPE_COUNT];
static inline const sn_drive *sn_drive_of(sn_dtype dt) { return sn_drives[dt]; }

/* The calls of the placement layer and the entry points: dt's driver. */
#define sn_dt_norm_fwd(ctx, dt, ...) sn_drive_of(dt)->norm_fwd(ctx, __VA_ARGS__)
#define sn_dt_norm_bwd(ctx, dt, ...) sn_drive_of(dt)->norm_bwd(ctx, __VA_ARGS__)
#define sn_dt_fuse_fwd(ctx, dt, ...) sn_drive_of(dt)->fuse_fwd(ctx, __VA_ARGS__)
#define sn_dt_fuse_bwd(ctx, dt, ...) sn_drive_of(dt)->fuse_bwd(ctx, __VA_ARGS__)
#define sn_dt_apply(ctx, dt, ...)    sn_drive_of(dt)->apply(ctx, __VA_ARGS__)
#define sn_dt_add_div(ctx, dt, ...)  sn_drive_of(dt)->add_div(ctx, __VA_ARGS__)
#define sn_dt_axpy(ctx, dt, ...)     sn_drive_of(dt)->axpy(ctx, __VA_ARGS__)
#define sn_dt_div(ctx, dt, ...)      sn_drive_of(dt)->div(ctx, __VA_ARGS__)
#define sn_dt_copy(ctx, dt, ...)     sn_drive_of(dt)->copy(ctx, __VA_ARGS__)
#define sn_dt_hc_rows(ctx, dt, ...)  sn_drive_of(dt)->hc_rows(ctx, __VA_ARGS__)
#define sn_dt_hc_proj(ctx, dt, ...)  sn_drive_of(dt)->hc_proj(ctx, __VA_ARGS__)
#define sn_dt_hc_wmix(ctx, dt, ...)  sn_drive_of(dt)->hc_wmix(ctx, __VA_ARGS__)
#define sn_dt_hc_wsum(ctx, dt, ...)  sn_drive_of(dt)->hc_wsum(ctx, __VA_ARGS__)
#define sn_dt_hc_tanh(ctx, dt, ...)  sn_drive_of(dt)->hc_tanh(ctx, __VA_ARGS__)

/* Calls whose matrices together span more than this many bytes (a large last-level cache)
 * (counting the bytes of their elements) write their outputs with streaming
 * stores where a SIMD path can: such outputs cannot still be
 * in the caches when the next call reads them, and skipping the read-for-ownership of every
 * written line saves a third of a write's traffic. Smaller calls store normally, so that their
 * outputs stay in the cache for the next call (e.g. the block's matmul reading h). */
#define SN_D_NT_MIN_BYTES (40.0 * 1024 * 1024)
/* The fuse and merge calls stream from the size of the last-level cache (32 MiB) up, the other
 * calls from SN_D_NT_MIN_BYTES: between the two, a merge forward is faster streamed and a norm
 * backward with normal stores (docs/performance.md, "Measurements behind the code"). */
#define SN_D_FUSE_NT_MIN_BYTES (32.0 * 1024 * 1024)
/* Software prefetch (bytes counted in the matrices' own elements). Calls
 * spanning more than SN_D_PF_MIN_BYTES (beyond the L2) prefetch their input rows
 * SN_D_PF_AHEAD rows ahead: the row kernels are long enough that the hardware prefetcher alone
 * lets compute and memory take turns. */
#define SN_D_PF_MIN_BYTES (4.0 * 1024 * 1024)
#define SN_D_PF_AHEAD     2
/* The size tiers of auto's tables (kernels.h, SN_K_PLACE_*): calls whose matrices span more
 * than SN_D_PAST_L2_MIN_BYTES (past one core's L2, 2 MiB on Sapphire and Emerald Rapids) are of
 * tier 1, those beyond SN_D_FAR_MIN_BYTES of tier 2, and streamed calls (nt) of tier 3. Where
 * the faster path of the norm backward changes with the size (docs/performance.md, "Size
 * tiers"); nothing but auto's choice of tables follows from them. */
#define SN_D_PAST_L2_MIN_BYTES (3.0 * 1024 * 1024)
#define SN_D_FAR_MIN_BYTES     (8.0 * 1024 * 1024)
/* Calls below SN_D_PF_MIN_BYTES still meet lines that left the caches since they were last
 * touched: in a trainer the fuse forward's outputs (u, h) and the fuse backward's x and y were
 * last used a whole pass earlier, with the block's matrix products in between. The fuse drivers
 * touch those rows SN_D_PF_NEAR rows ahead (for writing), so that the misses overlap the row
 * kernels (measurements: docs/performance.md, "Measurements behind the code"). */
#define SN_D_PF_NEAR 4
/* Fuse forward calls over more than this many bytes have the pair kernel spread its prefetches
 * over a sweep (sn_rfuse.pf); smaller ones, whose rows are mostly in the L3, prefetch in the
 * driver, at once (docs/performance.md, "Measurements behind the code"). */
#define SN_D_FUSE_PF_SPREAD_MIN_BYTES (16.0 * 1024 * 1024)
/* prefetch (prefetcht1) a row of `bytes` bytes at once */
void sn_d_prefetch_row(const void *p, int64_t bytes);
/* prefetch a row of `bytes` bytes for writing, into every cache level (SN_D_PF_NEAR); inline:
 * the drivers call it for a few rows a row, where a call's own instructions counted */
static inline void sn_d_prefetch_near(const void *p, int64_t bytes) {
#if defined(__GNUC__)
    const char *c = p;
    int64_t b = 0;
    for (; b + 512 <= bytes; b += 512) /* eight lines a step: fewer loop instructions */
        for (int i = 0; i < 512; i += 64) __builtin_prefetch(c + b + i, 1, 3);
    for (; b < bytes; b += 64) __builtin_prefetch(c + b, 1, 3);
#else
    (void)p;
    (void)bytes;
#endif
}

/* The widest segments the norm drivers take in pairs (stats2, norm_bwd2) in every call, so that
 * two rows' statistics chains overlap (drive_rows.h, norm_pairs); up to the kernel table's
 * pair_w_fwd and pair_w_bwd in calls over at most SN_D_NORM_PAIR_MAX_BYTES (beyond about 10 MB
 * paired rows took more time: docs/performance.md, "Norm rows in pairs"). */
#define SN_D_NORM_PAIR_MAX_W     128
#define SN_D_NORM_PAIR_MAX_BYTES (8.0 * 1024 * 1024)

/* Calls with fewer elements stay on the calling thread. */
#define SN_D_GRAIN 16384
/* Columns are split in multiples of 16 floats (one 64-byte cache line). */
#define SN_D_COL_QUANTUM 16
/* The parameter-gradient chunks (drive_rows.h, pg_run): rows per chunk from the elements per
 * chunk, at most SN_D_PG_CHUNK_MAX; the stack buffer of the slots; slots per thread of the
 * scratch a context asks for. */
#define SN_D_PG_CHUNK_ELEMS      16384
#define SN_D_PG_CHUNK_MAX        256
#define SN_D_PG_STACK_FLOATS     16384 /* 64 KiB */
#define SN_D_PG_SLOTS_PER_THREAD 8

/* The tasks a call over R rows of D elements is split into: 1 (the calling thread) for small
 * calls and single-threaded contexts, else a few per thread. */
int64_t sn_d_row_pieces(const sn_ctx *ctx, int64_t R, int64_t D);

/* Rows per parameter-gradient chunk for rows of D columns (a function of D only: see pg_run). */
int64_t sn_d_pg_chunk_rows(int64_t D);

/* floats of a parameter-gradient slot of npg floats: whole cache lines */
static inline int64_t sn_d_pg_slot_floats(int64_t npg) {
    return (npg + SN_D_COL_QUANTUM - 1) / SN_D_COL_QUANTUM * SN_D_COL_QUANTUM;
}

/* Bytes of caller scratch (sn_ctx_set_scratch) with which backward passes of ctx on rows of D
 * columns run their parameter gradients on all of ctx's threads without pausing (see pg_run). */
size_t sn_d_scratch_bytes(const sn_ctx *ctx, int64_t D);

#endif
