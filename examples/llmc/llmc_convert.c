/* sn-llmc-convert: an llm.c GPT-2 fp32 checkpoint <-> libsiamesenorm's parameter layout.
 *
 * llm.c (karpathy/llm.c) keeps each layer's LayerNorm tensors between its weight tensors; the
 * library keeps every norm of the network in one block (sn_net_norm_at). This program moves the
 * six ln tensors (ln1w ln1b ln2w ln2b lnfw lnfb) into that block and back, for any placement
 * whose norms' roles give them a place (siamesenorm_llmc.h), and writes the SNC1 file that
 * docs/checkpoint-format.md specifies. It never names an offset or a placement's layout itself.
 *
 * It cannot lose data: the output must not be the input (same device and inode, through any
 * path or link), the input is read and validated completely (every header field, the exact
 * length, the placement's roles) before anything is created, and the output is written to a
 * temporary file in its directory, fsynced, then renamed over the target (examples/common/
 * atomic_file.h), so an existing output is replaced only by a complete conversion.
 *
 * Progress (examples/common/progress.h): on a terminal, once a conversion has run 2 seconds, a
 * line on stderr with the share of the bytes read and written, the time elapsed and an ETA at
 * the rate so far, the phase ("reading", "writing", "syncing to disk") in brackets. Nothing when
 * stderr is not a terminal or the conversion ends sooner; stdout and the output's bytes are the
 * same either way. The input is read and the output written LLMC_CHUNK (8 MiB) at a time.
 *
 * Installed by every build (also -Dexamples=false), linked statically against the library so
 * that it runs from any prefix. Against an installed library by hand:
 *   cc -std=c11 -O2 llmc_convert.c llmc_format.c atomic_file.c progress.c -I. \
 *       $(pkg-config --cflags siamesenorm) $(pkg-config --variable=libdir siamesenorm)/libsiamesenorm.a \
 *       $(pkg-config --static --libs-only-l siamesenorm | sed 's/-lsiamesenorm//') -o sn-llmc-convert
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <siamesenorm.h>
#include <siamesenorm_llmc.h>

#include "atomic_file.h"
#include "clock.h"
#include "llmc_format.h"
#include "progress.h"

#define ME "sn-llmc-convert"

static void usage(FILE *f) {
    fprintf(f,
            "usage: " ME " to-sn [--placement NAME | --siamese] LLMC.bin OUT.bin\n"
            "       " ME " to-llmc IN.bin LLMC.bin\n"
            "       " ME " --placements | --help | --version\n"
            "to-sn    moves the LayerNorm tensors of an llm.c fp32 GPT-2 checkpoint (version 3)\n"
            "         into the norm block of a libsiamesenorm net (default placement pre_norm;\n"
            "         --siamese is --placement siamese): ln1/ln2 row l into the input norm of\n"
            "         sub-layer 2l/2l+1, lnf into the final norm; norms llm.c has no tensor for\n"
            "         start at gamma 1, beta 0. Writes an SNC1 file (docs/checkpoint-format.md).\n"
            "to-llmc  converts an SNC1 file whose net is llm.c's model (pre_norm) back, byte for\n"
            "         byte what to-sn read.\n"
            "--placements  which placements convert in each direction, and why not (markdown).\n"
            "The output is never the input, and is replaced only by a complete conversion.\n");
}

/* The whole of a regular file, or NULL with a message. malloc's alignment suits floats. Read
 * LLMC_CHUNK bytes at a time, each counted in pr, whose total becomes twice the file's size (the
 * output's size taken as the input's until the input is validated). */
static unsigned char *slurp(const char *path, size_t *n, progress *pr) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    struct stat st;
    unsigned char *buf = NULL;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, ME ": %s: not a regular file\n", path);
    } else if ((unsigned long long)st.st_size > (unsigned long long)(SIZE_MAX / 2)) {
        fprintf(stderr, ME ": %s: too large\n", path);
    } else if (!(buf = malloc((size_t)st.st_size + 1))) {
        fprintf(stderr, ME ": %s: out of memory (%lld bytes)\n", path, (long long)st.st_size);
    } else {
        size_t size = (size_t)st.st_size, got = 0;
        pr->total = 2 * (long long)size;
        while (got < size) {
            size_t want = size - got < LLMC_CHUNK ? size - got : LLMC_CHUNK;
            size_t r = fread(buf + got, 1, want, f);
            got += r;
            progress_add(pr, (long long)r, now_s());
            if (r != want) break; /* a read error, or the file shrank */
        }
        if (got != size || fgetc(f) != EOF) {
            progress_end(pr, now_s());
            fprintf(stderr, ME ": %s: read error, or the file changed while read\n", path);
            free(buf);
            buf = NULL;
        }
    }
    *n = buf ? (size_t)st.st_size : 0;
    fclose(f);
    return buf;
}

