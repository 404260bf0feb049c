/* Row kernels: the arithmetic of every primitive, one row (or one group of a row) at a time.
 * Arguments are trusted: the public entry points validate before calling.
 *
 * Each kernel path (portable scalar, AVX2+FMA, AVX-512) fills one sn_kern table; the drivers
 * pick the table of the call's context and never depend on the path otherwise. Backward passes
 * come in pieces so that threads can split the parameter gradients by columns while the result
 * stays the same bit for bit: `pg` adds a row's contribution to the parameter gradients over any
 * run of columns (elementwise: splitting the columns never changes a bit); for the fuse, `red`
 * computes a row's reductions and `dx` writes the input gradients from them.
 *
 * Promises, checked slot by slot on every path by tests/checkasm (see docs/reliability.md):
 *   - "bitwise the same as" below holds bit for bit within each path;
 *   - a kernel writes nothing outside the columns it is given;
 *   - the paths agree: every output of a SIMD table is within SN_K_TOL of the scalar table's,
 *     relative to max(1, the largest magnitude of the scalar output row), on rows of values of
 *     order 1 (the SIMD paths use fused multiply-add and their own summation order: each
 *     output differs by a few ulp of the row's largest terms; SN_K_TOL is about six times the
 *     worst difference the checks find on rows up to 4096 wide);
 *   - the SIMD tables agree bit for bit: every slot of every SIMD table gives the first SIMD
 *     path's bits (one summation order, simd_rows.h).
 *
 * `nt` (in sn_rnorm, sn_rfuse, or an argument) lets a SIMD kernel write its final outputs with
 * streaming stores, which skip the read-for-ownership of the destination lines: the drivers set
 * it for calls much larger than the caches. It never changes a value. The scalar path ignores
 * it. Stores into scratch that is read again (h in fuse_s) are never streamed. */
#ifndef SN_KERNELS_H
#define SN_KERNELS_H

#include <stddef.h> /* offsetof */
#include <string.h>

#include "layout.h" /* the row limits, and the sizes and layouts of norms and fuses */
#include "siamesenorm.h"

/* How far a SIMD path's outputs may be from the scalar path's (see above). */
#define SN_K_TOL 5e-5

/* One norm resolved for one row, so that a single formula serves every kind:
 *   xhat = (v - m) * r,   out = gamma * xhat + beta,
 *   dv   = r * (g - ca * mean(g) - cb * xhat * mean(g * xhat)),   g = gamma * dout.
 * LayerNorm: m = mean, r = rstd, ca = cb = 1.  RMSNorm: m = 0, r = rstd, ca = 0, cb = 1.
 * Identity and SN_NORM_SCALE: m = 0, r = 1, ca = cb = 0 (identity: no gamma/beta).
 * gamma NULL means 1, beta NULL means 0. */
typedef struct sn_rnorm {
    float m, r, ca, cb;
    const float *gamma;
    const float *beta;
    int nt; /* the kernels may write their outputs with streaming (non-temporal) stores */
} sn_rnorm;

/* the rows a fuse kernel prefetches for a later call, at most: the backward's dh, du, x, y and
 * the input gradient it accumulates into (with du and both gradients accumulated, dy only) */
#define SN_K_PF_ROWS 5

/* The three norms of a fuse resolved for one row, and the row's backward reductions:
 * oa = O.ca * mean(go * dh), ob = O.cb * mean(go * dh * xs) (N_out); xa, xb likewise for N_x
 * over dt = du + ds; ya, yb for N_y over ds. */
typedef struct sn_rfuse {
    sn_rnorm X, Y, O;
    float oa, ob, xa, xb, ya, yb;
    int nt; /* streaming stores allowed for u (fuse_s) and the input gradients */
    /* rows of D elements (the kernel's: fp32 or bf16) for fuse_bwd, fuse_bwd2 and fuse_fwd2 to
     * prefetch (prefetcht1) for a later call: the SIMD kernels spread them over a sweep, a line
     * per 64 bytes of columns, so that the misses overlap the arithmetic; the others prefetch
     * them at once. At most SN_K_PF_ROWS. */
    int npf;
    const void *pf[SN_K_PF_ROWS];
} sn_rfuse;

