/* libFuzzer harness: the bf16 calls against their fp32 twins. Each input picks a primitive
 * (norm, fuse, merge, apply, split, forward or backward, or a placement-layer step), a width
 * (1..80, around every vector width), the rows, flags, a path and any bf16 bit patterns
 * (NaN payloads, infinities, subnormals, ties: the input's own bytes). Oracle: every element the
 * bf16 call writes is bitwise sn_bf16_from_f32 of what the fp32 call writes on the widened
 * inputs (the header's contract; NaNs only as NaNs), statistics and parameter gradients are the
 * fp32 call's bits,
 * and the conversions round-trip (round(widen(b)) = b, NaNs quieted). Buffers are exactly
 * sized, so AddressSanitizer sees any access past a view. */
#include "fz.h"

#define DMAX 80
#define RMAX 4

/* n bf16 values from the input: raw bit patterns, or tame values when tame */
static void fill(fz *f, sn_bf16 *b, float *w, int64_t n, int tame) {
    for (int64_t k = 0; k < n; k++) {
        b[k] = tame ? sn_bf16_from_f32(fz_value(f, 0)) : (sn_bf16)(fz_u8(f) << 8 | fz_u8(f));
        w[k] = sn_bf16_to_f32(b[k]);
    }
}

/* the same bits, or both NaN (a NaN's sign and payload depend on the order of the operations:
 * the fp32 calls take some rows in pairs, the bf16 ones one by one) */
static int same_bits(const float *a, const float *b, int64_t n) {
    for (int64_t k = 0; k < n; k++)
        if (memcmp(&a[k], &b[k], sizeof(float)) != 0 && !(isnan(a[k]) && isnan(b[k]))) return 0;
    return 1;
}

/* every element of b is the rounding of the fp32 result w; then w = b widened, so that both
 * sides hold the same values for the calls that read or accumulate into them next */
