/* bf16 storage: the element-type names and the conversions (the `_bf16` primitives share the
 * implementation of their fp32 twins in norm.c, fuse.c and stream.c). */
#include <string.h>

#include "check.h"
#include "drive.h"
#include "finite.h"
#include "kernels.h"

const char *sn_dtype_name(sn_dtype dtype) {
    switch (dtype) {
    case SN_DTYPE_F32: return "f32";
    case SN_DTYPE_BF16: return "bf16";
    }
    return NULL;
}

sn_status sn_dtype_from_name(const char *name, sn_dtype *dtype) {
    if (!name || !dtype) return SN_ERR_NULL;
    for (int k = 0; k < SN_DTYPE_COUNT; k++)
        if (strcmp(name, sn_dtype_name((sn_dtype)k)) == 0) {
            *dtype = (sn_dtype)k;
            return SN_OK;
        }
    return SN_ERR_DTYPE;
}

sn_bf16 sn_bf16_from_f32(float v) { return sn_k_bf16_round(v); }

float sn_bf16_to_f32(sn_bf16 v) { return sn_k_bf16_widen(v); }

/* The checks of a conversion from src (elements of type ts) to dst (type td). */
static sn_status check_convert(int64_t R, int64_t D, const void *src, int64_t lds, sn_dtype ts,
                               const void *dst, int64_t ldd, sn_dtype td) {
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_mat_dt(src, R, D, lds, ts);
    if (st == SN_OK) st = sn_check_mat_dt(dst, R, D, ldd, td);
    if (st != SN_OK) return st;
    const sn_buf bufs[] = {sn_mat_buf_dt(src, R, D, lds, ts, 0, 0),
                           sn_mat_buf_dt(dst, R, D, ldd, td, 1, 0)};
    return sn_check_alias(bufs, 2);
}

sn_status sn_to_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const float *src, int64_t lds,
                     sn_bf16 *dst, int64_t ldd) {
    sn_status st = check_convert(R, D, src, lds, SN_DTYPE_F32, dst, ldd, SN_DTYPE_BF16);
    const void *in = src;
    if (st == SN_OK) st = sn_check_inputs_dt(ctx, SN_DTYPE_F32, R, D, &in, &lds, 1, NULL, 0);
    if (st == SN_OK) sn_drive_of(SN_DTYPE_BF16)->from_f32(ctx, R, D, src, lds, dst, ldd);
    return st;
}

sn_status sn_from_bf16(const sn_ctx *ctx, int64_t R, int64_t D, const sn_bf16 *src, int64_t lds,
                       float *dst, int64_t ldd) {
    sn_status st = check_convert(R, D, src, lds, SN_DTYPE_BF16, dst, ldd, SN_DTYPE_F32);
    const void *in = src;
    if (st == SN_OK) st = sn_check_inputs_dt(ctx, SN_DTYPE_BF16, R, D, &in, &lds, 1, NULL, 0);
    if (st == SN_OK) sn_drive_of(SN_DTYPE_BF16)->to_f32(ctx, R, D, src, lds, dst, ldd);
    return st;
}
