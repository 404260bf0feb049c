/* The kernel tables of each path (see kernels.h): the one place that maps a path, and the CPU's
 * features, to its fp32 and bf16 tables, and that composes the tables SN_ISA_AUTO runs. */
#include <stddef.h>
#include <string.h>
#ifdef SN_HAVE_PTHREADS
#include <pthread.h>
#endif

#include "cpu.h"
#include "kernels.h"

static const sn_kern *path_table(sn_isa isa) {
    switch (isa) {
#ifdef SN_HAVE_AVX512
    case SN_ISA_AVX512: return &sn_kern_avx512;
#endif
#ifdef SN_HAVE_AVX2
    case SN_ISA_AVX2: return &sn_kern_avx2;
#endif
    default: return &sn_kern_scalar;
    }
}

static const sn_kern16 *path_table16(sn_isa isa) {
    switch (isa) {
#ifdef SN_HAVE_AVX512
    case SN_ISA_AVX512:
#ifdef SN_HAVE_AVX512BF16
        if (sn_cpu_has_avx512bf16()) return &sn_kern16_avx512bf16;
#endif
        return &sn_kern16_avx512;
#endif
#ifdef SN_HAVE_AVX2
    case SN_ISA_AVX2: return &sn_kern16_avx2;
#endif
    default: return &sn_kern16_scalar;
    }
}

/* ---- SN_ISA_AUTO: per CPU family, each slot from the path fastest for it ------------------
 *
 * The SIMD paths give the same bits in every slot (one summation order, simd_rows.h), and the
 * scalar path gives them too in copy, widen and round (the same memmove: its other slots have
 * their own arithmetic). A table may therefore take any slot from another SIMD path, and those
 * three from the scalar path, without changing a bit, and sn_ctx_isa still names the path whose
 * bits a call gives; checkasm checks both: every SIMD table's slots against the first one's,
 * and every slot auto takes against its base path's. The choices are the measurements of
 * `checkasm --bench` (rows in L1, each on a 64-byte boundary), tools/bench-auto.sh and
 * sn-auto-calls (bench/auto_calls.c: the public calls on whole matrices, whose rows sit where
 * their width puts them): a slot leaves its base path for a width class (kernels.h) and kind of
 * call only where the other path was faster at most widths measured in that class in most
 * processes, and its worst ratio to the fastest path over many processes was the smaller of the
 * two. Where the faster path depends on where the matrices start (on 64-byte lines or 16 bytes
 * past them, as malloc places them), that worst ratio decides. Where rows in
 * L1 and whole calls disagree (in a matrix of rows of 24 or 40 floats every other row starts off
 * a 64-byte boundary, so that each of its 16-lane loads spans two cache lines: the likely cause,
 * not measured apart), the calls decide for the slots they run; the others keep what checkasm
 * measured. Since 0.6.14 an elementwise call (apply, add_div, axpy, copy, the conversions) on
 * contiguous matrices narrower than 2048 columns runs as rows of 2048 elements (drive_rows.h,
 * flat_view) and takes that width's tables: the picks of those slots below 2048 columns serve
 * only calls whose matrices have row strides of their own. */
typedef struct slot_pick {
    size_t off;       /* the slot's place in sn_kern, the same in sn_kern16 (one layout, table.h) */
    sn_isa from;      /* the path to take it from */
    unsigned classes; /* the width classes (bit c: sn_k_width_class c) it is taken for */
    unsigned places;  /* the placements it is taken for (bit p: placement p, kernels.h) */
    unsigned types;   /* the tables it is taken for: bit 0 fp32 rows, bit 1 bf16 rows */
    unsigned kinds;   /* the kinds of call it is taken for (bit k: sn_k_call k) */
} slot_pick;
/* a whole table taken from another path (classes, places, types as in slot_pick; every kind of
 * call) */
typedef struct table_pick {
    sn_isa from;
    unsigned classes, places, types;
} table_pick;
#define PICK_FOR(kinds, slot, from, classes, places, types)                                        \
    { offsetof(sn_kern, slot), from, classes, places, types, kinds }
#define PICK(slot, from, classes, places, types)                                                   \
    PICK_FOR(ALL_KINDS, slot, from, classes, places, types)
/* the slots the norm calls run (sn-auto-calls times the calls, so they decide these together):
 * the forward's (norm_fwd; stats2 and norm_row on row pairs) and the backward's (norm_bwd,
 * norm_bwd2 on pairs, norm_pg for the parameter-gradient chunks) */
#define NORM_FWD_PICKS(kinds, from, classes, places, types)                                        \
    PICK_FOR(kinds, norm_fwd, from, classes, places, types),                                       \
        PICK_FOR(kinds, stats2, from, classes, places, types),                                     \
        PICK_FOR(kinds, norm_row, from, classes, places, types)
#define NORM_BWD_PICKS(kinds, from, classes, places, types)                                        \
    PICK_FOR(kinds, norm_bwd, from, classes, places, types),                                       \
        PICK_FOR(kinds, norm_bwd2, from, classes, places, types),                                  \
        PICK_FOR(kinds, norm_pg, from, classes, places, types)
/* the slots the fuse and merge forward run (fuse_fwd2 on row pairs up to 1024 columns; fuse_s
 * and norm_s on single and wider rows) */
#define FUSE_FWD_PICKS(kinds, from, classes, places, types)                                        \
    PICK_FOR(kinds, fuse_fwd2, from, classes, places, types),                                      \
        PICK_FOR(kinds, fuse_s, from, classes, places, types),                                     \
        PICK_FOR(kinds, norm_s, from, classes, places, types)
