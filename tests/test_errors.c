/* Bad input for every public function of siamesenorm.h: each call below has exactly one defect
 * and must return its specific status without touching memory. All buffers of a call are views
 * into one arena filled with canary values before the call; after an error the whole arena must
 * be bitwise unchanged (plus any non-arena outputs: sizes, norms, scales, descriptions).
 * Functions: sn_ctx_create, sn_norm_query, sn_norm_init_params, sn_norm_forward,
 * sn_norm_backward, sn_fuse_init, sn_fuse_query, sn_fuse_init_params, sn_fuse_forward,
 * sn_fuse_backward, sn_merge_forward, sn_merge_backward, sn_apply_forward, sn_apply_backward,
 * sn_split_forward, sn_split_backward, sn_net_init, sn_net_check, sn_net_scale, sn_net_sizes,
 * sn_net_norm_at, sn_net_init_params, sn_net_split, sn_net_enter, sn_net_exit, sn_net_merge,
 * sn_net_merge_backward, sn_net_exit_backward, sn_net_enter_backward, sn_net_split_backward,
 * sn_net_init_gain, sn_isa_available, sn_isa_name, sn_ctx_set_isa, sn_ctx_isa,
 * sn_ctx_set_threads, sn_ctx_set_parallel_for, sn_ctx_threads.
 * (sn_version_*, sn_status_string: test_version.c.) */
#include "testutil.h"

#include <float.h>

#define AR 65536
static float arena[AR], snap[AR];

/* canary-fill the arena and remember it */
static void arm(void) {
    tu_canary_fill(arena, AR);
    memcpy(snap, arena, sizeof arena);
}
static int64_t damage(void) {
    int64_t bad = 0;
    for (int64_t k = 0; k < AR; k++) bad += memcmp(&arena[k], &snap[k], sizeof(float)) != 0;
    return bad;
}

/* One defective call: expected status and no memory touched. */
#define BAD(call, expected)                                                                        \
    do {                                                                                           \
        arm();                                                                                     \
        CHECK_STATUS(call, expected);                                                              \
        int64_t dmg_ = damage();                                                                   \
        CHECK_MSG(dmg_ == 0, "%s: %lld arena floats modified on error", #call, (long long)dmg_);   \
    } while (0)

/* Same, where either of two statuses is right (a call with two defects). */
#define BADALT(call, expected, alternative)                                                        \
    do {                                                                                           \
        arm();                                                                                     \
        sn_status st2_ = (call);                                                                   \
        tu_checks++;                                                                               \
        if (st2_ != (expected) && st2_ != (alternative))                                           \
            TU_FAIL("%s returned %d, expected %d or %d", #call, (int)st2_, (int)(expected),        \
                    (int)(alternative));                                                           \
        int64_t dmg_ = damage();                                                                   \
        CHECK_MSG(dmg_ == 0, "%s: %lld arena floats modified on error", #call, (long long)dmg_);   \
    } while (0)

/* The valid baseline must succeed (so the defect is what the error reports). */
#define GOOD(call)                                                                                 \
    do {                                                                                           \
        arm();                                                                                     \
        CHECK_OK(call);                                                                            \
    } while (0)

#define B(k) (arena + (k)*1024) /* 1024-float regions of the arena */

static const float NAN_F = NAN, INF_F = INFINITY;
static const sn_norm LN = {SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0, 1e-5f};
static const sn_norm RMS = {SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0, 1e-5f};

/* norm variants with one defect each, and their status */
typedef struct badnorm {
    sn_norm n;
    sn_status st;
} badnorm;
static const badnorm bad_norms[] = {
    {{4, 0, 0, 1e-5f}, SN_ERR_NORM}, /* SN_NORM_SCALE = 3 is the last kind */
    {{-1, 0, 0, 1e-5f}, SN_ERR_NORM},
    {{1000, 0, 0, 1e-5f}, SN_ERR_NORM},
    {{SN_NORM_LAYERNORM, 3, 0, 1e-5f}, SN_ERR_NORM},
    {{SN_NORM_RMSNORM, -1, 0, 1e-5f}, SN_ERR_NORM},
    {{SN_NORM_LAYERNORM, 0, 0, 0.0f}, SN_ERR_EPS},
    {{SN_NORM_LAYERNORM, 0, 0, -1e-5f}, SN_ERR_EPS},
    {{SN_NORM_RMSNORM, 1, 0, -0.0f}, SN_ERR_EPS},
    {{SN_NORM_LAYERNORM, 0, 0, NAN}, SN_ERR_EPS},
    {{SN_NORM_RMSNORM, 1, 0, INFINITY}, SN_ERR_EPS},
    {{SN_NORM_LAYERNORM, 0, 0, -INFINITY}, SN_ERR_EPS},
};
#define N_BAD_NORMS ((int)(sizeof bad_norms / sizeof bad_norms[0]))

/* ------------------------------------------------------------------------------------------- */

static void test_norm_api(void) {
    const int64_t R = 3, D = 6, ld = 8;
    float *x = B(0), *p = B(1), *out = B(2), *st = B(3), *dout = B(4), *dx = B(5), *dp = B(6);
    int64_t np = -5, ns = -6;

    /* sn_ctx_create */
    CHECK_STATUS(sn_ctx_create(NULL), SN_ERR_NULL);

    /* sn_norm_query */
    CHECK_OK(sn_norm_query(&LN, D, NULL, NULL));
    CHECK_OK(sn_norm_query(&LN, D, &np, NULL));
    CHECK(np == 12);
    CHECK_OK(sn_norm_query(&LN, D, NULL, &ns));
    CHECK(ns == 2);
#define QBAD(nptr, d, expected)                                                                    \
    do {                                                                                           \
        np = -5, ns = -6;                                                                          \
        CHECK_STATUS(sn_norm_query(nptr, d, &np, &ns), expected);                                  \
        CHECK_MSG(np == -5 && ns == -6, "sn_norm_query wrote outputs on error");                   \
    } while (0)
    QBAD(NULL, D, SN_ERR_NULL);
    QBAD(&LN, 0, SN_ERR_SHAPE);
    QBAD(&LN, -3, SN_ERR_SHAPE);
    QBAD(&LN, INT64_MAX, SN_ERR_SHAPE); /* 2 * D parameters do not fit */
    for (int k = 0; k < N_BAD_NORMS; k++) QBAD(&bad_norms[k].n, D, bad_norms[k].st);
    {
        sn_norm g = LN;
        g.group = -2;
        QBAD(&g, D, SN_ERR_GROUP);
        g.group = 4; /* does not divide 6 */
        QBAD(&g, D, SN_ERR_GROUP);
        g.group = 12; /* larger than D */
        QBAD(&g, D, SN_ERR_GROUP);
        g.group = 3;
        CHECK_OK(sn_norm_query(&g, D, &np, &ns));
        CHECK(np == 6 && ns == 4);
        sn_norm id = {SN_NORM_IDENTITY, SN_AFFINE_SCALE_SHIFT, 0, 0.0f}; /* eps ignored */
        CHECK_OK(sn_norm_query(&id, D, &np, &ns));
        CHECK(np == 0 && ns == 0);
        id.affine = 7; /* "ignored for SN_NORM_IDENTITY" */
        CHECK_OK(sn_norm_query(&id, D, &np, &ns));
        sn_norm sc = {SN_NORM_SCALE, SN_AFFINE_SCALE_SHIFT, 0, 0.0f}; /* eps not checked */
        CHECK_OK(sn_norm_query(&sc, D, &np, &ns));
        CHECK(np == 12 && ns == 0);
        sc.eps = NAN_F;
        CHECK_OK(sn_norm_query(&sc, D, &np, &ns));
    }

    /* sn_norm_init_params */
    GOOD(sn_norm_init_params(&LN, D, p));
    BAD(sn_norm_init_params(NULL, D, p), SN_ERR_NULL);
    BAD(sn_norm_init_params(&LN, D, NULL), SN_ERR_NULL);
    BAD(sn_norm_init_params(&LN, 0, p), SN_ERR_SHAPE);
    BAD(sn_norm_init_params(&LN, -1, p), SN_ERR_SHAPE);
    for (int k = 0; k < N_BAD_NORMS; k++)
        BAD(sn_norm_init_params(&bad_norms[k].n, D, p), bad_norms[k].st);
    {
        sn_norm g = RMS, na = LN, id = {SN_NORM_IDENTITY, 0, 0, 1e-5f};
        g.group = 5;
        BAD(sn_norm_init_params(&g, D, p), SN_ERR_GROUP);
        na.affine = SN_AFFINE_NONE;
        GOOD(sn_norm_init_params(&na, D, NULL)); /* no parameters: NULL allowed */
        GOOD(sn_norm_init_params(&id, D, NULL));
    }

    /* sn_norm_forward */
    GOOD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, out, ld, st));
    GOOD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, out, ld, NULL));
    GOOD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, x, ld, st)); /* exact alias allowed */
    GOOD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, x + (R - 1) * ld + D, ld, st)); /* adjacent */
    BAD(sn_norm_forward(NULL, NULL, R, D, x, ld, p, out, ld, st), SN_ERR_NULL);
    BAD(sn_norm_forward(NULL, &LN, R, D, NULL, ld, p, out, ld, st), SN_ERR_NULL);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, NULL, out, ld, st), SN_ERR_NULL);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, NULL, ld, st), SN_ERR_NULL);
    BAD(sn_norm_forward(NULL, &LN, 0, D, x, ld, p, out, ld, st), SN_ERR_SHAPE);
    BAD(sn_norm_forward(NULL, &LN, -1, D, x, ld, p, out, ld, st), SN_ERR_SHAPE);
    BAD(sn_norm_forward(NULL, &LN, R, 0, x, ld, p, out, ld, st), SN_ERR_SHAPE);
    BAD(sn_norm_forward(NULL, &LN, R, -6, x, ld, p, out, ld, st), SN_ERR_SHAPE);
    BAD(sn_norm_forward(NULL, &LN, INT64_MAX / 4, D, x, ld, p, out, ld, st), SN_ERR_SHAPE);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, D - 1, p, out, ld, st), SN_ERR_STRIDE);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, out, D - 1, st), SN_ERR_STRIDE);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, 0, p, out, ld, st), SN_ERR_STRIDE);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, -8, p, out, ld, st), SN_ERR_STRIDE);
    for (int k = 0; k < N_BAD_NORMS; k++)
        BAD(sn_norm_forward(NULL, &bad_norms[k].n, R, D, x, ld, p, out, ld, st), bad_norms[k].st);
    {
        sn_norm g = LN;
        g.group = 4;
        BAD(sn_norm_forward(NULL, &g, R, D, x, ld, p, out, ld, st), SN_ERR_GROUP);
        g.group = -1;
        BAD(sn_norm_forward(NULL, &g, R, D, x, ld, p, out, ld, st), SN_ERR_GROUP);
    }
    /* forbidden overlaps */
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, x + 1, ld, st), SN_ERR_ALIAS);
    BAD(sn_norm_forward(NULL, &LN, R, D, x + 1, ld, p, x, ld, st), SN_ERR_ALIAS);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, x, ld + 1, st), SN_ERR_ALIAS); /* other ld */
    BAD(sn_norm_forward(NULL, &LN, R, D, x, 2 * D, p, x + D, 2 * D, st), SN_ERR_ALIAS); /* spans */
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, p + 3, ld, st), SN_ERR_ALIAS);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, out, ld, x + 2), SN_ERR_ALIAS);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, out, ld, out + ld), SN_ERR_ALIAS);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, p, out, ld, p + 11), SN_ERR_ALIAS);
    BAD(sn_norm_forward(NULL, &LN, R, D, x, ld, st, out, ld, st), SN_ERR_ALIAS);

    /* sn_norm_backward */
    GOOD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, ld, dp, 0));
    GOOD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, ld, NULL, SN_ACCUMULATE));
    GOOD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dout, ld, dp, 0));
    BAD(sn_norm_backward(NULL, NULL, R, D, dout, ld, x, ld, p, st, dx, ld, dp, 0), SN_ERR_NULL);
    BAD(sn_norm_backward(NULL, &LN, R, D, NULL, ld, x, ld, p, st, dx, ld, dp, 0), SN_ERR_NULL);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, NULL, ld, p, st, dx, ld, dp, 0), SN_ERR_NULL);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, NULL, st, dx, ld, dp, 0), SN_ERR_NULL);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, NULL, dx, ld, dp, 0), SN_ERR_NULL);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, NULL, ld, dp, 0), SN_ERR_NULL);
    BAD(sn_norm_backward(NULL, &LN, 0, D, dout, ld, x, ld, p, st, dx, ld, dp, 0), SN_ERR_SHAPE);
    BAD(sn_norm_backward(NULL, &LN, R, -1, dout, ld, x, ld, p, st, dx, ld, dp, 0), SN_ERR_SHAPE);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, 5, x, ld, p, st, dx, ld, dp, 0), SN_ERR_STRIDE);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, 5, p, st, dx, ld, dp, 0), SN_ERR_STRIDE);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, 5, dp, 0), SN_ERR_STRIDE);
    for (int k = 0; k < N_BAD_NORMS; k++)
        BAD(sn_norm_backward(NULL, &bad_norms[k].n, R, D, dout, ld, x, ld, p, st, dx, ld, dp, 0),
            bad_norms[k].st);
    {
        sn_norm g = RMS;
        g.group = 5;
        BAD(sn_norm_backward(NULL, &g, R, D, dout, ld, x, ld, p, st, dx, ld, dp, 0), SN_ERR_GROUP);
    }
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, ld, dp, 4u), SN_ERR_FLAGS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, ld, dp, 0x80000000u),
        SN_ERR_FLAGS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, ld, dp, SN_ACCUMULATE_Y),
        SN_ERR_FLAGS); /* the Y flag belongs to the two-stream backwards only */
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dout, ld, dp, SN_ACCUMULATE),
        SN_ERR_ALIAS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dout + 1, ld, dp, 0),
        SN_ERR_ALIAS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dout, ld + 2, dp, 0),
        SN_ERR_ALIAS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, x, ld, dp, 0), SN_ERR_ALIAS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, st + 1, ld, dp, 0), SN_ERR_ALIAS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, ld, p + 1, 0), SN_ERR_ALIAS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, ld, dx + ld, 0),
        SN_ERR_ALIAS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, ld, dout + 4, 0),
        SN_ERR_ALIAS);
    BAD(sn_norm_backward(NULL, &LN, R, D, dout, ld, x, ld, p, st, dx, ld, st, 0), SN_ERR_ALIAS);
}

