/* hash-probe: a digest of every output of every public primitive, fp32 and bf16, on every kernel
 * path this CPU runs, at one and two threads, over shapes that reach every driver branch (row
 * pairs and odd rows, grouped norms, every fuse kind class, the wide fuse backward without
 * scratch, calls beyond the prefetch and streaming-store thresholds). One line per
 * (case, dtype, path, threads): a refactoring that must keep the bits is checked by diffing the
 * output before and after. Not in the test suite (a before/after tool); `--quick` skips the
 * large calls. Only the public header. The placement layer: a training pass and an inference
 * pass of every placement (named, so that the file builds against older headers too). */
#include "testutil.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t k = 0; k < n; k++) h = (h ^ c[k]) * 1099511628211ull;
    return h;
}

typedef struct buf {
    float *f;
    sn_bf16 *b;
    int64_t n;
} buf;

static buf mk(int64_t n, tu_rng *g, double lo, double hi) {
    buf B = {tu_fzeros(n), malloc((size_t)n * sizeof(sn_bf16)), n};
    if (!B.b) exit(2);
    for (int64_t k = 0; k < n; k++) {
        B.f[k] = g ? (float)tu_unif(g, lo, hi) : 0.0f;
        B.b[k] = sn_bf16_from_f32(B.f[k]);
    }
    return B;
}
static void fr(buf *B) { free(B->f), free(B->b); }
static void *P(buf *B, int bf) { return bf ? (void *)B->b : (void *)B->f; }
static uint64_t H(uint64_t h, buf *B, int bf) {
    return bf ? fnv(h, B->b, (size_t)B->n * 2) : fnv(h, B->f, (size_t)B->n * 4);
}
static void cp(buf *dst, const buf *src) {
    memcpy(dst->f, src->f, (size_t)src->n * 4);
    memcpy(dst->b, src->b, (size_t)src->n * 2);
}

static sn_ctx *g_ctx;
static const char *g_tag;
static int g_bf, g_nth;

static void out(const char *name, uint64_t h, sn_status st) {
    printf("%-44s %s %-6s t%d %016llx%s\n", name, g_bf ? "bf16" : "f32 ", g_tag, g_nth,
           (unsigned long long)h, st == SN_OK ? "" : " ERR");
}

static void norm_case(const char *name, sn_norm n, int64_t R, int64_t D) {
    tu_rng g = {0x1234 + (uint64_t)D};
    int64_t np = 0, spr = 0;
    sn_norm_query(&n, D, &np, &spr);
    buf x = mk(R * D, &g, -2, 2), dout = mk(R * D, &g, -1, 1), o = mk(R * D, NULL, 0, 0);
    buf dx = mk(R * D, &g, -1, 1), dx0 = mk(R * D, NULL, 0, 0);
    cp(&dx0, &dx);
    float *params = tu_fzeros(np + 1), *dp = tu_fzeros(np + 1), *st = tu_fzeros(R * spr + 1);
    for (int64_t k = 0; k < np; k++) params[k] = (float)tu_unif(&g, 0.5, 1.5);
    sn_status s;
    if (g_bf) s = sn_norm_forward_bf16(g_ctx, &n, R, D, x.b, D, params, o.b, D, st);
    else s = sn_norm_forward(g_ctx, &n, R, D, x.f, D, params, o.f, D, st);
    uint64_t h = fnv(H(14695981039346656037ull, &o, g_bf), st, (size_t)(R * spr) * 4);
    char nm[96];
    snprintf(nm, sizeof nm, "%s fwd", name);
    out(nm, h, s);
    for (int mode = 0; mode < 3; mode++) { /* 0: dparams; 1: acc + dparams; 2: no dparams */
        cp(&dx, &dx0);
        memset(dp, 0, (size_t)(np + 1) * 4);
        const uint32_t fl = mode == 1 ? SN_ACCUMULATE : 0;
        float *d = mode == 2 ? NULL : dp;
        if (g_bf)
            s = sn_norm_backward_bf16(g_ctx, &n, R, D, dout.b, D, x.b, D, params, st, dx.b, D, d,
                                      fl);
        else s = sn_norm_backward(g_ctx, &n, R, D, dout.f, D, x.f, D, params, st, dx.f, D, d, fl);
        h = fnv(H(14695981039346656037ull, &dx, g_bf), dp, (size_t)np * 4);
        snprintf(nm, sizeof nm, "%s bwd%d", name, mode);
        out(nm, h, s);
    }
    fr(&x), fr(&dout), fr(&o), fr(&dx), fr(&dx0);
    free(params), free(dp), free(st);
}

