/* AdamW with decoupled weight decay, global-norm gradient clipping, warmup + cosine schedule. */
#include <math.h>

#include "gpt.h"

float lr_at(const optim_config *o, int step) {
    if (o->warmup > 0 && step < o->warmup) return o->lr * (float)(step + 1) / (float)o->warmup;
    float min_lr = o->lr * o->min_lr_frac;
    int span = o->steps - o->warmup;
    if (span <= 1) return o->lr;
    double progress = (double)(step - o->warmup) / (double)(span - 1);
    if (progress > 1.0) progress = 1.0;
    double cosine = 0.5 * (1.0 + cos(3.14159265358979323846 * progress));
    return min_lr + (o->lr - min_lr) * (float)cosine;
}

float clip_grad(gpt_model *m, float clip) {
    double ss = 0.0;
    for (size_t i = 0; i < m->n_params; i++) ss += (double)m->grads[i] * m->grads[i];
    float norm = (float)sqrt(ss);
    if (clip > 0.0f && norm > clip && isfinite(norm)) {
        float s = clip / norm;
        for (size_t i = 0; i < m->n_params; i++) m->grads[i] *= s;
    }
    return norm;
}

static int decays(int tensor) {
    return tensor == P_WTE || tensor == P_WPE || tensor == P_QKVW || tensor == P_ATTPW ||
           tensor == P_FCW || tensor == P_FCPW || tensor == P_HEAD;
}

void adamw_update(gpt_model *m, float *mom, float *vel, const optim_config *o, float lr, int t) {
    float c1 = 1.0f - powf(o->beta1, (float)t), c2 = 1.0f - powf(o->beta2, (float)t);
    for (int k = 0; k < P_COUNT; k++) {
        float wd = decays(k) ? o->weight_decay : 0.0f;
        size_t off = (size_t)(m->p[k] - m->params);
        float *p = m->params + off, *g = m->grads + off, *mo = mom + off, *ve = vel + off;
        for (size_t i = 0; i < m->size[k]; i++) {
            mo[i] = o->beta1 * mo[i] + (1.0f - o->beta1) * g[i];
            ve[i] = o->beta2 * ve[i] + (1.0f - o->beta2) * g[i] * g[i];
            float mhat = mo[i] / c1, vhat = ve[i] / c2;
            p[i] -= lr * (mhat / (sqrtf(vhat) + o->eps) + wd * p[i]);
        }
    }
}
