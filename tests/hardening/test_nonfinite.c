/* NaN / Inf policy (docs/reliability.md "Non-finite inputs"): the library does not check
 * values; it propagates them, row by row:
 *   - the call still returns SN_OK (statuses are about arguments, never about values);
 *   - a NaN, +Inf or -Inf anywhere in row r of an input makes row r of every output that the
 *     math says depends on it hold at least one non-finite value (for a LayerNorm / RMSNorm
 *     row, the whole normalised row is NaN, except that RMSNorm's +-Inf leaves finite
 *     entries at beta: rstd = 1/sqrt(inf) = 0), and its parameter gradients (sums over rows)
 *     become non-finite;
 *   - every other row of every output is bitwise identical to a run without the bad value:
 *     one poisoned token never corrupts its neighbours.
 * Checked for sn_norm_forward/backward (LayerNorm, RMSNorm, scale), sn_fuse_forward,
 * sn_apply_forward and a whole SiameseNorm / Pre-Norm / Post-Norm network, on every path. */
#include "netrun.h"

static const char *g_path;

static const float bad_values[3] = {NAN, INFINITY, -INFINITY};

/* rows other than r equal bitwise; row r holds a non-finite value */
static void compare(const char *what, const float *clean, const float *dirty, int64_t R, int64_t D,
                    int64_t bad_row, int vi) {
    int others_same = 1, row_bad = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) {
            if (r == bad_row) row_bad |= !isfinite(dirty[r * D + j]);
            else others_same &= memcmp(&clean[r * D + j], &dirty[r * D + j], 4) == 0;
        }
    CHECK_MSG(others_same, "[%s] %s, value %g in row %lld: another row changed", g_path, what,
              (double)bad_values[vi], (long long)bad_row);
    CHECK_MSG(row_bad, "[%s] %s, value %g in row %lld: that row's output is all finite", g_path,
              what, (double)bad_values[vi], (long long)bad_row);
}

static void prims(sn_ctx *ctx) {
    const int64_t R = 8, D = 96, RD = R * D, bad_row = 3;
    float *x = tu_fzeros(RD), *x2 = tu_fzeros(RD), *y = tu_fzeros(RD), *dout = tu_fzeros(RD),
          *o1 = tu_fzeros(RD), *o2 = tu_fzeros(RD), *q1 = tu_fzeros(RD), *q2 = tu_fzeros(RD),
          *p = tu_fzeros(6 * D), *dp = tu_fzeros(6 * D), *st1 = tu_fzeros(6 * R),
          *st2 = tu_fzeros(6 * R);
    tu_rng g = {3};
    for (int64_t k = 0; k < RD; k++)
        x[k] = (float)tu_gauss(&g), y[k] = (float)tu_gauss(&g),
        dout[k] = (float)tu_unif(&g, -1.0, 1.0);
    for (int64_t k = 0; k < 6 * D; k++) p[k] = (float)(1 + 0.2 * tu_unif(&g, -1.0, 1.0));
    static const int kinds[] = {SN_NORM_LAYERNORM, SN_NORM_RMSNORM, SN_NORM_SCALE};
    for (int vi = 0; vi < 3; vi++)
        for (int col = 0; col < D; col += 37) {
            memcpy(x2, x, (size_t)RD * 4);
            x2[bad_row * D + col] = bad_values[vi];
            for (int ki = 0; ki < 3; ki++) {
                sn_norm n = {kinds[ki], SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
                char what[64];
                snprintf(what, sizeof what, "norm kind %d forward", kinds[ki]);
                CHECK_OK(sn_norm_forward(ctx, &n, R, D, x, D, p, o1, D, st1));
                CHECK_OK(sn_norm_forward(ctx, &n, R, D, x2, D, p, o2, D, st2));
                compare(what, o1, o2, R, D, bad_row, vi);
                snprintf(what, sizeof what, "norm kind %d backward dx", kinds[ki]);
                memset(dp, 0, (size_t)(2 * D) * 4);
                CHECK_OK(sn_norm_backward(ctx, &n, R, D, dout, D, x, D, p, st1, q1, D, NULL, 0));
                CHECK_OK(sn_norm_backward(ctx, &n, R, D, dout, D, x2, D, p, st2, q2, D, dp, 0));
                if (kinds[ki] != SN_NORM_SCALE) /* scale: dx = gamma * dout, x unused */
                    compare(what, q1, q2, R, D, bad_row, vi);
                CHECK_MSG(!tu_all_finite(dp, 2 * D), "[%s] %s: parameter gradients all finite",
                          g_path, what);
            }
            sn_fuse f;
            CHECK_OK(sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f));
            CHECK_OK(sn_fuse_forward(ctx, &f, R, D, y, D, x2, D, p, q2, D, o2, D, NULL));
            CHECK_OK(sn_fuse_forward(ctx, &f, R, D, y, D, x, D, p, q1, D, o1, D, NULL));
            compare("fuse forward (bad y)", o1, o2, R, D, bad_row, vi);
            CHECK_OK(sn_apply_forward(ctx, R, D, 1.5f, x, D, y, D, y, D, o1, D, q1, D));
            CHECK_OK(sn_apply_forward(ctx, R, D, 1.5f, x2, D, y, D, y, D, o2, D, q2, D));
            compare("apply forward xo", o1, o2, R, D, bad_row, vi);
            compare("apply forward yo", q1, q2, R, D, bad_row, vi);
        }
    free(x), free(x2), free(y), free(dout), free(o1), free(o2), free(q1), free(q2), free(p);
    free(dp), free(st1), free(st2);
}

