/* Test 'example-llmc' (suite examples): sn-llmc-convert on a small synthetic llm.c checkpoint.
 *
 * Writes an llm.c fp32 checkpoint (L=3, C=8, NH=2, maxT=7, V=13, Vp=16; random values) and
 *   1. converts it to the Pre-Norm layout: the header says what it should, the 10 weight
 *      tensors follow in llm.c's order, and every row of ln1w/ln1b/ln2w/ln2b/lnfw/lnfb sits
 *      in the norm block at the offset sn_net_norm_at gives (gamma; beta at + C), which the
 *      test asks the library for itself;
 *   2. converts it back: byte-identical to the original;
 *   3. --siamese: the ln rows at the input norm N_in (norm 2) of each sub-layer and the merge's
 *      N_f, every other norm at gamma 1, beta 0; such a file does not convert back;
 *   4. refuses a bf16 (version 5) file, a truncated file, trailing bytes, a foreign header
 *      field, and a bad command line.
 * Usage: test_llmc CONVERTER WORK_PREFIX (files WORK_PREFIX.*.bin are written and removed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <siamesenorm.h>

enum { L = 3, C = 8, NH = 2, MAXT = 7, V = 13, VP = 16, NT = 16, HDR = 256 };

static int failures;
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static const char *conv, *prefix;

static const char *path(const char *name) { /* WORK_PREFIX.name.bin, one of 4 rotating buffers */
    static char buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s.%s.bin", prefix, name);
    return buf[k];
}

static int run(const char *args) { /* the converter's exit status is 0 or not */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "\"%s\" %s", conv, args);
    printf("$ %s\n", cmd);
    fflush(stdout);
    return system(cmd);
}

static void run3(const char *mode, const char *in, const char *out, char *cmd, size_t n) {
    snprintf(cmd, n, "%s \"%s\" \"%s\"", mode, path(in), path(out));
}

/* llm.c's tensor sizes in its order: wte wpe ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b
 * fcw fcb fcprojw fcprojb lnfw lnfb. */
static const size_t sizes[NT] = {VP * C,       MAXT *C, L *C, L *C, L * 3 * C *C, L * 3 * C,
                                 L *C *C,      L *C,    L *C, L *C, L * 4 * C *C, L * 4 * C,
                                 L *C * 4 * C, L *C,    C,    C};
static int is_ln(int t) { return t == 2 || t == 3 || t == 8 || t == 9 || t == 14 || t == 15; }

static size_t total(void) {
    size_t n = 0;
    for (int t = 0; t < NT; t++) n += sizes[t];
    return n;
}

static void write_file(const char *name, const int *h, const float *p, size_t n) {
    FILE *f = fopen(path(name), "wb");
    if (!f || fwrite(h, sizeof(int), HDR, f) != HDR || fwrite(p, sizeof(float), n, f) != n ||
        fclose(f) != 0) {
        perror(path(name));
        exit(1);
    }
}

/* Reads a whole file; *n its size in bytes. */
static unsigned char *slurp(const char *name, size_t *n) {
    FILE *f = fopen(path(name), "rb");
    unsigned char *p = NULL;
    *n = 0;
    if (!f) return NULL;
    for (;;) {
        unsigned char *q = realloc(p, *n + 65536);
        if (!q) break;
        p = q;
        size_t got = fread(p + *n, 1, 65536, f);
        *n += got;
        if (got < 65536) break;
    }
    fclose(f);
    return p;
}

