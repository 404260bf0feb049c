/* The placement layer with bf16 streams (act_dtype SN_DTYPE_BF16), for every placement, on every
 * kernel path of this CPU, 1 and 2 threads:
 *   - a bitwise oracle: SiameseNorm and Pre-Norm written out with the bf16 primitives give the
 *     layer's h_i, out, de and parameter gradients bit for bit;
 *   - against the fp32 layer on the same inputs: within a bound for bf16 storage (below);
 *   - bf16 inference is bitwise the bf16 training forward; 2 threads are bitwise 1 thread;
 *   - nothing is written past acts, work or the state; SN_ERR_DTYPE both ways; the sizes. */
#include <math.h>
#include <string.h>

#include "testutil.h"

#define GUARD 64

/* The caller's block, elementwise so that its backward is exact: z = 0.5 h + 0.1 sin(j + i),
 * dh = 0.5 dz, computed in fp32 (bf16 runs round z and dh once, as a bf16 trainer would). */
static float blk_z(int i, int64_t j, float h) { return 0.5f * h + 0.1f * sinf((float)(j + i)); }

/* One training step's results, widened to float: h_i (S x R x D), out, de (R x D), grads. */
typedef struct res {
    float *h, *out, *de, *grads;
} res;

static res res_new(int S, int64_t R, int64_t D, int64_t np) {
    res r = {tu_fzeros((int64_t)S * R * D), tu_fzeros(R * D), tu_fzeros(R * D), tu_fzeros(np + 1)};
    return r;
}
static void res_free(res *r) { free(r->h), free(r->out), free(r->de), free(r->grads); }

/* a matrix of R x D values in the net's type: float, or bf16 (v holds bf16 values widened) */
static void put(int bf16, void *dst, const float *v, int64_t n) {
    for (int64_t k = 0; k < n; k++) {
        if (bf16) ((sn_bf16 *)dst)[k] = sn_bf16_from_f32(v[k]);
        else ((float *)dst)[k] = v[k];
    }
}
static void get(int bf16, const void *src, float *v, int64_t n) {
    for (int64_t k = 0; k < n; k++)
        v[k] = bf16 ? sn_bf16_to_f32(((const sn_bf16 *)src)[k]) : ((const float *)src)[k];
}

/* A training step through the layer (the fp32 calls or the _bf16 ones, as net->act_dtype), and
 * the same forward by inference, which must give the same h and out bit for bit. */