static void fuse_case(const char *name, sn_fuse f, int64_t R, int64_t D) {
    tu_rng g = {0x777 + (uint64_t)D};
    int64_t np = 0, spr = 0;
    sn_fuse_query(&f, D, &np, &spr);
    buf x = mk(R * D, &g, -2, 2), y = mk(R * D, &g, -2, 2), u = mk(R * D, NULL, 0, 0);
    buf hh = mk(R * D, NULL, 0, 0), dh = mk(R * D, &g, -1, 1), du = mk(R * D, &g, -1, 1);
    buf dx = mk(R * D, &g, -1, 1), dy = mk(R * D, &g, -1, 1), dx0 = mk(R * D, NULL, 0, 0),
        dy0 = mk(R * D, NULL, 0, 0);
    cp(&dx0, &dx), cp(&dy0, &dy);
    float *params = tu_fzeros(np + 1), *dp = tu_fzeros(np + 1), *st = tu_fzeros(R * spr + 1);
    for (int64_t k = 0; k < np; k++) params[k] = (float)tu_unif(&g, 0.5, 1.5);
    char nm[96];
    sn_status s;
    for (int wu = 0; wu < 2; wu++) { /* with u (fuse) or without (merge) */
        if (g_bf)
            s = wu ? sn_fuse_forward_bf16(g_ctx, &f, R, D, x.b, D, y.b, D, params, u.b, D, hh.b, D,
                                          st)
                   : sn_merge_forward_bf16(g_ctx, &f, R, D, x.b, D, y.b, D, params, hh.b, D, st);
        else
            s = wu ? sn_fuse_forward(g_ctx, &f, R, D, x.f, D, y.f, D, params, u.f, D, hh.f, D, st)
                   : sn_merge_forward(g_ctx, &f, R, D, x.f, D, y.f, D, params, hh.f, D, st);
        uint64_t h =
            fnv(H(H(14695981039346656037ull, &hh, g_bf), &u, g_bf), st, (size_t)(R * spr) * 4);
        snprintf(nm, sizeof nm, "%s %s", name, wu ? "fuse_fwd" : "merge_fwd");
        out(nm, h, s);
    }
    for (int mode = 0; mode < 6; mode++) {
        /* 0 dparams; 1 du, acc x and y; 2 du, dx aliasing du; 3 no dparams; 4 acc y; 5 merge */
        cp(&dx, &dx0), cp(&dy, &dy0);
        memset(dp, 0, (size_t)(np + 1) * 4);
        uint32_t fl = mode == 1 ? SN_ACCUMULATE | SN_ACCUMULATE_Y : mode == 4 ? SN_ACCUMULATE_Y : 0;
        float *d = mode == 3 ? NULL : dp;
        buf *pdu = mode == 1 || mode == 2 || mode == 4 ? &dx : NULL;
        if (mode == 1) pdu = &du;
        if (mode == 5) {
            if (g_bf)
                s = sn_merge_backward_bf16(g_ctx, &f, R, D, dh.b, D, x.b, D, y.b, D, params, st,
                                           dx.b, D, dy.b, D, d, 0);
            else
                s = sn_merge_backward(g_ctx, &f, R, D, dh.f, D, x.f, D, y.f, D, params, st, dx.f, D,
                                      dy.f, D, d, 0);
        } else if (g_bf) {
            s = sn_fuse_backward_bf16(g_ctx, &f, R, D, dh.b, D, pdu ? pdu->b : NULL, D, x.b, D, y.b,
                                      D, params, st, dx.b, D, dy.b, D, d, fl);
        } else {
            s = sn_fuse_backward(g_ctx, &f, R, D, dh.f, D, pdu ? pdu->f : NULL, D, x.f, D, y.f, D,
                                 params, st, dx.f, D, dy.f, D, d, fl);
        }
        uint64_t h = fnv(H(H(14695981039346656037ull, &dx, g_bf), &dy, g_bf), dp, (size_t)np * 4);
        snprintf(nm, sizeof nm, "%s bwd%d", name, mode);
        out(nm, h, s);
    }
    fr(&x), fr(&y), fr(&u), fr(&hh), fr(&dh), fr(&du), fr(&dx), fr(&dy), fr(&dx0), fr(&dy0);
    free(params), free(dp), free(st);
}

