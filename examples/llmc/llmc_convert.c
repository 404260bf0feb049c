/* sn-llmc-convert: an llm.c GPT-2 checkpoint <-> libsiamesenorm's parameter layout.
 *
 * llm.c (karpathy/llm.c, train_gpt2.c / train_gpt2.py write_model) stores a model as
 *   int32 header[256]: [0] magic 20240326, [1] version (3: fp32, padded vocab), [2] maxT,
 *                      [3] V, [4] L, [5] NH, [6] C, [7] Vp; the rest 0
 *   then 16 fp32 tensors, in this order (ln tensors are L x C, one row of C per layer):
 *     wte (Vp,C) wpe (maxT,C) ln1w ln1b qkvw (L,3C,C) qkvb (L,3C) attprojw (L,C,C) attprojb
 *     ln2w ln2b fcw (L,4C,C) fcb (L,4C) fcprojw (L,C,4C) fcprojb lnfw (C) lnfb (C)
 * So each layer's LayerNorm parameters sit between its weight tensors. The library keeps every
 * norm of the network in one block instead, whose layout sn_net_norm_at reports: stage i < S
 * is sub-layer i (2l: attention, 2l+1: MLP), stage S the merge (the final norm), and each norm
 * is gamma (C floats) then beta (C floats). This program moves the six ln tensors into that
 * block and back, without knowing a single offset itself.
 *
 * The converted file ("SNC1"):
 *   int32 header[256]: [0] 0x534e4331, [1] 1, [2..7] llm.c's maxT V L NH C Vp, [8] the llm.c
 *                      version it came from, [9] the sn_placement, [10] the norm block's floats
 *   then llm.c's other 10 tensors in llm.c's order (wte wpe qkvw qkvb attprojw attprojb fcw fcb
 *   fcprojw fcprojb), then the norm block (sn_net_sizes' n_params floats).
 * Both files are in the machine's byte order, as llm.c writes them.
 *
 * With --siamese the block is a SiameseNorm network's: ln1/ln2 of a layer become the input norm
 * N_in of its sub-layers (norm 2 of the stage) and lnf the merge's final norm N_f (norm 2);
 * N_post, N_pre, N_a and N_b have no llm.c counterpart and keep their defaults (gamma 1,
 * beta 0). Such a file is a new model, not llm.c's, so only Pre-Norm files convert back.
 *
 * Build against an installed library:
 *   cc -std=c11 -O2 llmc_convert.c $(pkg-config --cflags --libs siamesenorm) -o sn-llmc-convert
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <siamesenorm.h>

#define LLMC_MAGIC  20240326
#define LLMC_FP32   3          /* fp32 tensors, padded vocab (5 is bf16: not handled here) */
#define SNC_MAGIC   0x534e4331 /* "SNC1" */
#define SNC_VERSION 1
#define HEADER_INTS 256
#define NT          16 /* llm.c's parameter tensors */

/* llm.c's tensor order (its ParameterTensors struct). */
enum {
    WTE,
    WPE,
    LN1W,
    LN1B,
    QKVW,
    QKVB,
    ATTPROJW,
    ATTPROJB,
    LN2W,
    LN2B,
    FCW,
    FCB,
    FCPROJW,
    FCPROJB,
    LNFW,
    LNFB
};
static const char *const tensor_names[NT] = {"wte",      "wpe",      "ln1w", "ln1b", "qkvw", "qkvb",
                                             "attprojw", "attprojb", "ln2w", "ln2b", "fcw",  "fcb",
                                             "fcprojw",  "fcprojb",  "lnfw", "lnfb"};

typedef struct {
    int maxT, V, L, NH, C, Vp; /* header[2..7], in llm.c's order */
    int llmc_version;
} Config;

static int is_ln(int t) {
    return t == LN1W || t == LN1B || t == LN2W || t == LN2B || t == LNFW || t == LNFB;
}

/* Floats in each llm.c tensor. */
static void tensor_sizes(const Config *c, size_t sz[NT]) {
    size_t Vp = (size_t)c->Vp, C = (size_t)c->C, T = (size_t)c->maxT, L = (size_t)c->L;
    sz[WTE] = Vp * C;
    sz[WPE] = T * C;
    sz[LN1W] = L * C;
    sz[LN1B] = L * C;
    sz[QKVW] = L * 3 * C * C;
    sz[QKVB] = L * 3 * C;
    sz[ATTPROJW] = L * C * C;
    sz[ATTPROJB] = L * C;
    sz[LN2W] = L * C;
    sz[LN2B] = L * C;
    sz[FCW] = L * 4 * C * C;
    sz[FCB] = L * 4 * C;
    sz[FCPROJW] = L * C * 4 * C;
    sz[FCPROJB] = L * C;
    sz[LNFW] = C;
    sz[LNFB] = C;
}