static void run_layer(const sn_ctx *ctx, const sn_net *net, int64_t R, const float *e,
                      const float *dout, const float *params, res *out, const char *what) {
    const int bf16 = net->act_dtype == SN_DTYPE_BF16, S = net->n_sublayers;
    const int64_t D = net->d;
    const size_t es = bf16 ? 2 : 4;
    int64_t np, apr, wpr, spr;
    CHECK_OK(sn_net_sizes(net, &np, &apr, &wpr));
    CHECK_OK(sn_net_infer_sizes(net, &spr));
    float *acts = tu_falloc(R * apr + GUARD), *work = tu_falloc(R * wpr + GUARD);
    float *state = tu_falloc(R * spr + GUARD), *t = tu_falloc(R * D);
    tu_canary_fill(acts, R * apr + GUARD);
    tu_canary_fill(work, R * wpr + GUARD);
    tu_canary_fill(state, R * spr + GUARD);
    void *m = tu_xalloc((size_t)(R * D) * es), *z = tu_xalloc((size_t)(R * D) * es);
    const sn_net_pass p = {R, params, acts, out->grads, work};
    put(bf16, m, e, R * D);
    CHECK_OK(bf16 ? sn_net_split_bf16(ctx, net, &p, m, D) : sn_net_split(ctx, net, &p, m, D));
    for (int i = 0; i < S; i++) {
        CHECK_OK(bf16 ? sn_net_enter_bf16(ctx, net, &p, i, m, D)
                      : sn_net_enter(ctx, net, &p, i, m, D));
        get(bf16, m, out->h + (int64_t)i * R * D, R * D);
        for (int64_t k = 0; k < R * D; k++) t[k] = blk_z(i, k % D, out->h[(int64_t)i * R * D + k]);
        put(bf16, z, t, R * D);
        CHECK_OK(bf16 ? sn_net_exit_bf16(ctx, net, &p, i, z, D)
                      : sn_net_exit(ctx, net, &p, i, z, D));
    }
    CHECK_OK(bf16 ? sn_net_merge_bf16(ctx, net, &p, m, D) : sn_net_merge(ctx, net, &p, m, D));
    get(bf16, m, out->out, R * D);
    put(bf16, m, dout, R * D);
    CHECK_OK(bf16 ? sn_net_merge_backward_bf16(ctx, net, &p, m, D)
                  : sn_net_merge_backward(ctx, net, &p, m, D));
    for (int i = S - 1; i >= 0; i--) {
        CHECK_OK(bf16 ? sn_net_exit_backward_bf16(ctx, net, &p, i, z, D, 0)
                      : sn_net_exit_backward(ctx, net, &p, i, z, D, 0));
        get(bf16, z, t, R * D);
        for (int64_t k = 0; k < R * D; k++) t[k] *= 0.5f;
        put(bf16, z, t, R * D);
        CHECK_OK(bf16 ? sn_net_enter_backward_bf16(ctx, net, &p, i, z, D)
                      : sn_net_enter_backward(ctx, net, &p, i, z, D));
    }
    CHECK_OK(bf16 ? sn_net_split_backward_bf16(ctx, net, &p, m, D, 0)
                  : sn_net_split_backward(ctx, net, &p, m, D, 0));
    get(bf16, m, out->de, R * D);
    CHECK_MSG(tu_guard_damage(acts, R * apr, R * apr + GUARD) == 0 &&
                  tu_guard_damage(work, R * wpr, R * wpr + GUARD) == 0,
              "%s: wrote past acts or work", what);

    /* inference: the same h and out */
    const sn_net_infer inf = {R, params, state};
    put(bf16, m, e, R * D);
    CHECK_OK(bf16 ? sn_net_infer_split_bf16(ctx, net, &inf, m, D)
                  : sn_net_infer_split(ctx, net, &inf, m, D));
    int same = 1;
    for (int i = 0; i < S; i++) {
        CHECK_OK(bf16 ? sn_net_infer_enter_bf16(ctx, net, &inf, i, m, D)
                      : sn_net_infer_enter(ctx, net, &inf, i, m, D));
        get(bf16, m, t, R * D);
        same &= memcmp(t, out->h + (int64_t)i * R * D, (size_t)(R * D) * sizeof(float)) == 0;
        for (int64_t k = 0; k < R * D; k++) t[k] = blk_z(i, k % D, t[k]);
        put(bf16, z, t, R * D);
        CHECK_OK(bf16 ? sn_net_infer_exit_bf16(ctx, net, &inf, i, z, D)
                      : sn_net_infer_exit(ctx, net, &inf, i, z, D));
    }
    CHECK_OK(bf16 ? sn_net_infer_merge_bf16(ctx, net, &inf, m, D)
                  : sn_net_infer_merge(ctx, net, &inf, m, D));
    get(bf16, m, t, R * D);
    same &= memcmp(t, out->out, (size_t)(R * D) * sizeof(float)) == 0;
    CHECK_MSG(same, "%s: inference differs from the training forward", what);
    CHECK_MSG(tu_guard_damage(state, R * spr, R * spr + GUARD) == 0, "%s: wrote past the state",
              what);
    free(acts), free(work), free(state), free(t), free(m), free(z);
}