_Static_assert(sizeof(sn_kern) == sizeof(sn_kern16) &&
                   offsetof(sn_kern, stats2) == offsetof(sn_kern16, stats2) &&
                   offsetof(sn_kern, norm_bwd2) == offsetof(sn_kern16, norm_bwd2) &&
                   offsetof(sn_kern, pair_w_fwd) == offsetof(sn_kern16, pair_w_fwd) &&
                   offsetof(sn_kern, pair_w_bwd) == offsetof(sn_kern16, pair_w_bwd) &&
                   offsetof(sn_kern, single) == offsetof(sn_kern16, single),
               "sn_kern and sn_kern16: one layout (table.h)");
/* width classes (kernels.h, sn_k_width_class) */
#define CL(c)             (1u << (c))
#define ALL_WIDTHS        ((1u << SN_K_WIDTH_CLASSES) - 1u)
#define WIDE_WIDTHS       (CL(2) | CL(8))  /* 2049 and wider (all of them) */
#define SHORT_HALF_WIDTHS (CL(3) | CL(12)) /* 24 and 40 */
/* 128 .. 2048 (all of them) */
#define MID_WIDTHS (CL(22) | CL(24) | CL(1) | CL(23) | CL(25) | CL(7) | CL(17))
/* up to 127, not a multiple of 8; below 64; 33 .. 39; 41 .. 63; of those, the widths whose last
 * 16-lane vector is more than half full (41 .. 47, 57 .. 63) */
#define ODD_WIDTHS          (CL(4) | CL(15) | CL(20) | CL(13) | CL(19) | CL(18) | CL(10))
#define SHORT_ODD_WIDTHS    (CL(4) | CL(15) | CL(20) | CL(13) | CL(19) | CL(18))
#define ODD_33_39           CL(13)
#define ODD_41_63           (CL(19) | CL(18))
#define ODD_41_63_OVER_HALF CL(19)
#define SIXTEEN_WIDTHS      (CL(9) | CL(11)) /* 16 and 32 */
#define WIDTH_16            CL(9)
#define WIDTH_24            CL(3)
#define ODD_BELOW_24        (CL(4) | CL(15)) /* below 24, not a multiple of 8 */
#define ODD_9_15            CL(15)
#define WIDTH_56            CL(14)
#define LONG_HALF_WIDTHS    (CL(14) | CL(21) | CL(5) | CL(16)) /* 56, 72, .., 120 */
#define WIDTH_72            CL(21)
#define HALF_104_120        CL(16)
#define EIGHT_WIDTHS        CL(6) /* 8 */
#define WIDTH_40            CL(12)
#define WIDTHS_176_255      CL(24) /* but the odd multiples of 8 */
#define WIDTHS_256_2048     CL(1)  /* but the odd multiples of 8 */
/* 136 .. 2040, odd multiples of 8 */
#define MID_HALF_WIDTHS      (CL(23) | CL(25) | CL(7) | CL(17))
#define MID_HALF_136_504     (CL(23) | CL(25)) /* 136 .. 504, odd multiples of 8 */
#define MID_HALF_248_504     CL(25)            /* 248 .. 504, odd multiples of 8 */
#define MID_HALF_520_2040    (CL(7) | CL(17))  /* 520 .. 2040, odd multiples of 8 */
#define LONG_MID_HALF_WIDTHS CL(17)            /* 1224 .. 2040, odd multiples of 8 */
#define WIDE_HALF_WIDTHS     CL(8)             /* 2056 and wider, odd multiples of 8 */
/* placements (kernels.h: a size tier, 0 within the L2, 1 past it, 2 far beyond it, 3 streamed,
 * plus SN_K_PLACE_OFF32): the placement bit of tier t with every row on a 32-byte boundary, and
 * off one */
#define LINED(t)         (1u << (t))
#define OFF(t)           (1u << (SN_K_PLACE_OFF32 + (t)))
#define ALL_PLACES       ((1u << SN_K_PLACES) - 1u)
#define LINED_UNSTREAMED (LINED(0) | LINED(1) | LINED(2))
#define LINED_PAST_L2    (LINED(1) | LINED(2) | LINED(3))
#define OFF32            (OFF(0) | OFF(1) | OFF(2) | OFF(3))
#define UNSTREAMED       (LINED_UNSTREAMED | OFF(0) | OFF(1) | OFF(2))
#define OFF32_OR_PAST_L2 (OFF32 | LINED_PAST_L2)
#define F32              1u
#define BF16             2u
#define BOTH_TYPES       3u
/* kinds of call (kernels.h, sn_k_call) */
#define ALL_KINDS ((1u << SN_K_CALLS) - 1u)
#define LAYERNORM (1u << SN_K_CALL_LAYERNORM)
#define RMSNORM   (1u << SN_K_CALL_RMSNORM)
#define MERGE     (1u << SN_K_CALL_MERGE)

