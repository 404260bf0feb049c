/* The inference forward (sn_net_infer_*) against the training forward: for every placement, on
 * every kernel path of this CPU, widths that exercise each kernel's tails, strided and
 * unaligned-by-a-row views, with GroupNorm-free LayerNorm and RMSNorm, the block inputs h_i and
 * the output are bitwise the same; nothing outside R * state_per_row floats is written; the
 * state does not grow with S. Also the placement names: sn_placement_name and
 * sn_placement_from_name round-trip every placement and reject what they must. */
#include "block.h"

#include <string.h>

#define GUARD 64

/* Training forward then inference forward of one network; compares h_i and out bitwise. */
/* Hyper-Connections' rate and mode for compare (0: sn_net_init's n = 4, dynamic) */
static int g_hc_rate, g_hc_static;

static void compare(const sn_ctx *ctx, sn_placement pl, sn_norm_kind kind, int S, int64_t R,
                    int64_t D, int64_t ld, const char *path) {
    sn_net net;
    CHECK_OK(sn_net_init(&net, pl, S, D, kind, 1e-5f));
    if (pl == SN_PLACEMENT_HYPER_CONN && g_hc_rate)
        net.hc_rate = g_hc_rate, net.hc_dynamic = (uint32_t)!g_hc_static;
    int64_t np, apr, spr;
    CHECK_OK(sn_net_sizes(&net, &np, &apr, NULL));
    CHECK_OK(sn_net_infer_sizes(&net, &spr));
    tu_rng g = {0x1F0 + (uint64_t)pl * 131 + (uint64_t)D};
    float *params = tu_falloc(np + 1), *acts = tu_falloc(R * apr);
    float *state = tu_falloc(R * spr + GUARD), *e = tu_falloc(R * ld), *z = tu_falloc(R * ld);
    float *h1 = tu_falloc((int64_t)S * R * ld), *h2 = tu_falloc(R * ld);
    float *o1 = tu_falloc(R * ld), *o2 = tu_falloc(R * ld);
    CHECK_OK(sn_net_init_params(&net, params));
    for (int64_t k = 0; k < np; k++) params[k] += (float)tu_unif(&g, -0.3, 0.3);
    tu_fill_view(&g, e, R, D, ld, -2.0, 2.0);
    tu_canary_fill(state, R * spr + GUARD);
    blk b;
    blk_init(&b, S, D, 77 + (uint64_t)D);

    const sn_net_pass pass = {.rows = R, .params = params, .acts = acts};
    CHECK_OK(sn_net_split(ctx, &net, &pass, e, ld));
    for (int i = 0; i < S; i++) {
        float *h = h1 + (int64_t)i * R * ld;
        CHECK_OK(sn_net_enter(ctx, &net, &pass, i, h, ld));
        blk_fwd_f(&b, i, R, h, ld, z, ld);
        CHECK_OK(sn_net_exit(ctx, &net, &pass, i, z, ld));
    }
    CHECK_OK(sn_net_merge(ctx, &net, &pass, o1, ld));

    const sn_net_infer inf = {.rows = R, .params = params, .state = state};
    CHECK_OK(sn_net_infer_split(ctx, &net, &inf, e, ld));
    int same_h = 1;
    for (int i = 0; i < S; i++) {
        CHECK_OK(sn_net_infer_enter(ctx, &net, &inf, i, h2, ld));
        for (int64_t r = 0; r < R; r++)
            same_h &=
                memcmp(h2 + r * ld, h1 + ((int64_t)i * R + r) * ld, (size_t)D * sizeof(float)) == 0;
        blk_fwd_f(&b, i, R, h2, ld, z, ld);
        CHECK_OK(sn_net_infer_exit(ctx, &net, &inf, i, z, ld));
    }
    CHECK_OK(sn_net_infer_merge(ctx, &net, &inf, o2, ld));
    int same_o = 1;
    for (int64_t r = 0; r < R; r++)
        same_o &= memcmp(o1 + r * ld, o2 + r * ld, (size_t)D * sizeof(float)) == 0;
    CHECK_MSG(same_h && same_o, "%s %s %s S=%d R=%lld D=%lld ld=%lld: inference %s differs", path,
              sn_placement_name(pl), kind == SN_NORM_LAYERNORM ? "LN" : "RMS", S, (long long)R,
              (long long)D, (long long)ld, same_h ? "out" : "h");
    CHECK_MSG(tu_guard_damage(state, R * spr, R * spr + GUARD) == 0,
              "%s %s D=%lld: wrote past the state (R * state_per_row)", path, sn_placement_name(pl),
              (long long)D);
    free(params), free(acts), free(state), free(e), free(z), free(h1), free(h2), free(o1);
    free(o2), free(b.Wf), free(b.Wd);
}

