/* Wall-clock helpers shared by sn-gpt-train and sn-gpt-compare: seconds since an epoch, and a
 * duration as "1h02m", "3m05s" or "42s" for progress lines and ETAs. */
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

#endif
