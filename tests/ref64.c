/* Float64 reference: see ref64.h. Derived from SPEC.md ("Notation", "SiameseNorm, as the official
 * code runs it", "The single-stream placements") and the placement comments of the header. */
#include "ref64.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t ref_norm_width(const sn_norm *n, int64_t D) { return n->group > 0 ? n->group : D; }

int64_t ref_norm_nparams(const sn_norm *n, int64_t D) {
    if (n->kind == SN_NORM_IDENTITY || n->affine == SN_AFFINE_NONE) return 0;
    return (n->affine == SN_AFFINE_SCALE_SHIFT ? 2 : 1) * ref_norm_width(n, D);
}

int64_t ref_norm_nstats(const sn_norm *n, int64_t D) {
    int64_t groups = D / ref_norm_width(n, D);
    if (n->kind == SN_NORM_LAYERNORM) return 2 * groups;
    if (n->kind == SN_NORM_RMSNORM) return groups;
    return 0;
}

void ref_norm_fwd(const sn_norm *n, int64_t R, int64_t D, const double *x, int64_t ldx,
                  const double *p, double *out, int64_t ldo, double *stats) {
    const int64_t W = ref_norm_width(n, D), G = D / W, ns = ref_norm_nstats(n, D);
    const int has_gamma = n->kind != SN_NORM_IDENTITY && n->affine != SN_AFFINE_NONE;
    const int has_beta = has_gamma && n->affine == SN_AFFINE_SCALE_SHIFT;
    const double eps = (double)n->eps;
    for (int64_t r = 0; r < R; r++) {
        const double *xr = x + r * ldx;
        double *orow = out + r * ldo;
        if (n->kind == SN_NORM_IDENTITY) {
            for (int64_t j = 0; j < D; j++) orow[j] = xr[j];
            continue;
        }
        if (n->kind == SN_NORM_SCALE) { /* gamma * v + beta, no statistics */
            for (int64_t j = 0; j < D; j++)
                orow[j] = (has_gamma ? p[j % W] : 1.0) * xr[j] + (has_beta ? p[W + j % W] : 0.0);
            continue;
        }
        for (int64_t g = 0; g < G; g++) {
            const double *v = xr + g * W;
            double *o = orow + g * W;
            double mu = 0.0, ms = 0.0;
            if (n->kind == SN_NORM_LAYERNORM) {
                for (int64_t j = 0; j < W; j++) mu += v[j];
                mu /= (double)W;
            }
            for (int64_t j = 0; j < W; j++) ms += (v[j] - mu) * (v[j] - mu);
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

void ref_norm_bwd(const sn_norm *n, int64_t R, int64_t D, const double *dout, int64_t ldd,
                  const double *x, int64_t ldx, const double *p, double *dx, int64_t lddx) {
    const int64_t W = ref_norm_width(n, D), G = D / W;
    const int has_gamma = n->kind != SN_NORM_IDENTITY && n->affine != SN_AFFINE_NONE;
    const double eps = (double)n->eps;
    for (int64_t r = 0; r < R; r++) {
        const double *xr = x + r * ldx, *dr = dout + r * ldd;
        double *o = dx + r * lddx;
        if (n->kind == SN_NORM_IDENTITY || n->kind == SN_NORM_SCALE) {
            for (int64_t j = 0; j < D; j++) o[j] = (has_gamma ? p[j % W] : 1.0) * dr[j];
            continue;
        }
        for (int64_t g = 0; g < G; g++) {
            const double *v = xr + g * W, *d = dr + g * W;
            double mu = 0.0, ms = 0.0, mg = 0.0, mgx = 0.0;
            if (n->kind == SN_NORM_LAYERNORM) {
                for (int64_t j = 0; j < W; j++) mu += v[j];
                mu /= (double)W;
            }
            for (int64_t j = 0; j < W; j++) ms += (v[j] - mu) * (v[j] - mu);
            ms /= (double)W;
            const double rstd = 1.0 / sqrt(ms + eps);
            for (int64_t j = 0; j < W; j++) {
                const double gj = (has_gamma ? p[j] : 1.0) * d[j], xhat = (v[j] - mu) * rstd;
                mg += gj;
                mgx += gj * xhat;
            }
            mg /= (double)W;
            mgx /= (double)W;
            if (n->kind != SN_NORM_LAYERNORM) mg = 0.0;
            for (int64_t j = 0; j < W; j++) {
                const double gj = (has_gamma ? p[j] : 1.0) * d[j], xhat = (v[j] - mu) * rstd;
                o[g * W + j] = rstd * (gj - mg - xhat * mgx);
            }
        }
    }
}

int64_t ref_fuse_nparams(const sn_fuse *f, int64_t D) {
    return ref_norm_nparams(&f->x, D) + ref_norm_nparams(&f->y, D) + ref_norm_nparams(&f->out, D);
}

void ref_fuse_fwd(const sn_fuse *f, int64_t R, int64_t D, const double *x, int64_t ldx,
                  const double *y, int64_t ldy, const double *p, double *u, int64_t ldu, double *h,
                  int64_t ldh) {
    double *uu = (double *)malloc((size_t)(R * D) * sizeof(double));
    double *ny = (double *)malloc((size_t)(R * D) * sizeof(double));
    const double *px = p, *py = p + ref_norm_nparams(&f->x, D);
    const double *po = py + ref_norm_nparams(&f->y, D);
    ref_norm_fwd(&f->x, R, D, x, ldx, px, uu, D, NULL);
    ref_norm_fwd(&f->y, R, D, y, ldy, py, ny, D, NULL);
    for (int64_t k = 0; k < R * D; k++) ny[k] += uu[k]; /* s = u + N_y(y) */
    ref_norm_fwd(&f->out, R, D, ny, D, po, h, ldh, NULL);
    if (u)
        for (int64_t r = 0; r < R; r++) memcpy(u + r * ldu, uu + r * D, (size_t)D * sizeof(double));
    free(uu);
    free(ny);
}

void ref_apply_fwd(int64_t R, int64_t D, double c, const double *z, int64_t ldz, const double *u,
                   int64_t ldu, const double *y, int64_t ldy, double *xo, int64_t ldxo, double *yo,
                   int64_t ldyo) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) {
            double zz = z[r * ldz + j];
            xo[r * ldxo + j] = u[r * ldu + j] + zz / c;
            yo[r * ldyo + j] = y[r * ldy + j] + zz;
        }
}

double ref_default_scale(int i) { return sqrt(2.0 * (double)(i / 2 + 1)); }

static int ref_layers(int S) { return (S + 1) / 2; } /* L = ceil(S/2) */

static int is_family(int p) {
    return p == SN_PLACEMENT_SIAMESE || p == SN_PLACEMENT_SIAMESE_PAPER ||
           p == SN_PLACEMENT_SIAMESE_HYBRID_PRE;
}

/* Mix-LN: sub-layer i is Post-Norm when its layer is among the first floor(f * L) */
static int mix_is_post(const ref_net *net, int i) {
    return (double)(i / 2) < floor(net->mix_fraction * (double)ref_layers(net->S));
}

void ref_net_layout(ref_net *net) {
    const sn_norm N = net->norm, IN = net->input_norm;
    const sn_norm ID = {SN_NORM_IDENTITY, SN_AFFINE_NONE, 0, N.eps};
    const sn_norm C1 = {SN_NORM_SCALE, SN_AFFINE_SCALE, 0, N.eps};
    const int S = net->S, p = net->placement;
    for (int k = 0; k < S + 2; k++) net->nn[k] = 0;
#define SET(st, ...)                                                                               \
    do {                                                                                           \
        const sn_norm l_[] = {__VA_ARGS__};                                                        \
        net->nn[REF_ST(st)] = (int)(sizeof l_ / sizeof l_[0]);                                     \
        for (int q_ = 0; q_ < net->nn[REF_ST(st)]; q_++) net->nd[REF_ST(st)][q_] = l_[q_];         \
    } while (0)
    if (p == SN_PLACEMENT_PERI_LN) SET(-1, N); /* N_emb */
    for (int i = 0; i < S; i++) {
        switch (p) {
        case SN_PLACEMENT_SIAMESE:
        case SN_PLACEMENT_SIAMESE_PAPER:
            SET(i, N, N, IN); /* N_post, N_pre, N_in */
            break;
        case SN_PLACEMENT_SIAMESE_HYBRID_PRE:
            if (i % 2 == 0) SET(i, C1, N); /* c1, N_pre */
            else SET(i, N, N, IN);
            break;
        case SN_PLACEMENT_PERI_LN:
            SET(i, N, N); /* N_in, N_out */
            break;
        case SN_PLACEMENT_HYBRIDNORM:
            if (i % 2 == 0) SET(i, ID);
            else SET(i, N);
            break;
        case SN_PLACEMENT_HYBRIDNORM_STAR:
            if (i % 2 == 0 && i >= 2) SET(i, ID);
            else SET(i, N);
            break;
        case SN_PLACEMENT_HYPER_CONN: /* N_i (, N_hc) */
            if (net->hc_dynamic) SET(i, N, N);
            else SET(i, N);
            break;
        default: /* Pre-Norm, Post-Norm, DeepNorm, Mix-LN */ SET(i, N); break;
        }
    }
    switch (p) {
    case SN_PLACEMENT_SIAMESE:
    case SN_PLACEMENT_SIAMESE_HYBRID_PRE:
        SET(S, N, N, N); /* N_a, N_b, N_f */
        break;
    case SN_PLACEMENT_SIAMESE_PAPER:
        SET(S, ID, N, ID); /* out = x + N_f(y) */
        break;
    case SN_PLACEMENT_POST_NORM:
    case SN_PLACEMENT_DEEPNORM: break;
    default: SET(S, N); break;
    }
#undef SET
    const double L = (double)ref_layers(S);
    for (int i = 0; i < S; i++) {
        double c = 1.0;
        if (is_family(p) || p == SN_PLACEMENT_DEEPNORM || p == SN_PLACEMENT_SPAN_NORM) {
            if (net->scale_rule == SN_SCALE_EXPLICIT) c = (double)net->scales_in[i];
            else if (net->scale_rule == SN_SCALE_DEFAULT)
                c = p == SN_PLACEMENT_DEEPNORM    ? pow(2.0 * L, 0.25)
                    : p == SN_PLACEMENT_SPAN_NORM ? sqrt(L)
                                                  : ref_default_scale(i);
        }
        net->scales[i] = c;
    }
}

double ref_net_init_gain(const ref_net *net) {
    return net->placement == SN_PLACEMENT_DEEPNORM ? pow(8.0 * (double)ref_layers(net->S), -0.25)
                                                   : 1.0;
}

/* Hyper-Connections' sub-layer i (docs/SPEC.md, "Hyper-Connections"), on the n streams Hs (n
 * consecutive R x D): per row the weights A_m, A_r, B (static, plus dynamic HC's
 * s * tanh(<N_hc(H_k), W>) terms), h = N_i(sum_k A_m[k] H_k) into h, z = F_i(h), then
 * H'_j = sum_k A_r[k][j] H_k + B[j] z. */
static void hc_sublayer(const ref_net *net, int64_t R, int i, const double *params, double *Hs,
                        double *h, double *z, ref_block_fn block, void *bctx) {
    const int nh = net->hc_rate;
    const int64_t D = net->D, n = R * D;
    const double *al = params + net->conn_off[i], *be = al + nh * (nh + 1);
    const double *Wa = be + nh, *Wb = Wa + (nh + 1) * D, *sc = Wb + D;
    double *am = (double *)malloc(sizeof(double) * (size_t)(R * nh));
    double *ar = (double *)malloc(sizeof(double) * (size_t)(R * nh * nh));
    double *bb = (double *)malloc(sizeof(double) * (size_t)(R * nh));
    double *hb = (double *)malloc(sizeof(double) * (size_t)D),
           *Hn = (double *)malloc(sizeof(double) * (size_t)(nh * n));
    for (int64_t r = 0; r < R; r++)
        for (int k = 0; k < nh; k++) {
            double ta[SN_HC_MAX_RATE + 1] = {0}, tb = 0;
            if (net->hc_dynamic) { /* Hbar_k = N_hc(H_k), then the tanh of its projections */
                ref_norm_fwd(&net->nd[REF_ST(i)][1], 1, D, Hs + k * n + r * D, D,
                             params + net->off[REF_ST(i)][1], hb, D, NULL);
                for (int c = 0; c <= nh; c++) {
                    double s = 0;
                    for (int64_t j = 0; j < D; j++) s += hb[j] * Wa[c * D + j];
                    ta[c] = tanh(s);
                }
                double s = 0;
                for (int64_t j = 0; j < D; j++) s += hb[j] * Wb[j];
                tb = tanh(s);
            }
            const double sa = net->hc_dynamic ? sc[0] : 0, sb = net->hc_dynamic ? sc[1] : 0;
            am[r * nh + k] = al[k * (nh + 1)] + sa * ta[0];
            for (int j = 0; j < nh; j++)
                ar[(r * nh + k) * nh + j] = al[k * (nh + 1) + 1 + j] + sa * ta[1 + j];
            bb[r * nh + k] = be[k] + sb * tb;
        }
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) {
            double s = 0;
            for (int k = 0; k < nh; k++) s += am[r * nh + k] * Hs[k * n + r * D + j];
            h[r * D + j] = s;
        }
    ref_norm_fwd(&net->nd[REF_ST(i)][0], R, D, h, D, params + net->off[REF_ST(i)][0], h, D, NULL);
    block(bctx, i, R, D, h, z);
    for (int q = 0; q < nh; q++)
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++) {
                double s = bb[r * nh + q] * z[r * D + j];
                for (int k = 0; k < nh; k++) s += ar[(r * nh + k) * nh + q] * Hs[k * n + r * D + j];
                Hn[q * n + r * D + j] = s;
            }
    memcpy(Hs, Hn, sizeof(double) * (size_t)(nh * n));
    free(am), free(ar), free(bb), free(hb), free(Hn);
}

