// The public header must compile as C++ (built with -Wall -Wextra -Wpedantic -Werror) and its
// functions must link with C linkage from C++.
#include "siamesenorm.h"

#include <cstring>

static_assert(sizeof(sn_norm) == 16, "sn_norm is a frozen 16-byte value type");
static_assert(sizeof(sn_fuse) == 48, "sn_fuse is three sn_norm");

int main()
{
    sn_net net;
    if (sn_net_init(&net, SN_PLACEMENT_SIAMESE, 4, 8, SN_NORM_RMSNORM, 1e-6f) != SN_OK)
        return 1;
    float c = 0.0f;
    if (sn_net_scale(&net, 0, &c) != SN_OK || !(c > 1.41f && c < 1.42f))
        return 1;
    if (std::strcmp(sn_version_string(), SN_VERSION_STRING) != 0)
        return 1;
    return sn_status_string(SN_ERR_ALIAS) != nullptr ? 0 : 1;
}
