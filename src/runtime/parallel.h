/* The built-in thread pool behind sn_ctx_set_threads: n - 1 persistent workers plus the calling
 * thread run the tasks of one parallel for at a time. Tasks are handed out dynamically; the
 * library's results never depend on which thread runs which task. */
#ifndef SN_PARALLEL_H
#define SN_PARALLEL_H

#include "siamesenorm.h"

typedef struct sn_pool sn_pool;

/* Starts a pool of n threads in all (n >= 2): SN_OK, SN_ERR_NOMEM, or SN_ERR_UNSUPPORTED in a
 * build without pthreads. */
sn_status sn_pool_start(sn_pool **out, int n);

/* Stops and joins the workers, frees the pool. NULL is a no-op. */
void sn_pool_stop(sn_pool *p);

/* Runs task(arg, i) for i in [0, n) on the pool's threads and the caller; returns when all
 * have finished. One run at a time per pool. */
void sn_pool_run(sn_pool *p, int64_t n, sn_task_fn task, void *arg);

#endif
