/* sn-gpt-train: command line, progress, logs, interrupts. See `sn-gpt-train --help`. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "clock.h"
#include "dist.h"
#include "gpt.h"
#include "numarg.h"

#define EXIT_DIVERGED     3
#define EXIT_RANKS_DIFFER 4
#define EXIT_INTERRUPTED  5

typedef struct options {
    gpt_config cfg;
    optim_config opt;
    const char *data, *log, *save, *load, *corpus_dir;
    int task; /* DATA_FORTUNES, DATA_TALES, DATA_ADDITION, or DATA_TEXT (with --data) */
    int digits, val_size, batch, eval_every, evals, print_every, json, samples, blas_threads;
    int reduce;           /* dist_reduce */
    int hc_rate, hc_mode; /* --hc-rate, --hc-mode (0: not given; mode 1 static, 2 dynamic) */
    unsigned given;       /* the model flags given (G_*): with --load they must match it */
    double val_frac;
    uint64_t seed;
} options;

/* The model flags: bit 1 << G_* of options.given says the flag was given. */
enum {
    G_LAYERS,
    G_WIDTH,
    G_HEADS,
    G_CTX,
    G_TIED,
    G_NORM,
    G_KIND,
    G_EPS,
    G_INIT,
    G_SCALES,
    G_INPUT_NORM,
    G_QK,
    G_HC_RATE,
    G_HC_MODE
};
#define GIVEN(g) (1u << (g))

/* SIGINT or SIGTERM received: the run stops after the step in progress (see run_on). The
 * handler only sets this; SA_RESETHAND makes a second signal end the program at once. */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* a file size limit (ulimit -f) makes a write fail (EFBIG) instead of killing the
     * program, so that a checkpoint cut short is discarded and the previous one kept */
    signal(SIGXFSZ, SIG_IGN);
}

static const char log_header[] =
    "step,train_loss,val_loss,accuracy,lr,grad_norm,tok_per_s,elapsed_s\n";

/* The --log file, ready to append rows to. The file is replaced (atomic_file.h) by the header
 * and, when the run resumes from a checkpoint at step `resumed_at` (> 0), the rows of steps
 * 1..resumed_at of the existing log, in their order; its later rows (a run that went on past
 * the checkpoint) and rows cut short (a run killed mid-row) are dropped, so the resumed run's
 * rows follow on. An existing file that is not such a log (its first line is not the header)
 * is left alone: NULL, after a message, as for any error. */
static FILE *open_log(const char *path, int resumed_at) {
    FILE *old = fopen(path, "rb");
    af_file a;
    if (af_open(&a, path) != 0) {
        if (old) fclose(old);
        return NULL;
    }
    fputs(log_header, a.f);
    int is_log = 1, first = 1, whole = 1; /* whole: the previous piece ended a line */
    char line[512];
    while (old && fgets(line, sizeof line, old)) {
        size_t len = strlen(line);
        int starts = whole;
        whole = len > 0 && line[len - 1] == '\n';
        if (first) {
            is_log = strcmp(line, log_header) == 0;
            first = 0;
            if (!is_log) break;
            continue;
        }
        char *end;
        long step = strtol(line, &end, 10);
        if (starts && whole && end != line && *end == ',' && step >= 1 && step <= resumed_at)
            fputs(line, a.f);
    }
    if (old) fclose(old);
    if (!is_log) {
        fprintf(stderr, "%s: exists and is not an sn-gpt-train log: not replacing it\n", path);
        af_abort(&a);
        return NULL;
    }
    if (af_commit(&a) != 0) return NULL;
    FILE *f = fopen(path, "a");
    if (!f) perror(path);
    return f;
}

/* Refuses an output that is an input or the other output (the same device and inode): --log
 * must be none of --data, --load, --save, and --save not --data. --save may be --load
 * (resuming in place: the save is atomic). */
