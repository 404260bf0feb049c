/* The two files sn-llmc-convert reads and writes (docs/checkpoint-format.md specifies both):
 * llm.c's GPT-2 fp32 checkpoint (version 3) and the library's SNC1 file. Parsers work on the
 * whole file in memory and validate every header field and the length before anything is
 * written; the writers stream the converted file to a FILE. Shared by the program
 * (llmc_convert.c), its test and the fuzzer (fuzz/fuzz_llmc.c). */
#ifndef SN_LLMC_FORMAT_H
#define SN_LLMC_FORMAT_H

#include <stddef.h>
#include <stdio.h>

#include <siamesenorm.h>

#define LLMC_MAGIC      20240326
#define LLMC_FP32       3          /* fp32 tensors, padded vocabulary */
#define LLMC_BF16       5          /* bf16 tensors: not handled */
#define SNC_MAGIC       0x534e4331 /* "SNC1" read as a little-endian int32: bytes 1 C N S */
#define SNC_VERSION     1
#define LLMC_HEADER     256 /* int32 header slots of both files */
#define LLMC_NT         16  /* llm.c's parameter tensors */
#define LLMC_MAX_LAYERS 512
#define LLMC_MAX_C      65536
#define LLMC_MAX_T      (1 << 24) /* maxT and Vp */

/* A validated file: llm.c's sizes, the llm.c version, and for SNC1 the placement. */
typedef struct llmc_model {
    int maxT, V, L, NH, C, Vp; /* header[2..7], in llm.c's order */
    int llmc_version;          /* llm.c's [1]; SNC1's [8] */
    int placement;             /* SNC1's [9]; -1 for an llm.c file */
    int64_t n_norm;            /* SNC1's [10]: the norm block's floats */
    size_t sz[LLMC_NT];        /* floats of each llm.c tensor */
    size_t n_floats;           /* floats after the header */
} llmc_model;

/* Parse an llm.c checkpoint / an SNC1 file of n bytes at buf (4-byte aligned). 0, or -1 with
 * the reason in err[errn]. An SNC1 file is accepted only if its placement converts back to
 * llm.c (docs/checkpoint-format.md). */
int llmc_parse_llmc(const void *buf, size_t n, llmc_model *m, char *err, size_t errn);
int llmc_parse_snc(const void *buf, size_t n, llmc_model *m, char *err, size_t errn);

/* The net an SNC1 file of placement p describes for m: sn_net_init(p, 2L, C, LayerNorm, 1e-5),
 * the rest at sn_net_init's defaults. 0 or -1 with err. */
int llmc_net(const llmc_model *m, int placement, sn_net *net, char *err, size_t errn);

/* Whether placement p can take llm.c's norms (dir SN_LLMC_FROM) / is llm.c's model
 * (SN_LLMC_TO), for m's sizes: 0, or -1 with err. */
int llmc_placement_ok(const llmc_model *m, int placement, int dir, char *err, size_t errn);

/* The bytes the converted file will have: SNC1 of placement p (to_sn), or llm.c's. 0 when p
 * does not take m's norms (llmc_placement_ok). */
size_t llmc_out_bytes(const llmc_model *m, int to_sn, int placement);

/* The writers put at most LLMC_CHUNK bytes per fwrite and, when given, call
 * progress->wrote(progress->ctx, bytes) after each (sn-llmc-convert's progress line). */
#define LLMC_CHUNK ((size_t)8 << 20)
typedef struct llmc_progress {
    void (*wrote)(void *ctx, size_t bytes);
    void *ctx;
} llmc_progress;

/* Write the converted file to out: an llm.c file (parsed into m) as SNC1 of placement p, or an
 * SNC1 file (parsed into m) as llm.c's. Validate first (llmc_placement_ok). progress: NULL, or
 * told of every chunk written. 0, or -1 (a write error: out's error indicator, or the library's
 * status in err). */
int llmc_write_snc(const void *buf, const llmc_model *m, int placement, FILE *out,
                   const llmc_progress *progress, char *err, size_t errn);
int llmc_write_llmc(const void *buf, const llmc_model *m, FILE *out, const llmc_progress *progress,
                    char *err, size_t errn);

#endif
