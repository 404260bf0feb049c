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
 *     order 1 (the SIMD paths use fused multiply-add and other summation orders: each output
 *     differs by a few ulp of the row's largest terms; SN_K_TOL is about six times the worst
 *     difference the checks find on rows up to 4096 wide).
 *
 * `nt` (in sn_rnorm, sn_rfuse, or an argument) lets a SIMD kernel write its final outputs with
 * streaming stores, which skip the read-for-ownership of the destination lines: the drivers set
 * it for calls much larger than the caches. It never changes a value. The scalar path ignores
 * it. Stores into scratch that is read again (h in fuse_s) are never streamed. */
#ifndef SN_KERNELS_H
#define SN_KERNELS_H

#include <string.h>

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
     * them at once */
    int npf;
    const void *pf[6];
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

typedef struct sn_kern {
    /* out = gamma * (v - m) * r + beta; out may equal v */
    void (*norm_row)(const sn_rnorm *q, const float *v, int64_t W, float *out);
    /* the forward of one row: the row's statistics (*m: LayerNorm mean, else 0; *r: rstd,
     * identity and SN_NORM_SCALE 1; LayerNorm is two-pass), then norm_row with *q0 (the norm
     * resolved with m = 0, r = 1) given them; bitwise the same as stats2 on the row, then
     * norm_row */
    void (*norm_fwd)(const sn_norm *n, const sn_rnorm *q0, const float *v, int64_t W, float *out,
                     float *m, float *r);
    /* dgamma += dout * xhat, dbeta += dout over n columns (either may be NULL) */
    void (*norm_pg)(const sn_rnorm *q, const float *dout, const float *v, int64_t n, float *dgamma,
                    float *dbeta);
    /* the whole backward of one row: with sa = ca * mean(g), sb = cb * mean(g * xhat) over
     * the W columns, dv = (+= with acc) r * (g - sa - xhat * sb), and dgamma, dbeta (either may
     * be NULL) get bitwise norm_pg's contribution; dv does not depend on whether they are
     * given. dv may equal dout when !acc */
    void (*norm_bwd)(const sn_rnorm *q, const float *dout, const float *v, int64_t W, float *dv,
                     int acc, float *dgamma, float *dbeta);
    /* norm_bwd of two row segments of one call (arrays of two; the same gamma, beta and W),
     * bitwise the same as norm_bwd on segment 0 then segment 1 */
    void (*norm_bwd2)(const sn_rnorm *q, const float *const *dout, const float *const *v, int64_t W,
                      float *const *dv, int acc, float *dgamma, float *dbeta);
    /* the statistics of two rows at once (norms na over va, nb over vb; as norm_fwd's): each
     * row's bitwise the same whatever the other row and its norm, and as norm_fwd's */
    void (*stats2)(const sn_norm *na, const float *va, const sn_norm *nb, const float *vb,
                   int64_t W, float *ma, float *ra, float *mb, float *rb);
    /* fuse forward of one row: *F holds N_x and N_y resolved; writes u (if non-NULL) and
     * h = s = N_x(x) + N_y(y), and N_out's (no's) statistics of s into *mo, *ro, bitwise the
     * same as stats2 on h; then the caller normalises h */
    void (*fuse_s)(const sn_rfuse *F, int64_t D, const float *x, const float *y, float *u, float *h,
                   const sn_norm *no, float *mo, float *ro);
    /* the whole fuse forward of two rows of one call (arrays of two; u[0] and u[1] both NULL or
     * both set), for a fuse whose N_x and N_y are both LayerNorm or both RMSNorm and whose N_out
     * is LayerNorm or RMSNorm, with D <= SN_FUSE2_MAX: writes u, h and st[q] = {mx, rx, my, ry,
     * mo, ro}, bitwise the same as stats2, fuse_s (s in a stack row) and norm_row on each row.
     * *F0 holds the three norms resolved without statistics (m = 0, r = 1) and nt, and in pf
     * the rows to prefetch for a later call: npf is 0 or 4 (the SIMD kernels spread them over
     * their s sweep, as fuse_bwd does). The two rows' statistics chains are interleaved so
     * that they overlap. */
    void (*fuse_fwd2)(const sn_rfuse *F0, const sn_fuse *f, int64_t D, const float *const x[2],
                      const float *const y[2], float *const u[2], float *const h[2],
                      float st[2][6]);
    /* the six reductions of F from dh, du (NULL: 0), x, y */
    void (*fuse_red)(sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                     const float *y);
    /* parameter gradients over n columns (pointers already offset to the first column) */
    void (*fuse_pg)(const sn_rfuse *F, int64_t n, const float *dh, const float *du, const float *x,
                    const float *y, const sn_dfuse *dp);
    /* input gradients; dx may equal du */
    void (*fuse_dx)(const sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                    const float *y, float *dx, float *dy, int accx, int accy);
    /* the whole backward of one row: fuse_red, fuse_pg (dp NULL: skipped), fuse_dx, bitwise the
     * same as those three; dx may equal du. The reductions may be left out of *F (the SIMD
     * paths compute them in a local copy). */
    void (*fuse_bwd)(sn_rfuse *F, int64_t D, const float *dh, const float *du, const float *x,
                     const float *y, float *dx, float *dy, int accx, int accy, const sn_dfuse *dp);
    /* fuse_bwd of two consecutive rows (arrays of two) of one call, so with the same gamma and
     * beta pointers, bitwise the same as fuse_bwd on row 0 then row 1 (the parameter gradients
     * get row 0's contribution, then row 1's) */
    void (*fuse_bwd2)(sn_rfuse F[2], int64_t D, const float *const dh[2], const float *const du[2],
                      const float *const x[2], const float *const y[2], float *const dx[2],
                      float *const dy[2], int accx, int accy, const sn_dfuse *dp);
    /* out = (+= with acc) a + b / c; out may equal a or b when !acc */
    void (*add_div)(const float *a, const float *b, float c, float *out, int64_t D, int acc,
                    int nt);
    /* xo = u + z / c, yo = y + z (xo may equal u, yo y) */
    void (*apply)(const float *z, const float *u, const float *y, float c, float *xo, float *yo,
                  int64_t D, int nt);
    /* out = alpha * a + b; out may equal a or b */
    void (*axpy)(const float *a, const float *b, float alpha, float *out, int64_t D, int nt);
} sn_kern;

