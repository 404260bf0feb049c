/* The kernel tables of each path (see kernels.h): the one place that maps a path, and the CPU's
 * features, to its fp32 and bf16 tables, and that composes the tables SN_ISA_AUTO runs. */
#include <stddef.h>
#include <string.h>
#ifdef SN_HAVE_PTHREADS
#include <pthread.h>
#endif

#include "cpu.h"
#include "kernels.h"

static const sn_kern *path_table(sn_isa isa) {
    switch (isa) {
#ifdef SN_HAVE_AVX512
    case SN_ISA_AVX512: return &sn_kern_avx512;
#endif
#ifdef SN_HAVE_AVX2
    case SN_ISA_AVX2: return &sn_kern_avx2;
#endif
    default: return &sn_kern_scalar;
    }
}

static const sn_kern16 *path_table16(sn_isa isa) {
    switch (isa) {
#ifdef SN_HAVE_AVX512
    case SN_ISA_AVX512:
#ifdef SN_HAVE_AVX512BF16
        if (sn_cpu_has_avx512bf16()) return &sn_kern16_avx512bf16;
#endif
        return &sn_kern16_avx512;
#endif
#ifdef SN_HAVE_AVX2
    case SN_ISA_AVX2: return &sn_kern16_avx2;
#endif
    default: return &sn_kern16_scalar;
    }
}

/* ---- SN_ISA_AUTO: per CPU family, each slot from the path fastest for it ------------------
 *
 * The SIMD paths give the same bits in every slot (one summation order, simd_rows.h), and the
 * scalar path gives them too in copy, widen and round (the same memmove: its other slots have
 * their own arithmetic). A table may therefore take any slot from another SIMD path, and those
 * three from the scalar path, without changing a bit, and sn_ctx_isa still names the path whose
 * bits a call gives; checkasm checks both: every SIMD table's slots against the first one's,
 * and every slot auto takes against its base path's. The choices are the measurements of
 * `checkasm --bench` and tools/bench-auto.sh (docs/performance.md, "One summation order"): a
 * slot leaves its base path for a width class (kernels.h) only where the other path was faster
 * at most widths measured in that class in most processes, and its worst ratio to the fastest
 * path over many processes was the smaller of the two. */
typedef struct slot_pick {
    size_t off;       /* the slot's place in sn_kern */
    sn_isa from;      /* the path to take it from */
    unsigned classes; /* the width classes (bit c: sn_k_width_class c) it is taken for */
    unsigned calls;   /* the calls it is taken for: bit 0 without streaming stores, bit 1 with */
} slot_pick;
#define PICK(slot, from, classes, calls)                                                           \
    { offsetof(sn_kern, slot), from, classes, calls }
#define ALL_WIDTHS  ((1u << SN_K_WIDTH_CLASSES) - 1u)
#define MID_WIDTHS  2u /* class 1: 128 .. 2048 */
#define WIDE_WIDTHS 4u /* class 2: 2049 and wider */
#define CACHED      1u /* calls without streaming stores (their matrices mostly in the caches) */
#define ALL_CALLS   3u

