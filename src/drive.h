/* Drivers: every loop over the rows of a matrix lives here, so that threading and kernel
 * selection have exactly one place to go. A driver takes validated arguments (the public entry
 * points and the placement layer validate first) and runs the row kernels of kernels.h.
 * Statistics are R rows of spr floats each (spr = the norm's or fuse's stats_per_row). */
#ifndef SN_DRIVE_H
#define SN_DRIVE_H

#include "siamesenorm.h"

/* out = N(x); stats saved when non-NULL. Grouped norms allowed. out may equal x. */
void sn_d_norm_fwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *x,
                   int64_t ldx, const float *params, float *out, int64_t ldo, float *stats);

/* dx (=|+= with acc) N backward of dout; dparams += when non-NULL. dx may equal dout (!acc). */
void sn_d_norm_bwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *dout,
                   int64_t lddo, const float *x, int64_t ldx, const float *params,
                   const float *stats, float *dx, int64_t lddx, float *dparams, int acc);

/* u = N_x(x) (u may be NULL), h = N_out(u + N_y(y)); stats saved when non-NULL. */
void sn_d_fuse_fwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const float *x,
                   int64_t ldx, const float *y, int64_t ldy, const float *params, float *u,
                   int64_t ldu, float *h, int64_t ldh, float *stats);

/* Fuse backward (see sn_fuse_backward); du may be NULL, dx may equal du. */
void sn_d_fuse_bwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const float *dh,
                   int64_t lddh, const float *du, int64_t lddu, const float *x, int64_t ldx,
                   const float *y, int64_t ldy, const float *params, const float *stats, float *dx,
                   int64_t lddx, float *dy, int64_t lddy, float *dparams, uint32_t flags);

/* Shared block apply: xo = u + z / c, yo = y + z, reading z once. xo may equal u, yo y. */
void sn_d_apply(const sn_ctx *ctx, int64_t R, int64_t D, float c, const float *z, int64_t ldz,
                const float *u, int64_t ldu, const float *y, int64_t ldy, float *xo, int64_t ldxo,
                float *yo, int64_t ldyo);

/* out (=|+= with acc) a + b / c. out may equal a or b (!acc). */
void sn_d_add_div(const sn_ctx *ctx, int64_t R, int64_t D, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float c, float *out, int64_t ldo, int acc);

/* out = alpha * a + b. out may equal a or b. */
void sn_d_axpy(const sn_ctx *ctx, int64_t R, int64_t D, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float *out, int64_t ldo);

/* out = a / c (each element divided, as add_div divides). out may equal a. */
void sn_d_div(const sn_ctx *ctx, int64_t R, int64_t D, const float *a, int64_t lda, float c,
              float *out, int64_t ldo);

/* out = a. */
void sn_d_copy(const sn_ctx *ctx, int64_t R, int64_t D, const float *a, int64_t lda, float *out,
               int64_t ldo);

/* Calls whose matrices together span more than this many bytes (a large last-level cache)
 * (both drivers, counting the bytes of their elements) write their outputs with streaming
 * stores where a SIMD path can: such outputs cannot still be
 * in the caches when the next call reads them, and skipping the read-for-ownership of every
 * written line saves a third of a write's traffic. Smaller calls store normally, so that their
 * outputs stay in the cache for the next call (e.g. the block's matmul reading h). */
#define SN_D_NT_MIN_BYTES (40.0 * 1024 * 1024)
/* The fuse and merge calls stream from the size of the last-level cache (32 MiB) up, the other
 * calls from SN_D_NT_MIN_BYTES: between the two, a merge forward is faster streamed and a norm
 * backward with normal stores (docs/performance.md, "Measurements behind the code"). */
#define SN_D_FUSE_NT_MIN_BYTES (32.0 * 1024 * 1024)
/* Software prefetch, in both drivers (bytes counted in the matrices' own elements). Calls
 * spanning more than SN_D_PF_MIN_BYTES (beyond the L2) prefetch their input rows
 * SN_D_PF_AHEAD rows ahead: the row kernels are long enough that the hardware prefetcher alone
 * lets compute and memory take turns. */
#define SN_D_PF_MIN_BYTES (4.0 * 1024 * 1024)
#define SN_D_PF_AHEAD     2
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
/* prefetch a row of `bytes` bytes for writing, into every cache level (SN_D_PF_NEAR) */
void sn_d_prefetch_near(const void *p, int64_t bytes);
/* The widest segments the norm drivers take in pairs (stats2, norm_bwd2), so that two rows'
 * statistics chains overlap (drive.c, norm_fwd_task). */
#define SN_D_NORM_PAIR_MAX_W 128

/* The tasks a call over R rows of D floats is split into: 1 (the calling thread) for small
 * calls and single-threaded contexts, else a few per thread. */
int64_t sn_d_row_pieces(const sn_ctx *ctx, int64_t R, int64_t D);

/* Rows per parameter-gradient chunk for rows of D floats (a function of D only: see pg_run). */
int64_t sn_d_pg_chunk_rows(int64_t D);

/* The parameter gradients of a backward pass over R rows of D columns with the fp32 drivers'
 * scheme (drive.c, pg_run: chunks of sn_d_pg_chunk_rows(D) rows, each folded from zero into a
 * slot of npg floats, the slots added onto dparams in chunk order, so the bits never depend on
 * the threads): fn(arg, lo, hi, slot) does rows [lo, hi) of one chunk, adding their
 * contribution into slot, which it gets zeroed. Returns 0, having done nothing, when not even
 * one slot fits the context's scratch or the stack buffer (the caller then works in column
 * blocks itself). */
