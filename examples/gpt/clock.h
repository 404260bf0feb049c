/* Wall-clock helpers shared by sn-gpt-train and sn-gpt-compare: seconds since an epoch, a
 * duration as "1h02m", "3m05s" or "42s" for progress lines and ETAs, and a training run's time
 * left (test: gpt-stats). */
#ifndef SN_GPT_CLOCK_H
#define SN_GPT_CLOCK_H

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
 * eval_every <= 0: the last only). */
static inline double eta_left(int s, int steps, int eval_every, double per_step, double per_eval) {
    const int evals = eval_every > 0
                          ? steps / eval_every - s / eval_every + (steps % eval_every != 0)
                          : s < steps;
    return per_step * (steps - s) + per_eval * evals;
}

#endif
