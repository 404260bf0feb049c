/* Checked mode: scanning the caller's inputs for NaN and infinity before a call computes. */
#ifndef SN_FINITE_H
#define SN_FINITE_H

#include "siamesenorm.h"

/* The first row r < R in which x [R x D, ldx] holds a NaN or an infinity, or -1. */
int64_t sn_first_nonfinite_row(int64_t R, int64_t D, const float *x, int64_t ldx);

/* The first row r < R of the bf16 matrix x [R x D, ldx] holding a NaN or an infinity, or -1. */
int64_t sn_first_nonfinite_row_bf16(int64_t R, int64_t D, const sn_bf16 *x, int64_t ldx);

/* With ctx in checked mode (sn_ctx_set_check_finite): SN_ERR_NONFINITE, recorded in ctx, when
 * one of the nm matrices mats[k] [R x D, lds[k]] of elements of type dt (NULL entries skipped)
 * or the n_params floats of params hold a NaN or an infinity; SN_OK otherwise, and always
 * without checked mode. */
sn_status sn_check_inputs_dt(const sn_ctx *ctx, sn_dtype dt, int64_t R, int64_t D,
                             const void *const *mats, const int64_t *lds, int nm,
                             const float *params, int64_t n_params);

/* sn_ctx_checks_finite and sn_ctx_note_nonfinite, the context's state that checked mode keeps,
 * are the runtime's (ctx.h). */
#include "ctx.h"

#endif
