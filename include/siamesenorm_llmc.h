/*
 * siamesenorm_llmc.h — llm.c's LayerNorm tensors <-> a libsiamesenorm norm block, in memory.
 *
 * Header-only (static inline functions on top of siamesenorm.h's role calls; nothing to link
 * beyond libsiamesenorm), installed beside siamesenorm.h. For ports of llm.c (karpathy/llm.c)
 * that load weights themselves or compare with llm.c's reference state (test_gpt2.c's
 * gpt2_124M_debug_state.bin), and for sn-llmc-convert, which uses it for its files.
 *
 * llm.c's GPT-2 keeps six LayerNorm tensors among its 16 parameter tensors: ln1w, ln1b (L x C,
 * row l: layer l's norm before attention), ln2w, ln2b (L x C: before the MLP) and lnfw, lnfb
 * (C: the final norm). A net of S = 2L sub-layers and width D = C keeps every norm in one block
 * (sn_net_sizes' n_params floats; gamma then beta per norm). Through the roles:
 *   ln1 row l  -> the SN_ROLE_INPUT norm of stage 2l (attention sub-layer)
 *   ln2 row l  -> the SN_ROLE_INPUT norm of stage 2l + 1 (MLP sub-layer)
 *   lnf        -> the SN_ROLE_FINAL norm of stage S (the merge)
 * each of which must be a LayerNorm with gamma and beta (SN_AFFINE_SCALE_SHIFT). Pre-Norm has
 * exactly these norms; SiameseNorm, its paper form and Peri-LN have them plus others (N_post,
 * N_pre, N_a, N_b, N_out, N_emb), which llm.c's model does not have; Post-Norm, DeepNorm,
 * hybrid_pre, Mix-LN with Post-Norm layers and HybridNorm(*) lack some. No placement is named
 * here: a placement added to the library later is handled (or refused) by its roles.
 *
 *   sn_llmc_check(net, SN_LLMC_FROM, why, n)  0 when llm.c's six tensors all have a place in
 *                                             net's block (otherwise -1 and a reason in why)
 *   sn_llmc_check(net, SN_LLMC_TO, why, n)    0 when, moreover, the block holds nothing else
 *                                             and every stage computes as llm.c's does (each
 *                                             sub-layer one input norm of x, the merge one
 *                                             final norm of x): the net IS llm.c's model
 *   sn_llmc_offset(net, t, l, &off)           where row l of tensor t starts in the block
 *   sn_llmc_gather(net, ln, block)            ln[t] -> block (every other float untouched:
 *                                             fill the block with sn_net_init_params first)
 *   sn_llmc_scatter(net, block, ln)           block -> ln[t] (parameters or their gradients)
 * ln[t] is tensor t of SN_LLMC_LN1W .. SN_LLMC_LNFB: L * C floats, C for lnfw and lnfb. The
 * functions return SN_OK or a sn_status (sn_llmc_check: 0 or -1) and write nothing on error.
 */
#ifndef SIAMESENORM_LLMC_H
#define SIAMESENORM_LLMC_H

#include <stdio.h>
#include <string.h>

#include <siamesenorm.h>

