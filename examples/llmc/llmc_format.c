/* llm.c checkpoints and SNC1 files: parsing (every header field, the exact length) and writing
 * (docs/checkpoint-format.md). The norm tensors move through siamesenorm_llmc.h, which finds
 * their places by the norms' roles: no offset and no placement is named here. */
#include "llmc_format.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <siamesenorm_llmc.h>

/* llm.c's tensor order (its ParameterTensors), and which are the LayerNorm tensors
 * (SN_LLMC_LN1W .. SN_LLMC_LNFB in that order). */
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
static const int ln_tensors[SN_LLMC_NLN] = {LN1W, LN1B, LN2W, LN2B, LNFW, LNFB};
static int is_ln(int t) {
    for (int k = 0; k < SN_LLMC_NLN; k++)
        if (ln_tensors[k] == t) return 1;
    return 0;
}

static int fail(char *err, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* header[2..7] -> sizes, with the bounds that keep every size below 2^44 floats. */
static int read_sizes(const int32_t *h, llmc_model *m, char *err, size_t n) {
    m->maxT = h[2], m->V = h[3], m->L = h[4], m->NH = h[5], m->C = h[6], m->Vp = h[7];
    if (m->maxT < 1 || m->maxT > LLMC_MAX_T || m->V < 1 || m->Vp < m->V || m->Vp > LLMC_MAX_T ||
        m->L < 1 || m->L > LLMC_MAX_LAYERS || m->NH < 1 || m->C < 1 || m->C > LLMC_MAX_C ||
        m->C % m->NH != 0)
        return fail(err, n,
                    "implausible sizes maxT=%d V=%d Vp=%d L=%d NH=%d C=%d (want 1 <= maxT, Vp <= "
                    "2^24, V <= Vp, 1 <= L <= %d, 1 <= C <= %d, NH dividing C)",
                    m->maxT, m->V, m->Vp, m->L, m->NH, m->C, LLMC_MAX_LAYERS, LLMC_MAX_C);
    const uint64_t Vp = (uint64_t)m->Vp, C = (uint64_t)m->C, T = (uint64_t)m->maxT,
                   L = (uint64_t)m->L;
    const uint64_t sz[LLMC_NT] = {Vp * C,        T * C, L * C, L * C, L * 3 * C * C, L * 3 * C,
                                  L * C * C,     L * C, L * C, L * C, L * 4 * C * C, L * 4 * C,
                                  L * 4 * C * C, L * C, C,     C};
    uint64_t total = 0;
    for (int t = 0; t < LLMC_NT; t++) total += sz[t];
    if (total > SIZE_MAX / sizeof(float) - LLMC_HEADER)
        return fail(err, n, "a model of %llu floats does not fit in memory here",
                    (unsigned long long)total);
    for (int t = 0; t < LLMC_NT; t++) m->sz[t] = (size_t)sz[t];
    m->n_floats = (size_t)total;
    return 0;
}

static int zero_from(const int32_t *h, int k, char *err, size_t n) {
    for (; k < LLMC_HEADER; k++)
        if (h[k] != 0) return fail(err, n, "header[%d] = %d, expected 0", k, (int)h[k]);
    return 0;
}

static int exact_length(size_t n, size_t floats, char *err, size_t errn) {
    const size_t want = LLMC_HEADER * sizeof(int32_t) + floats * sizeof(float);
    if (n < want) return fail(err, errn, "truncated: %zu bytes, the header says %zu", n, want);
    if (n > want)
        return fail(err, errn, "%zu bytes after the %zu the header accounts for", n - want, want);
    return 0;
}

int llmc_net(const llmc_model *m, int placement, sn_net *net, char *err, size_t errn) {
    if (placement < 0 || placement >= SN_PLACEMENT_COUNT)
        return fail(err, errn, "placement %d is not one this library (%s) knows", placement,
                    sn_version_string());
    sn_status st =
        sn_net_init(net, (sn_placement)placement, 2 * m->L, m->C, SN_NORM_LAYERNORM, 1e-5f);
    if (st != SN_OK)
        return fail(err, errn, "sn_net_init(%s, S=%d, D=%d): %s",
                    sn_placement_name((sn_placement)placement), 2 * m->L, m->C,
                    sn_status_string(st));
    return 0;
}

int llmc_placement_ok(const llmc_model *m, int placement, int dir, char *err, size_t errn) {
    sn_net net;
    if (llmc_net(m, placement, &net, err, errn) != 0) return -1;
    char why[512];
    if (sn_llmc_check(&net, dir, why, sizeof why) != 0) return fail(err, errn, "%s", why);
    return 0;
}

/* The header of a file of n bytes at buf into h, whose [0] must be magic and [1] version. */
static int header_of(const void *buf, size_t n, int32_t h[LLMC_HEADER], int32_t magic,
                     int32_t version, const char *what, char *err, size_t errn) {
    if (n < LLMC_HEADER * sizeof(int32_t))
        return fail(err, errn, "%zu bytes: shorter than a header", n);
    memcpy(h, buf, LLMC_HEADER * sizeof(int32_t));
    if (h[0] != magic) return fail(err, errn, "not %s (magic 0x%08x)", what, (unsigned)h[0]);
    if (h[1] != version)
        return fail(err, errn, "%s version %d; only version %d is handled%s", what, (int)h[1],
                    (int)version, magic == LLMC_MAGIC && h[1] == LLMC_BF16 ? " (5 is bf16)" : "");
    return 0;
}

int llmc_parse_llmc(const void *buf, size_t n, llmc_model *m, char *err, size_t errn) {
    int32_t h[LLMC_HEADER];
    if (header_of(buf, n, h, LLMC_MAGIC, LLMC_FP32, "an llm.c fp32 model checkpoint", err, errn))
        return -1;
    if (read_sizes(h, m, err, errn) != 0 || zero_from(h, 8, err, errn) != 0 ||
        exact_length(n, m->n_floats, err, errn) != 0)
        return -1;
    m->llmc_version = h[1];
    m->placement = -1;
    m->n_norm = 0;
    return 0;
}

int llmc_parse_snc(const void *buf, size_t n, llmc_model *m, char *err, size_t errn) {
    int32_t h[LLMC_HEADER];
    if (header_of(buf, n, h, SNC_MAGIC, SNC_VERSION, "an SNC1 file", err, errn)) return -1;
    if (read_sizes(h, m, err, errn) != 0) return -1;
    if (h[8] != LLMC_FP32)
        return fail(err, errn, "header[8] (the llm.c version) = %d; the data is fp32 (version %d)",
                    (int)h[8], LLMC_FP32);
    m->llmc_version = h[8];
    m->placement = h[9];
    sn_net net;
    int64_t n_norm;
    if (llmc_net(m, h[9], &net, err, errn) != 0) return -1;
    sn_status st = sn_net_sizes(&net, &n_norm, NULL, NULL);
    if (st != SN_OK) return fail(err, errn, "sn_net_sizes: %s", sn_status_string(st));
    if (h[10] != n_norm)
        return fail(err, errn, "header[10] = %d: the %s norm block of this library has %lld floats",
                    (int)h[10], sn_placement_name((sn_placement)h[9]), (long long)n_norm);
    m->n_norm = n_norm;
    if (zero_from(h, 11, err, errn) != 0) return -1;
    size_t ln = 0;
    for (int t = 0; t < LLMC_NT; t++) ln += is_ln(t) ? m->sz[t] : 0;
    if (exact_length(n, m->n_floats - ln + (size_t)n_norm, err, errn) != 0) return -1;
    return llmc_placement_ok(m, m->placement, SN_LLMC_TO, err, errn);
}

/* bytes from p to out, LLMC_CHUNK at a time, each chunk told to pr */
static int put(FILE *out, const void *p, size_t bytes, const llmc_progress *pr) {
    for (const char *at = p; bytes > 0;) {
        size_t n = bytes < LLMC_CHUNK ? bytes : LLMC_CHUNK;
        if (fwrite(at, 1, n, out) != n) return -1;
        if (pr && pr->wrote) pr->wrote(pr->ctx, n);
        at += n, bytes -= n;
    }
    return 0;
}

size_t llmc_out_bytes(const llmc_model *m, int to_sn, int placement) {
    const size_t header = LLMC_HEADER * sizeof(int32_t);
    if (!to_sn) return header + m->n_floats * sizeof(float);
    char err[512];
    sn_net net;
    int64_t n_norm;
    if (llmc_placement_ok(m, placement, SN_LLMC_FROM, err, sizeof err) != 0 ||
        llmc_net(m, placement, &net, err, sizeof err) != 0 ||
        sn_net_sizes(&net, &n_norm, NULL, NULL) != SN_OK)
        return 0;
    size_t ln = 0;
    for (int t = 0; t < LLMC_NT; t++) ln += is_ln(t) ? m->sz[t] : 0;
    return header + (m->n_floats - ln + (size_t)n_norm) * sizeof(float);
}

int llmc_write_snc(const void *buf, const llmc_model *m, int placement, FILE *out,
                   const llmc_progress *progress, char *err, size_t errn) {
    sn_net net;
    int64_t n_norm;
    if (llmc_placement_ok(m, placement, SN_LLMC_FROM, err, errn) != 0 ||
        llmc_net(m, placement, &net, err, errn) != 0)
        return -1;
    sn_status st = sn_net_sizes(&net, &n_norm, NULL, NULL);
    if (st != SN_OK || n_norm > INT32_MAX)
        return fail(err, errn, "the norm block: %s",
                    st != SN_OK ? sn_status_string(st) : "too large");
    const float *data = (const float *)((const char *)buf + LLMC_HEADER * sizeof(int32_t));
    const float *ln[SN_LLMC_NLN], *at = data;
    for (int t = 0, k = 0; t < LLMC_NT; at += m->sz[t], t++)
        if (is_ln(t)) ln[k++] = at;
    float *norms = malloc((size_t)n_norm * sizeof(float) + 1);
    if (!norms) return fail(err, errn, "out of memory (%lld floats)", (long long)n_norm);
    sn_net_init_params(&net, norms); /* the norms llm.c has no tensor for: gamma 1, beta 0 */
    st = sn_llmc_gather(&net, ln, norms);
    if (st != SN_OK) {
        free(norms);
        return fail(err, errn, "sn_llmc_gather: %s", sn_status_string(st));
    }
    int32_t h[LLMC_HEADER] = {
        SNC_MAGIC, SNC_VERSION, m->maxT,         m->V,      m->L,           m->NH,
        m->C,      m->Vp,       m->llmc_version, placement, (int32_t)n_norm};
    int rc = put(out, h, sizeof h, progress);
    at = data;
    for (int t = 0; t < LLMC_NT && rc == 0; at += m->sz[t], t++)
        if (!is_ln(t)) rc = put(out, at, m->sz[t] * sizeof(float), progress); /* unchanged */
    if (rc == 0) rc = put(out, norms, (size_t)n_norm * sizeof(float), progress);
    free(norms);
    return rc == 0 ? 0 : fail(err, errn, "write error");
}

int llmc_write_llmc(const void *buf, const llmc_model *m, FILE *out, const llmc_progress *progress,
                    char *err, size_t errn) {
    sn_net net;
    if (llmc_placement_ok(m, m->placement, SN_LLMC_TO, err, errn) != 0 ||
        llmc_net(m, m->placement, &net, err, errn) != 0)
        return -1;
    const float *data = (const float *)((const char *)buf + LLMC_HEADER * sizeof(int32_t));
    size_t n_ln = 0, n_w = 0;
    for (int t = 0; t < LLMC_NT; t++) *(is_ln(t) ? &n_ln : &n_w) += m->sz[t];
    float *lnbuf = malloc(n_ln * sizeof(float)), *ln[SN_LLMC_NLN];
    if (!lnbuf) return fail(err, errn, "out of memory (%zu floats)", n_ln);
    size_t at = 0;
    for (int k = 0; k < SN_LLMC_NLN; k++) {
        ln[k] = lnbuf + at;
        at += m->sz[ln_tensors[k]];
    }
    sn_status st = sn_llmc_scatter(&net, data + n_w, ln);
    if (st != SN_OK) {
        free(lnbuf);
        return fail(err, errn, "sn_llmc_scatter: %s", sn_status_string(st));
    }
    int32_t h[LLMC_HEADER] = {LLMC_MAGIC, m->llmc_version, m->maxT, m->V, m->L, m->NH, m->C, m->Vp};
    int rc = put(out, h, sizeof h, progress);
    const float *w = data; /* the next weight tensor */
    for (int t = 0, k = 0; t < LLMC_NT && rc == 0; t++) {
        if (is_ln(t)) {
            rc = put(out, ln[k++], m->sz[t] * sizeof(float), progress);
        } else {
            rc = put(out, w, m->sz[t] * sizeof(float), progress);
            w += m->sz[t];
        }
    }
    free(lnbuf);
    return rc == 0 ? 0 : fail(err, errn, "write error");
}
