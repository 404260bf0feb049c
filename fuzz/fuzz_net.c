/* libFuzzer harness: the placement layer (all 10 placements and invalid ones, S, D, norm kind,
 * eps, input norm, scale rule with explicit scales, Mix-LN fraction, flags, reserved words),
 * then a whole training pass with exactly-sized buffers, plus sn_apply_forward with an arbitrary
 * c. Oracle:
 *   - no crash / out-of-bounds / UB; sn_net_check's verdict equals the header's rules (with
 *     rules about fields a placement ignores left to the library), sn_net_init leaves its
 *     output unchanged on error;
 *   - every norm sn_net_norm_at reports lies inside the parameter block;
 *   - for a valid description every call of the pass returns SN_OK;
 *   - tame inputs (|e| <= 4, eps >= 1e-6, explicit scales in [0.25, 8]) give a finite
 *     forward (block inputs and output); with S <= 2 and eps >= 1e-3 also finite gradients;
 *   - the same pass through the reverse-order parallel-for hook or 1 thread of the same path
 *     gives bitwise-identical results (determinism). */
#include "fz.h"

#define ST(s) (1u << (s))

static void block(int64_t n, const float *h, float *z) {
    for (int64_t k = 0; k < n; k++) z[k] = 0.5f * tanhf(h[k]) + 0.1f * h[k];
}
static void block_bwd(int64_t n, const float *h, const float *dz, float *dh) {
    for (int64_t k = 0; k < n; k++) {
        float t = tanhf(h[k]);
        dh[k] = dz[k] * (0.5f * (1 - t * t) + 0.1f);
    }
}

typedef struct bufs {
    float *params, *grads, *acts, *work, *h, *z, *out, *dout, *dz, *dh, *de;
} bufs;

static sn_status pass(const sn_ctx *ctx, const sn_net *net, int64_t R, const float *e, bufs *b,
                      int64_t np) {
    int64_t D = net->d, RD = R * D;
    int S = net->n_sublayers;
    sn_status s;
    memset(b->grads, 0, (size_t)np * 4);
#define T(call)                                                                                    \
    if ((s = (call)) != SN_OK) return s
    const sn_net_pass bufs = {R, b->params, b->acts, b->grads, b->work};
    T(sn_net_split(ctx, net, &bufs, e, D));
    for (int i = 0; i < S; i++) {
        T(sn_net_enter(ctx, net, &bufs, i, b->h + i * RD, D));
        block(RD, b->h + i * RD, b->z);
        T(sn_net_exit(ctx, net, &bufs, i, b->z, D));
    }
    T(sn_net_merge(ctx, net, &bufs, b->out, D));
    T(sn_net_merge_backward(ctx, net, &bufs, b->dout, D));
    for (int i = S - 1; i >= 0; i--) {
        T(sn_net_exit_backward(ctx, net, &bufs, i, b->dz, D, 0));
        block_bwd(RD, b->h + i * RD, b->dz, b->dh);
        T(sn_net_enter_backward(ctx, net, &bufs, i, b->dh, D));
    }
    T(sn_net_split_backward(ctx, net, &bufs, b->de, D, 0));
#undef T
    return SN_OK;
}