/* ------------------------------------------------------------------------------------------- */

static void test_fuse_api(void) {
    const int64_t R = 3, D = 5, ld = 7;
    float *x = B(0), *y = B(1), *p = B(2), *u = B(3), *h = B(4), *st = B(5), *dh = B(6);
    float *du = B(7), *dx = B(8), *dy = B(9), *dp = B(10);
    sn_fuse f, f0;
    CHECK_OK(sn_fuse_init(&f, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f));

    /* sn_fuse_init: *f untouched on error */
#define FI_BAD(kind, aff, eps, expected)                                                           \
    do {                                                                                           \
        memset(&f0, 0xA5, sizeof f0);                                                              \
        sn_fuse f1_ = f0;                                                                          \
        CHECK_STATUS(sn_fuse_init(&f0, (sn_norm_kind)(kind), (sn_affine)(aff), eps), expected);    \
        CHECK_MSG(memcmp(&f0, &f1_, sizeof f0) == 0, "sn_fuse_init wrote *f on error");            \
    } while (0)
    CHECK_STATUS(sn_fuse_init(NULL, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f), SN_ERR_NULL);
    FI_BAD(4, 0, 1e-5f, SN_ERR_NORM);
    FI_BAD(-1, 0, 1e-5f, SN_ERR_NORM);
    FI_BAD(0, 3, 1e-5f, SN_ERR_NORM);
    FI_BAD(0, 0, 0.0f, SN_ERR_EPS);
    FI_BAD(1, 1, -1.0f, SN_ERR_EPS);
    FI_BAD(0, 0, NAN_F, SN_ERR_EPS);
    FI_BAD(0, 0, INF_F, SN_ERR_EPS);

    /* the fuse variants with one bad norm in one of the three slots */
    sn_fuse bf[3 * N_BAD_NORMS + 6];
    sn_status bs[3 * N_BAD_NORMS + 6];
    int nbf = 0;
    for (int slot = 0; slot < 3; slot++)
        for (int k = 0; k < N_BAD_NORMS; k++) {
            bf[nbf] = f;
            sn_norm *t = slot == 0 ? &bf[nbf].x : slot == 1 ? &bf[nbf].y : &bf[nbf].out;
            *t = bad_norms[k].n;
            bs[nbf++] = bad_norms[k].st;
        }
    for (int slot = 0; slot < 3; slot++) { /* groups are not allowed in a fuse, even dividing */
        bf[nbf] = f;
        sn_norm *t = slot == 0 ? &bf[nbf].x : slot == 1 ? &bf[nbf].y : &bf[nbf].out;
        t->group = 5;
        bs[nbf++] = SN_ERR_GROUP;
        bf[nbf] = f;
        t = slot == 0 ? &bf[nbf].x : slot == 1 ? &bf[nbf].y : &bf[nbf].out;
        t->group = -1;
        bs[nbf++] = SN_ERR_GROUP;
    }

    /* sn_fuse_query */
    int64_t np = -5, ns = -6;
    CHECK_OK(sn_fuse_query(&f, D, &np, &ns));
    CHECK(np == 30 && ns == 6);
    CHECK_OK(sn_fuse_query(&f, D, NULL, NULL));
#define FQ_BAD(fp, d, expected)                                                                    \
    do {                                                                                           \
        np = -5, ns = -6;                                                                          \
        CHECK_STATUS(sn_fuse_query(fp, d, &np, &ns), expected);                                    \
        CHECK_MSG(np == -5 && ns == -6, "sn_fuse_query wrote outputs on error");                   \
    } while (0)
    FQ_BAD(NULL, D, SN_ERR_NULL);
    FQ_BAD(&f, 0, SN_ERR_SHAPE);
    FQ_BAD(&f, -1, SN_ERR_SHAPE);
    for (int k = 0; k < nbf; k++) FQ_BAD(&bf[k], D, bs[k]);

    /* sn_fuse_init_params */
    GOOD(sn_fuse_init_params(&f, D, p));
    BAD(sn_fuse_init_params(NULL, D, p), SN_ERR_NULL);
    BAD(sn_fuse_init_params(&f, D, NULL), SN_ERR_NULL);
    BAD(sn_fuse_init_params(&f, 0, p), SN_ERR_SHAPE);
    for (int k = 0; k < nbf; k++) BAD(sn_fuse_init_params(&bf[k], D, p), bs[k]);

    /* sn_fuse_forward */
    GOOD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, h, ld, st));
    GOOD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, NULL, ld, h, ld, NULL));
    BAD(sn_fuse_forward(NULL, NULL, R, D, x, ld, y, ld, p, u, ld, h, ld, st), SN_ERR_NULL);
    BAD(sn_fuse_forward(NULL, &f, R, D, NULL, ld, y, ld, p, u, ld, h, ld, st), SN_ERR_NULL);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, NULL, ld, p, u, ld, h, ld, st), SN_ERR_NULL);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, NULL, u, ld, h, ld, st), SN_ERR_NULL);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, NULL, ld, st), SN_ERR_NULL);
    BAD(sn_fuse_forward(NULL, &f, 0, D, x, ld, y, ld, p, u, ld, h, ld, st), SN_ERR_SHAPE);
    BAD(sn_fuse_forward(NULL, &f, R, 0, x, ld, y, ld, p, u, ld, h, ld, st), SN_ERR_SHAPE);
    BAD(sn_fuse_forward(NULL, &f, R, -2, x, ld, y, ld, p, u, ld, h, ld, st), SN_ERR_SHAPE);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, 4, y, ld, p, u, ld, h, ld, st), SN_ERR_STRIDE);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, 4, p, u, ld, h, ld, st), SN_ERR_STRIDE);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, 4, h, ld, st), SN_ERR_STRIDE);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, h, 4, st), SN_ERR_STRIDE);
    for (int k = 0; k < nbf; k++)
        BAD(sn_fuse_forward(NULL, &bf[k], R, D, x, ld, y, ld, p, u, ld, h, ld, st), bs[k]);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, x, ld, st), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, y + 3, ld, st), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, x, ld, h, ld, st), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, y, ld, h, ld, st), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, u, ld, st), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, u + 2, ld, st), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, p + 10, ld, st), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, p, ld, h, ld, st), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, h, ld, h + 1), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, h, ld, x), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, h, ld, u + 5), SN_ERR_ALIAS);
    BAD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, h, ld, p + 29), SN_ERR_ALIAS);

    /* sn_merge_forward */
    GOOD(sn_merge_forward(NULL, &f, R, D, x, ld, y, ld, p, h, ld, st));
    BAD(sn_merge_forward(NULL, NULL, R, D, x, ld, y, ld, p, h, ld, st), SN_ERR_NULL);
    BAD(sn_merge_forward(NULL, &f, R, D, NULL, ld, y, ld, p, h, ld, st), SN_ERR_NULL);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, NULL, ld, p, h, ld, st), SN_ERR_NULL);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, y, ld, NULL, h, ld, st), SN_ERR_NULL);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, y, ld, p, NULL, ld, st), SN_ERR_NULL);
    BAD(sn_merge_forward(NULL, &f, -1, D, x, ld, y, ld, p, h, ld, st), SN_ERR_SHAPE);
    BAD(sn_merge_forward(NULL, &f, R, 0, x, ld, y, ld, p, h, ld, st), SN_ERR_SHAPE);
    BAD(sn_merge_forward(NULL, &f, R, D, x, 4, y, ld, p, h, ld, st), SN_ERR_STRIDE);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, y, 0, p, h, ld, st), SN_ERR_STRIDE);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, y, ld, p, h, 3, st), SN_ERR_STRIDE);
    for (int k = 0; k < nbf; k++)
        BAD(sn_merge_forward(NULL, &bf[k], R, D, x, ld, y, ld, p, h, ld, st), bs[k]);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, y, ld, p, x, ld, st), SN_ERR_ALIAS);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, y, ld, p, y, ld, st), SN_ERR_ALIAS);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, y, ld, p, p + 5, ld, st), SN_ERR_ALIAS);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, y, ld, p, h, ld, h + ld), SN_ERR_ALIAS);
    BAD(sn_merge_forward(NULL, &f, R, D, x, ld, y, ld, p, h, ld, y + 1), SN_ERR_ALIAS);

    /* sn_fuse_backward */
    GOOD(sn_fuse_forward(NULL, &f, R, D, x, ld, y, ld, p, u, ld, h, ld, st));
    GOOD(sn_fuse_backward(NULL, &f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp,
                          0));
    GOOD(sn_fuse_backward(NULL, &f, R, D, dh, ld, NULL, ld, x, ld, y, ld, p, st, dx, ld, dy, ld,
                          NULL, SN_ACCUMULATE | SN_ACCUMULATE_Y));
    GOOD(sn_fuse_backward(NULL, &f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, du, ld, dy, ld, dp,
                          SN_ACCUMULATE_Y)); /* the sub-layer convention */
