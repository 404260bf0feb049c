/* The public header alone in a C translation unit, compiled as C99, C11 and C17 with -Wall
 * -Wextra -Wpedantic -Werror (test 'header-c99' etc.), including nothing else first: its frozen
 * value types keep their documented layout, and at run time the header's version macros must
 * equal the linked library's (a header/library mismatch is the classic ABI accident).
 * header_cpp.cpp is the same check in C++. */
#include "siamesenorm.h"

#include <stdio.h>
#include <string.h>

/* compile-time checks that C99 can express too (a negative array size fails the build) */
#define HD_ASSERT(name, cond) typedef char hd_assert_##name[(cond) ? 1 : -1]
HD_ASSERT(norm_16_bytes, sizeof(sn_norm) == 16);
HD_ASSERT(fuse_is_three_norms, sizeof(sn_fuse) == 48);
HD_ASSERT(net_128_bytes, sizeof(sn_net) == 128);
HD_ASSERT(version_number, SN_VERSION_NUMBER == SN_VERSION_MAJOR * 10000 +
                                                   SN_VERSION_MINOR * 100 + SN_VERSION_PATCH);
HD_ASSERT(placement_count, SN_PLACEMENT_COUNT == SN_PLACEMENT_HYBRIDNORM_STAR + 1);

int main(void)
{
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
    /* a call through the header's types */
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    int64_t np = 0, ns = 0;
    if (sn_norm_query(&n, 8, &np, &ns) != SN_OK || np != 16 || ns != 2) {
        fprintf(stderr, "sn_norm_query: %lld parameters, %lld statistics (want 16, 2)\n",
                (long long)np, (long long)ns);
        bad = 1;
    }
    printf("header %s, library %s (%u): %s\n", SN_VERSION_STRING, sn_version_string(),
           sn_version_number(), bad ? "MISMATCH" : "ok");
    return bad;
}
