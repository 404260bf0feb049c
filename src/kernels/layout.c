/* The path-independent helpers of the kernels (see kernels.h): norms resolved for a row, the
 * sizes of a norm and a fuse's parameter and statistics layout (declared in layout.h, with the
 * row limits), a fuse's parameter-gradient destinations. */
#include "kernels.h"

sn_rnorm sn_k_resolve(const sn_norm *n, int64_t W, const float *params, float m, float r) {
    sn_rnorm q = {0.0f, 1.0f, 0.0f, 0.0f, NULL, NULL, 0};
    if (n->kind == SN_NORM_IDENTITY) return q;
    if (n->kind != SN_NORM_SCALE) { /* SN_NORM_SCALE: gamma * v + beta, m = 0, r = 1 */
        q.r = r;
        q.cb = 1.0f;
    }
    if (n->kind == SN_NORM_LAYERNORM) {
        q.m = m;
        q.ca = 1.0f;
    }
    if (n->affine != SN_AFFINE_NONE) q.gamma = params;
    if (n->affine == SN_AFFINE_SCALE_SHIFT) q.beta = params + W;
    return q;
}

int64_t sn_norm_nparams(const sn_norm *n, int64_t D) {
    int64_t W = n->group ? n->group : D;
    if (n->kind == SN_NORM_IDENTITY || n->affine == SN_AFFINE_NONE) return 0;
    return n->affine == SN_AFFINE_SCALE_SHIFT ? 2 * W : W;
}

int64_t sn_norm_spr(const sn_norm *n, int64_t D) {
    int64_t ng = n->group ? D / n->group : 1;
    if (n->kind == SN_NORM_LAYERNORM) return 2 * ng;
    if (n->kind == SN_NORM_RMSNORM) return ng;
    return 0;
}

sn_fuse_layout sn_k_fuse_layout(const sn_fuse *f, int64_t D) {
    sn_fuse_layout L;
    L.px = 0;
    L.py = sn_norm_nparams(&f->x, D);
    L.po = L.py + sn_norm_nparams(&f->y, D);
    L.np = L.po + sn_norm_nparams(&f->out, D);
    L.sx = 0;
    L.sy = sn_norm_spr(&f->x, D);
    L.so = L.sy + sn_norm_spr(&f->y, D);
    L.spr = L.so + sn_norm_spr(&f->out, D);
    return L;
}

sn_dfuse sn_k_fuse_dparams(const sn_fuse *f, const sn_fuse_layout *L, int64_t D, float *dparams) {
    sn_dfuse d = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (!dparams) return d;
    sn_rnorm X = sn_k_resolve(&f->x, D, dparams + L->px, 0, 0);
    sn_rnorm Y = sn_k_resolve(&f->y, D, dparams + L->py, 0, 0);
    sn_rnorm O = sn_k_resolve(&f->out, D, dparams + L->po, 0, 0);
    d.gx = (float *)X.gamma;
    d.bx = (float *)X.beta;
    d.gy = (float *)Y.gamma;
    d.by = (float *)Y.beta;
    d.go = (float *)O.gamma;
    d.bo = (float *)O.beta;
    return d;
}