typedef void (*sn_d_rows_fn)(void *arg, int64_t lo, int64_t hi, float *slot);
int sn_d_pg_rows(const sn_ctx *ctx, int64_t R, int64_t D, int64_t npg, float *dparams,
                 sn_d_rows_fn fn, void *arg);

/* ---- bf16 matrices (drive_bf16.c) ----
 * The same operations on sn_bf16 matrices, strides in elements: the path's bf16 row kernels
 * (sn_kern16), or where it has none the fp32 row kernels on rows staged in fp32 on the stack,
 * called exactly as in the fp32 drivers (pair kernels where they pair, the parameter-gradient
 * scheme of sn_d_pg_rows). So every bf16 output is the rounding of the fp32 driver's output,
 * and statistics and parameter gradients are the fp32 driver's bits.
 * The norm and fuse drivers need whole rows: D <= SN_D16_ROW_MAX (checked by the callers). */
#define SN_D16_ROW_MAX 4096
void sn_d16_norm_fwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const sn_bf16 *x,
                     int64_t ldx, const float *params, sn_bf16 *out, int64_t ldo, float *stats);
void sn_d16_norm_bwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const sn_bf16 *dout,
                     int64_t lddo, const sn_bf16 *x, int64_t ldx, const float *params,
                     const float *stats, sn_bf16 *dx, int64_t lddx, float *dparams, int acc);
void sn_d16_fuse_fwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const sn_bf16 *x,
                     int64_t ldx, const sn_bf16 *y, int64_t ldy, const float *params, sn_bf16 *u,
                     int64_t ldu, sn_bf16 *h, int64_t ldh, float *stats);
void sn_d16_fuse_bwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const sn_bf16 *dh,
                     int64_t lddh, const sn_bf16 *du, int64_t lddu, const sn_bf16 *x, int64_t ldx,
                     const sn_bf16 *y, int64_t ldy, const float *params, const float *stats,
                     sn_bf16 *dx, int64_t lddx, sn_bf16 *dy, int64_t lddy, float *dparams,
                     uint32_t flags);
void sn_d16_apply(const sn_ctx *ctx, int64_t R, int64_t D, float c, const sn_bf16 *z, int64_t ldz,
                  const sn_bf16 *u, int64_t ldu, const sn_bf16 *y, int64_t ldy, sn_bf16 *xo,
                  int64_t ldxo, sn_bf16 *yo, int64_t ldyo);
void sn_d16_add_div(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *a, int64_t lda,
                    const sn_bf16 *b, int64_t ldb, float c, sn_bf16 *out, int64_t ldo, int acc);
void sn_d16_axpy(const sn_ctx *ctx, int64_t R, int64_t D, float alpha, const sn_bf16 *a,
                 int64_t lda, const sn_bf16 *b, int64_t ldb, sn_bf16 *out, int64_t ldo);
void sn_d16_div(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *a, int64_t lda, float c,
                sn_bf16 *out, int64_t ldo);
void sn_d16_copy(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *a, int64_t lda,
                 sn_bf16 *out, int64_t ldo);
/* conversions: dst = round(src) / dst = widen(src) */
void sn_d16_to_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const float *src, int64_t lds,
                    sn_bf16 *dst, int64_t ldd);
void sn_d16_from_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *src, int64_t lds,
                      float *dst, int64_t ldd);

/* ---- either type (drive_dt.c): the fp32 driver for SN_DTYPE_F32, the bf16 one for
 * SN_DTYPE_BF16, with the matrices as untyped pointers of elements of dt ---- */
void sn_dt_copy(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, const void *a, int64_t lda,
                void *out, int64_t ldo);
void sn_dt_add_div(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, const void *a, int64_t lda,
                   const void *b, int64_t ldb, float c, void *out, int64_t ldo, int acc);
void sn_dt_axpy(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, float alpha, const void *a,
                int64_t lda, const void *b, int64_t ldb, void *out, int64_t ldo);
void sn_dt_div(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, const void *a, int64_t lda,
               float c, void *out, int64_t ldo);
void sn_dt_apply(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, float c, const void *z,
                 int64_t ldz, const void *u, int64_t ldu, const void *y, int64_t ldy, void *xo,
                 int64_t ldxo, void *yo, int64_t ldyo);
void sn_dt_norm_fwd(const sn_ctx *ctx, sn_dtype dt, const sn_norm *n, int64_t R, int64_t D,
                    const void *x, int64_t ldx, const float *params, void *out, int64_t ldo,
                    float *stats);
void sn_dt_norm_bwd(const sn_ctx *ctx, sn_dtype dt, const sn_norm *n, int64_t R, int64_t D,
                    const void *dout, int64_t lddo, const void *x, int64_t ldx, const float *params,
                    const float *stats, void *dx, int64_t lddx, float *dparams, int acc);
void sn_dt_fuse_fwd(const sn_ctx *ctx, sn_dtype dt, const sn_fuse *f, int64_t R, int64_t D,
                    const void *x, int64_t ldx, const void *y, int64_t ldy, const float *params,
                    void *u, int64_t ldu, void *h, int64_t ldh, float *stats);
void sn_dt_fuse_bwd(const sn_ctx *ctx, sn_dtype dt, const sn_fuse *f, int64_t R, int64_t D,
                    const void *dh, int64_t lddh, const void *du, int64_t lddu, const void *x,
                    int64_t ldx, const void *y, int64_t ldy, const float *params,
                    const float *stats, void *dx, int64_t lddx, void *dy, int64_t lddy,
                    float *dparams, uint32_t flags);

/* Bytes of caller scratch (sn_ctx_set_scratch) with which backward passes of ctx on rows of D
 * columns run their parameter gradients on all of ctx's threads without pausing (see pg_run). */
size_t sn_d_scratch_bytes(const sn_ctx *ctx, int64_t D);

#endif
