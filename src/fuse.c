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

sn_status sn_fuse_forward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const float *x,
                          int64_t ldx, const float *y, int64_t ldy, const float *params, float *u,
                          int64_t ldu, float *h, int64_t ldh, float *stats) {
    if (!f) return SN_ERR_NULL;
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_fuse(f, D);
    if (st == SN_OK) st = sn_check_mat(x, R, D, ldx);
    if (st == SN_OK) st = sn_check_mat(y, R, D, ldy);
    if (st == SN_OK && u) st = sn_check_mat(u, R, D, ldu);
    if (st == SN_OK) st = sn_check_mat(h, R, D, ldh);
    if (st != SN_OK) return st;
    int64_t np, spr;
    sn_fuse_query(f, D, &np, &spr);
    if (np > 0 && !params) return SN_ERR_NULL;
    const sn_buf bufs[] = {
        sn_mat_buf(x, R, D, ldx, 0, 0), sn_mat_buf(y, R, D, ldy, 0, 0),
        sn_vec_buf(params, np, 0),      sn_mat_buf(u, R, D, ldu, 1, 0),
        sn_mat_buf(h, R, D, ldh, 1, 0), sn_vec_buf(stats, R * spr, 1),
    };
    st = sn_check_alias(bufs, 6);
    if (st != SN_OK) return st;
    const float *in[] = {x, y};
    const int64_t ldin[] = {ldx, ldy};
    st = sn_check_inputs(ctx, R, D, in, ldin, 2, params, np);
    if (st != SN_OK) return st;

    sn_d_fuse_fwd(ctx, f, R, D, x, ldx, y, ldy, params, u, ldu, h, ldh, stats);
    return SN_OK;
}

sn_status sn_fuse_backward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                           const float *dh, int64_t lddh, const float *du, int64_t lddu,
                           const float *x, int64_t ldx, const float *y, int64_t ldy,
                           const float *params, const float *stats, float *dx, int64_t lddx,
                           float *dy, int64_t lddy, float *dparams, uint32_t flags) {
    if (!f) return SN_ERR_NULL;
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_fuse(f, D);
    if (st == SN_OK) st = sn_check_mat(dh, R, D, lddh);
    if (st == SN_OK && du) st = sn_check_mat(du, R, D, lddu);
    if (st == SN_OK) st = sn_check_mat(x, R, D, ldx);
    if (st == SN_OK) st = sn_check_mat(y, R, D, ldy);
    if (st == SN_OK) st = sn_check_mat(dx, R, D, lddx);
    if (st == SN_OK) st = sn_check_mat(dy, R, D, lddy);
    if (st != SN_OK) return st;
    if (flags & ~(SN_ACCUMULATE | SN_ACCUMULATE_Y)) return SN_ERR_FLAGS;
    int64_t np, spr;
    sn_fuse_query(f, D, &np, &spr);
    if ((np > 0 && !params) || (spr > 0 && !stats)) return SN_ERR_NULL;
    const int accx = (flags & SN_ACCUMULATE) != 0;
    const sn_buf bufs[] = {
        sn_mat_buf(dh, R, D, lddh, 0, 0),
        sn_mat_buf(du, R, D, lddu, 0, 0),
        sn_mat_buf(x, R, D, ldx, 0, 0),
        sn_mat_buf(y, R, D, ldy, 0, 0),
        sn_vec_buf(params, np, 0),
        sn_vec_buf(stats, R * spr, 0),
        sn_mat_buf(dx, R, D, lddx, 1, accx ? 0 : 1u << 1),
        sn_mat_buf(dy, R, D, lddy, 1, 0),
        sn_vec_buf(dparams, np, 1),
    };
    st = sn_check_alias(bufs, 9);
    if (st != SN_OK) return st;
    const float *in[] = {dh, du, x, y};
    const int64_t ldin[] = {lddh, lddu, ldx, ldy};
    st = sn_check_inputs(ctx, R, D, in, ldin, 4, params, np);
    if (st != SN_OK) return st;

    sn_d_fuse_bwd(ctx, f, R, D, dh, lddh, du, lddu, x, ldx, y, ldy, params, stats, dx, lddx, dy,
                  lddy, np ? dparams : NULL, flags);
    return SN_OK;
}

sn_status sn_merge_forward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                           const float *x, int64_t ldx, const float *y, int64_t ldy,
                           const float *params, float *out, int64_t ldo, float *stats) {
    return sn_fuse_forward(ctx, f, R, D, x, ldx, y, ldy, params, NULL, 0, out, ldo, stats);
}

sn_status sn_merge_backward(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                            const float *dout, int64_t lddo, const float *x, int64_t ldx,
                            const float *y, int64_t ldy, const float *params, const float *stats,
                            float *dx, int64_t lddx, float *dy, int64_t lddy, float *dparams,
                            uint32_t flags) {
    return sn_fuse_backward(ctx, f, R, D, dout, lddo, NULL, 0, x, ldx, y, ldy, params, stats, dx,
                            lddx, dy, lddy, dparams, flags);
}
