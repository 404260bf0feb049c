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
 * `checkasm --bench` (docs/performance.md, "auto per slot"): a slot leaves its base path only
 * where the other path was faster at one of the bench's widths (64, 768, 4096) and within the
 * noise at the others. */
typedef struct lane_pick {
    size_t off32, off16; /* the slot's place in sn_kern and in sn_kern16 */
    sn_isa f32, bf16;    /* the path to take it from per table (SN_ISA_AUTO: the base path's) */
} lane_pick;
#define PICK(slot, from32, from16)                                                                 \
    { offsetof(sn_kern, slot), offsetof(sn_kern16, slot), from32, from16 }

/* AMD Zen 4 (AVX-512 base), fp32 rows: norm_pg took 1.12x as long on the 512-bit path at 768
 * columns and the same within 2% at 64 and 4096; copy, widen and round are the same memmove on
 * every path, and the scalar unit's took 0.87-0.91x the AVX units' at 64 elements (the same
 * beyond). Every other slot stays AVX-512: it was faster, or faster at some widths and slower
 * at others (docs/performance.md lists them). */
static const lane_pick zen4[] = {
    PICK(norm_pg, SN_ISA_AVX2, SN_ISA_AUTO),
    PICK(copy, SN_ISA_SCALAR, SN_ISA_AUTO),
    PICK(widen, SN_ISA_SCALAR, SN_ISA_AUTO),
    PICK(round, SN_ISA_SCALAR, SN_ISA_AUTO),
};

static sn_kern auto32;
static sn_kern16 auto16;

/* copies the slot at byte offset off of table src into dst (two tables of one type) */
static void take(void *dst, const void *src, size_t off) {
    memcpy((char *)dst + off, (const char *)src + off, sizeof(void (*)(void)));
}

static void compose(void) {
    const sn_isa base = sn_cpu_best();
    auto32 = *path_table(base);
    auto16 = *path_table16(base);
    const lane_pick *p = NULL;
    size_t n = 0;
    if (sn_cpu_family_of() == SN_CPU_AMD_ZEN4 && base == SN_ISA_AVX512) {
        p = zen4;
        n = sizeof zen4 / sizeof zen4[0];
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i].f32 != SN_ISA_AUTO && sn_cpu_has(p[i].f32))
            take(&auto32, path_table(p[i].f32), p[i].off32);
        if (p[i].bf16 != SN_ISA_AUTO && sn_cpu_has(p[i].bf16))
            take(&auto16, path_table16(p[i].bf16), p[i].off16);
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

const sn_kern *sn_kern_for(sn_isa isa) {
    if (isa != SN_ISA_AUTO) return path_table(isa);
    return auto_ready() ? &auto32 : path_table(sn_cpu_best());
}

const sn_kern16 *sn_kern16_for(sn_isa isa) {
    if (isa != SN_ISA_AUTO) return path_table16(isa);
    return auto_ready() ? &auto16 : path_table16(sn_cpu_best());
}
