/* sn-gpt-compare: does SiameseNorm help this model? Trains K seeds of each arm (by default
 * Pre-Norm and SiameseNorm) with sn-gpt-train, the same data, budget and seeds on every arm,
 * as many runs at once as the machine has cores, then reports per arm the final held-out loss
 * (mean, sd, spread) and, seed by seed, the difference to the first arm with a 95% t interval
 * and a one-line verdict read off that interval, with its p and, when the run prints several
 * verdicts, Holm's adjusted p over them (the family). Writes runs.csv, curves.csv, summary.csv,
 * paired.csv and, with gnuplot, the loss curves (mean and a +-1 sd band per arm). See --help. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "clock.h"
#include "gpt_limits.h"
#include "numarg.h"
#include "stats.h"

#define MAX_ARMS   16
#define MAX_ARGS   48
#define MAX_GROUPS 32
#define MAX_SEEDS  256
#define MAX_JOBS   64
#define MAX_EVALS  126
/* the evaluations a run reports: sn-gpt-train --evals E evaluates every floor(steps / E) steps
 * and at the end, at most 2E + 1 times (steps = 2E - 1: every step); a run reporting more is
 * cut with a warning */
#define MAX_POINTS  (2 * MAX_EVALS + 4)
#define LEVEL       0.95
#define VERDICT_MAX 768 /* a verdict line with its budget and diverged runs */

typedef struct arm {
    char label[64];
    char text[512];  /* its sn-gpt-train flags, as given */
    char store[512]; /* the same, cut into words for argv */
    int argc;
    char *argv[MAX_ARGS]; /* the flags, pointing into store */
} arm;

typedef struct group {  /* one cell of the sweep: a learning rate, a depth and a budget */
    const char *lr;     /* NULL: the trainer's default */
    const char *layers; /* NULL: the trainer's default */
    const char *steps;  /* NULL: the trainer's default budget */
} group;

typedef struct run {
    int group, arm, seed;
    pid_t pid;
    int fd, state; /* state: 0 waiting, 1 running, 2 finished */
    char line[8192];
    size_t n_line;
    int steps, step, finished, diverged, failed;
    long tok_per_step;
    double val_loss, train_loss, elapsed;
    char isa[16], version[32], hash[24];
    int n_points, n_dropped; /* evaluations kept, and those past MAX_POINTS */
    int pt_step[MAX_POINTS];
    double pt_val[MAX_POINTS], pt_train[MAX_POINTS];
} run;

typedef struct options {
    const char *trainer, *out;
    int seeds, first_seed, jobs, evals, plot;
    int n_arms, n_lrs, n_depths, n_budgets;
    arm arms[MAX_ARMS];
    const char *lrs[MAX_GROUPS], *depths[MAX_GROUPS], *budgets[MAX_GROUPS];
    int n_extra;
    char **extra; /* flags after "--", given to every run */
    arm launcher; /* --launcher: words put before the trainer (argc 0: none) */
} options;

static void usage(FILE *f) {
    fprintf(f,
            "usage: sn-gpt-compare [options] [-- sn-gpt-train flags for every run]\n"
            "Trains K seeds per arm with sn-gpt-train (same data, budget and seeds on every\n"
            "arm) and compares each arm's final held-out loss with the first arm's, seed by\n"
            "seed, with a 95%% t interval and a verdict, its two-sided p and, when a run prints\n"
            "several verdicts (arms, sweep cells), Holm's adjusted p over all of them: a\n"
            "verdict whose interval excludes 0 but whose Holm p is 0.05 or more says it holds\n"
            "only uncorrected (a lead, not a finding).\n"
            "  --arms LIST       placements to compare, first is the baseline (default\n"
            "                    pre_norm,siamese); each becomes --norm NAME\n"
            "  --arm 'LABEL=FLAGS'  an arm with any sn-gpt-train flags, e.g.\n"
            "                    --arm 'siamese-c1=--norm siamese --scales none' (repeatable;\n"
            "                    replaces --arms)\n"
            "  --seeds K         seeds per arm (default 6), seeds 1..K\n"
            "  --first-seed S    seeds S..S+K-1 instead\n"
            "  --lrs LIST        a sweep: compare the arms at each of these peak LRs\n"
            "  --depths LIST     a sweep: ... at each of these layer counts\n"
            "  --budgets LIST    ... at each of these budgets in steps, e.g. 300,1200,4800:\n"
            "                    each its own run with warmup and cosine decay to its end\n"
            "  --jobs N          runs at a time (default: the number of online cores)\n"
            "  --evals N         held-out evaluations per run, for the curves (default 12)\n"
            "  --out DIR         output directory (default sn-compare-out)\n"
            "  --trainer PATH    sn-gpt-train (default: the one beside this program); a\n"
            "                    name without '/' is in the current directory, not on PATH\n"
            "  --launcher CMD    run each as CMD sn-gpt-train ..., e.g. 'mpirun -np 2' for\n"
            "                    data-parallel runs (then --jobs 1 on a 2-core machine)\n"
            "  --no-plot         skip gnuplot\n"
            "Besides the final loss, the paired difference of the held-out loss at 25, 50 and\n"
            "75%% of the budget and of its mean over the run (area under the curve / budget)\n"
            "tells \"learns faster\" from \"ends lower\" (paired.csv; plot/budget.png when\n"
            "there are several budgets).\n"
            "Without flags after --, every run uses sn-gpt-train's defaults (see its --help):\n"
            "the fortunes corpus, 4 layers, width 64, 300 steps of 8 x 64 tokens.\n"
            "exit status: 0 done (whatever the verdict), 1 usage error, a run failed, an\n"
            "output file could not be written or gnuplot failed on the plot script (gnuplot\n"
            "not installed: a note, the script is kept, exit 0)\n");
}

/* Splits `list` (comma-separated, modified in place) into out[]; returns the count or -1.
 * With a flag, each item must be a number sn-gpt-train accepts for it (numarg.h): a peak
 * learning rate for --lrs, a layer count for --depths, a step count for --budgets. */
static int split_list(char *list, const char **out, int max, const char *flag) {
    int n = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        double lr;
        int layers;
        if (n == max) return -1;
        if (flag && strcmp(flag, "--lrs") == 0 &&
            na_double(flag, tok, 0.0, GPT_MAX_LR, NA_OPEN_LO, &lr) != 0)
            return -1;
        if (flag && strcmp(flag, "--depths") == 0 &&
            na_int(flag, tok, 1, GPT_MAX_LAYERS, &layers) != 0)
            return -1;
        if (flag && strcmp(flag, "--budgets") == 0 &&
            na_int(flag, tok, 1, GPT_MAX_STEPS, &layers) != 0)
            return -1;
        out[n++] = tok;
    }
    return n;
}

/* Whether text holds one of the characters in `also` or a control character (a newline, a tab,
 * ...). */
static int has_char(const char *text, const char *also) {
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        if (*c < 32 || *c == 127 || strchr(also, *c)) return 1;
    return 0;
}

/* Whether an arm's label can name its files (OUT/logs/..._LABEL_sN.csv, OUT/plot/gG_LABEL.dat)
 * and fill a CSV field and a quoted gnuplot title as it is. */
static int label_ok(const char *label) { return label[0] && !has_char(label, "/,\"'\\`"); }

/* snprintf into buf[n], with a message and -1 when the text would be cut short (so that two
 * paths never become one). */
static int fmt_path(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (k >= 0 && (size_t)k < n) return 0;
    fprintf(stderr, "sn-gpt-compare: a path under --out is too long (%.60s...)\n", buf);
    return -1;
}

