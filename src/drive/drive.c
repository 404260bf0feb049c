/* The drivers' parts that do not depend on the element type (see drive.h): the table of the
 * drivers by type, the split into tasks, the parameter-gradient chunk sizes, prefetching. */
#include "drive.h"

#include "ctx.h"

const sn_drive *const sn_drives[SN_DTYPE_COUNT] = {
    [SN_DTYPE_F32] = &sn_drive_f32, [SN_DTYPE_BF16] = &sn_drive_bf16};

int64_t sn_d_row_pieces(const sn_ctx *ctx, int64_t R, int64_t D) {
    const int w = sn_ctx_width(ctx);
    if (w <= 1 || R < 2 || R * D < SN_D_GRAIN) return 1;
    /* a few tasks per thread, so that a thread that starts late still gets a share */
    const int64_t p = 4 * (int64_t)w;
    return R < p ? R : p;
}

void sn_d_prefetch_row(const void *p, int64_t bytes) {
#if defined(__GNUC__)
    const char *c = p;
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b, 0, 2);
    __builtin_prefetch(c + bytes - 1, 0, 2);
#else
    (void)p;
    (void)bytes;
#endif
}

int64_t sn_d_pg_chunk_rows(int64_t D) {
    const int64_t c = SN_D_PG_CHUNK_ELEMS / D;
    /* even from 2 up: the fuse backward's kernels take a chunk's rows in pairs, and a lone row
     * costs a third more instructions (docs/performance.md, "The bf16 fuse backward") */
    return c < 2 ? 1 : c > SN_D_PG_CHUNK_MAX ? SN_D_PG_CHUNK_MAX : c & ~(int64_t)1;
}

size_t sn_d_scratch_bytes(const sn_ctx *ctx, int64_t D) {
    if (D < 1) return 0;
    const int64_t w = sn_ctx_width(ctx), k = w > 1 ? SN_D_PG_SLOTS_PER_THREAD * w : 1;
    /* sizes beyond int64 or size_t saturate at SIZE_MAX (no signed overflow) */
    if (D > (INT64_MAX - SN_D_COL_QUANTUM) / 6) return SIZE_MAX;
    const int64_t slot = sn_d_pg_slot_floats(6 * D);
    if (slot > (INT64_MAX - 64) / (int64_t)sizeof(float) / k) return SIZE_MAX;
    const int64_t bytes = k * slot * (int64_t)sizeof(float) + 64;
    return (uint64_t)bytes > (uint64_t)SIZE_MAX ? SIZE_MAX : (size_t)bytes;
}
