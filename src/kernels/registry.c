/* The kernel tables of each path (see kernels.h): the one place that maps a path, and the CPU's
 * features, to its fp32 and bf16 tables. */
#include "cpu.h"
#include "kernels.h"

const sn_kern *sn_kern_for(sn_isa isa) {
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

const sn_kern16 *sn_kern16_for(sn_isa isa) {
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
