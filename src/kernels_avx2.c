/* AVX2 + FMA row kernels on fp32 rows: kernels_simd.h over the primitives of kernels_avx2.h.
 * This file alone is compiled with -mavx2 -mfma (with kernels_avx2_bf16.c). */
#if defined(__AVX2__) &&                                                                           \
    defined(__FMA__) /* compiled with its -m flags (src/meson.build); else empty */
#include "kernels_avx2.h"
#define SN_KERN_TABLE sn_kern_avx2
#include "kernels_simd.h"
#else
typedef int sn_kernels_avx2_not_built; /* a translation unit may not be empty */
#endif
