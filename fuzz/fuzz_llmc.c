/* libFuzzer harness: sn-llmc-convert's parsers and writers, both directions
 * (examples/llmc/llmc_format.c). Each input is tried as an llm.c checkpoint and as an SNC1
 * file. Oracles:
 *   - an llm.c file that parses converts to every placement whose roles take its norms
 *     (llmc_placement_ok FROM), and to no other; the SNC1 file written parses back, exactly
 *     when the placement is llm.c's model (llmc_placement_ok TO), and then converts back to
 *     the input's bytes;
 *   - an SNC1 file that parses converts to an llm.c file that parses and converts back to the
 *     input's bytes;
 *   - every file written has the length llmc_out_bytes announced (sn-llmc-convert's progress
 *     total), and a placement refused has none;
 *   - a refused file is refused with a message; nothing is read outside the input (ASan).
 * Seeds (fuzz/corpus/llmc/): small valid llm.c files and the SNC1 files the converter made of
 * them. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmc_format.h"
#include <siamesenorm_llmc.h>

#define REQUIRE(c)                                                                                 \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_llmc: %s:%d: %s\n", __FILE__, __LINE__, #c);                     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* What a writer produced, in memory. */
typedef struct {
    char *p;
    size_t n;
} bytes;

static bytes to_snc(const void *buf, const llmc_model *m, int placement) {
    bytes b = {NULL, 0};
    char err[1024];
    FILE *f = open_memstream(&b.p, &b.n);
    REQUIRE(f);
    REQUIRE(llmc_write_snc(buf, m, placement, f, NULL, err, sizeof err) == 0);
    REQUIRE(fclose(f) == 0);
    REQUIRE(b.n == llmc_out_bytes(m, 1, placement));
    return b;
}
static bytes to_llmc(const void *buf, const llmc_model *m) {
    bytes b = {NULL, 0};
    char err[1024];
    FILE *f = open_memstream(&b.p, &b.n);
    REQUIRE(f);
    REQUIRE(llmc_write_llmc(buf, m, f, NULL, err, sizeof err) == 0);
    REQUIRE(fclose(f) == 0);
    REQUIRE(b.n == llmc_out_bytes(m, 0, -1));
    return b;
}

/* A copy with malloc's alignment (the parsers take 4-byte aligned buffers, as read from disk). */
static void *aligned_copy(const void *p, size_t n) {
    void *q = malloc(n + 1);
    REQUIRE(q);
    if (n) memcpy(q, p, n);
    return q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    void *buf = aligned_copy(data, size);
    llmc_model m, m2;
    char err[1024] = "";

    if (llmc_parse_llmc(buf, size, &m, err, sizeof err) == 0) {
        for (int p = 0; p < SN_PLACEMENT_COUNT; p++) {
            const int from = llmc_placement_ok(&m, p, SN_LLMC_FROM, err, sizeof err) == 0;
            if (!from) {
                char err2[1024];
                REQUIRE(err[0] && llmc_write_snc(buf, &m, p, stdout, NULL, err2, sizeof err2) != 0);
                REQUIRE(llmc_out_bytes(&m, 1, p) == 0);
                continue;
            }
            bytes snc = to_snc(buf, &m, p);
            void *sbuf = aligned_copy(snc.p, snc.n);
            const int to = llmc_placement_ok(&m, p, SN_LLMC_TO, err, sizeof err) == 0;
            const int parsed = llmc_parse_snc(sbuf, snc.n, &m2, err, sizeof err) == 0;
            REQUIRE(parsed == to);
            if (parsed) {
                REQUIRE(m2.placement == p && m2.L == m.L && m2.C == m.C && m2.llmc_version == 3);
                bytes back = to_llmc(sbuf, &m2);
                REQUIRE(back.n == size && memcmp(back.p, data, size) == 0);
                free(back.p);
            }
            free(sbuf);
            free(snc.p);
        }
    } else {
        REQUIRE(err[0]);
    }

    err[0] = '\0';
    if (llmc_parse_snc(buf, size, &m, err, sizeof err) == 0) {
        bytes llmc = to_llmc(buf, &m);
        void *lbuf = aligned_copy(llmc.p, llmc.n);
        REQUIRE(llmc_parse_llmc(lbuf, llmc.n, &m2, err, sizeof err) == 0);
        bytes again = to_snc(lbuf, &m2, m.placement);
        REQUIRE(again.n == size && memcmp(again.p, data, size) == 0);
        free(again.p);
        free(lbuf);
        free(llmc.p);
    } else {
        REQUIRE(err[0]);
    }
    free(buf);
    return 0;
}
