/* The test networks' block F_i: z = tanh(h W_i) with a random D x D matrix per sub-layer,
 * in float (the caller's code in a library run, with its backward) and in double (for the
 * reference network). */
#ifndef SN_TEST_BLOCK_H
#define SN_TEST_BLOCK_H

#include "testutil.h"

typedef struct blk {
    int64_t D;
    int S;
    float *Wf;  /* S * D * D */
    double *Wd; /* the same values */
} blk;

static inline void blk_init(blk *b, int S, int64_t D, uint64_t seed) {
    tu_rng g = {seed};
    b->D = D, b->S = S;
    b->Wf = tu_falloc((int64_t)S * D * D), b->Wd = tu_dalloc((int64_t)S * D * D);
    double a = sqrt(3.0 / (double)D);
    for (int64_t k = 0; k < (int64_t)S * D * D; k++)
        b->Wd[k] = b->Wf[k] = (float)tu_unif(&g, -a, a);
}

/* float block for the library run: z = tanh(h W_i) */
static inline void blk_fwd_f(const blk *b, int i, int64_t R, const float *h, int64_t ldh, float *z,
                             int64_t ldz) {
    const int64_t D = b->D;
    const float *W = b->Wf + (int64_t)i * D * D;
    for (int64_t r = 0; r < R; r++)
        for (int64_t k = 0; k < D; k++) {
            float s = 0.0f;
            for (int64_t j = 0; j < D; j++) s += h[r * ldh + j] * W[j * D + k];
            z[r * ldz + k] = tanhf(s);
        }
}

/* dh = (dz * (1 - z^2)) W_i^T */
static inline void blk_bwd_f(const blk *b, int i, int64_t R, const float *z, int64_t ldz,
                             const float *dz, int64_t lddz, float *dh, int64_t lddh) {
    const int64_t D = b->D;
    const float *W = b->Wf + (int64_t)i * D * D;
    float *t = tu_falloc(D);
    for (int64_t r = 0; r < R; r++) {
        for (int64_t k = 0; k < D; k++) {
            float zz = z[r * ldz + k];
            t[k] = dz[r * lddz + k] * (1.0f - zz * zz);
        }
        for (int64_t j = 0; j < D; j++) {
            float s = 0.0f;
            for (int64_t k = 0; k < D; k++) s += W[j * D + k] * t[k];
            dh[r * lddh + j] = s;
        }
    }
    free(t);
}

static inline void blk_fwd_d(void *ctx, int i, int64_t R, int64_t D, const double *h, double *z) {
    const blk *b = (const blk *)ctx;
    const double *W = b->Wd + (int64_t)i * D * D;
    for (int64_t r = 0; r < R; r++)
        for (int64_t k = 0; k < D; k++) {
            double s = 0.0;
            for (int64_t j = 0; j < D; j++) s += h[r * D + j] * W[j * D + k];
            z[r * D + k] = tanh(s);
        }
}

#endif /* SN_TEST_BLOCK_H */