static int outputs_distinct(const char *log, const char *save, const char *load, const char *data) {
    const char *pairs[4][2] = {{log, data}, {log, load}, {log, save}, {save, data}};
    for (int i = 0; i < 4; i++)
        if (pairs[i][0] && pairs[i][1] && af_same_file(pairs[i][0], pairs[i][1])) {
            fprintf(stderr, "%s and %s are the same file: refusing to overwrite it\n", pairs[i][0],
                    pairs[i][1]);
            return -1;
        }
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: sn-gpt-train [options]\n"
               "Trains a small GPT; its norms and residual streams come from libsiamesenorm.\n"
               "  --norm NAME         norm placement (default siamese), one of\n"
               "                      ");
    gpt_placement_list(f);
    fprintf(f,
            "\n"
            "  --norm-kind K       layernorm|rmsnorm (default layernorm)\n"
            "  --qk-norm MODE      per-head norms of attention's q and k (qk) or q, k and v\n"
            "                      (qkv), of the --norm-kind, or none; default auto: qkv for\n"
            "                      hybridnorm, hybridnorm_star, siamese_hybrid_pre, else none\n"
            "  --init RULE         weights: mitchell (default; the official OLMo code's rule),\n"
            "                      gpt2 (0.02, output projections 0.02/sqrt(2L)), or flat\n"
            "                      (0.02: the official DeiT/DiT code)\n"
            "  --eps X             every norm's epsilon (default 1e-5)\n"
            "  --scales RULE       default|none: SiameseNorm's c_i = sqrt(2(floor(i/2)+1)) or\n"
            "                      c = 1 (the paper's ablation); DeepNorm's alpha likewise;\n"
            "                      SpanNorm's c = sqrt(L) (the library's reading) or c = 1\n"
            "  --no-input-norm     SiameseNorm without its input norm (the paper's ablation)\n"
            "  --hc-rate N         hyper_connections: the number of residual streams n, 1..8\n"
            "                      (default 4, the paper's main setting)\n"
            "  --hc-mode M         hyper_connections: dynamic (default: the per-token weights of\n"
            "                      the paper's DHC) or static\n");
    fprintf(
        f,
        "  --act-dtype TYPE    f32|bf16: the residual streams and block inputs/outputs in bf16\n"
        "                      (fp32 arithmetic and matmuls; default f32)\n"
        "data (default: English text, the Debian package " FORTUNES_PACKAGE " " FORTUNES_VERSION
        "\n"
        "  checked by checksum; byte-level language modelling)\n"
        "  --task NAME         fortunes|tales|addition: that text, the generated stories, or\n"
        "                      a+b=c problems\n"
        "  --corpus-dir DIR    where the fortunes files are (default " FORTUNES_DIR ")\n"
        "  --digits N          addition operands of 1..N digits (default 3)\n"
        "  --data FILE         train on FILE at byte level instead of a --task (a regular\n"
        "                      file of at most 2 GiB; not with --task)\n"
        "  --val-frac F        text: held-out tail fraction (default 0.1; fortunes: of each\n"
        "                      file)\n"
        "  --val-size N        held-out windows / problems evaluated\n"
        "                      (default: fortunes and tales 256, FILE 64, addition 1000)\n"
        "model\n"
        "  --layers N (4)  --width D (64)  --heads H (4)\n"
        "  --ctx T             positions (default: text 64, addition 3N+3)\n"
        "  --untied            separate output head (default: tied to the embedding)\n"
        "training\n"
        "  --batch B (8)  --steps N (300)  --lr X (1e-2)  --warmup N (steps/20)\n"
        "  --min-lr-frac F (0.1)  --wd X (0.1)  --clip X (1.0)  --beta2 X (0.95)\n"
        "  --seed N (1)\n"
        "  weight decay applies to the matrices and the embeddings (wte, wpe), not to\n"
        "  biases, norm gains and shifts, or the q/k/v norms; every norm gain starts at 1,\n"
        "  every shift at 0 (span_norm: one norm per sub-layer and the final norm, no other\n"
        "  parameters of its own; hyper_connections: its connection weights, in the norms'\n"
        "  block, start at the paper's initialisation and are not decayed either)\n"
        "output\n"
        "  --eval-every N (100)  --print-every N (50, 0: evals only)\n"
        "  --evals N           N evaluations spread evenly (sets --eval-every)\n"
        "  --log FILE          CSV, one row per step\n"
        "  --json              stdout: JSON objects, one at the start (version, kernel\n"
        "                      path, seed, config hash), one per eval, a final one;\n"
        "                      progress goes to stderr\n"
        "  --samples N         addition: show N held-out problems decoded at the end (4)\n"
        "  --save FILE         checkpoint at the end (a file that is not a checkpoint is\n"
        "                      never replaced);  --load FILE resumes from one: its model\n"
        "                      is used, and a model flag given too must match it (the\n"
        "                      task, data and schedule are not stored: give them again)\n"
        "  --blas-threads N    OpenBLAS threads (default 1; another count can round the\n"
        "                      matrix products differently: not bitwise the same run)\n"
        "data parallel (MPI%s): mpirun -np P sn-gpt-train ... splits every batch of B rows\n"
        "  over P ranks; only rank 0 evaluates, prints, logs and saves\n"
        "  --reduce R          ordered (default: fixed summation order, bitwise\n"
        "                      reproducible) or allreduce (MPI_Allreduce, for timing)\n"
        "interrupts: on SIGINT (Ctrl-C) or SIGTERM the run finishes the step in progress,\n"
        "  logs it, saves the checkpoint if --save was given, and exits with status 5;\n"
        "  resume with --load (and the same --log: its rows up to the checkpoint's step\n"
        "  are kept, the new ones appended). A second signal ends the program at once\n"
        "every number is range-checked; files are written whole or not at all (a\n"
        "  temporary in the same directory, renamed), --save's directory is checked at start\n"
        "exit status: 0 done, 1 usage or I/O error, 3 diverged (NaN/Inf loss), 4 the\n"
        "ranks' weights differ, 5 interrupted\n",
        dist_available() ? "" : ": not in this build");
}

