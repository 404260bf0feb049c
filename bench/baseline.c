/* Scalar peers for sn-bench (see baseline.h), written the way a C trainer would write them:
 * one row at a time, plain loops, single-pass sums (llm.c's layernorm_forward/backward; the
 * input gradient is written rather than accumulated, the library call's traffic). Compiled with
 * -Ofast -march=native. */
#include "baseline.h"

#include <math.h>

void base_ln_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                 const float *b, int64_t N, int64_t C) {
    for (int64_t i = 0; i < N; i++) {
        const float *x = inp + i * C;
        float m = 0.0f;
        for (int64_t j = 0; j < C; j++) m += x[j];
        m /= (float)C;
        float v = 0.0f;
        for (int64_t j = 0; j < C; j++) {
            float d = x[j] - m;
            v += d * d;
        }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        float *o = out + i * C;
        for (int64_t j = 0; j < C; j++) o[j] = (s * (x[j] - m)) * w[j] + b[j];
        mean[i] = m;
        rstd[i] = s;
    }
}

void base_ln_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                 const float *w, const float *mean, const float *rstd, int64_t N, int64_t C) {
    for (int64_t i = 0; i < N; i++) {
        const float *g = dout + i * C, *x = inp + i * C;
        float *dx = dinp + i * C;
        const float m = mean[i], s = rstd[i];
        float a = 0.0f, c = 0.0f;
        for (int64_t j = 0; j < C; j++) {
            float xh = (x[j] - m) * s, dn = w[j] * g[j];
            a += dn;
            c += dn * xh;
        }
        a /= (float)C;
        c /= (float)C;
        for (int64_t j = 0; j < C; j++) {
            float xh = (x[j] - m) * s, dn = w[j] * g[j];
            db[j] += g[j];
            dw[j] += xh * g[j];
            dx[j] = (dn - a - xh * c) * s;
        }
    }
}

void base_rms_fwd(float *out, float *rstd, const float *inp, const float *w, int64_t N, int64_t C) {
    for (int64_t i = 0; i < N; i++) {
        const float *x = inp + i * C;
        float ss = 0.0f;
        for (int64_t j = 0; j < C; j++) ss += x[j] * x[j];
        float s = 1.0f / sqrtf(ss / (float)C + 1e-5f);
        float *o = out + i * C;
        for (int64_t j = 0; j < C; j++) o[j] = x[j] * s * w[j];
        rstd[i] = s;
    }
}

void base_rms_bwd(float *dinp, float *dw, const float *dout, const float *inp, const float *w,
                  const float *rstd, int64_t N, int64_t C) {
    for (int64_t i = 0; i < N; i++) {
        const float *g = dout + i * C, *x = inp + i * C;
        float *dx = dinp + i * C;
        const float s = rstd[i];
        float c = 0.0f;
        for (int64_t j = 0; j < C; j++) c += w[j] * g[j] * x[j] * s;
        c /= (float)C;
        for (int64_t j = 0; j < C; j++) {
            float xh = x[j] * s;
            dw[j] += xh * g[j];
            dx[j] = (w[j] * g[j] - xh * c) * s;
        }
    }
}

void base_add(float *out, const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void base_add_scaled(float *out, const float *a, const float *b, float c, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i] / c;
}

void stream_copy(float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) a[i] = b[i];
}

void stream_triad(float *a, const float *b, const float *c, float s, int64_t n) {
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}
