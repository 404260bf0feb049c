/* checkasm for the kernel table (src/kernels.h): every slot of every path this CPU runs, called
 * directly against the scalar table. The slots are checked in check_norm.c, check_fuse.c and
 * check_elem.c, and the bf16 tables' slots against their path's fp32 slots in check_bf16k.c; this header is the harness they share (checkasm.c): the paths, inputs, rows with
 * canaries around them, the comparisons, and the --bench timer.
 *
 * Each check_* file has one function per slot group, run for every path and width:
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
    const sn_kern16 *K16; /* its bf16 table, checked against K (check_bf16k.c) */
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

/* --bench: nanoseconds per element of fn(arg) over n elements, best of several runs */
extern int ca_bench_on;
void ca_bench(const char *slot, const char *path, int64_t n, void (*fn)(void *), void *arg);

/* the slot groups; p is a path (index 0 is scalar), ref the scalar path */
void check_norm(const ca_path *p, const ca_path *ref);
void check_fuse(const ca_path *p, const ca_path *ref);
void check_elem(const ca_path *p, const ca_path *ref);
void check_bf16k(const ca_path *p);
void bench_norm(const ca_path *p);
void bench_fuse(const ca_path *p);
void bench_elem(const ca_path *p);
void bench_bf16k(const ca_path *p);

#endif
