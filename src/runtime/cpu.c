/* Runtime CPU detection (see cpu.h) with CPUID and XGETBV: a path needs both the instructions
 * (CPUID feature bits) and the OS saving the wider registers on context switches (XCR0).
 * Detected on first use, then cached (see features()). */
#include "cpu.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define SN_X86 1
#endif

#ifdef SN_X86
static uint64_t xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

/* bit 0: AVX2 + FMA usable; bit 1: AVX-512F and AVX512BW usable; bit 2: and AVX512-BF16 with AVX512DQ;
 * bit 3: an AMD family 19h CPU (Zen 3 and Zen 4; with bit 1, Zen 4); bit 4: an Intel family 6
 * CPU of model 8Fh or CFh (Sapphire Rapids, Emerald Rapids: Golden Cove and Raptor Cove cores) */
static unsigned detect(void) {
    unsigned a, b, c, d, out = 0;
    char vendor[12];
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    memcpy(vendor, &b, 4), memcpy(vendor + 4, &d, 4), memcpy(vendor + 8, &c, 4);
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    /* the family: the base family, plus the extended family when the base is 0Fh */
    const unsigned family =
        ((a >> 8) & 0xfu) == 0xfu ? 0xfu + ((a >> 20) & 0xffu) : (a >> 8) & 0xfu;
    /* the model: the base model, plus the extended model above it in families 6 and 0Fh */
    const unsigned model =
        ((a >> 4) & 0xfu) | (family == 6u || family >= 0xfu ? (a >> 12) & 0xf0u : 0u);
    if (!memcmp(vendor, "AuthenticAMD", 12) && family == 0x19u) out |= 8u;
    if (!memcmp(vendor, "GenuineIntel", 12) && family == 6u && (model == 0x8fu || model == 0xcfu))
        out |= 16u;
    const int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx) return 0;
    const uint64_t x = xcr0();
    if ((x & 0x6) != 0x6) return 0; /* XMM and YMM state */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    const int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1;
    if (avx2 && fma) out |= 1u;
    if (avx512f && avx512bw && (out & 1u) && (x & 0xe6) == 0xe6) /* + opmask, ZMM state */
        out |= 2u;
    const int avx512dq = (b >> 17) & 1;
    if ((out & 2u) && avx512dq && a >= 1) { /* a: the highest subleaf of leaf 7 */
        __cpuid_count(7, 1, a, b, c, d);
        if ((a >> 5) & 1) out |= 4u;
    }
    return out;
}

/* The detection runs once per process: CPUID traps to the hypervisor in a virtual machine
 * (about 10-30 us a call measured in a KVM guest), which calls with a NULL context would
 * otherwise pay every time. The cache only ever holds the one value the hardware gives (any
 * thread racing to fill it writes the same bits), so it is a constant, not state. */
#ifndef __STDC_NO_ATOMICS__
#include <stdatomic.h>
static atomic_uint cached; /* 0: not yet; else 0x100 | detect() */
static unsigned features(void) {
    unsigned f = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!f) {
        f = 0x100u | detect();
        atomic_store_explicit(&cached, f, memory_order_relaxed);
    }
    return f & 0xffu;
}
#else
static unsigned features(void) { return detect(); }
#endif
#endif

int sn_cpu_has(sn_isa isa) {
    switch (isa) {
    case SN_ISA_SCALAR: return 1;
#if defined(SN_X86) && defined(SN_HAVE_AVX2)
    case SN_ISA_AVX2: return (features() & 1u) != 0;
#endif
#if defined(SN_X86) && defined(SN_HAVE_AVX512)
    case SN_ISA_AVX512: return (features() & 2u) != 0;
#endif
    default: return 0;
    }
}

int sn_cpu_has_avx512bf16(void) {
#if defined(SN_X86) && defined(SN_HAVE_AVX512BF16)
    return (features() & 4u) != 0;
#else
    return 0;
#endif
}

sn_cpu_family sn_cpu_family_of(void) {
#ifdef SN_X86
    const unsigned f = features();
    if ((f & 8u) && (f & 2u)) return SN_CPU_AMD_ZEN4;
    if ((f & 16u) && (f & 2u)) return SN_CPU_INTEL_SPR;
#endif
    return SN_CPU_OTHER;
}

sn_isa sn_cpu_best(void) {
#ifdef SN_X86
    const unsigned f = features();
#ifdef SN_HAVE_AVX512
    if (f & 2u) return SN_ISA_AVX512;
#endif
#ifdef SN_HAVE_AVX2
    if (f & 1u) return SN_ISA_AVX2;
#endif
    (void)f;
#endif
    return SN_ISA_SCALAR;
}
