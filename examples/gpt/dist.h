/*
 * Data-parallel training over MPI (dist.c): the ranks, and the reductions the trainer needs,
 * each with a fixed summation order so that a run is bitwise the same from run to run at a given
 * rank count and every rank ends every step with the same bytes.
 *
 * Without MPI (the build found none, or the program was not started by an MPI launcher) there
 * is one rank and every call is a no-op; the trainer runs as it always did.
 */
#ifndef SN_GPT_DIST_H
#define SN_GPT_DIST_H

#include <stddef.h>
#include <stdint.h>

typedef enum dist_reduce {
    DIST_ORDERED = 0,  /* owner-ordered: reduce-scatter by owner, sum in rank order, allgather */
    DIST_ALLREDUCE = 1 /* MPI_Allreduce(MPI_SUM): the library's choice of order (for timing) */
} dist_reduce;

typedef struct dist {
    int rank, size; /* this process, and how many: 0 and 1 without MPI */
    int mpi;        /* 1: MPI_Init was called here (MPI_Finalize is due) */
    int reduce;     /* dist_reduce of dist_sum_floats */
    float *recv;    /* [size x chunk] the pieces of this rank's chunk, one per rank */
    size_t n_recv;
    double t_wait;   /* seconds dist_sum_floats waited for the slowest rank (a barrier first) */
    double t_reduce; /* seconds it then spent reducing, summed over the calls */
    long n_reduce;   /* its calls */
} dist;

/* 1 when this build has MPI. */
int dist_available(void);
/* Initialises MPI when the process was started by an MPI launcher (mpirun / mpiexec: OpenMPI,
 * MPICH or a PMIx launcher sets the environment), else one rank. Returns 0 or -1. */
int dist_init(dist *d, int *argc, char ***argv);
void dist_finalize(dist *d);
/* Ends every rank with `status` (MPI_Abort): for errors one rank sees alone. */
void dist_abort(dist *d, int status);

/* buf[0..n) = the sum over ranks of every rank's buf, in place, the same bytes on every rank.
 * DIST_ORDERED: element k of the result is ((b_0[k] + b_1[k]) + b_2[k]) + ... + b_{P-1}[k],
 * whatever P and whatever algorithm the MPI library picks, since MPI only moves bytes here. */
void dist_sum_floats(dist *d, float *buf, size_t n);
/* The same for a few doubles (loss sums and counts), always in rank order. */
void dist_sum_doubles(dist *d, double *buf, int n);
/* rank 0's *v on every rank. */
void dist_bcast_int(dist *d, int *v);
/* 1 when every rank passed the same digest, on every rank. */
int dist_same_digest(dist *d, uint64_t digest);

/* A 64-bit digest of n floats' bytes (four interleaved FNV-1a lanes over 8-byte words, folded:
 * fast enough to run after every step). */
uint64_t dist_digest(const float *x, size_t n);

#endif
