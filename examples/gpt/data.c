/* Training data that needs no download: the generated "tales" corpus (tales.c) and the
 * addition task, both made in-program, and byte-level text from any file (the default corpus,
 * corpus.c, is text from a Debian package), each with a held-out part. Also the trainer's
 * random number generator. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpt.h"

/* splitmix64: small, fast, and its whole state is one integer (easy to checkpoint). */
uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float rng_uniform(uint64_t *s) { return (float)(rng_next(s) >> 40) * (1.0f / 16777216.0f); }

float rng_normal(uint64_t *s) {
    float u1 = rng_uniform(s), u2 = rng_uniform(s);
    if (u1 < 1e-12f) u1 = 1e-12f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

/* ---- addition ----------------------------------------------------------------------------- */

/* "a+b=c\n" with a, b < 10^digits: at most 3 * digits + 4 bytes; the row predicts all but the
 * first, so it needs one position fewer. */
int addition_ctx(int digits) { return 3 * digits + 3; }

/* About one problem in eight is held out, decided by a hash of (a, b), so no training batch
 * ever contains a validation problem. */
static int held_out(long a, long b) {
    uint64_t s = (uint64_t)a * 1000003u + (uint64_t)b;
    return (rng_next(&s) & 7u) == 0;
}

static long random_operand(uint64_t *rng, int digits) {
    int n = 1 + (int)(rng_next(rng) % (uint64_t)digits);
    long lo = 1, hi = 10;
    for (int i = 1; i < n; i++) {
        lo *= 10;
        hi *= 10;
    }
    if (n == 1) lo = 0;
    return lo + (long)(rng_next(rng) % (uint64_t)(hi - lo));
}

/* One problem into a row: tokens are the bytes, targets the next bytes on the answer only. */
static void addition_row(long a, long b, int T, int *tokens, int *targets) {
    char s[64];
    int len = snprintf(s, sizeof s, "%ld+%ld=%ld\n", a, b, a + b);
    int eq = (int)(strchr(s, '=') - s);
    for (int t = 0; t < T; t++) {
        tokens[t] = t < len ? (unsigned char)s[t] : '\n';
        targets[t] = (t >= eq && t + 1 < len) ? (unsigned char)s[t + 1] : -1;
    }
}

static void addition_sample(int digits, uint64_t *rng, int want_val, long *a, long *b) {
    do {
        *a = random_operand(rng, digits);
        *b = random_operand(rng, digits);
    } while (held_out(*a, *b) != want_val);
}

int data_addition(dataset *d, int digits, int T, int n_val) {
    memset(d, 0, sizeof *d);
    if (digits < 1 || digits > 9 || T < addition_ctx(digits) || n_val < 1) {
        fprintf(stderr, "addition: digits must be 1..9 and ctx >= %d\n",
                addition_ctx(digits > 0 && digits < 10 ? digits : 1));
        return -1;
    }
    d->kind = DATA_ADDITION;
    d->T = T;
    d->digits = digits;
    d->n_val = n_val;
    d->val_tokens = malloc((size_t)n_val * T * sizeof(int));
    d->val_targets = malloc((size_t)n_val * T * sizeof(int));
    if (!d->val_tokens || !d->val_targets) {
        data_free(d);
        return -1;
    }
    uint64_t rng = 0x5EED0F7A11DA7Aull; /* the same held-out problems for every --seed */
    for (int i = 0; i < n_val; i++) {
        long a, b;
        addition_sample(digits, &rng, 1, &a, &b);
        addition_row(a, b, T, d->val_tokens + (size_t)i * T, d->val_targets + (size_t)i * T);
    }
    return 0;
}

/* ---- text --------------------------------------------------------------------------------- */

/* The held-out tail of n bytes: its last val_frac. */
static size_t tail_of(size_t n, double val_frac) { return (size_t)((double)n * val_frac); }

int text_split(dataset *d, const char *what, size_t n_train, int n_val) {
    int T = d->T;
    size_t n = d->n_text;
    size_t n_hold = n - n_train;
    d->n_train = n_train;
    if (d->n_train < (size_t)T + 2 || n_hold < (size_t)T + 1) {
        fprintf(stderr, "%s: %zu training and %zu held-out bytes are too short for ctx %d\n", what,
                n_train, n_hold, T);
        data_free(d);
        return -1;
    }
    size_t windows = (n_hold - 1) / (size_t)T;
    d->n_val = windows < (size_t)n_val ? (int)windows : n_val;
    d->val_tokens = malloc((size_t)d->n_val * T * sizeof(int));
    d->val_targets = malloc((size_t)d->n_val * T * sizeof(int));
    if (!d->val_tokens || !d->val_targets) {
        data_free(d);
        return -1;
    }
    /* held-out windows spread evenly over the tail */
    size_t stride = windows / (size_t)d->n_val * (size_t)T;
    for (int i = 0; i < d->n_val; i++) {
        const unsigned char *s = d->text + d->n_train + (size_t)i * stride;
        for (int t = 0; t < T; t++) {
            d->val_tokens[(size_t)i * T + t] = s[t];
            d->val_targets[(size_t)i * T + t] = s[t + 1];
        }
    }
    return 0;
}

int open_regular(const char *what, const char *path, int64_t *size) {
    /* O_NONBLOCK: a FIFO is refused below instead of waiting for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        fprintf(stderr, "%s%s: %s\n", what, path, strerror(errno));
        return -1;
    }
    struct stat st;
    const int stat_ok = fstat(fd, &st) == 0;
    if (!stat_ok || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "%s%s: %s\n", what, path,
                !stat_ok ? strerror(errno) : "not a regular file (a directory, device or pipe)");
        close(fd);
        return -1;
    }
    if (size) *size = (int64_t)st.st_size;
    return fd;
}

int data_text(dataset *d, const char *path, int T, double val_frac, int n_val) {
    memset(d, 0, sizeof *d);
    d->kind = DATA_TEXT;
    d->T = T;
    int64_t bytes;
    int fd = open_regular("--data ", path, &bytes);
    if (fd < 0) return -1;
    if (bytes > GPT_MAX_TEXT_BYTES) {
        fprintf(stderr, "--data %s: %lld bytes, more than the limit of %lld (2 GiB)\n", path,
                (long long)bytes, (long long)GPT_MAX_TEXT_BYTES);
        close(fd);
        return -1;
    }
    size_t size = (size_t)bytes, n = 0;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        fprintf(stderr, "--data %s: out of memory for %zu bytes\n", path, size);
        close(fd);
        return -1;
    }
    /* the size fstat gave (a file that grows meanwhile is read to that size) */
    while (n < size) {
        ssize_t got = read(fd, buf + n, size - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            fprintf(stderr, "--data %s: read error (%s)\n", path, strerror(errno));
            free(buf);
            close(fd);
            return -1;
        }
        if (got == 0) break; /* shrunk meanwhile: what is there */
        n += (size_t)got;
    }
    close(fd);
    d->text = buf;
    d->n_text = n;
    return text_split(d, path, n - tail_of(n, val_frac), n_val);
}

int data_tales(dataset *d, int T, double val_frac, int n_val) {
    memset(d, 0, sizeof *d);
    d->kind = DATA_TALES;
    d->T = T;
    d->text = malloc(TALES_BYTES);
    if (!d->text) {
        fprintf(stderr, "tales: out of memory\n");
        return -1;
    }
    d->n_text = TALES_BYTES;
    tales_generate(d->text, TALES_BYTES);
    uint64_t h = fnv1a64(d->text, TALES_BYTES);
    if (h != TALES_FNV1A64) {
        fprintf(stderr,
                "tales: the generated corpus has checksum %016llx, expected %016llx: "
                "this build does not produce the reference bytes\n",
                (unsigned long long)h, (unsigned long long)TALES_FNV1A64);
        data_free(d);
        return -1;
    }
    return text_split(d, "tales", TALES_BYTES - tail_of(TALES_BYTES, val_frac), n_val);
}

void data_free(dataset *d) {
    free(d->text);
    free(d->val_tokens);
    free(d->val_targets);
    memset(d, 0, sizeof *d);
}

void data_batch(const dataset *d, uint64_t *rng, int b, int *tokens, int *targets) {
    int T = d->T;
    for (int r = 0; r < b; r++) {
        int *tok = tokens + (size_t)r * T, *tgt = targets + (size_t)r * T;
        if (d->kind == DATA_ADDITION) {
            long x, y;
            addition_sample(d->digits, rng, 0, &x, &y);
            addition_row(x, y, T, tok, tgt);
        } else {
            size_t start = (size_t)(rng_next(rng) % (uint64_t)(d->n_train - (size_t)T));
            for (int t = 0; t < T; t++) {
                tok[t] = d->text[start + t];
                tgt[t] = d->text[start + t + 1];
            }
        }
    }
}

void data_row_text(const int *tokens, int T, char *buf, size_t size) {
    size_t n = 0;
    for (int t = 0; t < T && n + 1 < size; t++) {
        int c = tokens[t];
        if (c == '\n') break;
        buf[n++] = (c >= 32 && c < 127) ? (char)c : '.';
    }
    buf[n] = '\0';
}