#define FB(...) sn_fuse_backward(NULL, __VA_ARGS__)
    BAD(FB(NULL, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(FB(&f, R, D, NULL, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(FB(&f, R, D, dh, ld, du, ld, NULL, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, NULL, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, NULL, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, NULL, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, NULL, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, NULL, ld, dp, 0), SN_ERR_NULL);
    BAD(FB(&f, 0, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_SHAPE);
    BAD(FB(&f, R, -1, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_SHAPE);
    BAD(FB(&f, R, D, dh, 4, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_STRIDE);
    BAD(FB(&f, R, D, dh, ld, du, 4, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_STRIDE);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, 4, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_STRIDE);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, 4, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_STRIDE);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, 4, dy, ld, dp, 0), SN_ERR_STRIDE);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, 4, dp, 0), SN_ERR_STRIDE);
    for (int k = 0; k < nbf; k++)
        BAD(FB(&bf[k], R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), bs[k]);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 4u), SN_ERR_FLAGS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0xFFFFFFFFu),
        SN_ERR_FLAGS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, du, ld, dy, ld, dp, SN_ACCUMULATE),
        SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, du + 1, ld, dy, ld, dp, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, du, ld + 1, dy, ld, dp, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dh, ld, dy, ld, dp, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, x, ld, dy, ld, dp, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, du, ld, dp, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dh, ld, dp, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, y, ld, dp, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dx + 2, ld, dp, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, p + 1, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dy + 3, 0), SN_ERR_ALIAS);
    BAD(FB(&f, R, D, dh, ld, du, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, st, 0), SN_ERR_ALIAS);

    /* sn_merge_backward */
#define MB(...) sn_merge_backward(NULL, __VA_ARGS__)
    GOOD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0));
    BAD(MB(NULL, R, D, dh, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(MB(&f, R, D, NULL, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(MB(&f, R, D, dh, ld, NULL, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(MB(&f, R, D, dh, ld, x, ld, NULL, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, NULL, st, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, NULL, dx, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, NULL, ld, dy, ld, dp, 0), SN_ERR_NULL);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, dx, ld, NULL, ld, dp, 0), SN_ERR_NULL);
    BAD(MB(&f, -4, D, dh, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_SHAPE);
    BAD(MB(&f, R, 0, dh, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_SHAPE);
    BAD(MB(&f, R, D, dh, 1, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), SN_ERR_STRIDE);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, dx, 2, dy, ld, dp, 0), SN_ERR_STRIDE);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, dx, ld, dy, 3, dp, 0), SN_ERR_STRIDE);
    for (int k = 0; k < nbf; k++)
        BAD(MB(&bf[k], R, D, dh, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 0), bs[k]);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dp, 8u), SN_ERR_FLAGS);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, dh, ld, dy, ld, dp, 0), SN_ERR_ALIAS);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, dx, ld, dh, ld, dp, 0), SN_ERR_ALIAS);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, dx, ld, dx, ld, dp, 0), SN_ERR_ALIAS);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, x + 1, ld, dy, ld, dp, 0), SN_ERR_ALIAS);
    BAD(MB(&f, R, D, dh, ld, x, ld, y, ld, p, st, dx, ld, dy, ld, dx + ld, 0), SN_ERR_ALIAS);
}

/* ------------------------------------------------------------------------------------------- */

static void test_stream_api(void) {
    const int64_t R = 4, D = 3, ld = 5;
    float *z = B(0), *u = B(1), *y = B(2), *xo = B(3), *yo = B(4);
    static const float bad_c[] = {0.0f, -0.0f, -1.0f, NAN, INFINITY, -INFINITY, -FLT_MIN};
    /* sn_apply_forward */
#define AF(...) sn_apply_forward(NULL, __VA_ARGS__)
    GOOD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, yo, ld));
    GOOD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, u, ld, y, ld));      /* in place */
    GOOD(AF(R, D, FLT_MIN, z, ld, u, ld, y, ld, xo, ld, yo, ld)); /* tiny but > 0 */
    BAD(AF(R, D, 2.0f, NULL, ld, u, ld, y, ld, xo, ld, yo, ld), SN_ERR_NULL);
    BAD(AF(R, D, 2.0f, z, ld, NULL, ld, y, ld, xo, ld, yo, ld), SN_ERR_NULL);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, NULL, ld, xo, ld, yo, ld), SN_ERR_NULL);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, NULL, ld, yo, ld), SN_ERR_NULL);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, NULL, ld), SN_ERR_NULL);
    BAD(AF(0, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, yo, ld), SN_ERR_SHAPE);
    BAD(AF(R, 0, 2.0f, z, ld, u, ld, y, ld, xo, ld, yo, ld), SN_ERR_SHAPE);
    BAD(AF(R, -D, 2.0f, z, ld, u, ld, y, ld, xo, ld, yo, ld), SN_ERR_SHAPE);
    BAD(AF(INT64_MAX / 2, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, yo, ld), SN_ERR_SHAPE);
    BAD(AF(R, D, 2.0f, z, 2, u, ld, y, ld, xo, ld, yo, ld), SN_ERR_STRIDE);
    BAD(AF(R, D, 2.0f, z, ld, u, 2, y, ld, xo, ld, yo, ld), SN_ERR_STRIDE);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, 2, xo, ld, yo, ld), SN_ERR_STRIDE);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, xo, 2, yo, ld), SN_ERR_STRIDE);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, yo, -5), SN_ERR_STRIDE);
    for (size_t k = 0; k < sizeof bad_c / sizeof bad_c[0]; k++)
        BAD(AF(R, D, bad_c[k], z, ld, u, ld, y, ld, xo, ld, yo, ld), SN_ERR_SCALE);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, z, ld, yo, ld), SN_ERR_ALIAS);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, y, ld, yo, ld), SN_ERR_ALIAS);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, u + 1, ld, yo, ld), SN_ERR_ALIAS);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, u, ld + 1, yo, ld), SN_ERR_ALIAS);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, u, ld), SN_ERR_ALIAS);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, z + 2, ld), SN_ERR_ALIAS);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, y + ld, ld), SN_ERR_ALIAS);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, xo, ld), SN_ERR_ALIAS);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, xo, ld, xo + 1, ld), SN_ERR_ALIAS);
    BAD(AF(R, D, 2.0f, z, ld, u, ld, y, ld, u, ld, u, ld), SN_ERR_ALIAS);

    /* sn_apply_backward */
    float *dxo = B(5), *dyo = B(6), *dz = B(7);
