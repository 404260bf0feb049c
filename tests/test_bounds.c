/* Argument edges found by an outside audit (defect numbers as in the audit table of
 * docs/reliability.md):
 *   defect 8   sn_scratch_bytes for D up to INT64_MAX (NULL ctx and a 256-thread context):
 *              no signed overflow (UBSan in the sanitizer build), SIZE_MAX when the size does
 *              not fit, and monotone in D;
 *   defect 9   explicit net->scales inside h (sn_net_enter) or acts (sn_net_split) is
 *              SN_ERR_ALIAS, with no output byte changed;
 *   defect 11  misaligned float pointers are SN_ERR_ALIGN, with no output byte changed. */
#include "testutil.h"

static void scratch_bytes(void) {
    sn_ctx *ctx = NULL;
    CHECK_OK(sn_ctx_create(&ctx));
    for (int c = 0; c < 2; c++) {
        const sn_ctx *q = c ? ctx : NULL;
        size_t prev = 0;
        const int64_t Ds[] = {1,
                              768,
                              (int64_t)1 << 40,
                              (int64_t)1 << 50,
                              (int64_t)1 << 52,
                              (int64_t)1 << 58,
                              INT64_MAX / 6,
                              INT64_MAX / 6 + 1,
                              INT64_MAX - 1,
                              INT64_MAX};
        for (size_t k = 0; k < sizeof Ds / sizeof Ds[0]; k++) {
            size_t b = sn_scratch_bytes(q, Ds[k]);
            CHECK_MSG(b >= prev && b > 64, "sn_scratch_bytes(D = %lld) = %zu after %zu",
                      (long long)Ds[k], b, prev);
            prev = b;
        }
        CHECK(sn_scratch_bytes(q, INT64_MAX) == SIZE_MAX);
        CHECK(sn_scratch_bytes(q, 0) == 0);
    }
    sn_ctx_destroy(ctx);
}

static void dummy_hook(void *user, int64_t n, sn_task_fn task, void *arg) {
    (void)user;
    for (int64_t i = 0; i < n; i++) task(arg, i);
}

static void scratch_bytes_wide(void) {
    sn_ctx *ctx = NULL;
    CHECK_OK(sn_ctx_create(&ctx));
    CHECK_OK(sn_ctx_set_parallel_for(ctx, dummy_hook, NULL, 256));
    const int64_t Ds[] = {(int64_t)1 << 50, (int64_t)1 << 51, (int64_t)1 << 52, INT64_MAX};
    for (size_t k = 0; k < sizeof Ds / sizeof Ds[0]; k++)
        CHECK_MSG(sn_scratch_bytes(ctx, Ds[k]) == SIZE_MAX,
                  "256 pieces: sn_scratch_bytes(Ds[%d]) = %zu, expected SIZE_MAX", (int)k,
                  sn_scratch_bytes(ctx, Ds[k]));
    CHECK(sn_scratch_bytes(ctx, 768) == (size_t)(8 * 256) * 6 * 768 * 4 + 64);
    sn_ctx_destroy(ctx);
}

static void scales_alias(void) {
    const int S = 4;
    const int64_t D = 8, R = 2;
    sn_net net;
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, S, D, SN_NORM_LAYERNORM, 1e-5f));
    int64_t np, apr, wpr;
    CHECK_OK(sn_net_sizes(&net, &np, &apr, &wpr));
    float *p = tu_falloc(np), *acts = tu_falloc(R * apr), *h = tu_falloc(R * D),
          *e = tu_falloc(R * D), *sv = tu_falloc(R * apr);
    CHECK_OK(sn_net_init_params(&net, p));
    for (int64_t k = 0; k < R * D; k++) e[k] = (float)k;
    net.scale_rule = SN_SCALE_EXPLICIT;
    /* scales inside acts: sn_net_split writes acts */
    for (int64_t k = 0; k < R * apr; k++) acts[k] = 1.0f;
    net.scales = acts + 3;
    CHECK_OK(sn_net_check(&net));
    memcpy(sv, acts, (size_t)(R * apr) * sizeof(float));
    CHECK_STATUS(sn_net_split(NULL, &net, &(sn_net_pass){R, p, acts, NULL, NULL}, e, D),
                 SN_ERR_ALIAS);
    CHECK(memcmp(sv, acts, (size_t)(R * apr) * sizeof(float)) == 0);
    /* scales inside h: sn_net_enter writes h */
    float own[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    net.scales = own;
    CHECK_OK(sn_net_split(NULL, &net, &(sn_net_pass){R, p, acts, NULL, NULL}, e, D));
    for (int64_t k = 0; k < R * D; k++) h[k] = 2.0f;
    net.scales = h + 1;
    memcpy(sv, h, (size_t)(R * D) * sizeof(float));
    CHECK_STATUS(sn_net_enter(NULL, &net, &(sn_net_pass){R, p, acts, NULL, NULL}, 0, h, D),
                 SN_ERR_ALIAS);
    CHECK(memcmp(sv, h, (size_t)(R * D) * sizeof(float)) == 0);
    net.scales = own;
    CHECK_OK(sn_net_enter(NULL, &net, &(sn_net_pass){R, p, acts, NULL, NULL}, 0, h, D));
    free(p), free(acts), free(h), free(e), free(sv);
}

static void alignment(void) {
    const int64_t R = 2, D = 8;
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    float *xb = tu_falloc(R * D + 2), *ob = tu_falloc(R * D + 2), *pb = tu_falloc(2 * D + 2),
          *sb = tu_falloc(2 * R + 2);
    for (int64_t k = 0; k < R * D + 2; k++) xb[k] = (float)k, ob[k] = -1.0f;
    CHECK_OK(sn_norm_init_params(&n, D, pb));
    float *xm = (float *)(void *)((char *)xb + 1), *om = (float *)(void *)((char *)ob + 2);
    float *pm = (float *)(void *)((char *)pb + 3), *sm = (float *)(void *)((char *)sb + 1);
    float save[18]; /* R * D + 2 */
    memcpy(save, ob, sizeof save);
    CHECK_STATUS(sn_norm_forward(NULL, &n, R, D, xm, D, pb, ob, D, NULL), SN_ERR_ALIGN);
    CHECK_STATUS(sn_norm_forward(NULL, &n, R, D, xb, D, pb, om, D, NULL), SN_ERR_ALIGN);
    CHECK_STATUS(sn_norm_forward(NULL, &n, R, D, xb, D, pm, ob, D, NULL), SN_ERR_ALIGN);
    CHECK_STATUS(sn_norm_forward(NULL, &n, R, D, xb, D, pb, ob, D, sm), SN_ERR_ALIGN);
    CHECK(memcmp(save, ob, sizeof save) == 0);
    CHECK_STATUS(sn_norm_init_params(&n, D, pm), SN_ERR_ALIGN);
    sn_fuse f;
    CHECK_OK(sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f));
    CHECK_STATUS(sn_fuse_init_params(&f, D, pm), SN_ERR_ALIGN);
    sn_net net;
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 2, D, SN_NORM_LAYERNORM, 1e-5f));
    CHECK_STATUS(sn_net_init_params(&net, pm), SN_ERR_ALIGN);
    net.scale_rule = SN_SCALE_EXPLICIT;
    net.scales = pm;
    CHECK_STATUS(sn_net_check(&net), SN_ERR_ALIGN);
    CHECK(strcmp(sn_status_string(SN_ERR_ALIGN), "unknown status") != 0);
    free(xb), free(ob), free(pb), free(sb);
}

int main(void) {
    scratch_bytes();
    scratch_bytes_wide();
    scales_alias();
    alignment();
    return tu_finish("bounds");
}
