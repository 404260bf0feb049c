// The public header in C++ (C++11, C++17, C++20; -Wall -Wextra -Wpedantic -Werror): extern "C"
// linkage, no C-only constructs, and the same version and layout checks as header_c.c.
#include "siamesenorm.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

static_assert(sizeof(sn_norm) == 16, "sn_norm is a frozen 16-byte type");
static_assert(sizeof(sn_fuse) == 48, "sn_fuse is three sn_norm");
static_assert(sizeof(sn_net) == 128, "sn_net grows only through its reserved words");
static_assert(SN_VERSION_NUMBER ==
                  SN_VERSION_MAJOR * 10000 + SN_VERSION_MINOR * 100 + SN_VERSION_PATCH,
              "version number formula");
static_assert(SN_PLACEMENT_COUNT == SN_PLACEMENT_HYBRIDNORM_STAR + 1,
              "SN_PLACEMENT_COUNT ends at the last placement");

int main()
{
    sn_norm n = {SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0, 1e-5f};
    std::int64_t np = 0;
    if (sn_norm_query(&n, 8, &np, nullptr) != SN_OK || np != 8)
        return 1;
    if (sn_version_number() != SN_VERSION_NUMBER ||
        std::strcmp(sn_version_string(), SN_VERSION_STRING) != 0) {
        std::fprintf(stderr, "header %s, library %s\n", SN_VERSION_STRING, sn_version_string());
        return 1;
    }
    std::printf("C++ %ld: header and library %s\n", static_cast<long>(__cplusplus),
                sn_version_string());
    return 0;
}