/* prefetches the rows F->pf[0 .. npf) of `bytes` bytes each at once */
static inline void sn_k_prefetch_rows(const sn_rfuse *F, int64_t bytes) {
#if defined(__GNUC__)
    for (int i = 0; i < F->npf; i++) {
        const char *p = (const char *)F->pf[i];
        for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b, 0, 2);
        __builtin_prefetch(p + bytes - 1, 0, 2);
    }
#else
    (void)F;
    (void)bytes;
#endif
}

/* Parameter-gradient destinations of a fuse: gamma and beta of N_x, N_y, N_out (NULL: skip). */
typedef struct sn_dfuse {
    float *gx, *bx, *gy, *by, *go, *bo;
} sn_dfuse;

/* A set of row widths: those from min to max columns that leave rem modulo step (step 0:
 * none). */
typedef struct sn_k_widths {
    int64_t min, max, step, rem;
} sn_k_widths;
static inline int sn_k_widths_has(sn_k_widths w, int64_t width) {
    return w.step > 0 && w.min <= width && width <= w.max && width % w.step == w.rem;
}

/* The kinds of call SN_ISA_AUTO composes its tables for (registry.c): at one width a slot may
 * be taken from another path for one kind of call and not for another, where the calls that run
 * it are faster on different paths. */
typedef enum sn_k_call {
    SN_K_CALL_OTHER,     /* the elementwise, conversion and Hyper-Connections calls, and the norm
                          * calls on the norms of kind identity and scale */
    SN_K_CALL_LAYERNORM, /* sn_norm_forward and sn_norm_backward on a LayerNorm */
    SN_K_CALL_RMSNORM,   /* ... on an RMSNorm */
    SN_K_CALL_SUBLAYER,  /* sn_fuse_forward given u, sn_fuse_backward given du (a sub-layer's) */
    SN_K_CALL_MERGE,     /* the fuse calls without them (the merge's: h, dx and dy only) */
    SN_K_CALLS
} sn_k_call;

/* Where a call's rows are, as SN_ISA_AUTO's tables tell calls apart (registry.c): a placement,
 * 0 .. SN_K_PLACES - 1, is a size tier (bits 0 and 1: 0 .. 3, docs/performance.md, "Size
 * tiers") with the bit SN_K_PLACE_OFF32. A call's driver sets them (drive_rows.h, set_mem_at and
 * set_rows_place); calls without memory hints count as placement 0 (tier 0: within the L2). */
enum {
    SN_K_PLACE_PAST_L2 = 1, /* tier 1: the call's matrices span more than SN_D_PAST_L2_MIN_BYTES,
                             * up to SN_D_FAR_MIN_BYTES (past one core's L2) */
    SN_K_PLACE_FAR = 2,     /* tier 2: more than SN_D_FAR_MIN_BYTES, without streaming stores */
    SN_K_PLACE_STREAMS = 3, /* tier 3: the call writes with streaming stores (the drivers' nt) */
    SN_K_PLACE_OFF32 = 4,   /* some row of a row matrix it reads or writes, or a vector of the
                             * parameters it reads, starts off a 32-byte boundary (AVX2's vector:
                             * the boundary that decided, measured; docs/performance.md,
                             * "Elementwise calls as one row, and placements") */
    SN_K_PLACES = 8
};

/* The widths at which the fuse drivers run rows one at a time where they otherwise take them in
 * pairs: fwd, fuse_fwd2 in the forward; bwd, fuse_bwd2 in the backward with parameter gradients.
 * The same bits either way (fuse_fwd2 and fuse_bwd2 are bitwise their rows one at a time). */
typedef struct sn_k_singles {
    sn_k_widths fwd, bwd;
} sn_k_singles;

