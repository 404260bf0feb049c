/* The public header alone, strict (-Wall -Wextra -Wpedantic -Werror), in every standard a
 * consumer may use: this file is compiled as C99, C11 and C17, and (through header.cpp, which
 * includes it) as C++11, C++17 and C++20; the test 'header' runs all six. It includes nothing
 * else first. Checked:
 *   - the header compiles alone in each language and standard (C++: extern "C" linkage, no
 *     C-only constructs);
 *   - its frozen value types keep their documented layout, the version number follows its
 *     formula and SN_PLACEMENT_COUNT ends at the last placement (at compile time);
 *   - at run time, the header's version macros equal the linked library's (a header/library
 *     mismatch is the classic ABI accident), and calls through the header's types work. */
#include "siamesenorm.h"

#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
#define HEADER_ASSERT(name, cond) static_assert(cond, #name)
#else /* C99 has no _Static_assert: a negative array size fails the build */
#define HEADER_ASSERT(name, cond) typedef char header_assert_##name[(cond) ? 1 : -1]
#endif
HEADER_ASSERT(norm_16_bytes, sizeof(sn_norm) == 16);
HEADER_ASSERT(fuse_is_three_norms, sizeof(sn_fuse) == 48);
HEADER_ASSERT(net_128_bytes, sizeof(sn_net) == 128);
HEADER_ASSERT(version_number, SN_VERSION_NUMBER == SN_VERSION_MAJOR * 10000 +
                                                       SN_VERSION_MINOR * 100 + SN_VERSION_PATCH);
HEADER_ASSERT(placement_count, SN_PLACEMENT_COUNT == SN_PLACEMENT_HYPER_CONN + 1);

int main(void) {
    int bad = 0;
    if (sn_version_number() != SN_VERSION_NUMBER) {
        fprintf(stderr, "sn_version_number() = %u, header %d\n", sn_version_number(),
                SN_VERSION_NUMBER);
        bad = 1;
    }
    if (strcmp(sn_version_string(), SN_VERSION_STRING) != 0) {
        fprintf(stderr, "sn_version_string() = %s, header %s\n", sn_version_string(),
                SN_VERSION_STRING);
        bad = 1;
    }
    /* calls through the header's types */
    sn_norm ln = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    int64_t np = 0, ns = 0;
    if (sn_norm_query(&ln, 8, &np, &ns) != SN_OK || np != 16 || ns != 2) {
        fprintf(stderr, "sn_norm_query(LayerNorm): %lld parameters, %lld statistics (want 16, 2)\n",
                (long long)np, (long long)ns);
        bad = 1;
    }
    sn_norm rms = {SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0, 1e-5f};
    np = 0;
    if (sn_norm_query(&rms, 8, &np, NULL) != SN_OK || np != 8) {
        fprintf(stderr, "sn_norm_query(RMSNorm): %lld parameters (want 8)\n", (long long)np);
        bad = 1;
    }
#ifdef __cplusplus
    printf("C++ %ld", (long)__cplusplus);
#else
    printf("C %ld", (long)__STDC_VERSION__);
#endif
    printf(": header %s, library %s (%u): %s\n", SN_VERSION_STRING, sn_version_string(),
           sn_version_number(), bad ? "MISMATCH" : "ok");
    return bad;
}