/* AMD Zen 4 (AVX-512 base), fp32 rows, AVX-512 / AVX2 in L1, medians over six to sixteen
 * processes of `checkasm --bench` (docs/performance.md, "One summation order"):
 *   norm_pg   1.07-1.15 at most widths of 128 .. 2048
 *   axpy      1.02-1.10 at 512 .. 2560 (1.00 at 3072, 4096), 0.95 at 64
 * Not taken (worst ratio to the fastest path over 48 processes, tools/bench-auto.sh): norm_row
 * and norm_s (one function on fp32 rows), 1.07-1.09 at 768 .. 1536 in most processes and
 * 0.83-0.91 in others (worst: AVX2 1.24, AVX-512 1.09); hc_proj, 1.01-1.03 at 256 .. 1024
 * (worst: AVX2 1.17, AVX-512 1.03); norm_bwd, 1.03-1.09 at 32 .. 96 in the sweeps (worst: AVX2
 * 1.22, AVX-512 1.19). axpy from 2049 up: worst AVX2 1.08, AVX-512 1.11. copy, widen and round
 * are the same memmove on every path, and the scalar unit's took 0.87-0.91x the AVX units' at
 * 64 elements. Through the public calls (bench/auto_calls.c, sn-auto-calls: rows in L2, L3 or
 * memory, matrices on 4 KiB boundaries; docs/performance.md, "auto at the call level"), AVX-512
 * took 1.03-1.30x AVX2's time in sn_apply_forward (the apply slot) at most sizes from 16 x 768
 * to 2048 x 768, in every run, but 0.89-1.02x (mostly below 1) from 3072 x 768, where the call
 * writes with streaming stores: apply is taken for the calls without them. In
 * sn_apply_backward and sn_split_backward (add_div) it took 1.02-1.07x at most sizes from
 * 512 x 768 up, with streaming stores too: add_div is taken for every call. In L1 the two are
 * level (1.00-1.01). Both at every width. Every other slot stays AVX-512. So does every bf16
 * slot (0.45-0.98 in L1 in most cases, ranges across 1 at worst; no bf16 call slower than a
 * forced path), so auto's bf16 table is the best path's own, and these picks are fp32 only. */
static const slot_pick zen4[] = {
    PICK(norm_pg, SN_ISA_AVX2, MID_WIDTHS, ALL_CALLS),
    PICK(axpy, SN_ISA_AVX2, MID_WIDTHS | WIDE_WIDTHS, ALL_CALLS),
    PICK(apply, SN_ISA_AVX2, ALL_WIDTHS, CACHED),
    PICK(add_div, SN_ISA_AVX2, ALL_WIDTHS, ALL_CALLS),
    PICK(copy, SN_ISA_SCALAR, ALL_WIDTHS, ALL_CALLS),
    PICK(widen, SN_ISA_SCALAR, ALL_WIDTHS, ALL_CALLS),
    PICK(round, SN_ISA_SCALAR, ALL_WIDTHS, ALL_CALLS),
};

/* [streams][width class] */
static sn_kern auto32[2][SN_K_WIDTH_CLASSES];

/* copies the slot at byte offset off of table src into dst */
static void take(sn_kern *dst, const sn_kern *src, size_t off) {
    memcpy((char *)dst + off, (const char *)src + off, sizeof(void (*)(void)));
}

static void compose(void) {
    const sn_isa base = sn_cpu_best();
    const slot_pick *p = NULL;
    size_t n = 0;
    if (sn_cpu_family_of() == SN_CPU_AMD_ZEN4 && base == SN_ISA_AVX512) {
        p = zen4;
        n = sizeof zen4 / sizeof zen4[0];
    }
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < SN_K_WIDTH_CLASSES; c++) {
            auto32[s][c] = *path_table(base);
            for (size_t i = 0; i < n; i++)
                if (p[i].classes >> c & 1u && p[i].calls >> s & 1u && sn_cpu_has(p[i].from))
                    take(&auto32[s][c], path_table(p[i].from), p[i].off);
        }
}

/* auto's tables are composed once per process, the first time a call asks for them: like the
 * CPU's features they follow from the hardware alone, so they are constants once written.
 * Without pthreads (no once-only initialisation) auto runs the best path's own tables. */
#ifdef SN_HAVE_PTHREADS
static pthread_once_t composed = PTHREAD_ONCE_INIT;
static int auto_ready(void) { return pthread_once(&composed, compose) == 0; }
#else
static int auto_ready(void) { return 0; }
#endif

const sn_kern *sn_kern_for(sn_isa isa, int64_t width, int streams) {
    if (isa != SN_ISA_AUTO) return path_table(isa);
    return auto_ready() ? &auto32[streams != 0][sn_k_width_class(width)]
                        : path_table(sn_cpu_best());
}

const sn_kern16 *sn_kern16_for(sn_isa isa, int64_t width, int streams) {
    (void)width, (void)streams; /* auto's bf16 table is the best path's own (zen4 above) */
    return path_table16(isa == SN_ISA_AUTO ? sn_cpu_best() : isa);
}
