/* Float64 reference: see ref64.h. Derived from SPEC.md ("Notation", "SiameseNorm, as the official
 * code runs it", "The single-stream placements") and the placement comments of the header. */
#include "ref64.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t ref_norm_width(const sn_norm *n, int64_t D) { return n->group > 0 ? n->group : D; }

int64_t ref_norm_nparams(const sn_norm *n, int64_t D)
{
    if (n->kind == SN_NORM_IDENTITY || n->affine == SN_AFFINE_NONE)
        return 0;
    return (n->affine == SN_AFFINE_SCALE_SHIFT ? 2 : 1) * ref_norm_width(n, D);
}

int64_t ref_norm_nstats(const sn_norm *n, int64_t D)
{
    int64_t groups = D / ref_norm_width(n, D);
    if (n->kind == SN_NORM_LAYERNORM)
        return 2 * groups;
    if (n->kind == SN_NORM_RMSNORM)
        return groups;
    return 0;
}

void ref_norm_fwd(const sn_norm *n, int64_t R, int64_t D, const double *x, int64_t ldx,
                  const double *p, double *out, int64_t ldo, double *stats)
{
    const int64_t W = ref_norm_width(n, D), G = D / W, ns = ref_norm_nstats(n, D);
    const int has_gamma = n->kind != SN_NORM_IDENTITY && n->affine != SN_AFFINE_NONE;
    const int has_beta = has_gamma && n->affine == SN_AFFINE_SCALE_SHIFT;
    const double eps = (double)n->eps;
    for (int64_t r = 0; r < R; r++) {
        const double *xr = x + r * ldx;
        double *orow = out + r * ldo;
        if (n->kind == SN_NORM_IDENTITY) {
            for (int64_t j = 0; j < D; j++)
                orow[j] = xr[j];
            continue;
        }
        for (int64_t g = 0; g < G; g++) {
            const double *v = xr + g * W;
            double *o = orow + g * W;
            double mu = 0.0, ms = 0.0;
            if (n->kind == SN_NORM_LAYERNORM) {
                for (int64_t j = 0; j < W; j++)
                    mu += v[j];
                mu /= (double)W;
            }
            for (int64_t j = 0; j < W; j++)
                ms += (v[j] - mu) * (v[j] - mu);
            ms /= (double)W; /* LayerNorm: biased variance; RMSNorm: mean square (mu = 0) */
            const double rstd = 1.0 / sqrt(ms + eps);
            if (stats) {
                if (n->kind == SN_NORM_LAYERNORM) {
                    stats[r * ns + g] = mu;
                    stats[r * ns + G + g] = rstd;
                } else {
                    stats[r * ns + g] = rstd;
                }
            }
            for (int64_t j = 0; j < W; j++) {
                double xhat = (v[j] - mu) * rstd;
                double gamma = has_gamma ? p[j] : 1.0;
                double beta = has_beta ? p[W + j] : 0.0;
                o[j] = gamma * xhat + beta;
            }
        }
    }
}

int64_t ref_fuse_nparams(const sn_fuse *f, int64_t D)
{
    return ref_norm_nparams(&f->x, D) + ref_norm_nparams(&f->y, D) + ref_norm_nparams(&f->out, D);
}

void ref_fuse_fwd(const sn_fuse *f, int64_t R, int64_t D, const double *x, int64_t ldx,
                  const double *y, int64_t ldy, const double *p, double *u, int64_t ldu,
                  double *h, int64_t ldh)
{
    double *uu = (double *)malloc((size_t)(R * D) * sizeof(double));
    double *ny = (double *)malloc((size_t)(R * D) * sizeof(double));
    const double *px = p, *py = p + ref_norm_nparams(&f->x, D);
    const double *po = py + ref_norm_nparams(&f->y, D);
    ref_norm_fwd(&f->x, R, D, x, ldx, px, uu, D, NULL);
    ref_norm_fwd(&f->y, R, D, y, ldy, py, ny, D, NULL);
    for (int64_t k = 0; k < R * D; k++)
        ny[k] += uu[k]; /* s = u + N_y(y) */
    ref_norm_fwd(&f->out, R, D, ny, D, po, h, ldh, NULL);
    if (u)
        for (int64_t r = 0; r < R; r++)
            memcpy(u + r * ldu, uu + r * D, (size_t)D * sizeof(double));
    free(uu);
    free(ny);
}

