/* Wall-clock helpers shared by the example programs (sn-gpt-train, sn-gpt-compare, progress.h's
 * lines in sn-llmc-convert): seconds since an epoch, a duration as "1h02m", "3m05s" or "42s" for
 * progress lines and ETAs, and the time a job has left (tests: gpt-stats, progress). */
#ifndef SN_CLOCK_H
#define SN_CLOCK_H

#include <math.h>
#include <stdio.h>
#include <time.h>

static inline double now_s(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void fmt_duration(double s, char *buf, size_t n) {
    if (s >= 3600) snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%ds", (int)s);
}

/* The time a run has left after step s of `steps`: each step left at per_step seconds and each
 * held-out evaluation left at per_eval (one every eval_every steps and one at the last step;
 * eval_every <= 0: the last only). A job without evaluations (per_eval 0) counted in bytes or
 * other units past INT_MAX: s units of `steps` done, each left at per_step. */
static inline double eta_left(long long s, long long steps, long long eval_every, double per_step,
                              double per_eval) {
    const long long evals = eval_every > 0
                                ? steps / eval_every - s / eval_every + (steps % eval_every != 0)
                                : s < steps;
    return per_step * (double)(steps - s) + per_eval * (double)evals;
}

#endif
