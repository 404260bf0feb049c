/* The placement layer's layout (src/api/net_layout.h), which every pass call resolves its
 * stage through: sn_net_stage(i) moves over repeating pairs of sub-layers in O(1), and must give
 * exactly the stage that stepping sn_walk_step from the start through sub-layers 0 .. i gives
 * (every field: op, norms, parameter offset and count, the streams' slots, aux slot,
 * statistics plane, scale, open/close), the merge (i = S) and the split (i = -1) placed after
 * the stepped walk, and sn_net_resolve's sizes (n_params, slots, statistics, the largest stage,
 * the temporary) those of the stepped walk. For every placement and its variants
 * (Hyper-Connections n = 1 .. 8 static and dynamic, Mix-LN fractions on both sides of each
 * layer count, LayerNorm and RMSNorm, an input norm of another kind), at every S from 1 to 70
 * and at 127 .. 129, 255, 256, 1023 and 1024. Internal: links the static library. */
#include "net_layout.h"
#include "testutil.h"

static long g_stages;

static int same_stage(const stage *a, const stage *b) {
    int same = a->op == b->op && a->nn == b->nn && a->p == b->p && a->np == b->np &&
               a->aux == b->aux && a->st == b->st && a->open == b->open && a->close == b->close &&
               memcmp(&a->c, &b->c, sizeof a->c) == 0;
    for (int k = 0; k < a->nn && k < 3; k++)
        same &= memcmp(&a->n[k], &b->n[k], sizeof a->n[k]) == 0;
    for (int k = 0; k < SN_HC_MAX_RATE; k++) same &= a->in[k] == b->in[k] && a->out[k] == b->out[k];
    return same;
}

static void check_layout(const sn_net *net, const char *what) {
    netl L;
    if (sn_net_resolve(net, &L) != SN_OK) {
        CHECK_MSG(0, "%s S=%d: sn_net_resolve fails", what, net->n_sublayers);
        return;
    }
    sn_walk w;
    sn_walk_start(&L, &w);
    int bad = -2;
    for (int64_t i = 0; i < L.S; i++) {
        stage ref, got;
        sn_walk_step(&L, &w, &ref);
        ref.c = sn_net_scale_of(net, i);
        sn_net_stage(&L, i, &got);
        if (bad == -2 && !same_stage(&ref, &got)) bad = (int)i;
        g_stages++;
    }
    CHECK_MSG(bad == -2, "%s S=%d: sub-layer %d differs from the stepped walk's", what,
              net->n_sublayers, bad);
    stage m, sp;
    sn_net_stage(&L, L.S, &m);
    sn_net_stage(&L, -1, &sp);
    int ends =
        m.p == w.p && m.st == w.spr && sp.p == w.p + m.np && sp.st == w.spr + norms_spr(&m, L.D);
    for (int k = 0; k < SN_HC_MAX_RATE; k++) ends &= m.in[k] == w.cur[k];
    CHECK_MSG(ends, "%s S=%d: the merge or the split is not after the stepped walk", what,
              net->n_sublayers);
    const int64_t ms = norms_spr(&m, L.D), ss = norms_spr(&sp, L.D);
    int64_t max_spr = w.max_spr > ms ? w.max_spr : ms;
    if (ss > max_spr) max_spr = ss;
    CHECK_MSG(L.np == w.p + m.np + sp.np && L.nslots == w.slot && L.spr == w.spr + ms + ss &&
                  L.max_spr == max_spr && L.any_aux == w.any_aux,
              "%s S=%d: sizes differ from the stepped walk's (n_params %lld vs %lld, slots %lld "
              "vs %lld)",
              what, net->n_sublayers, (long long)L.np, (long long)(w.p + m.np + sp.np),
              (long long)L.nslots, (long long)w.slot);
}

static void check_depths(sn_net net, const char *what) {
    static const int32_t deep[] = {127, 128, 129, 255, 256, 1023, 1024};
    for (int32_t S = 1; S <= 70 + (int32_t)(sizeof deep / sizeof deep[0]); S++) {
        net.n_sublayers = S <= 70 ? S : deep[S - 71];
        check_layout(&net, what);
    }
}

int main(void) {
    const float fractions[] = {0.0f, 0.1f, 0.25f, 0.34f, 0.5f, 0.75f, 1.0f};
    for (int kind = 0; kind < 2; kind++) {
        const sn_norm_kind nk = kind ? SN_NORM_RMSNORM : SN_NORM_LAYERNORM;
        char what[96];
        for (int pl = 0; pl < SN_PLACEMENT_COUNT; pl++) {
            sn_net net;
            CHECK_OK(sn_net_init(&net, (sn_placement)pl, 4, 8, nk, 1e-5f));
            snprintf(what, sizeof what, "%s %s", sn_placement_name((sn_placement)pl),
                     kind ? "RMS" : "LN");
            check_depths(net, what);
            if (pl == SN_PLACEMENT_SIAMESE || pl == SN_PLACEMENT_SIAMESE_HYBRID_PRE) {
                net.input_norm.kind = kind ? SN_NORM_LAYERNORM : SN_NORM_RMSNORM;
                net.input_norm.affine = kind ? SN_AFFINE_SCALE_SHIFT : SN_AFFINE_SCALE;
                snprintf(what, sizeof what, "%s %s, other input norm",
                         sn_placement_name((sn_placement)pl), kind ? "RMS" : "LN");
                check_depths(net, what);
            }
            if (pl == SN_PLACEMENT_MIX_LN)
                for (size_t f = 0; f < sizeof fractions / sizeof fractions[0]; f++) {
                    net.mix_fraction = fractions[f];
                    snprintf(what, sizeof what, "mix_ln %s fraction %.2f", kind ? "RMS" : "LN",
                             (double)fractions[f]);
                    check_depths(net, what);
                }
            if (pl == SN_PLACEMENT_HYPER_CONN)
                for (int n = 1; n <= SN_HC_MAX_RATE; n++)
                    for (int dyn = 0; dyn < 2; dyn++) {
                        net.hc_rate = n;
                        net.hc_dynamic = (uint32_t)dyn;
                        snprintf(what, sizeof what, "hyper_connections %s n=%d %s",
                                 kind ? "RMS" : "LN", n, dyn ? "dynamic" : "static");
                        check_depths(net, what);
                    }
        }
    }
    printf("net_layout: %ld sub-layer stages compared with the stepped walk\n", g_stages);
    return tu_finish("net_layout");
}