/* llmc_progress's callback: bytes written, counted in the progress line */
static void wrote(void *pr, size_t bytes) { progress_add(pr, (long long)bytes, now_s()); }

/* --placements: every placement of this library, both directions, for a 4-layer model. */
static void placements(void) {
    llmc_model m = {.maxT = 8, .V = 8, .L = 4, .NH = 1, .C = 8, .Vp = 8};
    printf(
        "| placement | to-sn (llm.c -> library) | to-llmc (library -> llm.c) |\n|---|---|---|\n");
    for (int p = 0; p < SN_PLACEMENT_COUNT; p++) {
        char from[512], to[512];
        int ok_from = llmc_placement_ok(&m, p, SN_LLMC_FROM, from, sizeof from) == 0;
        int ok_to = llmc_placement_ok(&m, p, SN_LLMC_TO, to, sizeof to) == 0;
        printf("| `%s` | %s%s | %s%s |\n", sn_placement_name((sn_placement)p),
               ok_from ? "yes" : "no: ", ok_from ? "" : from,
               ok_to ? "yes" : "no: ", ok_to ? "" : to);
    }
}

int main(int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return af_stdout_status(ME);
    }
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf(ME " (libsiamesenorm %s, SNC1 version %d)\n", sn_version_string(), SNC_VERSION);
        return af_stdout_status(ME);
    }
    if (argc == 2 && !strcmp(argv[1], "--placements")) {
        placements();
        return af_stdout_status(ME);
    }
    int to_sn = argc > 1 && !strcmp(argv[1], "to-sn"), placement = SN_PLACEMENT_PRE_NORM, a = 2;
    if (to_sn && argc > 2 && !strcmp(argv[2], "--siamese")) {
        placement = SN_PLACEMENT_SIAMESE, a = 3;
    } else if (to_sn && argc > 3 && !strcmp(argv[2], "--placement")) {
        sn_placement p;
        if (sn_placement_from_name(argv[3], &p) != SN_OK) {
            fprintf(stderr,
                    ME ": unknown placement '%s' (sn-llmc-convert --placements lists them)\n",
                    argv[3]);
            return 2;
        }
        placement = (int)p, a = 4;
    }
    if (argc != a + 2 || (!to_sn && strcmp(argv[1], "to-llmc") != 0)) {
        usage(stderr);
        return 2;
    }
    const char *in_path = argv[a], *out_path = argv[a + 1];
    if (af_same_file(in_path, out_path)) {
        fprintf(stderr,
                ME ": %s and %s are the same file; nothing written (the input stays as it is)\n",
                in_path, out_path);
        return 1;
    }
    progress pr;
    progress_init(&pr, progress_stream(), ME, "reading", 0, now_s());
    size_t n;
    unsigned char *buf = slurp(in_path, &n, &pr);
    if (!buf) return 1;

    /* Everything validated before the output is created. */
    llmc_model m;
    char err[1024];
    int rc = to_sn ? llmc_parse_llmc(buf, n, &m, err, sizeof err)
                   : llmc_parse_snc(buf, n, &m, err, sizeof err);
    if (rc == 0 && to_sn) rc = llmc_placement_ok(&m, placement, SN_LLMC_FROM, err, sizeof err);
    progress_end(&pr, now_s()); /* reading's line ends before any message */
    if (rc != 0) {
        fprintf(stderr, ME ": %s: %s; nothing written\n", in_path, err);
        free(buf);
        return 1;
    }

    af_file out;
    if (af_open(&out, out_path) != 0) {
        free(buf);
        return 1;
    }
    pr.total = (long long)n + (long long)llmc_out_bytes(&m, to_sn, placement); /* exact now */
    progress_phase(&pr, "writing", now_s());
    const llmc_progress counted = {wrote, &pr};
    rc = to_sn ? llmc_write_snc(buf, &m, placement, out.f, &counted, err, sizeof err)
               : llmc_write_llmc(buf, &m, out.f, &counted, err, sizeof err);
    free(buf);
    if (rc != 0) {
        progress_end(&pr, now_s());
        fprintf(stderr, ME ": %s: %s; %s is as it was\n", out_path, err, out_path);
        af_abort(&out);
        return 1;
    }
    /* fsync's time is not counted: the line says so, and ends before af_commit's messages */
    progress_phase(&pr, "syncing to disk", now_s());
    progress_end(&pr, now_s());
    if (af_commit(&out) != 0) return 1;
    printf("%s: llm.c v%d L=%d C=%d NH=%d maxT=%d V=%d Vp=%d -> %s (%s)\n", in_path, m.llmc_version,
           m.L, m.C, m.NH, m.maxT, m.V, m.Vp, out_path,
           to_sn ? sn_placement_name((sn_placement)placement) : "llm.c checkpoint");
    return af_stdout_status(ME);
}
