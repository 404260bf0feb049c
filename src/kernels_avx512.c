/* AVX-512F row kernels on fp32 rows: kernels_simd.h over the primitives of kernels_avx512.h.
 * This file alone is compiled with -mavx512f -mavx2 -mfma (with kernels_avx512_bf16.c). */
#if defined(__AVX512F__) &&                                                                        \
    defined(__FMA__) /* compiled with its -m flags (src/meson.build); else empty */
#include "kernels_avx512.h"
#define SN_KERN_TABLE sn_kern_avx512
#include "kernels_simd.h"
#else
typedef int sn_kernels_avx512_not_built; /* a translation unit may not be empty */
#endif