static void elem_case(int64_t R, int64_t D) {
    tu_rng g = {0x99 + (uint64_t)D};
    buf z = mk(R * D, &g, -2, 2), u = mk(R * D, &g, -2, 2), y = mk(R * D, &g, -2, 2);
    buf xo = mk(R * D, &g, -1, 1), yo = mk(R * D, &g, -1, 1);
    char nm[96];
    sn_status s;
    const void *Z = P(&z, g_bf), *U = P(&u, g_bf), *Y = P(&y, g_bf);
    void *XO = P(&xo, g_bf), *YO = P(&yo, g_bf);
    s = g_bf ? sn_apply_forward_bf16(g_ctx, R, D, 1.7f, Z, D, U, D, Y, D, XO, D, YO, D)
             : sn_apply_forward(g_ctx, R, D, 1.7f, Z, D, U, D, Y, D, XO, D, YO, D);
    snprintf(nm, sizeof nm, "apply_fwd %lldx%lld", (long long)R, (long long)D);
    out(nm, H(H(14695981039346656037ull, &xo, g_bf), &yo, g_bf), s);
    for (int acc = 0; acc < 2; acc++) {
        const uint32_t fl = acc ? SN_ACCUMULATE : 0;
        s = g_bf ? sn_apply_backward_bf16(g_ctx, R, D, 1.7f, Z, D, U, D, XO, D, fl)
                 : sn_apply_backward(g_ctx, R, D, 1.7f, Z, D, U, D, XO, D, fl);
        snprintf(nm, sizeof nm, "apply_bwd%d %lldx%lld", acc, (long long)R, (long long)D);
        out(nm, H(14695981039346656037ull, &xo, g_bf), s);
        s = g_bf ? sn_split_backward_bf16(g_ctx, R, D, Z, D, U, D, YO, D, fl)
                 : sn_split_backward(g_ctx, R, D, Z, D, U, D, YO, D, fl);
        snprintf(nm, sizeof nm, "split_bwd%d %lldx%lld", acc, (long long)R, (long long)D);
        out(nm, H(14695981039346656037ull, &yo, g_bf), s);
    }
    s = g_bf ? sn_split_forward_bf16(g_ctx, R, D, Z, D, XO, D, YO, D)
             : sn_split_forward(g_ctx, R, D, Z, D, XO, D, YO, D);
    snprintf(nm, sizeof nm, "split_fwd %lldx%lld", (long long)R, (long long)D);
    out(nm, H(H(14695981039346656037ull, &xo, g_bf), &yo, g_bf), s);
    if (g_bf) {
        s = sn_to_bf16(g_ctx, R, D, z.f, D, xo.b, D);
        snprintf(nm, sizeof nm, "to_bf16 %lldx%lld", (long long)R, (long long)D);
        out(nm, H(14695981039346656037ull, &xo, 1), s);
        s = sn_from_bf16(g_ctx, R, D, u.b, D, yo.f, D);
        snprintf(nm, sizeof nm, "from_bf16 %lldx%lld", (long long)R, (long long)D);
        out(nm, H(14695981039346656037ull, &yo, 0), s);
    }
    fr(&z), fr(&u), fr(&y), fr(&xo), fr(&yo);
}

/* The placement layer: a whole training pass (forward, backward) and the inference forward of
 * placement `pl` (by name, so that this file builds against any version's header), hashing h,
 * out, acts, grads, every dz, de, and the inference's h and out. */
