/* Public dual-stream fuse and merge: h = N_out(N_x(x) + N_y(y)), with u = N_x(x) exposed. The
 * merge is the same operation without u. */
#include "check.h"
#include "drive.h"
#include "finite.h"

sn_status sn_fuse_init(sn_fuse *f, sn_norm_kind kind, sn_affine affine, float eps) {
    if (!f) return SN_ERR_NULL;
    sn_norm n = {(int32_t)kind, (int32_t)affine, 0, eps};
    sn_status st = sn_check_norm(&n, 1, 0);
    if (st == SN_OK) f->x = f->y = f->out = n;
    return st;
}

sn_status sn_fuse_query(const sn_fuse *f, int64_t D, int64_t *n_params, int64_t *stats_per_row) {
    if (!f) return SN_ERR_NULL;
    sn_status st = sn_check_dims(1, D);
    if (st == SN_OK) st = sn_check_fuse(f, D);
    if (st != SN_OK) return st;
    if (n_params)
        *n_params =
            sn_norm_nparams(&f->x, D) + sn_norm_nparams(&f->y, D) + sn_norm_nparams(&f->out, D);
    if (stats_per_row)
        *stats_per_row = sn_norm_spr(&f->x, D) + sn_norm_spr(&f->y, D) + sn_norm_spr(&f->out, D);
    return SN_OK;
}

sn_status sn_fuse_init_params(const sn_fuse *f, int64_t D, float *params) {
    int64_t np;
    sn_status st = sn_fuse_query(f, D, &np, NULL);
    if (st != SN_OK) return st;
    if (np > 0 && !params) return SN_ERR_NULL;
    if ((uintptr_t)params % sizeof(float)) return SN_ERR_ALIGN;
    const sn_norm *ns[3] = {&f->x, &f->y, &f->out};
    int64_t off = 0; /* params may be NULL when np == 0: no pointer arithmetic on it then */
    for (int i = 0; i < 3; i++) {
        int64_t n = sn_norm_nparams(ns[i], D);
        if (n > 0) sn_norm_init_params(ns[i], D, params + off);
        off += n;
    }
    return SN_OK;
}

/* The fp32 and bf16 calls share one implementation: dt is the element type of the matrices. */
static sn_status fuse_forward(const sn_ctx *ctx, sn_dtype dt, const sn_fuse *f, int64_t R,
                              int64_t D, const void *x, int64_t ldx, const void *y, int64_t ldy,
                              const float *params, void *u, int64_t ldu, void *h, int64_t ldh,
                              float *stats) {
    if (!f) return SN_ERR_NULL;
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_fuse(f, D);
    if (st == SN_OK) st = sn_check_mat_dt(x, R, D, ldx, dt);
    if (st == SN_OK) st = sn_check_mat_dt(y, R, D, ldy, dt);
    if (st == SN_OK && u) st = sn_check_mat_dt(u, R, D, ldu, dt);
    if (st == SN_OK) st = sn_check_mat_dt(h, R, D, ldh, dt);
    if (st != SN_OK) return st;
    int64_t np, spr;
    sn_fuse_query(f, D, &np, &spr);
    if (np > 0 && !params) return SN_ERR_NULL;
    const sn_buf bufs[] = {
        sn_mat_buf_dt(x, R, D, ldx, dt, 0, 0),
        sn_mat_buf_dt(y, R, D, ldy, dt, 0, 0),
        sn_vec_buf(params, np, 0),
        sn_mat_buf_dt(u, R, D, ldu, dt, 1, 0),
        sn_mat_buf_dt(h, R, D, ldh, dt, 1, 0),
        sn_vec_buf(stats, R * spr, 1),
    };
    st = sn_check_alias(bufs, 6);
    if (st == SN_OK) st = sn_check_row_dt(D, dt);
    if (st != SN_OK) return st;
    const void *in[] = {x, y};
    const int64_t ldin[] = {ldx, ldy};
    st = sn_check_inputs_dt(ctx, dt, R, D, in, ldin, 2, params, np);
    if (st != SN_OK) return st;

    sn_dt_fuse_fwd(ctx, dt, f, R, D, x, ldx, y, ldy, params, u, ldu, h, ldh, stats);
    return SN_OK;
}

