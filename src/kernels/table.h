/* The kernel table of one element type, written once: kernels.h includes this twice, with
 * SN_KT (the table's type name) and SN_KROW (the element type of its row matrices) defined:
 * sn_kern on float rows, sn_kern16 on sn_bf16 rows. Every row matrix (x, y, u, h, out, dout,
 * dx, ...) is of SN_KROW; parameters, their gradients, statistics and the fuse forward's s row
 * are float. A bf16 table's arithmetic is its path's fp32 table's, step for step, with the rows
 * widened as they are loaded and rounded (sn_k_bf16_round) as they are stored: each bf16 output
 * is bitwise the rounding of the same path's fp32 slot's output on the widened inputs (an
 * accumulated output is widened, added to, rounded), and each float output is the fp32 slot's
 * bits.
 *
 * Bits across paths: every slot gives the same bits on every SIMD path (AVX2, AVX-512): the
 * lane slots compute each output element from its own column with the same operations, and
 * every reduction sums in one order whatever the vector width (simd_rows.h, "The reductions").
 * The scalar path has its own arithmetic, except in copy, widen and round (the same memmove).
 * SN_ISA_AUTO's tables may therefore take any slot from another SIMD path, and those three
 * from the scalar path (registry.c); checkasm checks both. No include guard: included once per
 * table type. */
