/* checkasm for the kernel tables (src/kernels/kernels.h): every slot of every path this CPU runs, for
 * each element type, called directly. One file per slot family (check_norm.c, check_fuse.c,
 * check_elem.c), each checking the family for each element type: the fp32 slots against the
 * scalar table's, the bf16 slots against the same path's fp32 slots on the widened inputs (bf16
 * outputs bitwise the rounding, float outputs bitwise). This header is the harness they share
 * (checkasm.c): the paths, the types, inputs, rows with canaries around them, the comparisons,
 * and the --bench timer.
 *
 * (check_hc.c: Hyper-Connections' hc_mix and hc_dots.)
 * Each check_* file has one function per slot group, run for every path, type and width:
 *   ca_close  the path's output against the scalar table's, within SN_K_TOL (kernels.h);
 *   ca_same   a promise of kernels.h that holds bit for bit within a path;
 *   ca_rows_ok (after every call) nothing outside the rows the call was given was written.
 * Each of these is one check of tests/testutil.h (counted, and printed on failure, there). */
#ifndef SN_CHECKASM_H
#define SN_CHECKASM_H

#include "kernels.h"

#include <stdint.h>

/* one kernel path: the scalar table is path 0, the reference of the others */
typedef struct ca_path {
    const char *name;
    const sn_kern *K;
    const sn_kern16 *K16; /* its bf16 table, checked against K (type CA_BF16 of each family) */
} ca_path;

/* the widths every slot is called with: 1..70, then 127, 128, 129, 768, 1000, 4096 (fewer
 * under the sanitizers, see checkasm.c) */
extern const int64_t *ca_widths;
extern int ca_nwidths;

/* the norms every one-norm slot is called with: each kind with each affine mode */
#define CA_NNORMS 12
sn_norm ca_norm(int i);

/* deterministic inputs: uniform in [-1, 1) */
void ca_seed(uint64_t s);
float ca_rand(void);

/* Rows with canaries: each row is allocated with a guard band on both sides filled with a NaN
 * pattern, and starts `off` floats past a 64-byte boundary (4-byte aligned, rarely vector
 * aligned). ca_rows_ok checks every guard band of every row allocated since ca_rows_reset and
 * reports the label on a write outside. ca_rows_reset frees them all. */
float *ca_row(int64_t n, int off);
float *ca_row_rand(int64_t n, int off, float scale, float shift); /* shift + scale * rand */
float *ca_row_copy(const float *src, int64_t n, int off);
/* the same for a row of n bf16 (off in bf16 elements; its canary a signalling NaN) */
sn_bf16 *ca_row16(int64_t n, int off);
void ca_rows_ok(const char *label);
void ca_rows_reset(void);

/* the context of the current check, printed with each failure */
void ca_where(const char *path, const char *slot, int64_t W, const char *fmt, ...);

/* max |a - r| / max(1, max |r|) within SN_K_TOL (NaN fails unless both are NaN) */
void ca_close(const char *what, const float *a, const float *r, int64_t n);
/* bitwise equal */
void ca_same(const char *what, const float *a, const float *b, int64_t n);
/* a free-form check */
void ca_check(int ok, const char *fmt, ...);

/* bf16 rows: random values rounded to bf16 (shift + scale * rand), a copy, the fp32 row of a
 * bf16 row's values; a bf16 row bitwise the rounding of an fp32 row (ca_same16) or bitwise
 * another bf16 row (ca_same16b) */
sn_bf16 *ca_b16_rand(int64_t n, int off, float scale, float shift);
sn_bf16 *ca_b16_copy(const sn_bf16 *src, int64_t n, int off);
float *ca_widen16(const sn_bf16 *b, int64_t n);
void ca_same16(const char *what, const sn_bf16 *a, const float *r, int64_t n);
void ca_same16b(const char *what, const sn_bf16 *a, const sn_bf16 *b, int64_t n);

/* the element types of the row matrices; each family is checked for each */
typedef enum ca_type { CA_F32, CA_BF16, CA_NTYPES } ca_type;
extern const char *const ca_type_names[CA_NTYPES];

/* the slot families, for type t; p is a path (index 0 is scalar), ref the scalar path (the
 * reference of the fp32 slots; the bf16 slots' is p's fp32 table) */
void check_norm(const ca_path *p, const ca_path *ref, ca_type t);
void check_fuse(const ca_path *p, const ca_path *ref, ca_type t);
void check_elem(const ca_path *p, const ca_path *ref, ca_type t);
void check_hc(const ca_path *p, const ca_path *ref, ca_type t);

/* --bench (bench.c): every slot of both tables (only the slot named `only`, unless NULL) at
 * widths Ds[0 .. nd) (nd at most CA_BENCH_MAX_WIDTHS) on paths[0 .. np) (the forced paths as the
 * public calls run them, scalar first, then `auto`, last: its tables are taken for each width),
 * interleaved in `rounds` rounds, on norms ca_norm(norm) (the fuse slots: a fuse of three of
 * it); prints each case and the cases where auto is slower beyond the noise */
#define CA_BENCH_MAX_WIDTHS 16
#define CA_BENCH_MAX_ROUNDS 101 /* --rounds: 3 .. this */
void ca_bench_all(const ca_path *paths, int np, int rounds, const int64_t *Ds, int nd,
                  const char *only, int norm);

/* the slots of bench.c (every slot of table.h), and whether slot s of type t gives the same
 * bits on tables a and b (on the bench's LayerNorm, RMSNorm and parameterless fixtures, widths
 * 1 .. 4096; every output compared byte for byte) */
int ca_bench_nslots(void);
const char *ca_bench_slot_name(int s);
int ca_bench_same_bits(const ca_path *a, const ca_path *b, ca_type t, int s);
/* whether tables a and b hold the same function in slot s of type t */
int ca_bench_same_fn(const ca_path *a, const ca_path *b, ca_type t, int s);

#endif
