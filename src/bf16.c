/* bf16 storage: the conversions, and the `_bf16` entry points (not yet implemented: they return
 * SN_ERR_UNSUPPORTED until the bf16 drivers land). */
#include <string.h>

#include "siamesenorm.h"

const char *sn_dtype_name(sn_dtype dtype) {
    switch (dtype) {
    case SN_DTYPE_F32: return "f32";
    case SN_DTYPE_BF16: return "bf16";
    }
    return NULL;
}

/* Round to nearest even on the fp32 bits; a NaN keeps its sign and becomes quiet. */
sn_bf16 sn_bf16_from_f32(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (sn_bf16)((u >> 16) | 0x0040u);
    return (sn_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float sn_bf16_to_f32(sn_bf16 v) {
    const uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Temporary stubs (the bf16 drivers replace them). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
sn_status sn_to_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const float *src, int64_t lds,
                     sn_bf16 *dst, int64_t ldd) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_from_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *src, int64_t lds,
                       float *dst, int64_t ldd) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_find_nonfinite_bf16(int64_t R, int64_t D, const sn_bf16 *x, int64_t ldx,
                                 int64_t *row) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_norm_forward_bf16(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                               const sn_bf16 *x, int64_t ldx, const float *params, sn_bf16 *out,
                               int64_t ldo, float *stats) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_norm_backward_bf16(const sn_ctx *ctx, const sn_norm *n, int64_t R, int64_t D,
                                const sn_bf16 *dout, int64_t lddo, const sn_bf16 *x, int64_t ldx,
                                const float *params, const float *stats, sn_bf16 *dx, int64_t lddx,
                                float *dparams, uint32_t flags) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_fuse_forward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                               const sn_bf16 *x, int64_t ldx, const sn_bf16 *y, int64_t ldy,
                               const float *params, sn_bf16 *u, int64_t ldu, sn_bf16 *h,
                               int64_t ldh, float *stats) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_fuse_backward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                const sn_bf16 *dh, int64_t lddh, const sn_bf16 *du, int64_t lddu,
                                const sn_bf16 *x, int64_t ldx, const sn_bf16 *y, int64_t ldy,
                                const float *params, const float *stats, sn_bf16 *dx, int64_t lddx,
                                sn_bf16 *dy, int64_t lddy, float *dparams, uint32_t flags) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_merge_forward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                const sn_bf16 *x, int64_t ldx, const sn_bf16 *y, int64_t ldy,
                                const float *params, sn_bf16 *out, int64_t ldo, float *stats) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_merge_backward_bf16(const sn_ctx *ctx, const sn_fuse *f, int64_t R, int64_t D,
                                 const sn_bf16 *dout, int64_t lddo, const sn_bf16 *x, int64_t ldx,
                                 const sn_bf16 *y, int64_t ldy, const float *params,
                                 const float *stats, sn_bf16 *dx, int64_t lddx, sn_bf16 *dy,
                                 int64_t lddy, float *dparams, uint32_t flags) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_apply_forward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, float c, const sn_bf16 *z,
                                int64_t ldz, const sn_bf16 *u, int64_t ldu, const sn_bf16 *y,
                                int64_t ldy, sn_bf16 *xo, int64_t ldxo, sn_bf16 *yo, int64_t ldyo) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_apply_backward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, float c,
                                 const sn_bf16 *dxo, int64_t lddxo, const sn_bf16 *dyo,
                                 int64_t lddyo, sn_bf16 *dz, int64_t lddz, uint32_t flags) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_split_forward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *e,
                                int64_t lde, sn_bf16 *x, int64_t ldx, sn_bf16 *y, int64_t ldy) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_split_backward_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *dx,
                                 int64_t lddx, const sn_bf16 *dy, int64_t lddy, sn_bf16 *de,
                                 int64_t ldde, uint32_t flags) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_split_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                            const sn_bf16 *e, int64_t lde) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_enter_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                            int32_t i, sn_bf16 *h, int64_t ldh) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_exit_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass, int32_t i,
                           const sn_bf16 *z, int64_t ldz) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_merge_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                            sn_bf16 *out, int64_t ldo) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_merge_backward_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                                     const sn_bf16 *dout, int64_t lddo) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_exit_backward_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                                    int32_t i, sn_bf16 *dz, int64_t lddz, uint32_t flags) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_enter_backward_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                                     int32_t i, const sn_bf16 *dh, int64_t lddh) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_split_backward_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_pass *pass,
                                     sn_bf16 *de, int64_t ldde, uint32_t flags) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_infer_split_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                  const sn_bf16 *e, int64_t lde) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_infer_enter_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                  int32_t i, sn_bf16 *h, int64_t ldh) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_infer_exit_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                 int32_t i, const sn_bf16 *z, int64_t ldz) {
    return SN_ERR_UNSUPPORTED;
}
sn_status sn_net_infer_merge_bf16(const sn_ctx *ctx, const sn_net *net, const sn_net_infer *inf,
                                  sn_bf16 *out, int64_t ldo) {
    return SN_ERR_UNSUPPORTED;
}
#pragma GCC diagnostic pop
