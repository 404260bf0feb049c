/* Test 'example-llmc' (suite examples): sn-llmc-convert on a small synthetic llm.c checkpoint.
 *
 * Writes an llm.c fp32 checkpoint (L=3, C=8, NH=2, maxT=7, V=13, Vp=16; random values) and
 *   1. converts it to every placement: those whose roles take llm.c's norms (pre_norm,
 *      siamese, peri_ln; mix_ln too, whose 3 layers are all Pre-Norm at the default fraction)
 *      succeed, with the header docs/checkpoint-format.md specifies, the 10 weight tensors in
 *      llm.c's order, every ln row at the offset of the input / final norm the test finds
 *      itself (sn_net_find_norm, sn_net_norm_at) and every other norm at gamma 1, beta 0; the
 *      others are refused and leave no file;
 *   2. converts back those whose net is llm.c's model: byte-identical to the original; the
 *      others are refused;
 *   3. never loses data: the output named as the input (the same path, ./path, a hard link, a
 *      symbolic link) is refused with the input intact; an existing output is untouched by a
 *      refused input and by a write interrupted before the rename (SN_AF_FAIL_BEFORE_RENAME=1),
 *      and no temporary is left behind; a complete conversion replaces it;
 *   4. refuses hostile files: bf16 (version 5), truncated, trailing bytes, foreign header
 *      fields, an SNC1 file claiming bf16 data, an unknown or non-llm.c placement, a wrong
 *      block size, implausible sizes; and bad command lines;
 *   5. docs/checkpoint-format.md: its SNC1 header table holds what the program writes, and
 *      its placements table is what `sn-llmc-convert --placements` prints;
 *   6. a file of several read and write chunks (LLMC_CHUNK, 8 MiB: a 10 MB wte) converts there
 *      and back byte-identical; with stderr not a terminal, even with progress lines due from
 *      the start (SN_PROGRESS_AFTER=0), nothing on stderr and stdout the one summary line.
 * Usage: test_llmc CONVERTER WORK_DIR FORMAT_DOC (WORK_DIR is emptied and reused).
 */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static const char *conv, *dir;

static const char *path(const char *name) { /* WORK_DIR/name.bin, one of 8 rotating buffers */
    static char buf[8][4096];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s.bin", dir, name);
    return buf[k];
}

/* Runs the converter with args (env: a prefix of VAR=value words, or ""); 0 on exit status 0. */
static int run_env(const char *env, const char *args) {
    static char cmd[20000];
    snprintf(cmd, sizeof cmd, "%s \"%s\" %s", env, conv, args);
    printf("$ %s\n", cmd);
    fflush(stdout);
    return system(cmd);
}
static int run(const char *args) { return run_env("", args); }

/* "MODE WORK_DIR/in.bin WORK_DIR/out.bin" */
static const char *args3(const char *mode, const char *in, const char *out) {
    static char buf[8192];
    snprintf(buf, sizeof buf, "%s \"%s\" \"%s\"", mode, path(in), path(out));
    return buf;
}

/* llm.c's tensor sizes in its order: wte wpe ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b
 * fcw fcb fcprojw fcprojb lnfw lnfb. */
static const size_t sizes[NT] = {VP * C,       MAXT *C, L *C, L *C, L * 3 * C *C, L * 3 * C,
                                 L *C *C,      L *C,    L *C, L *C, L * 4 * C *C, L * 4 * C,
                                 L *C * 4 * C, L *C,    C,    C};
static const char *const names[NT] = {"wte",      "wpe",      "ln1w", "ln1b", "qkvw", "qkvb",
                                      "attprojw", "attprojb", "ln2w", "ln2b", "fcw",  "fcb",
                                      "fcprojw",  "fcprojb",  "lnfw", "lnfb"};
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