void ref_net_fwd(const ref_net *net, int64_t R, const double *e, int64_t lde, const double *params,
                 ref_block_fn block, void *bctx, double *out, int64_t ldo, double *hs) {
    const int64_t D = net->D, n = R * D;
    const int S = net->S, p = net->placement;
    const size_t bytes = (size_t)n * sizeof(double);
    double *x = (double *)malloc(bytes), *y = (double *)malloc(bytes);
    double *u = (double *)malloc(bytes), *t = (double *)malloc(bytes);
    double *h = (double *)malloc(bytes), *z = (double *)malloc(bytes);
    double *w = (double *)malloc(bytes);
    const int nh = p == SN_PLACEMENT_HYPER_CONN ? net->hc_rate : 0;
    double *Hs = (double *)malloc(bytes * (size_t)(nh + 1)); /* HC's streams, each R x D */
    for (int q = 0; q < nh; q++)
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++) Hs[q * n + r * D + j] = e[r * lde + j]; /* H_k = e */
/* v_out = norm j of stage st applied to v_in (contiguous R x D) */
#define NRM(st, j, vin, vout)                                                                      \
    ref_norm_fwd(&net->nd[REF_ST(st)][j], R, D, vin, D, params + net->off[REF_ST(st)][j], vout, D, \
                 NULL)
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++)
            x[r * D + j] = y[r * D + j] = e[r * lde + j]; /* x_0 = y_0 = e */
    if (p == SN_PLACEMENT_PERI_LN) {
        NRM(-1, 0, y, x); /* x_0 = N_emb(e) */
    }

    for (int i = 0; i < S; i++) {
        int kind = p; /* the rule this sub-layer follows */
        if (p == SN_PLACEMENT_MIX_LN)
            kind = mix_is_post(net, i) ? SN_PLACEMENT_POST_NORM : SN_PLACEMENT_PRE_NORM;
        if (p == SN_PLACEMENT_HYBRIDNORM_STAR)
            kind = i < 2 ? SN_PLACEMENT_PRE_NORM : SN_PLACEMENT_HYBRIDNORM;
        if (p == SN_PLACEMENT_SIAMESE_HYBRID_PRE && i % 2 == 1)
            kind = SN_PLACEMENT_SIAMESE; /* the MLP sub-layer is the default one */
        const double c = net->scales[i];
        switch (kind) {
        case SN_PLACEMENT_PRE_NORM: /* h = N_i(x), x += z */
            NRM(i, 0, x, h);
            block(bctx, i, R, D, h, z);
            for (int64_t k = 0; k < n; k++) x[k] += z[k];
            break;
        case SN_PLACEMENT_POST_NORM: /* h = x, x = N_i(x + z) */
        case SN_PLACEMENT_DEEPNORM:  /* h = x, x = N_i(alpha x + z) */
            memcpy(h, x, bytes);
            block(bctx, i, R, D, h, z);
            for (int64_t k = 0; k < n; k++)
                t[k] = (kind == SN_PLACEMENT_DEEPNORM ? c : 1.0) * x[k] + z[k];
            NRM(i, 0, t, x);
            break;
        case SN_PLACEMENT_SIAMESE: /* u = N_post(x), h = N_in(u + N_pre(y)), x = u + z/c, y += z */
            NRM(i, 0, x, u);
            NRM(i, 1, y, t);
            for (int64_t k = 0; k < n; k++) t[k] += u[k];
            NRM(i, 2, t, h);
            block(bctx, i, R, D, h, z);
            for (int64_t k = 0; k < n; k++) {
                x[k] = u[k] + z[k] / c;
                y[k] = y[k] + z[k];
            }
            break;
        case SN_PLACEMENT_SIAMESE_PAPER: /* h = N_in(x + N_pre(y)), x = N_post(x + z/c), y += z */
            NRM(i, 1, y, t);
            for (int64_t k = 0; k < n; k++) t[k] += x[k];
            NRM(i, 2, t, h);
            block(bctx, i, R, D, h, z);
            for (int64_t k = 0; k < n; k++) {
                t[k] = x[k] + z[k] / c;
                y[k] = y[k] + z[k];
            }
            NRM(i, 0, t, x);
            break;
        case SN_PLACEMENT_SIAMESE_HYBRID_PRE: /* attention: h = c1 x + N_pre(y), x += z/c, y += z */
            NRM(i, 0, x, u);
            NRM(i, 1, y, t);
            for (int64_t k = 0; k < n; k++) h[k] = u[k] + t[k];
            block(bctx, i, R, D, h, z);
            for (int64_t k = 0; k < n; k++) {
                x[k] = x[k] + z[k] / c;
                y[k] = y[k] + z[k];
            }
            break;
        case SN_PLACEMENT_PERI_LN: /* h = N_in(x), x += N_out(z) */
            NRM(i, 0, x, h);
            block(bctx, i, R, D, h, z);
            NRM(i, 1, z, t);
            for (int64_t k = 0; k < n; k++) x[k] += t[k];
            break;
        case SN_PLACEMENT_HYBRIDNORM: /* attention: h = x, x += z; MLP: u = N(x), h = u, x = u + z */
            if (i % 2 == 0) {
                memcpy(h, x, bytes);
                block(bctx, i, R, D, h, z);
                for (int64_t k = 0; k < n; k++) x[k] += z[k];
            } else {
                NRM(i, 0, x, u);
                memcpy(h, u, bytes);
                block(bctx, i, R, D, h, z);
                for (int64_t k = 0; k < n; k++) x[k] = u[k] + z[k];
            }
            break;
        case SN_PLACEMENT_SPAN_NORM: /* x: the layer's input; u: the attention's a = N_i(x + z) */
            if (i % 2 == 0) memcpy(h, x, bytes);
            else memcpy(h, u, bytes);
            block(bctx, i, R, D, h, z);
            for (int64_t k = 0; k < n; k++) t[k] = h[k] + z[k];
            if (i % 2 == 0 && i < S - 1) { /* opens the layer: a = N_i(x + z) */
                NRM(i, 0, t, u);
            } else { /* closes it: x' = x + N_i(v + z) / c */
                NRM(i, 0, t, w);
                for (int64_t k = 0; k < n; k++) x[k] += w[k] / c;
            }
            break;
        case SN_PLACEMENT_HYPER_CONN: hc_sublayer(net, R, i, params, Hs, h, z, block, bctx); break;
        default: abort();
        }
        if (hs) memcpy(hs + (int64_t)i * n, h, bytes);
    }

    if (p == SN_PLACEMENT_HYPER_CONN) { /* out = N_f(sum_k H_k) */
        for (int64_t k = 0; k < n; k++) {
            t[k] = 0;
            for (int q = 0; q < net->hc_rate; q++) t[k] += Hs[q * n + k];
        }
        NRM(S, 0, t, w);
    } else if (net->nn[REF_ST(S)] == 3) { /* out = N_f(N_a(x_S) + N_b(y_S)) (paper: identities) */
        NRM(S, 0, x, u);
        NRM(S, 1, y, t);
        for (int64_t k = 0; k < n; k++) t[k] += u[k];
        NRM(S, 2, t, w);
    } else if (net->nn[REF_ST(S)] == 1) { /* out = N_f(x_S) */
        NRM(S, 0, x, w);
    } else { /* out = x_S */
        memcpy(w, x, bytes);
    }
#undef NRM
    for (int64_t r = 0; r < R; r++) memcpy(out + r * ldo, w + r * D, (size_t)D * sizeof(double));
    free(x), free(y), free(u), free(t), free(h), free(z), free(w), free(Hs);
}
