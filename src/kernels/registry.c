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

/* ---- SN_ISA_AUTO: per CPU family, the lane slots from the path fastest for them ------------
 *
 * A lane slot (table.h) computes each output element from its own column with the same
 * operations on every SIMD path, so it gives the same bits on each of them (checkasm checks
 * this for the tables below: auto's tables give their base path's bits in every slot). A
 * table may therefore take a lane slot from another path without changing a bit, and
 * sn_ctx_isa still names the path whose bits a call gives. The choices are the measurements of
 * `checkasm --bench` (docs/performance.md, "Fourth round, fifth session"): a slot leaves its
 * base path for a width class (kernels.h) only where the other path was faster at the widths
 * measured in that class and not slower beyond the noise at any of them. */
typedef struct lane_pick {
    size_t off32, off16; /* the slot's place in sn_kern and in sn_kern16 */
    sn_isa f32, bf16;    /* the path to take it from per table (SN_ISA_AUTO: the base path's) */
    unsigned classes;    /* the width classes (bit c: sn_k_width_class c) it is taken for */
} lane_pick;
#define PICK(slot, from32, from16, classes)                                                        \
    { offsetof(sn_kern, slot), offsetof(sn_kern16, slot), from32, from16, classes }
#define ALL_WIDTHS ((1u << SN_K_WIDTH_CLASSES) - 1u)
#define MID_WIDTHS 2u /* class 1: 128 .. 2048 */

/* AMD Zen 4 (AVX-512 base), fp32 rows, AVX-512 / AVX2 in L1 over eight runs. axpy: 1.00-1.10 at
 * 128 .. 2048 columns (1.07-1.09 at 768 in every run), 0.88-1.00 up to 96. norm_pg: 1.07-1.15 at
 * most widths of 128 .. 2048 (1.00-1.13 at 768), 0.90-1.05 up to 96. copy, widen and round are
 * the same memmove on every path, and the scalar unit's took 0.87-0.91x the AVX units' at 64
 * elements (the same beyond). Not taken: norm_row and norm_s (one function on fp32 rows), which
 * gave 0.82-1.09 at 128 .. 2048 in runs minutes apart. Every other slot stays AVX-512: it was as
 * fast or faster, or it reduces over the row (docs/performance.md, "Fourth round, fifth
 * session"). */
static const lane_pick zen4[] = {
    PICK(norm_pg, SN_ISA_AVX2, SN_ISA_AUTO, MID_WIDTHS),
    PICK(axpy, SN_ISA_AVX2, SN_ISA_AUTO, MID_WIDTHS),
    PICK(copy, SN_ISA_SCALAR, SN_ISA_AUTO, ALL_WIDTHS),
    PICK(widen, SN_ISA_SCALAR, SN_ISA_AUTO, ALL_WIDTHS),
    PICK(round, SN_ISA_SCALAR, SN_ISA_AUTO, ALL_WIDTHS),
};

static sn_kern auto32[SN_K_WIDTH_CLASSES];
static sn_kern16 auto16[SN_K_WIDTH_CLASSES];

/* copies the slot at byte offset off of table src into dst (two tables of one type) */
static void take(void *dst, const void *src, size_t off) {
    memcpy((char *)dst + off, (const char *)src + off, sizeof(void (*)(void)));
}

static void compose(void) {
    const sn_isa base = sn_cpu_best();
    const lane_pick *p = NULL;
    size_t n = 0;
    if (sn_cpu_family_of() == SN_CPU_AMD_ZEN4 && base == SN_ISA_AVX512) {
        p = zen4;
        n = sizeof zen4 / sizeof zen4[0];
    }
    for (int c = 0; c < SN_K_WIDTH_CLASSES; c++) {
        auto32[c] = *path_table(base);
        auto16[c] = *path_table16(base);
        for (size_t i = 0; i < n; i++) {
            if (!(p[i].classes >> c & 1u)) continue;
            if (p[i].f32 != SN_ISA_AUTO && sn_cpu_has(p[i].f32))
                take(&auto32[c], path_table(p[i].f32), p[i].off32);
            if (p[i].bf16 != SN_ISA_AUTO && sn_cpu_has(p[i].bf16))
                take(&auto16[c], path_table16(p[i].bf16), p[i].off16);
        }
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

const sn_kern *sn_kern_for(sn_isa isa, int64_t width) {
    if (isa != SN_ISA_AUTO) return path_table(isa);
    return auto_ready() ? &auto32[sn_k_width_class(width)] : path_table(sn_cpu_best());
}

const sn_kern16 *sn_kern16_for(sn_isa isa, int64_t width) {
    if (isa != SN_ISA_AUTO) return path_table16(isa);
    return auto_ready() ? &auto16[sn_k_width_class(width)] : path_table16(sn_cpu_best());
}