static int parse(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->cfg = (gpt_config){.vocab = 256,
                          .ctx = 0,
                          .layers = 4,
                          .heads = 4,
                          .width = 64,
                          .tied = 1,
                          .placement = SN_PLACEMENT_SIAMESE,
                          .norm_kind = SN_NORM_LAYERNORM,
                          .qk_norm = GPT_QK_AUTO,
                          .init = GPT_INIT_MITCHELL,
                          .eps = 1e-5f,
                          .scale_rule = SN_SCALE_DEFAULT};
    o->opt = (optim_config){1e-2f, 0.1f, -1, 300, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    o->task = DATA_FORTUNES;
    o->digits = 3, o->val_size = 0, o->batch = 8, o->eval_every = 100, o->print_every = 50;
    o->samples = 4, o->blas_threads = 1, o->val_frac = 0.1, o->seed = 1;
    const char *task_given = NULL; /* --task's value: not with --data */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1, bad = 0;
#define OPT(name) (strcmp(a, name) == 0)
        if (OPT("--help") || OPT("-h")) {
            usage(stdout);
            exit(af_stdout_status("sn-gpt-train"));
        } else if (OPT("--json")) {
            o->json = 1, takes = 0;
        } else if (OPT("--untied")) {
            o->cfg.tied = 0, o->given |= GIVEN(G_TIED), takes = 0;
        } else if (OPT("--no-input-norm")) {
            o->cfg.no_input_norm = 1, o->given |= GIVEN(G_INPUT_NORM), takes = 0;
        } else if (!v) {
            fprintf(stderr, "%s: missing value or unknown option (see --help)\n", a);
            return -1;
        } else if (OPT("--norm")) {
            o->given |= GIVEN(G_NORM);
            o->cfg.placement = gpt_placement_from_name(v);
            if (o->cfg.placement < 0) {
                fprintf(stderr, "--norm %s: expected one of ", v);
                gpt_placement_list(stderr);
                fprintf(stderr, "\n");
                return -1;
            }
        } else if (OPT("--qk-norm")) {
            o->given |= GIVEN(G_QK);
            o->cfg.qk_norm = gpt_qk_norm_from_name(v);
            if (o->cfg.qk_norm < 0) {
                fprintf(stderr, "--qk-norm %s: expected auto|none|qk|qkv\n", v);
                return -1;
            }
        } else if (OPT("--init")) {
            o->given |= GIVEN(G_INIT);
            o->cfg.init = gpt_init_from_name(v);
            if (o->cfg.init < 0) {
                fprintf(stderr, "--init %s: expected mitchell|gpt2|flat\n", v);
                return -1;
            }
        } else if (OPT("--act-dtype")) {
            sn_dtype dt;
            if (sn_dtype_from_name(v, &dt) != SN_OK) { /* the library's one spelling */
                fprintf(stderr, "--act-dtype %s: expected f32|bf16\n", v);
                return -1;
            }
            o->cfg.act_dtype = (int)dt;
        } else if (OPT("--scales")) {
            o->given |= GIVEN(G_SCALES);
            if (strcmp(v, "default") == 0) o->cfg.scale_rule = SN_SCALE_DEFAULT;
            else if (strcmp(v, "none") == 0) o->cfg.scale_rule = SN_SCALE_NONE;
            else {
                fprintf(stderr, "--scales %s: expected default|none\n", v);
                return -1;
            }
        } else if (OPT("--hc-mode")) {
            o->given |= GIVEN(G_HC_MODE);
            if (strcmp(v, "static") == 0) o->hc_mode = 1;
            else if (strcmp(v, "dynamic") == 0) o->hc_mode = 2;
            else {
                fprintf(stderr, "--hc-mode %s: expected static|dynamic\n", v);
                return -1;
            }
        } else if (OPT("--task")) {
            task_given = v;
            if (strcmp(v, "fortunes") == 0) o->task = DATA_FORTUNES;
            else if (strcmp(v, "tales") == 0) o->task = DATA_TALES;
            else if (strcmp(v, "addition") == 0) o->task = DATA_ADDITION;
            else {
                fprintf(stderr, "--task %s: expected fortunes|tales|addition\n", v);
                return -1;
            }
        } else if (OPT("--reduce")) {
            if (strcmp(v, "ordered") == 0) o->reduce = DIST_ORDERED;
            else if (strcmp(v, "allreduce") == 0) o->reduce = DIST_ALLREDUCE;
            else {
                fprintf(stderr, "--reduce %s: expected ordered|allreduce\n", v);
                return -1;
            }
        } else if (OPT("--norm-kind")) {
            o->given |= GIVEN(G_KIND);
            if (strcmp(v, "layernorm") == 0) o->cfg.norm_kind = SN_NORM_LAYERNORM;
            else if (strcmp(v, "rmsnorm") == 0) o->cfg.norm_kind = SN_NORM_RMSNORM;
            else {
                fprintf(stderr, "--norm-kind %s: expected layernorm|rmsnorm\n", v);
                return -1;
            }
        } else if (OPT("--data")) o->data = v, o->task = DATA_TEXT;
        else if (OPT("--corpus-dir")) o->corpus_dir = v;
        else if (OPT("--log")) o->log = v;
        else if (OPT("--save")) o->save = v;
        else if (OPT("--load")) o->load = v;
        /* every number through numarg.h, with the limits of gpt_limits.h */
        else if (OPT("--eps"))
            bad = na_float(a, v, 0.0, 1.0, NA_OPEN_LO, &o->cfg.eps), o->given |= GIVEN(G_EPS);
        else if (OPT("--digits")) bad = na_int(a, v, 1, 9, &o->digits);
        else if (OPT("--val-frac"))
            bad = na_double(a, v, 0.0, 1.0, NA_OPEN_LO | NA_OPEN_HI, &o->val_frac);
        else if (OPT("--val-size")) bad = na_int(a, v, 1, 1000000, &o->val_size);
        else if (OPT("--layers"))
            bad = na_int(a, v, 1, GPT_MAX_LAYERS, &o->cfg.layers), o->given |= GIVEN(G_LAYERS);
        else if (OPT("--width"))
            bad = na_int(a, v, 1, GPT_MAX_WIDTH, &o->cfg.width), o->given |= GIVEN(G_WIDTH);
        else if (OPT("--heads"))
            bad = na_int(a, v, 1, GPT_MAX_WIDTH, &o->cfg.heads), o->given |= GIVEN(G_HEADS);
        else if (OPT("--ctx"))
            bad = na_int(a, v, 1, GPT_MAX_CTX, &o->cfg.ctx), o->given |= GIVEN(G_CTX);
        else if (OPT("--hc-rate"))
            bad = na_int(a, v, 1, SN_HC_MAX_RATE, &o->hc_rate), o->given |= GIVEN(G_HC_RATE);
        else if (OPT("--batch")) bad = na_int(a, v, 1, GPT_MAX_BATCH, &o->batch);
        else if (OPT("--steps")) bad = na_int(a, v, 1, GPT_MAX_STEPS, &o->opt.steps);
        else if (OPT("--lr")) bad = na_float(a, v, 0.0, GPT_MAX_LR, NA_OPEN_LO, &o->opt.lr);
        else if (OPT("--warmup")) bad = na_int(a, v, 0, GPT_MAX_STEPS, &o->opt.warmup);
        else if (OPT("--min-lr-frac")) bad = na_float(a, v, 0.0, 1.0, 0, &o->opt.min_lr_frac);
        else if (OPT("--wd")) bad = na_float(a, v, 0.0, 1e6, 0, &o->opt.weight_decay);
        else if (OPT("--clip")) bad = na_float(a, v, 0.0, 1e30, 0, &o->opt.clip);
        else if (OPT("--beta2")) bad = na_float(a, v, 0.0, 1.0, NA_OPEN_HI, &o->opt.beta2);
        else if (OPT("--seed")) bad = na_u64(a, v, 0, UINT64_MAX, &o->seed);
        else if (OPT("--eval-every"))
            bad = na_int(a, v, 0, GPT_MAX_STEPS, &o->eval_every), o->evals = 0;
        else if (OPT("--evals")) bad = na_int(a, v, 1, GPT_MAX_STEPS, &o->evals);
        else if (OPT("--print-every")) bad = na_int(a, v, 0, GPT_MAX_STEPS, &o->print_every);
        else if (OPT("--samples")) bad = na_int(a, v, 0, 1000, &o->samples);
        else if (OPT("--blas-threads")) bad = na_int(a, v, 1, 1024, &o->blas_threads);
        else {
            fprintf(stderr, "unknown option %s (see --help)\n", a);
            return -1;
        }
#undef OPT
        if (bad) return -1;
        i += takes;
    }
    if (task_given && o->data) { /* the last of the two used to win, the other ignored */
        fprintf(stderr,
                "--data %s and --task %s: --data FILE is the training text in place of a task; "
                "give one of them\n",
                o->data, task_given);
        return -1;
    }
    if (o->opt.warmup < 0) o->opt.warmup = o->opt.steps / 20;
    if (o->evals > 0) o->eval_every = o->opt.steps / o->evals > 0 ? o->opt.steps / o->evals : 1;
    if (o->val_size <= 0)
        o->val_size = o->task == DATA_TEXT ? 64 : o->task == DATA_ADDITION ? 1000 : 256;
    if (o->cfg.ctx <= 0) o->cfg.ctx = o->task == DATA_ADDITION ? addition_ctx(o->digits) : 64;
    if (o->cfg.placement == SN_PLACEMENT_HYPER_CONN) {
        o->cfg.hc_rate = o->hc_rate ? o->hc_rate : 4;
        o->cfg.hc_dynamic = o->hc_mode != 1;
    } else if (o->hc_rate || o->hc_mode) {
        fprintf(stderr, "--hc-rate and --hc-mode: only with --norm hyper_connections\n");
        return -1;
    }
    char why[96];
    if (gpt_config_check(&o->cfg, why, sizeof why) != 0) {
        fprintf(stderr, "invalid model: %s\n", why);
        return -1;
    }
    if ((long)o->batch * o->cfg.ctx > GPT_MAX_TOKENS) {
        fprintf(stderr, "--batch %d x --ctx %d: more than %ld tokens per step\n", o->batch,
                o->cfg.ctx, GPT_MAX_TOKENS);
        return -1;
    }
    return 0;
}

