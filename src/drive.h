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

/* out = a. */
void sn_d_copy(const sn_ctx *ctx, int64_t R, int64_t D, const float *a, int64_t lda, float *out,
               int64_t ldo);

/* Bytes of caller scratch (sn_ctx_set_scratch) with which backward passes of ctx on rows of D
 * columns run their parameter gradients on all of ctx's threads without pausing (see pg_run). */
size_t sn_d_scratch_bytes(const sn_ctx *ctx, int64_t D);

#endif
