/* Argument validation shared by every public entry point: shapes, strides, norm descriptions and
 * the aliasing rules of the header. Nothing here touches the contents of a buffer. */
#ifndef SN_CHECK_H
#define SN_CHECK_H

#include "layout.h" /* the row limits and the sizes of norms and fuses (sn_norm_nparams, ...) */
#include "siamesenorm.h"

/* Largest number of floats one buffer may span: keeps every byte offset within ptrdiff_t. */
#define SN_MAX_FLOATS (INT64_MAX / 8)

/* R and D within range (> 0, and R * D * sizeof(float) representable). */
sn_status sn_check_dims(int64_t R, int64_t D);

/* A matrix view of R x D floats with row stride ld: non-NULL, aligned, ld >= D, span
 * representable. sn_check_mat_dt: of elements of type dt (sn_bf16: aligned to 2 bytes). */
sn_status sn_check_mat(const void *p, int64_t R, int64_t D, int64_t ld);
sn_status sn_check_mat_dt(const void *p, int64_t R, int64_t D, int64_t ld, sn_dtype dt);

/* The size in bytes of one element of type dt. */
static inline int sn_dtype_size(sn_dtype dt) { return dt == SN_DTYPE_BF16 ? 2 : 4; }

/* Rows of D elements of type dt for the norm, fuse and merge calls and nets: SN_ERR_UNSUPPORTED
 * for bf16 rows wider than SN_K16_ROW_MAX (the bf16 drivers and kernels stage whole rows on the
 * stack), else SN_OK. */
sn_status sn_check_row_dt(int64_t D, sn_dtype dt);

/* A norm description for rows of D columns. allow_group: whether group != 0 is accepted. */
sn_status sn_check_norm(const sn_norm *n, int64_t D, int allow_group);

/* A fuse description (three group-free norms). */
sn_status sn_check_fuse(const sn_fuse *f, int64_t D);

/* The residual scale c: > 0 and finite. */
sn_status sn_check_scale(float c);

/* One buffer of a call, for the aliasing check. A matrix view spans (R-1)*ld + D elements; a
 * plain vector has ld = 0 and spans n floats. */
typedef struct sn_buf {
    const void *p;     /* NULL buffers are skipped */
    int64_t nelems;    /* elements spanned from p */
    int64_t ld;        /* row stride, 0 for vectors */
    int writes;        /* the call writes this buffer */
    unsigned alias_ok; /* bit j set: may alias buffer j exactly (same pointer and stride) */
    int esize;         /* bytes per element (and the alignment required): 4, or 2 for bf16 */
} sn_buf;

static inline sn_buf sn_mat_buf_dt(const void *p, int64_t R, int64_t D, int64_t ld, sn_dtype dt,
                                   int writes, unsigned alias_ok) {
    sn_buf b = {p, p ? (R - 1) * ld + D : 0, ld, writes, alias_ok, sn_dtype_size(dt)};
    return b;
}
static inline sn_buf sn_mat_buf(const void *p, int64_t R, int64_t D, int64_t ld, int writes,
                                unsigned alias_ok) {
    return sn_mat_buf_dt(p, R, D, ld, SN_DTYPE_F32, writes, alias_ok);
}
static inline sn_buf sn_vec_buf(const void *p, int64_t n, int writes) {
    sn_buf b = {p, n, 0, writes, 0, (int)sizeof(float)};
    return b;
}

/* SN_ERR_ALIGN if a buffer is not aligned to its element size, else
 * SN_ERR_ALIAS if any written buffer overlaps another one, except an allowed exact alias
 * (same pointer, same stride). Empty buffers never overlap. */
sn_status sn_check_alias(const sn_buf *bufs, int n);

#endif