#define AB(...) sn_apply_backward(NULL, __VA_ARGS__)
    GOOD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dz, ld, 0));
    GOOD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dz, ld, SN_ACCUMULATE));
    GOOD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dxo, ld, 0));
    GOOD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dyo, ld, 0));
    BAD(AB(R, D, 2.0f, NULL, ld, dyo, ld, dz, ld, 0), SN_ERR_NULL);
    BAD(AB(R, D, 2.0f, dxo, ld, NULL, ld, dz, ld, 0), SN_ERR_NULL);
    BAD(AB(R, D, 2.0f, dxo, ld, dyo, ld, NULL, ld, 0), SN_ERR_NULL);
    BAD(AB(0, D, 2.0f, dxo, ld, dyo, ld, dz, ld, 0), SN_ERR_SHAPE);
    BAD(AB(R, -1, 2.0f, dxo, ld, dyo, ld, dz, ld, 0), SN_ERR_SHAPE);
    BAD(AB(R, D, 2.0f, dxo, 1, dyo, ld, dz, ld, 0), SN_ERR_STRIDE);
    BAD(AB(R, D, 2.0f, dxo, ld, dyo, 1, dz, ld, 0), SN_ERR_STRIDE);
    BAD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dz, 1, 0), SN_ERR_STRIDE);
    for (size_t k = 0; k < sizeof bad_c / sizeof bad_c[0]; k++)
        BAD(AB(R, D, bad_c[k], dxo, ld, dyo, ld, dz, ld, 0), SN_ERR_SCALE);
    BAD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dz, ld, 2u), SN_ERR_FLAGS);
    BAD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dz, ld, 0x100u), SN_ERR_FLAGS);
    BAD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dxo, ld, SN_ACCUMULATE), SN_ERR_ALIAS);
    BAD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dyo, ld, SN_ACCUMULATE), SN_ERR_ALIAS);
    BAD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dxo + 1, ld, 0), SN_ERR_ALIAS);
    BAD(AB(R, D, 2.0f, dxo, ld, dyo, ld, dyo, ld + 3, 0), SN_ERR_ALIAS);

    /* sn_split_forward */
    float *e = B(8), *x = B(9), *ys = B(10);
#define SF(...) sn_split_forward(NULL, __VA_ARGS__)
    GOOD(SF(R, D, e, ld, x, ld, ys, ld));
    GOOD(SF(R, D, e, ld, e, ld, ys, ld));
    BAD(SF(R, D, NULL, ld, x, ld, ys, ld), SN_ERR_NULL);
    BAD(SF(R, D, e, ld, NULL, ld, ys, ld), SN_ERR_NULL);
    BAD(SF(R, D, e, ld, x, ld, NULL, ld), SN_ERR_NULL);
    BAD(SF(-1, D, e, ld, x, ld, ys, ld), SN_ERR_SHAPE);
    BAD(SF(R, 0, e, ld, x, ld, ys, ld), SN_ERR_SHAPE);
    BAD(SF(R, D, e, 2, x, ld, ys, ld), SN_ERR_STRIDE);
    BAD(SF(R, D, e, ld, x, 2, ys, ld), SN_ERR_STRIDE);
    BAD(SF(R, D, e, ld, x, ld, ys, 2), SN_ERR_STRIDE);
    BAD(SF(R, D, e, ld, x, ld, x, ld), SN_ERR_ALIAS);
    BAD(SF(R, D, e, ld, x, ld, x + 2, ld), SN_ERR_ALIAS);
    BAD(SF(R, D, e, ld, x, ld, e, ld), SN_ERR_ALIAS); /* only x may alias e */
    BAD(SF(R, D, e, ld, e + 1, ld, ys, ld), SN_ERR_ALIAS);
    BAD(SF(R, D, e, ld, e, ld + 1, ys, ld), SN_ERR_ALIAS);
    BAD(SF(R, D, e, ld, e, ld, e, ld), SN_ERR_ALIAS);

    /* sn_split_backward */
    float *dx = B(11), *dy = B(12), *de = B(13);
#define SB(...) sn_split_backward(NULL, __VA_ARGS__)
    GOOD(SB(R, D, dx, ld, dy, ld, de, ld, 0));
    GOOD(SB(R, D, dx, ld, dy, ld, dx, ld, 0));
    GOOD(SB(R, D, dx, ld, dy, ld, dy, ld, 0));
    GOOD(SB(R, D, dx, ld, dy, ld, de, ld, SN_ACCUMULATE));
    BAD(SB(R, D, NULL, ld, dy, ld, de, ld, 0), SN_ERR_NULL);
    BAD(SB(R, D, dx, ld, NULL, ld, de, ld, 0), SN_ERR_NULL);
    BAD(SB(R, D, dx, ld, dy, ld, NULL, ld, 0), SN_ERR_NULL);
    BAD(SB(0, D, dx, ld, dy, ld, de, ld, 0), SN_ERR_SHAPE);
    BAD(SB(R, 0, dx, ld, dy, ld, de, ld, 0), SN_ERR_SHAPE);
    BAD(SB(R, D, dx, 0, dy, ld, de, ld, 0), SN_ERR_STRIDE);
    BAD(SB(R, D, dx, ld, dy, 0, de, ld, 0), SN_ERR_STRIDE);
    BAD(SB(R, D, dx, ld, dy, ld, de, 0, 0), SN_ERR_STRIDE);
    BAD(SB(R, D, dx, ld, dy, ld, de, ld, 2u), SN_ERR_FLAGS);
    BAD(SB(R, D, dx, ld, dy, ld, de, ld, 0x40000000u), SN_ERR_FLAGS);
    BAD(SB(R, D, dx, ld, dy, ld, dx, ld, SN_ACCUMULATE), SN_ERR_ALIAS);
    BAD(SB(R, D, dx, ld, dy, ld, dy, ld, SN_ACCUMULATE), SN_ERR_ALIAS);
    BAD(SB(R, D, dx, ld, dy, ld, dy + 1, ld, 0), SN_ERR_ALIAS);
    BAD(SB(R, D, dx, ld, dy, ld, dx, ld - 1 + 2, 0), SN_ERR_ALIAS);
}

/* ------------------------------------------------------------------------------------------- */

/* A net description with one defect and its status. */
typedef struct badnet {
    sn_net net;
    sn_status st;
    const char *what;
} badnet;

