/* Checked mode (see finite.h and the header's "Checked mode" section). */
#include "finite.h"

#include <string.h>

#include "check.h"

/* 1 when any of the n floats is a NaN or an infinity: exponent bits all set. Integer OR over
 * 8 lanes, so the compiler vectorises it without reassociating any float arithmetic. */
static int any_nonfinite(const float *v, int64_t n) {
    uint32_t acc[8] = {0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++) {
            uint32_t u;
            memcpy(&u, v + j + k, sizeof u);
            acc[k] |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
        }
    uint32_t t = 0;
    for (; j < n; j++) {
        uint32_t u;
        memcpy(&u, v + j, sizeof u);
        t |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
    }
    for (int k = 0; k < 8; k++) t |= acc[k];
    return t != 0;
}

int64_t sn_first_nonfinite_row(int64_t R, int64_t D, const float *x, int64_t ldx) {
    for (int64_t r = 0; r < R; r++)
        if (any_nonfinite(x + r * ldx, D)) return r;
    return -1;
}

/* The same for bf16: exponent bits (0x7f80) all set. */
static int any_nonfinite_bf16(const sn_bf16 *v, int64_t n) {
    uint32_t t = 0;
    for (int64_t j = 0; j < n; j++) t |= (uint32_t)((v[j] & 0x7f80u) == 0x7f80u);
    return t != 0;
}

int64_t sn_first_nonfinite_row_bf16(int64_t R, int64_t D, const sn_bf16 *x, int64_t ldx) {
    for (int64_t r = 0; r < R; r++)
        if (any_nonfinite_bf16(x + r * ldx, D)) return r;
    return -1;
}

sn_status sn_find_nonfinite_bf16(int64_t R, int64_t D, const sn_bf16 *x, int64_t ldx,
                                 int64_t *row) {
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_mat_dt(x, R, D, ldx, SN_DTYPE_BF16);
    if (st == SN_OK && !row) st = SN_ERR_NULL;
    if (st != SN_OK) return st;
    *row = sn_first_nonfinite_row_bf16(R, D, x, ldx);
    return SN_OK;
}

sn_status sn_find_nonfinite(int64_t R, int64_t D, const float *x, int64_t ldx, int64_t *row) {
    sn_status st = sn_check_dims(R, D);
    if (st == SN_OK) st = sn_check_mat(x, R, D, ldx);
    if (st == SN_OK && !row) st = SN_ERR_NULL;
    if (st != SN_OK) return st;
    *row = sn_first_nonfinite_row(R, D, x, ldx);
    return SN_OK;
}

sn_status sn_check_inputs_dt(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D,
                             const void *const *mats, const int64_t *lds, int nm,
                             const float *params, int64_t n_params) {
    if (!sn_ctx_checks_finite(ctx)) return SN_OK;
    int64_t first = -1;
    for (int k = 0; k < nm; k++) {
        if (!mats[k]) continue;
        /* only rows before the best so far can improve it */
        const int64_t rows = first < 0 ? R : first;
        int64_t r = dt == SN_DTYPE_BF16
                        ? sn_first_nonfinite_row_bf16(rows, D, (const sn_bf16 *)mats[k], lds[k])
                        : sn_first_nonfinite_row(rows, D, (const float *)mats[k], lds[k]);
        if (r >= 0) first = r;
    }
    if (first < 0 && params && n_params > 0 && any_nonfinite(params, n_params))
        first = SN_NONFINITE_PARAMS;
    sn_ctx_note_nonfinite(ctx, first);
    return first == -1 ? SN_OK : SN_ERR_NONFINITE;
}
