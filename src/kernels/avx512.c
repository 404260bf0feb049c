/* AVX-512F row kernels on fp32 rows: simd_rows.h over the primitives of avx512_vectors.h.
 * This file alone is compiled with -mavx512f -mavx512bw -mavx2 -mfma (with avx512_bf16.c). */
#if defined(__AVX512F__) && defined(__AVX512BW__) &&                                               \
    defined(__FMA__) /* compiled with its -m flags (src/meson.build); else empty */
#include "avx512_vectors.h"
#define SN_KERN_TABLE sn_kern_avx512
#include "simd_rows.h"
#else
typedef int sn_kernels_avx512_not_built; /* a translation unit may not be empty */
#endif
