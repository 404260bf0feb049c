/* Public shared block apply and stream split: the elementwise parts of SiameseNorm. The fp32 and
 * bf16 calls share one implementation each: dt is the element type of the matrices. */
#include "check.h"
#include "drive.h"
#include "finite.h"

/* Common checks of an elementwise call over R x D views. */
static sn_status check_views(sn_dtype dt, int64_t R, int64_t D, const void *const *p,
                             const int64_t *ld, int n) {
    sn_status st = sn_check_dims(R, D);
    for (int i = 0; i < n && st == SN_OK; i++) st = sn_check_mat_dt(p[i], R, D, ld[i], dt);
    return st;
}

static sn_status apply_forward(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, float c,
                               const void *z, int64_t ldz, const void *u, int64_t ldu,
                               const void *y, int64_t ldy, void *xo, int64_t ldxo, void *yo,
                               int64_t ldyo) {
    const void *p[] = {z, u, y, xo, yo};
    const int64_t ld[] = {ldz, ldu, ldy, ldxo, ldyo};
    sn_status st = check_views(dt, R, D, p, ld, 5);
    if (st == SN_OK) st = sn_check_scale(c);
    if (st != SN_OK) return st;
    const sn_buf bufs[] = {
        sn_mat_buf_dt(z, R, D, ldz, dt, 0, 0),
        sn_mat_buf_dt(u, R, D, ldu, dt, 0, 0),
        sn_mat_buf_dt(y, R, D, ldy, dt, 0, 0),
        sn_mat_buf_dt(xo, R, D, ldxo, dt, 1, 1u << 1),
        sn_mat_buf_dt(yo, R, D, ldyo, dt, 1, 1u << 2),
    };
    st = sn_check_alias(bufs, 5);
    if (st == SN_OK) st = sn_check_inputs_dt(ctx, dt, R, D, p, ld, 3, NULL, 0);
    if (st != SN_OK) return st;
    sn_dt_apply(ctx, dt, R, D, c, z, ldz, u, ldu, y, ldy, xo, ldxo, yo, ldyo);
    return SN_OK;
}

static sn_status apply_backward(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, float c,
                                const void *dxo, int64_t lddxo, const void *dyo, int64_t lddyo,
                                void *dz, int64_t lddz, uint32_t flags) {
    const void *p[] = {dxo, dyo, dz};
    const int64_t ld[] = {lddxo, lddyo, lddz};
    sn_status st = check_views(dt, R, D, p, ld, 3);
    if (st == SN_OK) st = sn_check_scale(c);
    if (st != SN_OK) return st;
    if (flags & ~SN_ACCUMULATE) return SN_ERR_FLAGS;
    const int acc = (flags & SN_ACCUMULATE) != 0;
    const sn_buf bufs[] = {
        sn_mat_buf_dt(dxo, R, D, lddxo, dt, 0, 0),
        sn_mat_buf_dt(dyo, R, D, lddyo, dt, 0, 0),
        sn_mat_buf_dt(dz, R, D, lddz, dt, 1, acc ? 0 : 3u),
    };
    st = sn_check_alias(bufs, 3);
    if (st == SN_OK) st = sn_check_inputs_dt(ctx, dt, R, D, p, ld, 2, NULL, 0);
    if (st != SN_OK) return st;
    sn_dt_add_div(ctx, dt, R, D, dyo, lddyo, dxo, lddxo, c, dz, lddz, acc);
    return SN_OK;
}

static sn_status split_forward(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D, const void *e,
                               int64_t lde, void *x, int64_t ldx, void *y, int64_t ldy) {
    const void *p[] = {e, x, y};
    const int64_t ld[] = {lde, ldx, ldy};
    sn_status st = check_views(dt, R, D, p, ld, 3);
    if (st != SN_OK) return st;
    const sn_buf bufs[] = {
        sn_mat_buf_dt(e, R, D, lde, dt, 0, 0),
        sn_mat_buf_dt(x, R, D, ldx, dt, 1, 1u << 0),
        sn_mat_buf_dt(y, R, D, ldy, dt, 1, 0),
    };
    st = sn_check_alias(bufs, 3);
    if (st == SN_OK) st = sn_check_inputs_dt(ctx, dt, R, D, p, ld, 1, NULL, 0);
    if (st != SN_OK) return st;
    sn_dt_copy(ctx, dt, R, D, e, lde, y, ldy); /* y first: x may be e itself */
    sn_dt_copy(ctx, dt, R, D, e, lde, x, ldx);
    return SN_OK;
}