/* Reads a whole file; *n its size in bytes (NULL if absent). */
static unsigned char *slurp(const char *file, size_t *n) {
    FILE *f = fopen(file, "rb");
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

/* Whether file holds exactly the n bytes at want. */
static int holds(const char *file, const unsigned char *want, size_t n) {
    size_t m;
    unsigned char *p = slurp(file, &m);
    int ok = p && m == n && memcmp(p, want, n) == 0;
    free(p);
    return ok;
}

static int exists(const char *file) {
    struct stat st;
    return lstat(file, &st) == 0;
}

/* Entries of WORK_DIR that are temporaries of atomic_file (".NAME.tmp-XXXXXX"). */
static int temporaries(void) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp-") != NULL;
    if (d) closedir(d);
    return n;
}

static int header[HDR]; /* the SNC1 header of the pre_norm conversion, for the docs check */

/* Checks an SNC1 file of the given placement against the llm.c parameters p. */
static void check_converted(const char *name, sn_placement placement, const float *p) {
    const char *pname = sn_placement_name(placement);
    sn_net net;
    int64_t n_norm = 0;
    EXPECT(sn_net_init(&net, placement, 2 * L, C, SN_NORM_LAYERNORM, 1e-5f) == SN_OK, "init");
    EXPECT(sn_net_sizes(&net, &n_norm, NULL, NULL) == SN_OK, "sizes");
    size_t n;
    unsigned char *bytes = slurp(path(name), &n);
    size_t n_weights = total() - 4 * L * C - 2 * C;
    size_t want_n = HDR * sizeof(int) + (n_weights + (size_t)n_norm) * sizeof(float);
    EXPECT(bytes && n == want_n, "%s: %zu bytes, want %zu", pname, n, want_n);
    if (!bytes || n != want_n) {
        free(bytes);
        return;
    }
    int h[HDR];
    memcpy(h, bytes, sizeof h);
    if (placement == SN_PLACEMENT_PRE_NORM) memcpy(header, h, sizeof h);
    const int want[11] = {0x534e4331, 1, MAXT, V, L, NH, C, VP, 3, (int)placement, (int)n_norm};
    for (int k = 0; k < HDR; k++)
        EXPECT(h[k] == (k < 11 ? want[k] : 0), "%s: header[%d] = %d", pname, k, h[k]);
    float *body = malloc((n_weights + (size_t)n_norm) * sizeof(float));
    if (!body) exit(1);
    memcpy(body, bytes + sizeof h, (n_weights + (size_t)n_norm) * sizeof(float));
    const float *norms = body + n_weights;

    /* The weights, in llm.c's order without the ln tensors. */
    size_t src = 0, dst = 0, start[NT];
    for (int t = 0; t < NT; t++) {
        start[t] = src;
        if (!is_ln(t)) {
            EXPECT(memcmp(body + dst, p + src, sizes[t] * sizeof(float)) == 0,
                   "%s: weight tensor %s moved", pname, names[t]);
            dst += sizes[t];
        }
        src += sizes[t];
    }

    /* Every ln row at the input norm of its sub-layer, lnf at the merge's final norm. */
    char *covered = calloc((size_t)n_norm + 1, 1);
    static const int wt[3] = {2, 8, 14}; /* ln1w, ln2w, lnfw; the bias tensor follows each */
    for (int k = 0; k < 3; k++)
        for (int l = 0; l < (k < 2 ? L : 1); l++) {
            int32_t stage = k == 0 ? 2 * l : k == 1 ? 2 * l + 1 : 2 * L, j = -1;
            sn_norm norm;
            int64_t off = -1;
            EXPECT(sn_net_find_norm(&net, stage, k < 2 ? SN_ROLE_INPUT : SN_ROLE_FINAL, &j) ==
                       SN_OK,
                   "%s: stage %d has no input/final norm", pname, stage);
            EXPECT(sn_net_norm_at(&net, stage, j, &norm, &off) == SN_OK, "norm_at %d", stage);
            if (off < 0 || off + 2 * C > n_norm) continue;
            EXPECT(memcmp(norms + off, p + start[wt[k]] + (size_t)l * C, C * sizeof(float)) == 0,
                   "%s: %s row %d not at stage %d norm %d gamma (offset %lld)", pname, names[wt[k]],
                   l, stage, j, (long long)off);
            EXPECT(memcmp(norms + off + C, p + start[wt[k] + 1] + (size_t)l * C,
                          C * sizeof(float)) == 0,
                   "%s: %s row %d not at stage %d norm %d beta", pname, names[wt[k] + 1], l, stage,
                   j);
            memset(covered + off, 1, 2 * C);
        }

    /* The rest of the block: the norms llm.c has no tensor for, at their defaults. */
    for (int32_t stage = -1; stage <= 2 * L; stage++)
        for (int32_t jj = 0;; jj++) {
            sn_norm norm;
            int64_t off, np;
            if (sn_net_norm_at(&net, stage, jj, &norm, &off) != SN_OK) break;
            EXPECT(sn_norm_query(&norm, C, &np, NULL) == SN_OK, "query");
            if (np == 0 || covered[off]) continue;
            for (int c = 0; c < np; c++)
                EXPECT(norms[off + c] == (c < C ? 1.0f : 0.0f),
                       "%s: stage %d norm %d not at its default", pname, stage, jj);
            memset(covered + off, 1, (size_t)np);
        }
    /* Hyper-Connections' connection weights (no llm.c tensor): at the library's initialisation */
    {
        float *init = calloc((size_t)n_norm + 1, sizeof(float));
        int64_t off, cnt;
        EXPECT(init && sn_net_init_params(&net, init) == SN_OK, "init_params");
        for (int32_t i = 0; init && sn_net_conn_at(&net, i, &off, &cnt) == SN_OK; i++) {
            if (off < 0 || off + cnt > n_norm) continue;
            EXPECT(memcmp(norms + off, init + off, (size_t)cnt * sizeof(float)) == 0,
                   "%s: sub-layer %d's connection weights not at their initialisation", pname, i);
            memset(covered + off, 1, (size_t)cnt);
        }
        free(init);
    }
    for (int64_t k = 0; k < n_norm; k++)
        if (!covered[k]) {
            EXPECT(0, "%s: norm block float %lld belongs to no norm", pname, (long long)k);
            break;
        }
    if (placement == SN_PLACEMENT_PRE_NORM)
        EXPECT(n_norm == 4 * L * C + 2 * C, "Pre-Norm block of %lld floats", (long long)n_norm);
    free(covered);
    free(body);
    free(bytes);
}

