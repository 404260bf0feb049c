/* One norm, one result: the header's Numerics promise that "a norm computed by sn_norm_forward,
 * inside sn_fuse_forward or by the placement layer gives the same bits for the same row and
 * parameters", checked with memcmp on every kernel path.
 *
 * The fuse computes its statistics in its own kernels (two rows at a time, the first sweep of
 * N_out's statistics riding along while s is built), so each path's fuse must use exactly the
 * accumulation pattern of its norm kernels. For each path, kind and width:
 *   u  == sn_norm_forward(N_x, x)
 *   h  == sn_norm_forward(N_out, sn_norm_forward(N_x, x) + sn_norm_forward(N_y, y))
 *   the merge's output == the fuse's h
 *   the saved statistics likewise.
 * Widths cover one partial vector (24), whole vectors (32, 64, 768: 32 and 64 are the rows of
 * four vectors the fuse specialises on AVX2 and AVX-512), partial tails (100, 1000) and
 * the wide-row kernels (1100 > the two-row fuse's limit); R = 7 gives row pairs and a single
 * row. Kinds: LayerNorm, RMSNorm, and a fuse mixing them. Giving one statistic another
 * accumulation pattern (vsum's, say, two accumulator sets instead of four) fails 104 checks;
 * the special-case tests, at D = 24, did not notice. */
#include "testutil.h"

static int64_t nparams_of(const sn_norm *n, int64_t D) {
    int64_t np = 0, spr = 0;
    CHECK_OK(sn_norm_query(n, D, &np, &spr));
    return np;
}
static int64_t nstats_of(const sn_norm *n, int64_t D) {
    int64_t np = 0, spr = 0;
    CHECK_OK(sn_norm_query(n, D, &np, &spr));
    return spr;
}

static void same(const char *what, const char *isa, const char *kinds, int64_t D, const float *a,
                 const float *b, int64_t n) {
    int64_t bad = 0;
    for (int64_t k = 0; k < n; k++) bad += memcmp(&a[k], &b[k], sizeof(float)) != 0;
    CHECK_MSG(bad == 0, "%s %s D=%lld: %s differs from the norm's in %lld of %lld floats", isa,
              kinds, (long long)D, what, (long long)bad, (long long)n);
}

static void check(sn_ctx *ctx, const char *isa, const sn_fuse *f, const char *kinds, int64_t D,
                  tu_rng *g) {
    const int64_t R = 7, n = R * D;
    int64_t np = 0, spr = 0;
    CHECK_OK(sn_fuse_query(f, D, &np, &spr));
    const int64_t npx = nparams_of(&f->x, D), npy = nparams_of(&f->y, D);
    const int64_t sx = nstats_of(&f->x, D), sy = nstats_of(&f->y, D), so = nstats_of(&f->out, D);
    float *x = tu_falloc(n), *y = tu_falloc(n), *p = tu_falloc(np > 0 ? np : 1);
    float *u = tu_falloc(n), *h = tu_falloc(n), *hm = tu_falloc(n), *st = tu_falloc(R * spr);
    float *stm = tu_falloc(R * spr), *nx = tu_falloc(n), *ny = tu_falloc(n), *s = tu_falloc(n);
    float *nh = tu_falloc(n), *tx = tu_falloc(R * sx + 1), *ty = tu_falloc(R * sy + 1);
    float *to = tu_falloc(R * so + 1);
    tu_fill(g, x, n, -2.0, 3.0);
    tu_fill(g, y, n, -1.0, 1.5);
    tu_fill(g, p, np, 0.5, 1.5);
    CHECK_OK(sn_fuse_forward(ctx, f, R, D, x, D, y, D, p, u, D, h, D, st));
    CHECK_OK(sn_merge_forward(ctx, f, R, D, x, D, y, D, p, hm, D, stm));
    CHECK_OK(sn_norm_forward(ctx, &f->x, R, D, x, D, p, nx, D, tx));
    CHECK_OK(sn_norm_forward(ctx, &f->y, R, D, y, D, p + npx, ny, D, ty));
    for (int64_t k = 0; k < n; k++) s[k] = nx[k] + ny[k];
    CHECK_OK(sn_norm_forward(ctx, &f->out, R, D, s, D, p + npx + npy, nh, D, to));
    same("u", isa, kinds, D, u, nx, n);
    same("h", isa, kinds, D, h, nh, n);
    same("the merge's output", isa, kinds, D, hm, nh, n);
    same("the merge's statistics", isa, kinds, D, stm, st, R * spr);
    for (int64_t r = 0; r < R; r++) {
        same("N_x's statistics", isa, kinds, D, st + r * spr, tx + r * sx, sx);
        same("N_y's statistics", isa, kinds, D, st + r * spr + sx, ty + r * sy, sy);
        same("N_out's statistics", isa, kinds, D, st + r * spr + sx + sy, to + r * so, so);
    }
    float *bufs[] = {x, y, p, u, h, hm, st, stm, nx, ny, s, nh, tx, ty, to};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

int main(void) {
    const int isas[] = {SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512};
    const int64_t widths[] = {24, 32, 64, 100, 768, 1000, 1100};
    tu_rng g = {2026};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        sn_ctx *ctx = tu_isa_ctx(isas[i]);
        if (!ctx) continue;
        const char *isa = sn_isa_name((sn_isa)isas[i]);
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
            const int64_t D = widths[w];
            sn_fuse ln, rms, mixed;
            CHECK_OK(sn_fuse_init(&ln, SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 1e-5f));
            CHECK_OK(sn_fuse_init(&rms, SN_NORM_RMSNORM, SN_AFFINE_SCALE, 1e-6f));
            mixed = ln;
            mixed.y = rms.y;
            mixed.out = rms.out;
            check(ctx, isa, &ln, "layernorm", D, &g);
            check(ctx, isa, &rms, "rmsnorm", D, &g);
            check(ctx, isa, &mixed, "layernorm x, rmsnorm y and out", D, &g);
        }
        sn_ctx_destroy(ctx);
    }
    return tu_finish("consistency");
}
