/* Sizes and layouts, one definition for the checks (src/api), the drivers (src/drive) and the
 * kernels: the row widths the stack rows of the kernels and drivers bound, and where a norm's or
 * a fuse's parameters and row statistics sit (layout.c). kernels.h includes this header; the
 * checks include it alone. */
#ifndef SN_LAYOUT_H
#define SN_LAYOUT_H

#include <stdint.h>

#include "siamesenorm.h"

/* The widest bf16 rows (and row segments) the bf16 drivers and kernel tables take: the scalar
 * path's bf16 table (scalar_bf16.c) widens up to six such rows into fp32 rows on its stack
 * (96 KiB), and the bf16 fuse forward driver builds a row's float s on its stack. The checks
 * refuse wider bf16 rows (sn_check_row_dt: the bf16 norm, fuse and merge calls and bf16 nets
 * return SN_ERR_UNSUPPORTED), so the drivers and kernels never see one. */
#define SN_K16_ROW_MAX 4096

/* The widest row whose float temporaries a fuse kernel or driver keeps whole in stack rows of
 * this many floats (4 KiB; up to ten such rows in a SIMD bf16 fuse_bwd2): the pair forward
 * fuse_fwd2 takes no wider row (the drivers ask sn_k_fuse2_ok), the fuse backward kernels of
 * every path (fuse_bwd, fuse_bwd2) run the pieces fuse_red, fuse_pg, fuse_dx on wider rows, and
 * the fp32 fuse forward driver builds a wider row's s in h. One stack budget for all of them; no
 * bit depends on it (the wide ways compute the same values). */
#define SN_K_STACK_ROW_MAX 1024

/* Sizes of one valid norm on rows of D columns: parameter count and saved floats per row (the
 * one definition: the checks, the drivers and the kernels use these). */
int64_t sn_norm_nparams(const sn_norm *n, int64_t D);
int64_t sn_norm_spr(const sn_norm *n, int64_t D);

/* Offsets of a fuse's three norms in its parameter block and in a row's stats block, and the
 * sizes of both (np parameters, spr statistics per row). */
typedef struct sn_fuse_layout {
    int64_t px, py, po;
    int64_t sx, sy, so;
    int64_t np, spr;
} sn_fuse_layout;
sn_fuse_layout sn_k_fuse_layout(const sn_fuse *f, int64_t D);

#endif