/* The directions each 0.4 placement converts in, for this test's L = 3 (Mix-LN's default
 * fraction gives floor(0.25 * 3) = 0 Post-Norm layers: the net is Pre-Norm's). -1: unknown. */
static int expect_from(int p) {
    if (p >= 10) return -1;
    return p == SN_PLACEMENT_PRE_NORM || p == SN_PLACEMENT_SIAMESE || p == SN_PLACEMENT_PERI_LN ||
           p == SN_PLACEMENT_MIX_LN;
}
static int expect_to(int p) {
    if (p >= 10) return -1;
    return p == SN_PLACEMENT_PRE_NORM || p == SN_PLACEMENT_MIX_LN;
}

/* 3: every way of naming the input as the output is refused and the input survives. */
static void same_file(const unsigned char *orig, size_t n_orig, const char *mode) {
    char cwd[4096], a[8192];
    EXPECT(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    EXPECT(run(args3(mode, "victim", "victim")) != 0, "%s X X accepted", mode);
    EXPECT(holds(path("victim"), orig, n_orig), "%s X X: the input changed", mode);
    EXPECT(chdir(dir) == 0, "chdir");
    EXPECT(run_env("", strcmp(mode, "to-sn") ? "to-llmc victim.bin ./victim.bin"
                                             : "to-sn victim.bin ./victim.bin") != 0,
           "%s X ./X accepted", mode);
    EXPECT(chdir(cwd) == 0, "chdir back");
    EXPECT(holds(path("victim"), orig, n_orig), "%s X ./X: the input changed", mode);
    remove(path("hard"));
    remove(path("sym"));
    EXPECT(link(path("victim"), path("hard")) == 0, "link");
    EXPECT(run(args3(mode, "victim", "hard")) != 0, "%s X hardlink-to-X accepted", mode);
    EXPECT(run(args3(mode, "hard", "victim")) != 0, "%s hardlink-to-X X accepted", mode);
    EXPECT(symlink("victim.bin", path("sym")) == 0, "symlink");
    EXPECT(run(args3(mode, "victim", "sym")) != 0, "%s X symlink-to-X accepted", mode);
    EXPECT(run(args3(mode, "sym", "victim")) != 0, "%s symlink-to-X X accepted", mode);
    EXPECT(holds(path("victim"), orig, n_orig), "%s: the input changed through a link", mode);
    snprintf(a, sizeof a, "%s --placement siamese \"%s\" \"%s\"", mode, path("victim"),
             path("victim"));
    if (!strcmp(mode, "to-sn")) EXPECT(run(a) != 0, "to-sn --placement X X accepted");
    EXPECT(holds(path("victim"), orig, n_orig), "%s: the input changed", mode);
    EXPECT(temporaries() == 0, "%s: a temporary was left behind", mode);
    remove(path("hard"));
    remove(path("sym"));
}

/* 5: the docs' tables. */
static void docs(const char *doc) {
    FILE *f = fopen(doc, "r");
    EXPECT(f != NULL, "cannot read %s", doc);
    if (!f) return;
    char line[4096], table[16384] = "";
    int section = 0, rows = 0;
    const int want_sym[11] = {0x534e4331,       1, MAXT, V, L, NH, C, VP, 3, SN_PLACEMENT_PRE_NORM,
                              4 * L * C + 2 * C};
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "<!-- /", 6)) section = 0;
        else if (!strncmp(line, "<!-- snc1-header -->", 20)) section = 1;
        else if (!strncmp(line, "<!-- llmc-placements -->", 24)) section = 2;
        else if (section == 1 && line[0] == '|' && line[2] != '-' && strncmp(line, "| slot", 6)) {
            /* | `[k]` or `[a..b]` | field | value in this test's file (a number, or a symbol) | */
            int a = -1, b = -1;
            char value[256] = "";
            if (sscanf(line, "| `[%d..%d]` | %*[^|] | `%255[^`]`", &a, &b, value) != 3) {
                b = -1;
                if (sscanf(line, "| `[%d]` | %*[^|] | `%255[^`]`", &a, value) != 2) a = -1;
                b = a;
            }
            EXPECT(a >= 0 && b >= a && b < HDR, "%s: unreadable header row: %s", doc, line);
            static const char *const sym[] = {"maxT", "V", "L", "NH", "C", "Vp"};
            for (int k = a; k >= 0 && k <= b && k < HDR; k++) {
                long v = strtol(value, NULL, 0);
                for (int s = 0; s < 6; s++)
                    if (!strcmp(value, sym[s])) v = want_sym[2 + s];
                if (!strcmp(value, "placement")) v = SN_PLACEMENT_PRE_NORM;
                if (!strcmp(value, "n_norm")) v = 4 * L * C + 2 * C;
                EXPECT(header[k] == v, "%s: header[%d] is %d, the table says %s", doc, k, header[k],
                       value);
                EXPECT(k > 10 || v == want_sym[k], "%s: the table's [%d] is %s", doc, k, value);
                rows++;
            }
        } else if (section == 2 && strlen(table) + strlen(line) < sizeof table) {
            strcat(table, line);
        }
    }
    fclose(f);
    EXPECT(rows == HDR, "%s: the SNC1 header table covers %d of the %d slots", doc, rows, HDR);
    char cmd[8192], out[16384];
    snprintf(cmd, sizeof cmd, "\"%s\" --placements", conv);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    if (p) pclose(p);
    EXPECT(!strcmp(table, out),
           "%s: the placements table differs from `sn-llmc-convert --placements`:\n%s", doc, out);
}

