/* sn_scratch_bytes: the scratch a context's backward calls use at full width, as the drivers
 * size their slots (drive.h). */
#include "drive.h"

size_t sn_scratch_bytes(const sn_ctx *ctx, int64_t D) { return sn_d_scratch_bytes(ctx, D); }
