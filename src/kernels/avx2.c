/* AVX2 + FMA row kernels on fp32 rows: simd_rows.h over the primitives of avx2_vectors.h.
 * This file alone is compiled with -mavx2 -mfma (with avx2_bf16.c). */
#if defined(__AVX2__) &&                                                                           \
    defined(__FMA__) /* compiled with its -m flags (src/meson.build); else empty */
#include "avx2_vectors.h"
#define SN_KERN_TABLE sn_kern_avx2
#include "simd_rows.h"
#else
typedef int sn_kernels_avx2_not_built; /* a translation unit may not be empty */
#endif