void ref_apply_fwd(int64_t R, int64_t D, double c, const double *z, int64_t ldz, const double *u,
                   int64_t ldu, const double *y, int64_t ldy, double *xo, int64_t ldxo,
                   double *yo, int64_t ldyo)
{
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) {
            double zz = z[r * ldz + j];
            xo[r * ldxo + j] = u[r * ldu + j] + zz / c;
            yo[r * ldyo + j] = y[r * ldy + j] + zz;
        }
}

double ref_default_scale(int i) { return sqrt(2.0 * (double)(i / 2 + 1)); }

void ref_net_fwd(const ref_net *net, int64_t R, const double *e, int64_t lde,
                 const double *params, ref_block_fn block, void *bctx, double *out, int64_t ldo,
                 double *hs)
{
    const int64_t D = net->D, n = R * D;
    const size_t bytes = (size_t)n * sizeof(double);
    double *x = (double *)malloc(bytes), *y = (double *)malloc(bytes);
    double *u = (double *)malloc(bytes), *t = (double *)malloc(bytes);
    double *h = (double *)malloc(bytes), *z = (double *)malloc(bytes);
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++)
            x[r * D + j] = y[r * D + j] = e[r * lde + j]; /* split: x_0 = y_0 = e */

    for (int i = 0; i < net->S; i++) {
        const int64_t *off = net->off[i];
        switch (net->placement) {
        case SN_PLACEMENT_PRE_NORM: /* h = N_i(x), x += z */
            ref_norm_fwd(&net->norm, R, D, x, D, params + off[0], h, D, NULL);
            block(bctx, i, R, D, h, z);
            for (int64_t k = 0; k < n; k++)
                x[k] += z[k];
            break;
        case SN_PLACEMENT_POST_NORM: /* h = x, x = N_i(x + z) */
            memcpy(h, x, bytes);
            block(bctx, i, R, D, h, z);
            for (int64_t k = 0; k < n; k++)
                t[k] = x[k] + z[k];
            ref_norm_fwd(&net->norm, R, D, t, D, params + off[0], x, D, NULL);
            break;
        default: /* SiameseNorm */
            ref_norm_fwd(&net->norm, R, D, x, D, params + off[0], u, D, NULL); /* N_post */
            ref_norm_fwd(&net->norm, R, D, y, D, params + off[1], t, D, NULL); /* N_pre */
            for (int64_t k = 0; k < n; k++)
                t[k] += u[k];
            ref_norm_fwd(&net->input_norm, R, D, t, D, params + off[2], h, D, NULL); /* N_in */
            block(bctx, i, R, D, h, z);
            for (int64_t k = 0; k < n; k++) {
                x[k] = u[k] + z[k] / net->scales[i];
                y[k] = y[k] + z[k];
            }
            break;
        }
        if (hs)
            memcpy(hs + (int64_t)i * n, h, bytes);
    }

    const int64_t *off = net->off[net->S];
    switch (net->placement) {
    case SN_PLACEMENT_PRE_NORM: /* out = N_f(x_S) */
        ref_norm_fwd(&net->norm, R, D, x, D, params + off[0], out, ldo, NULL);
        break;
    case SN_PLACEMENT_POST_NORM: /* out = x_S */
        for (int64_t r = 0; r < R; r++)
            memcpy(out + r * ldo, x + r * D, (size_t)D * sizeof(double));
        break;
    default: /* out = N_f(N_a(x_S) + N_b(y_S)) */
        ref_norm_fwd(&net->norm, R, D, x, D, params + off[0], u, D, NULL);
        ref_norm_fwd(&net->norm, R, D, y, D, params + off[1], t, D, NULL);
        for (int64_t k = 0; k < n; k++)
            t[k] += u[k];
        ref_norm_fwd(&net->norm, R, D, t, D, params + off[2], out, ldo, NULL);
        break;
    }
    free(x);
    free(y);
    free(u);
    free(t);
    free(h);
    free(z);
}
