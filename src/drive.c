/* Drivers (see drive.h): single-threaded loops over rows calling the portable row kernels. */
#include "drive.h"

#include <string.h>

#include "check.h"
#include "kernels.h"

void sn_d_norm_fwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *x,
                   int64_t ldx, const float *params, float *out, int64_t ldo, float *stats) {
    (void)ctx;
    const int64_t W = n->group ? n->group : D, ng = D / W, spr = sn_norm_spr(n, D);
    for (int64_t r = 0; r < R; r++)
        for (int64_t g = 0; g < ng; g++) {
            const float *v = x + r * ldx + g * W;
            float m, rs;
            sn_k_stats(n, v, W, &m, &rs);
            sn_rnorm q = sn_k_resolve(n, W, params, m, rs);
            sn_k_norm_row(&q, v, W, out + r * ldo + g * W);
            if (stats) sn_k_stats_put(n, stats + r * spr, ng, g, m, rs);
        }
}

void sn_d_norm_apply(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *x,
                     int64_t ldx, const float *params, const float *stats, float *out,
                     int64_t ldo) {
    (void)ctx;
    const int64_t W = n->group ? n->group : D, ng = D / W, spr = sn_norm_spr(n, D);
    for (int64_t r = 0; r < R; r++)
        for (int64_t g = 0; g < ng; g++) {
            float m, rs;
            sn_k_stats_get(n, stats ? stats + r * spr : NULL, ng, g, &m, &rs);
            sn_rnorm q = sn_k_resolve(n, W, params, m, rs);
            sn_k_norm_row(&q, x + r * ldx + g * W, W, out + r * ldo + g * W);
        }
}

void sn_d_norm_stats(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *x,
                     int64_t ldx, float *stats) {
    (void)ctx;
    const int64_t W = n->group ? n->group : D, ng = D / W, spr = sn_norm_spr(n, D);
    if (spr == 0) return;
    for (int64_t r = 0; r < R; r++)
        for (int64_t g = 0; g < ng; g++) {
            float m, rs;
            sn_k_stats(n, x + r * ldx + g * W, W, &m, &rs);
            sn_k_stats_put(n, stats + r * spr, ng, g, m, rs);
        }
}

void sn_d_norm_bwd(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D, const float *dout,
                   int64_t lddo, const float *x, int64_t ldx, const float *params,
                   const float *stats, float *dx, int64_t lddx, float *dparams, int acc) {
    (void)ctx;
    const int64_t W = n->group ? n->group : D, ng = D / W, spr = sn_norm_spr(n, D);
    const sn_rnorm dp = dparams ? sn_k_resolve(n, W, dparams, 0, 0) : (sn_rnorm){0};
    for (int64_t r = 0; r < R; r++)
        for (int64_t g = 0; g < ng; g++) {
            float m, rs;
            sn_k_stats_get(n, stats ? stats + r * spr : NULL, ng, g, &m, &rs);
            sn_rnorm q = sn_k_resolve(n, W, params, m, rs);
            sn_k_norm_bwd_row(&q, dout + r * lddo + g * W, x + r * ldx + g * W, W,
                              dx + r * lddx + g * W, acc, (float *)dp.gamma, (float *)dp.beta);
        }
}

void sn_d_fuse_fwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const float *x,
                   int64_t ldx, const float *y, int64_t ldy, const float *params, float *u,
                   int64_t ldu, float *h, int64_t ldh, float *stats) {
    (void)ctx;
    int64_t spr;
    sn_fuse_query(f, D, NULL, &spr);
    for (int64_t r = 0; r < R; r++)
        sn_k_fuse_fwd_row(f, D, x + r * ldx, y + r * ldy, params, u ? u + r * ldu : NULL,
                          h + r * ldh, stats ? stats + r * spr : NULL);
}

void sn_d_fuse_bwd(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D, const float *dh,
                   int64_t lddh, const float *du, int64_t lddu, const float *x, int64_t ldx,
                   const float *y, int64_t ldy, const float *params, const float *stats,
                   float *dx, int64_t lddx, float *dy, int64_t lddy, float *dparams,
                   uint32_t flags) {
    (void)ctx;
    int64_t spr;
    sn_fuse_query(f, D, NULL, &spr);
    for (int64_t r = 0; r < R; r++)
        sn_k_fuse_bwd_row(f, D, dh + r * lddh, du ? du + r * lddu : NULL, x + r * ldx,
                          y + r * ldy, params, stats ? stats + r * spr : NULL, dx + r * lddx,
                          dy + r * lddy, dparams, flags);
}

void sn_d_apply(const sn_ctx *ctx, int64_t R, int64_t D, float c, const float *z, int64_t ldz,
                const float *u, int64_t ldu, const float *y, int64_t ldy, float *xo, int64_t ldxo,
                float *yo, int64_t ldyo) {
    (void)ctx;
    for (int64_t r = 0; r < R; r++) {
        sn_k_add_div_row(u + r * ldu, z + r * ldz, c, xo + r * ldxo, D, 0);
        sn_k_add_div_row(y + r * ldy, z + r * ldz, 1.0f, yo + r * ldyo, D, 0);
    }
}

void sn_d_add_div(const sn_ctx *ctx, int64_t R, int64_t D, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float c, float *out, int64_t ldo, int acc) {
    (void)ctx;
    for (int64_t r = 0; r < R; r++)
        sn_k_add_div_row(a + r * lda, b + r * ldb, c, out + r * ldo, D, acc);
}

void sn_d_axpy(const sn_ctx *ctx, int64_t R, int64_t D, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float *out, int64_t ldo) {
    (void)ctx;
    for (int64_t r = 0; r < R; r++)
        sn_k_axpy_row(alpha, a + r * lda, b + r * ldb, out + r * ldo, D);
}

void sn_d_copy(const sn_ctx *ctx, int64_t R, int64_t D, const float *a, int64_t lda, float *out,
               int64_t ldo) {
    (void)ctx;
    for (int64_t r = 0; r < R; r++)
        memmove(out + r * ldo, a + r * lda, (size_t)D * sizeof(float));
}
