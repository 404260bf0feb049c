/* The context's internals, for the drivers: the kernel path a call runs and how it runs a
 * parallel for. */
#ifndef SN_CTX_H
#define SN_CTX_H

#include "siamesenorm.h"

/* What the calls made with a context report back to the caller: the record of checked mode
 * (sn_ctx_nonfinite_row). Calls take their context as const: the context's settings are not
 * theirs to change. The report is a separate allocation the context points to (made by
 * sn_ctx_create, freed by sn_ctx_destroy), so a call writes it through that pointer without
 * casting the const away. A context serves one call at a time, so the record is that call's. */
typedef struct sn_ctx_report {
    int64_t nonfinite_row; /* what the last checked call found (SN_NONFINITE_*) */
} sn_ctx_report;

/* The setting and the record that checked mode (api/finite.c) keeps in the context: whether
 * ctx checks its calls' inputs (sn_ctx_set_check_finite; 0 for NULL), and the row the last
 * finding names. The runtime only holds them. */
int sn_ctx_checks_finite(const sn_ctx *ctx);
void sn_ctx_note_nonfinite(const sn_ctx *ctx, int64_t row);

/* The path as set on ctx: SN_ISA_AUTO (the default, and for NULL) or a forced path; the drivers
 * take their kernel tables from it (kernels/registry.c), sn_ctx_isa resolves it. */
sn_isa sn_ctx_isa_setting(const sn_ctx *ctx);

/* How many pieces to split parallel work into: 1 for NULL or single-threaded contexts. */
int sn_ctx_width(const sn_ctx *ctx);

/* The caller's scratch buffer set with sn_ctx_set_scratch, aligned up to 64 bytes: *p and the
 * number of whole floats it holds (NULL and 0 when none, or for a NULL ctx). */
void sn_ctx_scratch(const sn_ctx *ctx, float **p, int64_t *floats);

/* Runs task(arg, i) for i in [0, n) with ctx's threads (the hook or the pool), or serially; each
 * task ends with a store fence (the kernels' streaming stores are fenced there, see ctx.c). */
void sn_ctx_par(const sn_ctx *ctx, int64_t n, sn_task_fn task, void *arg);

#endif
