/* Benchmark peers compiled apart from the library: straightforward scalar C (llm.c-style row
 * loops) built with -Ofast -march=native, and STREAM-like bandwidth kernels. Benchmark only. */
#ifndef SN_BENCH_BASELINE_H
#define SN_BENCH_BASELINE_H

#include <stdint.h>

/* LayerNorm over N rows of C floats (contiguous): out, mean, rstd written. */
void base_ln_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                 const float *b, int64_t N, int64_t C);
/* dinp written, dw += , db += */
void base_ln_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                 const float *w, const float *mean, const float *rstd, int64_t N, int64_t C);
/* RMSNorm (gamma only) */
void base_rms_fwd(float *out, float *rstd, const float *inp, const float *w, int64_t N, int64_t C);
void base_rms_bwd(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                  const float *rstd, int64_t N, int64_t C);
/* elementwise helpers for the unfused sub-layer baseline */
void base_add(float *out, const float *a, const float *b, int64_t n);                 /* a + b */
void base_add_scaled(float *out, const float *a, const float *b, float c, int64_t n); /* a+b/c */

/* STREAM kernels: a = b;  a = b + s * c */
void stream_copy(float *a, const float *b, int64_t n);
void stream_triad(float *a, const float *b, const float *c, float s, int64_t n);

#endif
