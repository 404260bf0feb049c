/* The drivers for an element type chosen at run time (see drive.h): the fp32 drivers (drive.c)
 * or the bf16 ones (drive_bf16.c). The public calls and the placement layer call these. */
#include "drive.h"

void sn_dt_copy(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, const void *a, int64_t lda,
                void *out, int64_t ldo) {
    if (dt == SN_DTYPE_BF16) sn_d16_copy(ctx, R, D, a, lda, out, ldo);
    else sn_d_copy(ctx, R, D, a, lda, out, ldo);
}
void sn_dt_add_div(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, const void *a, int64_t lda,
                   const void *b, int64_t ldb, float c, void *out, int64_t ldo, int acc) {
    if (dt == SN_DTYPE_BF16) sn_d16_add_div(ctx, R, D, a, lda, b, ldb, c, out, ldo, acc);
    else sn_d_add_div(ctx, R, D, a, lda, b, ldb, c, out, ldo, acc);
}
void sn_dt_axpy(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, float alpha, const void *a,
                int64_t lda, const void *b, int64_t ldb, void *out, int64_t ldo) {
    if (dt == SN_DTYPE_BF16) sn_d16_axpy(ctx, R, D, alpha, a, lda, b, ldb, out, ldo);
    else sn_d_axpy(ctx, R, D, alpha, a, lda, b, ldb, out, ldo);
}
void sn_dt_div(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, const void *a, int64_t lda,
               float c, void *out, int64_t ldo) {
    if (dt == SN_DTYPE_BF16) sn_d16_div(ctx, R, D, a, lda, c, out, ldo);
    else sn_d_div(ctx, R, D, a, lda, c, out, ldo);
}
void sn_dt_apply(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, float c, const void *z,
                 int64_t ldz, const void *u, int64_t ldu, const void *y, int64_t ldy, void *xo,
                 int64_t ldxo, void *yo, int64_t ldyo) {
    if (dt == SN_DTYPE_BF16) sn_d16_apply(ctx, R, D, c, z, ldz, u, ldu, y, ldy, xo, ldxo, yo, ldyo);
    else sn_d_apply(ctx, R, D, c, z, ldz, u, ldu, y, ldy, xo, ldxo, yo, ldyo);
}
void sn_dt_norm_fwd(const sn_ctx *ctx, sn_dtype dt, const sn_norm *n, int64_t R, int64_t D,
                    const void *x, int64_t ldx, const float *params, void *out, int64_t ldo,
                    float *stats) {
    if (dt == SN_DTYPE_BF16) sn_d16_norm_fwd(ctx, n, R, D, x, ldx, params, out, ldo, stats);
    else sn_d_norm_fwd(ctx, n, R, D, x, ldx, params, out, ldo, stats);
}
void sn_dt_norm_bwd(const sn_ctx *ctx, sn_dtype dt, const sn_norm *n, int64_t R, int64_t D,
                    const void *dout, int64_t lddo, const void *x, int64_t ldx, const float *params,
                    const float *stats, void *dx, int64_t lddx, float *dparams, int acc) {
    if (dt == SN_DTYPE_BF16)
        sn_d16_norm_bwd(ctx, n, R, D, dout, lddo, x, ldx, params, stats, dx, lddx, dparams, acc);
    else sn_d_norm_bwd(ctx, n, R, D, dout, lddo, x, ldx, params, stats, dx, lddx, dparams, acc);
}
void sn_dt_fuse_fwd(const sn_ctx *ctx, sn_dtype dt, const sn_fuse *f, int64_t R, int64_t D,
                    const void *x, int64_t ldx, const void *y, int64_t ldy, const float *params,
                    void *u, int64_t ldu, void *h, int64_t ldh, float *stats) {
    if (dt == SN_DTYPE_BF16)
        sn_d16_fuse_fwd(ctx, f, R, D, x, ldx, y, ldy, params, u, ldu, h, ldh, stats);
    else sn_d_fuse_fwd(ctx, f, R, D, x, ldx, y, ldy, params, u, ldu, h, ldh, stats);
}
void sn_dt_fuse_bwd(const sn_ctx *ctx, sn_dtype dt, const sn_fuse *f, int64_t R, int64_t D,
                    const void *dh, int64_t lddh, const void *du, int64_t lddu, const void *x,
                    int64_t ldx, const void *y, int64_t ldy, const float *params,
                    const float *stats, void *dx, int64_t lddx, void *dy, int64_t lddy,
                    float *dparams, uint32_t flags) {
    if (dt == SN_DTYPE_BF16)
        sn_d16_fuse_bwd(ctx, f, R, D, dh, lddh, du, lddu, x, ldx, y, ldy, params, stats, dx, lddx,
                        dy, lddy, dparams, flags);
    else
        sn_d_fuse_bwd(ctx, f, R, D, dh, lddh, du, lddu, x, ldx, y, ldy, params, stats, dx, lddx, dy,
                      lddy, dparams, flags);
}
