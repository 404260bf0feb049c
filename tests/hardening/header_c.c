/* The public header alone in a C translation unit, compiled as C99, C11 and C17 with -Wall
 * -Wextra -Wpedantic -Werror (test 'header-c99' etc.); at run time the header's version macros
 * must equal the linked library's (a header/library mismatch is the classic ABI accident). */
#include "siamesenorm.h"

#include <stdio.h>
#include <string.h>

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
    if (SN_VERSION_NUMBER != SN_VERSION_MAJOR * 10000 + SN_VERSION_MINOR * 100 + SN_VERSION_PATCH)
        bad = 1;
    /* the frozen value types keep their documented sizes (ABI policy in the header) */
    if (sizeof(sn_norm) != 16 || sizeof(sn_fuse) != 48 || sizeof(sn_net) != 128) {
        fprintf(stderr, "sizeof sn_norm %zu, sn_fuse %zu, sn_net %zu (want 16, 48, 128)\n",
                sizeof(sn_norm), sizeof(sn_fuse), sizeof(sn_net));
        bad = 1;
    }
    printf("header %s, library %s (%u): %s\n", SN_VERSION_STRING, sn_version_string(),
           sn_version_number(), bad ? "MISMATCH" : "ok");
    return bad;
}