/* An arm from "LABEL=FLAGS" (FLAGS split on spaces) or from a placement name. */
static int make_arm(arm *a, const char *spec, int is_placement) {
    memset(a, 0, sizeof *a);
    if (is_placement) {
        snprintf(a->label, sizeof a->label, "%s", spec);
        snprintf(a->text, sizeof a->text, "--norm %s", spec);
    } else {
        const char *eq = strchr(spec, '=');
        if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof a->label) return -1;
        memcpy(a->label, spec, (size_t)(eq - spec));
        snprintf(a->text, sizeof a->text, "%s", eq + 1);
    }
    memcpy(a->store, a->text, sizeof a->store);
    for (char *tok = strtok(a->store, " \t"); tok; tok = strtok(NULL, " \t")) {
        if (a->argc == MAX_ARGS) return -1;
        a->argv[a->argc++] = tok;
    }
    return 0;
}

static int parse(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->out = "sn-compare-out";
    o->seeds = 6, o->first_seed = 1, o->evals = 12, o->plot = 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = cores > 0 ? (int)cores : 1;
    static char lrs_buf[512], depths_buf[512], arms_buf[512], budgets_buf[512];
    snprintf(arms_buf, sizeof arms_buf, "pre_norm,siamese");
    int custom_arms = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            o->extra = argv + i + 1;
            o->n_extra = argc - i - 1;
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(af_stdout_status("sn-gpt-compare"));
        }
        if (strcmp(a, "--no-plot") == 0) {
            o->plot = 0;
            continue;
        }
        if (!v) {
            fprintf(stderr, "%s: missing value or unknown option (see --help)\n", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--arms") == 0) snprintf(arms_buf, sizeof arms_buf, "%s", v);
        else if (strcmp(a, "--arm") == 0) {
            if (o->n_arms == MAX_ARMS || make_arm(&o->arms[o->n_arms++], v, 0) != 0) {
                fprintf(stderr, "--arm %s: expected LABEL=FLAGS (at most %d arms)\n", v, MAX_ARMS);
                return -1;
            }
            custom_arms = 1;
        } else if (strcmp(a, "--seeds") == 0) {
            if (na_int(a, v, 2, MAX_SEEDS, &o->seeds) != 0) return -1;
        } else if (strcmp(a, "--first-seed") == 0) {
            if (na_int(a, v, 0, INT_MAX, &o->first_seed) != 0) return -1;
        } else if (strcmp(a, "--jobs") == 0) {
            if (na_int(a, v, 1, MAX_JOBS, &o->jobs) != 0) return -1;
        } else if (strcmp(a, "--evals") == 0) {
            if (na_int(a, v, 1, MAX_EVALS, &o->evals) != 0) return -1;
        } else if (strcmp(a, "--out") == 0) {
            if (!v[0] || has_char(v, "")) {
                fprintf(stderr, "--out: an empty path, or a newline or other control character "
                                "in it\n");
                return -1;
            }
            o->out = v;
        } else if (strcmp(a, "--trainer") == 0) o->trainer = v;
        else if (strcmp(a, "--launcher") == 0) {
            char spec[600];
            snprintf(spec, sizeof spec, "launcher=%s", v);
            if (make_arm(&o->launcher, spec, 0) != 0 || o->launcher.argc == 0) {
                fprintf(stderr, "--launcher %s: expected a command\n", v);
                return -1;
            }
        } else if (strcmp(a, "--lrs") == 0) {
            snprintf(lrs_buf, sizeof lrs_buf, "%s", v);
            o->n_lrs = split_list(lrs_buf, o->lrs, MAX_GROUPS, a);
        } else if (strcmp(a, "--depths") == 0) {
            snprintf(depths_buf, sizeof depths_buf, "%s", v);
            o->n_depths = split_list(depths_buf, o->depths, MAX_GROUPS, a);
        } else if (strcmp(a, "--budgets") == 0) {
            snprintf(budgets_buf, sizeof budgets_buf, "%s", v);
            o->n_budgets = split_list(budgets_buf, o->budgets, MAX_GROUPS, a);
        } else {
            fprintf(stderr, "unknown option %s (see --help)\n", a);
            return -1;
        }
    }
    if (!custom_arms) {
        const char *names[MAX_ARMS];
        int n = split_list(arms_buf, names, MAX_ARMS, NULL);
        for (int k = 0; k < n; k++) make_arm(&o->arms[o->n_arms++], names[k], 1);
    }
    if (o->n_arms < 2 || o->seeds < 2 || o->seeds > MAX_SEEDS || o->first_seed < 0 || o->jobs < 1 ||
        o->jobs > MAX_JOBS || o->evals < 1 || o->evals > MAX_EVALS || o->n_lrs < 0 ||
        o->n_depths < 0 || o->n_budgets < 0 ||
        (o->n_lrs ? o->n_lrs : 1) * (o->n_depths ? o->n_depths : 1) *
                (o->n_budgets ? o->n_budgets : 1) >
            MAX_GROUPS) {
        fprintf(stderr,
                "need at least 2 arms, 2..%d seeds, --jobs 1..%d, --evals 1..%d, at "
                "most %d sweep cells\n",
                MAX_SEEDS, MAX_JOBS, MAX_EVALS, MAX_GROUPS);
        return -1;
    }
    for (int a = 0; a < o->n_arms; a++) {
        if (!label_ok(o->arms[a].label)) {
            fprintf(stderr,
                    "arm label '%s': expected 1..%d characters, none of them '/', ',', quotes, "
                    "a backslash or a control character (it names files and CSV fields)\n",
                    o->arms[a].label, (int)sizeof o->arms[a].label - 1);
            return -1;
        }
        for (int b = 0; b < a; b++)
            if (strcmp(o->arms[a].label, o->arms[b].label) == 0) {
                fprintf(stderr, "arm label '%s' given twice: each arm needs its own (its files)\n",
                        o->arms[a].label);
                return -1;
            }
    }
    if (o->first_seed > INT_MAX - (o->seeds - 1)) { /* the last seed, S + K - 1, is an int */
        fprintf(stderr, "--first-seed %d with --seeds %d: the last seed is past %d\n",
                o->first_seed, o->seeds, INT_MAX);
        return -1;
    }
    return 0;
}

/* Whether PATH names an executable regular file. */
static int is_executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The trainer to run, as a path with a '/' (so that neither execv nor a launcher looks it up on
 * PATH: what is checked here is what runs). --trainer NAME without a '/' is ./NAME. The default
 * is sn-gpt-train beside this executable (from /proc/self/exe, else argv[0]; when neither names
 * a directory, --trainer is needed). 0, or -1 with a message. */
static int resolve_trainer(const char *given, const char *argv0, char *buf, size_t n) {
    int len;
    if (given) {
        len = snprintf(buf, n, "%s%s", strchr(given, '/') ? "" : "./", given);
    } else {
        char self[4096];
        ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
        if (sl > 0) self[sl] = '\0';
        else snprintf(self, sizeof self, "%s", argv0);
        char *slash = strrchr(self, '/');
        if (!slash) {
            fprintf(stderr, "cannot tell where sn-gpt-compare is: name the trainer with "
                            "--trainer PATH\n");
            return -1;
        }
        len = snprintf(buf, n, "%.*s/sn-gpt-train", (int)(slash - self), self);
    }
    if (len < 0 || (size_t)len >= n) {
        fprintf(stderr, "--trainer: path too long\n");
        return -1;
    }
    if (!is_executable(buf)) {
        fprintf(stderr, "%s: not found, not a regular file or not executable (--trainer PATH)\n",
                buf);
        return -1;
    }
    return 0;
}

/* ---- the runs' JSON lines ----------------------------------------------------------------- */

/* The number after "key": in a JSON line; NAN when absent or null. */
static double json_num(const char *line, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return NAN;
    p += strlen(pat);
    if (strncmp(p, "null", 4) == 0) return NAN;
    return strtod(p, NULL);
}