#ifdef __cplusplus
extern "C" {
#endif

/* llm.c's LayerNorm tensors, in the order of its ParameterTensors (tensors 2, 3, 8, 9, 14, 15
 * of its 16). */
enum {
    SN_LLMC_LN1W = 0,
    SN_LLMC_LN1B = 1,
    SN_LLMC_LN2W = 2,
    SN_LLMC_LN2B = 3,
    SN_LLMC_LNFW = 4,
    SN_LLMC_LNFB = 5,
    SN_LLMC_NLN = 6
};
/* The direction sn_llmc_check is asked about. */
enum { SN_LLMC_FROM = 0, SN_LLMC_TO = 1 };

static inline const char *sn_llmc_tensor_name(int t) {
    static const char *const names[SN_LLMC_NLN] = {"ln1w", "ln1b", "ln2w", "ln2b", "lnfw", "lnfb"};
    return t >= 0 && t < SN_LLMC_NLN ? names[t] : "?";
}

/* Rows of tensor t: L for ln1 and ln2, 1 for lnf. */
static inline int32_t sn_llmc_rows(const sn_net *net, int t) {
    return t >= SN_LLMC_LNFW ? 1 : net->n_sublayers / 2;
}

/* The offset in floats of row l of tensor t in net's norm block: the gamma of the norm that
 * takes it, plus C for a bias. Errors: SN_ERR_NULL, SN_ERR_SHAPE (S odd), SN_ERR_INDEX (t or l
 * out of range, or no norm of the role), SN_ERR_NORM (that norm is not an affine LayerNorm),
 * and those of sn_net_check. */
static inline sn_status sn_llmc_offset(const sn_net *net, int t, int32_t l, int64_t *off) {
    if (!net || !off) return SN_ERR_NULL;
    sn_status st = sn_net_check(net);
    if (st != SN_OK) return st;
    if (net->n_sublayers % 2) return SN_ERR_SHAPE;
    if (t < 0 || t >= SN_LLMC_NLN || l < 0 || l >= sn_llmc_rows(net, t)) return SN_ERR_INDEX;
    const int32_t stage = t >= SN_LLMC_LNFW ? net->n_sublayers : 2 * l + (t >= SN_LLMC_LN2W);
    const sn_norm_role role = t >= SN_LLMC_LNFW ? SN_ROLE_FINAL : SN_ROLE_INPUT;
    int32_t j;
    sn_norm norm;
    int64_t gamma;
    st = sn_net_find_norm(net, stage, role, &j);
    if (st == SN_OK) st = sn_net_norm_at(net, stage, j, &norm, &gamma);
    if (st != SN_OK) return st;
    if (norm.kind != SN_NORM_LAYERNORM || norm.affine != SN_AFFINE_SCALE_SHIFT) return SN_ERR_NORM;
    *off = gamma + (t % 2 ? net->d : 0);
    return SN_OK;
}

/* 0 when net can take llm.c's six tensors (dir SN_LLMC_FROM) or is llm.c's model, norm for
 * norm (SN_LLMC_TO); else -1 with the first reason found in why[n] (why may be NULL, and n 0:
 * nothing is written to it then). */
static inline int sn_llmc_check(const sn_net *net, int dir, char *why, size_t n) {
    char local[512]; /* why == NULL or n == 0: the reason is formatted and dropped */
    if (!why || n == 0) why = local, n = sizeof local;
    why[0] = '\0';
    if (!net) {
        snprintf(why, n, "no net");
        return -1;
    }
    const char *pname = sn_placement_name((sn_placement)net->placement);
    for (int t = 0; t < SN_LLMC_NLN; t += 2)
        for (int32_t l = 0; l < sn_llmc_rows(net, t); l++) {
            int64_t off;
            sn_status st = sn_llmc_offset(net, t, l, &off);
            if (st == SN_OK) continue;
            const int32_t stage =
                t >= SN_LLMC_LNFW ? net->n_sublayers : 2 * l + (t >= SN_LLMC_LN2W);
            const char *role = t >= SN_LLMC_LNFW ? "final" : "input";
            if (st == SN_ERR_NORM)
                snprintf(why, n,
                         "%s's %s norm at stage %d is not a LayerNorm with gamma and beta, as "
                         "llm.c's %s (row %d) is",
                         pname ? pname : "this placement", role, (int)stage, sn_llmc_tensor_name(t),
                         (int)l);
            else
                snprintf(why, n, "%s has no %s norm at stage %d for llm.c's %s (row %d)",
                         pname ? pname : "this placement", role, (int)stage, sn_llmc_tensor_name(t),
                         (int)l);
            return -1;
        }
    if (dir != SN_LLMC_TO) return 0;
    for (int32_t i = -1; i <= net->n_sublayers; i++) {
        sn_norm_role r;
        sn_norm_operand o;
        sn_norm norm;
        int32_t j = 0;
        for (; sn_net_norm_role(net, i, j, &r, &o) == SN_OK; j++) {
            const sn_norm_role want = i == net->n_sublayers ? SN_ROLE_FINAL : SN_ROLE_INPUT;
            int64_t np = 0;
            if (sn_net_norm_at(net, i, j, &norm, NULL) != SN_OK ||
                sn_norm_query(&norm, net->d, &np, NULL) != SN_OK)
                np = -1;
            if (r != want || o != SN_OPERAND_X || j > 0 || i < 0) {
                snprintf(why, n,
                         "%s has a%s %s norm of %s at stage %d (norm %d, %lld parameters), which "
                         "llm.c's model lacks",
                         pname ? pname : "this placement",
                         strchr("aeiou", sn_norm_role_name(r)[0]) ? "n" : "", sn_norm_role_name(r),
                         sn_norm_operand_name(o), (int)i, (int)j, (long long)np);
                return -1;
            }
        }
        if (j == 0 && i >= 0) {
            snprintf(why, n, "%s has no norm at stage %d where llm.c's model has one",
                     pname ? pname : "this placement", (int)i);
            return -1;
        }
    }
    return 0;
}

/* The one loop of sn_llmc_gather and sn_llmc_scatter: every row's offset is checked first, then
 * rows are copied into the block (to_block) or out of it. */
static inline sn_status sn_llmc_move_(const sn_net *net, float *const *ln, float *block,
                                      int to_block) {
    if (!net || !ln || !block) return SN_ERR_NULL;
    for (int pass = 0; pass < 2; pass++)
        for (int t = 0; t < SN_LLMC_NLN; t++) {
            if (!ln[t]) return SN_ERR_NULL;
            for (int32_t l = 0; l < sn_llmc_rows(net, t); l++) {
                int64_t off;
                sn_status st = sn_llmc_offset(net, t, l, &off);
                if (st != SN_OK) return st;
                float *row = ln[t] + (size_t)l * (size_t)net->d;
                if (pass)
                    memcpy(to_block ? block + off : row, to_block ? row : block + off,
                           (size_t)net->d * sizeof(float));
            }
        }
    return SN_OK;
}

/* Moves the rows of ln[0..5] into block (net's n_params floats; the floats of other norms are
 * not touched). Errors: SN_ERR_NULL, and as sn_llmc_offset; nothing written on error. */
static inline sn_status sn_llmc_gather(const sn_net *net, const float *const ln[SN_LLMC_NLN],
                                       float *block) {
    /* only read through ln: the cast serves the shared loop */
    return sn_llmc_move_(net, (float *const *)(uintptr_t)ln, block, 1);
}

/* The inverse: the rows of block that llm.c's tensors have into ln[0..5] (the block's other
 * norms are ignored: check sn_llmc_check(net, SN_LLMC_TO, ...) first when the result must be
 * llm.c's whole model). Works on a gradient block as well (same layout). */
static inline sn_status sn_llmc_scatter(const sn_net *net, const float *block,
                                        float *const ln[SN_LLMC_NLN]) {
    return sn_llmc_move_(net, ln, (float *)(uintptr_t)block, 0); /* block only read */
}

#ifdef __cplusplus
}
#endif

#endif /* SIAMESENORM_LLMC_H */