static sn_status split_backward(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D,
                                const void *dx, int64_t lddx, const void *dy, int64_t lddy,
                                void *de, int64_t ldde, uint32_t flags) {
    const void *p[] = {dx, dy, de};
    const int64_t ld[] = {lddx, lddy, ldde};
    sn_status st = check_views(dt, R, D, p, ld, 3);
    if (st != SN_OK) return st;
    if (flags & ~SN_ACCUMULATE) return SN_ERR_FLAGS;
    const int acc = (flags & SN_ACCUMULATE) != 0;
    const sn_buf bufs[] = {
        sn_mat_buf_dt(dx, R, D, lddx, dt, 0, 0),
        sn_mat_buf_dt(dy, R, D, lddy, dt, 0, 0),
        sn_mat_buf_dt(de, R, D, ldde, dt, 1, acc ? 0 : 3u),
    };
    st = sn_check_alias(bufs, 3);
    if (st == SN_OK) st = sn_check_inputs_dt(ctx, dt, R, D, p, ld, 2, NULL, 0);
    if (st != SN_OK) return st;
    sn_dt_add_div(ctx, dt, R, D, dx, lddx, dy, lddy, 1.0f, de, ldde, acc);
    return SN_OK;
}

sn_status sn_apply_forward(const sn_ctx *ctx, int64_t R, int64_t D, float c, const float *z,
                           int64_t ldz, const float *u, int64_t ldu, const float *y, int64_t ldy,
                           float *xo, int64_t ldxo, float *yo, int64_t ldyo) {
    return apply_forward(ctx, SN_DTYPE_F32, R, D, c, z, ldz, u, ldu, y, ldy, xo, ldxo, yo, ldyo);
}

sn_status sn_apply_forward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, float c, const sn_bf16 *z,
                                int64_t ldz, const sn_bf16 *u, int64_t ldu, const sn_bf16 *y,
                                int64_t ldy, sn_bf16 *xo, int64_t ldxo, sn_bf16 *yo, int64_t ldyo) {
    return apply_forward(ctx, SN_DTYPE_BF16, R, D, c, z, ldz, u, ldu, y, ldy, xo, ldxo, yo, ldyo);
}

sn_status sn_apply_backward(const sn_ctx *ctx, int64_t R, int64_t D, float c, const float *dxo,
                            int64_t lddxo, const float *dyo, int64_t lddyo, float *dz, int64_t lddz,
                            uint32_t flags) {
    return apply_backward(ctx, SN_DTYPE_F32, R, D, c, dxo, lddxo, dyo, lddyo, dz, lddz, flags);
}

sn_status sn_apply_backward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, float c,
                                 const sn_bf16 *dxo, int64_t lddxo, const sn_bf16 *dyo,
                                 int64_t lddyo, sn_bf16 *dz, int64_t lddz, uint32_t flags) {
    return apply_backward(ctx, SN_DTYPE_BF16, R, D, c, dxo, lddxo, dyo, lddyo, dz, lddz, flags);
}

sn_status sn_split_forward(const sn_ctx *ctx, int64_t R, int64_t D, const float *e, int64_t lde,
                           float *x, int64_t ldx, float *y, int64_t ldy) {
    return split_forward(ctx, SN_DTYPE_F32, R, D, e, lde, x, ldx, y, ldy);
}

sn_status sn_split_forward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *e,
                                int64_t lde, sn_bf16 *x, int64_t ldx, sn_bf16 *y, int64_t ldy) {
    return split_forward(ctx, SN_DTYPE_BF16, R, D, e, lde, x, ldx, y, ldy);
}

sn_status sn_split_backward(const sn_ctx *ctx, int64_t R, int64_t D, const float *dx, int64_t lddx,
                            const float *dy, int64_t lddy, float *de, int64_t ldde,
                            uint32_t flags) {
    return split_backward(ctx, SN_DTYPE_F32, R, D, dx, lddx, dy, lddy, de, ldde, flags);
}

sn_status sn_split_backward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *dx,
                                 int64_t lddx, const sn_bf16 *dy, int64_t lddy, sn_bf16 *de,
                                 int64_t ldde, uint32_t flags) {
    return split_backward(ctx, SN_DTYPE_BF16, R, D, dx, lddx, dy, lddy, de, ldde, flags);
}
