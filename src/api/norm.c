/* Public norm entry points: LayerNorm / RMSNorm / identity, whole rows or groups of columns. */
#include "check.h"
#include "drive.h"
#include "finite.h"

sn_status sn_norm_query(const sn_norm *n, int64_t D, int64_t *n_params, int64_t *stats_per_row) {
    if (!n) return SN_ERR_NULL;
    sn_status st = sn_check_dims(1, D);
    if (st == SN_OK) st = sn_check_norm(n, D, 1);
    if (st != SN_OK) return st;
    if (n_params) *n_params = sn_norm_nparams(n, D);
    if (stats_per_row) *stats_per_row = sn_norm_spr(n, D);
    return SN_OK;
}

sn_status sn_norm_init_params(const sn_norm *n, int64_t D, float *params) {
    int64_t np;
    sn_status st = sn_norm_query(n, D, &np, NULL);
    if (st != SN_OK) return st;
    if (np > 0 && !params) return SN_ERR_NULL;
    if ((uintptr_t)params % sizeof(float)) return SN_ERR_ALIGN;
    int64_t W = n->group ? n->group : D;
    for (int64_t j = 0; j < np; j++) params[j] = j < W ? 1.0f : 0.0f;
    return SN_OK;
}

/* The fp32 and bf16 calls share one implementation: dt is the element type of the matrices. */
static sn_status norm_forward(const sn_ctx *ctx, sn_dtype dt, const sn_norm *n, int64_t R,
                              int64_t D, const void *x, int64_t ldx, const float *params, void *out,
                              int64_t ldo, float *stats) {
    if (!n) return SN_ERR_NULL;
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_norm(n, D, 1);
    if (st == SN_OK) st = sn_check_mat_dt(x, R, D, ldx, dt);
    if (st == SN_OK) st = sn_check_mat_dt(out, R, D, ldo, dt);
    if (st != SN_OK) return st;
    const int64_t np = sn_norm_nparams(n, D), spr = sn_norm_spr(n, D);
    if (np > 0 && !params) return SN_ERR_NULL;
    const sn_buf bufs[] = {
        sn_mat_buf_dt(x, R, D, ldx, dt, 0, 0),
        sn_vec_buf(params, np, 0),
        sn_mat_buf_dt(out, R, D, ldo, dt, 1, 1u << 0),
        sn_vec_buf(stats, R * spr, 1),
    };
    st = sn_check_alias(bufs, 4);
    if (st == SN_OK) st = sn_check_row_dt(D, dt);
    if (st != SN_OK) return st;
    const void *in[] = {x};
    const int64_t ldin[] = {ldx};
    st = sn_check_inputs_dt(ctx, dt, R, D, in, ldin, 1, params, np);
    if (st != SN_OK) return st;

    sn_dt_norm_fwd(ctx, dt, n, R, D, x, ldx, params, out, ldo, stats);
    return SN_OK;
}

static sn_status norm_backward(const sn_ctx *ctx, sn_dtype dt, const sn_norm *n, int64_t R,
                               int64_t D, const void *dout, int64_t lddo, const void *x,
                               int64_t ldx, const float *params, const float *stats, void *dx,
                               int64_t lddx, float *dparams, uint32_t flags) {
    if (!n) return SN_ERR_NULL;
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_norm(n, D, 1);
    if (st == SN_OK) st = sn_check_mat_dt(dout, R, D, lddo, dt);
    if (st == SN_OK) st = sn_check_mat_dt(x, R, D, ldx, dt);
    if (st == SN_OK) st = sn_check_mat_dt(dx, R, D, lddx, dt);
    if (st != SN_OK) return st;
    if (flags & ~SN_ACCUMULATE) return SN_ERR_FLAGS;
    const int64_t np = sn_norm_nparams(n, D), spr = sn_norm_spr(n, D);
    if ((np > 0 && !params) || (spr > 0 && !stats)) return SN_ERR_NULL;
    const int acc = (flags & SN_ACCUMULATE) != 0;
    const sn_buf bufs[] = {
        sn_mat_buf_dt(dout, R, D, lddo, dt, 0, 0),
        sn_mat_buf_dt(x, R, D, ldx, dt, 0, 0),
        sn_vec_buf(params, np, 0),
        sn_vec_buf(stats, R * spr, 0),
        sn_mat_buf_dt(dx, R, D, lddx, dt, 1, acc ? 0 : 1u << 0),
        sn_vec_buf(dparams, np, 1),
    };
    st = sn_check_alias(bufs, 6);
    if (st == SN_OK) st = sn_check_row_dt(D, dt);
    if (st != SN_OK) return st;
    const void *in[] = {dout, x};
    const int64_t ldin[] = {lddo, ldx};
    st = sn_check_inputs_dt(ctx, dt, R, D, in, ldin, 2, params, np);
    if (st != SN_OK) return st;

    sn_dt_norm_bwd(ctx, dt, n, R, D, dout, lddo, x, ldx, params, stats, dx, lddx,
                   np ? dparams : NULL, acc);
    return SN_OK;
}

sn_status sn_norm_forward(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *x,
                          int64_t ldx, const float *params, float *out, int64_t ldo, float *stats) {
    return norm_forward(ctx, SN_DTYPE_F32, n, R, D, x, ldx, params, out, ldo, stats);
}

sn_status sn_norm_forward_bf16(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                               const sn_bf16 *x, int64_t ldx, const float *params, sn_bf16 *out,
                               int64_t ldo, float *stats) {
    return norm_forward(ctx, SN_DTYPE_BF16, n, R, D, x, ldx, params, out, ldo, stats);
}

sn_status sn_norm_backward(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                           const float *dout, int64_t lddo, const float *x, int64_t ldx,
                           const float *params, const float *stats, float *dx, int64_t lddx,
                           float *dparams, uint32_t flags) {
    return norm_backward(ctx, SN_DTYPE_F32, n, R, D, dout, lddo, x, ldx, params, stats, dx, lddx,
                         dparams, flags);
}

sn_status sn_norm_backward_bf16(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                                const sn_bf16 *dout, int64_t lddo, const sn_bf16 *x, int64_t ldx,
                                const float *params, const float *stats, sn_bf16 *dx, int64_t lddx,
                                float *dparams, uint32_t flags) {
    return norm_backward(ctx, SN_DTYPE_BF16, n, R, D, dout, lddo, x, ldx, params, stats, dx, lddx,
                         dparams, flags);
}