/* Greedy decoding of a few held-out problems, to show what the model does. */
static void show_samples(trainer *t, int n, FILE *out) {
    const dataset *d = t->data;
    gpt_model *m = &t->model;
    int T = d->T, V = m->cfg.vocab;
    if (n > d->n_val) n = d->n_val;
    if (n > t->model.max_b) n = t->model.max_b;
    for (int r = 0; r < n; r++) {
        int *row = t->tokens + (size_t)r * T;
        const int *truth = d->val_tokens + (size_t)r * T;
        int eq = 0;
        while (truth[eq] != '=') eq++;
        for (int p = 0; p < T; p++) row[p] = p <= eq ? truth[p] : '\n';
        for (int p = 0; p < T; p++) t->targets[(size_t)r * T + p] = 0;
    }
    /* one forward per answer position (at most digits + 2 of them) */
    for (int p = 0; p + 1 < T; p++) {
        gpt_forward(m, t->tokens, t->targets, n);
        for (int r = 0; r < n; r++) {
            int *row = t->tokens + (size_t)r * T;
            const int *truth = d->val_tokens + (size_t)r * T;
            int eq = 0, done = 0;
            while (truth[eq] != '=') eq++;
            for (int q = eq + 1; q <= p; q++) done |= row[q] == '\n';
            if (p < eq || done) continue;
            row[p + 1] = argmax(m->logits + ((size_t)r * T + p) * V, V);
        }
    }
    for (int r = 0; r < n; r++) {
        char want[64], got[64];
        data_row_text(d->val_tokens + (size_t)r * T, T, want, sizeof want);
        data_row_text(t->tokens + (size_t)r * T, T, got, sizeof got);
        fprintf(out, "  %-20s %s\n", got, strcmp(want, got) == 0 ? "ok" : "wrong");
        if (strcmp(want, got) != 0) fprintf(out, "  %-20s (expected)\n", want);
    }
}