/* state_per_row: fixed in S, and as the header states it for two placements. */
static void sizes(void) {
    for (int pl = 0; pl < SN_PLACEMENT_COUNT; pl++) {
        sn_net a, b;
        int64_t sa, sb;
        CHECK_OK(sn_net_init(&a, (sn_placement)pl, 4, 24, SN_NORM_LAYERNORM, 1e-5f));
        CHECK_OK(sn_net_init(&b, (sn_placement)pl, 64, 24, SN_NORM_LAYERNORM, 1e-5f));
        CHECK_OK(sn_net_infer_sizes(&a, &sa));
        CHECK_OK(sn_net_infer_sizes(&b, &sb));
        /* Mix-LN's Post-Norm layers need the temporary only when there are some: floor(L/4) */
        CHECK_MSG(sa == sb || pl == SN_PLACEMENT_MIX_LN, "%s: state grows with S (%lld, %lld)",
                  sn_placement_name((sn_placement)pl), (long long)sa, (long long)sb);
    }
    sn_net n;
    int64_t s;
    CHECK_OK(sn_net_init(&n, SN_PLACEMENT_PRE_NORM, 12, 100, SN_NORM_LAYERNORM, 1e-5f));
    CHECK_OK(sn_net_infer_sizes(&n, &s));
    CHECK_MSG(s == 2 * 100 + 2, "Pre-Norm state %lld, want 2D + 2", (long long)s);
    CHECK_OK(sn_net_init(&n, SN_PLACEMENT_SIAMESE, 12, 100, SN_NORM_LAYERNORM, 1e-5f));
    CHECK_OK(sn_net_infer_sizes(&n, &s));
    CHECK_MSG(s == 3 * 100 + 6, "SiameseNorm state %lld, want 3D + 6", (long long)s);
    CHECK_OK(sn_net_init(&n, SN_PLACEMENT_PERI_LN, 12, 100, SN_NORM_LAYERNORM, 1e-5f));
    CHECK_OK(sn_net_infer_sizes(&n, &s));
    CHECK_MSG(s == 2 * 100 + 4, "Peri-LN state %lld, want 2D + 4 (z is normalised in place)",
              (long long)s);
}

static void names(void) {
    for (int pl = 0; pl < SN_PLACEMENT_COUNT; pl++) {
        const char *name = sn_placement_name((sn_placement)pl);
        sn_placement back = (sn_placement)-1;
        CHECK_MSG(name && sn_placement_from_name(name, &back) == SN_OK && (int)back == pl,
                  "placement %d: name %s does not round-trip", pl, name ? name : "(null)");
        for (const char *c = name ? name : ""; *c; c++)
            CHECK_MSG((*c >= 'a' && *c <= 'z') || *c == '_', "name %s: not lower_snake", name);
    }
    CHECK(sn_placement_name((sn_placement)SN_PLACEMENT_COUNT) == NULL);
    CHECK(sn_placement_name((sn_placement)-1) == NULL);
    sn_placement p = SN_PLACEMENT_MIX_LN;
    CHECK_STATUS(sn_placement_from_name("pre", &p), SN_ERR_PLACEMENT);
    CHECK_STATUS(sn_placement_from_name("Pre_Norm", &p), SN_ERR_PLACEMENT);
    CHECK_STATUS(sn_placement_from_name("", &p), SN_ERR_PLACEMENT);
    CHECK(p == SN_PLACEMENT_MIX_LN);
    CHECK_STATUS(sn_placement_from_name(NULL, &p), SN_ERR_NULL);
    CHECK_STATUS(sn_placement_from_name("siamese", NULL), SN_ERR_NULL);
}

int main(void) {
    const int64_t widths[] = {1, 7, 24, 64, 100};
    const sn_norm_kind kinds[] = {SN_NORM_LAYERNORM, SN_NORM_RMSNORM};
    for (int isa = SN_ISA_SCALAR; isa <= SN_ISA_AVX512; isa++) {
        sn_ctx *ctx = tu_isa_ctx(isa);
        if (!ctx) continue;
        printf("kernel path %s\n", sn_isa_name((sn_isa)isa));
        for (int pl = 0; pl < SN_PLACEMENT_COUNT; pl++)
            for (int w = 0; w < 5; w++)
                for (int k = 0; k < 2; k++) {
                    const int64_t D = widths[w];
                    /* S = 8 has Mix-LN Post-Norm layers; ld > D: strided views */
                    compare(ctx, (sn_placement)pl, kinds[k], 8, 5, D, D + (w % 2) * 3,
                            sn_isa_name((sn_isa)isa));
                }
        /* Hyper-Connections at other rates, static and dynamic */
        static const int rates[] = {1, 2, 3, 8};
        for (int q = 0; q < 4; q++)
            for (g_hc_static = 0; g_hc_static < 2; g_hc_static++) {
                g_hc_rate = rates[q];
                compare(ctx, SN_PLACEMENT_HYPER_CONN, kinds[q % 2], 7, 5, 24, 27,
                        sn_isa_name((sn_isa)isa));
            }
        g_hc_rate = 0;
        /* threads split the rows: the same bits */
        CHECK_OK(sn_ctx_set_threads(ctx, 2));
        compare(ctx, SN_PLACEMENT_SIAMESE, SN_NORM_LAYERNORM, 6, 300, 64, 64, "threads");
        sn_ctx_destroy(ctx);
    }
    sizes();
    names();
    return tu_finish("test_infer");
}