static int g_hc_rate, g_hc_static; /* Hyper-Connections other than sn_net_init's (0: its) */
static void net_case(const char *pl, int kind, int S, int64_t R, int64_t D) {
    sn_placement p;
    sn_net net;
    if (sn_placement_from_name(pl, &p) != SN_OK) return;
    if (sn_net_init(&net, p, S, D, (sn_norm_kind)kind, 1e-5f) != SN_OK) return;
#ifdef SN_HC_MAX_RATE
    if (p == SN_PLACEMENT_HYPER_CONN && g_hc_rate)
        net.hc_rate = g_hc_rate, net.hc_dynamic = (uint32_t)!g_hc_static;
#endif
    if (g_bf) net.act_dtype = SN_DTYPE_BF16;
    int64_t np = 0, apr = 0, wpr = 0, spr = 0;
    sn_net_sizes(&net, &np, &apr, &wpr);
    sn_net_infer_sizes(&net, &spr);
    tu_rng g = {0x77 + (uint64_t)D + (uint64_t)p};
    float *params = tu_fzeros(np + 1), *grads = tu_fzeros(np + 1);
    float *acts = tu_fzeros(R * apr + 1), *work = tu_fzeros(R * wpr + 1);
    float *state = tu_fzeros(R * spr + 1);
    sn_net_init_params(&net, params);
    for (int64_t k = 0; k < np; k++) params[k] += (float)tu_unif(&g, -0.2, 0.2);
    buf e = mk(R * D, &g, -2, 2), h = mk(R * D, NULL, 0, 0), z = mk(R * D, &g, -1, 1);
    buf o = mk(R * D, NULL, 0, 0), dout = mk(R * D, &g, -1, 1), dz = mk(R * D, NULL, 0, 0);
    buf dh = mk(R * D, &g, -1, 1), de = mk(R * D, NULL, 0, 0);
    const int bf = g_bf;
    sn_net_pass ps = {R, params, acts, grads, work};
    sn_net_infer inf = {R, params, state};
    uint64_t hf = 14695981039346656037ull, hb = hf, hi = hf;
    sn_status st = SN_OK, s;
#define NC(call16, call32) ((s = bf ? (call16) : (call32)) != SN_OK ? (st = s) : s)
    NC(sn_net_split_bf16(g_ctx, &net, &ps, e.b, D), sn_net_split(g_ctx, &net, &ps, e.f, D));
    for (int i = 0; i < S; i++) {
        NC(sn_net_enter_bf16(g_ctx, &net, &ps, i, h.b, D),
           sn_net_enter(g_ctx, &net, &ps, i, h.f, D));
        hf = H(hf, &h, bf);
        NC(sn_net_exit_bf16(g_ctx, &net, &ps, i, z.b, D), sn_net_exit(g_ctx, &net, &ps, i, z.f, D));
    }
    NC(sn_net_merge_bf16(g_ctx, &net, &ps, o.b, D), sn_net_merge(g_ctx, &net, &ps, o.f, D));
    hf = fnv(H(hf, &o, bf), acts, (size_t)(R * apr) * 4);
    NC(sn_net_merge_backward_bf16(g_ctx, &net, &ps, dout.b, D),
       sn_net_merge_backward(g_ctx, &net, &ps, dout.f, D));
    for (int i = S - 1; i >= 0; i--) {
        NC(sn_net_exit_backward_bf16(g_ctx, &net, &ps, i, dz.b, D, 0),
           sn_net_exit_backward(g_ctx, &net, &ps, i, dz.f, D, 0));
        hb = H(hb, &dz, bf);
        NC(sn_net_enter_backward_bf16(g_ctx, &net, &ps, i, dh.b, D),
           sn_net_enter_backward(g_ctx, &net, &ps, i, dh.f, D));
    }
    NC(sn_net_split_backward_bf16(g_ctx, &net, &ps, de.b, D, 0),
       sn_net_split_backward(g_ctx, &net, &ps, de.f, D, 0));
    hb = fnv(H(hb, &de, bf), grads, (size_t)np * 4);
    NC(sn_net_infer_split_bf16(g_ctx, &net, &inf, e.b, D),
       sn_net_infer_split(g_ctx, &net, &inf, e.f, D));
    for (int i = 0; i < S; i++) {
        NC(sn_net_infer_enter_bf16(g_ctx, &net, &inf, i, h.b, D),
           sn_net_infer_enter(g_ctx, &net, &inf, i, h.f, D));
        hi = H(hi, &h, bf);
        NC(sn_net_infer_exit_bf16(g_ctx, &net, &inf, i, z.b, D),
           sn_net_infer_exit(g_ctx, &net, &inf, i, z.f, D));
    }
    NC(sn_net_infer_merge_bf16(g_ctx, &net, &inf, o.b, D),
       sn_net_infer_merge(g_ctx, &net, &inf, o.f, D));
    hi = H(hi, &o, bf);
#undef NC
    char nm[96], pn[48];
    snprintf(pn, sizeof pn, "%s%s", pl, !g_hc_rate ? "" : g_hc_static ? "_n2_static" : "_n3_dyn");
    pl = pn;
    snprintf(nm, sizeof nm, "net %s %s S%d %lldx%lld fwd", pl, kind ? "RMS" : "LN", S, (long long)R,
             (long long)D);
    out(nm, hf, st);
    snprintf(nm, sizeof nm, "net %s %s S%d %lldx%lld bwd", pl, kind ? "RMS" : "LN", S, (long long)R,
             (long long)D);
    out(nm, hb, st);
    snprintf(nm, sizeof nm, "net %s %s S%d %lldx%lld infer", pl, kind ? "RMS" : "LN", S,
             (long long)R, (long long)D);
    out(nm, hi, st);
    free(params), free(grads), free(acts), free(work), free(state);
    fr(&e), fr(&h), fr(&z), fr(&o), fr(&dout), fr(&dz), fr(&dh), fr(&de);
}