static void nets(sn_ctx *ctx) {
    static const sn_placement pls[] = {SN_PLACEMENT_SIAMESE, SN_PLACEMENT_PRE_NORM,
                                       SN_PLACEMENT_POST_NORM};
    const int64_t R = 6, D = 64, RD = R * D, bad_row = 4;
    for (int pi = 0; pi < 3; pi++) {
        netrun n;
        CHECK_MSG(netrun_init(&n, pls[pi], 4, D, R, SN_NORM_LAYERNORM, 9) == 0, "init");
        float *e = tu_fzeros(RD), *out = tu_fzeros(RD), *de = tu_fzeros(RD);
        tu_rng g = {4};
        for (int64_t k = 0; k < RD; k++) e[k] = (float)tu_gauss(&g);
        CHECK_OK(netrun_pass(ctx, &n, e));
        memcpy(out, n.out, (size_t)RD * 4), memcpy(de, n.de, (size_t)RD * 4);
        for (int vi = 0; vi < 3; vi++) {
            e[bad_row * D + 10] = bad_values[vi];
            CHECK_OK(netrun_pass(ctx, &n, e));
            char what[64];
            snprintf(what, sizeof what, "net placement %d out", (int)pls[pi]);
            compare(what, out, n.out, R, D, bad_row, vi);
            snprintf(what, sizeof what, "net placement %d de", (int)pls[pi]);
            compare(what, de, n.de, R, D, bad_row, vi);
            CHECK_MSG(!tu_all_finite(n.grads, n.np), "[%s] net %d: parameter gradients all finite",
                      g_path, (int)pls[pi]);
            e[bad_row * D + 10] = 0.5f;
        }
        free(e), free(out), free(de);
        netrun_free(&n);
    }
}

int main(void) {
    static const sn_isa isas[] = {SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512};
    for (size_t i = 0; i < 3; i++) {
        sn_ctx *ctx = tu_isa_ctx(isas[i]);
        if (!ctx) continue;
        g_path = sn_isa_name(isas[i]);
        prims(ctx);
        nets(ctx);
        sn_ctx_destroy(ctx);
    }
    return tu_finish("nonfinite");
}
