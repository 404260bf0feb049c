/* sn-gpt-bench-dist: the cost of the ordered gradient reduction against MPI_Allreduce, on a
 * buffer the size of a model's gradients, alternating the two, reps times each; prints the
 * median and the minimum per call. Run under mpirun:
 *   mpirun -np 2 sn-gpt-bench-dist [floats (828800: sn-gpt-train's default model)] [reps (200)] */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "dist.h"
#include "numarg.h"

/* floats: at most INT_MAX (MPI_Allreduce takes an int count; 8 GiB of floats); reps: at most
 * 1e6 (each rep times both reductions) */
#define BENCH_MAX_FLOATS ((uint64_t)INT_MAX)
#define BENCH_MAX_REPS   1000000

static int usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [floats (1..%d, default 828800)] [reps (1..%d, default 200)]\n"
            "  (run under mpirun -np P)\n",
            prog, INT_MAX, BENCH_MAX_REPS);
    return 2;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    dist d;
    if (dist_init(&d, &argc, &argv) != 0) {
        fprintf(stderr, "sn-gpt-bench-dist: MPI initialisation failed\n");
        return 1;
    }
    uint64_t n64 = 828800;
    int reps = 200;
    if (argc > 3 || (argc > 1 && na_u64("floats", argv[1], 1, BENCH_MAX_FLOATS, &n64) != 0) ||
        (argc > 2 && na_int("reps", argv[2], 1, BENCH_MAX_REPS, &reps) != 0)) {
        int rc = usage(argv[0]);
        dist_finalize(&d);
        return rc;
    }
    if (n64 > SIZE_MAX / sizeof(float)) {
        fprintf(stderr, "sn-gpt-bench-dist: %llu floats do not fit in this address space\n",
                (unsigned long long)n64);
        dist_finalize(&d);
        return 2;
    }
    size_t n = (size_t)n64;
    float *buf = malloc(n * sizeof(float));
    double *t[2] = {malloc((size_t)reps * sizeof(double)), malloc((size_t)reps * sizeof(double))};
    if (!buf || !t[0] || !t[1]) {
        fprintf(stderr, "sn-gpt-bench-dist: out of memory for %zu floats and %d reps\n", n, reps);
        free(buf), free(t[0]), free(t[1]);
        dist_abort(&d, 1); /* the other ranks may have their buffers: end them too */
    }
    for (int r = 0; r < reps; r++)
        for (int mode = 0; mode < 2; mode++) {
            for (size_t i = 0; i < n; i++) /* small values: the sums stay finite */
                buf[i] = (float)((i * 2654435761u + (size_t)d.rank) % 1000) * 1e-3f;
            d.reduce = mode;
            double before = d.t_reduce;
            dist_sum_floats(&d, buf, n); /* a barrier first, not counted */
            t[mode][r] = d.t_reduce - before;
        }
    if (d.rank == 0) {
        for (int mode = 0; mode < 2; mode++) {
            qsort(t[mode], reps, sizeof(double), cmp);
            printf("%-13s %d ranks, %zu floats (%.2f MB): median %.3f ms, min %.3f ms over %d\n",
                   mode == DIST_ORDERED ? "ordered" : "MPI_Allreduce", d.size, n, 4e-6 * n,
                   1e3 * t[mode][reps / 2], 1e3 * t[mode][0], reps);
        }
    }
    free(buf), free(t[0]), free(t[1]);
    dist_finalize(&d);
    return 0;
}