/* The kernel tables: sn_kern on fp32 rows, sn_kern16 on bf16 rows (table.h, one slot list
 * for both). Each path has one of each. */
/* The most row matrices a Hyper-Connections slot (hc_mix, hc_dots) takes on one side: the n
 * streams and the block output or its gradient, and one more for an accumulated output. */
#define SN_K_HC_MATS (SN_HC_MAX_RATE + 2)

#define SN_KT   sn_kern
#define SN_KROW float
#include "table.h"
#undef SN_KT
#undef SN_KROW
#define SN_KT   sn_kern16
#define SN_KROW sn_bf16
#include "table.h"
#undef SN_KT
#undef SN_KROW

extern const sn_kern sn_kern_scalar;
#ifdef SN_HAVE_AVX2
extern const sn_kern sn_kern_avx2;
#endif
#ifdef SN_HAVE_AVX512
extern const sn_kern sn_kern_avx512;
#endif

/* The table of a path for rows of `width` elements in a call of kind `call` at placement `place`
 * (SN_K_PLACE_*: a size tier and a bit; never NULL: paths not compiled in give the scalar
 * table). A forced path's table ignores all three. The rows are those the kernels see: an
 * elementwise call on contiguous matrices narrower than 2048 columns runs as rows of 2048
 * elements and looks up that width (drive_rows.h, flat_view). SN_ISA_AUTO: the best path's
 * table with some slots (table.h) taken from another path, per CPU family, width class, kind of
 * call and placement (registry.c): the same bits as the best path's own table, whatever the
 * choice. */
const sn_kern *sn_kern_for(sn_isa isa, int64_t width, unsigned place, sn_k_call call);

/* The width classes of SN_ISA_AUTO's tables. By the rows' length: 0, up to 127 elements (the
 * loops' own cost counts); 1, 128 .. 2048 (rows in L1 and L2; see 22 and 24); 2, wider (the
 * rows stream from L2 and beyond). Rows of up to 127 elements are further told apart by how
 * vectors of 8 and of 16 lanes end on them (the 8-lane vectors cover the odd multiples of 8
 * whole, the 16-lane ones only with a half-empty last vector):
 *   6  8 elements: one 8-lane vector, one half-empty 16-lane vector
 *   3  24 elements, where the half-empty vector is a third of the row
 *  12  40 elements (a fifth)
 *  14  56
 *  21  72
 *   5  88
 *  16  104 and 120
 *  15  9 .. 15: one masked 16-lane vector, a whole and a masked 8-lane one
 *   4  the other widths below 24 not a multiple of 8 (1 .. 7, 17 .. 23)
 *  20  not a multiple of 8, 25 .. 31: the last 16-lane vector more than half full
 *  13  not a multiple of 8, 33 .. 39: the last 16-lane vector at most half full
 *  19  not a multiple of 8, 41 .. 47 and 57 .. 63: the last 16-lane vector more than half full
 *  18  not a multiple of 8, 49 .. 55: the last 16-lane vector at most half full
 *  10  not a multiple of 8, 65 .. 127
 *   9  16: one 16-lane vector
 *  11  32: two 16-lane vectors
 *   0  the multiples of 16 from 48 to 112
 * and wider rows that are odd multiples of 8 have their own classes, 23 (136 .. 232), 25
 * (248 .. 504), 7 (520 .. 1208), 17 (1224 .. 2040) and 8 (2056 and wider): in a matrix of such
 * float rows every other row starts half a 64-byte line in, so that every 16-lane load and store
 * of it spans two lines. Classes 22 (128 .. 175), 24 (176 .. 255), 1 (256 .. 2048) and 2 keep
 * the other widths. Classes 11 .. 25 were split from 9, 3, 4, 5, 4, 5, 7, 13, 18, 13, 5, 1, 7,
 * 22 and 23 where the faster path differed within those (registry.c). A representative width
 * of each: sn_k_width_class_rep. */