extern const sn_kern sn_kern_scalar;
#ifdef SN_HAVE_AVX2
extern const sn_kern sn_kern_avx2;
#endif
#ifdef SN_HAVE_AVX512
extern const sn_kern sn_kern_avx512;
#endif

/* The table of a path (never NULL: paths not compiled in give the scalar table). */
const sn_kern *sn_kern_for(sn_isa isa);

/* The same kernels on bf16 rows: every row matrix (x, y, u, h, out, dout, dx, ...) is bf16,
 * widened as it is loaded and rounded (sn_k_bf16_round) as it is stored; parameters, their
 * gradients and statistics are float, and the arithmetic is the fp32 table's, step for step.
 * So each slot's outputs are bitwise sn_k_bf16_round of the same path's fp32 slot's outputs on
 * the widened inputs (an accumulated output is widened, added to, rounded), and its float
 * outputs are the fp32 slot's bits. Each slot's contract is its namesake's in sn_kern. Only
 * the SIMD paths have one (their kernels_simd.h instantiated with bf16 rows); the scalar path
 * stages rows in fp32 instead (drive_bf16.c). Not here: norm_pg, and the one-row fuse forward's
 * fuse_s, which keeps h = s in a row of fp32 that is read again (fuses that fuse_fwd2 does not
 * take stage their rows), and the wide fuse backward's fuse_red, fuse_pg and fuse_dx. */