/* JSON has no NaN or Infinity: those become null. */
static const char *jnum(double x, char *buf, size_t n) {
    if (isfinite(x)) snprintf(buf, n, "%.9g", x);
    else snprintf(buf, n, "null");
    return buf;
}

/* Everything that decides a run's numbers except the seed, as one canonical line (so two
 * runs with the same hash differ only by their seed, the kernel path and the matmul backend,
 * which the banner names separately); returns its FNV-1a 64 hash. */
static uint64_t config_hash(const options *o, const gpt_config *c, char *buf, size_t n) {
    snprintf(buf, n,
             "norm=%s kind=%s qk=%s init=%s eps=%.9g scales=%s input_norm=%s vocab=%d ctx=%d "
             "layers=%d width=%d heads=%d tied=%d task=%s digits=%d val_size=%d val_frac=%.9g "
             "batch=%d steps=%d lr=%.9g min_lr_frac=%.9g warmup=%d beta1=%.9g beta2=%.9g "
             "adam_eps=%.9g wd=%.9g clip=%.9g",
             gpt_placement_name(c->placement),
             c->norm_kind == SN_NORM_RMSNORM ? "rmsnorm" : "layernorm",
             gpt_qk_norm_name(c->qk_norm), gpt_init_name(c->init), (double)c->eps,
             c->scale_rule == SN_SCALE_NONE ? "none" : "default", c->no_input_norm ? "off" : "on",
             c->vocab, c->ctx, c->layers, c->width, c->heads, c->tied,
             o->task == DATA_TALES      ? "tales"
             : o->task == DATA_FORTUNES ? "fortunes"
             : o->task == DATA_ADDITION ? "addition"
                                        : o->data,
             o->digits, o->val_size, o->val_frac, o->batch, o->opt.steps, (double)o->opt.lr,
             (double)o->opt.min_lr_frac, o->opt.warmup, (double)o->opt.beta1, (double)o->opt.beta2,
             (double)o->opt.eps, (double)o->opt.weight_decay, (double)o->opt.clip);
    /* fp32 streams keep the hashes runs had before the option existed */
    if (c->act_dtype == SN_DTYPE_BF16 && strlen(buf) + 10 < n) strcat(buf, " act=bf16");
    if (c->placement == SN_PLACEMENT_HYPER_CONN && strlen(buf) + 24 < n)
        snprintf(buf + strlen(buf), n - strlen(buf), " hc=%d%s", c->hc_rate,
                 c->hc_dynamic ? "dynamic" : "static");
    return fnv1a64((const unsigned char *)buf, strlen(buf));
}

/* With --load the checkpoint's model is used; a model flag given as well must agree with it
 * (it was silently overridden before 0.6.20). The number of flags that disagree, each named. */
static int load_conflicts(const options *o, const gpt_config *ck) {
    const gpt_config *c = &o->cfg;
    struct {
        int bit; /* G_* */
        const char *flag;
        int given, theirs;
    } f[] = {
        {G_LAYERS, "--layers", c->layers, ck->layers},
        {G_WIDTH, "--width", c->width, ck->width},
        {G_HEADS, "--heads", c->heads, ck->heads},
        {G_CTX, "--ctx", c->ctx, ck->ctx},
        {G_TIED, "--untied", c->tied, ck->tied},
        {G_NORM, "--norm", c->placement, ck->placement},
        {G_KIND, "--norm-kind", c->norm_kind, ck->norm_kind},
        {G_INIT, "--init", c->init, ck->init},
        {G_SCALES, "--scales", c->scale_rule, ck->scale_rule},
        {G_INPUT_NORM, "--no-input-norm", c->no_input_norm, ck->no_input_norm},
        {G_QK, "--qk-norm", gpt_qk_norm_resolve(ck->placement, c->qk_norm), ck->qk_norm},
        {G_HC_RATE, "--hc-rate", c->hc_rate, ck->hc_rate},
        {G_HC_MODE, "--hc-mode", c->hc_dynamic, ck->hc_dynamic},
    };
    int bad = 0;
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
        if ((o->given & GIVEN(f[k].bit)) && f[k].given != f[k].theirs) {
            fprintf(stderr, "%s: %s differs from the checkpoint's model\n", o->load, f[k].flag);
            bad++;
        }
    if ((o->given & GIVEN(G_EPS)) && c->eps != ck->eps) {
        fprintf(stderr, "%s: --eps %g differs from the checkpoint's %g\n", o->load, (double)c->eps,
                (double)ck->eps);
        bad++;
    }
    if (bad)
        fprintf(stderr,
                "%s: a model flag with --load must match the checkpoint (leave it out "
                "to use the checkpoint's)\n",
                o->load);
    return bad;
}

