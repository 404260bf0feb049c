/* Checked mode and sn_find_nonfinite: with a context in checked mode, a NaN or an infinity in
 * any input matrix or parameter block makes the call return SN_ERR_NONFINITE, write nothing,
 * and record the first row holding one; without checked mode the same inputs propagate. The
 * bf16 conversions scan their source the same way. */
#include "testutil.h"

#define R 9
#define D 13

static float nan_f(void) { return (float)NAN; }

/* Fills x with finite values and poisons the listed rows (one element each). */
static void fill(tu_rng *g, float *x, int64_t ld, const int *bad_rows, int nbad, float poison) {
    tu_fill_view(g, x, R, D, ld, -2.0, 2.0);
    for (int k = 0; k < nbad; k++) x[bad_rows[k] * ld + (bad_rows[k] * 5) % D] = poison;
}

static void test_find(void) {
    tu_rng g = {7};
    float x[R * (D + 3)];
    int64_t row = 42;
    const int bad[] = {6, 4};
    fill(&g, x, D + 3, NULL, 0, 0.0f);
    CHECK_OK(sn_find_nonfinite(R, D, x, D + 3, &row));
    CHECK(row == SN_NONFINITE_NONE);
    fill(&g, x, D + 3, bad, 2, (float)INFINITY);
    CHECK_OK(sn_find_nonfinite(R, D, x, D + 3, &row));
    CHECK(row == 4);
    /* a NaN in the padding beyond D is not part of the view */
    fill(&g, x, D + 3, NULL, 0, 0.0f);
    x[2 * (D + 3) + D + 1] = nan_f();
    CHECK_OK(sn_find_nonfinite(R, D, x, D + 3, &row));
    CHECK(row == SN_NONFINITE_NONE);
    row = 42;
    CHECK_STATUS(sn_find_nonfinite(R, D, NULL, D, &row), SN_ERR_NULL);
    CHECK_STATUS(sn_find_nonfinite(R, D, x, D, NULL), SN_ERR_NULL);
    CHECK_STATUS(sn_find_nonfinite(0, D, x, D, &row), SN_ERR_SHAPE);
    CHECK_STATUS(sn_find_nonfinite(R, D, x, D - 1, &row), SN_ERR_STRIDE);
    CHECK(row == 42);
}

static void test_norm_and_fuse(sn_ctx *ctx) {
    tu_rng g = {11};
    sn_norm n = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
    float x[R * D], y[R * D], params[2 * D], out[R * D], stats[R * 2], canary[R * D];
    CHECK_OK(sn_norm_init_params(&n, D, params));
    const int bad[] = {5};
    fill(&g, x, D, bad, 1, nan_f());
    tu_canary_fill(out, R * D);
    memcpy(canary, out, sizeof out);

    /* default: no check, the NaN propagates to its own row only */
    CHECK_OK(sn_norm_forward(NULL, &n, R, D, x, D, params, out, D, stats));
    CHECK(out[5 * D] != out[5 * D] && out[4 * D] == out[4 * D]);

    /* checked: refused, nothing written, row 5 recorded */
    tu_canary_fill(out, R * D);
    CHECK_OK(sn_ctx_set_check_finite(ctx, 1));
    CHECK(sn_ctx_nonfinite_row(ctx) == SN_NONFINITE_NONE);
    CHECK_STATUS(sn_norm_forward(ctx, &n, R, D, x, D, params, out, D, stats), SN_ERR_NONFINITE);
    CHECK(memcmp(out, canary, sizeof out) == 0);
    CHECK(sn_ctx_nonfinite_row(ctx) == 5);

    /* the smallest row over all inputs: x row 5, y row 2 */
    const int bady[] = {2, 8};
    fill(&g, y, D, bady, 2, (float)-INFINITY);
    sn_fuse f;
    CHECK_OK(sn_fuse_init(&f, SN_NORM_RMSNORM, SN_AFFINE_SCALE, 1e-5f));
    float fp[3 * D], u[R * D], h[R * D], fs[R * 3];
    CHECK_OK(sn_fuse_init_params(&f, D, fp));
    tu_canary_fill(h, R * D);
    memcpy(canary, h, sizeof h);
    CHECK_STATUS(sn_fuse_forward(ctx, &f, R, D, x, D, y, D, fp, u, D, h, D, fs), SN_ERR_NONFINITE);
    CHECK(sn_ctx_nonfinite_row(ctx) == 2);
    CHECK(memcmp(h, canary, sizeof h) == 0);

    /* a clean call succeeds and clears the record */
    fill(&g, x, D, NULL, 0, 0.0f);
    fill(&g, y, D, NULL, 0, 0.0f);
    CHECK_OK(sn_fuse_forward(ctx, &f, R, D, x, D, y, D, fp, u, D, h, D, fs));
    CHECK(sn_ctx_nonfinite_row(ctx) == SN_NONFINITE_NONE);

    /* a non-finite parameter */
    params[D + 3] = (float)INFINITY;
    CHECK_STATUS(sn_norm_forward(ctx, &n, R, D, x, D, params, out, D, stats), SN_ERR_NONFINITE);
    CHECK(sn_ctx_nonfinite_row(ctx) == SN_NONFINITE_PARAMS);
    params[D + 3] = 0.0f;

    /* backward inputs are checked too: dout, and the elementwise calls */
    float dout[R * D], dx[R * D];
    const int badd[] = {7};
    fill(&g, dout, D, badd, 1, nan_f());
    CHECK_OK(sn_norm_forward(ctx, &n, R, D, x, D, params, out, D, stats));
    CHECK_STATUS(sn_norm_backward(ctx, &n, R, D, dout, D, x, D, params, stats, dx, D, NULL, 0),
                 SN_ERR_NONFINITE);
    CHECK(sn_ctx_nonfinite_row(ctx) == 7);
    CHECK_STATUS(sn_apply_backward(ctx, R, D, 2.0f, dout, D, x, D, dx, D, 0), SN_ERR_NONFINITE);
    CHECK_STATUS(sn_split_forward(ctx, R, D, dout, D, u, D, h, D), SN_ERR_NONFINITE);

    /* off again: the same call propagates */
    CHECK_OK(sn_ctx_set_check_finite(ctx, 0));
    CHECK_OK(sn_apply_backward(ctx, R, D, 2.0f, dout, D, x, D, dx, D, 0));
}