/* AMD Zen 4 (AVX-512 base). AVX-512 / AVX2 time; docs/performance.md has the tables ("One
 * summation order", "auto at the call level", "Rows that end in a partial vector").
 * Rows of 128 .. 2048 floats, in L1 (medians over six to sixteen processes of checkasm --bench):
 *   norm_pg   1.07-1.15 at most widths
 *   axpy      1.02-1.10 at 512 .. 2560 (1.00 at 3072, 4096), 0.95 at 64
 *   fold      1.04-1.10 (fp32 and bf16: the same float rows), 1.00 from 3072 up
 * Not taken (worst ratio to the fastest path over 48 processes, tools/bench-auto.sh): norm_row
 * and norm_s (one function on fp32 rows), 1.04-1.09 at 768 .. 2048 in most processes and
 * 0.83-0.91 in others (worst: AVX2 1.24, AVX-512 1.09; a busy sibling hyperthread slows AVX2's
 * twice as many instructions more); hc_proj, 1.01-1.03 at 256 .. 1024 (worst: AVX2 1.17,
 * AVX-512 1.03). axpy from 2049 up: worst AVX2 1.08, AVX-512 1.11. copy, widen and round are
 * the same memmove on every path, and the scalar unit's took 0.87-0.91x the AVX units' at 64
 * elements.
 * Through the public calls (sn-auto-calls, matrices on 4 KiB boundaries), AVX-512 took
 * 1.03-1.30x AVX2's time in sn_apply_forward (apply) at most sizes from 16 x 768 to 2048 x 768,
 * but 0.89-1.02x from 3072 x 768, where the call writes with streaming stores: apply is taken
 * for the calls without them. In sn_apply_backward and sn_split_backward (add_div) 1.02-1.07x
 * from 512 x 768 up, with streaming stores too. Both at every width but those not a multiple of 8
 * (classes 4 and 10), where AVX2's last vector is masked (vmaskmovps, slow on AMD): there
 * AVX-512 took 0.37-0.95x AVX2's time (1024 x 12 .. 60).
 * Narrow rows (2048 x 8 .. 120, one thread): AVX2 was the faster path in most calls on fp32
 * rows of 8, 24 and 40 columns (classes 6 and 3: norm backward up to 1.14x, fuse backward
 * 1.03-1.49x), so they run AVX2's table, but for hc_dots and axpy (AVX-512 0.65 and 0.89-1.00 in L1); at 56
 * .. 120 (class 5) in the norm forward and backward (1.02-1.25). bf16 rows of 8 run AVX2's table;
 * at 24 and 40 AVX2 is faster in the reductions (norm forward 1.08-1.15, backward and fuse
 * forward up to 1.08, Hyper-Connections 1.1-1.4 in L1) and slower in the elementwise slots and
 * the fuse backward (AVX-512 0.78-0.95), which stay. Every other bf16 slot stays AVX-512 (0.45-0.98
 * in L1 in most cases). */