static int run_on(const options *op, dist *dd, FILE *info) {
    options o = *op;
    int root = dd->rank == 0;
    ops_set_blas_threads(o.blas_threads);
    /* outputs checked before the run, not after it */
    if (outputs_distinct(o.log, o.save, o.load, o.task == DATA_TEXT ? o.data : NULL) != 0 ||
        (o.save && (af_check_writable(o.save) != 0 || checkpoint_replaceable(o.save) != 0)))
        return 1;
    if (o.load) {
        gpt_config ck = o.cfg;
        if (checkpoint_peek(o.load, &ck) != 0 || load_conflicts(&o, &ck) != 0) return 1;
        o.cfg = ck;
    }
    if ((long)o.batch * o.cfg.ctx > GPT_MAX_TOKENS) {
        fprintf(stderr, "--batch %d x ctx %d of %s: more than %ld tokens per step\n", o.batch,
                o.cfg.ctx, o.load, GPT_MAX_TOKENS);
        return 1;
    }

    dataset data;
    int rc = o.task == DATA_TEXT    ? data_text(&data, o.data, o.cfg.ctx, o.val_frac, o.val_size)
             : o.task == DATA_TALES ? data_tales(&data, o.cfg.ctx, o.val_frac, o.val_size)
             : o.task == DATA_FORTUNES
                 ? data_fortunes(&data, o.corpus_dir, o.cfg.ctx, o.val_frac, o.val_size)
                 : data_addition(&data, o.digits, o.cfg.ctx, o.val_size);
    if (rc != 0) return 1;
    trainer t;
    if (trainer_create_dist(&t, &o.cfg, &o.opt, &data, o.batch, o.seed, dd) != 0) {
        data_free(&data);
        return 1;
    }
    if (o.load && (checkpoint_load(&t, o.load) != 0 || t.step > o.opt.steps)) {
        if (t.step > o.opt.steps)
            fprintf(stderr, "%s is at step %d, past --steps %d\n", o.load, t.step, o.opt.steps);
        trainer_free(&t);
        data_free(&data);
        return 1;
    }
    FILE *csv = NULL;
    if (o.log) {
        csv = open_log(o.log, o.load ? t.step : 0);
        if (!csv) {
            trainer_free(&t);
            data_free(&data);
            return 1;
        }
    }

    const gpt_config *c = &t.model.cfg;
    int T = c->ctx, steps = o.opt.steps;
    long tok_per_step = (long)o.batch * T;
    char config[512], task[64];
    uint64_t hash = config_hash(&o, c, config, sizeof config);
    const char *isa = sn_isa_name(sn_ctx_isa(t.model.ctx));
    if (o.task == DATA_TEXT) snprintf(task, sizeof task, "%s", o.data);
    else if (o.task == DATA_TALES) snprintf(task, sizeof task, "tales");
    else if (o.task == DATA_FORTUNES)
        snprintf(task, sizeof task, "fortunes (Debian %s %s)", FORTUNES_PACKAGE, FORTUNES_VERSION);
    else snprintf(task, sizeof task, "addition, 1..%d digits", o.digits);
    fprintf(info,
            "sn-gpt-train | norm %s%s%s | init %s | libsiamesenorm %s, kernels %s | %s | L%d D%d "
            "H%d T%d | %.2fM params | batch %d (%ld tok/step) | %d steps | lr %.2g | seed %llu | "
            "config %016llx | matmul %s\n",
            gpt_placement_name(c->placement), c->qk_norm == GPT_QK_NONE ? "" : ", ",
            c->qk_norm == GPT_QK_QK    ? "qk-norm"
            : c->qk_norm == GPT_QK_QKV ? "qkv-norm"
                                       : "",
            gpt_init_name(c->init), sn_version_string(), isa, task, c->layers, c->width, c->heads,
            T, (double)t.model.n_params / 1e6, o.batch, tok_per_step, steps, (double)o.opt.lr,
            (unsigned long long)o.seed, (unsigned long long)hash,
            ops_have_blas() ? "cblas" : "loops");
    if (o.task == DATA_ADDITION)
        fprintf(info,
                "task: a+b=c with 1..%d-digit operands, e.g. \"4821+937=5758\"; loss on "
                "the answer only; %d held-out problems\n",
                o.digits, data.n_val);
    else
        fprintf(info, "task: next byte of %s (%zu training bytes); %d held-out windows of %d\n",
                task, data.n_train, data.n_val, T);
    if (o.json)
        printf("{\"start\":true,\"norm\":\"%s\",\"seed\":%llu,\"version\":\"%s\","
               "\"isa\":\"%s\",\"config_hash\":\"%016llx\",\"config\":\"%s\","
               "\"params\":%zu,\"steps\":%d,\"tokens_per_step\":%ld}\n",
               gpt_placement_name(c->placement), (unsigned long long)o.seed, sn_version_string(),
               isa, (unsigned long long)hash, config, t.model.n_params, steps, tok_per_step);
    if (o.load) fprintf(info, "resumed from %s at step %d\n", o.load, t.step);
    if (dd->size > 1)
        fprintf(info,
                "data parallel: %d ranks (MPI), %d or %d rows each of every batch of %d; "
                "gradient reduction %s; rank 0 evaluates and logs\n",
                dd->size, o.batch / dd->size, (o.batch + dd->size - 1) / dd->size, o.batch,
                dd->reduce == DIST_ALLREDUCE ? "MPI_Allreduce" : "ordered (fixed summation order)");

    double t_start = now_s(), train_time = 0.0, digest_time = 0.0;
    double eval_time = 0.0; /* wall time in evaluations (the ranks wait for rank 0's) */
    int start_step = t.step, diverged = 0, interrupted = 0, n_evals = 0;
    /* the weights' digest: the same on every rank after every step, or the run stops */
    uint64_t digest = dist_digest(t.model.params, t.model.n_params);
    double reduce_t0 = dd->t_reduce, wait_t0 = dd->t_wait;
    eval_result last = {NAN, -1.0};
    step_result r = {NAN, NAN, 0.0f};
    int log_failed = 0;  /* a row of --log could not be written: the run stops, exit 1 */
    off_t log_whole = 0; /* the log's length after its last whole row */
    if (csv && (fseeko(csv, 0, SEEK_END) != 0 || (log_whole = ftello(csv)) < 0)) {
        fprintf(stderr, "%s: %s\n", o.log, strerror(errno));
        fclose(csv);
        trainer_free(&t);
        data_free(&data);
        return 1;
    }
    while (t.step <= steps) {
        int s = t.step;
        int is_eval = (o.eval_every > 0 && s % o.eval_every == 0) || s == steps;
        double tok_s = train_time > 0 ? (double)(s - start_step) * tok_per_step / train_time : 0;
        if (s > start_step && !(isfinite(r.loss) && isfinite(r.grad_norm))) diverged = 1;
        if (is_eval && !diverged) {
            double te = now_s();
            if (root) {
                last = trainer_eval(&t);
                if (!isfinite(last.loss)) diverged = 1;
            }
            dist_bcast_int(dd, &diverged); /* only rank 0 evaluated: the ranks stop together */
            eval_time += now_s() - te;
            n_evals++;
        }
        int printed = is_eval || diverged || (o.print_every > 0 && s % o.print_every == 0);
        if (printed) {
            char eta[32], val[64] = "", acc[32] = "", trn[32] = "";
            /* the time left at the wall time so far: each step left at the steps' (training,
             * digest, logging), each evaluation left at the evaluations' */
            double per_step =
                s > start_step ? (now_s() - t_start - eval_time) / (s - start_step) : 0.0;
            double per_eval = n_evals ? eval_time / n_evals : 0.0;
            fmt_duration(eta_left(s, steps, o.eval_every, per_step, per_eval), eta, sizeof eta);
            if (s > start_step) snprintf(trn, sizeof trn, " | loss %.4f", (double)r.loss);
            if (is_eval) snprintf(val, sizeof val, " | val %.4f", last.loss);
            if (is_eval && last.accuracy >= 0)
                snprintf(acc, sizeof acc, " | acc %5.1f%%", 100.0 * last.accuracy);
            fprintf(info, "step %5d/%d%s%s%s", s, steps, trn, val, acc);
            if (s > start_step)
                fprintf(info, " | lr %.2e | gnorm %.3f | %.0f tok/s | eta %s", (double)r.lr,
                        (double)r.grad_norm, tok_s, eta);
            if (dd->size > 1) fprintf(info, " | digest %016llx", (unsigned long long)digest);
            fprintf(info, "\n");
            fflush(info);
        }
        if (o.json && (is_eval || diverged)) {
            char b1[32], b2[32], b3[32], b4[32];
            printf("{\"step\":%d,\"norm\":\"%s\",\"train_loss\":%s,\"val_loss\":%s,"
                   "\"accuracy\":%s,\"lr\":%.6g,\"grad_norm\":%s,\"tok_per_s\":%.1f,"
                   "\"elapsed_s\":%.2f,\"diverged\":%s,\"digest\":\"%016llx\"}\n",
                   s, gpt_placement_name(c->placement), jnum(r.loss, b1, 32),
                   jnum(last.loss, b2, 32), jnum(last.accuracy, b3, 32), (double)r.lr,
                   jnum(r.grad_norm, b4, 32), tok_s, now_s() - t_start, diverged ? "true" : "false",
                   (unsigned long long)digest);
            fflush(stdout);
        }
        if (csv && s > start_step) {
            fprintf(csv, "%d,%.9g,", s, (double)r.loss);
            if (is_eval) fprintf(csv, "%.9g,%.6g,", last.loss, last.accuracy);
            else fprintf(csv, ",,");
            fprintf(csv, "%.6g,%.6g,%.1f,%.3f\n", (double)r.lr, (double)r.grad_norm, tok_s,
                    now_s() - t_start);
            /* whole rows only, whenever the run stops; a write error (a full disk, ulimit -f)
             * stops the run */
            errno = 0;
            if (fflush(csv) != 0 || ferror(csv)) {
                fprintf(stderr, "%s: write failed at step %d (%s): stopping\n", o.log, s,
                        errno ? strerror(errno) : "a write error");
                log_failed = 1; /* rank 0 alone: the others are ended by dist_abort */
                /* drop the part of the row that was written */
                if (ftruncate(fileno(csv), log_whole) != 0)
                    fprintf(stderr, "%s: the last row may be cut short (%s)\n", o.log,
                            strerror(errno));
            } else {
                log_whole = ftello(csv);
            }
        }
        /* every rank stops at the same step: rank 0's signal decides */
        interrupted = stop_signal != 0;
        if (dd->size > 1) dist_bcast_int(dd, &interrupted);
        if (diverged || s == steps || interrupted || log_failed) break;
        double t0 = now_s();
        r = trainer_step(&t);
        double t1 = now_s();
        train_time += t1 - t0;
        digest = dist_digest(t.model.params, t.model.n_params);
        int same = dist_same_digest(dd, digest);
        digest_time += now_s() - t1;
        if (!same) {
            fprintf(info, "step %d: the ranks' weights differ (rank 0 digest %016llx): stopping\n",
                    t.step, (unsigned long long)digest);
            fflush(info);
            trainer_free(&t);
            data_free(&data);
            return EXIT_RANKS_DIFFER;
        }
    }
    double elapsed = now_s() - t_start;
    errno = 0;
    if (csv && fclose(csv) != 0 && !log_failed) {
        fprintf(stderr, "%s: write failed (%s)\n", o.log,
                errno ? strerror(errno) : "a write error");
        log_failed = 1;
    }
    int status = 0;
    if (log_failed) {
        fprintf(info, "stopped at step %d of %d: the log %s is incomplete%s%s\n", t.step, steps,
                o.log, o.save ? "; saving " : "", o.save ? o.save : "");
        status = 1;
    } else if (diverged) {
        fprintf(info, "diverged at step %d (train loss %g, grad norm %g): stopping\n", t.step,
                (double)r.loss, (double)r.grad_norm);
        status = EXIT_DIVERGED;
    } else if (interrupted) {
        fprintf(info, "interrupted at step %d of %d (signal %d)%s%s%s\n", t.step, steps,
                (int)stop_signal, o.save ? ": saving " : "", o.save ? o.save : "",
                o.save ? "; resume with --load" : "");
        status = EXIT_INTERRUPTED;
    } else {
        fprintf(info, "final | norm %s | step %d | val loss %.4f", gpt_placement_name(c->placement),
                t.step, last.loss);
        if (last.accuracy >= 0)
            fprintf(info, " | accuracy %.1f%% of %d held-out problems", 100.0 * last.accuracy,
                    data.n_val);
        fprintf(info, " | %.1fs\n", elapsed);
        if (o.task == DATA_ADDITION && o.samples > 0) show_samples(&t, o.samples, info);
    }
    int done = t.step - start_step;
    double step_ms = done ? 1e3 * train_time / done : 0.0;
    double reduce_ms = done ? 1e3 * (dd->t_reduce - reduce_t0) / done : 0.0;
    double wait_ms = done ? 1e3 * (dd->t_wait - wait_t0) / done : 0.0;
    if (dd->size > 1 && done)
        fprintf(info,
                "data parallel | %d ranks | step %.2f ms | waiting for the slowest rank "
                "%.3f ms | gradient reduction (%s, %zu floats) %.3f ms = %.1f%% of the "
                "step | digest check %.3f ms | weights identical on every rank after each "
                "of %d steps, digest %016llx\n",
                dd->size, step_ms, wait_ms,
                dd->reduce == DIST_ALLREDUCE ? "MPI_Allreduce" : "ordered", t.model.n_params,
                reduce_ms, 100.0 * reduce_ms / step_ms, 1e3 * digest_time / done, done,
                (unsigned long long)digest);
    if (o.json) {
        char b1[32], b2[32], b3[32];
        printf("{\"final\":true,\"norm\":\"%s\",\"seed\":%llu,\"isa\":\"%s\","
               "\"config_hash\":\"%016llx\",\"step\":%d,\"val_loss\":%s,\"accuracy\":%s,"
               "\"train_loss\":%s,\"elapsed_s\":%.2f,\"diverged\":%s,\"interrupted\":%s,"
               "\"ranks\":%d,"
               "\"step_ms\":%.4f,\"wait_ms\":%.4f,\"reduce_ms\":%.4f,"
               "\"digest\":\"%016llx\"}\n",
               gpt_placement_name(c->placement), (unsigned long long)o.seed, isa,
               (unsigned long long)hash, t.step, jnum(last.loss, b1, 32),
               jnum(last.accuracy, b2, 32), jnum(r.loss, b3, 32), elapsed,
               diverged ? "true" : "false", interrupted ? "true" : "false", dd->size, step_ms,
               wait_ms, reduce_ms, (unsigned long long)digest);
    }
    int saved = o.save && !diverged && checkpoint_save(&t, o.save) == 0;
    if (o.save && !diverged && !saved) status = 1;
    if (saved && (interrupted || log_failed)) fprintf(info, "saved %s\n", o.save);
    trainer_free(&t);
    data_free(&data);
    return status;
}

