/* bf16 storage: the element-type names and the conversions (the `_bf16` primitives share the
 * implementation of their fp32 twins in norm.c, fuse.c and stream.c). */
#include <string.h>

#include "check.h"
#include "drive.h"
#include "kernels.h"

const char *sn_dtype_name(sn_dtype dtype) {
    switch (dtype) {
    case SN_DTYPE_F32: return "f32";
    case SN_DTYPE_BF16: return "bf16";
    }
    return NULL;
}

sn_bf16 sn_bf16_from_f32(float v) { return sn_k_bf16_round(v); }

float sn_bf16_to_f32(sn_bf16 v) { return sn_k_bf16_widen(v); }

sn_status sn_to_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const float *src, int64_t lds,
                     sn_bf16 *dst, int64_t ldd) {
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_mat_dt(src, R, D, lds, SN_DTYPE_F32);
    if (st == SN_OK) st = sn_check_mat_dt(dst, R, D, ldd, SN_DTYPE_BF16);
    if (st != SN_OK) return st;
    const sn_buf bufs[] = {sn_mat_buf_dt(src, R, D, lds, SN_DTYPE_F32, 0, 0),
                           sn_mat_buf_dt(dst, R, D, ldd, SN_DTYPE_BF16, 1, 0)};
    st = sn_check_alias(bufs, 2);
    if (st != SN_OK) return st;
    sn_d16_to_bf16(ctx, R, D, src, lds, dst, ldd);
    return SN_OK;
}

sn_status sn_from_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *src, int64_t lds,
                       float *dst, int64_t ldd) {
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_mat_dt(src, R, D, lds, SN_DTYPE_BF16);
    if (st == SN_OK) st = sn_check_mat_dt(dst, R, D, ldd, SN_DTYPE_F32);
    if (st != SN_OK) return st;
    const sn_buf bufs[] = {sn_mat_buf_dt(src, R, D, lds, SN_DTYPE_BF16, 0, 0),
                           sn_mat_buf_dt(dst, R, D, ldd, SN_DTYPE_F32, 1, 0)};
    st = sn_check_alias(bufs, 2);
    if (st != SN_OK) return st;
    sn_d16_from_bf16(ctx, R, D, src, lds, dst, ldd);
    return SN_OK;
}

/* Temporary stubs (the placement layer's bf16 calls). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
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
