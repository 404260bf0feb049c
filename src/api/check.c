/* Argument validation: see check.h. */
#include "check.h"

#include <math.h>

sn_status sn_check_dims(int64_t R, int64_t D) {
    if (R <= 0 || D <= 0) return SN_ERR_SHAPE;
    if (R > SN_MAX_FLOATS / D) return SN_ERR_SHAPE;
    return SN_OK;
}

sn_status sn_check_mat(const void *p, int64_t R, int64_t D, int64_t ld) {
    return sn_check_mat_dt(p, R, D, ld, SN_DTYPE_F32);
}

sn_status sn_check_mat_dt(const void *p, int64_t R, int64_t D, int64_t ld, sn_dtype dt) {
    if (!p) return SN_ERR_NULL;
    if ((uintptr_t)p % (uintptr_t)sn_dtype_size(dt)) return SN_ERR_ALIGN;
    if (ld < D) return SN_ERR_STRIDE;
    if (R > 1 && ld > (SN_MAX_FLOATS - D) / (R - 1)) return SN_ERR_STRIDE;
    return SN_OK;
}

sn_status sn_check_row_dt(int64_t D, sn_dtype dt) {
    return dt == SN_DTYPE_BF16 && D > SN_K16_ROW_MAX ? SN_ERR_UNSUPPORTED : SN_OK;
}

sn_status sn_check_norm(const sn_norm *n, int64_t D, int allow_group) {
    if (!n) return SN_ERR_NULL;
    if (n->kind < SN_NORM_LAYERNORM || n->kind > SN_NORM_SCALE) return SN_ERR_NORM;
    if (n->kind != SN_NORM_IDENTITY && n->affine != SN_AFFINE_SCALE_SHIFT &&
        n->affine != SN_AFFINE_SCALE && n->affine != SN_AFFINE_NONE)
        return SN_ERR_NORM; /* the identity ignores its affine field */
    if (n->group < 0) return SN_ERR_GROUP;
    if (n->group > 0 && (!allow_group || D % n->group != 0)) return SN_ERR_GROUP;
    int normalises = n->kind == SN_NORM_LAYERNORM || n->kind == SN_NORM_RMSNORM;
    if (normalises && !(n->eps > 0.0f && isfinite(n->eps))) return SN_ERR_EPS;
    return SN_OK;
}

sn_status sn_check_fuse(const sn_fuse *f, int64_t D) {
    if (!f) return SN_ERR_NULL;
    sn_status st = sn_check_norm(&f->x, D, 0);
    if (st == SN_OK) st = sn_check_norm(&f->y, D, 0);
    if (st == SN_OK) st = sn_check_norm(&f->out, D, 0);
    return st;
}

sn_status sn_check_scale(float c) { return (c > 0.0f && isfinite(c)) ? SN_OK : SN_ERR_SCALE; }

static int overlaps(const sn_buf *a, const sn_buf *b) {
    if (!a->p || !b->p || a->nelems <= 0 || b->nelems <= 0) return 0;
    /* Compare as integers: the buffers may belong to different objects. */
    uintptr_t a0 = (uintptr_t)a->p, a1 = a0 + (uintptr_t)a->nelems * (uintptr_t)a->esize;
    uintptr_t b0 = (uintptr_t)b->p, b1 = b0 + (uintptr_t)b->nelems * (uintptr_t)b->esize;
    return a0 < b1 && b0 < a1;
}

sn_status sn_check_alias(const sn_buf *bufs, int n) {
    for (int i = 0; i < n; i++)
        if ((uintptr_t)bufs[i].p % (uintptr_t)bufs[i].esize) return SN_ERR_ALIGN;
    for (int i = 0; i < n; i++) {
        if (!bufs[i].writes) continue;
        for (int j = 0; j < n; j++) {
            if (j == i || !overlaps(&bufs[i], &bufs[j])) continue;
            int allowed = ((bufs[i].alias_ok >> j) & 1u) || ((bufs[j].alias_ok >> i) & 1u);
            int exact = bufs[i].p == bufs[j].p && bufs[i].ld == bufs[j].ld &&
                        bufs[i].nelems == bufs[j].nelems && bufs[i].esize == bufs[j].esize;
            if (!(allowed && exact)) return SN_ERR_ALIAS;
        }
    }
    return SN_OK;
}
