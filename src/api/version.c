/* Runtime version and status strings. */
#include "siamesenorm.h"

unsigned sn_version_number(void) { return SN_VERSION_NUMBER; }

const char *sn_version_string(void) { return SN_VERSION_STRING; }

const char *sn_status_string(sn_status status) {
    switch (status) {
    case SN_OK: return "success";
    case SN_ERR_NULL: return "a required pointer argument is NULL";
    case SN_ERR_SHAPE:
        return "invalid shape: R, D or the number of sub-layers is <= 0 or too large";
    case SN_ERR_STRIDE: return "invalid row stride: smaller than D";
    case SN_ERR_EPS: return "invalid eps: must be > 0 and finite";
    case SN_ERR_SCALE: return "invalid residual scale c: must be > 0 and finite";
    case SN_ERR_ALIAS: return "forbidden aliasing: a written buffer overlaps another buffer";
    case SN_ERR_PLACEMENT: return "unknown placement";
    case SN_ERR_NORM: return "invalid norm: unknown kind or affine mode, or one not allowed here";
    case SN_ERR_GROUP:
        return "invalid group size: negative, or does not divide D, or not allowed here";
    case SN_ERR_FLAGS: return "unknown flag bits";
    case SN_ERR_INDEX: return "index out of range";
    case SN_ERR_CONFIG:
        return "inconsistent configuration (unknown scale rule, nonzero flags or reserved words)";
    case SN_ERR_UNSUPPORTED: return "not supported by this build or CPU";
    case SN_ERR_NOMEM: return "out of memory";
    case SN_ERR_NONFINITE:
        return "checked mode: an input holds a NaN or an infinity (see sn_ctx_nonfinite_row)";
    case SN_ERR_ALIGN: return "a buffer is not aligned to its element size (float 4, bf16 2 bytes)";
    case SN_ERR_DTYPE: return "element type does not match the net's act_dtype";
    case SN_ERR_STREAMS: return "Hyper-Connections: the expansion rate is outside 1 .. 8";
    }
    return "unknown status";
}
