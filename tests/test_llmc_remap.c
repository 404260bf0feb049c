/* Test 'llmc-remap' (suite core): the installed header-only siamesenorm_llmc.h.
 *   1. every placement up to SN_PLACEMENT_COUNT, L = 1, 3, 5: sn_llmc_check(FROM) holds exactly
 *      when every llm.c row has an offset; then sn_llmc_gather puts each row at
 *      sn_llmc_offset (which is the gamma of the stage's input / final norm, + C for a bias),
 *      touches no other float, and sn_llmc_scatter gives the rows back; the 0.4 placements
 *      against an independent statement of which convert each way;
 *   2. errors: NULL arguments, tensor and row out of range, an odd number of sub-layers, an
 *      invalid net; nothing written on error. */
#include <stdlib.h>
#include <string.h>

#include "siamesenorm_llmc.h"
#include "testutil.h"

enum { C = 8 };

/* Which 0.4 placements take llm.c's norms (from) and are llm.c's model (to), for L layers; -1
 * for a placement this test does not know. Mix-LN (fraction 0.25) is Pre-Norm below 4 layers,
 * HybridNorm* (layer 0 Pre-Norm) with 1 layer. */
static int expect(int p, int L, int dir) {
    if (p >= 10) return -1;
    const int mix_pre = (int)(0.25f * (float)L) == 0;
    if (p == SN_PLACEMENT_HYBRIDNORM_STAR && L == 1) return 1;
    if (dir == SN_LLMC_TO)
        return p == SN_PLACEMENT_PRE_NORM || (p == SN_PLACEMENT_MIX_LN && mix_pre);
    return p == SN_PLACEMENT_PRE_NORM || p == SN_PLACEMENT_SIAMESE || p == SN_PLACEMENT_PERI_LN ||
           (p == SN_PLACEMENT_MIX_LN && mix_pre);
}

static void one(int p, int L) {
    const char *name = sn_placement_name((sn_placement)p);
    sn_net net;
    int64_t np;
    CHECK_OK(sn_net_init(&net, (sn_placement)p, 2 * L, C, SN_NORM_LAYERNORM, 1e-5f));
    CHECK_OK(sn_net_sizes(&net, &np, NULL, NULL));
    char why[512];
    const int from = sn_llmc_check(&net, SN_LLMC_FROM, why, sizeof why) == 0;
    const int to = sn_llmc_check(&net, SN_LLMC_TO, why, sizeof why) == 0;
    CHECK_MSG(expect(p, L, SN_LLMC_FROM) < 0 || from == expect(p, L, SN_LLMC_FROM),
              "%s L=%d: from %d", name, L, from);
    CHECK_MSG(expect(p, L, SN_LLMC_TO) < 0 || to == expect(p, L, SN_LLMC_TO), "%s L=%d: to %d (%s)",
              name, L, to, why);
    CHECK_MSG(!to || from, "%s: llm.c's model but cannot take its norms", name);
    if (!to) CHECK_MSG(why[0] != '\0', "%s: refused without a reason", name);
    char none = 'x'; /* n = 0: nothing is written, not even the terminator */
    CHECK_MSG(sn_llmc_check(&net, SN_LLMC_TO, &none, 0) == (to ? 0 : -1) && none == 'x',
              "%s: why[0] written with n = 0", name);

    /* every row: an offset exactly when the check passes */
    int all = 1;
    for (int t = 0; t < SN_LLMC_NLN; t++)
        for (int32_t l = 0; l < sn_llmc_rows(&net, t); l++) {
            int64_t off = -7;
            sn_status st = sn_llmc_offset(&net, t, l, &off);
            all &= st == SN_OK;
            if (st != SN_OK) {
                CHECK(off == -7);
                continue;
            }
            const int32_t stage = t >= SN_LLMC_LNFW ? 2 * L : 2 * l + (t >= SN_LLMC_LN2W);
            int32_t j;
            int64_t gamma;
            sn_norm nm;
            CHECK_OK(sn_net_find_norm(&net, stage,
                                      t >= SN_LLMC_LNFW ? SN_ROLE_FINAL : SN_ROLE_INPUT, &j));
            CHECK_OK(sn_net_norm_at(&net, stage, j, &nm, &gamma));
            CHECK(nm.kind == SN_NORM_LAYERNORM && nm.affine == SN_AFFINE_SCALE_SHIFT);
            CHECK_MSG(off == gamma + (t % 2 ? C : 0), "%s: %s row %d at %lld", name,
                      sn_llmc_tensor_name(t), l, (long long)off);
        }
    CHECK_MSG(all == from, "%s L=%d: check says %d, offsets say %d", name, L, from, all);

    /* gather and scatter */
    float *src = tu_falloc(4 * L * C + 2 * C), *dst = tu_falloc(4 * L * C + 2 * C);
    float *block = tu_falloc(np), *canary = tu_falloc(np);
    for (int k = 0; k < 4 * L * C + 2 * C; k++) src[k] = (float)k + 0.5f, dst[k] = -1.0f;
    tu_canary_fill(block, np);
    memcpy(canary, block, (size_t)np * sizeof(float));
    const float *in[SN_LLMC_NLN] = {
        src, src + L * C, src + 2 * L * C, src + 3 * L * C, src + 4 * L * C, src + 4 * L * C + C};
    float *out[SN_LLMC_NLN] = {
        dst, dst + L * C, dst + 2 * L * C, dst + 3 * L * C, dst + 4 * L * C, dst + 4 * L * C + C};
    sn_status st = sn_llmc_gather(&net, in, block);
    CHECK_MSG((st == SN_OK) == from, "%s: gather %d", name, st);
    if (st != SN_OK) {
        CHECK_MSG(memcmp(block, canary, (size_t)np * sizeof(float)) == 0,
                  "%s: a refused gather wrote", name);
    } else {
        char *mine = calloc((size_t)np + 1, 1);
        for (int t = 0; t < SN_LLMC_NLN; t++)
            for (int32_t l = 0; l < sn_llmc_rows(&net, t); l++) {
                int64_t off = 0;
                CHECK_OK(sn_llmc_offset(&net, t, l, &off));
                CHECK(memcmp(block + off, in[t] + l * C, C * sizeof(float)) == 0);
                memset(mine + off, 1, C);
            }
        for (int64_t k = 0; k < np; k++)
            if (!mine[k])
                CHECK_MSG(memcmp(block + k, canary + k, 4) == 0, "%s: float %lld touched", name,
                          (long long)k);
        free(mine);
        CHECK_OK(sn_llmc_scatter(&net, block, out));
        CHECK_MSG(memcmp(src, dst, (4 * L * C + 2 * C) * sizeof(float)) == 0,
                  "%s: scatter(gather(x)) != x", name);
    }
    free(src);
    free(dst);
    free(block);
    free(canary);
}

