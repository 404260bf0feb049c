/* checkasm: the elementwise slots (add_div, apply, axpy) of kernels.h: against scalar, every
 * aliasing the header allows, and streaming stores. */
#include "checkasm.h"

#include <stdlib.h>
#include <string.h>

static void check_add_div(const ca_path *p, const ca_path *ref, int64_t D, int off) {
    const float *a = ca_row_rand(D, off, 1.0f, 0.0f), *b = ca_row_rand(D, off + 1, 2.0f, 0.5f);
    const float c = 1.7f;
    for (int acc = 0; acc < 2; acc++) {
        float *out = ca_row(D, off + 2), *out_r = ca_row(D, 0);
        p->K->add_div(a, b, c, out, D, acc, 0);
        ref->K->add_div(a, b, c, out_r, D, acc, 0);
        ca_close("add_div", out, out_r, D);
        if (acc) continue;
        float *ia = ca_row_copy(a, D, off), *ib = ca_row_copy(b, D, off + 1), *nt = ca_row(D, 0);
        p->K->add_div(ia, b, c, ia, D, 0, 0);
        p->K->add_div(a, ib, c, ib, D, 0, 0);
        p->K->add_div(a, b, c, nt, D, 0, 1);
        ca_same("add_div out = a", ia, out, D);
        ca_same("add_div out = b", ib, out, D);
        ca_same("add_div streaming", nt, out, D);
    }
    ca_rows_ok("add_div");
}

static void check_apply(const ca_path *p, const ca_path *ref, int64_t D, int off) {
    const float *z = ca_row_rand(D, off, 1.0f, 0.0f), *u = ca_row_rand(D, off + 1, 1.0f, 1.0f),
                *y = ca_row_rand(D, off + 2, 3.0f, 0.0f);
    const float c = 2.3f;
    float *xo = ca_row(D, off + 3), *yo = ca_row(D, off + 4);
    float *xo_r = ca_row(D, 0), *yo_r = ca_row(D, 0);
    p->K->apply(z, u, y, c, xo, yo, D, 0);
    ref->K->apply(z, u, y, c, xo_r, yo_r, D, 0);
    ca_close("apply xo", xo, xo_r, D);
    ca_close("apply yo", yo, yo_r, D);
    float *iu = ca_row_copy(u, D, off + 1), *iy = ca_row_copy(y, D, off + 2);
    p->K->apply(z, iu, iy, c, iu, iy, D, 0);
    ca_same("apply xo = u", iu, xo, D);
    ca_same("apply yo = y", iy, yo, D);
    float *nx = ca_row(D, 0), *ny = ca_row(D, 0);
    p->K->apply(z, u, y, c, nx, ny, D, 1);
    ca_same("apply streaming xo", nx, xo, D);
    ca_same("apply streaming yo", ny, yo, D);
    ca_rows_ok("apply");
}

static void check_axpy(const ca_path *p, const ca_path *ref, int64_t D, int off) {
    const float *a = ca_row_rand(D, off, 1.0f, 0.0f), *b = ca_row_rand(D, off + 1, 1.0f, 0.25f);
    const float alpha = 1.3f;
    float *out = ca_row(D, off + 2), *out_r = ca_row(D, 0);
    p->K->axpy(a, b, alpha, out, D, 0);
    ref->K->axpy(a, b, alpha, out_r, D, 0);
    ca_close("axpy", out, out_r, D);
    float *ia = ca_row_copy(a, D, off), *ib = ca_row_copy(b, D, off + 1), *nt = ca_row(D, 0);
    p->K->axpy(ia, b, alpha, ia, D, 0);
    p->K->axpy(a, ib, alpha, ib, D, 0);
    p->K->axpy(a, b, alpha, nt, D, 1);
    ca_same("axpy out = a", ia, out, D);
    ca_same("axpy out = b", ib, out, D);
    ca_same("axpy streaming", nt, out, D);
    ca_rows_ok("axpy");
}

void check_elem(const ca_path *p, const ca_path *ref) {
    for (int wi = 0; wi < ca_nwidths; wi++) {
        const int64_t D = ca_widths[wi];
        const int off = (int)(D % 16);
        ca_seed((uint64_t)D);
        ca_where(p->name, "elementwise", D, "offset %d", off);
        check_add_div(p, ref, D, off);
        check_apply(p, ref, D, off);
        check_axpy(p, ref, D, off);
        ca_rows_reset();
    }
}

/* ---- --bench ------------------------------------------------------------------------------- */

typedef struct be {
    const sn_kern *K;
    int64_t D;
    float *a, *b, *c, *o1, *o2;
} be;

static void b_add_div(void *arg) {
    be *e = arg;
    e->K->add_div(e->a, e->b, 1.7f, e->o1, e->D, 0, 0);
}
static void b_apply(void *arg) {
    be *e = arg;
    e->K->apply(e->a, e->b, e->c, 2.3f, e->o1, e->o2, e->D, 0);
}
static void b_axpy(void *arg) {
    be *e = arg;
    e->K->axpy(e->a, e->b, 1.3f, e->o1, e->D, 0);
}

void bench_elem(const ca_path *p) {
    const int64_t Ds[3] = {64, 768, 4096};
    for (int di = 0; di < 3; di++) {
        const int64_t D = Ds[di];
        be e = {p->K,
                D,
                ca_row_rand(D, 0, 1.0f, 0.0f),
                ca_row_rand(D, 0, 1.0f, 0.0f),
                ca_row_rand(D, 0, 1.0f, 0.0f),
                ca_row(D, 0),
                ca_row(D, 0)};
        ca_bench("add_div", p->name, D, b_add_div, &e);
        ca_bench("apply", p->name, D, b_apply, &e);
        ca_bench("axpy", p->name, D, b_axpy, &e);
        ca_rows_reset();
    }
}