/* Checks an SNC1 file of the given placement against the llm.c parameters p. */
static void check_converted(const char *name, sn_placement placement, const float *p) {
    sn_net net;
    int64_t n_norm = 0;
    EXPECT(sn_net_init(&net, placement, 2 * L, C, SN_NORM_LAYERNORM, 1e-5f) == SN_OK, "init");
    EXPECT(sn_net_sizes(&net, &n_norm, NULL, NULL) == SN_OK, "sizes");
    size_t n;
    unsigned char *bytes = slurp(name, &n);
    size_t n_weights = total() - 4 * L * C - 2 * C;
    EXPECT(bytes && n == HDR * sizeof(int) + (n_weights + (size_t)n_norm) * sizeof(float),
           "%s: %zu bytes", name, n);
    if (!bytes || n != HDR * sizeof(int) + (n_weights + (size_t)n_norm) * sizeof(float)) {
        free(bytes);
        return;
    }
    int h[HDR];
    memcpy(h, bytes, sizeof h);
    const int want[11] = {0x534e4331, 1, MAXT, V, L, NH, C, VP, 3, (int)placement, (int)n_norm};
    for (int k = 0; k < HDR; k++)
        EXPECT(h[k] == (k < 11 ? want[k] : 0), "%s: header[%d] = %d", name, k, h[k]);
    float *body = malloc((n_weights + (size_t)n_norm) * sizeof(float));
    if (!body) exit(1);
    memcpy(body, bytes + sizeof h, (n_weights + (size_t)n_norm) * sizeof(float));
    const float *norms = body + n_weights;

    /* The weights, in llm.c's order without the ln tensors. */
    size_t src = 0, dst = 0;
    for (int t = 0; t < NT; t++) {
        if (!is_ln(t)) {
            EXPECT(memcmp(body + dst, p + src, sizes[t] * sizeof(float)) == 0,
                   "%s: weight tensor %d moved", name, t);
            dst += sizes[t];
        }
        src += sizes[t];
    }

    /* Every ln row at the offset the library reports; mark the floats they cover. */
    char *covered = calloc((size_t)n_norm, 1);
    int32_t j = placement == SN_PLACEMENT_PRE_NORM ? 0 : 2;
    static const int wt[3] = {2, 8, 14}; /* ln1w, ln2w, lnfw; the bias tensor follows each */
    size_t start[NT];
    src = 0;
    for (int t = 0; t < NT; t++) start[t] = src, src += sizes[t];
    for (int k = 0; k < 3; k++)
        for (int l = 0; l < (k < 2 ? L : 1); l++) {
            int32_t stage = k == 0 ? 2 * l : k == 1 ? 2 * l + 1 : 2 * L;
            sn_norm norm;
            int64_t off = -1;
            EXPECT(sn_net_norm_at(&net, stage, j, &norm, &off) == SN_OK, "norm_at %d", stage);
            if (off < 0 || off + 2 * C > n_norm) continue;
            EXPECT(memcmp(norms + off, p + start[wt[k]] + (size_t)l * C, C * sizeof(float)) == 0,
                   "%s: %s row %d not at stage %d norm %d gamma (offset %lld)", name,
                   k == 0   ? "ln1w"
                   : k == 1 ? "ln2w"
                            : "lnfw",
                   l, stage, j, (long long)off);
            EXPECT(memcmp(norms + off + C, p + start[wt[k] + 1] + (size_t)l * C,
                          C * sizeof(float)) == 0,
                   "%s: %s row %d not at stage %d norm %d beta", name,
                   k == 0   ? "ln1b"
                   : k == 1 ? "ln2b"
                            : "lnfb",
                   l, stage, j);
            memset(covered + off, 1, 2 * C);
        }

    /* The rest of the block: the norms llm.c has no tensor for, at their defaults. */
    for (int32_t stage = 0; stage <= 2 * L; stage++)
        for (int32_t jj = 0;; jj++) {
            sn_norm norm;
            int64_t off;
            if (sn_net_norm_at(&net, stage, jj, &norm, &off) != SN_OK) break;
            if (covered[off]) continue;
            for (int c = 0; c < C; c++)
                EXPECT(norms[off + c] == 1.0f && norms[off + C + c] == 0.0f,
                       "%s: stage %d norm %d not at its default", name, stage, jj);
            memset(covered + off, 1, 2 * C);
        }
    for (int64_t k = 0; k < n_norm; k++)
        if (!covered[k]) {
            EXPECT(0, "%s: norm block float %lld belongs to no norm", name, (long long)k);
            break;
        }
    if (placement == SN_PLACEMENT_PRE_NORM)
        EXPECT(n_norm == 4 * L * C + 2 * C, "Pre-Norm block of %lld floats", (long long)n_norm);
    free(covered);
    free(body);
    free(bytes);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_llmc CONVERTER WORK_PREFIX\n");
        return 2;
    }
    conv = argv[1], prefix = argv[2];
    char cmd[8192];

    /* A synthetic llm.c checkpoint: train_gpt2.py's header, random tensors. */
    int h[HDR] = {20240326, 3, MAXT, V, L, NH, C, VP};
    size_t n = total();
    float *p = malloc(n * sizeof(float));
    if (!p) return 1;
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (size_t k = 0; k < n; k++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        p[k] = (float)((int64_t)(s >> 40) - (1 << 23)) / (float)(1 << 23); /* [-1, 1) */
    }
    write_file("llmc", h, p, n);

    /* 1, 2: Pre-Norm and back. */
    run3("to-sn", "llmc", "pre", cmd, sizeof cmd);
    EXPECT(run(cmd) == 0, "to-sn failed");
    check_converted("pre", SN_PLACEMENT_PRE_NORM, p);
    run3("to-llmc", "pre", "back", cmd, sizeof cmd);
    EXPECT(run(cmd) == 0, "to-llmc failed");
    size_t na, nb;
    unsigned char *a = slurp("llmc", &na), *b = slurp("back", &nb);
    EXPECT(a && b && na == nb && memcmp(a, b, na) == 0,
           "round trip not byte-identical "
           "(%zu and %zu bytes)",
           na, nb);
    free(a);
    free(b);

    /* 3: SiameseNorm. */
    run3("to-sn --siamese", "llmc", "siamese", cmd, sizeof cmd);
    EXPECT(run(cmd) == 0, "to-sn --siamese failed");
    check_converted("siamese", SN_PLACEMENT_SIAMESE, p);
    run3("to-llmc", "siamese", "back2", cmd, sizeof cmd);
    EXPECT(run(cmd) != 0, "a SiameseNorm file converted back to llm.c");

    /* 4: what must be refused. */
    h[1] = 5; /* bf16 */
    write_file("bad", h, p, n);
    run3("to-sn", "bad", "out", cmd, sizeof cmd);
    EXPECT(run(cmd) != 0, "bf16 accepted");
    h[1] = 3, h[8] = 1; /* a header field train_gpt2.py does not write */
    write_file("bad", h, p, n);
    EXPECT(run(cmd) != 0, "nonzero header[8] accepted");
    h[8] = 0;
    write_file("bad", h, p, n - 1);
    EXPECT(run(cmd) != 0, "truncated file accepted");
    float *p2 = realloc(p, (n + 1) * sizeof(float));
    if (!p2) return 1;
    p = p2, p[n] = 0.0f;
    write_file("bad", h, p, n + 1);
    EXPECT(run(cmd) != 0, "trailing bytes accepted");
    FILE *f = fopen(path("out"), "rb");
    EXPECT(f == NULL, "a failed conversion left its output behind");
    if (f) fclose(f);
    run3("to-llmc", "llmc", "out", cmd, sizeof cmd);
    EXPECT(run(cmd) != 0, "to-llmc accepted an llm.c file");
    EXPECT(run("") != 0 && run("to-sn onlyone") != 0 && run("convert a b") != 0,
           "bad command lines accepted");
    EXPECT(run("--help") == 0, "--help failed");

    const char *names[] = {"llmc", "pre", "back", "siamese", "back2", "bad", "out"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) remove(path(names[k]));
    free(p);
    if (failures) {
        fprintf(stderr, "test_llmc: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_llmc: OK (round trip byte-identical; every ln row at sn_net_norm_at's offset)\n");
    return 0;
}
