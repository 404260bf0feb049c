/* Runtime CPU detection: which kernel paths this build and this CPU can run. CPUID runs on the
 * first query of the process (it costs tens of microseconds in a virtual machine); the answer,
 * a property of the hardware, is then kept in one atomic word (no initialisation needed). */
#ifndef SN_CPU_H
#define SN_CPU_H

#include "siamesenorm.h"

/* 1 if path isa (not SN_ISA_AUTO) was compiled in and the CPU and OS support it. */
int sn_cpu_has(sn_isa isa);

/* 1 if the AVX-512 path's bf16 kernels with AVX512-BF16 instructions were compiled in and the
 * CPU has AVX512-BF16 and AVX512DQ (on top of sn_cpu_has(SN_ISA_AVX512)). */
int sn_cpu_has_avx512bf16(void);

/* CPU families whose kernel choice under SN_ISA_AUTO differs from the best path's own table
 * (kernels/registry.c). Only grows. */
typedef enum sn_cpu_family {
    SN_CPU_OTHER = 0,    /* every CPU not listed */
    SN_CPU_AMD_ZEN4 = 1, /* AMD family 19h with AVX-512 (512-bit operations in two halves) */
    SN_CPU_INTEL_SPR = 2 /* Intel Sapphire Rapids and Emerald Rapids (family 6, models 8Fh and
                            CFh) with AVX-512 enabled */
} sn_cpu_family;
sn_cpu_family sn_cpu_family_of(void);

/* The best available path (never SN_ISA_AUTO). */
sn_isa sn_cpu_best(void);

#endif