static void run_nets(void) {
    static const char *const pls[] = {
        "pre_norm",           "post_norm",       "siamese",   "siamese_paper",
        "siamese_hybrid_pre", "deepnorm",        "peri_ln",   "mix_ln",
        "hybridnorm",         "hybridnorm_star", "span_norm", "hyper_connections"};
    for (size_t k = 0; k < sizeof pls / sizeof *pls; k++)
        for (int kind = 0; kind < 2; kind++) {
            net_case(pls[k], kind, 5, 7, 100);
            net_case(pls[k], kind, 4, 33, 768);
        }
    /* Hyper-Connections static at n = 2 and dynamic at n = 3 (sn_net_init's: dynamic n = 4) */
    for (g_hc_static = 0; g_hc_static < 2; g_hc_static++) {
        g_hc_rate = g_hc_static ? 2 : 3;
        net_case("hyper_connections", 0, 5, 7, 100);
        net_case("hyper_connections", 1, 4, 33, 768);
    }
    g_hc_rate = 0;
}

static void run_all(int quick) {
    static const struct {
        const char *nm;
        int kind, affine, group;
    } norms[] = {
        {"LN", SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 0},
        {"LNg16", SN_NORM_LAYERNORM, SN_AFFINE_SCALE_SHIFT, 16},
        {"LNs", SN_NORM_LAYERNORM, SN_AFFINE_SCALE, 0},
        {"RMS", SN_NORM_RMSNORM, SN_AFFINE_SCALE, 0},
        {"RMSg16n", SN_NORM_RMSNORM, SN_AFFINE_NONE, 16},
        {"SCALE", SN_NORM_SCALE, SN_AFFINE_SCALE_SHIFT, 0},
        {"ID", SN_NORM_IDENTITY, SN_AFFINE_NONE, 0},
    };
    static const int64_t nD[] = {64, 100, 768, 3008, 5008};
    char nm[96];
    for (size_t i = 0; i < sizeof norms / sizeof *norms; i++)
        for (size_t k = 0; k < sizeof nD / sizeof *nD; k++) {
            const int64_t D = nD[k];
            if (g_bf && D > 4096) continue;
            if (norms[i].group && D % norms[i].group) continue;
            sn_norm n = {norms[i].kind, norms[i].affine, norms[i].group, 1e-5f};
            snprintf(nm, sizeof nm, "norm %s 13x%lld", norms[i].nm, (long long)D);
            norm_case(nm, n, 13, D);
        }
    static const struct {
        const char *nm;
        int kx, ky, ko, ax, ay, ao;
    } fuses[] = {
        {"LLL", SN_NORM_LAYERNORM, SN_NORM_LAYERNORM, SN_NORM_LAYERNORM, 0, 0, 0},
        {"RRR", SN_NORM_RMSNORM, SN_NORM_RMSNORM, SN_NORM_RMSNORM, 1, 1, 1},
        {"RRRn", SN_NORM_RMSNORM, SN_NORM_RMSNORM, SN_NORM_RMSNORM, 2, 2, 2},
        {"LLI", SN_NORM_LAYERNORM, SN_NORM_LAYERNORM, SN_NORM_IDENTITY, 0, 0, 0},
        {"IRI", SN_NORM_IDENTITY, SN_NORM_RMSNORM, SN_NORM_IDENTITY, 2, 1, 2},
        {"LRL", SN_NORM_LAYERNORM, SN_NORM_RMSNORM, SN_NORM_LAYERNORM, 0, 1, 0},
        {"SSR", SN_NORM_SCALE, SN_NORM_SCALE, SN_NORM_RMSNORM, 0, 1, 1},
    };
    static const int64_t fD[] = {64, 100, 512, 768, 1500, 3008, 5008};
    for (size_t i = 0; i < sizeof fuses / sizeof *fuses; i++)
        for (size_t k = 0; k < sizeof fD / sizeof *fD; k++) {
            const int64_t D = fD[k];
            if (g_bf && D > 4096) continue;
            sn_fuse f = {{fuses[i].kx, fuses[i].ax, 0, 1e-5f},
                         {fuses[i].ky, fuses[i].ay, 0, 1e-5f},
                         {fuses[i].ko, fuses[i].ao, 0, 1e-5f}};
            snprintf(nm, sizeof nm, "fuse %s 13x%lld", fuses[i].nm, (long long)D);
            fuse_case(nm, f, 13, D);
        }
    elem_case(13, 100);
    elem_case(9, 3000);
    run_nets();
    if (quick) return;
    /* beyond the prefetch, spread-prefetch and streaming thresholds */
    sn_fuse f = {{SN_NORM_LAYERNORM, 0, 0, 1e-5f},
                 {SN_NORM_LAYERNORM, 0, 0, 1e-5f},
                 {SN_NORM_LAYERNORM, 0, 0, 1e-5f}};
    fuse_case("fuse LLL 1601x768", f, 1601, 768);
    fuse_case("fuse LLL 4001x768", f, 4001, 768);
    sn_fuse fr_ = {{SN_NORM_RMSNORM, 1, 0, 1e-5f},
                   {SN_NORM_RMSNORM, 1, 0, 1e-5f},
                   {SN_NORM_IDENTITY, 2, 0, 1e-5f}};
    fuse_case("fuse RRI 4001x768", fr_, 4001, 768);
    /* rows that start off their lines beyond the L2 (AVX-512 merge backward: single rows) */
    fuse_case("fuse LLL 1601x776", f, 1601, 776);
    fuse_case("fuse RRI 1601x776", fr_, 1601, 776);
    /* beyond the prefetch threshold at a width auto's tables may run one row at a time */
    fuse_case("fuse LLL 2401x512", f, 2401, 512);
    sn_norm n = {SN_NORM_LAYERNORM, 0, 0, 1e-5f};
    norm_case("norm LN 2001x768", n, 2001, 768);
    norm_case("norm LN 9001x768", n, 9001, 768);
    elem_case(9001, 768);
}

