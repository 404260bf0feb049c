/* Public shared block apply and stream split: the elementwise parts of SiameseNorm. */
#include "check.h"
#include "drive.h"
#include "finite.h"

/* Common checks of an elementwise call over R x D views. */
static sn_status check_views(int64_t R, int64_t D, const float *const *p, const int64_t *ld,
                             int n) {
    sn_status st = sn_check_dims(R, D);
    for (int i = 0; i < n && st == SN_OK; i++) st = sn_check_mat(p[i], R, D, ld[i]);
    return st;
}

sn_status sn_apply_forward(const sn_ctx *ctx, int64_t R, int64_t D, float c, const float *z,
                           int64_t ldz, const float *u, int64_t ldu, const float *y, int64_t ldy,
                           float *xo, int64_t ldxo, float *yo, int64_t ldyo) {
    const float *p[] = {z, u, y, xo, yo};
    const int64_t ld[] = {ldz, ldu, ldy, ldxo, ldyo};
    sn_status st = check_views(R, D, p, ld, 5);
    if (st == SN_OK) st = sn_check_scale(c);
    if (st != SN_OK) return st;
    const sn_buf bufs[] = {
        sn_mat_buf(z, R, D, ldz, 0, 0),         sn_mat_buf(u, R, D, ldu, 0, 0),
        sn_mat_buf(y, R, D, ldy, 0, 0),         sn_mat_buf(xo, R, D, ldxo, 1, 1u << 1),
        sn_mat_buf(yo, R, D, ldyo, 1, 1u << 2),
    };
    st = sn_check_alias(bufs, 5);
    if (st == SN_OK) st = sn_check_inputs(ctx, R, D, p, ld, 3, NULL, 0);
    if (st != SN_OK) return st;
    sn_d_apply(ctx, R, D, c, z, ldz, u, ldu, y, ldy, xo, ldxo, yo, ldyo);
    return SN_OK;
}

sn_status sn_apply_backward(const sn_ctx *ctx, int64_t R, int64_t D, float c, const float *dxo,
                            int64_t lddxo, const float *dyo, int64_t lddyo, float *dz, int64_t lddz,
                            uint32_t flags) {
    const float *p[] = {dxo, dyo, dz};
    const int64_t ld[] = {lddxo, lddyo, lddz};
    sn_status st = check_views(R, D, p, ld, 3);
    if (st == SN_OK) st = sn_check_scale(c);
    if (st != SN_OK) return st;
    if (flags & ~SN_ACCUMULATE) return SN_ERR_FLAGS;
    const int acc = (flags & SN_ACCUMULATE) != 0;
    const sn_buf bufs[] = {
        sn_mat_buf(dxo, R, D, lddxo, 0, 0),
        sn_mat_buf(dyo, R, D, lddyo, 0, 0),
        sn_mat_buf(dz, R, D, lddz, 1, acc ? 0 : 3u),
    };
    st = sn_check_alias(bufs, 3);
    if (st == SN_OK) st = sn_check_inputs(ctx, R, D, p, ld, 2, NULL, 0);
    if (st != SN_OK) return st;
    sn_d_add_div(ctx, R, D, dyo, lddyo, dxo, lddxo, c, dz, lddz, acc);
    return SN_OK;
}

sn_status sn_split_forward(const sn_ctx *ctx, int64_t R, int64_t D, const float *e, int64_t lde,
                           float *x, int64_t ldx, float *y, int64_t ldy) {
    const float *p[] = {e, x, y};
    const int64_t ld[] = {lde, ldx, ldy};
    sn_status st = check_views(R, D, p, ld, 3);
    if (st != SN_OK) return st;
    const sn_buf bufs[] = {
        sn_mat_buf(e, R, D, lde, 0, 0),
        sn_mat_buf(x, R, D, ldx, 1, 1u << 0),
        sn_mat_buf(y, R, D, ldy, 1, 0),
    };
    st = sn_check_alias(bufs, 3);
    if (st == SN_OK) st = sn_check_inputs(ctx, R, D, p, ld, 1, NULL, 0);
    if (st != SN_OK) return st;
    sn_d_copy(ctx, R, D, e, lde, y, ldy); /* y first: x may be e itself */
    sn_d_copy(ctx, R, D, e, lde, x, ldx);
    return SN_OK;
}

sn_status sn_split_backward(const sn_ctx *ctx, int64_t R, int64_t D, const float *dx, int64_t lddx,
                            const float *dy, int64_t lddy, float *de, int64_t ldde,
                            uint32_t flags) {
    const float *p[] = {dx, dy, de};
    const int64_t ld[] = {lddx, lddy, ldde};
    sn_status st = check_views(R, D, p, ld, 3);
    if (st != SN_OK) return st;
    if (flags & ~SN_ACCUMULATE) return SN_ERR_FLAGS;
    const int acc = (flags & SN_ACCUMULATE) != 0;
    const sn_buf bufs[] = {
        sn_mat_buf(dx, R, D, lddx, 0, 0),
        sn_mat_buf(dy, R, D, lddy, 0, 0),
        sn_mat_buf(de, R, D, ldde, 1, acc ? 0 : 3u),
    };
    st = sn_check_alias(bufs, 3);
    if (st == SN_OK) st = sn_check_inputs(ctx, R, D, p, ld, 2, NULL, 0);
    if (st != SN_OK) return st;
    sn_d_add_div(ctx, R, D, dx, lddx, dy, lddy, 1.0f, de, ldde, acc);
    return SN_OK;
}
