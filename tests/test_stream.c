/* sn_apply_forward/backward and sn_split_forward/backward: against the float64 reference and
 * float64 central finite differences of L = sum(wx * xo + wy * yo) (apply) and
 * L = sum(wx * x + wy * y) (split), several c values, strides > D, in-place variants, flags.
 *
 * Tolerances (metric err = max|a - b| / max(max|b|, 1e-3)): every output element is one or two
 * fp32 operations on exact fp32 inputs, so it is within ~1.5 ulp (2^-23) of the exact value:
 * tol 1e-6 (about 8 ulp at the largest magnitude). Where the result is a single correctly
 * rounded fp32 operation (yo = y + z, split copies, de = dx + dy) it is checked bitwise. */
#include "ref64.h"
#include "testutil.h"

#define TOL 1e-6

/* Every output element depends only on the same-index input elements, so the FD of L with
 * respect to element k only needs the k-th term (k = index, the other terms are constant). */
typedef struct lin_loss {
    int64_t k;
    double c;
    double *z, *u, *y, *wx, *wy; /* contiguous n = R * D */
} lin_loss;

static double apply_loss(void *vc) /* L = sum(wx * (u + z / c) + wy * (y + z)) */
{
    lin_loss *c = (lin_loss *)vc;
    int64_t k = c->k;
    return c->wx[k] * (c->u[k] + c->z[k] / c->c) + c->wy[k] * (c->y[k] + c->z[k]);
}

static double split_loss(void *vc) /* x = y = e (held in z): L = sum(wx * e + wy * e) */
{
    lin_loss *c = (lin_loss *)vc;
    int64_t k = c->k;
    return c->wx[k] * c->z[k] + c->wy[k] * c->z[k];
}

static int64_t view_diff(const float *a, int64_t lda, const float *b, int64_t ldb, int64_t R,
                         int64_t D) {
    int64_t bad = 0;
    for (int64_t r = 0; r < R; r++)
        bad += memcmp(a + r * lda, b + r * ldb, (size_t)D * sizeof(float)) != 0;
    return bad;
}