static int make_bad_nets(const sn_net *good, badnet *out, const float *bad_scales) {
    int n = 0;
#define ADD(expr, status, text)                                                                    \
    do {                                                                                           \
        out[n].net = *good;                                                                        \
        sn_net *q = &out[n].net;                                                                   \
        expr;                                                                                      \
        out[n].st = status, out[n].what = text;                                                    \
        n++;                                                                                       \
    } while (0)
    ADD(q->placement = SN_PLACEMENT_COUNT, SN_ERR_PLACEMENT, "placement 11");
    ADD(q->placement = -1, SN_ERR_PLACEMENT, "placement -1");
    ADD(q->placement = 1000, SN_ERR_PLACEMENT, "placement 1000");
    ADD(q->n_sublayers = 0, SN_ERR_SHAPE, "S = 0");
    ADD(q->n_sublayers = -2, SN_ERR_SHAPE, "S = -2");
    ADD(q->n_sublayers = (1 << 10) + 1, SN_ERR_SHAPE, "S > 2^10");
    ADD(q->d = 0, SN_ERR_SHAPE, "D = 0");
    ADD(q->d = -5, SN_ERR_SHAPE, "D = -5");
    ADD(q->norm.kind = 4, SN_ERR_NORM, "norm kind 4");
    ADD(q->norm.affine = 4, SN_ERR_NORM, "norm affine 4");
    ADD(q->input_norm.kind = -1, SN_ERR_NORM, "input norm kind -1");
    ADD(q->input_norm.affine = 3, SN_ERR_NORM, "input norm affine 3");
    ADD(q->norm.group = 1, SN_ERR_GROUP, "norm group 1");
    ADD(q->norm.group = -1, SN_ERR_GROUP, "norm group -1");
    ADD(q->input_norm.group = 5, SN_ERR_GROUP, "input norm group 5");
    ADD(q->norm.eps = 0.0f, SN_ERR_EPS, "norm eps 0");
    ADD(q->norm.eps = -1e-5f, SN_ERR_EPS, "norm eps < 0");
    ADD(q->norm.eps = NAN, SN_ERR_EPS, "norm eps NaN");
    ADD(q->norm.eps = INFINITY, SN_ERR_EPS, "norm eps inf");
    ADD(q->input_norm.eps = NAN, SN_ERR_EPS, "input norm eps NaN");
    ADD(q->input_norm.eps = 0.0f, SN_ERR_EPS, "input norm eps 0");
    ADD(q->scale_rule = 3, SN_ERR_CONFIG, "scale rule 3");
    ADD(q->scale_rule = -1, SN_ERR_CONFIG, "scale rule -1");
    ADD((q->scale_rule = SN_SCALE_EXPLICIT, q->scales = NULL), SN_ERR_SCALE, "explicit, NULL");
    for (int k = 0; k < 5; k++) /* each bad value in sub-layer k % 2 of scales */
        ADD((q->scale_rule = SN_SCALE_EXPLICIT, q->scales = bad_scales + 2 * k), SN_ERR_SCALE,
            "explicit scale <= 0 / NaN / inf");
    ADD(q->flags = 1, SN_ERR_CONFIG, "flags 1");
    ADD(q->flags = 0x80000000u, SN_ERR_CONFIG, "flags high bit");
    for (int k = 0; k < 6; k++)
        ADD(q->reserved[k] = (uint64_t)1 << (k * 9), SN_ERR_CONFIG, "reserved word nonzero");
    if (good->placement == SN_PLACEMENT_HYPER_CONN) {
        ADD(q->hc_rate = 0, SN_ERR_STREAMS, "hc_rate 0");
        ADD(q->hc_rate = SN_HC_MAX_RATE + 1, SN_ERR_STREAMS, "hc_rate 9");
        ADD(q->hc_rate = -1, SN_ERR_STREAMS, "hc_rate -1");
        ADD(q->hc_dynamic = 2, SN_ERR_CONFIG, "hc_dynamic 2");
    } else {
        ADD(q->hc_rate = 1, SN_ERR_CONFIG, "hc_rate set outside HC");
        ADD(q->hc_dynamic = 1, SN_ERR_CONFIG, "hc_dynamic set outside HC");
    }
    ADD(q->act_dtype = SN_DTYPE_COUNT, SN_ERR_CONFIG, "act_dtype unknown");
    if (good->placement == SN_PLACEMENT_MIX_LN) {
        ADD(q->mix_fraction = 1.5f, SN_ERR_CONFIG, "mix_fraction > 1");
        ADD(q->mix_fraction = -0.1f, SN_ERR_CONFIG, "mix_fraction < 0");
        ADD(q->mix_fraction = NAN, SN_ERR_CONFIG, "mix_fraction NaN");
    } else {
        ADD(q->mix_fraction = 0.25f, SN_ERR_CONFIG, "mix_fraction outside Mix-LN");
    }
    ADD(q->scales = bad_scales + 1, SN_ERR_CONFIG, "scales without SN_SCALE_EXPLICIT");
#undef ADD
    return n;
}

