/* The execution context: the only object the library allocates. It carries no settings yet;
 * it exists so that later settings (threads, kernel paths) never change a call's signature. */
#include <stdlib.h>

#include "siamesenorm.h"

struct sn_ctx {
    uint32_t reserved;
};

sn_status sn_ctx_create(sn_ctx **out) {
    if (!out) return SN_ERR_NULL;
    *out = calloc(1, sizeof(sn_ctx));
    return *out ? SN_OK : SN_ERR_NOMEM;
}

void sn_ctx_destroy(sn_ctx *ctx) { free(ctx); }