/* The network the norm block describes: 2 sub-layers per layer, LayerNorm, llm.c's eps. */
static int make_net(sn_net *net, int placement, const Config *c, int64_t *n_norm) {
    sn_status st =
        sn_net_init(net, (sn_placement)placement, 2 * c->L, c->C, SN_NORM_LAYERNORM, 1e-5f);
    if (st == SN_OK) st = sn_net_sizes(net, n_norm, NULL, NULL);
    if (st != SN_OK) {
        fprintf(stderr, "sn-llmc-convert: sn_net_init (L=%d, C=%d): %s\n", c->L, c->C,
                sn_status_string(st));
        return -1;
    }
    return 0;
}

/* Where row l of llm.c's ln tensor t goes in the norm block: the offset sn_net_norm_at
 * reports for the norm that replaces it, plus C for a bias (beta follows gamma). */
static int ln_offset(const sn_net *net, int t, int l, int64_t *off) {
    int32_t S = net->n_sublayers;
    int32_t stage = (t == LN1W || t == LN1B) ? 2 * l : (t == LN2W || t == LN2B) ? 2 * l + 1 : S;
    int32_t j = net->placement == SN_PLACEMENT_PRE_NORM ? 0 : 2; /* SiameseNorm: N_in, N_f */
    sn_norm norm;
    int64_t gamma;
    sn_status st = sn_net_norm_at(net, stage, j, &norm, &gamma);
    if (st != SN_OK || norm.kind != SN_NORM_LAYERNORM || norm.affine != SN_AFFINE_SCALE_SHIFT) {
        fprintf(stderr, "sn-llmc-convert: stage %d norm %d is not an affine LayerNorm (%s)\n",
                stage, j, sn_status_string(st));
        return -1;
    }
    *off = gamma + ((t == LN1B || t == LN2B || t == LNFB) ? net->d : 0);
    return 0;
}

/* Reads the header; returns the magic it found, or 0 on a short file. */
static int read_header(FILE *f, int h[HEADER_INTS]) {
    if (fread(h, sizeof(int), HEADER_INTS, f) != HEADER_INTS) return 0;
    return h[0];
}

/* header[2..7] -> Config, with the bounds the converter relies on (no size_t overflow). */
static int read_config(const int h[HEADER_INTS], Config *c) {
    c->maxT = h[2], c->V = h[3], c->L = h[4], c->NH = h[5], c->C = h[6], c->Vp = h[7];
    if (c->maxT < 1 || c->maxT > (1 << 24) || c->V < 1 || c->Vp < c->V || c->Vp > (1 << 24) ||
        c->L < 1 || c->L > 512 || c->NH < 1 || c->C < 1 || c->C > (1 << 16)) {
        fprintf(stderr, "sn-llmc-convert: implausible sizes maxT=%d V=%d Vp=%d L=%d NH=%d C=%d\n",
                c->maxT, c->V, c->Vp, c->L, c->NH, c->C);
        return -1;
    }
    return 0;
}

/* Reads exactly n floats and then expects the end of the file. */
static int read_floats(FILE *f, float *p, size_t n, const char *path) {
    if (fread(p, sizeof(float), n, f) != n) {
        fprintf(stderr, "sn-llmc-convert: %s: truncated (want %zu floats)\n", path, n);
        return -1;
    }
    if (fgetc(f) != EOF) {
        fprintf(stderr, "sn-llmc-convert: %s: trailing bytes after %zu floats\n", path, n);
        return -1;
    }
    return 0;
}

static int write_all(FILE *f, const void *p, size_t size, size_t n) {
    return fwrite(p, size, n, f) == n ? 0 : -1;
}

