/* AVX-512F row kernels on bf16 rows (fp32 arithmetic): simd_rows.h instantiated with bf16
 * matrices over the primitives of avx512_vectors.h. Compiled with -mavx512f -mavx512bw -mavx2
 * -mfma. */
#if defined(__AVX512F__) && defined(__AVX512BW__) &&                                               \
    defined(__FMA__) /* compiled with its -m flags (src/meson.build); else empty */
#include "avx512_vectors.h"
#define SN_KERN_TABLE sn_kern16_avx512
#define SN_K16
#include "simd_rows.h"
#else
typedef int sn_kernels_avx512_bf16_not_built; /* a translation unit may not be empty */
#endif
