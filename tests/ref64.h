/* An independent float64 reference of the mathematics in SPEC.md and the header's comments.
 * Written from the formulas only (not from the library): everything is computed in double with
 * plain two-pass row statistics. Matrices are row-major with a row stride, like the library.
 * Norm descriptions reuse the public sn_norm / sn_fuse value types; eps is taken as the float
 * value converted to double. */
#ifndef SN_REF64_H
#define SN_REF64_H

#include "siamesenorm.h"

#include <stdint.h>

/* Width W of one normalised run (D, or the group size), and the number of runs per row. */
int64_t ref_norm_width(const sn_norm *n, int64_t D);
/* Parameter count: 0 (identity / non-affine), W (scale), 2W (scale and shift). */
int64_t ref_norm_nparams(const sn_norm *n, int64_t D);
/* Statistics per row: LayerNorm 2 * D/W (means then rstds), RMSNorm D/W, identity 0. */
int64_t ref_norm_nstats(const sn_norm *n, int64_t D);

/* out = N(x) row by row. p: gamma[W] then beta[W] (as present). stats (may be NULL) receives
 * the per-row statistics in the header's layout. out may equal x (same stride). */
void ref_norm_fwd(const sn_norm *n, int64_t R, int64_t D, const double *x, int64_t ldx,
                  const double *p, double *out, int64_t ldo, double *stats);

/* dx = dL/dx of N row by row, given dout = dL/dout (the input gradient only; the core tests
 * check parameter gradients by finite differences of the forward). Written from the chain rule
 * of out = gamma * xhat + beta, xhat = (x - mean) * rstd, per normalised run of width W:
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = gamma * dout
 * (RMSNorm: no mean(g) term; scale and identity: dx = gamma * dout, dout). */
void ref_norm_bwd(const sn_norm *n, int64_t R, int64_t D, const double *dout, int64_t ldd,
                  const double *x, int64_t ldx, const double *p, double *dx, int64_t lddx);

/* u = N_x(x), s = u + N_y(y), h = N_out(s). u may be NULL. p = [N_x | N_y | N_out]. */
void ref_fuse_fwd(const sn_fuse *f, int64_t R, int64_t D, const double *x, int64_t ldx,
                  const double *y, int64_t ldy, const double *p, double *u, int64_t ldu, double *h,
                  int64_t ldh);

/* Parameter count of a fuse block. */
int64_t ref_fuse_nparams(const sn_fuse *f, int64_t D);

/* xo = u + z / c, yo = y + z. */
void ref_apply_fwd(int64_t R, int64_t D, double c, const double *z, int64_t ldz, const double *u,
                   int64_t ldu, const double *y, int64_t ldy, double *xo, int64_t ldxo, double *yo,
                   int64_t ldyo);

/* The default residual scale of sub-layer i: sqrt(2 * (floor(i / 2) + 1)). */
double ref_default_scale(int i);

/* ---- whole networks ------------------------------------------------------------------------ */

#define REF_MAX_S 16
/* Stages are numbered like sn_net_norm_at's i: -1 the split, 0..S-1 the sub-layers, S the
 * merge; REF_ST(i) is the array index of stage i. */
#define REF_ST(i) ((i) + 1)

/* The caller's block: z = F_i(h), h and z contiguous R x D. */
typedef void (*ref_block_fn)(void *ctx, int i, int64_t R, int64_t D, const double *h, double *z);

/* A network as the header's sn_placement comments define it. Fill placement, S, D, norm,
 * input_norm, scale_rule, scales_in (explicit) and mix_fraction, then call ref_net_layout, which
 * writes the expected norms of every stage (nn, nd: the header's "Layout of the parameter block"
 * list) and the residual scales (c_i, or DeepNorm's alpha). The caller then fills off[][] with
 * the offsets the library reports (the layout of the block is the library's to choose; 0 for
 * norms without parameters). */
typedef struct ref_net {
    int placement; /* sn_placement */
    int S;
    int64_t D;
    sn_norm norm;       /* every norm except N_in and c1 */
    sn_norm input_norm; /* N_in of SiameseNorm-family sub-layers */
    int scale_rule;
    const float *scales_in;
    double mix_fraction;
    int hc_rate, hc_dynamic; /* Hyper-Connections: n and static (0) / dynamic (1) */
    /* written by ref_net_layout */
    double scales[REF_MAX_S];
    int nn[REF_MAX_S + 2];
    sn_norm nd[REF_MAX_S + 2][3];
    /* filled by the caller */
    int64_t off[REF_MAX_S + 2][3];
    int64_t conn_off[REF_MAX_S]; /* Hyper-Connections: sub-layer i's connection weights, in the
                                    layout docs/SPEC.md states */
} ref_net;

void ref_net_layout(ref_net *net);

/* DeepNorm's init gain beta = (8L)^(-1/4) (1 for every other placement), L = ceil(S/2). */
double ref_net_init_gain(const ref_net *net);

/* Runs the network forward on e [R x D, lde]: out [R x D, ldo]. hs (may be NULL) receives every
 * block input h_i as S consecutive R x D contiguous matrices. */
void ref_net_fwd(const ref_net *net, int64_t R, const double *e, int64_t lde, const double *params,
                 ref_block_fn block, void *bctx, double *out, int64_t ldo, double *hs);

#endif /* SN_REF64_H */