/* usage: hash-probe [--quick] [--isa scalar|avx2|avx512|auto] [--threads N] (default: every path
 * this CPU runs, then auto, whose digests are the best path's; 1 and 2 threads); one path and
 * thread count, under callgrind, gives the instruction counts of each public call
 * (callgrind_annotate --inclusive=yes) */
static int usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--quick] [--isa scalar|avx2|avx512|auto] [--threads 1|2]\n", argv0);
    return 2;
}

int main(int argc, char **argv) {
    static const sn_isa isas[] = {SN_ISA_SCALAR, SN_ISA_AVX2, SN_ISA_AVX512, SN_ISA_AUTO};
    int quick = 0, only = -1, nth_only = 0;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[a], "--isa") == 0 && a + 1 < argc) {
            const char *n = argv[++a];
            only = -1;
            for (int k = 0; k < 4; k++)
                if (strcmp(n, sn_isa_name(isas[k])) == 0) only = k;
            if (only < 0) return usage(argv[0]);
        } else if (strcmp(argv[a], "--threads") == 0 && a + 1 < argc) {
            const char *t = argv[++a];
            if (strcmp(t, "1") && strcmp(t, "2")) return usage(argv[0]);
            nth_only = t[0] - '0';
        } else {
            return usage(argv[0]);
        }
    }
    for (int bf = 0; bf < 2; bf++)
        for (int i = 0; i < 4; i++) {
            if (!sn_isa_available(isas[i]) || (only >= 0 && i != only)) continue;
            for (int nth = 1; nth <= 2; nth++) {
                if (nth_only && nth != nth_only) continue;
                if (sn_ctx_create(&g_ctx) != SN_OK) return 2;
                sn_ctx_set_isa(g_ctx, isas[i]);
                sn_ctx_set_threads(g_ctx, nth);
                g_tag = sn_isa_name(isas[i]);
                g_bf = bf;
                g_nth = nth;
                run_all(quick);
                sn_ctx_destroy(g_ctx);
            }
        }
    return 0;
}