static void test_net(sn_ctx *ctx) {
    tu_rng g = {13};
    sn_net net;
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 2, D, SN_NORM_LAYERNORM, 1e-5f));
    int64_t np, apr, wpr;
    CHECK_OK(sn_net_sizes(&net, &np, &apr, &wpr));
    float *params = tu_falloc(np), *acts = tu_falloc(R * apr), *e = tu_falloc(R * D);
    float *h = tu_falloc(R * D), *z = tu_falloc(R * D), *snap = tu_falloc(R * apr);
    CHECK_OK(sn_net_init_params(&net, params));
    tu_canary_fill(acts, R * apr); /* defined bytes everywhere: the test compares all of acts */
    fill(&g, e, D, NULL, 0, 0.0f);
    CHECK_OK(sn_ctx_set_check_finite(ctx, 1));
    CHECK_OK(sn_net_split(ctx, &net, &(sn_net_pass){R, params, acts, NULL, NULL}, e, D));
    CHECK_OK(sn_net_enter(ctx, &net, &(sn_net_pass){R, params, acts, NULL, NULL}, 0, h, D));
    const int bad[] = {3};
    fill(&g, z, D, bad, 1, (float)INFINITY);
    memcpy(snap, acts, (size_t)(R * apr) * sizeof(float));
    CHECK_STATUS(sn_net_exit(ctx, &net, &(sn_net_pass){R, params, acts, NULL, NULL}, 0, z, D),
                 SN_ERR_NONFINITE);
    CHECK(sn_ctx_nonfinite_row(ctx) == 3);
    CHECK(memcmp(snap, acts, (size_t)(R * apr) * sizeof(float)) == 0);
    /* the output buffer of enter is not an input: a NaN already in h is no error */
    h[0] = nan_f();
    CHECK_OK(sn_net_enter(ctx, &net, &(sn_net_pass){R, params, acts, NULL, NULL}, 0, h, D));
    params[0] = nan_f();
    CHECK_STATUS(sn_net_enter(ctx, &net, &(sn_net_pass){R, params, acts, NULL, NULL}, 0, h, D),
                 SN_ERR_NONFINITE);
    CHECK(sn_ctx_nonfinite_row(ctx) == SN_NONFINITE_PARAMS);
    CHECK_OK(sn_ctx_set_check_finite(ctx, 0));
    free(params), free(acts), free(e), free(h), free(z), free(snap);
}

/* The conversions: in checked mode each scans its source (fp32 for sn_to_bf16, bf16 for
 * sn_from_bf16), returns SN_ERR_NONFINITE with dst untouched and records the row; a finite
 * source clears the record. */
static void test_convert(sn_ctx *ctx) {
    tu_rng g = {17};
    float f[R * D], out[R * D], snapf[R * D];
    sn_bf16 b[R * D], snapb[R * D];
    const int bad[] = {5, 7};
    fill(&g, f, D, NULL, 0, 0.0f);
    CHECK_OK(sn_ctx_set_check_finite(ctx, 1));
    CHECK_OK(sn_to_bf16(ctx, R, D, f, D, b, D));
    CHECK(sn_ctx_nonfinite_row(ctx) == SN_NONFINITE_NONE);
    memcpy(snapb, b, sizeof b);
    f[2 * D + 3] = nan_f();
    CHECK_STATUS(sn_to_bf16(ctx, R, D, f, D, b, D), SN_ERR_NONFINITE);
    CHECK(sn_ctx_nonfinite_row(ctx) == 2);
    CHECK(memcmp(snapb, b, sizeof b) == 0);
    CHECK_OK(sn_from_bf16(ctx, R, D, b, D, out, D)); /* b is still finite: the record clears */
    CHECK(sn_ctx_nonfinite_row(ctx) == SN_NONFINITE_NONE);
    fill(&g, f, D, bad, 2, (float)INFINITY);
    CHECK_OK(sn_ctx_set_check_finite(ctx, 0)); /* unchecked: the infinity converts */
    CHECK_OK(sn_to_bf16(ctx, R, D, f, D, b, D));
    CHECK_OK(sn_ctx_set_check_finite(ctx, 1));
    memcpy(snapf, out, sizeof out);
    CHECK_STATUS(sn_from_bf16(ctx, R, D, b, D, out, D), SN_ERR_NONFINITE);
    CHECK(sn_ctx_nonfinite_row(ctx) == 5);
    CHECK(memcmp(snapf, out, sizeof out) == 0);
    CHECK_OK(sn_ctx_set_check_finite(ctx, 0));
}

int main(void) {
    sn_ctx *ctx = NULL;
    CHECK_OK(sn_ctx_create(&ctx));
    CHECK_STATUS(sn_ctx_set_check_finite(NULL, 1), SN_ERR_NULL);
    CHECK(sn_ctx_nonfinite_row(NULL) == SN_NONFINITE_NONE);
    CHECK(strstr(sn_status_string(SN_ERR_NONFINITE), "NaN") != NULL);
    test_find();
    test_norm_and_fuse(ctx);
    test_net(ctx);
    test_convert(ctx);
    sn_ctx_destroy(ctx);
    return tu_finish("test_finite");
}