static sn_status fuse_backward(const sn_ctx *ctx, sn_dtype dt, const sn_fuse *f, int64_t R,
                               int64_t D, const void *dh, int64_t lddh, const void *du,
                               int64_t lddu, const void *x, int64_t ldx, const void *y, int64_t ldy,
                               const float *params, const float *stats, void *dx, int64_t lddx,
                               void *dy, int64_t lddy, float *dparams, uint32_t flags) {
    if (!f) return SN_ERR_NULL;
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_fuse(f, D);
    if (st == SN_OK) st = sn_check_mat_dt(dh, R, D, lddh, dt);
    if (st == SN_OK && du) st = sn_check_mat_dt(du, R, D, lddu, dt);
    if (st == SN_OK) st = sn_check_mat_dt(x, R, D, ldx, dt);
    if (st == SN_OK) st = sn_check_mat_dt(y, R, D, ldy, dt);
    if (st == SN_OK) st = sn_check_mat_dt(dx, R, D, lddx, dt);
    if (st == SN_OK) st = sn_check_mat_dt(dy, R, D, lddy, dt);
    if (st != SN_OK) return st;
    if (flags & ~(SN_ACCUMULATE | SN_ACCUMULATE_Y)) return SN_ERR_FLAGS;
    int64_t np, spr;
    sn_fuse_query(f, D, &np, &spr);
    if ((np > 0 && !params) || (spr > 0 && !stats)) return SN_ERR_NULL;
    const int accx = (flags & SN_ACCUMULATE) != 0;
    const sn_buf bufs[] = {
        sn_mat_buf_dt(dh, R, D, lddh, dt, 0, 0),
        sn_mat_buf_dt(du, R, D, lddu, dt, 0, 0),
        sn_mat_buf_dt(x, R, D, ldx, dt, 0, 0),
        sn_mat_buf_dt(y, R, D, ldy, dt, 0, 0),
        sn_vec_buf(params, np, 0),
        sn_vec_buf(stats, R * spr, 0),
        sn_mat_buf_dt(dx, R, D, lddx, dt, 1, accx ? 0 : 1u << 1),
        sn_mat_buf_dt(dy, R, D, lddy, dt, 1, 0),
        sn_vec_buf(dparams, np, 1),
    };
    st = sn_check_alias(bufs, 9);
    if (st == SN_OK) st = sn_check_row_dt(D, dt);
    if (st != SN_OK) return st;
    const void *in[] = {dh, du, x, y};
    const int64_t ldin[] = {lddh, lddu, ldx, ldy};
    st = sn_check_inputs_dt(ctx, dt, R, D, in, ldin, 4, params, np);
    if (st != SN_OK) return st;

    sn_dt_fuse_bwd(ctx, dt, f, R, D, dh, lddh, du, lddu, x, ldx, y, ldy, params, stats, dx, lddx,
                   dy, lddy, np ? dparams : NULL, flags);
    return SN_OK;
}

sn_status sn_fuse_forward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const float *x,
                          int64_t ldx, const float *y, int64_t ldy, const float *params, float *u,
                          int64_t ldu, float *h, int64_t ldh, float *stats) {
    return fuse_forward(ctx, SN_DTYPE_F32, f, R, D, x, ldx, y, ldy, params, u, ldu, h, ldh, stats);
}

sn_status sn_fuse_forward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                               const sn_bf16 *x, int64_t ldx, const sn_bf16 *y, int64_t ldy,
                               const float *params, sn_bf16 *u, int64_t ldu, sn_bf16 *h,
                               int64_t ldh, float *stats) {
    return fuse_forward(ctx, SN_DTYPE_BF16, f, R, D, x, ldx, y, ldy, params, u, ldu, h, ldh, stats);
}

sn_status sn_fuse_backward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                           const float *dh, int64_t lddh, const float *du, int64_t lddu,
                           const float *x, int64_t ldx, const float *y, int64_t ldy,
                           const float *params, const float *stats, float *dx, int64_t lddx,
                           float *dy, int64_t lddy, float *dparams, uint32_t flags) {
    return fuse_backward(ctx, SN_DTYPE_F32, f, R, D, dh, lddh, du, lddu, x, ldx, y, ldy, params,
                         stats, dx, lddx, dy, lddy, dparams, flags);
}

sn_status sn_fuse_backward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                const sn_bf16 *dh, int64_t lddh, const sn_bf16 *du, int64_t lddu,
                                const sn_bf16 *x, int64_t ldx, const sn_bf16 *y, int64_t ldy,
                                const float *params, const float *stats, sn_bf16 *dx, int64_t lddx,
                                sn_bf16 *dy, int64_t lddy, float *dparams, uint32_t flags) {
    return fuse_backward(ctx, SN_DTYPE_BF16, f, R, D, dh, lddh, du, lddu, x, ldx, y, ldy, params,
                         stats, dx, lddx, dy, lddy, dparams, flags);
}

sn_status sn_merge_forward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                           const float *x, int64_t ldx, const float *y, int64_t ldy,
                           const float *params, float *out, int64_t ldo, float *stats) {
    return sn_fuse_forward(ctx, f, R, D, x, ldx, y, ldy, params, NULL, 0, out, ldo, stats);
}

sn_status sn_merge_forward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                const sn_bf16 *x, int64_t ldx, const sn_bf16 *y, int64_t ldy,
                                const float *params, sn_bf16 *out, int64_t ldo, float *stats) {
    return sn_fuse_forward_bf16(ctx, f, R, D, x, ldx, y, ldy, params, NULL, 0, out, ldo, stats);
}

sn_status sn_merge_backward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                            const float *dout, int64_t lddo, const float *x, int64_t ldx,
                            const float *y, int64_t ldy, const float *params, const float *stats,
                            float *dx, int64_t lddx, float *dy, int64_t lddy, float *dparams,
                            uint32_t flags) {
    return sn_fuse_backward(ctx, f, R, D, dout, lddo, NULL, 0, x, ldx, y, ldy, params, stats, dx,
                            lddx, dy, lddy, dparams, flags);
}

sn_status sn_merge_backward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                 const sn_bf16 *dout, int64_t lddo, const sn_bf16 *x, int64_t ldx,
                                 const sn_bf16 *y, int64_t ldy, const float *params,
                                 const float *stats, sn_bf16 *dx, int64_t lddx, sn_bf16 *dy,
                                 int64_t lddy, float *dparams, uint32_t flags) {
    return sn_fuse_backward_bf16(ctx, f, R, D, dout, lddo, NULL, 0, x, ldx, y, ldy, params, stats,
                                 dx, lddx, dy, lddy, dparams, flags);
}
