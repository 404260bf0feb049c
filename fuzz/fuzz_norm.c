/* libFuzzer harness: sn_norm_query, sn_norm_forward and sn_norm_backward with arbitrary kind,
 * affine, group, eps, R, D, strides, flags, NULL pointers, kernel paths / threading hook, and
 * (one input in four) every buffer placed at an arbitrary offset of one shared arena so views
 * may overlap. Oracle:
 *   - no crash, no out-of-bounds access (exactly-sized buffers under ASan), no UB (UBSan);
 *   - the status is SN_OK exactly when the arguments are valid by the header's rules, and
 *     otherwise one of the codes the invalid arguments call for;
 *   - on error no output changed (bitwise);
 *   - sn_norm_query's sizes equal the header's formulas;
 *   - tame inputs (finite, |x| <= 4, eps in [1e-6, 2]) give finite outputs and gradients. */
#include "fz.h"

#define ST(s) (1u << (s))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz f = {data, size};
    sn_norm n;
    n.kind = fz_pick(&f, 6) - (fz_u8(&f) == 255); /* 0..5, sometimes -1 */
    n.affine = fz_pick(&f, 4);
    static const int groups[] = {0, 0, 0, 1, 2, 3, 4, 8, 16, -1, 5, 7};
    n.group = groups[fz_pick(&f, 12)];
    int eps_ok, eps_tame;
    n.eps = fz_positive(&f, &eps_ok, &eps_tame);
    int64_t R = fz_pick(&f, 9) - (fz_u8(&f) == 255);
    int64_t D = fz_pick(&f, 67) - (fz_u8(&f) == 254);
    int64_t ld[4];
    for (int i = 0; i < 4; i++) {
        int d = fz_pick(&f, 8);
        ld[i] = D + (d == 7 ? -1 : d == 6 ? 3 : d == 5 ? 17 : 0);
    }
    uint32_t flags = fz_pick(&f, 5) == 4 ? fz_u32(&f) : (uint32_t)fz_pick(&f, 2);
    int nulls = fz_u8(&f) >= 250 ? fz_pick(&f, 8) : -1; /* which pointer to pass as NULL */
    int use_stats = fz_pick(&f, 4) != 0, use_dparams = fz_pick(&f, 4) != 0;
    int inplace = fz_pick(&f, 4) == 0, arena_mode = fz_pick(&f, 4) == 0;
    int wild = fz_pick(&f, 8) == 0;
    const sn_ctx *ctx = fz_ctx(fz_u8(&f));

    /* the header's rules */
    int kind_ok = n.kind >= 0 && n.kind <= 3;
    int stat_kind = n.kind == SN_NORM_LAYERNORM || n.kind == SN_NORM_RMSNORM;
    int affine_ok = (n.affine >= 0 && n.affine <= 2) || n.kind == SN_NORM_IDENTITY;
    int64_t W = n.group > 0 ? n.group : D;
    int group_ok = n.group >= 0 && (n.group == 0 || D <= 0 || D % n.group == 0);
    int has_params = kind_ok && n.kind != SN_NORM_IDENTITY && n.affine != SN_AFFINE_NONE;
    int64_t np = has_params && W > 0 ? (n.affine == SN_AFFINE_SCALE_SHIFT ? 2 * W : W) : 0;
    int64_t spr = W > 0 && D > 0 && kind_ok ? (n.kind == SN_NORM_LAYERNORM ? 2 * (D / W)
                                               : n.kind == SN_NORM_RMSNORM ? D / W
                                                                           : 0)
                                            : 0;
    unsigned must = 0, may = 0;
    if (!kind_ok || !affine_ok) must |= ST(SN_ERR_NORM);
    if (!group_ok) (stat_kind ? &must : &may)[0] |= ST(SN_ERR_GROUP);
    if (!eps_ok && stat_kind) must |= ST(SN_ERR_EPS);
    if (!eps_ok && !stat_kind) may |= ST(SN_ERR_EPS);
    if (n.group != 0 && !stat_kind) may |= ST(SN_ERR_GROUP) | ST(SN_ERR_NORM);

    /* sn_norm_query */
    int64_t qp = -7, qs = -7;
    sn_status qst = sn_norm_query(&n, D, &qp, &qs);
    unsigned qmust = must | (D <= 0 ? ST(SN_ERR_SHAPE) : 0u);
    if (qmust == 0) {
        CHECK_MSG(qst == SN_OK || (may & ST(qst)), "query status %d", (int)qst);
        if (qst == SN_OK)
            CHECK_MSG(qp == np && qs == spr, "query sizes %lld %lld, want %lld %lld", (long long)qp,
                      (long long)qs, (long long)np, (long long)spr);
    } else {
        CHECK_MSG(qst != SN_OK && ((qmust | may) & ST(qst)), "query status %d, must %#x", (int)qst,
                  qmust);
        CHECK_MSG(qp == -7 && qs == -7, "query wrote its outputs on error");
    }

    /* buffers: x, params, out, stats, dout, dx, dparams */
    int64_t Rp = R > 0 ? R : 1, Dp = D > 0 ? D : 1;
    int64_t sx = fz_span(Rp, Dp, ld[0] > 0 ? ld[0] : Dp),
            so = fz_span(Rp, Dp, ld[1] > 0 ? ld[1] : Dp);
    int64_t sdo = fz_span(Rp, Dp, ld[2] > 0 ? ld[2] : Dp),
            sdx = fz_span(Rp, Dp, ld[3] > 0 ? ld[3] : Dp);
    int64_t sp = np, sst = Rp * spr;
    int64_t spans[7] = {sx, sp, so, sst, sdo, sdx, sp};
    float *b[7], *arena = NULL;
    int64_t total = 0;
    for (int i = 0; i < 7; i++) total += spans[i];
    if (arena_mode) {
        arena = fz_buf(total, &f, wild);
        for (int i = 0; i < 7; i++) {
            int64_t room = total - spans[i] + 1;
            b[i] = arena + (int64_t)(fz_u32(&f) % (uint32_t)(room > 0 ? room : 1));
        }
    } else {
        for (int i = 0; i < 7; i++) b[i] = fz_buf(spans[i], &f, wild);
    }
    for (int64_t k = 0; k < sp && !arena_mode; k++) /* gamma, beta tame unless wild */
        b[1][k] = fz_value(&f, wild) * 0.5f;
    float *x = b[0], *params = b[1], *out = b[2], *stats = use_stats ? b[3] : NULL;
    float *dout = b[4], *dx = b[5], *dparams = use_dparams ? b[6] : NULL;
    if (inplace && !arena_mode) {
        out = x, ld[1] = ld[0], so = sx;
        dx = dout, ld[3] = ld[2], sdx = sdo;
    }
    if (nulls == 0) x = NULL;
    if (nulls == 1) params = NULL;
    if (nulls == 2) out = NULL;

    /* forward */
    unsigned fmust = must;
    if (R <= 0 || D <= 0) fmust |= ST(SN_ERR_SHAPE);
    if (D > 0 && (ld[0] < D || ld[1] < D)) fmust |= ST(SN_ERR_STRIDE);
    if (!x || !out || (!params && np > 0)) fmust |= ST(SN_ERR_NULL);
    fz_view fv[4] = {
        {x, sx, ld[0], 0}, {params, sp, 0, 0}, {out, so, ld[1], 1}, {stats, sst, 0, 1}};
    static const unsigned char fallow[8][8] = {{0, 0, 1}};
    if (fmust == 0 && fz_forbidden_overlap(fv, 4, fallow)) fmust |= ST(SN_ERR_ALIAS);
    else if (fz_forbidden_overlap(fv, 4, fallow)) may |= ST(SN_ERR_ALIAS);
    float *snap = tu_falloc(total + 1);
    float *snap_o = tu_falloc(so + sst + 1);
    if (arena_mode) memcpy(snap, arena, (size_t)total * 4);
    else {
        if (out) memcpy(snap_o, out, (size_t)so * 4);
        if (stats) memcpy(snap_o + so, stats, (size_t)sst * 4);
    }
    sn_status st = sn_norm_forward(ctx, &n, R, D, x, ld[0], params, out, ld[1], stats);
    if (fmust == 0) {
        CHECK_MSG(st == SN_OK || (may & ST(st)), "forward status %d (%s) on valid arguments",
                  (int)st, sn_status_string(st));
    } else {
        CHECK_MSG(st != SN_OK && ((fmust | may) & ST(st)), "forward status %d, must %#x", (int)st,
                  fmust);
        if (arena_mode)
            CHECK_MSG(memcmp(snap, arena, (size_t)total * 4) == 0, "forward error changed memory");
        else {
            CHECK_MSG(!out || memcmp(snap_o, out, (size_t)so * 4) == 0, "forward error wrote out");
            CHECK_MSG(!stats || memcmp(snap_o + so, stats, (size_t)sst * 4) == 0,
                      "forward error wrote stats");
        }
    }
    int tame = !wild && !arena_mode && eps_tame;
    if (st == SN_OK && tame) {
        for (int64_t r = 0; r < R; r++)
            CHECK_MSG(tu_all_finite(out + r * ld[1], D), "non-finite output, row %lld",
                      (long long)r);
        CHECK_MSG(!stats || tu_all_finite(stats, R * spr), "non-finite stats");
    }

    /* backward (with the forward's stats when it succeeded) */
    if (st == SN_OK && stats && !arena_mode && !inplace) {
        unsigned bmust = 0;
        if (flags & ~3u) bmust |= ST(SN_ERR_FLAGS);
        if (flags & 2u) may |= ST(SN_ERR_FLAGS);
        if (D > 0 && (ld[2] < D || ld[3] < D)) bmust |= ST(SN_ERR_STRIDE);
        float *snap_dx = tu_falloc(sdx + sp + 1);
        memcpy(snap_dx, dx, (size_t)sdx * 4);
        if (dparams) memcpy(snap_dx + sdx, dparams, (size_t)sp * 4);
        sn_status bst = sn_norm_backward(ctx, &n, R, D, dout, ld[2], x, ld[0], params, stats, dx,
                                         ld[3], dparams, flags);
        if (bmust == 0)
            CHECK_MSG(bst == SN_OK || (may & ST(bst)), "backward status %d on valid arguments",
                      (int)bst);
        else {
            CHECK_MSG(bst != SN_OK && ((bmust | may) & ST(bst)), "backward status %d", (int)bst);
            CHECK_MSG(memcmp(snap_dx, dx, (size_t)sdx * 4) == 0, "backward error wrote dx");
            CHECK_MSG(!dparams || memcmp(snap_dx + sdx, dparams, (size_t)sp * 4) == 0,
                      "backward error wrote dparams");
        }
        if (bst == SN_OK && tame) {
            for (int64_t r = 0; r < R; r++)
                CHECK_MSG(tu_all_finite(dx + r * ld[3], D), "non-finite dx, row %lld",
                          (long long)r);
            CHECK_MSG(!dparams || tu_all_finite(dparams, sp), "non-finite dparams");
        }
        free(snap_dx);
    }
    free(snap), free(snap_o);
    if (arena_mode) free(arena);
    else
        for (int i = 0; i < 7; i++) free(b[i]);
    return 0;
}
