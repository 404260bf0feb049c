/* AVX-512F row kernels on bf16 rows that round with AVX512-BF16's vcvtneps2bf16: the kernels of
 * avx512_bf16.c, compiled with -mavx512bf16 -mavx512dq besides the AVX-512 flags, so
 * that avx512_vectors.h's vrnd16 uses the instruction. The same bits (see vrnd16 there); used
 * only when CPUID says the CPU has both (cpu.c, sn_kern16_for). */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__FMA__) &&                           \
    defined(__AVX512BF16__) &&                                                                     \
    defined(__AVX512DQ__) /* compiled with its -m flags (src/meson.build); else empty */
#include "avx512_vectors.h"
#define SN_KERN_TABLE sn_kern16_avx512bf16
#define SN_K16
#include "simd_rows.h"
#else
typedef int sn_kernels_avx512bf16_not_built; /* a translation unit may not be empty */
#endif