typedef struct sn_kern16 {
    void (*norm_row)(const sn_rnorm *q, const sn_bf16 *v, int64_t W, sn_bf16 *out);
    void (*norm_fwd)(const sn_norm *n, const sn_rnorm *q0, const sn_bf16 *v, int64_t W,
                     sn_bf16 *out, float *m, float *r);
    void (*norm_bwd)(const sn_rnorm *q, const sn_bf16 *dout, const sn_bf16 *v, int64_t W,
                     sn_bf16 *dv, int acc, float *dgamma, float *dbeta);
    void (*norm_bwd2)(const sn_rnorm *q, const sn_bf16 *const *dout, const sn_bf16 *const *v,
                      int64_t W, sn_bf16 *const *dv, int acc, float *dgamma, float *dbeta);
    void (*stats2)(const sn_norm *na, const sn_bf16 *va, const sn_norm *nb, const sn_bf16 *vb,
                   int64_t W, float *ma, float *ra, float *mb, float *rb);
    void (*fuse_fwd2)(const sn_rfuse *F0, const sn_fuse *f, int64_t D, const sn_bf16 *const x[2],
                      const sn_bf16 *const y[2], sn_bf16 *const u[2], sn_bf16 *const h[2],
                      float st[2][6]);
    void (*fuse_bwd)(sn_rfuse *F, int64_t D, const sn_bf16 *dh, const sn_bf16 *du, const sn_bf16 *x,
                     const sn_bf16 *y, sn_bf16 *dx, sn_bf16 *dy, int accx, int accy,
                     const sn_dfuse *dp);
    void (*fuse_bwd2)(sn_rfuse F[2], int64_t D, const sn_bf16 *const dh[2],
                      const sn_bf16 *const du[2], const sn_bf16 *const x[2],
                      const sn_bf16 *const y[2], sn_bf16 *const dx[2], sn_bf16 *const dy[2],
                      int accx, int accy, const sn_dfuse *dp);
    void (*add_div)(const sn_bf16 *a, const sn_bf16 *b, float c, sn_bf16 *out, int64_t D, int acc,
                    int nt);
    void (*apply)(const sn_bf16 *z, const sn_bf16 *u, const sn_bf16 *y, float c, sn_bf16 *xo,
                  sn_bf16 *yo, int64_t D, int nt);
    void (*axpy)(const sn_bf16 *a, const sn_bf16 *b, float alpha, sn_bf16 *out, int64_t D, int nt);
    /* d = sn_k_bf16_widen(s) and d = sn_k_bf16_round(s) elementwise, with the table's own
     * vector widening and rounding: the same bits (paths without a bf16 table use
     * sn_k_bf16_widen_row and sn_k_bf16_round_row) */
    void (*widen)(const sn_bf16 *s, int64_t n, float *d);
    void (*round)(const float *s, int64_t n, sn_bf16 *d);
} sn_kern16;

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

/* The bf16 table of a path; NULL for the scalar path and paths not compiled in. For the AVX-512
 * path, sn_kern16_avx512bf16 where the CPU has AVX512-BF16 and AVX512DQ. */
const sn_kern16 *sn_kern16_for(sn_isa isa);

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
static inline void sn_k_stats_get(sn_rnorm *q, int32_t kind, const float *blk, int64_t ng,
                                  int64_t g) {
    if (kind == SN_NORM_LAYERNORM) {
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

/* Rows converted element by element (the scalar path's conversions; see sn_kern16's widen and
 * round). */
static inline void sn_k_bf16_widen_row(const sn_bf16 *s, int64_t n, float *d) {
    for (int64_t j = 0; j < n; j++) d[j] = sn_k_bf16_widen(s[j]);
}
static inline void sn_k_bf16_round_row(const float *s, int64_t n, sn_bf16 *d) {
    for (int64_t j = 0; j < n; j++) d[j] = sn_k_bf16_round(s[j]);
}

/* The widest row fuse_fwd2 takes, and whether a fuse is of the kind it takes. */
#define SN_FUSE2_MAX 1024
static inline int sn_k_fuse2_ok(const sn_fuse *f, int64_t D) {
    const int32_t k = f->x.kind, o = f->out.kind;
    return D <= SN_FUSE2_MAX && f->y.kind == k &&
           (k == SN_NORM_LAYERNORM || k == SN_NORM_RMSNORM) &&
           (o == SN_NORM_LAYERNORM || o == SN_NORM_RMSNORM);
}

/* Offsets of a fuse's three norms in its parameter block and in a row's stats block. */
typedef struct sn_fuse_layout {
    int64_t px, py, po;
    int64_t sx, sy, so;
} sn_fuse_layout;
sn_fuse_layout sn_k_fuse_layout(const sn_fuse *f, int64_t D);

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