static void test_net_api(void) {
    const int S = 2;
    const int64_t D = 5, R = 3, ld = 7;
    static const float good_scales[2] = {1.5f, 0.5f};
    static const float bad_scales[12] = {0.0f, 1.0f,     1.0f,  -2.0f, NAN,  1.0f,
                                         1.0f, INFINITY, -0.0f, 1.0f,  1.0f, 1.0f};
    sn_net good, tmp;

    /* sn_net_init: *net unchanged on error */
#define NI_BAD(pl, s_, d_, kind, eps, expected)                                                    \
    do {                                                                                           \
        memset(&tmp, 0x6B, sizeof tmp);                                                            \
        sn_net t0_ = tmp;                                                                          \
        CHECK_STATUS(sn_net_init(&tmp, (sn_placement)(pl), s_, d_, (sn_norm_kind)(kind), eps),     \
                     expected);                                                                    \
        CHECK_MSG(memcmp(&tmp, &t0_, sizeof tmp) == 0, "sn_net_init wrote *net on error");         \
    } while (0)
    CHECK_STATUS(sn_net_init(NULL, SN_PLACEMENT_SIAMESE, S, D, SN_NORM_LAYERNORM, 1e-5f),
                 SN_ERR_NULL);
    NI_BAD(SN_PLACEMENT_COUNT, S, D, SN_NORM_LAYERNORM, 1e-5f, SN_ERR_PLACEMENT);
    NI_BAD(-1, S, D, SN_NORM_LAYERNORM, 1e-5f, SN_ERR_PLACEMENT);
    NI_BAD(SN_PLACEMENT_SIAMESE, 0, D, SN_NORM_LAYERNORM, 1e-5f, SN_ERR_SHAPE);
    NI_BAD(SN_PLACEMENT_SIAMESE, -1, D, SN_NORM_LAYERNORM, 1e-5f, SN_ERR_SHAPE);
    NI_BAD(SN_PLACEMENT_SIAMESE, (1 << 20) + 1, D, SN_NORM_LAYERNORM, 1e-5f, SN_ERR_SHAPE);
    NI_BAD(SN_PLACEMENT_PRE_NORM, S, 0, SN_NORM_LAYERNORM, 1e-5f, SN_ERR_SHAPE);
    NI_BAD(SN_PLACEMENT_POST_NORM, S, D, 7, 1e-5f, SN_ERR_NORM);
    NI_BAD(SN_PLACEMENT_POST_NORM, S, D, -1, 1e-5f, SN_ERR_NORM);
    NI_BAD(SN_PLACEMENT_SIAMESE, S, D, SN_NORM_RMSNORM, 0.0f, SN_ERR_EPS);
    NI_BAD(SN_PLACEMENT_SIAMESE, S, D, SN_NORM_RMSNORM, NAN_F, SN_ERR_EPS);
    NI_BAD(SN_PLACEMENT_SIAMESE, S, D, SN_NORM_RMSNORM, -INF_F, SN_ERR_EPS);

    for (int pl = 0; pl < SN_PLACEMENT_COUNT; pl++) {
        const int family = pl == SN_PLACEMENT_SIAMESE || pl == SN_PLACEMENT_SIAMESE_PAPER ||
                           pl == SN_PLACEMENT_SIAMESE_HYBRID_PRE;
        CHECK_OK(sn_net_init(&good, (sn_placement)pl, S, D, SN_NORM_LAYERNORM, 1e-5f));
        CHECK_OK(sn_net_check(&good));
        badnet bn[64];
        int nb = make_bad_nets(&good, bn, bad_scales);
        int64_t np = 0, apr = 0, wpr = 0;
        CHECK_OK(sn_net_sizes(&good, &np, &apr, &wpr));
        CHECK_MSG(np <= 1024 && R * apr <= 8192 && R * wpr <= 8192, "net too big for the arena");
        float *params = B(20), *grads = B(21), *acts = B(24), *work = B(32);
        float *e = B(40), *h = B(41), *z = B(42), *out = B(43), *dout = B(44), *dz = B(45);
        float *dh = B(46), *de = B(47);
        /* valid passes: forward, backward (a bad-argument check varies one field) */
        const sn_net_pass fw = {R, params, acts, NULL, NULL}, bw = {R, params, acts, grads, work};
        CHECK_STATUS(sn_net_check(NULL), SN_ERR_NULL);

        /* explicit scales valid */
        tmp = good, tmp.scale_rule = SN_SCALE_EXPLICIT, tmp.scales = good_scales;
        CHECK_OK(sn_net_check(&tmp));

        for (int k = 0; k < nb; k++) {
            const sn_net *q = &bn[k].net;
            sn_status want = bn[k].st, alt = bn[k].st;
            /* input_norm and scales are only used by SiameseNorm: other placements may
             * ignore them, so only check them there */
            /* input_norm is only used by the SiameseNorm family, scales also by DeepNorm and
             * SpanNorm: other placements may ignore them, so only check them there */
            if (strstr(bn[k].what, "input norm") && !family) continue;
            if (strstr(bn[k].what, "explicit") && !family && pl != SN_PLACEMENT_DEEPNORM &&
                pl != SN_PLACEMENT_SPAN_NORM)
                continue;
            CHECK_MSG(sn_net_check(q) == want, "placement %d, %s: sn_net_check -> %d, want %d", pl,
                      bn[k].what, (int)sn_net_check(q), (int)want);
            int64_t a = -9, b = -9, c = -9;
            CHECK_MSG(sn_net_sizes(q, &a, &b, &c) == want && a == -9 && b == -9 && c == -9,
                      "placement %d, %s: sn_net_sizes status/outputs", pl, bn[k].what);
            float cval = -9.0f;
            CHECK_MSG(sn_net_scale(q, 0, &cval) == want && cval == -9.0f,
                      "placement %d, %s: sn_net_scale status/output", pl, bn[k].what);
            float gain = -9.0f;
            CHECK_MSG(sn_net_init_gain(q, &gain) == want && gain == -9.0f,
                      "placement %d, %s: sn_net_init_gain status/output", pl, bn[k].what);
            sn_norm nd;
            memset(&nd, 0x5A, sizeof nd);
            sn_norm nd0 = nd;
            int64_t off = -9;
            CHECK_MSG(sn_net_norm_at(q, 0, 0, &nd, &off) == want && off == -9 &&
                          memcmp(&nd, &nd0, sizeof nd) == 0,
                      "placement %d, %s: sn_net_norm_at status/outputs", pl, bn[k].what);
            BAD(sn_net_init_params(q, params), want);
            BAD(sn_net_split(NULL, q, &fw, e, ld), want);
            BAD(sn_net_merge(NULL, q, &fw, out, ld), want);
            BAD(sn_net_merge_backward(NULL, q, &bw, dout, ld), want);
            /* with S <= 0 sub-layer 0 does not exist either: SN_ERR_INDEX is as right as
             * SN_ERR_SHAPE there (two defects); the memory must be untouched all the same */
            if (q->n_sublayers <= 0 && want == SN_ERR_SHAPE)
                want = SN_ERR_INDEX, alt = SN_ERR_SHAPE;
            BADALT(sn_net_enter(NULL, q, &fw, 0, h, ld), want, alt);
            BADALT(sn_net_exit(NULL, q, &fw, 0, z, ld), want, alt);
            BADALT(sn_net_exit_backward(NULL, q, &bw, 0, dz, ld, 0), want, alt);
            BADALT(sn_net_enter_backward(NULL, q, &bw, 0, dh, ld), want, alt);
            BAD(sn_net_split_backward(NULL, q, &bw, de, ld, 0), bn[k].st);
        }

        /* sn_net_scale */
        float cval = -9.0f;
        CHECK_OK(sn_net_scale(&good, S - 1, &cval));
        CHECK_MSG(family                        ? fabsf(cval - 1.41421356f) < 1e-6f
                  : pl == SN_PLACEMENT_DEEPNORM ? fabsf(cval - 1.18920712f) < 1e-6f /* (2L)^1/4 */
                                                : cval == 1.0f, /* SpanNorm: sqrt(L), L = 1 */
                  "placement %d: sn_net_scale(S - 1) = %.9g", pl, (double)cval);
        cval = -9.0f;
        CHECK_STATUS(sn_net_scale(NULL, 0, &cval), SN_ERR_NULL);
        CHECK_STATUS(sn_net_scale(&good, 0, NULL), SN_ERR_NULL);
        CHECK_STATUS(sn_net_scale(&good, -1, &cval), SN_ERR_INDEX);
        CHECK_STATUS(sn_net_scale(&good, S, &cval), SN_ERR_INDEX);
        CHECK_STATUS(sn_net_scale(&good, 1 << 30, &cval), SN_ERR_INDEX);
        CHECK(cval == -9.0f);
        /* sn_net_init_gain: DeepNorm beta = (8L)^(-1/4), L = ceil(S/2) = 1; else 1 */
        float gain = -9.0f;
        CHECK_OK(sn_net_init_gain(&good, &gain));
        CHECK_MSG(pl == SN_PLACEMENT_DEEPNORM ? fabsf(gain - 0.594603558f) < 1e-6f : gain == 1.0f,
                  "placement %d: init gain %.9g", pl, (double)gain);
        CHECK_STATUS(sn_net_init_gain(NULL, &gain), SN_ERR_NULL);
        CHECK_STATUS(sn_net_init_gain(&good, NULL), SN_ERR_NULL);
        /* sn_net_sizes: sizes that do not fit in int64 are a shape error, not a wrap-around */
        {
            sn_net big = good;
            big.n_sublayers = 1 << 10, big.d = (int64_t)1 << 55;
            int64_t a = -9, b2 = -9, c = -9;
            CHECK_MSG(sn_net_sizes(&big, &a, &b2, &c) == SN_ERR_SHAPE && a == -9 && b2 == -9 &&
                          c == -9,
                      "placement %d: sn_net_sizes(S = 2^10, D = 2^55) did not report SN_ERR_SHAPE "
                      "(got n_params %lld, acts %lld, work %lld)",
                      pl, (long long)a, (long long)b2, (long long)c);
        }
        /* sn_net_sizes */
        CHECK_STATUS(sn_net_sizes(NULL, &np, &apr, &wpr), SN_ERR_NULL);
        CHECK_OK(sn_net_sizes(&good, NULL, NULL, NULL));
        /* sn_net_norm_at */
        {
            sn_norm nd;
            int64_t off = -9;
            CHECK_OK(sn_net_norm_at(&good, 0, 0, NULL, NULL));
            CHECK_STATUS(sn_net_norm_at(NULL, 0, 0, &nd, &off), SN_ERR_NULL);
            CHECK_STATUS(sn_net_norm_at(&good, S + 1, 0, &nd, &off), SN_ERR_INDEX);
            CHECK_STATUS(sn_net_norm_at(&good, 0, -1, &nd, &off), SN_ERR_INDEX);
            CHECK_STATUS(sn_net_norm_at(&good, 0, 3, &nd, &off), SN_ERR_INDEX);
            if (pl == SN_PLACEMENT_POST_NORM || pl == SN_PLACEMENT_DEEPNORM)
                CHECK_STATUS(sn_net_norm_at(&good, S, 0, &nd, &off), SN_ERR_INDEX);
            if (pl != SN_PLACEMENT_PERI_LN)
                if (!family && pl != SN_PLACEMENT_PERI_LN &&
                    !(pl == SN_PLACEMENT_HYPER_CONN && good.hc_dynamic))
                    CHECK_STATUS(sn_net_norm_at(&good, 0, 1, &nd, &off), SN_ERR_INDEX);
            CHECK(off == -9);
        }
        /* sn_net_init_params */
        GOOD(sn_net_init_params(&good, params));
        BAD(sn_net_init_params(NULL, params), SN_ERR_NULL);
        BAD(sn_net_init_params(&good, NULL), SN_ERR_NULL);

        /* sn_net_split */
        const sn_net *g = &good;
        GOOD(sn_net_split(NULL, g, &fw, e, ld));
        BAD(sn_net_split(NULL, NULL, &fw, e, ld), SN_ERR_NULL);
        BAD(sn_net_split(NULL, g, &fw, NULL, ld), SN_ERR_NULL);
        BAD(sn_net_split(NULL, g, &(sn_net_pass){R, params, NULL, NULL, NULL}, e, ld), SN_ERR_NULL);
        BAD(sn_net_split(NULL, g, &(sn_net_pass){0, params, acts, NULL, NULL}, e, ld),
            SN_ERR_SHAPE);
        BAD(sn_net_split(NULL, g, &(sn_net_pass){-1, params, acts, NULL, NULL}, e, ld),
            SN_ERR_SHAPE);
        BAD(sn_net_split(NULL, g, &fw, e, D - 1), SN_ERR_STRIDE);
        BAD(sn_net_split(NULL, g, &fw, acts + 3, ld), SN_ERR_ALIAS);
        BAD(sn_net_split(NULL, g, &(sn_net_pass){R, params, params, NULL, NULL}, e, ld),
            SN_ERR_ALIAS);
        /* sn_net_enter */
        GOOD(sn_net_enter(NULL, g, &fw, 0, h, ld));
        BAD(sn_net_enter(NULL, NULL, &fw, 0, h, ld), SN_ERR_NULL);
        BAD(sn_net_enter(NULL, g, &(sn_net_pass){R, NULL, acts, NULL, NULL}, 0, h, ld),
            SN_ERR_NULL);
        BAD(sn_net_enter(NULL, g, &(sn_net_pass){R, params, NULL, NULL, NULL}, 0, h, ld),
            SN_ERR_NULL);
        BAD(sn_net_enter(NULL, g, &fw, 0, NULL, ld), SN_ERR_NULL);
        BAD(sn_net_enter(NULL, g, &fw, -1, h, ld), SN_ERR_INDEX);
        BAD(sn_net_enter(NULL, g, &fw, S, h, ld), SN_ERR_INDEX);
        BAD(sn_net_enter(NULL, g, &(sn_net_pass){0, params, acts, NULL, NULL}, 0, h, ld),
            SN_ERR_SHAPE);
        BAD(sn_net_enter(NULL, g, &fw, 0, h, 2), SN_ERR_STRIDE);
        BAD(sn_net_enter(NULL, g, &fw, 0, acts + 1, ld), SN_ERR_ALIAS);
        BAD(sn_net_enter(NULL, g, &fw, 0, params, ld), SN_ERR_ALIAS);
        BAD(sn_net_enter(NULL, g, &(sn_net_pass){R, params, params, NULL, NULL}, 0, h, ld),
            SN_ERR_ALIAS);
        /* sn_net_exit */
        GOOD(sn_net_exit(NULL, g, &fw, 0, z, ld));
        BAD(sn_net_exit(NULL, NULL, &fw, 0, z, ld), SN_ERR_NULL);
        BAD(sn_net_exit(NULL, g, &fw, 0, NULL, ld), SN_ERR_NULL);
        BAD(sn_net_exit(NULL, g, &(sn_net_pass){R, NULL, acts, NULL, NULL}, 0, z, ld), SN_ERR_NULL);
        BAD(sn_net_exit(NULL, g, &(sn_net_pass){R, params, NULL, NULL, NULL}, 0, z, ld),
            SN_ERR_NULL);
        BAD(sn_net_exit(NULL, g, &fw, -1, z, ld), SN_ERR_INDEX);
        BAD(sn_net_exit(NULL, g, &fw, S, z, ld), SN_ERR_INDEX);
        BAD(sn_net_exit(NULL, g, &(sn_net_pass){-3, params, acts, NULL, NULL}, 0, z, ld),
            SN_ERR_SHAPE);
        BAD(sn_net_exit(NULL, g, &fw, 0, z, 4), SN_ERR_STRIDE);
        BAD(sn_net_exit(NULL, g, &fw, 0, acts, ld), SN_ERR_ALIAS);
        BAD(sn_net_exit(NULL, g, &(sn_net_pass){R, acts + 2, acts, NULL, NULL}, 0, z, ld),
            SN_ERR_ALIAS);
        /* sn_net_merge */
        GOOD(sn_net_merge(NULL, g, &fw, out, ld));
        BAD(sn_net_merge(NULL, NULL, &fw, out, ld), SN_ERR_NULL);
        BAD(sn_net_merge(NULL, g, &(sn_net_pass){R, NULL, acts, NULL, NULL}, out, ld), SN_ERR_NULL);
        BAD(sn_net_merge(NULL, g, &(sn_net_pass){R, params, NULL, NULL, NULL}, out, ld),
            SN_ERR_NULL);
        BAD(sn_net_merge(NULL, g, &fw, NULL, ld), SN_ERR_NULL);
        BAD(sn_net_merge(NULL, g, &(sn_net_pass){0, params, acts, NULL, NULL}, out, ld),
            SN_ERR_SHAPE);
        BAD(sn_net_merge(NULL, g, &fw, out, 1), SN_ERR_STRIDE);
        BAD(sn_net_merge(NULL, g, &fw, acts + 4, ld), SN_ERR_ALIAS);
        BAD(sn_net_merge(NULL, g, &fw, params, ld), SN_ERR_ALIAS);
        /* sn_net_merge_backward */
        GOOD(sn_net_merge_backward(NULL, g, &bw, dout, ld));
        BAD(sn_net_merge_backward(NULL, NULL, &bw, dout, ld), SN_ERR_NULL);
        BAD(sn_net_merge_backward(NULL, g, &bw, NULL, ld), SN_ERR_NULL);
        BAD(sn_net_merge_backward(NULL, g, &(sn_net_pass){R, NULL, acts, grads, work}, dout, ld),
            SN_ERR_NULL);
        BAD(sn_net_merge_backward(NULL, g, &(sn_net_pass){R, params, NULL, grads, work}, dout, ld),
            SN_ERR_NULL);
        GOOD(sn_net_merge_backward(NULL, g, &(sn_net_pass){R, params, acts, NULL, work}, dout,
                                   ld)); /* NULL grads: skip them */
        BAD(sn_net_merge_backward(NULL, g, &(sn_net_pass){R, params, acts, grads, NULL}, dout, ld),
            SN_ERR_NULL);
        BAD(sn_net_merge_backward(NULL, g, &(sn_net_pass){-1, params, acts, grads, work}, dout, ld),
            SN_ERR_SHAPE);
        BAD(sn_net_merge_backward(NULL, g, &bw, dout, 3), SN_ERR_STRIDE);
        BAD(sn_net_merge_backward(NULL, g, &bw, work + 1, ld), SN_ERR_ALIAS);
        BAD(sn_net_merge_backward(NULL, g, &bw, grads, ld), SN_ERR_ALIAS);
        BAD(sn_net_merge_backward(NULL, g, &(sn_net_pass){R, params, acts, params, work}, dout, ld),
            SN_ERR_ALIAS);
        BAD(sn_net_merge_backward(NULL, g, &(sn_net_pass){R, params, acts, grads, acts}, dout, ld),
            SN_ERR_ALIAS);
        BAD(sn_net_merge_backward(NULL, g, &(sn_net_pass){R, params, acts, work + 1, work}, dout,
                                  ld),
            SN_ERR_ALIAS);
        /* sn_net_exit_backward */
        GOOD(sn_net_exit_backward(NULL, g, &bw, S - 1, dz, ld, 0));
        BAD(sn_net_exit_backward(NULL, NULL, &bw, 0, dz, ld, 0), SN_ERR_NULL);
        BAD(sn_net_exit_backward(NULL, g, &(sn_net_pass){R, NULL, acts, grads, work}, 0, dz, ld, 0),
            SN_ERR_NULL);
        BAD(sn_net_exit_backward(NULL, g, &(sn_net_pass){R, params, NULL, grads, work}, 0, dz, ld,
                                 0),
            SN_ERR_NULL);
        GOOD(sn_net_exit_backward(NULL, g, &(sn_net_pass){R, params, acts, NULL, work}, 0, dz, ld,
                                  0));
        BAD(sn_net_exit_backward(NULL, g, &(sn_net_pass){R, params, acts, grads, NULL}, 0, dz, ld,
                                 0),
            SN_ERR_NULL);
        BAD(sn_net_exit_backward(NULL, g, &bw, 0, NULL, ld, 0), SN_ERR_NULL);
        BAD(sn_net_exit_backward(NULL, g, &bw, -1, dz, ld, 0), SN_ERR_INDEX);
        BAD(sn_net_exit_backward(NULL, g, &bw, S, dz, ld, 0), SN_ERR_INDEX);
        BAD(sn_net_exit_backward(NULL, g, &(sn_net_pass){0, params, acts, grads, work}, 0, dz, ld,
                                 0),
            SN_ERR_SHAPE);
        BAD(sn_net_exit_backward(NULL, g, &bw, 0, dz, 4, 0), SN_ERR_STRIDE);
        BAD(sn_net_exit_backward(NULL, g, &bw, 0, dz, ld, 2u), SN_ERR_FLAGS);
        BAD(sn_net_exit_backward(NULL, g, &bw, 0, dz, ld, 4u), SN_ERR_FLAGS);
        BAD(sn_net_exit_backward(NULL, g, &bw, 0, work + 2, ld, 0), SN_ERR_ALIAS);
        BAD(sn_net_exit_backward(NULL, g, &bw, 0, grads, ld, 0), SN_ERR_ALIAS);
        BAD(sn_net_exit_backward(NULL, g, &bw, 0, acts, ld, 0), SN_ERR_ALIAS);
        BAD(sn_net_exit_backward(NULL, g, &(sn_net_pass){R, params, acts, grads, grads}, 0, dz, ld,
                                 0),
            SN_ERR_ALIAS);
        /* sn_net_enter_backward */
        GOOD(sn_net_enter_backward(NULL, g, &bw, S - 1, dh, ld));
        BAD(sn_net_enter_backward(NULL, NULL, &bw, 0, dh, ld), SN_ERR_NULL);
        BAD(sn_net_enter_backward(NULL, g, &bw, 0, NULL, ld), SN_ERR_NULL);
        BAD(sn_net_enter_backward(NULL, g, &(sn_net_pass){R, NULL, acts, grads, work}, 0, dh, ld),
            SN_ERR_NULL);
        BAD(sn_net_enter_backward(NULL, g, &(sn_net_pass){R, params, NULL, grads, work}, 0, dh, ld),
            SN_ERR_NULL);
        GOOD(
            sn_net_enter_backward(NULL, g, &(sn_net_pass){R, params, acts, NULL, work}, 0, dh, ld));
        BAD(sn_net_enter_backward(NULL, g, &(sn_net_pass){R, params, acts, grads, NULL}, 0, dh, ld),
            SN_ERR_NULL);
        BAD(sn_net_enter_backward(NULL, g, &bw, -1, dh, ld), SN_ERR_INDEX);
        BAD(sn_net_enter_backward(NULL, g, &bw, S, dh, ld), SN_ERR_INDEX);
        BAD(sn_net_enter_backward(NULL, g, &(sn_net_pass){-1, params, acts, grads, work}, 0, dh,
                                  ld),
            SN_ERR_SHAPE);
        BAD(sn_net_enter_backward(NULL, g, &bw, 0, dh, 0), SN_ERR_STRIDE);
        BAD(sn_net_enter_backward(NULL, g, &bw, 0, work, ld), SN_ERR_ALIAS);
        BAD(sn_net_enter_backward(NULL, g, &(sn_net_pass){R, params, acts, grads, acts + 1}, 0, dh,
                                  ld),
            SN_ERR_ALIAS);
        BAD(sn_net_enter_backward(NULL, g, &(sn_net_pass){R, params, acts, params, work}, 0, dh,
                                  ld),
            SN_ERR_ALIAS);
        /* sn_net_split_backward */
        GOOD(sn_net_split_backward(NULL, g, &bw, de, ld, 0));
        GOOD(sn_net_split_backward(NULL, g, &bw, de, ld, SN_ACCUMULATE));
        BAD(sn_net_split_backward(NULL, NULL, &bw, de, ld, 0), SN_ERR_NULL);
        BAD(sn_net_split_backward(NULL, g, &bw, NULL, ld, 0), SN_ERR_NULL);
        BAD(sn_net_split_backward(NULL, g, &(sn_net_pass){R, params, acts, grads, NULL}, de, ld, 0),
            SN_ERR_NULL);
        BAD(sn_net_split_backward(NULL, g, &(sn_net_pass){0, params, acts, grads, work}, de, ld, 0),
            SN_ERR_SHAPE);
        BAD(sn_net_split_backward(NULL, g, &bw, de, 2, 0), SN_ERR_STRIDE);
        BAD(sn_net_split_backward(NULL, g, &bw, de, ld, 2u), SN_ERR_FLAGS);
        BAD(sn_net_split_backward(NULL, g, &bw, de, ld, 0x10u), SN_ERR_FLAGS);
        BAD(sn_net_split_backward(NULL, g, &bw, work + 1, ld, 0), SN_ERR_ALIAS);
        BAD(sn_net_split_backward(NULL, g, &bw, acts, ld, 0), SN_ERR_ALIAS);
        BAD(sn_net_split_backward(NULL, g, &bw, params + 1, ld, 0), SN_ERR_ALIAS);
        /* a NULL sn_net_pass */
        BAD(sn_net_split(NULL, g, NULL, e, ld), SN_ERR_NULL);
        BAD(sn_net_enter(NULL, g, NULL, 0, h, ld), SN_ERR_NULL);
        BAD(sn_net_exit(NULL, g, NULL, 0, z, ld), SN_ERR_NULL);
        BAD(sn_net_merge(NULL, g, NULL, out, ld), SN_ERR_NULL);
        BAD(sn_net_merge_backward(NULL, g, NULL, dout, ld), SN_ERR_NULL);
        BAD(sn_net_exit_backward(NULL, g, NULL, 0, dz, ld, 0), SN_ERR_NULL);
        BAD(sn_net_enter_backward(NULL, g, NULL, 0, dh, ld), SN_ERR_NULL);
        BAD(sn_net_split_backward(NULL, g, NULL, de, ld, 0), SN_ERR_NULL);
        /* a forward call neither reads nor checks grads and work */
        GOOD(sn_net_enter(NULL, g, &(sn_net_pass){R, params, acts, acts, acts}, 0, h, ld));
        /* inference: the state is the one written buffer of the pass */
        int64_t spr = -9;
        CHECK_OK(sn_net_infer_sizes(g, &spr));
        CHECK_MSG(R * spr <= 8192, "state too big for the arena");
        BAD(sn_net_infer_sizes(NULL, &spr), SN_ERR_NULL);
        CHECK_STATUS(sn_net_infer_sizes(g, NULL), SN_ERR_NULL);
        float *state = B(24);
#define INF(rows, par, st) (&(sn_net_infer){rows, par, st})
        GOOD(sn_net_infer_split(NULL, g, INF(R, params, state), e, ld));
        GOOD(sn_net_infer_enter(NULL, g, INF(R, params, state), S - 1, h, ld));
        GOOD(sn_net_infer_exit(NULL, g, INF(R, params, state), S - 1, z, ld));
        GOOD(sn_net_infer_merge(NULL, g, INF(R, params, state), out, ld));
        BAD(sn_net_infer_split(NULL, NULL, INF(R, params, state), e, ld), SN_ERR_NULL);
        BAD(sn_net_infer_split(NULL, g, NULL, e, ld), SN_ERR_NULL);
        BAD(sn_net_infer_split(NULL, g, INF(R, params, NULL), e, ld), SN_ERR_NULL);
        BAD(sn_net_infer_split(NULL, g, INF(R, params, state), NULL, ld), SN_ERR_NULL);
        BAD(sn_net_infer_split(NULL, g, INF(0, params, state), e, ld), SN_ERR_SHAPE);
        BAD(sn_net_infer_split(NULL, g, INF(R, params, state), e, D - 1), SN_ERR_STRIDE);
        BAD(sn_net_infer_split(NULL, g, INF(R, params, state), state + 1, ld), SN_ERR_ALIAS);
        BAD(sn_net_infer_enter(NULL, g, NULL, 0, h, ld), SN_ERR_NULL);
        BAD(sn_net_infer_enter(NULL, g, INF(R, params, state), -1, h, ld), SN_ERR_INDEX);
        BAD(sn_net_infer_enter(NULL, g, INF(R, params, state), S, h, ld), SN_ERR_INDEX);
        BAD(sn_net_infer_enter(NULL, g, INF(R, params, state), 0, NULL, ld), SN_ERR_NULL);
        BAD(sn_net_infer_enter(NULL, g, INF(R, params, state), 0, params, ld), SN_ERR_ALIAS);
        BAD(sn_net_infer_enter(NULL, g, INF(R, params, params), 0, h, ld), SN_ERR_ALIAS);
        BAD(sn_net_infer_exit(NULL, g, NULL, 0, z, ld), SN_ERR_NULL);
        BAD(sn_net_infer_exit(NULL, g, INF(R, params, state), S, z, ld), SN_ERR_INDEX);
        BAD(sn_net_infer_exit(NULL, g, INF(R, params, state), 0, z, 1), SN_ERR_STRIDE);
        BAD(sn_net_infer_exit(NULL, g, INF(R, params, state), 0, state, ld), SN_ERR_ALIAS);
        BAD(sn_net_infer_merge(NULL, g, NULL, out, ld), SN_ERR_NULL);
        BAD(sn_net_infer_merge(NULL, g, INF(-1, params, state), out, ld), SN_ERR_SHAPE);
        BAD(sn_net_infer_merge(NULL, g, INF(R, params, state), state + 2, ld), SN_ERR_ALIAS);
        if (np > 0) BAD(sn_net_infer_merge(NULL, g, INF(R, NULL, state), out, ld), SN_ERR_NULL);
#undef INF
    }
}

