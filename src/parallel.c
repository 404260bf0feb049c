/* Built-in thread pool (see parallel.h), POSIX threads. Workers sleep on a condition variable
 * between runs after a short spin, so back-to-back calls do not pay a wake-up each time. */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "parallel.h"

#include <stdlib.h>

#ifdef SN_HAVE_PTHREADS
#include <pthread.h>
#include <stdatomic.h>

#define SPIN_ROUNDS 20000

struct sn_pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    int n_workers, started, quit;
    atomic_uint gen;         /* bumped by every run */
    atomic_int busy;         /* workers still inside the current run */
    atomic_llong next;       /* next task index */
    int64_t n_tasks;
    sn_task_fn task;
    void *arg;
    pthread_t tid[SN_MAX_THREADS];
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause");
#endif
}

static void drain(sn_pool *p) {
    for (;;) {
        long long i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n_tasks) break;
        p->task(p->arg, (int64_t)i);
    }
}

static void *worker(void *vp) {
    sn_pool *p = vp;
    unsigned seen = 0;
    for (;;) {
        /* spin briefly for the next run, then sleep */
        int spins = 0;
        while (atomic_load(&p->gen) == seen && spins < SPIN_ROUNDS) {
            cpu_relax();
            spins++;
        }
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->gen) == seen && !p->quit) pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = atomic_load(&p->gen);
        pthread_mutex_unlock(&p->mu);
        drain(p);
        if (atomic_fetch_sub(&p->busy, 1) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

sn_status sn_pool_start(sn_pool **out, int n) {
    *out = NULL;
    sn_pool *p = calloc(1, sizeof *p);
    if (!p) return SN_ERR_NOMEM;
    if (pthread_mutex_init(&p->mu, NULL)) goto fail_mu;
    if (pthread_cond_init(&p->wake, NULL)) goto fail_wake;
    if (pthread_cond_init(&p->done, NULL)) goto fail_done;
    atomic_init(&p->gen, 0u);
    atomic_init(&p->busy, 0);
    atomic_init(&p->next, 0);
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
fail_done:
    pthread_cond_destroy(&p->wake);
fail_wake:
    pthread_mutex_destroy(&p->mu);
fail_mu:
    free(p);
    return SN_ERR_NOMEM;
}

void sn_pool_stop(sn_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void sn_pool_run(sn_pool *p, int64_t n, sn_task_fn task, void *arg) {
    p->task = task;
    p->arg = arg;
    p->n_tasks = n;
    atomic_store(&p->next, 0);
    atomic_store(&p->busy, p->n_workers);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->gen, 1u);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p);
    int spins = 0;
    while (atomic_load(&p->busy) > 0 && spins < SPIN_ROUNDS) {
        cpu_relax();
        spins++;
    }
    if (atomic_load(&p->busy) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->busy) > 0) pthread_cond_wait(&p->done, &p->mu);
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