static const slot_pick zen4[] = {
    /* rows of 128 and more; apply and add_div at every width but classes 4 and 10 */
    PICK(norm_pg, SN_ISA_AVX2, MID_WIDTHS, ALL_PLACES, F32),
    PICK(axpy, SN_ISA_AVX2, MID_WIDTHS | WIDE_WIDTHS, ALL_PLACES, F32),
    PICK(apply, SN_ISA_AVX2, ALL_WIDTHS & ~ODD_WIDTHS, UNSTREAMED, F32),
    PICK(add_div, SN_ISA_AVX2, ALL_WIDTHS & ~ODD_WIDTHS, ALL_PLACES, F32),
    PICK(fold, SN_ISA_AVX2, MID_WIDTHS | SHORT_HALF_WIDTHS, ALL_PLACES, BOTH_TYPES),
    /* fp32 rows of 56 .. 120 (class 5): the norms */
    NORM_FWD_PICKS(ALL_KINDS, SN_ISA_AVX2, LONG_HALF_WIDTHS, ALL_PLACES, F32),
    NORM_BWD_PICKS(ALL_KINDS, SN_ISA_AVX2, LONG_HALF_WIDTHS, ALL_PLACES, F32),
    /* rows of 24 and 40 (class 3): fp32 runs AVX2's table (zen4_tables) but for these two ... */
    PICK(hc_dots, SN_ISA_AVX512, SHORT_HALF_WIDTHS, ALL_PLACES, F32),
    PICK(axpy, SN_ISA_AVX512, SHORT_HALF_WIDTHS, ALL_PLACES, F32),
    /* ... and bf16 takes AVX2's reductions */
    NORM_FWD_PICKS(ALL_KINDS, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    NORM_BWD_PICKS(ALL_KINDS, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    FUSE_FWD_PICKS(ALL_KINDS, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    PICK(hc_mix, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    PICK(hc_proj, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    PICK(hc_wmix, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    PICK(hc_wsum, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    /* the same memmove on every path */
    PICK(copy, SN_ISA_SCALAR, ALL_WIDTHS, ALL_PLACES, F32),
    PICK(widen, SN_ISA_SCALAR, ALL_WIDTHS, ALL_PLACES, F32),
    PICK(round, SN_ISA_SCALAR, ALL_WIDTHS, ALL_PLACES, F32),
};
/* whole tables, taken before the slots above: fp32 rows of 24 and 40 (class 3), and rows of 8
 * (class 6) of both types, run AVX2's */
static const table_pick zen4_tables[] = {
    {SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, F32},
    {SN_ISA_AVX2, EIGHT_WIDTHS, ALL_PLACES, BOTH_TYPES},
};

/* Intel Sapphire Rapids and Emerald Rapids (AVX-512 base; measured on Emerald Rapids, family 6
 * model CFh, a 2-core KVM guest). Full-width 512-bit units: AVX-512 is the faster path in most
 * calls (0.6-0.9x AVX2's time at 64 .. 8192 columns, fp32 and bf16), except where fp32 rows are
 * odd multiples of 8 (every other row starts half a 64-byte line in, so that each 16-lane load
 * and store spans two lines: classes 3, 5, 6, 7 and 8) and in narrow rows' norms.
 * AVX-512 / AVX2 time through the public calls (sn-auto-calls; 8 .. 8192 columns, matrices on 4
 * KiB boundaries, staggered, and 16 bytes past them; two runs; medians per class, the worst in
 * brackets; docs/performance.md, "auto on Intel Sapphire and Emerald Rapids"):
 *   rows of 8 (class 6), fp32 and bf16: every call 1.15-1.46 (worst 1.84): AVX2's table
 *   fp32 rows of 24, 40 (class 3): norms 1.16-1.17, fuse 1.06-1.12, add_div 1.23: AVX2's table
 *   bf16 rows of 24, 40: norm backward 1.06 (1.18); the rest stays (fuse 1.01, the others below)
 *   16 and 32 (class 9): fp32 norm backward 1.1-1.2, fuse forward at 32 1.14-1.26; bf16 norm
 *     backward 1.14 at 16 (0.93-0.98 at 32; AVX-512's worst is the larger)
 *   fp32, not a multiple of 8, below 64 (class 4; 12 and 20 measured): norm forward 1.03-1.18,
 *     backward 1.06-1.28, fuse backward 1.05-1.11, add_div 1.04 (1.35)
 *   fp32 56 .. 120 (class 5): norm forward 1.05 (1.18), backward 1.05 (1.27), add_div 1.11
 *   fp32 136 .. 2040 and 2056 and wider (classes 7 and 8): add_div 1.02 (1.08)
 * apply is not taken from AVX2 outside rows of 8: since AVX-512's starts each fp32 row at its
 * output's line boundary (simd_rows.h, COLS_AT) it is the faster at every other class measured.
 * Since 0.6.10 the AVX-512 fp32 rows of 128 columns and more store on their output's lines in
 * the norms and the fuse too (RCOLS4_AT, row_head), and at classes 7 and 8 AVX-512 is the faster
 * in the calls whose slots 0.6.9 took from AVX2 there (sn-auto-calls, 136 .. 4104 columns, the
 * three layouts and every buffer 16 bytes past a line, medians with the worst in brackets): norm
 * forward 0.91-0.97 (1.01), norm backward at class 8 0.98 (1.02; AVX2's worst 1.04), fuse forward
 * at class 8 0.82 (0.86; merge forward 1.02, 1.03). Not taken: the norm backward at 136 .. 2040
 * (0.97-0.98, worst 1.08; AVX2's worst 1.35); anything at 65 .. 127 not a multiple of 8 (class
 * 10; at 100 AVX-512 was the faster in most calls).
 * Narrow rows since 0.6.11 (sn-auto-calls, 2048 rows of 4 .. 120, plain and staggered, two runs
 * each; AVX-512 / AVX2 over those four cells, one outlier in brackets): the classes split from 9,
 * 3 and 4 (kernels.h) let these differ: fp32 norm forward at 16 1.06-1.11 (RMSNorm 0.99-1.03):
 * AVX2; at 32 0.94-1.07: stays. bf16 norm backward at 16 and 24 1.11-1.19 (0.87): AVX2; at 32 and
 * 40 0.91-1.00 (0.78): AVX-512. fp32 fuse and merge forward below 24 not a multiple of 8:
 * 1.03-1.13 at 4 and 20, 0.97-1.08 (0.81) at 12 and 13: AVX2; from 27 0.70-1.04: stay. bf16 fuse
 * and merge forward at 24 1.04-1.07 in 13 cells of 16, 0.84-0.97 in 3: AVX2; at 40 0.87-0.99.
 * Since 0.6.12 class 14 (56) is split from 5: fp32 fuse and merge forward at 56 (512 .. 8192
 * rows, the four layouts, two runs) 1.03-1.09: AVX2; at 72 .. 120 0.93-1.02: stay.
 * Since 0.6.13 (1024 and 2048 rows, the four layouts, two to three runs; docs/performance.md,
 * "Kinds of call"): class 15 (9 .. 15) is split from 4: the fp32 fuse and merge forward there
 * 0.97 in the median (0.85-1.11; at 4 and 20 1.03-1.11): stay; add_div: AVX2 the faster at 9 ..
 * 12 in most cells, AVX-512 at 13 and 15; AVX2's worst 1.24, AVX-512's 1.08: stays. Class 16
 * (104, 120) is split from 5, and the norms' picks are per kind of call: the LayerNorm forward
 * there faster on AVX-512 in 77 cells of 80 (0.76-1.02; at 72 and 88 on AVX2 in 26 of 27):
 * stays; the RMSNorm forward on AVX2 in 71 of 80 (up to 1.48): AVX2. The RMSNorm backward on
 * AVX-512 in 47 of 64, worst 1.04 against AVX2's 1.16: stays; the LayerNorm backward on AVX-512
 * in 31 of 64 (AVX2 where the rows start on lines), worst 1.16 against AVX2's 1.13: AVX2, as at
 * 72 and 88. bf16 rows of 24: the merge's backward (without du) 1.02-1.06, the sub-layer's
 * 0.89-0.91: the merge takes AVX2's fuse_bwd and fuse_bwd2.
 * Since 0.6.14 by placement too (kernels.h; sn-auto-calls, two to nine processes of each of the
 * four layouts; docs/performance.md, "Elementwise calls as one row, and placements"): the fp32
 * norm backward at 136 .. 2040 columns, odd multiples of 8 (classes 7 and 17), beyond the L2
 * with every row on a 32-byte boundary:
 * AVX-512 / AVX2 above 1 in 124 cells of 136 at 776 .. 1544 columns (0.97-1.10, median 1.02), in
 * 39 of 40 at 136 and 264 (median 1.07), in 6 of 20 at 520 (0.99-1.03, median 0.997): AVX2. With
 * a row 16 bytes off a boundary, below 1 in 111 of 128 at 776 .. 1544 (median 0.98), and in the
 * L2 (136 and 520 columns) 0.75-0.93 in every layout: stays (beyond the L2 at 136 with rows off,
 * AVX2 is the faster, 0.91-0.96, and at 264 AVX-512: one class, not split). The fp32 fuse and
 * merge backward at 40 (1024 and 2048 rows, nine processes per layout) with rows off 32-byte
 * boundaries: AVX2 / AVX-512 at least 1 in 67
 * cells of 72 (up to 1.10; 0.87 once); beyond the L2 (32768 rows, on boundaries, three
 * processes): the merge's 1.03-1.12 in 6 of 6, the sub-layer's 0.98-1.03: AVX-512's fuse_bwd and
 * fuse_bwd2. On boundaries in the L2 the merge's is below 1 in 29 of 36 (up to 1.14 once), the
 * sub-layer's at least 1 in 28 of 36 (up to 1.05) but 0.83 once, AVX-512's worst: both stay.
 * The fp32 merge forward at odd multiples of 8 (two to three processes): with every row and
 * parameter vector on a boundary, AVX-512 / AVX2 above 1 in 28 cells of 28 at 1288 .. 2040
 * (1.01-1.05; rows wider than 1024 run one at a time, s built in h) and 18 of 18 from 2056
 * (1.03-1.06), below 1 in 40 of 40 at 136 .. 1160 (0.86-1.00): AVX2 from 1224 (class 17, split
 * from 7) and at class 8, without streaming stores. With every buffer 16 bytes off, AVX2 took
 * 1.10-1.15x AVX-512's time there (rows alone off: 0.98-1.04): stays.
 * Widths 25 .. 63 not a multiple of 8 (2048 rows, the four layouts, two processes): the fp32
 * fuse and merge backward, AVX2 / AVX-512 1.07-1.40 in 128 cells of 128 at 25, 28, 30, 36, 44,
 * 52, 60 and 63 (at 4, 12 and 20, 0.77-0.98 in 60 of 60): fuse_bwd and fuse_bwd2 stay AVX-512's
 * there (0.6.9 measured the class at 12 and 20 only). Class 18 (41 .. 63) is split from 13: the
 * LayerNorm forward there AVX2 / AVX-512 1.02-1.11 in 32 cells of 32 (at 25 .. 36 0.96-1.04):
 * stays AVX-512's; the RMSNorm forward 0.97-1.08, and the norm backward 0.91-1.04 at 44 and 52
 * but 1.02-1.13 at 60 and 63: stay AVX2's. Class 19 (41 .. 47 and 57 .. 63, where the last
 * 16-lane vector is more than half full) is split from 18 (2048 rows, the four layouts, six
 * processes at 16 widths, three more at 8): the fp32 norm backward's AVX2 / AVX-512 medians
 * 1.04-1.08 at 57 .. 63 (AVX2 the faster in 1 .. 4 of 24 cells a width, both kinds), the
 * RMSNorm's 1.01-1.03 at 41 .. 47 (2 .. 8 of 24), the LayerNorm's 1.00-1.01 (9 .. 14 of 24); at
 * 49 .. 55 0.97-1.01 (AVX2 the faster in 7 .. 23 of 24): AVX-512's norm backward at class 19. The
 * RMSNorm forward stays AVX2's at both: 0.98-0.99 at 44 .. 55, 1.01-1.03 at 57 .. 63. Class 20
 * (25 .. 31) is split from 13 (now 33 .. 39) by the same rule (10 widths, three processes): the
 * fp32 fuse forward AVX2 / AVX-512 below 1 in 58 cells of 60 at 33 .. 39 (0.93-1.00), the merge
 * forward in 50 of 60 (0.95-1.03), against 1.01 and 1.05 in the medians at 25 .. 30: AVX2's
 * fuse forward at 33 .. 39. The norms and the backward fuses had the same faster path on both.
 * Class 21 (72) is split from 5 (now 88): the fp32 merge forward with every buffer 16 bytes off
 * a boundary AVX2 / AVX-512 0.96-0.98 in 5 of 6 processes at 72 (with the matrices alone off
 * 0.996-1.005; at 88 0.97-1.03): AVX2's fuse forward slots for the merge at 72 off boundaries.
 * Since 0.6.16 by size tier (kernels.h: past 3 MiB, past 8 MiB, streamed), with classes 22
 * (128 .. 240, from 1; since 0.6.17 128 .. 175) and 23 (136 .. 504, from 7; since 0.6.17
 * 136 .. 232). The fp32 norm backward on 32-byte
 * boundaries (4 KiB and staggered, 1.5 .. 38 MB of matrices, 31 widths, three or four
 * processes; medians of AVX2 / AVX-512 per cell, cells below 1 of all): the RMSNorm's at
 * 256 .. 2048 not an odd multiple of 8, 56 of 60 in tier 1 (median 0.980), 29 of 36 in tier 2
 * (0.982), 7 of 48 in tier 0: AVX2 in tiers 1 and 2 (at 128 .. 240 8 of 80 and 11 of 20: stays;
 * the LayerNorm's 18 of 60 and 5 of 36: stays). At 136 .. 504 (odd multiples of 8) the
 * RMSNorm's 48 of 120 in tier 1 (up to 1.16 at 136 .. 232), the LayerNorm's 0 of 120 (median
 * 1.049): AVX-512 in tier 1, where 0.6.14 took AVX2 from 4 MiB; in tier 2 35 and 32 of 36: AVX2
 * from there. At 520 .. 2040 29 and 27 of 30 (class 7), 29 and 30 of 30 (class 17) in tier 1:
 * AVX2 from tier 1. The fp32 fuse and merge backward at 40 (2048 .. 16384 rows, on boundaries,
 * three processes): the merge's 0.96-1.00 up to 4 MiB of matrices, 1.05-1.09 from 4.7 MiB, the
 * sub-layer's 0.97-1.01: AVX-512's fuse_bwd and fuse_bwd2 from tier 1 (where 0.6.14 took them
 * from 4 MiB).
 * Since 0.6.17 class 24 (176 .. 255, from 22): the fp32 RMSNorm backward in tier 2 (9 .. 38 MB,
 * three processes, on boundaries and staggered) AVX2 / AVX-512 0.98 at 176 .. 208, 0.95-0.97 at
 * 224 and 240 (auto/best 1.022-1.046, 19 of 180 cells flagged), against 0.99-1.06 at 128 .. 160
 * and 1.07-1.12 in tier 3 at every width: AVX2's in tier 2 only (the LayerNorm's 1.01-1.04
 * there: stays). And class 25 (248 .. 504, odd multiples of 8, from 23): the fp32 RMSNorm
 * backward in tier 1 (3.4 .. 8 MB, three processes, both layouts) AVX2 / AVX-512 0.95-0.99 at
 * every width (29-36 cells of 36 below 1; auto/best 1.022-1.065, 49 of 360 cells flagged),
 * against 1.00-1.01 at 216 and 232: AVX2's in tier 1 (tiers 2 and 3 take it already, with class
 * 23's). The LayerNorm's 1.02-1.05 at 216 .. 472: stays. */
static const slot_pick spr[] = {
    /* the norms' slots; at 41 .. 63 (not a multiple of 8), 104 and 120 the LayerNorm forward
     * stays, at 104 and 120 the RMSNorm backward, and at class 19 the norm backward */
    NORM_FWD_PICKS(ALL_KINDS, SN_ISA_AVX2,
                   (SHORT_ODD_WIDTHS & ~ODD_41_63) | (LONG_HALF_WIDTHS & ~HALF_104_120) | WIDTH_16,
                   ALL_PLACES, F32),
    NORM_FWD_PICKS(ALL_KINDS & ~LAYERNORM, SN_ISA_AVX2, HALF_104_120 | ODD_41_63, ALL_PLACES, F32),
    NORM_BWD_PICKS(ALL_KINDS, SN_ISA_AVX2,
                   (SHORT_ODD_WIDTHS & ~ODD_41_63_OVER_HALF) | (LONG_HALF_WIDTHS & ~HALF_104_120) |
                       SIXTEEN_WIDTHS,
                   ALL_PLACES, F32),
    NORM_BWD_PICKS(ALL_KINDS & ~RMSNORM, SN_ISA_AVX2, HALF_104_120, ALL_PLACES, F32),
    NORM_BWD_PICKS(ALL_KINDS, SN_ISA_AVX2, WIDTH_16 | WIDTH_24, ALL_PLACES, BF16),
    NORM_BWD_PICKS(ALL_KINDS, SN_ISA_AVX2, MID_HALF_520_2040, LINED_PAST_L2, F32),
    NORM_BWD_PICKS(ALL_KINDS, SN_ISA_AVX2, MID_HALF_136_504, LINED(2) | LINED(3), F32),
    NORM_BWD_PICKS(RMSNORM, SN_ISA_AVX2, WIDTHS_256_2048, LINED(1) | LINED(2), F32),
    NORM_BWD_PICKS(RMSNORM, SN_ISA_AVX2, WIDTHS_176_255, LINED(2), F32),
    NORM_BWD_PICKS(RMSNORM, SN_ISA_AVX2, MID_HALF_248_504, LINED(1), F32),
    /* the elementwise slots */
    PICK(add_div, SN_ISA_AVX2,
         (SHORT_ODD_WIDTHS & ~ODD_9_15) | LONG_HALF_WIDTHS | MID_HALF_WIDTHS | WIDE_HALF_WIDTHS,
         ALL_PLACES, F32),
    /* rows of 8, and fp32 rows of 24 and 40, run AVX2's table (spr_tables) but for apply (fp32
     * 24, 40) and the slots their calls do not run, where checkasm decides (in L1: AVX2 took
     * 1.5-2.8x AVX-512's time in hc_dots, 1.05-1.45x in hc_wmix, 1.1-1.4x in fuse_dx and
     * fuse_pg, 1.2-1.3x in hc_wsum at 40, 1.06-1.10x in fuse_red at 40) */
    PICK(apply, SN_ISA_AVX512, SHORT_HALF_WIDTHS, ALL_PLACES, F32),
    PICK(hc_dots, SN_ISA_AVX512, EIGHT_WIDTHS | SHORT_HALF_WIDTHS, ALL_PLACES, BOTH_TYPES),
    PICK(hc_wmix, SN_ISA_AVX512, EIGHT_WIDTHS | SHORT_HALF_WIDTHS, ALL_PLACES, BOTH_TYPES),
    PICK(fuse_dx, SN_ISA_AVX512, EIGHT_WIDTHS | SHORT_HALF_WIDTHS, ALL_PLACES, BOTH_TYPES),
    PICK(fuse_pg, SN_ISA_AVX512, EIGHT_WIDTHS | SHORT_HALF_WIDTHS, ALL_PLACES, F32),
    PICK(hc_wsum, SN_ISA_AVX512, SHORT_HALF_WIDTHS, ALL_PLACES, F32),
    PICK(fuse_red, SN_ISA_AVX512, SHORT_HALF_WIDTHS, ALL_PLACES, F32),
    /* bf16 rows of 24 and 40, slots their calls do not run (AVX-512 1.4-1.8x AVX2's time in
     * fold, 1.05-1.24x in hc_proj, 1.06-1.08x in fuse_red, in L1) */
    PICK(fold, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    PICK(hc_proj, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    PICK(fuse_red, SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, BF16),
    /* the fuse's: forward at 16, 32 and 56, below 24 not a multiple of 8 but 9 .. 15, and at
     * 33 .. 39, backward below 24 not a multiple of 8, and the merge's bf16 backward at 24 */
    FUSE_FWD_PICKS(ALL_KINDS, SN_ISA_AVX2,
                   SIXTEEN_WIDTHS | (ODD_BELOW_24 & ~ODD_9_15) | WIDTH_56 | ODD_33_39, ALL_PLACES,
                   F32),
    FUSE_FWD_PICKS(ALL_KINDS, SN_ISA_AVX2, WIDTH_24, ALL_PLACES, BF16),
    PICK(fuse_bwd, SN_ISA_AVX2, ODD_BELOW_24, ALL_PLACES, F32),
    PICK(fuse_bwd2, SN_ISA_AVX2, ODD_BELOW_24, ALL_PLACES, F32),
    PICK_FOR(MERGE, fuse_bwd, SN_ISA_AVX2, WIDTH_24, ALL_PLACES, BF16),
    PICK_FOR(MERGE, fuse_bwd2, SN_ISA_AVX2, WIDTH_24, ALL_PLACES, BF16),
    /* the merge forward at odd multiples of 8 from 1224 columns on 32-byte boundaries (rows
     * wider than SN_K_STACK_ROW_MAX run one at a time: stats2, fuse_s, norm_s) */
    FUSE_FWD_PICKS(MERGE, SN_ISA_AVX2, LONG_MID_HALF_WIDTHS | WIDE_HALF_WIDTHS, LINED_UNSTREAMED,
                   F32),
    PICK_FOR(MERGE, stats2, SN_ISA_AVX2, LONG_MID_HALF_WIDTHS | WIDE_HALF_WIDTHS, LINED_UNSTREAMED,
             F32),
    /* the merge forward at 72 off 32-byte boundaries (its stats2 is AVX2's at 56 .. 88 already) */
    FUSE_FWD_PICKS(MERGE, SN_ISA_AVX2, WIDTH_72, OFF32, F32),
    /* the fuse and merge backward at 40 with rows off 32-byte boundaries or past the L2 */
    PICK(fuse_bwd, SN_ISA_AVX512, WIDTH_40, OFF32_OR_PAST_L2, F32),
    PICK(fuse_bwd2, SN_ISA_AVX512, WIDTH_40, OFF32_OR_PAST_L2, F32),
};
/* whole tables, taken before the slots above: rows of 8 (class 6) of both types, and fp32 rows
 * of 24 and 40 (class 3), run AVX2's */
static const table_pick spr_tables[] = {
    {SN_ISA_AVX2, EIGHT_WIDTHS, ALL_PLACES, BOTH_TYPES},
    {SN_ISA_AVX2, SHORT_HALF_WIDTHS, ALL_PLACES, F32},
};

/* auto's tables: at32 and at16 [placement][kind of call][width class] name one of the distinct
 * tables of pool32 and pool16. Most of the 1040 combinations share a table, so only the distinct
 * ones are written (on Emerald Rapids 42 fp32 and 15 bf16 tables of 288 bytes, 16 KiB, where
 * one table per combination would take 585 KiB; on Zen 4 11 and 4); the pools' untouched pages
 * take no memory. */
enum { AUTO_TABLES = SN_K_PLACES * SN_K_CALLS * SN_K_WIDTH_CLASSES };
_Static_assert(AUTO_TABLES <= 65535, "at32 and at16 hold an unsigned short");
static sn_kern pool32[AUTO_TABLES];
static sn_kern16 pool16[AUTO_TABLES];
static unsigned short at32[SN_K_PLACES][SN_K_CALLS][SN_K_WIDTH_CLASSES],
    at16[SN_K_PLACES][SN_K_CALLS][SN_K_WIDTH_CLASSES];

/* the index in pool (n tables of `size` bytes so far) of a table bytewise equal to t (tables
 * have no padding: pointers and int64_t), appended if there is none */
static unsigned short pool_index(void *pool, size_t size, int *n, const void *t) {
    int i = 0;
    while (i < *n && memcmp((const char *)pool + (size_t)i * size, t, size)) i++;
    if (i == *n) memcpy((char *)pool + (size_t)(*n)++ * size, t, size);
    return (unsigned short)i;
}

/* copies the slot at byte offset off of table src into dst (either table type, one layout), with
 * the data field that describes it: pair_w_fwd goes with stats2 and pair_w_bwd with norm_bwd2,
 * so that the drivers pair rows as the path that slot comes from does (docs/performance.md,
 * "Size tiers": a slot run on pairs its own path never pairs was slower than either path).
 * `single` is the family's (family_picks). */
static void take(void *dst, const void *src, size_t off) {
    memcpy((char *)dst + off, (const char *)src + off, sizeof(void (*)(void)));
    size_t data = 0;
    if (off == offsetof(sn_kern, stats2)) data = offsetof(sn_kern, pair_w_fwd);
    if (off == offsetof(sn_kern, norm_bwd2)) data = offsetof(sn_kern, pair_w_bwd);
    if (data) memcpy((char *)dst + data, (const char *)src + data, sizeof(int64_t));
}

/* the path whose whole table auto takes for class c, placement s, tables of type bit `type` */
static sn_isa table_from(const table_pick *t, size_t n, int c, int s, unsigned type, sn_isa base) {
    for (size_t i = 0; i < n; i++)
        if (t[i].classes >> c & 1u && t[i].places >> s & 1u && t[i].types & type &&
            sn_cpu_has(t[i].from))
            base = t[i].from;
    return base;
}

/* Intel Sapphire and Emerald Rapids: the widths at which the fuse drivers run rows one at a time
 * (the tables' `single`), [0] in the fp32 tables, [1] in the bf16 ones, for the sub-layer's calls
 * (given u and du) and the merge's. Single rows against pairs, forced AVX-512 of builds without
 * pairs against one with them (sn-auto-calls, 50K, 400K and 3M elements; docs/performance.md,
 * "Single rows in the fuse forward and backward on Intel"):
 *   the fuse backward with parameter gradients (fuse_bwd2):
 *     fp32, multiples of 16: the sub-layer's 0.77-1.01x at 320 .. 768 (at 256 and 288
 *       0.94-1.10, at 800 and 832 0.96-1.07, at 1024 up to 1.27); the merge's 0.84-0.99x at
 *       512 .. 640 (`auto` at 320 and 384: 0.88-1.01x 0.6.11's; at 672 .. 768 1.09-1.12 in the
 *       L2)
 *     fp32, other widths (odd multiples of 8, not a multiple of 8): pairs kept (single rows
 *       0.78-0.99 in the L2, but 1.02-1.19 beyond it in both calls)
 *     bf16, every width: the sub-layer's 0.71-1.02x at 256 .. 704 (two cells of one noisy run
 *       1.06 and 1.14; above 704 1.04-1.10 in the L2); the merge's 0.65-0.97x at 256 .. 544 (at
 *       576 .. 672 1.04-1.14 in the L2)
 *   the fuse forward (fuse_fwd2, up to 1024 columns): fp32 odd multiples of 8, the sub-layer's
 *     (which writes u and h) 0.76-1.05x at 392 .. 1016 (at 264 .. 360 0.78-1.12); at multiples
 *     of 16, in the merge forward and for bf16 rows single rows took 0.88-1.72x, above 1 in most
 *     cells */
static const sn_k_singles spr_single[2][SN_K_CALLS] = {
    {[SN_K_CALL_SUBLAYER] = {.fwd = {392, 1016, 16, 8}, .bwd = {320, 768, 16, 0}},
     [SN_K_CALL_MERGE] = {.bwd = {320, 640, 16, 0}}},
    {[SN_K_CALL_SUBLAYER] = {.bwd = {256, 704, 1, 0}},
     [SN_K_CALL_MERGE] = {.bwd = {256, 544, 1, 0}}},
};

/* each CPU family's picks (cpu.h); the lists are for the AVX-512 path as the base. Zen 4 keeps
 * its row pairs: the parameter-gradient stores that they halve bound the fuse backward there
 * ("How the kernels work"). */
typedef struct family_picks {
    sn_cpu_family family;
    const table_pick *tables;
    size_t ntables;
    const slot_pick *slots;
    size_t nslots;
    /* [0] fp32, [1] bf16, per kind of call; NULL: none (the path tables' pairs) */
    const sn_k_singles (*single)[SN_K_CALLS];
} family_picks;
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
static const family_picks families[] = {
    {SN_CPU_AMD_ZEN4, zen4_tables, COUNT(zen4_tables), zen4, COUNT(zen4), NULL},
    {SN_CPU_INTEL_SPR, spr_tables, COUNT(spr_tables), spr, COUNT(spr), spr_single},
};

static void compose(void) {
    const sn_isa base = sn_cpu_best();
    const sn_cpu_family fam = sn_cpu_family_of();
    const slot_pick *p = NULL;
    const table_pick *w = NULL;
    const sn_k_singles(*single)[SN_K_CALLS] = NULL;
    size_t n = 0, nw = 0;
    for (size_t i = 0; i < COUNT(families); i++)
        if (families[i].family == fam && base == SN_ISA_AVX512) {
            p = families[i].slots, n = families[i].nslots;
            w = families[i].tables, nw = families[i].ntables;
            single = families[i].single;
        }
    int n32 = 0, n16 = 0;
    for (int s = 0; s < SN_K_PLACES; s++)
        for (int k = 0; k < SN_K_CALLS; k++)
            for (int c = 0; c < SN_K_WIDTH_CLASSES; c++) {
                sn_kern a32;
                sn_kern16 a16;
                memcpy(&a32, path_table(table_from(w, nw, c, s, F32, base)), sizeof a32);
                memcpy(&a16, path_table16(table_from(w, nw, c, s, BF16, base)), sizeof a16);
                for (size_t i = 0; i < n; i++) {
                    if (!(p[i].classes >> c & 1u && p[i].places >> s & 1u && p[i].kinds >> k & 1u &&
                          sn_cpu_has(p[i].from)))
                        continue;
                    if (p[i].types & F32) take(&a32, path_table(p[i].from), p[i].off);
                    if (p[i].types & BF16) take(&a16, path_table16(p[i].from), p[i].off);
                }
                if (single) a32.single = single[0][k], a16.single = single[1][k];
                at32[s][k][c] = pool_index(pool32, sizeof a32, &n32, &a32);
                at16[s][k][c] = pool_index(pool16, sizeof a16, &n16, &a16);
            }
}

/* auto's tables are composed once per process, the first time a call asks for them: like the
 * CPU's features they follow from the hardware alone, so they are constants once written.
 * Without pthreads (no once-only initialisation) auto runs the best path's own tables. */
#ifdef SN_HAVE_PTHREADS
static pthread_once_t composed = PTHREAD_ONCE_INIT;
static int auto_ready(void) { return pthread_once(&composed, compose) == 0; }
#else
static int auto_ready(void) { return 0; }
#endif

const sn_kern *sn_kern_for(sn_isa isa, int64_t width, unsigned place, sn_k_call call) {
    if (isa != SN_ISA_AUTO) return path_table(isa);
    return auto_ready() && (unsigned)call < SN_K_CALLS && place < SN_K_PLACES
               ? &pool32[at32[place][call][sn_k_width_class(width)]]
               : path_table(sn_cpu_best());
}

const sn_kern16 *sn_kern16_for(sn_isa isa, int64_t width, unsigned place, sn_k_call call) {
    if (isa != SN_ISA_AUTO) return path_table16(isa);
    return auto_ready() && (unsigned)call < SN_K_CALLS && place < SN_K_PLACES
               ? &pool16[at16[place][call][sn_k_width_class(width)]]
               : path_table16(sn_cpu_best());
}