/* llm.c checkpoint -> SNC1 file. */
static int to_sn(FILE *in, const char *in_path, FILE *out, int placement) {
    int h[HEADER_INTS];
    Config c;
    if (read_header(in, h) != LLMC_MAGIC) {
        fprintf(stderr, "sn-llmc-convert: %s: not an llm.c model checkpoint\n", in_path);
        return -1;
    }
    if (h[1] != LLMC_FP32) {
        fprintf(stderr, "sn-llmc-convert: %s: version %d; only fp32 (version 3) is handled\n",
                in_path, h[1]);
        return -1;
    }
    for (int k = 8; k < HEADER_INTS;
         k++) /* what train_gpt2.py leaves 0: keeps the round trip exact */
        if (h[k] != 0) {
            fprintf(stderr, "sn-llmc-convert: %s: header[%d] = %d, expected 0\n", in_path, k, h[k]);
            return -1;
        }
    if (read_config(h, &c) != 0) return -1;
    c.llmc_version = h[1];

    size_t sz[NT], start[NT], total = 0;
    tensor_sizes(&c, sz);
    for (int t = 0; t < NT; t++) start[t] = total, total += sz[t];

    sn_net net;
    int64_t n_norm;
    if (make_net(&net, placement, &c, &n_norm) != 0) return -1;
    float *params = malloc(total * sizeof(float));
    float *norms = malloc((size_t)n_norm * sizeof(float));
    int rc = -1;
    if (!params || !norms) {
        fprintf(stderr, "sn-llmc-convert: out of memory (%zu floats)\n", total);
        goto done;
    }
    if (read_floats(in, params, total, in_path) != 0) goto done;
    sn_net_init_params(&net, norms); /* the norms llm.c has no tensor for stay at 1 / 0 */

    /* A Pre-Norm block holds exactly llm.c's six ln tensors: 4LC + 2C floats. */
    if (placement == SN_PLACEMENT_PRE_NORM &&
        (size_t)n_norm != sz[LN1W] + sz[LN1B] + sz[LN2W] + sz[LN2B] + sz[LNFW] + sz[LNFB]) {
        fprintf(stderr, "sn-llmc-convert: the norm block has %lld floats, llm.c's ln tensors %zu\n",
                (long long)n_norm, 4 * sz[LN1W] + 2 * sz[LNFW]);
        goto done;
    }

    int oh[HEADER_INTS] = {0};
    oh[0] = SNC_MAGIC, oh[1] = SNC_VERSION;
    memcpy(oh + 2, h + 2, 6 * sizeof(int));
    oh[8] = c.llmc_version, oh[9] = placement, oh[10] = (int)n_norm;
    if (write_all(out, oh, sizeof(int), HEADER_INTS) != 0) goto write_error;
    for (int t = 0; t < NT; t++) {
        if (!is_ln(t)) { /* the weights: unchanged, in llm.c's order */
            if (write_all(out, params + start[t], sizeof(float), sz[t]) != 0) goto write_error;
            continue;
        }
        for (int l = 0; l < (int)(sz[t] / (size_t)c.C); l++) { /* one C-row per layer */
            int64_t off;
            if (ln_offset(&net, t, l, &off) != 0) goto done;
            memcpy(norms + off, params + start[t] + (size_t)l * (size_t)c.C,
                   (size_t)c.C * sizeof(float));
        }
    }
    if (write_all(out, norms, sizeof(float), (size_t)n_norm) != 0) goto write_error;
    printf("llm.c v%d: L=%d C=%d NH=%d maxT=%d V=%d Vp=%d, %zu floats -> %s: %zu weights + a "
           "norm block of %lld\n",
           c.llmc_version, c.L, c.C, c.NH, c.maxT, c.V, c.Vp, total,
           placement == SN_PLACEMENT_PRE_NORM ? "Pre-Norm" : "SiameseNorm",
           total - 4 * sz[LN1W] - 2 * sz[LNFW], (long long)n_norm);
    rc = 0;
    goto done;
write_error:
    fprintf(stderr, "sn-llmc-convert: write error\n");
done:
    free(params);
    free(norms);
    return rc;
}

