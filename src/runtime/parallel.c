/* Built-in thread pool (see parallel.h), POSIX threads. Workers sleep on a condition variable
 * between runs after a short spin, so back-to-back calls do not pay a wake-up each time. The
 * caller never waits for a worker to wake: it claims whatever tasks are left itself, then waits
 * only for tasks a worker has claimed (spinning briefly, then sleeping). */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "parallel.h"

#include <stdlib.h>

#ifdef SN_HAVE_PTHREADS
#include <pthread.h>
#include <stdatomic.h>

/* Rounds of `pause` (about 40-140 cycles each) a worker spins for the next run, and the caller
 * for claimed tasks to finish, before sleeping on a condition variable: long enough to bridge
 * the gap between the back-to-back calls of a training step, short enough that an
 * oversubscribed machine (more threads than free cores) gets its CPU back quickly. */
#define SPIN_ROUNDS 20000

/* A run is tagged by a generation number. Tasks are claimed with a compare-and-swap on one
 * word holding (generation << 32 | next index), so a worker that wakes late can never claim a
 * task of another run; the caller claims tasks too and waits only for tasks that were actually
 * claimed, never for a worker to wake up (workers may be descheduled on a busy machine). */
struct sn_pool {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_cond_t finished; /* the last claimed task of a run has finished */
    int n_workers, started, quit;
    int waiting;          /* the caller sleeps on `finished` (under mu) */
    atomic_uint gen;      /* generation of the current run (0: none yet) */
    atomic_ullong claim;  /* gen << 32 | next task index */
    atomic_llong done;    /* tasks of the current run finished */
    atomic_llong n_tasks; /* tasks of the current run */
    sn_task_fn task;
    void *arg;
    pthread_t tid[SN_MAX_THREADS];
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause");
#endif
}

/* claims and runs tasks of generation g until none is left */
static void drain(sn_pool *p, unsigned g) {
    for (;;) {
        unsigned long long c = atomic_load(&p->claim);
        if ((unsigned)(c >> 32) != g) return;
        const int64_t i = (int64_t)(c & 0xffffffffu);
        if (i >= atomic_load(&p->n_tasks)) return;
        if (!atomic_compare_exchange_weak(&p->claim, &c, c + 1)) continue;
        p->task(p->arg, i);
        if (atomic_fetch_add(&p->done, 1) + 1 == atomic_load(&p->n_tasks)) {
            /* the last task: wake the caller if it went to sleep */
            pthread_mutex_lock(&p->mu);
            if (p->waiting) pthread_cond_signal(&p->finished);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void *worker(void *vp) {
    sn_pool *p = vp;
    unsigned seen = 0;
    for (;;) {
        int spins = 0; /* spin briefly for the next run, then sleep */
        while (atomic_load(&p->gen) == seen && spins < SPIN_ROUNDS) {
            cpu_relax();
            spins++;
        }
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->gen) == seen && !p->quit) pthread_cond_wait(&p->wake, &p->mu);
        const int quit = p->quit;
        seen = atomic_load(&p->gen);
        pthread_mutex_unlock(&p->mu);
        if (quit) return NULL;
        drain(p, seen);
    }
}

sn_status sn_pool_start(sn_pool **out, int n) {
    *out = NULL;
    sn_pool *p = calloc(1, sizeof *p);
    if (!p) return SN_ERR_NOMEM;
    if (pthread_mutex_init(&p->mu, NULL)) {
        free(p);
        return SN_ERR_NOMEM;
    }
    if (pthread_cond_init(&p->wake, NULL)) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return SN_ERR_NOMEM;
    }
    if (pthread_cond_init(&p->finished, NULL)) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return SN_ERR_NOMEM;
    }
    atomic_init(&p->gen, 0u);
    atomic_init(&p->claim, 0ull);
    atomic_init(&p->done, 0);
    atomic_init(&p->n_tasks, 0);
    p->n_workers = n - 1;
    for (int i = 0; i < p->n_workers; i++) {
        if (pthread_create(&p->tid[i], NULL, worker, p)) {
            sn_pool_stop(p);
            return SN_ERR_NOMEM;
        }
        p->started++;
    }
    *out = p;
    return SN_OK;
}

void sn_pool_stop(sn_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->finished);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void sn_pool_run(sn_pool *p, int64_t n, sn_task_fn task, void *arg) {
    /* No task of the previous run is unfinished here, but a worker may still be looking at its
     * exhausted claim word: move the word to the new generation (with no task left) before
     * replacing the fields, so that such a worker can never claim a task of this run with the
     * previous run's view, nor this run's task with a stale count. */
    const unsigned g = atomic_load(&p->gen) + 1u == 0u ? 1u : atomic_load(&p->gen) + 1u;
    atomic_store(&p->claim, (unsigned long long)g << 32 | 0xffffffffull);
    p->task = task;
    p->arg = arg;
    atomic_store(&p->n_tasks, n);
    atomic_store(&p->done, 0);
    atomic_store(&p->claim, (unsigned long long)g << 32);
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->gen, g);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p, g);
    /* wait for tasks claimed by workers: spin briefly, then sleep until the last one ends */
    for (int spins = 0; atomic_load(&p->done) < n && spins < SPIN_ROUNDS; spins++) cpu_relax();
    if (atomic_load(&p->done) < n) {
        pthread_mutex_lock(&p->mu);
        p->waiting = 1;
        while (atomic_load(&p->done) < n) pthread_cond_wait(&p->finished, &p->mu);
        p->waiting = 0;
        pthread_mutex_unlock(&p->mu);
    }
}

#else /* no threads in this build */

struct sn_pool {
    int unused;
};

sn_status sn_pool_start(sn_pool **out, int n) {
    (void)n;
    *out = NULL;
    return SN_ERR_UNSUPPORTED;
}

void sn_pool_stop(sn_pool *p) { (void)p; }

void sn_pool_run(sn_pool *p, int64_t n, sn_task_fn task, void *arg) {
    (void)p;
    for (int64_t i = 0; i < n; i++) task(arg, i);
}

#endif