typedef struct SN_KT {
    /* out = gamma * (v - m) * r + beta; out may equal v */
    void (*norm_row)(const sn_rnorm *q, const SN_KROW *v, int64_t W, SN_KROW *out);
    /* norm_row from a float row s (the one-row fuse forward's s): out = N(s) */
    void (*norm_s)(const sn_rnorm *q, const float *s, int64_t W, SN_KROW *out);
    /* the forward of one row: the row's statistics (*m: LayerNorm mean, else 0; *r: rstd,
     * identity and SN_NORM_SCALE 1; LayerNorm is two-pass), then norm_row with *q0 (the norm
     * resolved with m = 0, r = 1) given them; bitwise the same as stats2 on the row, then
     * norm_row */
    void (*norm_fwd)(const sn_norm *n, const sn_rnorm *q0, const SN_KROW *v, int64_t W,
                     SN_KROW *out, float *m, float *r);
    /* dgamma += dout * xhat, dbeta += dout over n columns (either may be NULL) */
    void (*norm_pg)(const sn_rnorm *q, const SN_KROW *dout, const SN_KROW *v, int64_t n,
                    float *dgamma, float *dbeta);
    /* the whole backward of one row: with sa = ca * mean(g), sb = cb * mean(g * xhat) over
     * the W columns, dv = (+= with acc) r * (g - sa - xhat * sb), and dgamma, dbeta (either may
     * be NULL) get bitwise norm_pg's contribution; dv does not depend on whether they are
     * given. dv may equal dout when !acc */
    void (*norm_bwd)(const sn_rnorm *q, const SN_KROW *dout, const SN_KROW *v, int64_t W,
                     SN_KROW *dv, int acc, float *dgamma, float *dbeta);
    /* norm_bwd of two row segments of one call (arrays of two; the same gamma, beta and W),
     * bitwise the same as norm_bwd on segment 0 then segment 1 */
    void (*norm_bwd2)(const sn_rnorm *q, const SN_KROW *const *dout, const SN_KROW *const *v,
                      int64_t W, SN_KROW *const *dv, int acc, float *dgamma, float *dbeta);
    /* the statistics of two rows at once (norms na over va, nb over vb; as norm_fwd's): each
     * row's bitwise the same whatever the other row and its norm, and as norm_fwd's */
    void (*stats2)(const sn_norm *na, const SN_KROW *va, const sn_norm *nb, const SN_KROW *vb,
                   int64_t W, float *ma, float *ra, float *mb, float *rb);
    /* fuse forward of one row: *F holds N_x and N_y resolved; writes u (if non-NULL) and the
     * float row s = N_x(x) + N_y(y), and N_out's (no's) statistics of s into *mo, *ro, bitwise
     * the same as stats2 on s; then the caller normalises s into h (norm_s) */
    void (*fuse_s)(const sn_rfuse *F, int64_t D, const SN_KROW *x, const SN_KROW *y, SN_KROW *u,
                   float *s, const sn_norm *no, float *mo, float *ro);
    /* the whole fuse forward of two rows of one call (arrays of two; u[0] and u[1] both NULL or
     * both set), for a fuse whose N_x and N_y are both LayerNorm or both RMSNorm and whose N_out is
     * LayerNorm or RMSNorm, with D <= SN_K_STACK_ROW_MAX: writes u, h and st[q] = {mx, rx, my, ry,
     * mo, ro}, bitwise the same as stats2, fuse_s and norm_s on each row. *F0 holds the three norms
     * resolved without statistics (m = 0, r = 1) and nt, and in pf the rows to prefetch for a later
     * call: npf is 0 or 4 (the SIMD kernels spread them over their s sweep, as fuse_bwd does). The
     * two rows' statistics chains are interleaved so that they overlap. */
    void (*fuse_fwd2)(const sn_rfuse *F0, const sn_fuse *f, int64_t D, const SN_KROW *const x[2],
                      const SN_KROW *const y[2], SN_KROW *const u[2], SN_KROW *const h[2],
                      float st[2][6]);
    /* the six reductions of F from dh, du (NULL: 0), x, y */
    void (*fuse_red)(sn_rfuse *F, int64_t D, const SN_KROW *dh, const SN_KROW *du, const SN_KROW *x,
                     const SN_KROW *y);
    /* parameter gradients over n columns (pointers already offset to the first column) */
    void (*fuse_pg)(const sn_rfuse *F, int64_t n, const SN_KROW *dh, const SN_KROW *du,
                    const SN_KROW *x, const SN_KROW *y, const sn_dfuse *dp);
    /* input gradients; dx may equal du */
    void (*fuse_dx)(const sn_rfuse *F, int64_t D, const SN_KROW *dh, const SN_KROW *du,
                    const SN_KROW *x, const SN_KROW *y, SN_KROW *dx, SN_KROW *dy, int accx,
                    int accy);
    /* the whole backward of one row: fuse_red, fuse_pg (dp NULL: skipped), fuse_dx, bitwise the
     * same as those three; dx may equal du. The reductions may be left out of *F (the SIMD
     * paths compute them in a local copy). */
    void (*fuse_bwd)(sn_rfuse *F, int64_t D, const SN_KROW *dh, const SN_KROW *du, const SN_KROW *x,
                     const SN_KROW *y, SN_KROW *dx, SN_KROW *dy, int accx, int accy,
                     const sn_dfuse *dp);
    /* fuse_bwd of two consecutive rows (arrays of two) of one call, so with the same gamma and
     * beta pointers, bitwise the same as fuse_bwd on row 0 then row 1 (the parameter gradients
     * get row 0's contribution, then row 1's) */
    void (*fuse_bwd2)(sn_rfuse F[2], int64_t D, const SN_KROW *const dh[2],
                      const SN_KROW *const du[2], const SN_KROW *const x[2],
                      const SN_KROW *const y[2], SN_KROW *const dx[2], SN_KROW *const dy[2],
                      int accx, int accy, const sn_dfuse *dp);
    /* out = (+= with acc) a + b / c; out may equal a or b when !acc */
    void (*add_div)(const SN_KROW *a, const SN_KROW *b, float c, SN_KROW *out, int64_t D, int acc,
                    int nt);
    /* xo = u + z / c, yo = y + z (xo may equal u, yo y) */
    void (*apply)(const SN_KROW *z, const SN_KROW *u, const SN_KROW *y, float c, SN_KROW *xo,
                  SN_KROW *yo, int64_t D, int nt);
    /* Hyper-Connections' stream mixing (docs/SPEC.md): out[o] = sum_k w[o * nin + k] * in[k]
     * for o < nout, over D columns (1 <= nin, nout <= SN_K_HC_MATS). Per column a left fold
     * over k starting from the product w[o * nin] * in[0] (the SIMD paths add each further
     * product with a fused multiply-add, the scalar path with a product and a sum), so weights
     * 0 and 1 reproduce a plain sum bit for bit. Every input of a column is loaded before any
     * output of it is stored: out[o] may equal any in[k]. */
    void (*hc_mix)(const SN_KROW *const *in, int nin, const float *w, SN_KROW *const *out, int nout,
                   int64_t D, int nt);
    /* Hyper-Connections' per-row weight gradients: out[p * nb + q] += the dot product of a[p]
     * and b[q] over D columns (na, nb <= SN_K_HC_MATS), as a reduction of the path (the
     * scalar path adds each product to out in column order, so a row cut into column blocks
     * gives the same bits) */
    void (*hc_dots)(const SN_KROW *const *a, int na, const SN_KROW *const *b, int nb, int64_t D,
                    float *out);
    /* Dynamic Hyper-Connections' projections, between a row x and float parameter rows w[c]
     * (c < nw <= SN_K_HC_MATS), over D columns (n for hc_wsum):
     *   hc_proj  out[c] += the dot product of x and w[c] (a reduction of the path; the scalar
     *            path adds each product in column order, as hc_dots)
     *   hc_wmix  out = sum_c coef[c] * w[c] (per column a left fold over c, as hc_mix)
     *   hc_wsum  dw[c] += coef[c] * x, column by column (any run of columns: the same bits) */
    void (*hc_proj)(const SN_KROW *x, int64_t D, const float *const *w, int nw, float *out);
    void (*hc_wmix)(const float *const *w, int nw, const float *coef, SN_KROW *out, int64_t D,
                    int nt);
    void (*hc_wsum)(const SN_KROW *x, int64_t n, const float *coef, int nw, float *const *dw);
    /* out = alpha * a + b; out may equal a or b */
    void (*axpy)(const SN_KROW *a, const SN_KROW *b, float alpha, SN_KROW *out, int64_t D, int nt);
    /* out = a, element by element as the type copies: fp32 bits moved unchanged (out may overlap
     * a), bf16 widened and rounded (the same bits, NaNs quieted; out may equal a) */
    void (*copy)(const SN_KROW *a, SN_KROW *out, int64_t n);
    /* d = s widened to float, and d = s rounded from float (fp32 rows: copies; bf16 rows:
     * sn_k_bf16_widen and sn_k_bf16_round, with the table's own vectors: the same bits) */
    void (*widen)(const SN_KROW *s, int64_t n, float *d);
    void (*round)(const float *s, int64_t n, SN_KROW *d);
    /* d += the n >= 1 float rows s, s + lds, ..., s + (n - 1) * lds, each column a left fold in
     * row order, ((d + s_0) + s_1) + ...: plain additions, so the same bits on every path and in
     * any run of columns (the parameter-gradient chunks' sums, drive_rows.h) */
    void (*fold)(const float *s, int64_t lds, int64_t n, float *d, int64_t D);
    /* Not slots: the widest rows (or norm groups) on which this path's stats2 and norm_bwd2 take
     * less time than two calls of norm_fwd and norm_bwd, their rows in the caches (the two rows'
     * dependency chains overlap); 0 where pairs gain nothing beyond the drivers' short segments.
     * The norm drivers pair rows up to these widths in calls whose rows stay in the caches
     * (drive_rows.h, norm_pairs). The same bits either way. */
    int64_t pair_w_fwd, pair_w_bwd;
    /* Not slots: the widths at which the fuse drivers run rows one at a time (kernels.h,
     * sn_k_singles), where two single rows take less time than a pair on the CPU at hand. None
     * in every path's own table; SN_ISA_AUTO's tables of the fuse calls take them per CPU
     * family and kind of call (registry.c). */
    sn_k_singles single;
} SN_KT;