/* SNC1 file (Pre-Norm) -> llm.c checkpoint, byte for byte what to_sn read. */
static int to_llmc(FILE *in, const char *in_path, FILE *out) {
    int h[HEADER_INTS];
    Config c;
    if (read_header(in, h) != SNC_MAGIC || h[1] != SNC_VERSION) {
        fprintf(stderr, "sn-llmc-convert: %s: not a file written by sn-llmc-convert to-sn\n",
                in_path);
        return -1;
    }
    if (h[9] != SN_PLACEMENT_PRE_NORM) {
        fprintf(stderr,
                "sn-llmc-convert: %s: placement %d has norms llm.c's model lacks; only "
                "Pre-Norm converts back\n",
                in_path, h[9]);
        return -1;
    }
    if (read_config(h, &c) != 0) return -1;
    c.llmc_version = h[8];

    size_t sz[NT], total = 0;
    tensor_sizes(&c, sz);
    for (int t = 0; t < NT; t++) total += is_ln(t) ? 0 : sz[t];
    sn_net net;
    int64_t n_norm;
    if (make_net(&net, SN_PLACEMENT_PRE_NORM, &c, &n_norm) != 0) return -1;
    if (h[10] != n_norm) {
        fprintf(stderr, "sn-llmc-convert: %s: norm block of %d floats, this library's is %lld\n",
                in_path, h[10], (long long)n_norm);
        return -1;
    }
    float *params = malloc((total + (size_t)n_norm) * sizeof(float));
    int rc = -1;
    if (!params) {
        fprintf(stderr, "sn-llmc-convert: out of memory\n");
        return -1;
    }
    if (read_floats(in, params, total + (size_t)n_norm, in_path) != 0) goto done;
    const float *norms = params + total;

    int oh[HEADER_INTS] = {0};
    oh[0] = LLMC_MAGIC, oh[1] = c.llmc_version;
    memcpy(oh + 2, h + 2, 6 * sizeof(int));
    if (write_all(out, oh, sizeof(int), HEADER_INTS) != 0) goto write_error;
    const float *w = params; /* the next weight tensor */
    for (int t = 0; t < NT; t++) {
        if (!is_ln(t)) {
            if (write_all(out, w, sizeof(float), sz[t]) != 0) goto write_error;
            w += sz[t];
            continue;
        }
        for (int l = 0; l < (int)(sz[t] / (size_t)c.C); l++) { /* gather the rows back */
            int64_t off;
            if (ln_offset(&net, t, l, &off) != 0) goto done;
            if (write_all(out, norms + off, sizeof(float), (size_t)c.C) != 0) goto write_error;
        }
    }
    printf("Pre-Norm L=%d C=%d -> llm.c v%d checkpoint (%s ... %s)\n", c.L, c.C, c.llmc_version,
           tensor_names[0], tensor_names[NT - 1]);
    rc = 0;
    goto done;
write_error:
    fprintf(stderr, "sn-llmc-convert: write error\n");
done:
    free(params);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: sn-llmc-convert to-sn [--siamese] LLMC.bin OUT.bin\n"
            "       sn-llmc-convert to-llmc IN.bin LLMC.bin\n"
            "to-sn   moves the LayerNorm tensors (ln1w ln1b ln2w ln2b lnfw lnfb) of an llm.c fp32\n"
            "        GPT-2 checkpoint (train_gpt2.py, version 3) into libsiamesenorm's Pre-Norm\n"
            "        parameter block (--siamese: a SiameseNorm block, the extra norms at their\n"
            "        defaults) and writes the other tensors in llm.c's order before it;\n"
            "to-llmc converts a Pre-Norm file back, byte for byte.\n"
            "libsiamesenorm %s\n",
            sn_version_string());
}

int main(int argc, char **argv) {
    int siamese = argc > 2 && strcmp(argv[2], "--siamese") == 0;
    int to_sn_mode = argc > 1 && strcmp(argv[1], "to-sn") == 0;
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc != 4 + siamese || (!to_sn_mode && (siamese || strcmp(argv[1], "to-llmc") != 0))) {
        usage(stderr);
        return 2;
    }
    const char *in_path = argv[2 + siamese], *out_path = argv[3 + siamese];
    FILE *in = fopen(in_path, "rb");
    if (!in) {
        perror(in_path);
        return 1;
    }
    FILE *out = fopen(out_path, "wb");
    if (!out) {
        perror(out_path);
        fclose(in);
        return 1;
    }
    int rc = to_sn_mode
                 ? to_sn(in, in_path, out, siamese ? SN_PLACEMENT_SIAMESE : SN_PLACEMENT_PRE_NORM)
                 : to_llmc(in, in_path, out);
    fclose(in);
    if (fclose(out) != 0 && rc == 0) {
        perror(out_path);
        rc = -1;
    }
    if (rc != 0) remove(out_path); /* no half-written checkpoint left behind */
    return rc == 0 ? 0 : 1;
}
