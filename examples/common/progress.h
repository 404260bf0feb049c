/* progress: a progress line with an ETA on stderr, for a job of known size (bytes, say) that
 * may take longer than a few seconds: sn-llmc-convert reading and writing a checkpoint.
 *
 * When lines show: only on a terminal (progress_stream() is stderr when it is a TTY, else NULL:
 * a redirected stderr gets nothing, ever), and only once the job has run PROGRESS_AFTER seconds
 * (a job that ends sooner prints nothing); then at most every PROGRESS_EVERY seconds, over the
 * same line ("\r"). A phase ("reading", "writing") keeps its line: when it ends, its last state
 * stays on the screen with a newline, and a later phase shows at once. A line reads
 *     PROG: 42% (PHASE) | elapsed 3s | eta 4s
 * the percentage being units done of the total, the ETA the time left at the average rate so far
 * (clock.h's eta_left), "?" before 1% and left out at 100%.
 *
 * Every function takes the time (now_s()) as an argument, so that the test (progress) runs the
 * whole sequence on made-up times. For the programs' tests, SN_PROGRESS_AFTER=0 in the
 * environment makes lines due from the start (still on a terminal only). */
#ifndef SN_PROGRESS_H
#define SN_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#define PROGRESS_AFTER 2.0 /* seconds before the first line */
#define PROGRESS_EVERY 0.5 /* seconds between lines */

typedef struct {
    FILE *f;               /* where lines go; NULL: nowhere */
    const char *prog;      /* the lines' prefix: the program's name */
    const char *phase;     /* what is being done */
    long long done, total; /* units */
    double t0, last;       /* the start; the last line */
    double after;          /* PROGRESS_AFTER, or 0 (SN_PROGRESS_AFTER=0) */
    int shown, width;      /* lines shown so far; the open line's width (0: none open) */
} progress;

/* stderr if it is a terminal, else NULL. */
FILE *progress_stream(void);

/* A job of `total` units starting at `now` in `phase`, its lines to f (NULL: none). */
void progress_init(progress *p, FILE *f, const char *prog, const char *phase, long long total,
                   double now);

/* n more units done by `now`: a line if one is due. */
void progress_add(progress *p, long long n, double now);

/* A new phase from `now`: the open line, if any, keeps the last phase's state and ends; the new
 * phase shows at once when lines have shown before. */
void progress_phase(progress *p, const char *phase, double now);

/* The end (of the job, or before a message): the open line, if any, shows the state at `now`
 * and ends with a newline. */
void progress_end(progress *p, double now);

/* The rule and the text, without a clock: whether a line is due `elapsed` seconds into a job
 * whose lines start `after` seconds in, `since_last` after the last line; and the line (no
 * "\r", no newline) into buf[n]. */
int progress_due(double after, double elapsed, double since_last);
void progress_line(char *buf, size_t n, const char *prog, const char *phase, long long done,
                   long long total, double elapsed);

#endif