/* json_num as a step count: 0 unless a number in [0, INT_MAX] (a NaN or a huge value from a
 * --trainer that is not sn-gpt-train must not reach an int conversion). */
static int json_count(const char *line, const char *key) {
    double v = json_num(line, key);
    return v >= 0.0 && v <= (double)INT_MAX ? (int)v : 0;
}

static int json_has(const char *line, const char *key_value) {
    return strstr(line, key_value) != NULL;
}

static void json_str(const char *line, const char *key, char *buf, size_t n) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(line, pat);
    buf[0] = '\0';
    if (!p) return;
    p += strlen(pat);
    const char *q = strchr(p, '"');
    if (q) snprintf(buf, n, "%.*s", (int)(q - p), p);
}

static void take_line(run *r, const char *line) {
    if (json_has(line, "\"start\":true")) {
        r->steps = json_count(line, "steps");
        double tps = json_num(line, "tokens_per_step");
        r->tok_per_step = isfinite(tps) ? (long)tps : 0;
        json_str(line, "isa", r->isa, sizeof r->isa);
        json_str(line, "version", r->version, sizeof r->version);
        json_str(line, "config_hash", r->hash, sizeof r->hash);
    } else if (json_has(line, "\"final\":true")) {
        r->finished = 1;
        r->step = json_count(line, "step");
        r->val_loss = json_num(line, "val_loss");
        r->train_loss = json_num(line, "train_loss");
        r->elapsed = json_num(line, "elapsed_s");
        r->diverged = json_has(line, "\"diverged\":true");
    } else if (json_has(line, "\"step\":")) {
        r->step = json_count(line, "step");
        if (json_has(line, "\"diverged\":true")) return;
        if (r->n_points == MAX_POINTS) {
            r->n_dropped++;
            return;
        }
        r->pt_step[r->n_points] = r->step;
        r->pt_val[r->n_points] = json_num(line, "val_loss");
        r->pt_train[r->n_points] = json_num(line, "train_loss");
        r->n_points++;
    }
}