#define SN_K_WIDTH_CLASSES 26
static const int64_t sn_k_width_class_rep[SN_K_WIDTH_CLASSES] = {
    64, 1024, 2049, 24,  1,    88, 8,  776, 2056, 16,  100, 32,  40,
    36, 56,   12,   120, 1544, 52, 60, 28,  72,   128, 136, 192, 392};
static inline int sn_k_width_class(int64_t width) {
    if (width >= 128) {
        const int half = width % 16 == 8; /* an odd multiple of 8 */
        if (width > 2048) return half ? 8 : 2;
        if (half) return width < 248 ? 23 : width < 512 ? 25 : width < 1224 ? 7 : 17;
        return width < 176 ? 22 : width < 256 ? 24 : 1;
    }
    if (width % 8) {
        const int over = width % 16 > 8; /* the last 16-lane vector more than half full */
        if (width >= 64) return 10;
        if (width < 24) return width > 8 && width < 16 ? 15 : 4;
        return width < 40 ? (over ? 20 : 13) : (over ? 19 : 18);
    }
    if (width == 8) return 6;
    if (width % 16 == 8)
        return width <= 40   ? (width == 24 ? 3 : 12)
               : width == 56 ? 14
               : width == 72 ? 21
               : width < 104 ? 5
                             : 16;
    return width <= 32 ? (width == 16 ? 9 : 11) : 0;
}

/* the scalar path's bf16 table: each slot widens its rows into fp32 rows on the stack, runs the
 * scalar fp32 slot on them and rounds what it wrote (scalar_bf16.c); rows of at most
 * SN_K16_ROW_MAX elements */
extern const sn_kern16 sn_kern16_scalar;
#ifdef SN_HAVE_AVX2
extern const sn_kern16 sn_kern16_avx2;
#endif
#ifdef SN_HAVE_AVX512
extern const sn_kern16 sn_kern16_avx512;
#endif
#ifdef SN_HAVE_AVX512BF16
/* the AVX-512 path's bf16 table rounding with AVX512-BF16 instructions (the same bits) */
extern const sn_kern16 sn_kern16_avx512bf16;
#endif

/* The bf16 table of a path (never NULL: paths not compiled in give the scalar table). For the
 * AVX-512 path, sn_kern16_avx512bf16 where the CPU has AVX512-BF16 and AVX512DQ. SN_ISA_AUTO:
 * the best path's table with slots from other paths, as sn_kern_for (registry.c); the width,
 * `place` and `call` are the drivers' arguments for both lookups. */
const sn_kern16 *sn_kern16_for(sn_isa isa, int64_t width, unsigned place, sn_k_call call);

/* Resolves norm n of width W with its parameter block (may be NULL) and row statistics. */
sn_rnorm sn_k_resolve(const sn_norm *n, int64_t W, const float *params, float m, float r);

/* A row's statistics into a norm resolved without them (m = 0, r = 1): LayerNorm takes m and
 * r, RMSNorm r, the other kinds neither; the same values sn_k_resolve would give. */
static inline void sn_k_set_stats(sn_rnorm *q, int32_t kind, float m, float r) {
    if (kind == SN_NORM_LAYERNORM) {
        q->m = m;
        q->r = r;
    } else if (kind == SN_NORM_RMSNORM) {
        q->r = r;
    }
}

/* group g's statistics in a row's saved block of a norm with ng groups (see "Norm stats" in the
 * header): LayerNorm ng means then ng rstds, RMSNorm ng rstds, the other kinds none */
static inline void sn_k_stats_put(int32_t kind, float *blk, int64_t ng, int64_t g, float m,
                                  float r) {
    if (kind == SN_NORM_LAYERNORM) {
        blk[g] = m;
        blk[ng + g] = r;
    } else if (kind == SN_NORM_RMSNORM) {
        blk[g] = r;
    }
}
_Static_assert(offsetof(sn_rnorm, r) == offsetof(sn_rnorm, m) + sizeof(float),
               "sn_rnorm: r follows m");