static void errors(void) {
    sn_net net;
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_PRE_NORM, 4, C, SN_NORM_LAYERNORM, 1e-5f));
    int64_t off = -7;
    CHECK_STATUS(sn_llmc_offset(NULL, 0, 0, &off), SN_ERR_NULL);
    CHECK_STATUS(sn_llmc_offset(&net, 0, 0, NULL), SN_ERR_NULL);
    CHECK_STATUS(sn_llmc_offset(&net, -1, 0, &off), SN_ERR_INDEX);
    CHECK_STATUS(sn_llmc_offset(&net, SN_LLMC_NLN, 0, &off), SN_ERR_INDEX);
    CHECK_STATUS(sn_llmc_offset(&net, SN_LLMC_LN1W, 2, &off), SN_ERR_INDEX);
    CHECK_STATUS(sn_llmc_offset(&net, SN_LLMC_LNFW, 1, &off), SN_ERR_INDEX);
    CHECK_STATUS(sn_llmc_offset(&net, SN_LLMC_LN1W, -1, &off), SN_ERR_INDEX);
    CHECK(off == -7);
    sn_net odd = net;
    odd.n_sublayers = 3;
    CHECK_STATUS(sn_llmc_offset(&odd, SN_LLMC_LNFW, 0, &off), SN_ERR_SHAPE);
    CHECK(sn_llmc_check(&odd, SN_LLMC_FROM, NULL, 0) == -1);
    sn_net bad = net;
    bad.d = 0;
    CHECK_STATUS(sn_llmc_offset(&bad, SN_LLMC_LN1W, 0, &off), SN_ERR_SHAPE);
    CHECK(sn_llmc_check(NULL, SN_LLMC_FROM, NULL, 0) == -1);
    float x[4 * 2 * C + 2 * C], block[4 * 2 * C + 2 * C];
    memset(x, 0, sizeof x);
    tu_canary_fill(block, 4 * 2 * C + 2 * C);
    float keep[4 * 2 * C + 2 * C];
    memcpy(keep, block, sizeof keep);
    const float *in[SN_LLMC_NLN] = {x, x, x, NULL, x, x}; /* one missing: nothing written */
    CHECK_STATUS(sn_llmc_gather(&net, in, block), SN_ERR_NULL);
    CHECK_STATUS(sn_llmc_gather(&net, NULL, block), SN_ERR_NULL);
    CHECK_STATUS(sn_llmc_gather(NULL, in, block), SN_ERR_NULL);
    CHECK(memcmp(block, keep, sizeof keep) == 0);
    float *out[SN_LLMC_NLN] = {x, x, x, x, x, NULL};
    CHECK_STATUS(sn_llmc_scatter(&net, block, out), SN_ERR_NULL);
    CHECK_STATUS(sn_llmc_scatter(&net, NULL, out), SN_ERR_NULL);
    for (size_t k = 0; k < sizeof x / sizeof x[0]; k++) CHECK(x[k] == 0.0f);
    CHECK(strcmp(sn_llmc_tensor_name(SN_LLMC_LNFB), "lnfb") == 0);
    CHECK(strcmp(sn_llmc_tensor_name(99), "?") == 0);
}

int main(void) {
    for (int p = 0; p < SN_PLACEMENT_COUNT; p++)
        for (int L = 1; L <= 5; L += 2) one(p, L);
    errors();
    return tu_finish("llmc-remap");
}