static void apply_case(fz *f) {
    int c_ok, c_tame;
    float c = fz_positive(f, &c_ok, &c_tame);
    int64_t R = fz_pick(f, 5), D = fz_pick(f, 40);
    int64_t n = R * D > 0 ? R * D : 1;
    float *z = fz_buf(n, f, 0), *u = fz_buf(n, f, 0), *y = fz_buf(n, f, 0);
    float *xo = fz_buf(n, f, 0), *yo = fz_buf(n, f, 0), *snap = fz_buf(n, f, 0);
    int inplace = fz_pick(f, 2);
    float *xo_ = inplace ? u : xo, *yo_ = inplace ? y : yo;
    memcpy(snap, xo_, (size_t)n * 4);
    sn_status s = sn_apply_forward(fz_ctx(fz_u8(f)), R, D, c, z, D, u, D, y, D, xo_, D, yo_, D);
    unsigned must = (R <= 0 || D <= 0 ? ST(SN_ERR_SHAPE) : 0u) | (c_ok ? 0u : ST(SN_ERR_SCALE));
    if (must) {
        CHECK_MSG(s != SN_OK && (must & ST(s)), "apply status %d, c %g", (int)s, (double)c);
        CHECK_MSG(memcmp(snap, xo_, (size_t)n * 4) == 0, "apply error wrote xo");
    } else {
        CHECK_MSG(s == SN_OK, "apply status %d on valid arguments (c %g)", (int)s, (double)c);
        if (c_tame || c >= 1e-6f)
            CHECK_MSG(tu_all_finite(xo_, R * D) && tu_all_finite(yo_, R * D), "apply not finite");
    }
    free(z), free(u), free(y), free(xo), free(yo), free(snap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz f = {data, size};
    if (fz_pick(&f, 8) == 0) {
        apply_case(&f);
        return 0;
    }
    int pl = fz_pick(&f, 12) - (fz_u8(&f) == 255); /* -1 .. 11: 10 valid */
    int S = fz_pick(&f, 7) - (fz_u8(&f) == 255);   /* -1 .. 6 */
    int64_t D = fz_pick(&f, 33) - (fz_u8(&f) == 255);
    int kind = fz_pick(&f, 5);
    int eps_ok, eps_tame;
    float eps = fz_positive(&f, &eps_ok, &eps_tame);
    int64_t R = 1 + fz_pick(&f, 5);
    const sn_ctx *ctx = fz_ctx(fz_u8(&f));

    sn_net net;
    memset(&net, 0xA5, sizeof net);
    sn_net before = net;
    sn_status ist = sn_net_init(&net, (sn_placement)pl, S, D, (sn_norm_kind)kind, eps);
    unsigned must = 0, may = 0;
    if (pl < 0 || pl >= SN_PLACEMENT_COUNT) must |= ST(SN_ERR_PLACEMENT);
    if (S < 1 || D < 1) must |= ST(SN_ERR_SHAPE);
    if (kind > 3) must |= ST(SN_ERR_NORM);
    if (kind >= 2)
        may |= ST(SN_ERR_NORM); /* identity / scale as the network's norm: library's call */
    if (!eps_ok && kind < 2) must |= ST(SN_ERR_EPS);
    if (!eps_ok && kind >= 2) may |= ST(SN_ERR_EPS);
    if (must) {
        CHECK_MSG(ist != SN_OK && ((must | may) & ST(ist)), "sn_net_init status %d, must %#x",
                  (int)ist, must);
        CHECK_MSG(memcmp(&net, &before, sizeof net) == 0, "sn_net_init changed *net on error");
        return 0;
    }
    CHECK_MSG(ist == SN_OK || (may & ST(ist)), "sn_net_init status %d on valid arguments",
              (int)ist);
    if (ist != SN_OK) return 0;
    CHECK_MSG(sn_net_check(&net) == SN_OK, "sn_net_init's result fails sn_net_check");

    /* mutate the description */
    int uses_scales = pl == SN_PLACEMENT_SIAMESE || pl == SN_PLACEMENT_SIAMESE_PAPER ||
                      pl == SN_PLACEMENT_SIAMESE_HYBRID_PRE || pl == SN_PLACEMENT_DEEPNORM;
    int siamese = uses_scales && pl != SN_PLACEMENT_DEEPNORM;
    float scales[8];
    int scales_tame = 1;
    unsigned cmust = 0, cmay = 0;
    int m = fz_pick(&f, 10);
    if (m == 1) {
        net.scale_rule = fz_pick(&f, 4);
        if (net.scale_rule == 3) (uses_scales ? &cmust : &cmay)[0] |= ST(SN_ERR_CONFIG);
        if (net.scale_rule == SN_SCALE_EXPLICIT) {
            if (fz_pick(&f, 6) == 0) {
                (uses_scales ? &cmust : &cmay)[0] |= ST(SN_ERR_SCALE);
                cmay |= ST(SN_ERR_NULL);
            } else {
                net.scales = scales;
                for (int i = 0; i < S; i++) {
                    int ok, tame;
                    scales[i] = fz_positive(&f, &ok, &tame);
                    if (fz_pick(&f, 2))
                        scales[i] = 0.25f + (float)fz_u8(&f) / 32.0f, ok = 1, tame = 1;
                    if (!ok) (uses_scales ? &cmust : &cmay)[0] |= ST(SN_ERR_SCALE);
                    scales_tame &= tame || (scales[i] >= 0.25f && scales[i] <= 8.0f);
                }
            }
        }
    } else if (m == 2) {
        net.scales = scales, scales[0] = 1.0f;
        (uses_scales ? &cmust : &cmay)[0] |= ST(SN_ERR_CONFIG);
    } else if (m == 3) {
        net.flags = 1u << fz_pick(&f, 32);
        cmust |= ST(SN_ERR_CONFIG);
    } else if (m == 4) {
        if (fz_pick(&f, 2)) net.act_dtype = SN_DTYPE_COUNT;
        else net.reserved[fz_pick(&f, 6)] = 1;
        cmust |= ST(SN_ERR_CONFIG);
    } else if (m == 5) {
        static const float fr[] = {0.0f, 0.5f, 1.0f, -0.1f, 1.5f, NAN, 0.25f};
        net.mix_fraction = fr[fz_pick(&f, 7)];
        int ok = pl == SN_PLACEMENT_MIX_LN ? net.mix_fraction >= 0 && net.mix_fraction <= 1
                                           : net.mix_fraction == 0.0f;
        if (!ok) cmust |= ST(SN_ERR_CONFIG);
    } else if (m == 6 && siamese) {
        net.input_norm.kind = fz_pick(&f, 2) ? SN_NORM_IDENTITY : net.input_norm.kind;
        net.input_norm.affine = fz_pick(&f, 2) ? SN_AFFINE_NONE : net.input_norm.affine;
    } else if (m == 7) {
        net.norm.group = fz_pick(&f, 3);
        if (net.norm.group) cmust |= ST(SN_ERR_GROUP), cmay |= ST(SN_ERR_NORM);
    }
    sn_status cst = sn_net_check(&net);
    if (cmust)
        CHECK_MSG(cst != SN_OK && ((cmust | cmay) & ST(cst)), "sn_net_check %d, must %#x (m %d)",
                  (int)cst, cmust, m);
    else
        CHECK_MSG(cst == SN_OK || (cmay & ST(cst)), "sn_net_check %d on a valid net (m %d)",
                  (int)cst, m);
    if (cst != SN_OK) return 0;

    int64_t np = -1, apr = -1, wpr = -1;
    CHECK_MSG(sn_net_sizes(&net, &np, &apr, &wpr) == SN_OK && np >= 0 && apr >= D && wpr >= D,
              "sn_net_sizes");
    for (int i = -1; i <= S; i++)
        for (int j = 0; j < 8; j++) {
            sn_norm nn;
            int64_t off = -1, nparams = 0;
            sn_status s = sn_net_norm_at(&net, i, j, &nn, &off);
            if (s == SN_ERR_INDEX) break;
            CHECK_MSG(s == SN_OK, "sn_net_norm_at(%d, %d) = %d", i, j, (int)s);
            CHECK_MSG(sn_norm_query(&nn, D, &nparams, NULL) == SN_OK, "norm_at gave a bad norm");
            CHECK_MSG(off >= 0 && off + nparams <= np, "norm (%d, %d) at %lld + %lld outside %lld",
                      i, j, (long long)off, (long long)nparams, (long long)np);
        }

    int64_t RD = R * D;
    bufs b, b2;
    float *e = fz_buf(RD, &f, 0);
    float **pb = (float **)&b, **pb2 = (float **)&b2;
    int64_t sizes[11] = {np, np, R * apr, R * wpr, S * RD, RD, RD, RD, RD, RD, RD};
    for (int i = 0; i < 11; i++) {
        pb[i] = fz_buf(sizes[i], &f, 0);
        pb2[i] = fz_buf(sizes[i], &f, 0);
    }
    sn_net_init_params(&net, b.params);
    for (int64_t k = 0; k < np; k++)
        b.params[k] += fz_value(&f, 0) / 8.0f; /* [-0.5, 0.5] around the defaults */
    memcpy(b2.params, b.params, (size_t)np * 4);
    memcpy(b2.dout, b.dout, (size_t)RD * 4);
    sn_status s = pass(ctx, &net, R, e, &b, np);
    CHECK_MSG(s == SN_OK, "pass status %d (%s) on a valid net", (int)s, sn_status_string(s));
    int tame = eps_tame && scales_tame;
    if (tame) {
        CHECK_MSG(tu_all_finite(b.out, RD) && tu_all_finite(b.h, S * RD), "non-finite forward");
        if (S <= 2 && eps >= 1e-3f)
            CHECK_MSG(tu_all_finite(b.de, RD) && tu_all_finite(b.grads, np),
                      "non-finite gradients");
    }
    /* determinism: the same path through the hook (ctx 4 is the default path + hook) or NULL */
    const sn_ctx *other = ctx == fz_ctx(0) ? fz_ctx(4) : ctx == fz_ctx(4) ? fz_ctx(0) : NULL;
    if (other || ctx == NULL) {
        s = pass(other, &net, R, e, &b2, np);
        CHECK_MSG(s == SN_OK, "second pass status %d", (int)s);
        CHECK_MSG(memcmp(b.out, b2.out, (size_t)RD * 4) == 0 &&
                      memcmp(b.de, b2.de, (size_t)RD * 4) == 0 &&
                      memcmp(b.grads, b2.grads, (size_t)np * 4) == 0,
                  "NULL context and the parallel-for hook disagree");
    }
    free(e);
    for (int i = 0; i < 11; i++) free(pb[i]), free(pb2[i]);
    return 0;
}