static void check_rounded(const sn_bf16 *b, float *w, int64_t n, const char *what) {
    for (int64_t k = 0; k < n; k++) {
        const int nans = (b[k] & 0x7fffu) > 0x7f80u && isnan(w[k]);
        CHECK_MSG(b[k] == sn_bf16_from_f32(w[k]) || nans,
                  "%s: element %lld is 0x%04x, round(%a) = 0x%04x", what, (long long)k, b[k],
                  (double)w[k], sn_bf16_from_f32(w[k]));
        w[k] = sn_bf16_to_f32(b[k]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz f = {data, size};
    const int op = fz_pick(&f, 7), tame = fz_pick(&f, 4) != 0;
    const sn_ctx *ctx = fz_ctx(fz_pick(&f, FZ_NCTX)); /* every path, and a parallel-for hook */
    static const int64_t widths[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 80};
    const int64_t D = widths[fz_pick(&f, 16)], R = 1 + fz_pick(&f, RMAX), n = R * D;
    const uint32_t flags = (uint32_t)fz_pick(&f, 4);
    sn_norm nm = {fz_pick(&f, 4), fz_pick(&f, 3), 0, 1e-5f};
    sn_fuse fu = {nm, {fz_pick(&f, 2), SN_AFFINE_SCALE_SHIFT, 0, 1e-5f}, nm};
    sn_bf16 *b[4], *o16[2];
    float *w[4], *o32[2];
    for (int k = 0; k < 4; k++) {
        b[k] = tu_xalloc((size_t)n * sizeof(sn_bf16));
        w[k] = tu_falloc(n);
        fill(&f, b[k], w[k], n, tame);
    }
    for (int k = 0; k < 2; k++) {
        o16[k] = tu_xalloc((size_t)n * sizeof(sn_bf16));
        o32[k] = tu_falloc(n);
        fill(&f, o16[k], o32[k], n, 1); /* accumulated into by some flags */
    }
    float p[6 * DMAX], g32[6 * DMAX], g16[6 * DMAX], s32[6 * RMAX], s16[6 * RMAX];
    for (int k = 0; k < 6 * DMAX; k++) p[k] = 1.0f + fz_value(&f, 0) / 8, g32[k] = g16[k] = 0;
    memset(s32, 0, sizeof s32), memset(s16, 0, sizeof s16);
    int64_t np = 0, spr = 0;
    const uint32_t acc = flags & SN_ACCUMULATE;
    sn_status a = SN_OK, c = SN_OK;
    switch (op) {
    case 0: /* norm forward and backward */
        sn_norm_query(&nm, D, &np, &spr);
        a = sn_norm_forward(ctx, &nm, R, D, w[0], D, p, o32[0], D, s32);
        c = sn_norm_forward_bf16(ctx, &nm, R, D, b[0], D, p, o16[0], D, s16);
        if (a == SN_OK && c == SN_OK) {
            check_rounded(o16[0], o32[0], n, "norm forward");
            a = sn_norm_backward(ctx, &nm, R, D, w[1], D, w[0], D, p, s32, o32[1], D, g32, acc);
            c = sn_norm_backward_bf16(ctx, &nm, R, D, b[1], D, b[0], D, p, s16, o16[1], D, g16,
                                      acc);
            check_rounded(o16[1], o32[1], n, "norm backward");
        }
        break;
    case 1:   /* fuse forward (u in out[0]) and backward (dx into out[0], dy into out[1]) */
    case 2: { /* merge */
        sn_fuse_query(&fu, D, &np, &spr);
        float *u32 = op == 1 ? o32[0] : NULL;
        sn_bf16 *u16 = op == 1 ? o16[0] : NULL;
        a = sn_fuse_forward(ctx, &fu, R, D, w[0], D, w[1], D, p, u32, D, o32[1], D, s32);
        c = sn_fuse_forward_bf16(ctx, &fu, R, D, b[0], D, b[1], D, p, u16, D, o16[1], D, s16);
        if (a != SN_OK || c != SN_OK) break;
        if (op == 1) check_rounded(o16[0], o32[0], n, "fuse forward u");
        check_rounded(o16[1], o32[1], n, "fuse forward h");
        const float *du32 = op == 1 ? w[3] : NULL;
        const sn_bf16 *du16 = op == 1 ? b[3] : NULL;
        a = sn_fuse_backward(ctx, &fu, R, D, w[2], D, du32, D, w[0], D, w[1], D, p, s32, o32[0], D,
                             o32[1], D, g32, flags);
        c = sn_fuse_backward_bf16(ctx, &fu, R, D, b[2], D, du16, D, b[0], D, b[1], D, p, s16,
                                  o16[0], D, o16[1], D, g16, flags);
        check_rounded(o16[0], o32[0], n, "fuse backward dx");
        check_rounded(o16[1], o32[1], n, "fuse backward dy");
        break;
    }
    case 3: /* apply forward and backward */
        a = sn_apply_forward(ctx, R, D, 1.7f, w[0], D, w[1], D, w[2], D, o32[0], D, o32[1], D);
        c = sn_apply_forward_bf16(ctx, R, D, 1.7f, b[0], D, b[1], D, b[2], D, o16[0], D, o16[1], D);
        check_rounded(o16[0], o32[0], n, "apply xo");
        check_rounded(o16[1], o32[1], n, "apply yo");
        a = sn_apply_backward(ctx, R, D, 3.0f, w[0], D, w[1], D, o32[0], D, acc);
        c = sn_apply_backward_bf16(ctx, R, D, 3.0f, b[0], D, b[1], D, o16[0], D, acc);
        check_rounded(o16[0], o32[0], n, "apply backward");
        break;
    case 4: /* split forward and backward */
        a = sn_split_forward(ctx, R, D, w[0], D, o32[0], D, o32[1], D);
        c = sn_split_forward_bf16(ctx, R, D, b[0], D, o16[0], D, o16[1], D);
        check_rounded(o16[0], o32[0], n, "split x");
        a = sn_split_backward(ctx, R, D, w[1], D, w[2], D, o32[1], D, acc);
        c = sn_split_backward_bf16(ctx, R, D, b[1], D, b[2], D, o16[1], D, acc);
        check_rounded(o16[1], o32[1], n, "split backward");
        break;
    case 5: /* conversions: round(widen(b)) = b except NaNs (quieted) */
        a = sn_from_bf16(ctx, R, D, b[0], D, o32[0], D);
        c = sn_to_bf16(ctx, R, D, o32[0], D, o16[0], D);
        for (int64_t k = 0; k < n; k++) {
            const int nan = (b[0][k] & 0x7fffu) > 0x7f80u;
            CHECK(o16[0][k] == (nan ? (sn_bf16)(b[0][k] | 0x40u) : b[0][k]));
        }
        break;
    default: { /* a SiameseNorm pass of two sub-layers, fp32 and bf16 layers from one input */
        sn_net n32, n16;
        if (sn_net_init(&n32, SN_PLACEMENT_SIAMESE, 2, D, SN_NORM_LAYERNORM, 1e-5f) != SN_OK) break;
        n16 = n32;
        n16.act_dtype = SN_DTYPE_BF16;
        int64_t a16, w16;
        sn_net_sizes(&n16, &np, &a16, &w16);
        float *acts = tu_falloc(R * a16), *work = tu_falloc(R * w16 + 1);
        float *params = tu_falloc(np + 1), *grads = tu_fzeros(np + 1);
        sn_net_init_params(&n16, params);
        const sn_net_pass ps = {R, params, acts, grads, work};
        CHECK_OK(sn_net_split_bf16(ctx, &n16, &ps, b[0], D));
        for (int i = 0; i < 2; i++) {
            CHECK_OK(sn_net_enter_bf16(ctx, &n16, &ps, i, o16[0], D));
            CHECK_OK(sn_net_exit_bf16(ctx, &n16, &ps, i, b[1 + i], D));
        }
        CHECK_OK(sn_net_merge_bf16(ctx, &n16, &ps, o16[1], D));
        CHECK_OK(sn_net_merge_backward_bf16(ctx, &n16, &ps, b[3], D));
        for (int i = 1; i >= 0; i--) {
            CHECK_OK(sn_net_exit_backward_bf16(ctx, &n16, &ps, i, o16[0], D, 0));
            CHECK_OK(sn_net_enter_backward_bf16(ctx, &n16, &ps, i, b[1 + i], D));
        }
        CHECK_OK(sn_net_split_backward_bf16(ctx, &n16, &ps, o16[1], D, 0));
        CHECK_STATUS(sn_net_split(ctx, &n16, &ps, w[0], D), SN_ERR_DTYPE);
        free(acts), free(work), free(params), free(grads);
        np = 0;
        break;
    }
    }
    CHECK_MSG(a == c, "op %d: fp32 status %d, bf16 status %d", op, a, c);
    CHECK(same_bits(g32, g16, np));
    CHECK(same_bits(s32, s16, R * spr < 6 * RMAX ? R * spr : 6 * RMAX));
    for (int k = 0; k < 4; k++) free(b[k]), free(w[k]);
    for (int k = 0; k < 2; k++) free(o16[k]), free(o32[k]);
    return 0;
}
