/* sn-gpt-bench-dist: the cost of the ordered gradient reduction against MPI_Allreduce, on a
 * buffer the size of a model's gradients, alternating the two, reps times each; prints the
 * median and the minimum per call. Run under mpirun:
 *   mpirun -np 2 sn-gpt-bench-dist [floats (828800: sn-gpt-train's default model)] [reps (200)] */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "dist.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    dist d;
    if (dist_init(&d, &argc, &argv) != 0) return 1;
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 828800;
    int reps = argc > 2 ? atoi(argv[2]) : 200;
    float *buf = malloc(n * sizeof(float));
    double *t[2] = {malloc(reps * sizeof(double)), malloc(reps * sizeof(double))};
    if (!buf || !t[0] || !t[1] || reps < 1) return 1;
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