static void check_apply(int64_t R, int64_t D, float c, int64_t pad, uint64_t seed) {
    char label[128];
    tu_rng g = {seed};
    const int64_t ldz = D + pad, ldu = D + 2 * pad, ldy = D + pad + 1, ldxo = D + 3 * pad,
                  ldyo = D + pad + 2, n = R * D;
    float *z = tu_falloc(R * ldz), *u = tu_falloc(R * ldu), *y = tu_falloc(R * ldy);
    float *xo = tu_falloc(R * ldxo), *yo = tu_falloc(R * ldyo);
    tu_canary_fill(z, R * ldz), tu_canary_fill(u, R * ldu), tu_canary_fill(y, R * ldy);
    tu_canary_fill(xo, R * ldxo), tu_canary_fill(yo, R * ldyo);
    tu_fill_view(&g, z, R, D, ldz, -3, 3), tu_fill_view(&g, u, R, D, ldu, -3, 3);
    tu_fill_view(&g, y, R, D, ldy, -30, 30);
    double *zd = tu_dalloc(n), *ud = tu_dalloc(n), *yd = tu_dalloc(n), *xod = tu_dalloc(n),
           *yod = tu_dalloc(n), *wx = tu_dalloc(n), *wy = tu_dalloc(n), *fd = tu_dalloc(n);
    tu_to_double(z, R, D, ldz, zd, D), tu_to_double(u, R, D, ldu, ud, D);
    tu_to_double(y, R, D, ldy, yd, D);
    ref_apply_fwd(R, D, (double)c, zd, D, ud, D, yd, D, xod, D, yod, D);

    CHECK_OK(sn_apply_forward(NULL, R, D, c, z, ldz, u, ldu, y, ldy, xo, ldxo, yo, ldyo));
    snprintf(label, sizeof label, "apply fwd xo R=%lld D=%lld c=%g", (long long)R, (long long)D,
             (double)c);
    CHECK_ERR(label, tu_err_view(xo, ldxo, xod, D, R, D, 1e-3), TOL);
    int64_t bad = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) bad += yo[r * ldyo + j] != y[r * ldy + j] + z[r * ldz + j];
    CHECK_MSG(bad == 0, "apply fwd: yo != y + z (fp32) in %lld elements (R=%lld D=%lld)",
              (long long)bad, (long long)R, (long long)D);
    CHECK_MSG(tu_padding_damage(xo, R, D, ldxo) == 0 && tu_padding_damage(yo, R, D, ldyo) == 0,
              "apply fwd: padding modified");

    /* in place: xo aliasing u, yo aliasing y: same bits as the separate call */
    {
        float *u2 = tu_falloc(R * ldu), *y2 = tu_falloc(R * ldy);
        memcpy(u2, u, (size_t)(R * ldu) * sizeof(float));
        memcpy(y2, y, (size_t)(R * ldy) * sizeof(float));
        CHECK_OK(sn_apply_forward(NULL, R, D, c, z, ldz, u2, ldu, y2, ldy, u2, ldu, y2, ldy));
        CHECK_MSG(view_diff(u2, ldu, xo, ldxo, R, D) == 0 &&
                      view_diff(y2, ldy, yo, ldyo, R, D) == 0,
                  "apply fwd in place differs (R=%lld D=%lld c=%g)", (long long)R, (long long)D,
                  (double)c);
        CHECK_MSG(tu_padding_damage(u2, R, D, ldu) == 0 && tu_padding_damage(y2, R, D, ldy) == 0,
                  "apply fwd in place: padding modified");
        free(u2), free(y2);
    }

    /* backward: dz = dxo / c + dyo vs FD */
    const int64_t lddxo = D + pad + 4, lddyo = D + 2 * pad + 1, lddz = D + pad;
    float *dxo = tu_falloc(R * lddxo), *dyo = tu_falloc(R * lddyo), *dz = tu_falloc(R * lddz),
          *dz0 = tu_falloc(R * lddz);
    tu_canary_fill(dxo, R * lddxo), tu_canary_fill(dyo, R * lddyo), tu_canary_fill(dz, R * lddz);
    tu_fill_view(&g, dxo, R, D, lddxo, -1, 1), tu_fill_view(&g, dyo, R, D, lddyo, -1, 1);
    tu_to_double(dxo, R, D, lddxo, wx, D), tu_to_double(dyo, R, D, lddyo, wy, D);
    lin_loss L = {0, (double)c, zd, ud, yd, wx, wy};
    for (int64_t k = 0; k < n; k++) L.k = k, fd[k] = tu_fd(apply_loss, &L, &zd[k], 1e-3);
    CHECK_OK(sn_apply_backward(NULL, R, D, c, dxo, lddxo, dyo, lddyo, dz, lddz, 0));
    snprintf(label, sizeof label, "apply bwd dz R=%lld D=%lld c=%g", (long long)R, (long long)D,
             (double)c);
    CHECK_ERR(label, tu_err_view(dz, lddz, fd, D, R, D, 1e-3), TOL);
    CHECK_MSG(tu_padding_damage(dz, R, D, lddz) == 0, "apply bwd: padding modified");
    /* SN_ACCUMULATE onto a prefill */
    {
        float *dza = tu_falloc(R * lddz);
        tu_canary_fill(dza, R * lddz);
        tu_fill_view(&g, dza, R, D, lddz, -1, 1);
        memcpy(dz0, dza, (size_t)(R * lddz) * sizeof(float));
        CHECK_OK(
            sn_apply_backward(NULL, R, D, c, dxo, lddxo, dyo, lddyo, dza, lddz, SN_ACCUMULATE));
        double *acc = tu_dalloc(n);
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++) acc[r * D + j] = fd[r * D + j] + dz0[r * lddz + j];
        snprintf(label, sizeof label, "apply bwd accumulate R=%lld D=%lld c=%g", (long long)R,
                 (long long)D, (double)c);
        CHECK_ERR(label, tu_err_view(dza, lddz, acc, D, R, D, 1e-3), 2 * TOL);
        CHECK_MSG(tu_padding_damage(dza, R, D, lddz) == 0, "apply bwd acc: padding modified");
        free(acc), free(dza);
    }
    /* dz aliasing dxo, then dyo: same bits as the separate call */
    for (int which = 0; which < 2; which++) {
        float *buf = tu_falloc(R * (which ? lddyo : lddxo));
        memcpy(buf, which ? dyo : dxo, (size_t)(R * (which ? lddyo : lddxo)) * sizeof(float));
        if (which)
            CHECK_OK(sn_apply_backward(NULL, R, D, c, dxo, lddxo, buf, lddyo, buf, lddyo, 0));
        else CHECK_OK(sn_apply_backward(NULL, R, D, c, buf, lddxo, dyo, lddyo, buf, lddxo, 0));
        CHECK_MSG(view_diff(buf, which ? lddyo : lddxo, dz, lddz, R, D) == 0,
                  "apply bwd with dz aliasing %s differs (R=%lld D=%lld)", which ? "dyo" : "dxo",
                  (long long)R, (long long)D);
        free(buf);
    }

    /* ---- split ---- */
    float *x = tu_falloc(R * ldxo), *ys = tu_falloc(R * ldyo);
    tu_canary_fill(x, R * ldxo), tu_canary_fill(ys, R * ldyo);
    CHECK_OK(sn_split_forward(NULL, R, D, z, ldz, x, ldxo, ys, ldyo));
    CHECK_MSG(view_diff(x, ldxo, z, ldz, R, D) == 0 && view_diff(ys, ldyo, z, ldz, R, D) == 0,
              "split: x, y are not copies of e (R=%lld D=%lld)", (long long)R, (long long)D);
    CHECK_MSG(tu_padding_damage(x, R, D, ldxo) == 0 && tu_padding_damage(ys, R, D, ldyo) == 0,
              "split: padding modified");
    {
        float *e2 = tu_falloc(R * ldz);
        memcpy(e2, z, (size_t)(R * ldz) * sizeof(float));
        tu_canary_fill(ys, R * ldyo);
        CHECK_OK(sn_split_forward(NULL, R, D, e2, ldz, e2, ldz, ys, ldyo));
        CHECK_MSG(view_diff(e2, ldz, z, ldz, R, D) == 0 && view_diff(ys, ldyo, z, ldz, R, D) == 0,
                  "split with x aliasing e differs");
        free(e2);
    }
    /* split backward: de = dx + dy, bitwise; FD of L = sum((wx + wy) * e) */
    for (int64_t k = 0; k < n; k++) L.k = k, fd[k] = tu_fd(split_loss, &L, &zd[k], 1e-3);
    float *de = tu_falloc(R * lddz);
    tu_canary_fill(de, R * lddz);
    CHECK_OK(sn_split_backward(NULL, R, D, dxo, lddxo, dyo, lddyo, de, lddz, 0));
    snprintf(label, sizeof label, "split bwd de R=%lld D=%lld", (long long)R, (long long)D);
    CHECK_ERR(label, tu_err_view(de, lddz, fd, D, R, D, 1e-3), TOL);
    bad = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++)
            bad += de[r * lddz + j] != dxo[r * lddxo + j] + dyo[r * lddyo + j];
    CHECK_MSG(bad == 0, "split bwd: de != dx + dy (fp32) in %lld elements", (long long)bad);
    CHECK_MSG(tu_padding_damage(de, R, D, lddz) == 0, "split bwd: padding modified");
    {
        float *dea = tu_falloc(R * lddz);
        tu_canary_fill(dea, R * lddz);
        tu_fill_view(&g, dea, R, D, lddz, -1, 1);
        memcpy(dz0, dea, (size_t)(R * lddz) * sizeof(float));
        CHECK_OK(sn_split_backward(NULL, R, D, dxo, lddxo, dyo, lddyo, dea, lddz, SN_ACCUMULATE));
        double *acc = tu_dalloc(n);
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++) acc[r * D + j] = fd[r * D + j] + dz0[r * lddz + j];
        snprintf(label, sizeof label, "split bwd accumulate R=%lld D=%lld", (long long)R,
                 (long long)D);
        CHECK_ERR(label, tu_err_view(dea, lddz, acc, D, R, D, 1e-3), 2 * TOL);
        CHECK_MSG(tu_padding_damage(dea, R, D, lddz) == 0, "split bwd acc: padding modified");
        free(acc), free(dea);
    }
    for (int which = 0; which < 2; which++) {
        float *buf = tu_falloc(R * (which ? lddyo : lddxo));
        memcpy(buf, which ? dyo : dxo, (size_t)(R * (which ? lddyo : lddxo)) * sizeof(float));
        if (which) CHECK_OK(sn_split_backward(NULL, R, D, dxo, lddxo, buf, lddyo, buf, lddyo, 0));
        else CHECK_OK(sn_split_backward(NULL, R, D, buf, lddxo, dyo, lddyo, buf, lddxo, 0));
        CHECK_MSG(view_diff(buf, which ? lddyo : lddxo, de, lddz, R, D) == 0,
                  "split bwd with de aliasing %s differs", which ? "dy" : "dx");
        free(buf);
    }

    free(z), free(u), free(y), free(xo), free(yo), free(zd), free(ud), free(yd), free(xod);
    free(yod), free(wx), free(wy), free(fd), free(dxo), free(dyo), free(dz), free(dz0), free(x);
    free(ys), free(de);
}

int main(void) {
    static const int64_t Ds[] = {1, 3, 64, 768, 1000};
    static const int64_t Rs[] = {1, 7, 256};
    static const float cs[] = {1.0f, 1.41421356f, 0.37f, 3.5f, 2.0f, 1000.0f, 1e-3f};
    uint64_t seed = 5;
    for (int d = 0; d < 5; d++)
        for (int r = 0; r < 3; r++) {
            if (Ds[d] >= 768 && Rs[r] == 256) continue;
            check_apply(Rs[r], Ds[d], cs[(d * 3 + r) % 7], (d + r) % 3 ? 1 + d + r : 0, seed++);
        }
    check_apply(256, 1000, 2.4494897f, 5, seed++);
    return tu_finish("test_stream");
}
