/* Data-parallel reductions over MPI with a fixed summation order (see dist.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dist.h"

#ifdef SN_GPT_MPI
#include <mpi.h>
#endif

uint64_t dist_digest(const float *x, size_t n) {
    const unsigned char *p = (const unsigned char *)x;
    size_t bytes = n * sizeof(float), words = bytes / 8;
    uint64_t h[4] = {0xCBF29CE484222325ull, 0x84222325CBF29CE4ull, 0x9E3779B97F4A7C15ull,
                     0xD1B54A32D192ED03ull};
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, 8);
        h[i & 3] = (h[i & 3] ^ w) * 0x100000001B3ull;
    }
    uint64_t r = 0xCBF29CE484222325ull ^ (uint64_t)bytes;
    for (size_t i = 8 * words; i < bytes; i++) r = (r ^ p[i]) * 0x100000001B3ull;
    for (int k = 0; k < 4; k++)
        for (int s = 0; s < 64; s += 8) r = (r ^ ((h[k] >> s) & 0xFF)) * 0x100000001B3ull;
    return r;
}

/* Started by a launcher: OpenMPI's mpirun, MPICH's Hydra (PMI) or a PMIx launcher. A plain
 * `sn-gpt-train` never initialises MPI (no singleton start-up cost, no MPI messages). */
static int launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

#ifndef SN_GPT_MPI

int dist_available(void) { return 0; }

int dist_init(dist *d, int *argc, char ***argv) {
    (void)argc, (void)argv;
    memset(d, 0, sizeof *d);
    d->size = 1;
    if (launched())
        fprintf(stderr, "warning: started by an MPI launcher, but this build has no MPI: every "
                        "process trains alone (rebuild with libopenmpi-dev installed)\n");
    return 0;
}

void dist_finalize(dist *d) { memset(d, 0, sizeof *d); }
void dist_abort(dist *d, int status) { (void)d, exit(status); }
void dist_sum_floats(dist *d, float *buf, size_t n) { (void)d, (void)buf, (void)n; }
void dist_sum_doubles(dist *d, double *buf, int n) { (void)d, (void)buf, (void)n; }
void dist_bcast_int(dist *d, int *v) { (void)d, (void)v; }
int dist_same_digest(dist *d, uint64_t digest) { return (void)d, (void)digest, 1; }

#else

int dist_available(void) { return 1; }

int dist_init(dist *d, int *argc, char ***argv) {
    memset(d, 0, sizeof *d);
    d->size = 1;
    if (!launched()) return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Init failed\n");
        return -1;
    }
    d->mpi = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    return 0;
}

void dist_finalize(dist *d) {
    if (d->mpi) MPI_Finalize();
    free(d->recv);
    memset(d, 0, sizeof *d);
}

void dist_abort(dist *d, int status) {
    if (d->mpi && d->size > 1) MPI_Abort(MPI_COMM_WORLD, status);
    exit(status);
}

/* Rank k owns elements [n k / P, n (k+1) / P). */
static size_t chunk_start(size_t n, int k, int P) { return n * (size_t)k / (size_t)P; }

void dist_sum_floats(dist *d, float *buf, size_t n) {
    if (d->size < 2) return;
    /* the barrier separates waiting for the slowest rank (load imbalance, a busy core) from
     * the reduction's own cost; it costs one small message round */
    double tw = now_s();
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    d->t_wait += t0 - tw;
    if (d->reduce == DIST_ALLREDUCE) {
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else {
        /* 1. reduce-scatter by owner: rank j sends its copy of chunk k to rank k, which
         *    receives P pieces, piece j from rank j (MPI_Alltoallv only moves bytes);
         * 2. the owner adds them up in rank order 0, 1, ..., P-1, element by element;
         * 3. allgather: every rank receives every owner's summed chunk, byte for byte.
         * Each rank sends and receives 2 (P-1)/P of the buffer, as a ring allreduce does, but
         * the order of every sum is fixed by the rank numbers alone. */
        int P = d->size, me = d->rank;
        size_t lo = chunk_start(n, me, P), len = chunk_start(n, me + 1, P) - lo;
        size_t need = (size_t)P * (n / (size_t)P + 1);
        if (d->n_recv < need) {
            free(d->recv);
            d->recv = malloc(need * sizeof(float));
            d->n_recv = d->recv ? need : 0;
            if (!d->recv) {
                fprintf(stderr, "rank %d: out of memory\n", me);
                dist_abort(d, 1);
            }
        }
        int *cnt = malloc(4 * (size_t)P * sizeof(int));
        if (!cnt) dist_abort(d, 1);
        int *sdisp = cnt + P, *rcnt = cnt + 2 * P, *rdisp = cnt + 3 * P;
        for (int k = 0; k < P; k++) {
            cnt[k] = (int)(chunk_start(n, k + 1, P) - chunk_start(n, k, P));
            sdisp[k] = (int)chunk_start(n, k, P);
            rcnt[k] = (int)len;
            rdisp[k] = (int)(k * len);
        }
        MPI_Alltoallv(buf, cnt, sdisp, MPI_FLOAT, d->recv, rcnt, rdisp, MPI_FLOAT, MPI_COMM_WORLD);
        float *own = buf + lo;
        memcpy(own, d->recv, len * sizeof(float));
        for (int j = 1; j < P; j++) {
            const float *piece = d->recv + (size_t)j * len;
            for (size_t i = 0; i < len; i++) own[i] += piece[i];
        }
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, buf, cnt, sdisp, MPI_FLOAT, MPI_COMM_WORLD);
        free(cnt);
    }
    d->t_reduce += now_s() - t0;
    d->n_reduce++;
}

void dist_sum_doubles(dist *d, double *buf, int n) {
    if (d->size < 2) return;
    double *all = malloc((size_t)d->size * (size_t)n * sizeof(double));
    if (!all) dist_abort(d, 1);
    MPI_Allgather(buf, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int k = 0; k < n; k++) {
        double s = all[k];
        for (int j = 1; j < d->size; j++) s += all[(size_t)j * n + k];
        buf[k] = s;
    }
    free(all);
}

void dist_bcast_int(dist *d, int *v) {
    if (d->size > 1) MPI_Bcast(v, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

int dist_same_digest(dist *d, uint64_t digest) {
    if (d->size < 2) return 1;
    uint64_t *all = malloc((size_t)d->size * sizeof(uint64_t));
    if (!all) dist_abort(d, 1);
    MPI_Allgather(&digest, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    int same = 1;
    for (int j = 0; j < d->size; j++) same &= all[j] == digest;
    free(all);
    /* a rank that differs makes `same` 0 on every rank, since every rank compares all */
    return same;
}

#endif