/* ------------------------------------------------------------------------------------------- */

static void dummy_pfor(void *user, int64_t n_tasks, sn_task_fn task, void *task_arg) {
    (void)user;
    for (int64_t i = 0; i < n_tasks; i++) task(task_arg, i);
}

static void test_ctx_api(void) {
    sn_ctx *ctx = NULL;
    CHECK_STATUS(sn_ctx_create(NULL), SN_ERR_NULL);
    CHECK_OK(sn_ctx_create(&ctx));
    if (!ctx) return;
    /* kernel paths */
    CHECK(sn_isa_available(SN_ISA_AUTO) == 1 && sn_isa_available(SN_ISA_SCALAR) == 1);
    CHECK(sn_isa_available((sn_isa)4) == 0 && sn_isa_available((sn_isa)-1) == 0);
    CHECK(strcmp(sn_isa_name(SN_ISA_AUTO), "auto") == 0);
    CHECK(strcmp(sn_isa_name(SN_ISA_SCALAR), "scalar") == 0);
    CHECK(strcmp(sn_isa_name(SN_ISA_AVX2), "avx2") == 0);
    CHECK(strcmp(sn_isa_name(SN_ISA_AVX512), "avx512") == 0);
    CHECK(strcmp(sn_isa_name((sn_isa)4), "unknown") == 0);
    CHECK(strcmp(sn_isa_name((sn_isa)-7), "unknown") == 0);
    CHECK(sn_ctx_isa(NULL) != SN_ISA_AUTO && sn_isa_available(sn_ctx_isa(NULL)));
    CHECK_STATUS(sn_ctx_set_isa(NULL, SN_ISA_SCALAR), SN_ERR_NULL);
    CHECK_OK(sn_ctx_set_isa(ctx, SN_ISA_SCALAR));
    CHECK(sn_ctx_isa(ctx) == SN_ISA_SCALAR);
    CHECK_STATUS(sn_ctx_set_isa(ctx, (sn_isa)4), SN_ERR_CONFIG);
    CHECK_STATUS(sn_ctx_set_isa(ctx, (sn_isa)-1), SN_ERR_CONFIG);
    CHECK(sn_ctx_isa(ctx) == SN_ISA_SCALAR);
    for (int k = SN_ISA_AVX2; k <= SN_ISA_AVX512; k++)
        if (!sn_isa_available((sn_isa)k)) {
            /* refused: the context keeps the path it had (AVX2 after a successful k = AVX2) */
            sn_isa before = sn_ctx_isa(ctx);
            CHECK_STATUS(sn_ctx_set_isa(ctx, (sn_isa)k), SN_ERR_UNSUPPORTED);
            CHECK(sn_ctx_isa(ctx) == before);
        } else {
            CHECK_OK(sn_ctx_set_isa(ctx, (sn_isa)k));
            CHECK(sn_ctx_isa(ctx) == (sn_isa)k);
        }
    CHECK_OK(sn_ctx_set_isa(ctx, SN_ISA_AUTO));
    CHECK(sn_ctx_isa(ctx) == sn_ctx_isa(NULL));
    /* threads */
    CHECK(sn_ctx_threads(NULL) == 1 && sn_ctx_threads(ctx) == 1);
    CHECK_STATUS(sn_ctx_set_threads(NULL, 2), SN_ERR_NULL);
    CHECK_STATUS(sn_ctx_set_threads(ctx, -1), SN_ERR_CONFIG);
    CHECK_STATUS(sn_ctx_set_threads(ctx, SN_MAX_THREADS + 1), SN_ERR_CONFIG);
    CHECK(sn_ctx_threads(ctx) == 1);
    CHECK_OK(sn_ctx_set_threads(ctx, 2));
    CHECK(sn_ctx_threads(ctx) == 2);
    CHECK_OK(sn_ctx_set_threads(ctx, 1));
    CHECK(sn_ctx_threads(ctx) == 1);
    /* caller's parallel for */
    CHECK_STATUS(sn_ctx_set_parallel_for(NULL, dummy_pfor, NULL, 2), SN_ERR_NULL);
    CHECK_STATUS(sn_ctx_set_parallel_for(ctx, dummy_pfor, NULL, 0), SN_ERR_CONFIG);
    CHECK_STATUS(sn_ctx_set_parallel_for(ctx, dummy_pfor, NULL, -3), SN_ERR_CONFIG);
    CHECK_STATUS(sn_ctx_set_parallel_for(ctx, dummy_pfor, NULL, SN_MAX_THREADS + 1), SN_ERR_CONFIG);
    CHECK(sn_ctx_threads(ctx) == 1);
    CHECK_OK(sn_ctx_set_parallel_for(ctx, dummy_pfor, NULL, 3));
    CHECK(sn_ctx_threads(ctx) == 3);
    CHECK_OK(sn_ctx_set_parallel_for(ctx, NULL, NULL, 0)); /* back to 1 thread, n ignored */
    CHECK(sn_ctx_threads(ctx) == 1);
    sn_ctx_destroy(ctx);
    sn_ctx_destroy(NULL);
}

int main(void) {
    test_ctx_api();
    test_norm_api();
    test_fuse_api();
    test_stream_api();
    test_net_api();
    return tu_finish("test_errors");
}
