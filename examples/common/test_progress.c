/* test_progress: progress.h's rule and text on made-up byte counts and times (no clock): when a
 * line is due, what it reads (percentage, elapsed, the ETA from clock.h's eta_left, counts past
 * INT_MAX), and the exact bytes of a whole job's lines: nothing before PROGRESS_AFTER seconds,
 * nothing for a job that ends sooner, lines at most every PROGRESS_EVERY seconds, a phase's last
 * state kept with a newline, a shorter line padded over a longer one. */
#include "progress.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"

static int failures;

static void expect(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

static void line_is(long long done, long long total, double elapsed, const char *want) {
    char got[256];
    progress_line(got, sizeof got, "prog", "reading", done, total, elapsed);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "FAIL: %lld of %lld after %g s:\n  got  \"%s\"\n  want \"%s\"\n", done,
                total, elapsed, got, want);
        failures++;
    }
}

/* What the lines of a job wrote to f. */
static void wrote(FILE *f, const char *want, const char *what) {
    char got[2048];
    fflush(f);
    rewind(f);
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = '\0';
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "FAIL: %s:\n  got  \"%s\"\n  want \"%s\"\n", what, got, want);
        failures++;
    }
}

int main(void) {
    /* the rule */
    expect(PROGRESS_AFTER == 2.0 && PROGRESS_EVERY == 0.5, "the documented 2 s and 0.5 s");
    expect(!progress_due(PROGRESS_AFTER, 1.99, 10.0), "a line before 2 s");
    expect(progress_due(PROGRESS_AFTER, 2.0, 0.5), "no line at 2 s");
    expect(!progress_due(PROGRESS_AFTER, 5.0, 0.49), "a line 0.49 s after the last");
    expect(progress_due(PROGRESS_AFTER, 5.0, 0.5), "no line 0.5 s after the last");
    expect(progress_due(0.0, 0.0, 0.5), "no line at once with SN_PROGRESS_AFTER=0");

    /* the text: the ETA is the time left at the average rate so far */
    line_is(250, 1000, 3.0, "prog: 25% (reading) | elapsed 3s | eta 9s");
    line_is(999, 1000, 999.0, "prog: 99% (reading) | elapsed 16m39s | eta 1s");
    line_is(0, 1000, 2.5, "prog: 0% (reading) | elapsed 2s | eta ?");
    line_is(9, 1000, 2.5, "prog: 0% (reading) | elapsed 2s | eta ?");
    line_is(10, 1000, 2.0, "prog: 1% (reading) | elapsed 2s | eta 3m18s");
    line_is(1000, 1000, 7.9, "prog: 100% (reading) | elapsed 7s");
    line_is(0, 0, 1.0, "prog: 100% (reading) | elapsed 1s");
    /* bytes past INT_MAX: 3 of 12 GB in 100 s, 300 s left; 1 of 4 GB in an hour, 3 h left */
    line_is(3000000000LL, 12000000000LL, 100.0, "prog: 25% (reading) | elapsed 1m40s | eta 5m00s");
    line_is(1000000000LL, 4000000000LL, 3600.0, "prog: 25% (reading) | elapsed 1h00m | eta 3h00m");
    expect(eta_left(3000000000LL, 12000000000LL, 0, 1e-9, 0.0) == 9.0, "eta_left past INT_MAX");

    /* a whole job: 1000 bytes read from t = 100 s, then written, then the end */
    FILE *f = tmpfile();
    if (!f) {
        perror("tmpfile");
        return 1;
    }
    progress p;
    progress_init(&p, f, "prog", "reading", 1000, 100.0);
    progress_add(&p, 100, 101.0);         /* 1 s in: nothing */
    progress_add(&p, 100, 102.0);         /* 2 s: the first line */
    progress_add(&p, 100, 102.2);         /* 0.2 s later: nothing */
    progress_add(&p, 100, 102.6);         /* 0.6 s later: a line */
    progress_phase(&p, "writing", 103.0); /* reading's state kept; writing shows at once */
    progress_add(&p, 600, 104.0);         /* 100%: no ETA, a shorter line padded over the last */
    progress_phase(&p, "sync", 104.0);
    progress_end(&p, 104.0);
    progress_end(&p, 105.0); /* nothing open: nothing */
    wrote(f,
          "\rprog: 20% (reading) | elapsed 2s | eta 8s"
          "\rprog: 40% (reading) | elapsed 2s | eta 3s"
          "\rprog: 40% (reading) | elapsed 3s | eta 4s\n"
          "\rprog: 40% (writing) | elapsed 3s | eta 4s"
          "\rprog: 100% (writing) | elapsed 4s        "
          "\rprog: 100% (writing) | elapsed 4s        \n"
          "\rprog: 100% (sync) | elapsed 4s"
          "\rprog: 100% (sync) | elapsed 4s\n",
          "a job of 4 s");

    /* a job that ends within 2 s prints nothing, phases and end included */
    FILE *g = tmpfile();
    if (!g) return 1;
    progress_init(&p, g, "prog", "reading", 1000, 0.0);
    progress_add(&p, 500, 1.0);
    progress_phase(&p, "writing", 1.0);
    progress_add(&p, 500, 1.99);
    progress_end(&p, 1.99);
    wrote(g, "", "a job of 1.99 s");

    /* no stream (stderr not a terminal): nothing, at any time */
    progress_init(&p, NULL, "prog", "reading", 1000, 0.0);
    progress_add(&p, 500, 10.0);
    progress_phase(&p, "writing", 11.0);
    progress_end(&p, 12.0);
    expect(p.shown == 0, "lines counted without a stream");

    fclose(f);
    fclose(g);
    if (failures) {
        fprintf(stderr, "test_progress: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_progress: OK\n");
    return 0;
}