/* The run itself, on every rank; only rank 0 prints, logs and saves (the others' output options
 * are cleared and info goes to /dev/null). */
static int run(options o, dist *dd) {
    int root = dd->rank == 0;
    FILE *quiet = NULL;
    if (!root) {
        o.json = 0, o.samples = 0, o.log = NULL, o.save = NULL;
        quiet = fopen("/dev/null", "w");
        if (!quiet) return 1;
    }
    FILE *info = !root ? quiet : o.json ? stderr : stdout;
    int status = run_on(&o, dd, info);
    if (quiet) fclose(quiet);
    return status;
}

int main(int argc, char **argv) {
    options o;
    if (parse(argc, argv, &o) != 0) return 1;
    catch_signals();
    dist dd;
    if (dist_init(&dd, &argc, &argv) != 0) return 1;
    dd.reduce = o.reduce;
    int status = run(o, &dd);
    /* stdout (progress, or --json's lines) not written whole (> /dev/full, a full disk): exit 1 */
    if (af_stdout_status("sn-gpt-train") && status == 0) status = 1;
    /* a rank that fails alone (an I/O error on rank 0) must not leave the others waiting */
    /* (diverging and interrupts stop every rank at the same step: no abort, which could kill
     * rank 0 while it saves) */
    if (status != 0 && status != EXIT_DIVERGED && status != EXIT_INTERRUPTED)
        dist_abort(&dd, status);
    dist_finalize(&dd);
    return status;
}