/* Reads what is available on the run's pipe; returns 0 at end of file. */
static int pump(run *r) {
    char buf[4096];
    ssize_t got = read(r->fd, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
    if (got <= 0) return 0;
    for (ssize_t i = 0; i < got; i++) {
        if (buf[i] == '\n') {
            r->line[r->n_line] = '\0';
            take_line(r, r->line);
            r->n_line = 0;
        } else if (r->n_line + 1 < sizeof r->line) {
            r->line[r->n_line++] = buf[i];
        }
    }
    return 1;
}

/* ---- running ------------------------------------------------------------------------------ */

/* A run's name, [lrLR_][LLAYERS_][nSTEPS_]LABEL_sSEED, and its two log files; 0, or -1 with a
 * message when a name would be cut short. */
static int run_paths(const options *o, const group *g, const run *r, char name[PATH_MAX],
                     char log_csv[PATH_MAX], char log_err[PATH_MAX]) {
    if (fmt_path(name, PATH_MAX, "%s%s%s%s%s%s%s%s%s%s_s%d", g->lr ? "lr" : "", g->lr ? g->lr : "",
                 g->lr ? "_" : "", g->layers ? "L" : "", g->layers ? g->layers : "",
                 g->layers ? "_" : "", g->steps ? "n" : "", g->steps ? g->steps : "",
                 g->steps ? "_" : "", o->arms[r->arm].label, r->seed) != 0)
        return -1;
    if (!log_csv) return 0;
    return fmt_path(log_csv, PATH_MAX, "%s/logs/%s.csv", o->out, name) != 0 ||
                   fmt_path(log_err, PATH_MAX, "%s/logs/%s.log", o->out, name) != 0
               ? -1
               : 0;
}

static int start(const options *o, const char *trainer, const group *g, run *r) {
    char name[PATH_MAX], log_csv[PATH_MAX], log_err[PATH_MAX], seed[32], evals[32];
    if (run_paths(o, g, r, name, log_csv, log_err) != 0) return -1;
    snprintf(seed, sizeof seed, "%d", r->seed);
    snprintf(evals, sizeof evals, "%d", o->evals);
    const arm *a = &o->arms[r->arm];
    char *args[2 * MAX_ARGS + 64 + 256];
    int n = 0;
    for (int i = 0; i < o->launcher.argc; i++) args[n++] = o->launcher.argv[i];
    args[n++] = (char *)trainer;
    for (int i = 0; i < o->n_extra && n < 200; i++) args[n++] = o->extra[i];
    for (int i = 0; i < a->argc; i++) args[n++] = a->argv[i];
    if (g->lr) args[n++] = "--lr", args[n++] = (char *)g->lr;
    if (g->layers) args[n++] = "--layers", args[n++] = (char *)g->layers;
    if (g->steps) args[n++] = "--steps", args[n++] = (char *)g->steps;
    char *fixed[] = {"--seed", seed,        "--evals", evals,   "--json", "--print-every",
                     "0",      "--samples", "0",       "--log", log_csv,  NULL};
    for (int i = 0; fixed[i]; i++) args[n++] = fixed[i];
    args[n] = NULL;

    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int err = open(log_err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (err >= 0) dup2(err, 2);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        /* the trainer's path (with a '/': exactly the file checked), or the launcher's name,
         * looked up on PATH */
        if (o->launcher.argc > 0) execvp(args[0], args);
        else execv(args[0], args);
        fprintf(stderr, "%s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    r->pid = pid;
    r->fd = fds[0];
    r->state = 1;
    r->val_loss = r->train_loss = NAN;
    return 0;
}

static void finish(run *r) {
    int status = 0;
    close(r->fd);
    waitpid(r->pid, &status, 0);
    r->state = 2;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    /* 0: done; 3: diverged (the trainer's own verdict, with a final line) */
    if (!r->finished || (code != 0 && code != 3)) r->failed = 1;
    if (code == 3) r->diverged = 1;
}

/* The fraction of all steps done: a run of a longer budget weighs more. */
static double progress_of(const group *groups, const run *runs, int n, int fallback_steps) {
    double done = 0.0, all = 0.0;
    for (int i = 0; i < n; i++) {
        const char *budget = groups[runs[i].group].steps;
        double steps = budget ? atof(budget) : runs[i].steps > 0 ? runs[i].steps : fallback_steps;
        steps = steps > 0 ? steps : 1.0;
        all += steps;
        if (runs[i].state == 2) done += steps;
        else if (runs[i].state == 1) done += runs[i].step < steps ? runs[i].step : steps;
    }
    return done / all;
}

static int run_all(const options *o, const char *trainer, const group *groups, run *runs, int n) {
    int tty = isatty(1), next = 0, running = 0, finished = 0;
    double t0 = now_s(), last_print = -1e9;
    while (finished < n) {
        while (running < o->jobs && next < n) {
            if (start(o, trainer, &groups[runs[next].group], &runs[next]) != 0) return -1;
            running++;
            next++;
        }
        struct pollfd fds[MAX_JOBS];
        int idx[MAX_JOBS], m = 0;
        for (int i = 0; i < n && m < MAX_JOBS; i++)
            if (runs[i].state == 1) {
                fds[m].fd = runs[i].fd;
                fds[m].events = POLLIN;
                idx[m++] = i;
            }
        int ready = poll(fds, (nfds_t)m, 1000);
        if (ready < 0 && errno != EINTR) {
            perror("poll");
            return -1;
        }
        for (int k = 0; k < m && ready > 0; k++) {
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            run *r = &runs[idx[k]];
            if (!pump(r)) {
                finish(r);
                running--;
                finished++;
                if (r->failed) {
                    char name[PATH_MAX];
                    run_paths(o, &groups[r->group], r, name, NULL, NULL);
                    fprintf(stderr, "%srun %s failed: see %s/logs/%s.log\n", tty ? "\n" : "", name,
                            o->out, name);
                }
            }
        }
        double t = now_s() - t0;
        if (t - last_print >= (tty ? 1.0 : 15.0) || finished == n) {
            int steps = 0;
            for (int i = 0; i < n; i++) steps = runs[i].steps > steps ? runs[i].steps : steps;
            double f = progress_of(groups, runs, n, steps);
            char el[32], eta[32] = "?";
            fmt_duration(t, el, sizeof el);
            if (f > 0.01) fmt_duration(t * (1.0 - f) / f, eta, sizeof eta);
            printf("%s[%3d%%] %d/%d runs done, %d running | elapsed %s | eta %s%s", tty ? "\r" : "",
                   (int)(100.0 * f), finished, n, running, el, eta, tty ? "   " : "\n");
            fflush(stdout);
            last_print = t;
        }
    }
    if (tty) printf("\n");
    return 0;
}

/* ---- reporting ---------------------------------------------------------------------------- */

/* "lr 3e-3, 12 layers, 1200 steps", "lr 3e-3", "12 layers" or "" */
static void group_title(const group *g, char *buf, size_t n) {
    buf[0] = '\0';
    if (g->lr) snprintf(buf, n, "lr %s", g->lr);
    if (g->layers)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s layers", g->lr ? ", " : "", g->layers);
    if (g->steps)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s steps", buf[0] ? ", " : "", g->steps);
}

/* A group's budget as the runs report it: steps, and tokens (0 when unknown). */
static int budget_of(const run *runs, int n, int g, long *tokens) {
    for (int i = 0; i < n; i++)
        if (runs[i].group == g && runs[i].steps > 0) {
            *tokens = runs[i].tok_per_step * runs[i].steps;
            return runs[i].steps;
        }
    *tokens = 0;
    return 0;
}

/* "after 600 steps (307,200 tokens)" */
static void budget_text(int steps, long tokens, char *buf, size_t n) {
    char tok[40] = "";
    if (tokens >= 1000000) snprintf(tok, sizeof tok, " (%.2fM tokens)", tokens / 1e6);
    else if (tokens > 0) snprintf(tok, sizeof tok, " (%ld tokens)", tokens);
    snprintf(buf, n, "after %d steps%s", steps, tok);
}

/* The final held-out losses of one arm of one group into by_seed[] (NAN when diverged), and
 * their summary over the seeds that finished. */
static summary finals(const options *o, const run *runs, int n, int g, int a, double *by_seed) {
    double ok[MAX_SEEDS];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (runs[i].group == g && runs[i].arm == a)
            by_seed[runs[i].seed - o->first_seed] =
                runs[i].diverged || runs[i].failed ? NAN : runs[i].val_loss;
    for (int s = 0; s < o->seeds; s++)
        if (isfinite(by_seed[s])) ok[m++] = by_seed[s];
    return summarize(ok, m);
}

/* What is compared seed by seed: the final held-out loss, the loss at 25, 50 and 75% of the
 * budget, and its mean over the run (curve_mean: the area under the curve after step 0 / its
 * span). */
enum { ST_FINAL, ST_AT25, ST_AT50, ST_AT75, ST_MEAN, ST_COUNT };
static const char *const stat_names[ST_COUNT] = {"final", "at25", "at50", "at75", "mean"};

static double run_stat(const run *r, int stat) {
    if (r->diverged || r->failed) return NAN;
    if (stat == ST_FINAL) return r->val_loss;
    if (stat == ST_MEAN) return curve_mean(r->pt_step, r->pt_val, r->n_points, r->steps);
    return curve_at(r->pt_step, r->pt_val, r->n_points, 0.25 * stat * r->steps);
}

/* The paired difference of one statistic, arm a against the first arm, in group g. */
static paired paired_stat(const options *o, const run *runs, int n, int g, int a, int stat) {
    double base[MAX_SEEDS], mine[MAX_SEEDS];
    for (int s = 0; s < o->seeds; s++) base[s] = mine[s] = NAN;
    for (int i = 0; i < n; i++)
        if (runs[i].group == g && (runs[i].arm == a || runs[i].arm == 0))
            (runs[i].arm == a ? mine : base)[runs[i].seed - o->first_seed] =
                run_stat(&runs[i], stat);
    return paired_t(base, mine, o->seeds, LEVEL);
}

/* The output files under OUT. Each is written whole or not at all (atomic_file.h), and every
 * function below that writes them returns the number of them it could not write (0: all
 * written), each failure with its message on stderr; what else it tells the caller (which
 * tables, which plots) goes through an out-parameter. main adds the counts up: any file not
 * written makes the exit status 1. */

/* The tables under OUT, as bits of what was written (main lists only those). */
enum { T_SUMMARY = 1, T_PAIRED = 2, T_RUNS = 4, T_CURVES = 8 };

/* runs.csv and curves.csv; sets the bits of those written in *written; returns the number not
 * written. */
static int write_csvs(const options *o, const group *groups, const run *runs, int n,
                      unsigned *written) {
    char path[PATH_MAX];
    af_file fa, ca; /* whole files or none (atomic_file.h) */
    snprintf(path, sizeof path, "%s/runs.csv", o->out);
    int f_ok = af_open(&fa, path) == 0;
    snprintf(path, sizeof path, "%s/curves.csv", o->out);
    int c_ok = af_open(&ca, path) == 0;
    FILE *f = f_ok ? fa.f : NULL, *c = c_ok ? ca.f : NULL;
    if (f)
        fprintf(f, "lr,layers,budget,arm,seed,val_loss,train_loss,diverged,steps,elapsed_s,isa,"
                   "version,config_hash\n");
    if (c) fprintf(c, "lr,layers,budget,arm,seed,step,val_loss,train_loss\n");
    for (int i = 0; i < n; i++) {
        const run *r = &runs[i];
        const group *g = &groups[r->group];
        if (f)
            fprintf(f, "%s,%s,%d,%s,%d,%.9g,%.9g,%d,%d,%.2f,%s,%s,%s\n", g->lr ? g->lr : "",
                    g->layers ? g->layers : "", r->steps, o->arms[r->arm].label, r->seed,
                    r->val_loss, r->train_loss, r->diverged, r->step, r->elapsed, r->isa,
                    r->version, r->hash);
        for (int k = 0; c && k < r->n_points; k++)
            fprintf(c, "%s,%s,%d,%s,%d,%d,%.9g,%.9g\n", g->lr ? g->lr : "",
                    g->layers ? g->layers : "", r->steps, o->arms[r->arm].label, r->seed,
                    r->pt_step[k], r->pt_val[k], r->pt_train[k]);
    }
    if (f_ok && af_commit(&fa) == 0) *written |= T_RUNS;
    else f_ok = 0;
    if (c_ok && af_commit(&ca) == 0) *written |= T_CURVES;
    else c_ok = 0;
    return !f_ok + !c_ok;
}

/* Per group and arm, the mean held-out loss at each evaluation and a +-1 sd band, over the
 * seeds that reached it: OUT/plot/gG_ARM.dat for gnuplot; returns the number not written (0 or
 * 1). */
static int write_curve_data(const options *o, const run *runs, int n, int g, int a) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/plot/g%d_%s.dat", o->out, g, o->arms[a].label);
    af_file af;
    if (af_open(&af, path) != 0) return 1;
    FILE *f = af.f;
    fprintf(f, "# step mean sd-low sd-high seeds\n");
    const run *first = NULL; /* the seed with the most evaluations gives the steps */
    for (int i = 0; i < n; i++)
        if (runs[i].group == g && runs[i].arm == a &&
            (!first || runs[i].n_points > first->n_points))
            first = &runs[i];
    for (int k = 0; first && k < first->n_points; k++) {
        double v[MAX_SEEDS];
        int m = 0;
        for (int i = 0; i < n; i++)
            if (runs[i].group == g && runs[i].arm == a && k < runs[i].n_points &&
                isfinite(runs[i].pt_val[k]))
                v[m++] = runs[i].pt_val[k];
        if (m == 0) continue;
        summary s = summarize(v, m);
        fprintf(f, "%d %.6g %.6g %.6g %d\n", first->pt_step[k], s.mean, s.mean - s.sd,
                s.mean + s.sd, m);
    }
    return af_commit(&af) != 0;
}

/* A one-variable sweep (--lrs, or --depths): per cell, each arm's mean final loss, sd and how
 * many seeds finished, into OUT/plot/sweep.dat; *cells: the number of cells when written, 0
 * when there is no one-variable sweep or it was not written. Returns the number not written
 * (0 or 1). */
static int write_sweep_data(const options *o, const group *groups, int n_groups, const run *runs,
                            int n, int *cells) {
    int by_lr = o->n_lrs > 1 && o->n_depths <= 1 && o->n_budgets <= 1;
    int by_depth = o->n_depths > 1 && o->n_lrs <= 1 && o->n_budgets <= 1;
    *cells = 0;
    if (!by_lr && !by_depth) return 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/plot/sweep.dat", o->out);
    af_file af;
    if (af_open(&af, path) != 0) return 1;
    FILE *f = af.f;
    fprintf(f, "# %s, then per arm: mean sd finished\n", by_lr ? "lr" : "layers");
    for (int g = 0; g < n_groups; g++) {
        fprintf(f, "%s", by_lr ? groups[g].lr : groups[g].layers);
        for (int a = 0; a < o->n_arms; a++) {
            double v[MAX_SEEDS];
            summary su = finals(o, runs, n, g, a, v);
            if (su.n) fprintf(f, " %.6g %.6g %d", su.mean, su.sd, su.n);
            else fprintf(f, " NaN NaN 0");
        }
        fprintf(f, "\n");
    }
    if (af_commit(&af) != 0) return 1;
    *cells = n_groups;
    return 0;
}

/* A budget sweep (--budgets only): per budget, its steps and tokens, then per arm after the
 * first the paired difference of the final loss and of the mean over the run (mean, 95%
 * interval), into OUT/plot/budget.dat; *plotted: 1 when written, 0 when there is no budget
 * sweep or it was not written. Returns the number not written (0 or 1). */
static int write_budget_data(const options *o, int n_groups, const run *runs, int n, int *plotted) {
    *plotted = 0;
    if (o->n_budgets < 2 || o->n_lrs > 1 || o->n_depths > 1) return 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/plot/budget.dat", o->out);
    af_file af;
    if (af_open(&af, path) != 0) return 1;
    FILE *f = af.f;
    fprintf(f, "# steps tokens, then per arm after the first: final diff lo hi, mean diff lo hi\n");
    for (int g = 0; g < n_groups; g++) {
        long tokens;
        int steps = budget_of(runs, n, g, &tokens);
        fprintf(f, "%d %ld", steps, tokens);
        for (int a = 1; a < o->n_arms; a++)
            for (int st = ST_FINAL; st <= ST_MEAN; st += ST_MEAN - ST_FINAL) {
                paired p = paired_stat(o, runs, n, g, a, st);
                if (p.n >= 2) fprintf(f, " %.6g %.6g %.6g", p.mean, p.lo, p.hi);
                else fprintf(f, " NaN NaN NaN");
            }
        fprintf(f, "\n");
    }
    if (af_commit(&af) != 0) return 1;
    *plotted = 1;
    return 0;
}

/* Runs "gnuplot SCRIPT" in DIR, found on PATH, its messages into DIR/gnuplot.log; no shell
 * between (DIR is --out's, any text). 0 when it succeeded, 1 when gnuplot is not installed (not
 * on PATH), -1 when it failed or could not be started: then why_text says how ("exit status
 * 1", "killed by signal 11", "could not be started: Permission denied", ...). */
static int run_gnuplot(const char *dir, const char *script, char *why_text, size_t n) {
    int pfd[2]; /* the child's errno when chdir or exec fails; closed by a successful exec */
    fflush(stdout);
    if (pipe(pfd) != 0) {
        snprintf(why_text, n, "could not be started: %s", strerror(errno));
        return -1;
    }
    fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
    fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why_text, n, "could not be started: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        int why[2] = {0, 0}; /* 0 chdir, 1 exec; errno */
        if (chdir(dir) != 0) why[1] = errno;
        else {
            int err = open("gnuplot.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (err < 0) err = open("/dev/null", O_WRONLY);
            if (err >= 0) dup2(err, 2);
            char *args[] = {"gnuplot", (char *)script, NULL};
            execvp(args[0], args);
            why[0] = 1, why[1] = errno;
        }
        ssize_t w = write(pfd[1], why, sizeof why);
        (void)w;
        _exit(127);
    }
    close(pfd[1]);
    int why[2];
    ssize_t got;
    do got = read(pfd[0], why, sizeof why);
    while (got < 0 && errno == EINTR);
    close(pfd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(why_text, n, "could not be waited for: %s", strerror(errno));
            return -1;
        }
    if (got == (ssize_t)sizeof why) {
        if (why[0] == 1 && why[1] == ENOENT) return 1;
        snprintf(why_text, n, "%s: %s",
                 why[0] ? "could not be started" : "could not enter its directory",
                 strerror(why[1]));
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (WIFEXITED(status)) snprintf(why_text, n, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) snprintf(why_text, n, "killed by signal %d", WTERMSIG(status));
    else snprintf(why_text, n, "status %d", status);
    return -1;
}

/* Writes OUT/plot/curves.gp and runs gnuplot on it when gnuplot is installed; returns the
 * number of files not written: 0; 1 when the script could not be written (gnuplot is not run)
 * or when gnuplot failed on it (the plots: a message on stderr, gnuplot's own in
 * OUT/plot/gnuplot.log). gnuplot not installed is a note on stdout, not a failure. */
static int plot(const options *o, const group *groups, int n_groups, int sweep_cells,
                int budget_plot) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/plot/curves.gp", o->out);
    af_file af;
    if (af_open(&af, path) != 0) return 1;
    FILE *f = af.f;
    static const char *colours[] = {"#1f77b4", "#2ca02c", "#d62728", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    fprintf(f,
            "# gnuplot script written by sn-gpt-compare; run it in its own directory\n"
            "set terminal pngcairo noenhanced size 900,%d font ',10'\nset output 'curves.png'\n"
            "set multiplot layout %d,%d\nset logscale y\nset autoscale yfix\nset grid\n"
            "set ytics add (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.5, 2, 3, 4, 6)\n"
            "set key top right\n"
            "set xlabel 'step'\nset ylabel 'held-out loss (nats/byte)'\n"
            "set style fill transparent solid 0.2 noborder\n",
            120 + 400 * ((n_groups + 1) / 2), (n_groups + 1) / 2, n_groups > 1 ? 2 : 1);
    for (int g = 0; g < n_groups; g++) {
        char title[96];
        group_title(&groups[g], title, sizeof title);
        fprintf(f,
                "set title 'held-out loss, mean and +-1 sd band over %d seeds%s%s' "
                "noenhanced\nplot ",
                o->seeds, title[0] ? ": " : "", title);
        for (int a = 0; a < o->n_arms; a++)
            fprintf(f,
                    "%s'g%d_%s.dat' using 1:3:4 with filledcurves lc rgb '%s' notitle, "
                    "'' using 1:2 with lines lw 2 lc rgb '%s' title '%s'",
                    a ? ", " : "", g, o->arms[a].label, colours[a % 10], colours[a % 10],
                    o->arms[a].label);
        fprintf(f, "\n");
    }
    fprintf(f, "unset multiplot\n");
    if (sweep_cells) {
        int by_lr = o->n_lrs > 1;
        fprintf(f,
                "set terminal pngcairo noenhanced size 800,500 font ',10'\nset output 'sweep.png'\n"
                "unset logscale\nset logscale y\nset autoscale fix\nset offsets graph 0.05, graph "
                "0.05, graph 0.05, graph 0.05\n%s\nset xlabel '%s'\n"
                "set ylabel 'final held-out loss (nats/byte), mean +- sd'\n"
                "set title 'final held-out loss over %d seeds (a missing point: every seed "
                "diverged)'\nset key top left noenhanced\nplot ",
                by_lr ? "set logscale x" : "set xtics 4", by_lr ? "peak learning rate" : "layers",
                o->seeds);
        for (int a = 0; a < o->n_arms; a++)
            fprintf(f,
                    "%s'sweep.dat' using 1:%d:%d with yerrorlines lw 2 pt 7 lc rgb '%s' "
                    "title '%s'",
                    a ? ", " : "", 2 + 3 * a, 3 + 3 * a, colours[a % 10], o->arms[a].label);
        fprintf(f, "\n");
    }
    if (budget_plot) {
        fprintf(
            f,
            "set terminal pngcairo noenhanced size 800,500 font ',10'\nset output 'budget.png'\n"
            "unset logscale\nset logscale x\nset autoscale fix\nset offsets graph 0.05, "
            "graph 0.05, graph 0.05, graph 0.05\nset xlabel 'budget (tokens)'\n"
            "set ylabel 'difference to %s (nats/byte)'\nset title 'paired difference over "
            "%d seeds with its 95%% interval: final loss (band) and mean over the run' "
            "noenhanced\nset key top left noenhanced\nplot 0 with lines lc rgb '#000000' "
            "notitle",
            o->arms[0].label, o->seeds);
        for (int a = 1; a < o->n_arms; a++) {
            int c = 3 + 6 * (a - 1);
            fprintf(f,
                    ", 'budget.dat' using 2:%d:%d with filledcurves lc rgb '%s' notitle, '' "
                    "using 2:%d with linespoints lw 2 pt 7 lc rgb '%s' title '%s: final', '' "
                    "using 2:%d:%d:%d with yerrorlines lw 1 dt 2 pt 6 lc rgb '%s' title '%s: "
                    "mean over the run'",
                    c + 1, c + 2, colours[a % 10], c, colours[a % 10], o->arms[a].label, c + 3,
                    c + 4, c + 5, colours[a % 10], o->arms[a].label);
        }
        fprintf(f, "\n");
    }
    if (af_commit(&af) != 0) return 1;
    snprintf(path, sizeof path, "%s/plot", o->out);
    char why[128] = "";
    int gp = run_gnuplot(path, "curves.gp", why, sizeof why);
    if (gp == 1) printf("gnuplot not found: the plot script is %s/plot/curves.gp\n", o->out);
    else if (gp != 0) {
        fflush(stdout);
        fprintf(stderr,
                "sn-gpt-compare: gnuplot failed on %s/plot/curves.gp (%s): no plots; its "
                "messages are in %s/plot/gnuplot.log\n",
                o->out, why, o->out);
        return 1;
    } else
        printf("plots: %s/plot/curves.png%s%s%s%s%s%s\n", o->out, sweep_cells ? ", " : "",
               sweep_cells ? o->out : "", sweep_cells ? "/plot/sweep.png" : "",
               budget_plot ? ", " : "", budget_plot ? o->out : "",
               budget_plot ? "/plot/budget.png" : "");
    return 0;
}

static const char *verdict_word(const paired *p) {
    switch (verdict_of(p)) {
    case VERDICT_LOWER: return "lower";
    case VERDICT_HIGHER: return "higher";
    case VERDICT_NONE: return "none";
    default: return "too-few";
    }
}

/* Along the run: the paired differences at 25/50/75% of the budget and of the mean over the
 * run, printed and written to paired.csv (with the final one); and what they say together. */
static void report_curve(const options *o, const group *g, const run *runs, int n, int gi, int a,
                         int steps, long tokens, FILE *csv) {
    paired p[ST_COUNT];
    for (int st = 0; st < ST_COUNT; st++) {
        p[st] = paired_stat(o, runs, n, gi, a, st);
        if (csv)
            fprintf(csv, "%s,%s,%d,%ld,%s,%s,%s,%.6g,%.6g,%.6g,%.6g,%d,%s,%.6g\n",
                    g->lr ? g->lr : "", g->layers ? g->layers : "", steps, tokens, o->arms[a].label,
                    o->arms[0].label, stat_names[st], p[st].mean, p[st].sd, p[st].lo, p[st].hi,
                    p[st].n, verdict_word(&p[st]), paired_p(&p[st]));
    }
    if (p[ST_MEAN].n < 2) return;
    printf("  %s - %s along the run:", o->arms[a].label, o->arms[0].label);
    for (int st = ST_AT25; st <= ST_AT75; st++)
        printf(" at %d%% %+.4f (%+.4f..%+.4f)%s", 25 * st, p[st].mean, p[st].lo, p[st].hi,
               st < ST_AT75 ? "," : ";");
    printf(" mean over the run (area / budget) %+.4f, 95%% CI %+.4f..%+.4f\n", p[ST_MEAN].mean,
           p[ST_MEAN].lo, p[ST_MEAN].hi);
    verdict early = verdict_of(&p[ST_MEAN]), end = verdict_of(&p[ST_FINAL]);
    printf("  reading: %s: %s, %s\n", o->arms[a].label,
           early == VERDICT_LOWER    ? "lower along the run (learns faster)"
           : early == VERDICT_HIGHER ? "higher along the run (learns slower)"
                                     : "no difference along the run",
           end == VERDICT_LOWER    ? "ends lower"
           : end == VERDICT_HIGHER ? "ends higher"
                                   : "no difference at the end");
}

/* OUT/name opened for an atomic write (atomic_file.h) into af->f, with its header line;
 * returns the number of files not written: 0, or 1 (af->f NULL, nothing to commit). */
static int open_table(af_file *af, const options *o, const char *name, const char *header) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", o->out, name);
    if (af_open(af, path) != 0) {
        af->f = NULL;
        return 1;
    }
    fprintf(af->f, "%s\n", header);
    return 0;
}

/* The family of comparisons whose p-values are adjusted together (Holm): every comparison
 * printed as a verdict, that is the final held-out loss of each arm after the first against the
 * first, in every cell of the sweep, (arms - 1) x cells of them, in the order printed (cell by
 * cell, arm by arm). One without a p (fewer than 2 pairs) counts as p = 1. The statistics along
 * the run (at 25/50/75% of the budget, the mean over the run) are not in it: exploratory. */
typedef struct family {
    int m, untested;                   /* comparisons; those without a p */
    paired pair[MAX_GROUPS][MAX_ARMS]; /* [g][a], a >= 1 */
    double p[MAX_GROUPS * MAX_ARMS], holm[MAX_GROUPS * MAX_ARMS]; /* [g * (arms - 1) + a - 1] */
} family;

static void make_family(const options *o, const run *runs, int n, int n_groups, family *f) {
    f->m = f->untested = 0;
    for (int g = 0; g < n_groups; g++) {
        for (int a = 1; a < o->n_arms; a++) {
            f->pair[g][a] = paired_stat(o, runs, n, g, a, ST_FINAL);
            f->p[f->m] = paired_p(&f->pair[g][a]);
            f->untested += isnan(f->p[f->m]) != 0;
            f->m++;
        }
    }
    holm_adjust(f->p, f->m, f->holm); /* m <= MAX_GROUPS * (MAX_ARMS - 1) < STATS_MAX_N */
}

/* The family, once: what the p-values are and what Holm's correction is over. */
static void print_family(const options *o, int n_groups, const family *f) {
    char cells[48] = "";
    if (n_groups > 1) snprintf(cells, sizeof cells, ", in each of %d cells", n_groups);
    if (f->m == 1)
        printf("multiple comparisons: one comparison printed as a verdict, so no correction; p "
               "two-sided, paired t;");
    else
        printf("multiple comparisons: Holm over the %d comparisons printed as verdicts (the "
               "final held-out loss of each arm against %s%s%s); p two-sided, paired t;",
               f->m, o->arms[0].label, cells,
               f->untested ? "; those with fewer than 2 pairs count as p = 1" : "");
    printf(" the differences along the run are uncorrected\n");
}

/* Prints the tables and every verdict; leaves each group's last verdict in verdicts[g]. Writes
 * summary.csv, paired.csv (their bits in *written) and the curves' plot data; returns the
 * number of those files that could not be written (each with a message). */
static int report(const options *o, const group *groups, int n_groups, const run *runs, int n,
                  char (*verdicts)[VERDICT_MAX], unsigned *written) {
    int failed = 0;
    family fam = {0}; /* about 28 KB */
    make_family(o, runs, n, n_groups, &fam);
    af_file sa, pa;
    failed += open_table(&sa, o, "summary.csv",
                         "lr,layers,budget,arm,seeds,diverged,mean,sd,min,max,baseline,"
                         "diff_mean,diff_sd,diff_lo95,diff_hi95,pairs,verdict,p,p_holm");
    failed += open_table(&pa, o, "paired.csv",
                         "lr,layers,budget,tokens,arm,baseline,statistic,diff_mean,diff_sd,"
                         "diff_lo95,diff_hi95,pairs,verdict,p");
    FILE *sum = sa.f, *pcsv = pa.f;
    char last_verdict[VERDICT_MAX] = "";
    for (int g = 0; g < n_groups; g++) {
        char title[96], budget[96];
        group_title(&groups[g], title, sizeof title);
        long tokens;
        int steps = budget_of(runs, n, g, &tokens);
        budget_text(steps, tokens, budget, sizeof budget);
        printf("\n%s%s%sfinal held-out loss (nats per byte) over seeds %d..%d:\n",
               title[0] ? "== " : "", title, title[0] ? " == " : "", o->first_seed,
               o->first_seed + o->seeds - 1);
        printf("  %-22s %9s %-22s %-17s\n", "arm", "diverged", "mean +- sd", "spread min..max");
        double base[MAX_SEEDS], mine[MAX_SEEDS];
        const int k0 = g * (o->n_arms - 1) - 1; /* arm a's p in the family: k0 + a */
        finals(o, runs, n, g, 0, base);
        for (int a = 0; a < o->n_arms; a++) {
            summary s = finals(o, runs, n, g, a, mine);
            int m = s.n;
            char ms[48] = "-", sp[48] = "-";
            if (m > 0) {
                snprintf(ms, sizeof ms, "%.4f +- %.4f", s.mean, s.sd);
                snprintf(sp, sizeof sp, "%.4f..%.4f", s.min, s.max);
            }
            printf("  %-22s %5d/%-3d %-22s %-17s\n", o->arms[a].label, o->seeds - m, o->seeds, ms,
                   sp);
            paired p = {0, NAN, NAN, NAN, NAN};
            if (a > 0) p = fam.pair[g][a];
            if (sum)
                fprintf(sum,
                        "%s,%s,%d,%s,%d,%d,%.6g,%.6g,%.6g,%.6g,%s,%.6g,%.6g,%.6g,%.6g,%d,%s,%.6g,"
                        "%.6g\n",
                        groups[g].lr ? groups[g].lr : "", groups[g].layers ? groups[g].layers : "",
                        steps, o->arms[a].label, o->seeds, o->seeds - m, m ? s.mean : NAN,
                        m ? s.sd : NAN, m ? s.min : NAN, m ? s.max : NAN, o->arms[0].label, p.mean,
                        p.sd, p.lo, p.hi, p.n, a == 0 ? "" : verdict_word(&p),
                        a == 0 ? NAN : fam.p[k0 + a], a == 0 ? NAN : fam.holm[k0 + a]);
        }
        for (int a = 1; a < o->n_arms; a++) {
            finals(o, runs, n, g, a, mine);
            const paired p = fam.pair[g][a];
            if (p.n >= 2)
                printf("  %s - %s, seed by seed: %+.4f +- %.4f (sd), 95%% t interval "
                       "%+.4f..%+.4f\n",
                       o->arms[a].label, o->arms[0].label, p.mean, p.sd, p.lo, p.hi);
            int div_a = 0, div_b = 0;
            for (int s = 0; s < o->seeds; s++)
                div_a += !isfinite(base[s]), div_b += !isfinite(mine[s]);
            report_curve(o, &groups[g], runs, n, g, a, steps, tokens, pcsv);
            char line[512];
            verdict_line(&p, LEVEL, fam.holm[k0 + a], fam.m, o->arms[a].label, o->arms[0].label,
                         line, sizeof line);
            snprintf(last_verdict, sizeof last_verdict, "%s: %s", budget, line);
            if (div_a || div_b)
                snprintf(last_verdict + strlen(last_verdict),
                         sizeof last_verdict - strlen(last_verdict),
                         "; diverged: %s %d/%d, %s %d/%d (left out)", o->arms[0].label, div_a,
                         o->seeds, o->arms[a].label, div_b, o->seeds);
            printf("  verdict%s%s: %s\n", title[0] ? " at " : "", title, last_verdict);
        }
        snprintf(verdicts[g], VERDICT_MAX, "%s", last_verdict);
        for (int a = 0; a < o->n_arms; a++) failed += write_curve_data(o, runs, n, g, a);
    }
    if (sum) {
        if (af_commit(&sa) == 0) *written |= T_SUMMARY;
        else failed++;
    }
    if (pcsv) {
        if (af_commit(&pa) == 0) *written |= T_PAIRED;
        else failed++;
    }
    printf("\n");
    print_family(o, n_groups, &fam);
    /* what the runs ran on: one kernel path and library version for all, one config per arm */
    printf("runs: libsiamesenorm %s, kernels %s; config hash per arm:", runs[0].version,
           runs[0].isa);
    for (int a = 0; a < o->n_arms; a++)
        for (int i = 0; i < n; i++)
            if (runs[i].arm == a && runs[i].group == 0) {
                printf(" %s %s", o->arms[a].label, runs[i].hash);
                break;
            }
    printf("\n");
    for (int i = 1; i < n; i++)
        if (strcmp(runs[i].isa, runs[0].isa) != 0)
            printf("warning: runs used different kernel paths (%s, %s)\n", runs[0].isa,
                   runs[i].isa);
    return failed;
}

/* Cells measured at a longer budget for docs/reproduction.md, known by their runs' config
 * hashes (baseline, arm) and seeds: when a comparison runs exactly such a cell on exactly those
 * seeds, it says after its verdict what the longer budget gave when it was measured (not rerun
 * here), and whether that agrees with the verdict it just printed. */
typedef struct longer_budget {
    const char *base_hash, *arm_hash; /* the runs' config hashes at this cell's budget */
    int first_seed, seeds;            /* the seeds of the documented comparison */
    const char *what;                 /* the longer budget's result, as measured */
    verdict said;                     /* its verdict */
} longer_budget;

static const longer_budget longer_budgets[] = {
    /* the main job (sn-gpt-train's defaults, 300 steps) at 1200 steps: reproduce.sh budgets */
    {"fced979312d84261", "d622df91ca6fe142", 1, 6,
     "after 1200 steps (614400 tokens), 6 seeds: siamese lower than pre_norm by 0.1539 (95% CI "
     "0.0927..0.2150)",
     VERDICT_LOWER},
};

static void longer_budget_note(const options *o, const run *runs, int n) {
    const char *hash[2] = {NULL, NULL};
    for (int i = 0; i < n; i++)
        if (runs[i].group == 0 && runs[i].arm < 2) hash[runs[i].arm] = runs[i].hash;
    if (!hash[0] || !hash[1]) return;
    for (size_t k = 0; k < sizeof longer_budgets / sizeof longer_budgets[0]; k++) {
        const longer_budget *l = &longer_budgets[k];
        int same = o->first_seed == l->first_seed && o->seeds == l->seeds;
        for (int i = 0; i < n && same; i++) /* every run of the two arms, not only one */
            if (runs[i].group == 0 && runs[i].arm < 2)
                same = strcmp(runs[i].hash, runs[i].arm ? l->arm_hash : l->base_hash) == 0;
        if (!same) continue;
        double base[MAX_SEEDS], mine[MAX_SEEDS];
        finals(o, runs, n, 0, 0, base);
        finals(o, runs, n, 0, 1, mine);
        paired p = paired_t(base, mine, o->seeds, LEVEL);
        printf("at 4x this budget (documented in docs/reproduction.md, not rerun here): %s: %s\n",
               l->what,
               verdict_of(&p) == l->said ? "the same verdict"
                                         : "the 4x-budget run disagreed with the verdict above");
    }
}

int main(int argc, char **argv) {
    static options o;
    if (parse(argc, argv, &o) != 0) return 1;
    char trainer[4096];
    if (resolve_trainer(o.trainer, argv[0], trainer, sizeof trainer) != 0) return 1;
    /* every path under OUT fits (the longest: plot/gG_LABEL.dat and the logs, checked below) */
    if (strlen(o.out) + 128 >= PATH_MAX) {
        fprintf(stderr, "--out %.60s...: too long\n", o.out);
        return 1;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", o.out);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/logs", o.out);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/plot", o.out);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        perror(dir);
        return 1;
    }
    /* the tables are written after the runs: their directory must take them now */
    snprintf(dir, sizeof dir, "%s/runs.csv", o.out);
    if (af_check_writable(dir) != 0) return 1;

    static group groups[MAX_GROUPS];
    int n_groups = 0;
    for (int i = 0; i < (o.n_lrs ? o.n_lrs : 1); i++)
        for (int j = 0; j < (o.n_depths ? o.n_depths : 1); j++)
            for (int b = 0; b < (o.n_budgets ? o.n_budgets : 1); b++)
                groups[n_groups++] =
                    (group){o.n_lrs ? o.lrs[i] : NULL, o.n_depths ? o.depths[j] : NULL,
                            o.n_budgets ? o.budgets[b] : NULL};
    int n = n_groups * o.n_arms * o.seeds;
    run *runs = calloc((size_t)n, sizeof *runs);
    if (!runs) return 1;
    /* seed-major order: every arm's seed s runs before any arm's seed s + 1, so a run cut
     * short still leaves complete pairs */
    int k = 0;
    for (int g = 0; g < n_groups; g++)
        for (int s = 0; s < o.seeds; s++)
            for (int a = 0; a < o.n_arms; a++)
                runs[k++] = (run){.group = g, .arm = a, .seed = o.first_seed + s};
    /* every run's log paths fit, before any run starts */
    for (int i = 0; i < n; i++) {
        char name[PATH_MAX], log_csv[PATH_MAX], log_err[PATH_MAX];
        if (run_paths(&o, &groups[runs[i].group], &runs[i], name, log_csv, log_err) != 0) {
            free(runs);
            return 1;
        }
    }

    printf("sn-gpt-compare: %d arm%s x %d seeds%s = %d runs of %s, %d at a time\n", o.n_arms,
           o.n_arms > 1 ? "s" : "", o.seeds, n_groups > 1 ? " x sweep cells" : "", n, trainer,
           o.jobs);
    for (int a = 0; a < o.n_arms; a++)
        printf("  arm %-20s %s%s\n", o.arms[a].label, o.arms[a].text, a == 0 ? "  (baseline)" : "");
    if (o.n_extra) {
        printf("  every run:");
        for (int i = 0; i < o.n_extra; i++) printf(" %s", o.extra[i]);
        printf("\n");
    }
    printf("  logs: %s/logs\n", o.out);
    fflush(stdout);
    double t0 = now_s();
    int rc = run_all(&o, trainer, groups, runs, n);
    int failed = 0;
    for (int i = 0; i < n; i++) failed += runs[i].failed;
    if (rc != 0 || failed) {
        fprintf(stderr, "sn-gpt-compare: %d run%s failed\n", failed, failed == 1 ? "" : "s");
        free(runs);
        return 1;
    }
    char el[32];
    fmt_duration(now_s() - t0, el, sizeof el);
    printf("all %d runs finished in %s\n", n, el);
    for (int i = 0; i < n; i++)
        if (runs[i].n_dropped) {
            char name[PATH_MAX];
            run_paths(&o, &groups[runs[i].group], &runs[i], name, NULL, NULL);
            fflush(stdout);
            fprintf(stderr,
                    "warning: run %s reported %d evaluations; the %d after the first %d are left "
                    "out of its curve and of the statistics along the run\n",
                    name, runs[i].n_points + runs[i].n_dropped, runs[i].n_dropped, MAX_POINTS);
        }
    /* every file is written whole or not at all; one that is not makes the exit status 1 */
    unsigned written = 0;
    int write_failed = write_csvs(&o, groups, runs, n, &written), sweep_cells, budget_plot;
    static char verdicts[MAX_GROUPS][VERDICT_MAX];
    write_failed += report(&o, groups, n_groups, runs, n, verdicts, &written);
    write_failed += write_sweep_data(&o, groups, n_groups, runs, n, &sweep_cells);
    write_failed += write_budget_data(&o, n_groups, runs, n, &budget_plot);
    if (o.plot) write_failed += plot(&o, groups, n_groups, sweep_cells, budget_plot);
    static const struct {
        unsigned bit;
        const char *name;
    } tables[] = {{T_SUMMARY, "summary.csv"},
                  {T_PAIRED, "paired.csv"},
                  {T_RUNS, "runs.csv"},
                  {T_CURVES, "curves.csv"}};
    printf("tables:");
    for (size_t t = 0, k = 0; t < sizeof tables / sizeof tables[0]; t++)
        if (written & tables[t].bit) printf("%s %s/%s", k++ ? "," : "", o.out, tables[t].name);
    printf("%s\n", written ? "" : " none written");
    /* two arms over one cell, or over budgets only: a verdict line per budget, the last last */
    if (o.n_arms == 2 && o.n_lrs <= 1 && o.n_depths <= 1) {
        printf("\n");
        for (int g = 0; g < n_groups; g++) printf("verdict: %s\n", verdicts[g]);
        if (n_groups == 1) longer_budget_note(&o, runs, n);
    }
    free(runs);
    if (write_failed) {
        fflush(stdout);
        fprintf(stderr, "sn-gpt-compare: %d output file%s could not be written (see above)\n",
                write_failed, write_failed == 1 ? "" : "s");
        return 1;
    }
    return af_stdout_status("sn-gpt-compare");
}