/* SiameseNorm (default) and Pre-Norm written with the bf16 primitives: the bitwise oracle. */
static void run_primitives(const sn_ctx *ctx, const sn_net *net, int64_t R, const float *e,
                           const float *dout, const float *params, res *o) {
    const int S = net->n_sublayers, two = net->placement == SN_PLACEMENT_SIAMESE;
    const int64_t D = net->d, n = R * D;
    sn_bf16 *x = tu_xalloc((size_t)((S + 1) * n) * 2), *y = tu_xalloc((size_t)((S + 1) * n) * 2);
    sn_bf16 *h = tu_xalloc((size_t)n * 2), *z = tu_xalloc((size_t)n * 2),
            *m = tu_xalloc((size_t)n * 2);
    sn_bf16 *dx = tu_xalloc((size_t)n * 2), *dy = tu_xalloc((size_t)n * 2);
    float *t = tu_falloc(n);
    int64_t spr = 0;
    sn_fuse f = {net->norm, net->norm, net->input_norm}, fm = {net->norm, net->norm, net->norm};
    sn_fuse_query(&f, D, NULL, &spr);
    float *st = tu_falloc((int64_t)(S + 1) * R * (spr + 2));
    int64_t off[3], off2;
    put(1, x, e, n);
    if (two) put(1, y, e, n);
    for (int i = 0; i < S; i++) {
        sn_net_norm_at(net, i, 0, NULL, &off[0]);
        sn_bf16 *xi = x + i * n, *xo = x + (i + 1) * n, *yi = y + i * n, *yo = y + (i + 1) * n;
        float *sti = st + (int64_t)i * R * (spr + 2);
        float c;
        sn_net_scale(net, i, &c);
        if (two)
            CHECK_OK(sn_fuse_forward_bf16(ctx, &f, R, D, xi, D, yi, D, params + off[0], xo, D, h, D,
                                          sti));
        else
            CHECK_OK(
                sn_norm_forward_bf16(ctx, &net->norm, R, D, xi, D, params + off[0], h, D, sti));
        get(1, h, o->h + (int64_t)i * n, n);
        for (int64_t k = 0; k < n; k++) t[k] = blk_z(i, k % D, o->h[(int64_t)i * n + k]);
        put(1, z, t, n);
        if (two) CHECK_OK(sn_apply_forward_bf16(ctx, R, D, c, z, D, xo, D, yi, D, xo, D, yo, D));
        else CHECK_OK(sn_apply_backward_bf16(ctx, R, D, 1.0f, z, D, xi, D, xo, D, 0)); /* x + z */
    }
    sn_net_norm_at(net, S, 0, NULL, &off2);
    float *stS = st + (int64_t)S * R * (spr + 2);
    if (two)
        CHECK_OK(sn_merge_forward_bf16(ctx, &fm, R, D, x + S * n, D, y + S * n, D, params + off2, m,
                                       D, stS));
    else
        CHECK_OK(
            sn_norm_forward_bf16(ctx, &net->norm, R, D, x + S * n, D, params + off2, m, D, stS));
    get(1, m, o->out, n);
    put(1, m, dout, n);
    if (two)
        CHECK_OK(sn_merge_backward_bf16(ctx, &fm, R, D, m, D, x + S * n, D, y + S * n, D,
                                        params + off2, stS, dx, D, dy, D, o->grads + off2, 0));
    else
        CHECK_OK(sn_norm_backward_bf16(ctx, &net->norm, R, D, m, D, x + S * n, D, params + off2,
                                       stS, dx, D, o->grads + off2, 0));
    for (int i = S - 1; i >= 0; i--) {
        sn_net_norm_at(net, i, 0, NULL, &off[0]);
        float c;
        sn_net_scale(net, i, &c);
        float *sti = st + (int64_t)i * R * (spr + 2);
        if (two) CHECK_OK(sn_apply_backward_bf16(ctx, R, D, c, dx, D, dy, D, z, D, 0));
        else CHECK_OK(sn_split_forward_bf16(ctx, R, D, dx, D, z, D, h, D)); /* dz = dx (a copy) */
        get(1, z, t, n);
        for (int64_t k = 0; k < n; k++) t[k] *= 0.5f;
        put(1, h, t, n);
        if (two)
            CHECK_OK(sn_fuse_backward_bf16(ctx, &f, R, D, h, D, dx, D, x + i * n, D, y + i * n, D,
                                           params + off[0], sti, dx, D, dy, D, o->grads + off[0],
                                           SN_ACCUMULATE_Y));
        else
            CHECK_OK(sn_norm_backward_bf16(ctx, &net->norm, R, D, h, D, x + i * n, D,
                                           params + off[0], sti, dx, D, o->grads + off[0],
                                           SN_ACCUMULATE));
    }
    if (two) CHECK_OK(sn_split_backward_bf16(ctx, R, D, dx, D, dy, D, m, D, 0));
    else CHECK_OK(sn_split_forward_bf16(ctx, R, D, dx, D, m, D, h, D));
    get(1, m, o->de, n);
    free(x), free(y), free(h), free(z), free(m), free(dx), free(dy), free(t), free(st);
}