/* Whether file holds exactly the text want. */
static int holds_text(const char *file, const char *want) {
    return holds(file, (const unsigned char *)want, strlen(want));
}

/* 6: L=1, C=64, NH=1, maxT=8, V=Vp=40000: 10,270,720 bytes of parameters, 2.6M floats of wte. */
static void chunks(void) {
    enum { BL = 1, BC = 64, BT = 8, BV = 40000 };
    const int bh[HDR] = {20240326, 3, BT, BV, BL, 1, BC, BV};
    const size_t bn = (size_t)BV * BC + BT * BC + 2 * BL * BC + 3 * BL * BC * BC + 3 * BL * BC +
                      BL * BC * BC + BL * BC + 2 * BL * BC + 4 * BL * BC * BC + 4 * BL * BC +
                      4 * BL * BC * BC + BL * BC + 2 * BC;
    float *bp = malloc(bn * sizeof(float));
    if (!bp) exit(1);
    for (size_t k = 0; k < bn; k++) bp[k] = (float)(k % 1000003) * 0x1p-20f;
    write_file("big", bh, bp, bn);
    free(bp);
    size_t n_big;
    unsigned char *big = slurp(path("big"), &n_big);
    char a[16384], want[16384];
    snprintf(a, sizeof a, "%s >\"%s\" 2>\"%s\"", args3("to-sn", "big", "big-sn"), path("out"),
             path("err"));
    EXPECT(run_env("SN_PROGRESS_AFTER=0", a) == 0, "to-sn of a %zu-byte file failed", n_big);
    snprintf(want, sizeof want, "%s: llm.c v3 L=%d C=%d NH=1 maxT=%d V=%d Vp=%d -> %s (pre_norm)\n",
             path("big"), BL, BC, BT, BV, BV, path("big-sn"));
    EXPECT(holds_text(path("out"), want), "to-sn's stdout is not its one line:\n%s", want);
    EXPECT(holds_text(path("err"), ""), "to-sn wrote to a stderr that is not a terminal");
    snprintf(a, sizeof a, "%s >\"%s\" 2>\"%s\"", args3("to-llmc", "big-sn", "big-back"),
             path("out"), path("err"));
    EXPECT(run_env("SN_PROGRESS_AFTER=0", a) == 0, "to-llmc of the big file failed");
    snprintf(want, sizeof want,
             "%s: llm.c v3 L=%d C=%d NH=1 maxT=%d V=%d Vp=%d -> %s (llm.c "
             "checkpoint)\n",
             path("big-sn"), BL, BC, BT, BV, BV, path("big-back"));
    EXPECT(holds_text(path("out"), want), "to-llmc's stdout is not its one line:\n%s", want);
    EXPECT(holds_text(path("err"), ""), "to-llmc wrote to a stderr that is not a terminal");
    EXPECT(big && holds(path("big-back"), big, n_big),
           "a file of several chunks: round trip not byte-identical");
    free(big);
    remove(path("big"));
    remove(path("big-sn"));
    remove(path("big-back"));
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_llmc CONVERTER WORK_DIR FORMAT_DOC\n");
        return 2;
    }
    conv = argv[1], dir = argv[2];
    mkdir(dir, 0777);
    DIR *d = opendir(dir); /* start empty */
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char f[8192];
            snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
            remove(f);
        }
    if (d) closedir(d);

    /* A synthetic llm.c checkpoint: train_gpt2.py's header, random tensors. */
    int h[HDR] = {20240326, 3, MAXT, V, L, NH, C, VP};
    size_t n = total();
    float *p = malloc((n + 1) * sizeof(float));
    if (!p) return 1;
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (size_t k = 0; k < n; k++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        p[k] = (float)((int64_t)(s >> 40) - (1 << 23)) / (float)(1 << 23); /* [-1, 1) */
    }
    write_file("llmc", h, p, n);
    size_t n_orig;
    unsigned char *orig = slurp(path("llmc"), &n_orig);

    /* 1, 2: every placement there, and back where the net is llm.c's model. */
    for (int pl = 0; pl < SN_PLACEMENT_COUNT; pl++) {
        const char *name = sn_placement_name((sn_placement)pl);
        char mode[256];
        snprintf(mode, sizeof mode, "to-sn --placement %s", name);
        int ok = run(args3(mode, "llmc", "conv")) == 0;
        EXPECT(expect_from(pl) < 0 || ok == expect_from(pl), "to-sn %s: %s", name,
               ok ? "accepted" : "refused");
        if (ok) check_converted("conv", (sn_placement)pl, p);
        else EXPECT(!exists(path("conv")), "to-sn %s refused but left a file", name);
        if (!ok) continue;
        int back = run(args3("to-llmc", "conv", "back")) == 0;
        EXPECT(expect_to(pl) < 0 || back == expect_to(pl), "to-llmc %s: %s", name,
               back ? "accepted" : "refused");
        if (back)
            EXPECT(holds(path("back"), orig, n_orig), "%s: round trip not byte-identical", name);
        remove(path("conv"));
        remove(path("back"));
    }
    EXPECT(run(args3("to-sn", "llmc", "pre")) == 0, "to-sn (default pre_norm) failed");
    check_converted("pre", SN_PLACEMENT_PRE_NORM, p);
    EXPECT(run(args3("to-sn --siamese", "llmc", "siamese")) == 0, "to-sn --siamese failed");
    check_converted("siamese", SN_PLACEMENT_SIAMESE, p);
    size_t n_pre;
    unsigned char *pre = slurp(path("pre"), &n_pre);

    /* 3: the output is never the input; an existing output is replaced only by success. */
    write_file("victim", h, p, n);
    same_file(orig, n_orig, "to-sn");
    FILE *vf = fopen(path("victim"), "wb");
    if (!vf || fwrite(pre, 1, n_pre, vf) != n_pre || fclose(vf) != 0) return 1;
    same_file(pre, n_pre, "to-llmc");

    static const unsigned char keep[] = "a checkpoint the user keeps";
    FILE *kf = fopen(path("keep"), "wb");
    if (!kf || fwrite(keep, 1, sizeof keep, kf) != sizeof keep || fclose(kf) != 0) return 1;
    h[1] = 5;
    write_file("bad", h, p, n);
    h[1] = 3;
    EXPECT(run(args3("to-sn", "bad", "keep")) != 0, "bf16 accepted");
    EXPECT(holds(path("keep"), keep, sizeof keep), "a refused input changed the existing output");
    EXPECT(run(args3("to-llmc", "llmc", "keep")) != 0, "to-llmc accepted an llm.c file");
    EXPECT(holds(path("keep"), keep, sizeof keep), "a refused input changed the existing output");
    EXPECT(run_env("SN_AF_FAIL_BEFORE_RENAME=1", args3("to-sn", "llmc", "keep")) != 0,
           "an interrupted write reported success");
    EXPECT(holds(path("keep"), keep, sizeof keep), "an interrupted write changed the output");
    EXPECT(run_env("SN_AF_FAIL_BEFORE_RENAME=1", args3("to-llmc", "pre", "keep")) != 0,
           "an interrupted write reported success");
    EXPECT(holds(path("keep"), keep, sizeof keep), "an interrupted write changed the output");
    EXPECT(holds(path("llmc"), orig, n_orig) && holds(path("pre"), pre, n_pre),
           "an interrupted write changed its input");
    EXPECT(temporaries() == 0, "an interrupted write left its temporary");
    EXPECT(run(args3("to-llmc", "pre", "keep")) == 0 && holds(path("keep"), orig, n_orig),
           "a complete conversion did not replace the existing output");
    remove(path("keep"));
    EXPECT(run(args3("to-sn", "llmc", "missing-dir/out")) != 0, "a missing directory accepted");

    /* 4: hostile llm.c files. */
    struct {
        int slot, value;
        const char *what;
    } bad_llmc[] = {{1, 5, "bf16"},          {1, 2, "version 2"},      {8, 1, "header[8]"},
                    {255, 7, "header[255]"}, {0, 20240327, "magic"},   {5, 3, "NH not dividing C"},
                    {3, VP + 1, "V > Vp"},   {4, 0, "L = 0"},          {4, 513, "L = 513"},
                    {6, -8, "C < 0"},        {2, 1 << 30, "maxT huge"}};
    for (size_t k = 0; k < sizeof bad_llmc / sizeof bad_llmc[0]; k++) {
        int hb[HDR];
        memcpy(hb, h, sizeof hb);
        hb[bad_llmc[k].slot] = bad_llmc[k].value;
        write_file("bad", hb, p, n);
        EXPECT(run(args3("to-sn", "bad", "out")) != 0, "llm.c file with %s accepted",
               bad_llmc[k].what);
    }
    write_file("bad", h, p, n - 1);
    EXPECT(run(args3("to-sn", "bad", "out")) != 0, "truncated file accepted");
    p[n] = 0.0f;
    write_file("bad", h, p, n + 1);
    EXPECT(run(args3("to-sn", "bad", "out")) != 0, "trailing bytes accepted");
    FILE *tf = fopen(path("bad"), "wb");
    if (tf) fclose(tf);
    EXPECT(run(args3("to-sn", "bad", "out")) != 0, "an empty file accepted");
    EXPECT(run(args3("to-sn", "nothing", "out")) != 0, "a missing input accepted");

    /* 4: hostile SNC1 files, from the valid pre_norm one. */
    struct {
        int slot, value;
        const char *what;
    } bad_snc[] = {{8, 5, "bf16 data claimed"}, {8, 0, "llm.c version 0"},
                   {9, 2, "siamese"},           {9, 99, "placement 99"},
                   {9, -1, "placement -1"},     {10, 4 * L * C + 2 * C + 1, "block size"},
                   {11, 1, "header[11]"},       {1, 2, "SNC version 2"},
                   {0, 20240326, "magic"},      {6, 16, "C changed"}};
    for (size_t k = 0; k < sizeof bad_snc / sizeof bad_snc[0]; k++) {
        int hb[HDR];
        memcpy(hb, pre, sizeof hb);
        hb[bad_snc[k].slot] = bad_snc[k].value;
        FILE *bf = fopen(path("bad"), "wb");
        if (!bf || fwrite(hb, sizeof hb, 1, bf) != 1 ||
            fwrite(pre + sizeof hb, 1, n_pre - sizeof hb, bf) != n_pre - sizeof hb || fclose(bf))
            return 1;
        EXPECT(run(args3("to-llmc", "bad", "out")) != 0, "SNC1 file with %s accepted",
               bad_snc[k].what);
    }
    EXPECT(!exists(path("out")), "a refused conversion left its output behind");
    EXPECT(temporaries() == 0, "a refused conversion left a temporary");

    EXPECT(run("") != 0 && run("to-sn onlyone") != 0 && run("convert a b") != 0 &&
               run("to-llmc --siamese a b") != 0 && run("to-sn --placement nonesuch a b") != 0 &&
               run("to-sn --placement") != 0,
           "bad command lines accepted");
    EXPECT(run("--help >/dev/null") == 0 && run("--version") == 0, "--help or --version failed");
    /* output that does not reach stdout is a failure (the full device: ENOSPC on the flush) */
    if (access("/dev/full", W_OK) == 0)
        EXPECT(run("--placements >/dev/full 2>/dev/null") != 0 &&
                   run("--help >/dev/full 2>/dev/null") != 0 &&
                   run("--version >/dev/full 2>/dev/null") != 0,
               "output to /dev/full reported as success");

    /* 5 */
    docs(argv[3]);

    /* 6 */
    chunks();

    free(orig);
    free(pre);
    free(p);
    if (failures) {
        fprintf(stderr, "test_llmc: %d failure(s)\n", failures);
        return 1;
    }
    printf(
        "test_llmc: OK (every placement through the roles; round trips byte-identical; the "
        "input never the output; existing outputs untouched by refusals and interrupted "
        "writes; hostile files refused; the format doc's tables hold; files of several chunks, no "
        "progress on a stderr that is not a terminal)\n");
    return 0;
}
