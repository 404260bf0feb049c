/* The GPT's own kernels: matrix products (CBLAS or loops), causal attention, GELU, softmax
 * cross-entropy, embeddings. Norms and residual adds are not here: libsiamesenorm does them. */
#include <math.h>
#include <string.h>

#include "gpt.h"

#ifdef SN_GPT_CBLAS
#include <cblas.h>
#endif

int ops_have_blas(void) {
#ifdef SN_GPT_CBLAS
    return 1;
#else
    return 0;
#endif
}

void ops_set_blas_threads(int n) {
#ifdef SN_GPT_OPENBLAS
    openblas_set_num_threads(n);
#else
    (void)n;
#endif
}

#ifndef SN_GPT_CBLAS
/* Dot product with 8 independent partial sums, which compilers vectorise. */
static float dot(const float *a, const float *b, int n) {
    float acc[8] = {0};
    int c = 0;
    for (; c + 8 <= n; c += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[c + k] * b[c + k];
    float s = 0.0f;
    for (; c < n; c++) s += a[c] * b[c];
    for (int k = 0; k < 8; k++) s += acc[k];
    return s;
}
#endif

void matmul_forward(float *out, const float *inp, const float *w, const float *bias, int R, int C,
                    int OC) {
#ifdef SN_GPT_CBLAS
    float beta = 0.0f;
    if (bias) {
        for (int r = 0; r < R; r++) memcpy(out + (size_t)r * OC, bias, (size_t)OC * sizeof(float));
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, OC, C, 1.0f, inp, C, w, C, beta, out,
                OC);
#else
    for (int r = 0; r < R; r++) {
        const float *x = inp + (size_t)r * C;
        float *o = out + (size_t)r * OC;
        for (int j = 0; j < OC; j++) o[j] = (bias ? bias[j] : 0.0f) + dot(x, w + (size_t)j * C, C);
    }
#endif
}

void matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                     const float *w, int R, int C, int OC) {
#ifdef SN_GPT_CBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, C, OC, 1.0f, dout, OC, w, C, 0.0f,
                dinp, C);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, R, 1.0f, dout, OC, inp, C, 1.0f, dw,
                C);
#else
    for (int r = 0; r < R; r++) {
        float *dx = dinp + (size_t)r * C;
        const float *g = dout + (size_t)r * OC;
        memset(dx, 0, (size_t)C * sizeof(float));
        for (int j = 0; j < OC; j++) {
            const float *wj = w + (size_t)j * C;
            float gj = g[j];
            for (int c = 0; c < C; c++) dx[c] += gj * wj[c];
        }
    }
    for (int j = 0; j < OC; j++) {
        float *dwj = dw + (size_t)j * C;
        for (int r = 0; r < R; r++) {
            const float *x = inp + (size_t)r * C;
            float gj = dout[(size_t)r * OC + j];
            for (int c = 0; c < C; c++) dwj[c] += gj * x[c];
        }
    }
#endif
    if (dbias)
        for (int r = 0; r < R; r++)
            for (int j = 0; j < OC; j++) dbias[j] += dout[(size_t)r * OC + j];
}

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int D, int NH) {
    int hs = D / NH;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const float *q = qkv + ((size_t)b * T + t) * 3 * D + h * hs;
                float *p = att + (((size_t)b * NH + h) * T + t) * T;
                float maxv = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + ((size_t)b * T + t2) * 3 * D + D + h * hs;
                    float s = 0.0f;
                    for (int i = 0; i < hs; i++) s += q[i] * k[i];
                    p[t2] = s * scale;
                    if (p[t2] > maxv) maxv = p[t2];
                }
                float sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    p[t2] = expf(p[t2] - maxv);
                    sum += p[t2];
                }
                float inv = 1.0f / sum;
                for (int t2 = 0; t2 < T; t2++) p[t2] = t2 <= t ? p[t2] * inv : 0.0f;
                float *o = out + ((size_t)b * T + t) * D + h * hs;
                memset(o, 0, (size_t)hs * sizeof(float));
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + ((size_t)b * T + t2) * 3 * D + 2 * D + h * hs;
                    for (int i = 0; i < hs; i++) o[i] += p[t2] * v[i];
                }
            }
}

void attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                        const float *att, int B, int T, int D, int NH) {
    int hs = D / NH;
    float scale = 1.0f / sqrtf((float)hs);
    memset(dqkv, 0, (size_t)B * T * 3 * D * sizeof(float));
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const float *p = att + (((size_t)b * NH + h) * T + t) * T;
                const float *g = dout + ((size_t)b * T + t) * D + h * hs;
                const float *q = qkv + ((size_t)b * T + t) * 3 * D + h * hs;
                float *dq = dqkv + ((size_t)b * T + t) * 3 * D + h * hs;
                float *dp = scratch;
                float pdp = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + ((size_t)b * T + t2) * 3 * D + 2 * D + h * hs;
                    float *dv = dqkv + ((size_t)b * T + t2) * 3 * D + 2 * D + h * hs;
                    float s = 0.0f;
                    for (int i = 0; i < hs; i++) {
                        s += g[i] * v[i];
                        dv[i] += p[t2] * g[i];
                    }
                    dp[t2] = s;
                    pdp += p[t2] * s;
                }
                for (int t2 = 0; t2 <= t; t2++) {
                    float ds = p[t2] * (dp[t2] - pdp) * scale;
                    const float *k = qkv + ((size_t)b * T + t2) * 3 * D + D + h * hs;
                    float *dk = dqkv + ((size_t)b * T + t2) * 3 * D + D + h * hs;
                    for (int i = 0; i < hs; i++) {
                        dq[i] += ds * k[i];
                        dk[i] += ds * q[i];
                    }
                }
            }
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

/* tanh(u) = 1 - 2 / (1 + e^(2u)), with e^x from the Cephes expf polynomial on x = n ln2 + r,
 * |r| <= ln2/2 (relative error ~1e-7), branch-free so the GELU loops vectorise: libm's tanhf
 * is several times slower and made GELU the largest cost of a step. u is clamped to [-9, 9],
 * where tanh is +-1 in fp32; a NaN u becomes 9, but GELU multiplies by x, so NaN still shows. */
static inline float fast_tanh(float u) {
    u = u < 9.0f ? u : 9.0f;
    u = u > -9.0f ? u : -9.0f;
    float x = 2.0f * u;
    float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f; /* round(x / ln2) */
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return 1.0f - 2.0f / (1.0f + p * scale);
}

void gelu_forward(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + fast_tanh(GELU_SCALE * (x + 0.044715f * x * x * x)));
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float th = fast_tanh(GELU_SCALE * (x + 0.044715f * x * x * x));
        float sech2 = 1.0f - th * th;
        float d =
            0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = d * dout[i];
    }
}

int argmax(const float *p, int V) {
    int best = 0;
    for (int j = 1; j < V; j++)
        if (p[j] > p[best]) best = j;
    return best;
}

int crossentropy_forward(float *logits, float *losses, const int *targets, int R, int V) {
    int valid = 0;
    for (int r = 0; r < R; r++) {
        float *l = logits + (size_t)r * V;
        float maxv = l[0];
        for (int j = 1; j < V; j++)
            if (l[j] > maxv) maxv = l[j];
        float sum = 0.0f;
        float target_logit = targets[r] >= 0 ? l[targets[r]] : 0.0f;
        for (int j = 0; j < V; j++) {
            l[j] = expf(l[j] - maxv);
            sum += l[j];
        }
        float inv = 1.0f / sum;
        for (int j = 0; j < V; j++) l[j] *= inv;
        if (targets[r] >= 0) {
            losses[r] = logf(sum) + maxv - target_logit;
            valid++;
        } else {
            losses[r] = 0.0f;
        }
    }
    return valid;
}

void crossentropy_backward(float *probs, const int *targets, int R, int V, float scale) {
    for (int r = 0; r < R; r++) {
        float *p = probs + (size_t)r * V;
        if (targets[r] < 0) {
            memset(p, 0, (size_t)V * sizeof(float));
            continue;
        }
        for (int j = 0; j < V; j++) p[j] *= scale;
        p[targets[r]] -= scale;
    }
}

void encoder_forward(float *e, const int *tokens, const float *wte, const float *wpe, int B, int T,
                     int D) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = e + ((size_t)b * T + t) * D;
            const float *te = wte + (size_t)tokens[b * T + t] * D;
            const float *pe = wpe + (size_t)t * D;
            for (int i = 0; i < D; i++) o[i] = te[i] + pe[i];
        }
}

void encoder_backward(float *dwte, float *dwpe, const float *de, const int *tokens, int B, int T,
                      int D) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *g = de + ((size_t)b * T + t) * D;
            float *dte = dwte + (size_t)tokens[b * T + t] * D;
            float *dpe = dwpe + (size_t)t * D;
            for (int i = 0; i < D; i++) {
                dte[i] += g[i];
                dpe[i] += g[i];
            }
        }
}