static inline void sn_k_stats_get(sn_rnorm *q, int32_t kind, const float *blk, int64_t ng,
                                  int64_t g) {
    if (kind == SN_NORM_LAYERNORM) {
        if (ng == 1) { /* mean and rstd adjacent, as m and r are: one 8-byte move */
            memcpy(&q->m, blk + g, 2 * sizeof(float)); /* (g = 0) */
            return;
        }
        q->m = blk[g];
        q->r = blk[ng + g];
    } else if (kind == SN_NORM_RMSNORM) {
        q->r = blk[g];
    }
}

/* bf16 <-> fp32, one element: widening is exact; rounding is to nearest even on the fp32 bits,
 * a NaN stays a NaN (quieted, sign kept), no flush of subnormals: the one rounding of every
 * path (sn_bf16_from_f32 and every bf16 store). Branch-free, so loops over it vectorise. */
static inline float sn_k_bf16_widen(sn_bf16 v) {
    const uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline sn_bf16 sn_k_bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const uint32_t rne = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, nan = (u >> 16) | 0x0040u;
    return (sn_bf16)((u & 0x7fffffffu) > 0x7f800000u ? nan : rne);
}

/* The fp32 tables' copy, widen and round: the bits moved unchanged. */
static inline void sn_k_copy_f32(const float *a, float *out, int64_t n) {
    memmove(out, a, (size_t)n * sizeof(float));
}
static inline void sn_k_move_f32(const float *s, int64_t n, float *d) {
    memmove(d, s, (size_t)n * sizeof(float));
}

/* Rows converted element by element (the scalar path's conversions; see sn_kern16's widen and
 * round). */
static inline void sn_k_bf16_widen_row(const sn_bf16 *s, int64_t n, float *d) {
    for (int64_t j = 0; j < n; j++) d[j] = sn_k_bf16_widen(s[j]);
}
static inline void sn_k_bf16_round_row(const float *s, int64_t n, sn_bf16 *d) {
    for (int64_t j = 0; j < n; j++) d[j] = sn_k_bf16_round(s[j]);
}

/* Whether fuse_fwd2 takes a fuse on rows of D columns: LayerNorm or RMSNorm kinds, rows of at
 * most SN_K_STACK_ROW_MAX (layout.h). */
static inline int sn_k_fuse2_ok(const sn_fuse *f, int64_t D) {
    const int32_t k = f->x.kind, o = f->out.kind;
    return D <= SN_K_STACK_ROW_MAX && f->y.kind == k &&
           (k == SN_NORM_LAYERNORM || k == SN_NORM_RMSNORM) &&
           (o == SN_NORM_LAYERNORM || o == SN_NORM_RMSNORM);
}

/* The parameter-gradient destinations of a fuse inside dparams (NULL: all NULL). */
sn_dfuse sn_k_fuse_dparams(const sn_fuse *f, const sn_fuse_layout *L, int64_t D, float *dparams);

/* Rows whose fp32 statistics overflow (|values| beyond about 1e18, where a sum of squares
 * exceeds FLT_MAX: rstd would be 0 and the output beta) are rare and never in a healthy
 * network; they get their statistics recomputed in float64, which holds any finite fp32 row.
 * Rows holding a NaN or an infinity keep the fp32 result (propagation). */
void sn_k_stats_f64(const sn_norm *n, const float *v, int64_t W, float *m, float *r);
static inline void sn_k_stats_guard(const sn_norm *n, const float *v, int64_t W, float *m,
                                    float *r) {
    if (!(*r > 0.0f) || !(*m - *m == 0.0f)) sn_k_stats_f64(n, v, W, m, r);
}
/* the same on a bf16 row (its widened values: the same result as on the fp32 row) */
void sn_k_stats_f64_16(const sn_norm *n, const sn_bf16 *v, int64_t W, float *m, float *r);
static inline void sn_k_stats_guard16(const sn_norm *n, const sn_bf16 *v, int64_t W, float *m,
                                      float *r) {
    if (!(*r > 0.0f) || !(*m - *m == 0.0f)) sn_k_stats_f64_16(n, v, W, m, r);
}

#endif
