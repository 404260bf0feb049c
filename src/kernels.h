/* Row kernels: the arithmetic of every primitive, one row (or one group of a row) at a time.
 * Arguments are trusted: the public entry points validate before calling. */
#ifndef SN_KERNELS_H
#define SN_KERNELS_H

#include "siamesenorm.h"

/* One norm resolved for one row, so that a single formula serves every kind:
 *   xhat = (v - m) * r,   out = gamma * xhat + beta,
 *   dv   = r * (g - ca * mean(g) - cb * xhat * mean(g * xhat)),   g = gamma * dout.
 * LayerNorm: m = mean, r = rstd, ca = cb = 1.  RMSNorm: m = 0, r = rstd, ca = 0, cb = 1.
 * Identity: m = 0, r = 1, ca = cb = 0. gamma NULL means 1, beta NULL means 0. */
typedef struct sn_rnorm {
    float m, r, ca, cb;
    const float *gamma;
    const float *beta;
} sn_rnorm;

/* Statistics of one row v of W floats for norm n: *m (0 unless LayerNorm) and *r (rstd, 1 for
 * the identity). LayerNorm is two-pass: mean, then the mean of squared deviations. */
void sn_k_stats(const sn_norm *n, const float *v, int64_t W, float *m, float *r);

/* Resolves norm n of width W with its parameter block (may be NULL) and row statistics. */
sn_rnorm sn_k_resolve(const sn_norm *n, int64_t W, const float *params, float m, float r);

/* Saved statistics of group g of a row whose norm has ng groups (see "Norm stats"). */
void sn_k_stats_put(const sn_norm *n, float *blk, int64_t ng, int64_t g, float m, float r);
void sn_k_stats_get(const sn_norm *n, const float *blk, int64_t ng, int64_t g, float *m, float *r);

/* out[j] = gamma[j] * (v[j] - m) * r + beta[j]. out may equal v. */
void sn_k_norm_row(const sn_rnorm *q, const float *v, int64_t W, float *out);

/* Backward of sn_k_norm_row: dv = (or +=, with acc) the formula above; dgamma += dout * xhat
 * and dbeta += dout when non-NULL. dv may equal dout when !acc. */
void sn_k_norm_bwd_row(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float *dv,
                       int acc, float *dgamma, float *dbeta);

/* Fuse of one row: u = N_x(x) (if u), h = N_out(u + N_y(y)); statistics into the row block
 * stats (if non-NULL) as [N_x | N_y | N_out]. h must not alias x, y or u. */
void sn_k_fuse_fwd_row(const sn_fuse *f, int64_t D, const float *x, const float *y,
                       const float *params, float *u, float *h, float *stats);

/* Fuse backward of one row (see sn_fuse_backward). du may be NULL; dx may equal du. */
void sn_k_fuse_bwd_row(const sn_fuse *f, int64_t D, const float *dh, const float *du,
                       const float *x, const float *y, const float *params, const float *stats,
                       float *dx, float *dy, float *dparams, uint32_t flags);

/* out[j] = a[j] + b[j] / c, or out[j] += that with acc. out may equal a or b when !acc. */
void sn_k_add_div_row(const float *a, const float *b, float c, float *out, int64_t D, int acc);

void sn_k_axpy_row(float alpha, const float *a, const float *b, float *out, int64_t D);
#endif