static int same(const float *a, const float *b, int64_t n) {
    return memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

/* largest |a - b| over the largest |b| (at least 1) */
static double rel(const float *a, const float *b, int64_t n) {
    double e = 0.0, m = 1.0;
    for (int64_t k = 0; k < n; k++) {
        e = fmax(e, fabs((double)a[k] - (double)b[k]));
        m = fmax(m, fabs((double)b[k]));
    }
    return e / m;
}

static void one(const sn_ctx *c1, const sn_ctx *c2, const char *path, sn_placement pl,
                sn_norm_kind kind, int64_t D) {
    const int S = 6;
    const int64_t R = D == 64 ? 259 : 9; /* 259 x 64 > 16384: the 2-thread context splits */
    sn_net n32, n16;
    CHECK_OK(sn_net_init(&n32, pl, S, D, kind, 1e-5f));
    n16 = n32;
    n16.act_dtype = SN_DTYPE_BF16;
    int64_t np;
    CHECK_OK(sn_net_sizes(&n32, &np, NULL, NULL));
    tu_rng g = {0xB16 + (uint64_t)pl * 97 + (uint64_t)D};
    float *params = tu_falloc(np + 1), *e = tu_falloc(R * D), *dout = tu_falloc(R * D);
    CHECK_OK(sn_net_init_params(&n32, params));
    for (int64_t k = 0; k < np; k++) params[k] += (float)tu_unif(&g, -0.3, 0.3);
    /* Hyper-Connections' connection weights a little off their initialisation (A_r = I + 0.3
     * noise would make the n streams grow geometrically through S sub-layers, and the bf16
     * bound below is for a network whose streams are carried, not amplified) */
    int64_t co, cn;
    tu_rng gc = {0xC0 + (uint64_t)D};
    for (int32_t i = 0; sn_net_conn_at(&n32, i, &co, &cn) == SN_OK; i++) {
        float *cp = tu_falloc(np + 1);
        CHECK_OK(sn_net_init_params(&n32, cp));
        for (int64_t k = 0; k < cn; k++)
            params[co + k] = cp[co + k] + (float)tu_unif(&gc, -0.05, 0.05);
        free(cp);
    }
    for (int64_t k = 0; k < R * D; k++) {
        e[k] = sn_bf16_to_f32(sn_bf16_from_f32((float)tu_gauss(&g)));
        dout[k] = sn_bf16_to_f32(sn_bf16_from_f32((float)tu_gauss(&g)));
    }
    char what[160];
    snprintf(what, sizeof what, "%s %s %s D=%lld", path, sn_placement_name(pl),
             kind == SN_NORM_LAYERNORM ? "LN" : "RMS", (long long)D);
    res a = res_new(S, R, D, np), b = res_new(S, R, D, np), f = res_new(S, R, D, np);
    run_layer(c1, &n16, R, e, dout, params, &a, what);
    run_layer(c2, &n16, R, e, dout, params, &b, what);
    CHECK_MSG(same(a.h, b.h, (int64_t)S * R * D) && same(a.out, b.out, R * D) &&
                  same(a.de, b.de, R * D) && same(a.grads, b.grads, np),
              "%s: 2 threads differ from 1", what);
    if (pl == SN_PLACEMENT_SIAMESE || pl == SN_PLACEMENT_PRE_NORM) {
        res q = res_new(S, R, D, np);
        run_primitives(c1, &n16, R, e, dout, params, &q);
        CHECK_MSG(same(a.h, q.h, (int64_t)S * R * D) && same(a.out, q.out, R * D) &&
                      same(a.de, q.de, R * D) && same(a.grads, q.grads, np),
                  "%s: the layer differs from the bf16 primitives (h %d out %d de %d grads %d)",
                  what, same(a.h, q.h, (int64_t)S * R * D), same(a.out, q.out, R * D),
                  same(a.de, q.de, R * D), same(a.grads, q.grads, np));
        res_free(&q);
    }
    /* Against fp32 storage: each stage rounds its streams once (2^-9 relative), and an error in
     * a stream is carried, not amplified, by the normalised blocks; over S = 6 sub-layers and the
     * merge (and as many backward stages) 2^-4 of the largest magnitude bounds what the fp32
     * and bf16 layers may differ by (observed: about 2^-6). */
    run_layer(c1, &n32, R, e, dout, params, &f, what);
    const double tol = 0x1p-4;
    CHECK_MSG(rel(a.out, f.out, R * D) < tol && rel(a.de, f.de, R * D) < tol &&
                  rel(a.grads, f.grads, np) < tol,
              "%s: bf16 vs fp32 storage: out %.3g de %.3g grads %.3g (bound %.3g)", what,
              rel(a.out, f.out, R * D), rel(a.de, f.de, R * D), rel(a.grads, f.grads, np), tol);
    if (getenv("SN_TEST_VERBOSE"))
        printf("%-40s bf16 vs fp32: out %.2e de %.2e grads %.2e\n", what, rel(a.out, f.out, R * D),
               rel(a.de, f.de, R * D), rel(a.grads, f.grads, np));
    res_free(&a), res_free(&b), res_free(&f);
    free(params), free(e), free(dout);
}

static void dtype_errors(void) {
    sn_net n32, n16;
    CHECK_OK(sn_net_init(&n32, SN_PLACEMENT_SIAMESE, 2, 8, SN_NORM_LAYERNORM, 1e-5f));
    n16 = n32;
    n16.act_dtype = SN_DTYPE_BF16;
    CHECK_OK(sn_net_check(&n16));
    int64_t a32, a16, w32, w16, s32, s16;
    CHECK_OK(sn_net_sizes(&n32, NULL, &a32, &w32));
    CHECK_OK(sn_net_sizes(&n16, NULL, &a16, &w16));
    CHECK_OK(sn_net_infer_sizes(&n32, &s32));
    CHECK_OK(sn_net_infer_sizes(&n16, &s16));
    /* streams half the size; the statistics (fp32) the same */
    CHECK(w16 * 2 == w32 && a16 < a32 && s16 < s32);
    float acts[64 * 4 * 8] = {0}, params[64] = {0};
    sn_bf16 b[4 * 8] = {0};
    float f[4 * 8] = {0};
    const sn_net_pass p = {4, params, acts, NULL, NULL};
    CHECK_STATUS(sn_net_split(NULL, &n16, &p, f, 8), SN_ERR_DTYPE);
    CHECK_STATUS(sn_net_split_bf16(NULL, &n32, &p, b, 8), SN_ERR_DTYPE);
    CHECK_STATUS(sn_net_merge_backward_bf16(NULL, &n32, &p, b, 8), SN_ERR_DTYPE);
    n16.d = 4097;
    CHECK_STATUS(sn_net_check(&n16), SN_ERR_UNSUPPORTED);
    n16.act_dtype = 7;
    n16.d = 8;
    CHECK_STATUS(sn_net_check(&n16), SN_ERR_CONFIG);
}

int main(void) {
    dtype_errors();
    static const int64_t Ds[] = {1, 7, 64, 100};
    for (int isa = SN_ISA_SCALAR; isa <= SN_ISA_AVX512; isa++) {
        sn_ctx *c1 = tu_isa_ctx(isa), *c2 = tu_isa_ctx(isa);
        if (!c1 || !c2 || sn_ctx_set_threads(c2, 2) != SN_OK) {
            sn_ctx_destroy(c1), sn_ctx_destroy(c2);
            continue;
        }
        for (int pl = 0; pl < SN_PLACEMENT_COUNT; pl++)
            for (int k = 0; k < 2; k++)
                for (size_t d = 0; d < sizeof Ds / sizeof Ds[0]; d++)
                    one(c1, c2, sn_isa_name((sn_isa)isa), (sn_placement)pl,
                        k ? SN_NORM_RMSNORM : SN_NORM_LAYERNORM, Ds[d]);
        sn_ctx_destroy(c1), sn_ctx_destroy(c2);
    }
    return tu_finish("test_net_bf16");
}
