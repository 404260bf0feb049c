/* The public header must compile alone as strict C11 (this file is built with -std=c11 -Wall
 * -Wextra -Wpedantic -Werror and includes nothing else first), and its frozen value types must
 * keep their documented layout. */
#include "siamesenorm.h"

_Static_assert(sizeof(sn_norm) == 16, "sn_norm is a frozen 16-byte value type");
_Static_assert(sizeof(sn_fuse) == 48, "sn_fuse is three sn_norm");
_Static_assert(SN_VERSION_NUMBER == SN_VERSION_MAJOR * 10000 + SN_VERSION_MINOR * 100 +
                                        SN_VERSION_PATCH,
               "version number formula");

int main(void)
{
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    int64_t np = 0, ns = 0;
    if (sn_norm_query(&n, 8, &np, &ns) != SN_OK || np != 16 || ns != 2)
        return 1;
    return sn_version_number() == SN_VERSION_NUMBER ? 0 : 1;
}
