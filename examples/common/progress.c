/* progress.h: a progress line with an ETA, on a terminal only, after PROGRESS_AFTER seconds. */
#define _POSIX_C_SOURCE 200809L
#include "progress.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

FILE *progress_stream(void) { return isatty(fileno(stderr)) ? stderr : NULL; }

int progress_due(double after, double elapsed, double since_last) {
    return elapsed >= after && since_last >= PROGRESS_EVERY;
}

void progress_line(char *buf, size_t n, const char *prog, const char *phase, long long done,
                   long long total, double elapsed) {
    double f = total > 0 ? (double)done / (double)total : 1.0;
    f = f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
    char el[32], left[32], eta[48] = "";
    fmt_duration(elapsed, el, sizeof el);
    if (f < 0.01) {
        snprintf(eta, sizeof eta, " | eta ?");
    } else if (f < 1.0) { /* done > 0 here: each unit left at the average so far */
        fmt_duration(eta_left(done, total, 0, elapsed / (double)done, 0.0), left, sizeof left);
        snprintf(eta, sizeof eta, " | eta %s", left);
    }
    snprintf(buf, n, "%s: %d%% (%s) | elapsed %s%s", prog, (int)(100.0 * f), phase, el, eta);
}

/* The line at `now` over the open one (padded to cover it), left open or ended by `end`. */
static void show(progress *p, double now, const char *end) {
    char line[512];
    progress_line(line, sizeof line, p->prog, p->phase, p->done, p->total, now - p->t0);
    int w = (int)strlen(line);
    fprintf(p->f, "\r%-*s%s", p->width, line, end);
    fflush(p->f);
    p->width = *end ? 0 : w > p->width ? w : p->width;
    p->last = now;
    p->shown++;
}

void progress_init(progress *p, FILE *f, const char *prog, const char *phase, long long total,
                   double now) {
    *p = (progress){.f = f,
                    .prog = prog,
                    .phase = phase,
                    .total = total,
                    .t0 = now,
                    .last = now - PROGRESS_EVERY,
                    .after = PROGRESS_AFTER};
    const char *after = getenv("SN_PROGRESS_AFTER");
    if (after && strcmp(after, "0") == 0) p->after = 0.0;
}

void progress_add(progress *p, long long n, double now) {
    p->done += n;
    if (p->f && progress_due(p->after, now - p->t0, now - p->last)) show(p, now, "");
}

void progress_phase(progress *p, const char *phase, double now) {
    if (p->f && p->width) show(p, now, "\n");
    p->phase = phase;
    if (p->f && p->shown) show(p, now, "");
}

void progress_end(progress *p, double now) {
    if (p->f && p->width) show(p, now, "\n");
}
