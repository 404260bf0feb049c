/* libFuzzer harness: the dual-stream primitives sn_fuse_init, sn_fuse_query,
 * sn_fuse_init_params, sn_fuse_forward / sn_fuse_backward, sn_merge_forward / sn_merge_backward,
 * sn_apply_forward / sn_apply_backward, sn_split_forward / sn_split_backward and
 * sn_find_nonfinite, with arbitrary norm kinds / affine / groups / eps for the three norms, R, D
 * (sometimes wide enough for the threaded and wide-row paths, sometimes too large to exist),
 * strides, c, flags, NULL pointers, kernel paths / the parallel-for hook, contexts in checked
 * mode, views forced to be the very same view, and (one input in four) every buffer placed at an
 * arbitrary offset of one shared arena so views may overlap. Oracle:
 *   - no crash, no out-of-bounds access (exactly-sized buffers under ASan), no UB (UBSan);
 *   - the status is SN_OK exactly when the arguments are valid by the header's rules (including
 *     its "may alias" pairs), and otherwise one of the codes the invalid arguments call for;
 *   - on error no byte of any buffer changed (bitwise); on success nothing outside the written
 *     views changed (inputs, the gaps between strided rows, neighbouring arena floats);
 *   - sn_fuse_query's sizes equal the header's formulas, sn_fuse_init / sn_fuse_init_params
 *     write exactly what the header says (nothing on error);
 *   - tame inputs (finite, |x| <= 4, eps in [1e-6, 2], c in [1e-6, 2]) give finite outputs and,
 *     after a training forward, finite gradients;
 *   - values: u of the fuse is bitwise sn_norm_forward's N_x(x); h and the gradients agree with
 *     a composition of sn_norm_forward / sn_norm_backward (eps >= 1e-3); merge and fuse give the
 *     same bits; split copies bitwise; apply and split backward match their formulas;
 *   - checked mode: a NaN or infinity in an input gives SN_ERR_NONFINITE, the smallest such row
 *     (or SN_NONFINITE_PARAMS) from sn_ctx_nonfinite_row, and no write; a clean call SN_OK and
 *     SN_NONFINITE_NONE. */
#include "fz.h"

#define ST(s) (1u << (s))
#define NB    12 /* buffers per input at most */
#define NV    10 /* views per call at most */
#if defined(__clang__)
#define FZ_NOCOV __attribute__((no_sanitize("coverage")))
#else
#define FZ_NOCOV
#endif

/* ---- buffers of one input: separate exact allocations or one shared arena ----------------- */

typedef struct env {
    fz *f;
    int64_t R, D, Rp, Dp; /* as chosen; Rp, Dp >= 1 size the buffers */
    int arena_mode, wild;
    int nb;
    float *b[NB];
    int64_t span[NB], ld[NB]; /* ld 0: a vector */
    float *arena;
    int64_t total, off[NB]; /* off: where buffer k's floats sit in snap (separate mode) */
    float *snap;
    unsigned char *mask;
} env;

/* fz_buf without coverage instrumentation (the wide rows fill ~10^5 floats) */
FZ_NOCOV static float *fill_buf(int64_t n, fz *f, int wild) {
    float *p = tu_falloc(n > 0 ? n : 1);
    static const float w[] = {NAN,    INFINITY, -INFINITY, 1e30f,  -1e30f, 1e-40f, 3e38f, -0.0f,
                              1e-20f, 1e20f,    65504.0f,  1e-45f, 0.0f,   1.0f,   -1.0f, 2.0f};
    for (int64_t k = 0; k < n; k++) { /* fz_value, inlined */
        uint8_t b = 0;
        if (f->n) f->n--, b = *f->p++;
        p[k] = wild && b >= 240 ? w[b - 240] : ((float)b - 127.5f) / 32.0f;
    }
    return p;
}

static void env_alloc(env *e) {
    e->total = 0;
    for (int k = 0; k < e->nb; k++) e->off[k] = e->total, e->total += e->span[k];
    if (e->arena_mode) {
        e->arena = fill_buf(e->total, e->f, e->wild);
        for (int k = 0; k < e->nb; k++) {
            int64_t room = e->total - e->span[k] + 1;
            e->b[k] = e->arena + (int64_t)(fz_u32(e->f) % (uint32_t)(room > 0 ? room : 1));
        }
    } else {
        for (int k = 0; k < e->nb; k++) e->b[k] = fill_buf(e->span[k], e->f, e->wild);
    }
    e->snap = tu_falloc(e->total + 1);
    e->mask = (unsigned char *)tu_xalloc((size_t)(e->total + 1));
}

static void env_free(env *e) {
    if (e->arena_mode) free(e->arena);
    else
        for (int k = 0; k < e->nb; k++) free(e->b[k]);
    free(e->snap), free(e->mask);
}

static void env_snap(env *e) {
    if (e->arena_mode) memcpy(e->snap, e->arena, (size_t)e->total * 4);
    else
        for (int k = 0; k < e->nb; k++)
            memcpy(e->snap + e->off[k], e->b[k], (size_t)e->span[k] * 4);
}

/* index into snap/mask of the float at p, or -1 when p is not in any buffer */
FZ_NOCOV static int64_t env_index(const env *e, const float *p) {
    uintptr_t a = (uintptr_t)p;
    if (e->arena_mode) {
        uintptr_t b0 = (uintptr_t)e->arena;
        return a >= b0 && a < b0 + (uintptr_t)e->total * 4 ? (int64_t)((a - b0) / 4) : -1;
    }
    for (int k = 0; k < e->nb; k++) {
        uintptr_t b0 = (uintptr_t)e->b[k];
        if (a >= b0 && a < b0 + (uintptr_t)e->span[k] * 4)
            return e->off[k] + (int64_t)((a - b0) / 4);
    }
    return -1;
}

/* ---- views of one call ------------------------------------------------------------------- */

enum { RD = 0, WR = 1, AC = 2 }; /* reads, writes, accumulates */

typedef struct view {
    float *p;
    int64_t ld, span;
    int mat, role, req, scan; /* req: NULL is an error; scan: checked mode scans it */
} view;

static view mview(const env *e, int k, int role, int req, int scan) {
    view v = {e->b[k], e->ld[k], e->span[k], 1, role, req, scan};
    return v;
}
static view vview(const env *e, int k, int role, int req, int scan) {
    view v = {e->b[k], 0, e->span[k], 0, role, req, scan};
    return v;
}

typedef struct call {
    view v[NV];
    int n;
    unsigned allow[NV]; /* bit j of allow[i]: v[i] may be the very same view as v[j] */
    unsigned must, may; /* codes from rules on non-view arguments (norms, flags, c) */
    int64_t R, D;       /* what the call receives */
    int checked, forced, huge, nulled, injected;
    int64_t want_row; /* checked mode: the row the scan must report */
    int acc_bad;      /* an accumulated buffer holds a non-finite value (not scanned) */
} call;

static int allowed(const call *c, int i, int j) {
    return ((c->allow[i] >> j) & 1u) || ((c->allow[j] >> i) & 1u);
}

/* 1 if the views overlap in a way the header forbids */
static int forbidden_overlap(const call *c) {
    for (int i = 0; i < c->n; i++)
        for (int j = i + 1; j < c->n; j++) {
            const view *a = &c->v[i], *b = &c->v[j];
            if (!a->p || !b->p || a->span <= 0 || b->span <= 0 || (a->role == RD && b->role == RD))
                continue;
            uintptr_t a0 = (uintptr_t)a->p, a1 = a0 + (uintptr_t)a->span * 4;
            uintptr_t b0 = (uintptr_t)b->p, b1 = b0 + (uintptr_t)b->span * 4;
            if (a0 >= b1 || b0 >= a1) continue;
            if (allowed(c, i, j) && a->p == b->p && a->ld == b->ld && a->mat && b->mat) continue;
            return 1;
        }
    return 0;
}

FZ_NOCOV static int64_t first_bad_row(const view *v, int64_t R, int64_t D) {
    for (int64_t r = 0; r < R; r++)
        if (!tu_all_finite(v->p + r * v->ld, D)) return r;
    return -1;
}

/* NULL pointers, forced exact aliases, impossible sizes, NaN injection, the verdict; then a
 * snapshot of every buffer. */
static void prepare(env *e, call *c, int checked) {
    fz *f = e->f;
    c->R = e->R, c->D = e->D, c->checked = checked;
    if (fz_u8(f) >= 245) {
        int i = fz_pick(f, c->n);
        if (c->v[i].p) c->v[i].p = NULL, c->nulled = 1;
    }
    if (fz_pick(f, 4) == 3) { /* make v[j] the very same view as v[i] */
        int i = fz_pick(f, c->n), j = fz_pick(f, c->n);
        if (fz_pick(f, 2))
            for (int a = 0; a < c->n; a++)
                for (int b = 0; b < c->n; b++)
                    if (a != b && allowed(c, a, b)) i = a, j = b;
        if (i != j && c->v[i].mat && c->v[j].mat && c->v[i].p && c->v[j].p) {
            c->v[j].p = c->v[i].p, c->v[j].ld = c->v[i].ld, c->v[j].span = c->v[i].span;
            c->forced = 1;
        }
    }
    unsigned must = c->must, may = c->may;
    if (fz_u8(f) >= 248) { /* a size no buffer can have: spans of 2^63 bytes or more */
        static const int64_t big[] = {INT64_C(1) << 61, INT64_MAX, INT64_C(1) << 62};
        int64_t v = big[fz_pick(f, 3)];
        int what = fz_pick(f, 3), i = fz_pick(f, c->n);
        if (what == 0) c->R = v, c->huge = 1;
        else if (what == 1) c->D = v, c->huge = 1;
        else if (c->R >= 2 && c->v[i].mat && c->v[i].p) c->v[i].ld = v, c->huge = 1;
    }
    if (c->huge) must |= ST(SN_ERR_SHAPE) | ST(SN_ERR_STRIDE), may |= ST(SN_ERR_ALIAS);
    if (c->R <= 0 || c->D <= 0) must |= ST(SN_ERR_SHAPE);
    for (int i = 0; i < c->n; i++) {
        if (!c->v[i].p && c->v[i].req) must |= ST(SN_ERR_NULL);
        if (c->v[i].p && c->v[i].mat && c->D > 0 && c->v[i].ld < c->D) must |= ST(SN_ERR_STRIDE);
    }
    if (!c->huge && forbidden_overlap(c)) (must ? &may : &must)[0] |= ST(SN_ERR_ALIAS);
    c->must = must, c->may = may;
    c->want_row = SN_NONFINITE_NONE;
    if (checked && !must && fz_pick(f, 4) != 3) {
        int i = fz_pick(f, c->n);
        static const float bad[] = {NAN, INFINITY, -INFINITY};
        float nb = bad[fz_pick(f, 3)];
        view *v = &c->v[i];
        if (v->p && v->scan && v->span > 0) {
            int64_t r = fz_u8(f) % c->R, j = fz_u8(f) % c->D;
            v->p[v->mat ? r * v->ld + j : (int64_t)fz_u8(f) % v->span] = nb;
            c->injected = 1;
        }
    }
    if (checked && !must) {
        int64_t best = -1;
        int params_bad = 0;
        for (int i = 0; i < c->n; i++) {
            const view *v = &c->v[i];
            if (!v->p) continue;
            int bad = v->mat ? first_bad_row(v, c->R, c->D) >= 0 : !tu_all_finite(v->p, v->span);
            if (v->scan && v->mat && bad) {
                int64_t r = first_bad_row(v, c->R, c->D);
                best = best < 0 || r < best ? r : best;
            }
            if (v->scan && !v->mat && bad) params_bad = 1;
            if (v->role == AC && bad) c->acc_bad = 1;
        }
        c->want_row = best >= 0 ? best : params_bad ? SN_NONFINITE_PARAMS : SN_NONFINITE_NONE;
    }
    env_snap(e);
}

/* The index (into snap) of the first float that differs from the snapshot, skipping masked
 * floats when use_mask; -1 when none. Hot loop: no coverage instrumentation. */
FZ_NOCOV static int64_t first_changed(const env *e, int use_mask) {
    int nr = e->arena_mode ? 1 : e->nb;
    for (int k = 0; k < nr; k++) {
        const float *base = e->arena_mode ? e->arena : e->b[k];
        int64_t len = e->arena_mode ? e->total : e->span[k], off = e->arena_mode ? 0 : e->off[k];
        for (int64_t i = 0; i < len;) {
            if (use_mask && e->mask[off + i]) {
                i++;
                continue;
            }
            int64_t j = i;
            while (j < len && !(use_mask && e->mask[off + j])) j++;
            if (memcmp(base + i, e->snap + off + i, (size_t)(j - i) * 4) != 0)
                for (int64_t q = i; q < j; q++)
                    if (memcmp(base + q, e->snap + off + q, 4) != 0) return off + q;
            i = j;
        }
    }
    return -1;
}

/* status, untouched memory and checked-mode verdicts of a call that returned st */
static void verify(env *e, const call *c, const sn_ctx *ctx, sn_status st, const char *name) {
    int must_fail = c->must != 0 || (c->checked && c->want_row != SN_NONFINITE_NONE);
    if (c->must) {
        CHECK_MSG(st != SN_OK && ((c->must | c->may) & ST(st)), "%s: status %d (%s), must %#x",
                  name, (int)st, sn_status_string(st), c->must);
    } else if (c->checked && c->want_row != SN_NONFINITE_NONE) {
        CHECK_MSG(st == SN_ERR_NONFINITE, "%s: status %d with a non-finite input (row %lld)", name,
                  (int)st, (long long)c->want_row);
        int64_t got = sn_ctx_nonfinite_row(ctx);
        CHECK_MSG(c->acc_bad || got == c->want_row, "%s: nonfinite row %lld, want %lld", name,
                  (long long)got, (long long)c->want_row);
    } else if (c->checked && c->acc_bad) {
        CHECK_MSG(st == SN_OK || st == SN_ERR_NONFINITE, "%s: status %d", name, (int)st);
        must_fail = st != SN_OK;
    } else {
        CHECK_MSG(st == SN_OK || (c->may & ST(st)), "%s: status %d (%s) on valid arguments", name,
                  (int)st, sn_status_string(st));
        if (c->checked && st == SN_OK)
            CHECK_MSG(sn_ctx_nonfinite_row(ctx) == SN_NONFINITE_NONE,
                      "%s: clean checked call left row %lld", name,
                      (long long)sn_ctx_nonfinite_row(ctx));
    }
    if (must_fail || st != SN_OK) {
        int64_t k = first_changed(e, 0);
        CHECK_MSG(k < 0, "%s: status %d changed memory (float %lld)", name, (int)st, (long long)k);
        return;
    }
    /* success: only the floats of the written views may have changed */
    memset(e->mask, 0, (size_t)e->total);
    for (int i = 0; i < c->n; i++) {
        const view *v = &c->v[i];
        if (!v->p || v->role == RD || (!v->mat && v->span <= 0)) continue;
        int64_t rows = v->mat ? c->R : 1, cols = v->mat ? c->D : v->span;
        for (int64_t r = 0; r < rows; r++) {
            int64_t idx = env_index(e, v->p + r * v->ld);
            CHECK_MSG(idx >= 0, "%s: view %d outside the buffers", name, i);
            memset(e->mask + idx, 1, (size_t)cols);
        }
    }
    int64_t k = first_changed(e, 1);
    CHECK_MSG(k < 0, "%s: wrote float %lld outside its outputs", name, (long long)k);
}

FZ_NOCOV static int view_finite(const view *v, int64_t R, int64_t D) {
    if (!v->p) return 1;
    return v->mat ? first_bad_row(v, R, D) < 0 : tu_all_finite(v->p, v->span);
}

/* the R x D values of a view as they were before the call (from the snapshot) */
FZ_NOCOV static float *gather(const env *e, const view *v, int64_t R, int64_t D) {
    float *o = tu_falloc(R * D + 1);
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++) o[r * D + j] = e->snap[env_index(e, v->p + r * v->ld + j)];
    return o;
}

/* |got - want| <= tol * (1 + max |want|) over R x D */
FZ_NOCOV static int close_to(const float *got, int64_t ldg, const float *want, int64_t R, int64_t D,
                             double tol, double *err) {
    double m = 0, d = 0;
    for (int64_t k = 0; k < R * D; k++) m = fmax(m, fabs((double)want[k]));
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < D; j++)
            d = fmax(d, fabs((double)got[r * ldg + j] - (double)want[r * D + j]));
    *err = d / (1 + m);
    return d <= tol * (1 + m);
}

/* ---- contexts ---------------------------------------------------------------------------- */

/* Checked-mode contexts: the default path, and the scalar path through the reverse hook. */
static const sn_ctx *checked_ctx(int i) {
    static sn_ctx *c[2];
    static int ready;
    if (!ready) {
        for (int k = 0; k < 2; k++) {
            CHECK_MSG(sn_ctx_create(&c[k]) == SN_OK, "sn_ctx_create");
            CHECK_MSG(sn_ctx_set_check_finite(c[k], 1) == SN_OK, "sn_ctx_set_check_finite");
        }
        sn_ctx_set_isa(c[1], SN_ISA_SCALAR);
        sn_ctx_set_parallel_for(c[1], fz_reverse_hook, NULL, 3);
        ready = 1;
    }
    return c[i & 1];
}

/* ---- norm descriptions of the fuse ------------------------------------------------------- */

static int stat_kind(int kind) { return kind == SN_NORM_LAYERNORM || kind == SN_NORM_RMSNORM; }

/* the header's rules for one norm of a fuse: the codes it calls for (0 when valid) */
static unsigned norm_rules(const sn_norm *n) {
    unsigned m = 0;
    int kind_ok = n->kind >= 0 && n->kind <= 3;
    int affine_ok = (n->affine >= 0 && n->affine <= 2) || n->kind == SN_NORM_IDENTITY;
    if (!kind_ok || !affine_ok) m |= ST(SN_ERR_NORM);
    if (n->group != 0) m |= ST(SN_ERR_GROUP);
    if (stat_kind(n->kind) && !(n->eps > 0.0f && isfinite(n->eps))) m |= ST(SN_ERR_EPS);
    return m;
}
static int64_t norm_np(const sn_norm *n, int64_t D) {
    if (n->kind < 0 || n->kind > 3 || n->kind == SN_NORM_IDENTITY || n->affine == SN_AFFINE_NONE)
        return 0;
    return n->affine == SN_AFFINE_SCALE_SHIFT ? 2 * D : n->affine == SN_AFFINE_SCALE ? D : 0;
}
static int64_t norm_spr(const sn_norm *n) {
    return n->kind == SN_NORM_LAYERNORM ? 2 : n->kind == SN_NORM_RMSNORM ? 1 : 0;
}

static void fuse_init_case(fz *f) {
    int kind = fz_pick(f, 6) - 1, affine = fz_pick(f, 5) - 1, eps_ok, eps_tame;
    float eps = fz_positive(f, &eps_ok, &eps_tame);
    int fnull = fz_pick(f, 16) == 15;
    sn_fuse fu, before;
    memset(&fu, 0xA5, sizeof fu);
    before = fu;
    sn_status st = sn_fuse_init(fnull ? NULL : &fu, (sn_norm_kind)kind, (sn_affine)affine, eps);
    sn_norm want = {kind, affine, 0, eps};
    unsigned must = fnull ? ST(SN_ERR_NULL) : 0u;
    must |= norm_rules(&want);
    if (must) {
        CHECK_MSG(st != SN_OK && (must & ST(st)), "sn_fuse_init status %d, must %#x", (int)st,
                  must);
        CHECK_MSG(memcmp(&fu, &before, sizeof fu) == 0, "sn_fuse_init changed *f on error");
        return;
    }
    CHECK_MSG(st == SN_OK, "sn_fuse_init status %d on valid arguments", (int)st);
    CHECK_MSG(memcmp(&fu.x, &want, sizeof want) == 0 && memcmp(&fu.y, &want, sizeof want) == 0 &&
                  memcmp(&fu.out, &want, sizeof want) == 0,
              "sn_fuse_init wrote other values");
}

static void query_case(fz *f, const sn_fuse *fu, unsigned fmust, int64_t D) {
    int fnull = fz_pick(f, 32) == 31, huge = fz_pick(f, 16) == 15;
    int use_np = fz_pick(f, 4) != 0, use_spr = fz_pick(f, 4) != 0;
    int64_t Dq = huge ? (fz_pick(f, 2) ? INT64_MAX : INT64_C(1) << 61) : D;
    int64_t qp = -7, qs = -7;
    sn_status st = sn_fuse_query(fnull ? NULL : fu, Dq, use_np ? &qp : NULL, use_spr ? &qs : NULL);
    unsigned must = fnull ? ST(SN_ERR_NULL) : fmust;
    if (Dq <= 0 || huge) must |= ST(SN_ERR_SHAPE);
    if (must) {
        CHECK_MSG(st != SN_OK && (must & ST(st)), "sn_fuse_query status %d, must %#x", (int)st,
                  must);
        CHECK_MSG(qp == -7 && qs == -7, "sn_fuse_query wrote its outputs on error");
        return;
    }
    CHECK_MSG(st == SN_OK, "sn_fuse_query status %d on valid arguments", (int)st);
    int64_t np = norm_np(&fu->x, D) + norm_np(&fu->y, D) + norm_np(&fu->out, D);
    int64_t spr = norm_spr(&fu->x) + norm_spr(&fu->y) + norm_spr(&fu->out);
    CHECK_MSG((!use_np || qp == np) && (!use_spr || qs == spr),
              "sn_fuse_query sizes %lld %lld, want %lld %lld", (long long)qp, (long long)qs,
              (long long)np, (long long)spr);
}

static void init_params_case(fz *f, const sn_fuse *fu, unsigned fmust, int64_t D) {
    int64_t np = D > 0 ? norm_np(&fu->x, D) + norm_np(&fu->y, D) + norm_np(&fu->out, D) : 0;
    int pnull = fz_pick(f, 8) == 7;
    float *p = fz_buf(np, f, 1), *snap = tu_falloc(np + 1);
    memcpy(snap, p, (size_t)np * 4);
    sn_status st = sn_fuse_init_params(fu, D, pnull ? NULL : p);
    unsigned must =
        fmust | (D <= 0 ? ST(SN_ERR_SHAPE) : 0u) | (pnull && np > 0 ? ST(SN_ERR_NULL) : 0u);
    if (must) {
        CHECK_MSG(st != SN_OK && (must & ST(st)), "sn_fuse_init_params status %d, must %#x",
                  (int)st, must);
        CHECK_MSG(memcmp(snap, p, (size_t)np * 4) == 0, "sn_fuse_init_params wrote on error");
    } else {
        CHECK_MSG(st == SN_OK, "sn_fuse_init_params status %d on valid arguments", (int)st);
        const sn_norm *ns[3] = {&fu->x, &fu->y, &fu->out};
        int64_t o = 0;
        for (int i = 0; i < 3 && !pnull; i++) {
            int64_t n = norm_np(ns[i], D);
            for (int64_t k = 0; k < n; k++)
                CHECK_MSG(p[o + k] == (k < D ? 1.0f : 0.0f), "init_params norm %d float %lld = %g",
                          i, (long long)k, (double)p[o + k]);
            o += n;
        }
    }
    free(p), free(snap);
}

/* ---- fuse and merge ---------------------------------------------------------------------- */

/* per-norm statistics of norm i (offset so, width w) out of the fuse's [R x spr] block */
FZ_NOCOV static float *slice_stats(const float *stats, int64_t R, int64_t spr, int64_t so,
                                   int64_t w) {
    float *o = tu_falloc(R * w + 1);
    for (int64_t r = 0; r < R; r++)
        for (int64_t k = 0; k < w; k++) o[r * w + k] = stats[r * spr + so + k];
    return o;
}

static void op_fuse(env *e, const sn_ctx *ctx, int checked) {
    fz *f = e->f;
    sn_fuse fu;
    sn_norm *ns[3] = {&fu.x, &fu.y, &fu.out};
    int tame_eps = 1, ref_eps = 1;
    for (int i = 0; i < 3; i++) {
        int ok, tame;
        ns[i]->kind = fz_pick(f, 4), ns[i]->affine = fz_pick(f, 3), ns[i]->group = 0;
        ns[i]->eps = fz_positive(f, &ok, &tame);
        if (stat_kind(ns[i]->kind))
            tame_eps &= tame, ref_eps &= ns[i]->eps >= 1e-3f && ns[i]->eps <= 2.0f;
    }
    for (int m = fz_pick(f, 4) == 3 ? 1 + fz_pick(f, 2) : 0; m > 0; m--) { /* invalidate */
        sn_norm *n = ns[fz_pick(f, 3)];
        static const int32_t kinds[] = {-1, 4, 5, INT32_MIN}, affs[] = {-1, 3, 4, INT32_MAX};
        static const int32_t groups[] = {1, 2, 3, 4, -1, 5, 7, 16, 64, INT32_MIN};
        int w = fz_pick(f, 3);
        if (w == 0) n->kind = kinds[fz_pick(f, 4)];
        else if (w == 1) n->affine = affs[fz_pick(f, 4)];
        else
            n->group = fz_pick(f, 8) == 7 ? (int32_t)(e->D > 0 ? e->D : 1) : groups[fz_pick(f, 10)];
    }
    unsigned fmust = norm_rules(&fu.x) | norm_rules(&fu.y) | norm_rules(&fu.out);
    fuse_init_case(f);
    query_case(f, &fu, fmust, e->D);
    init_params_case(f, &fu, fmust, e->D);

    int64_t D = e->D, Dp = e->Dp, Rp = e->Rp;
    int64_t npk[3], sprk[3], np = 0, spr = 0;
    for (int i = 0; i < 3; i++)
        npk[i] = norm_np(ns[i], Dp), sprk[i] = norm_spr(ns[i]), np += npk[i], spr += sprk[i];
    /* 0 x, 1 y, 2 params, 3 u, 4 h, 5 stats, 6 dh, 7 du, 8 dx, 9 dy, 10 dparams */
    e->nb = 11;
    for (int k = 0; k < 11; k++) {
        if (k == 2 || k == 10) e->ld[k] = 0, e->span[k] = np;
        else if (k == 5) e->ld[k] = 0, e->span[k] = Rp * spr;
        else e->span[k] = fz_span(Rp, Dp, e->ld[k] > 0 ? e->ld[k] : Dp);
    }
    env_alloc(e);
    if (!e->arena_mode) {
        for (int64_t k = 0; k < np; k++)
            e->b[2][k] = fz_value(f, e->wild) * 0.5f; /* gamma, beta in [-2, 2] unless wild */
        for (int64_t k = 0; k < e->span[10]; k++) e->b[10][k] = fz_value(f, e->wild) * 0.5f;
    }
    int fnull = fz_pick(f, 64) == 63;
    const sn_fuse *fp = fnull ? NULL : &fu;
    int tame = !e->wild && !e->arena_mode && tame_eps;

    /* forward */
    int merge = fz_pick(f, 3) == 0;
    int use_u = !merge && fz_pick(f, 4) != 0, use_stats = fz_pick(f, 4) != 0;
    call c;
    memset(&c, 0, sizeof c);
    c.v[0] = mview(e, 0, RD, 1, 1);
    c.v[1] = mview(e, 1, RD, 1, 1);
    c.v[2] = vview(e, 2, RD, np > 0, 1);
    c.v[3] = mview(e, 3, WR, 0, 0);
    c.v[4] = mview(e, 4, WR, 1, 0);
    c.v[5] = vview(e, 5, WR, 0, 0);
    if (!use_u) c.v[3].p = NULL;
    if (!use_stats) c.v[5].p = NULL;
    c.n = 6;
    c.must = fnull ? ST(SN_ERR_NULL) : fmust;
    prepare(e, &c, checked);
    view *v = c.v;
    sn_status st = merge ? sn_merge_forward(ctx, fp, c.R, c.D, v[0].p, v[0].ld, v[1].p, v[1].ld,
                                            v[2].p, v[4].p, v[4].ld, v[5].p)
                         : sn_fuse_forward(ctx, fp, c.R, c.D, v[0].p, v[0].ld, v[1].p, v[1].ld,
                                           v[2].p, v[3].p, v[3].ld, v[4].p, v[4].ld, v[5].p);
    verify(e, &c, ctx, st, merge ? "merge_forward" : "fuse_forward");
    int64_t R = c.R;
    int ftame = tame && !c.injected && st == SN_OK;
    if (ftame)
        for (int i = 3; i < 6; i++)
            CHECK_MSG(view_finite(&v[i], R, D), "fuse forward: non-finite output %d", i);
    /* values against sn_norm_forward, and fuse against merge */
    int fref = ftame && ref_eps && !c.forced && !c.nulled;
    float *uref = NULL, *sref = NULL;
    if (fref) {
        uref = tu_falloc(R * D), sref = tu_falloc(R * D);
        float *ny = tu_falloc(R * D), *href = tu_falloc(R * D);
        float *h2 = tu_falloc(R * D), *u2 = tu_falloc(R * D);
        float *st2 = tu_falloc(R * spr + 1);
        const float *p = v[2].p;
        CHECK_MSG(sn_norm_forward(ctx, &fu.x, R, D, v[0].p, v[0].ld, p, uref, D, NULL) == SN_OK &&
                      sn_norm_forward(ctx, &fu.y, R, D, v[1].p, v[1].ld, p + npk[0], ny, D, NULL) ==
                          SN_OK,
                  "norm forward failed");
        for (int64_t k = 0; k < R * D; k++) sref[k] = uref[k] + ny[k];
        CHECK_MSG(sn_norm_forward(ctx, &fu.out, R, D, sref, D, p + npk[0] + npk[1], href, D,
                                  NULL) == SN_OK,
                  "norm forward failed");
        for (int64_t r = 0; r < R && v[3].p; r++)
            CHECK_MSG(memcmp(v[3].p + r * v[3].ld, uref + r * D, (size_t)D * 4) == 0,
                      "fuse u differs from sn_norm_forward's N_x(x) (row %lld)", (long long)r);
        double err;
        CHECK_MSG(close_to(v[4].p, v[4].ld, href, R, D, 1e-3, &err),
                  "fuse h differs from N_out(N_x(x) + N_y(y)) by %g", err);
        sn_status s2 = merge ? sn_fuse_forward(ctx, &fu, R, D, v[0].p, v[0].ld, v[1].p, v[1].ld, p,
                                               u2, D, h2, D, v[5].p ? st2 : NULL)
                             : sn_merge_forward(ctx, &fu, R, D, v[0].p, v[0].ld, v[1].p, v[1].ld, p,
                                                h2, D, v[5].p ? st2 : NULL);
        CHECK_MSG(s2 == SN_OK, "second forward status %d", (int)s2);
        for (int64_t r = 0; r < R; r++)
            CHECK_MSG(memcmp(v[4].p + r * v[4].ld, h2 + r * D, (size_t)D * 4) == 0,
                      "merge and fuse forward differ (row %lld)", (long long)r);
        CHECK_MSG(!v[5].p || memcmp(v[5].p, st2, (size_t)(R * spr) * 4) == 0,
                  "merge and fuse statistics differ");
        CHECK_MSG(!merge || memcmp(u2, uref, (size_t)(R * D) * 4) == 0,
                  "fuse u differs from N_x(x)");
        free(ny), free(href), free(h2), free(u2), free(st2);
    }
    int trained = st == SN_OK && v[5].p && !c.forced && !c.nulled; /* stats hold this x, y */

    /* backward */
    uint32_t flags = fz_pick(f, 6) == 5 ? fz_u32(f) : (uint32_t)fz_pick(f, 4);
    int bmerge = fz_pick(f, 3) == 0;
    int use_du = !bmerge && fz_pick(f, 4) != 0, use_dp = fz_pick(f, 4) != 0;
    call b;
    memset(&b, 0, sizeof b);
    b.v[0] = mview(e, 6, RD, 1, 1);
    b.v[1] = mview(e, 7, RD, 0, 1);
    b.v[2] = mview(e, 0, RD, 1, 1);
    b.v[3] = mview(e, 1, RD, 1, 1);
    b.v[4] = vview(e, 2, RD, np > 0, 1);
    b.v[5] = vview(e, 5, RD, spr > 0, 0);
    b.v[6] = mview(e, 8, flags & SN_ACCUMULATE ? AC : WR, 1, 0);
    b.v[7] = mview(e, 9, flags & SN_ACCUMULATE_Y ? AC : WR, 1, 0);
    b.v[8] = vview(e, 10, AC, 0, 0);
    if (!use_du) b.v[1].p = NULL;
    if (!use_dp) b.v[8].p = NULL;
    b.n = 9;
    if (!(flags & SN_ACCUMULATE)) b.allow[6] = 1u << 1; /* dx may alias du */
    b.must = fnull ? ST(SN_ERR_NULL) : fmust;
    if (flags & ~3u) b.must |= ST(SN_ERR_FLAGS);
    int bref = fref && trained && fz_pick(f, 4) != 3;
    prepare(e, &b, checked);
    bref = bref && !b.forced && !b.nulled && !b.huge && !b.injected;
    float *old[3] = {NULL, NULL, NULL};
    view *w = b.v;
    if (bref) {
        old[0] = gather(e, &w[6], R, D), old[1] = gather(e, &w[7], R, D);
        old[2] = tu_fzeros(np + 1);
        if (w[8].p) memcpy(old[2], w[8].p, (size_t)np * 4);
    }
    st = bmerge ? sn_merge_backward(ctx, fp, b.R, b.D, w[0].p, w[0].ld, w[2].p, w[2].ld, w[3].p,
                                    w[3].ld, w[4].p, w[5].p, w[6].p, w[6].ld, w[7].p, w[7].ld,
                                    w[8].p, flags)
                : sn_fuse_backward(ctx, fp, b.R, b.D, w[0].p, w[0].ld, w[1].p, w[1].ld, w[2].p,
                                   w[2].ld, w[3].p, w[3].ld, w[4].p, w[5].p, w[6].p, w[6].ld,
                                   w[7].p, w[7].ld, w[8].p, flags);
    verify(e, &b, ctx, st, bmerge ? "merge_backward" : "fuse_backward");
    if (st == SN_OK && tame && trained && !b.forced && !b.injected)
        for (int i = 6; i < 9; i++)
            CHECK_MSG(view_finite(&w[i], R, D), "fuse backward: non-finite gradient %d", i);
    if (st == SN_OK && bref) {
        /* ds = N_out'(dh); dx = N_x'(du + ds); dy = N_y'(ds), with the fuse's saved statistics */
        int64_t so[3] = {0, sprk[0], sprk[0] + sprk[1]};
        float *sx[3], *g = tu_falloc(R * D);
        float *ds = tu_falloc(R * D), *dxr = tu_falloc(R * D);
        float *dyr = tu_falloc(R * D), *dpr = tu_fzeros(np + 1);
        for (int i = 0; i < 3; i++) sx[i] = slice_stats(w[5].p, R, spr, so[i], sprk[i]);
        const float *p = w[4].p;
        sn_status s1 =
            sn_norm_backward(ctx, &fu.out, R, D, w[0].p, w[0].ld, sref, D, p + npk[0] + npk[1],
                             sx[2], ds, D, dpr + npk[0] + npk[1], 0);
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++)
                g[r * D + j] = ds[r * D + j] + (w[1].p ? w[1].p[r * w[1].ld + j] : 0.0f);
        sn_status s2 =
            sn_norm_backward(ctx, &fu.x, R, D, g, D, w[2].p, w[2].ld, p, sx[0], dxr, D, dpr, 0);
        sn_status s3 = sn_norm_backward(ctx, &fu.y, R, D, ds, D, w[3].p, w[3].ld, p + npk[0], sx[1],
                                        dyr, D, dpr + npk[0], 0);
        CHECK_MSG(s1 == SN_OK && s2 == SN_OK && s3 == SN_OK, "reference backward %d %d %d", (int)s1,
                  (int)s2, (int)s3);
        for (int64_t k = 0; k < R * D; k++) {
            if (flags & SN_ACCUMULATE) dxr[k] += old[0][k];
            if (flags & SN_ACCUMULATE_Y) dyr[k] += old[1][k];
        }
        for (int64_t k = 0; k < np; k++) dpr[k] += old[2][k];
        double err;
        CHECK_MSG(close_to(w[6].p, w[6].ld, dxr, R, D, 2e-3, &err), "fuse dx off by %g (flags %u)",
                  err, flags);
        CHECK_MSG(close_to(w[7].p, w[7].ld, dyr, R, D, 2e-3, &err), "fuse dy off by %g (flags %u)",
                  err, flags);
        CHECK_MSG(!w[8].p || close_to(w[8].p, np, dpr, 1, np, 2e-3, &err), "fuse dparams off by %g",
                  err);
        for (int i = 0; i < 3; i++) free(sx[i]);
        free(g), free(ds), free(dxr), free(dyr), free(dpr);
    }
    for (int i = 0; i < 3; i++) free(old[i]);
    free(uref), free(sref);
}

/* ---- apply and split ---------------------------------------------------------------------- */

static void op_apply(env *e, const sn_ctx *ctx, int checked) {
    fz *f = e->f;
    int c_ok, c_tame;
    float cs = fz_positive(f, &c_ok, &c_tame);
    /* 0 z, 1 u, 2 y, 3 xo, 4 yo, 5 dxo, 6 dyo, 7 dz */
    e->nb = 8;
    for (int k = 0; k < 8; k++) e->span[k] = fz_span(e->Rp, e->Dp, e->ld[k] > 0 ? e->ld[k] : e->Dp);
    env_alloc(e);
    int64_t D = e->D;
    call c;
    memset(&c, 0, sizeof c);
    for (int k = 0; k < 5; k++) c.v[k] = mview(e, k, k < 3 ? RD : WR, 1, k < 3);
    c.n = 5;
    c.allow[3] = 1u << 1, c.allow[4] = 1u << 2; /* xo may alias u, yo may alias y */
    c.must = c_ok ? 0u : ST(SN_ERR_SCALE);
    prepare(e, &c, checked);
    view *v = c.v;
    int64_t R = c.R;
    int valid = !c.must;
    float *z = NULL, *u = NULL, *y = NULL;
    if (valid) z = gather(e, &v[0], R, D), u = gather(e, &v[1], R, D), y = gather(e, &v[2], R, D);
    sn_status st = sn_apply_forward(ctx, c.R, c.D, cs, v[0].p, v[0].ld, v[1].p, v[1].ld, v[2].p,
                                    v[2].ld, v[3].p, v[3].ld, v[4].p, v[4].ld);
    verify(e, &c, ctx, st, "apply_forward");
    if (st == SN_OK) {
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++) {
                float zz = z[r * D + j], uu = u[r * D + j], yy = y[r * D + j];
                float xo = v[3].p[r * v[3].ld + j], yo = v[4].p[r * v[4].ld + j];
                float ey = yy + zz;
                double ex = (double)uu + (double)zz / (double)cs;
                if (isfinite(ey))
                    CHECK_MSG(memcmp(&yo, &ey, 4) == 0, "apply yo %g != y + z %g", (double)yo,
                              (double)ey);
                double tol = 4e-7 * (fabs((double)uu) + fabs((double)zz / (double)cs)) + 1e-37;
                if (fabs(ex) < 3e38 && fabs((double)zz / cs) < 3e38 && isfinite(zz) && isfinite(uu))
                    CHECK_MSG(fabs((double)xo - ex) <= tol, "apply xo %g != u + z / c %g (c %g)",
                              (double)xo, ex, (double)cs);
            }
        if (!e->wild && !e->arena_mode && c_tame && !c.injected)
            CHECK_MSG(view_finite(&v[3], R, D) && view_finite(&v[4], R, D), "apply not finite");
    }
    free(z), free(u), free(y);

    uint32_t flags = fz_pick(f, 6) == 5 ? fz_u32(f) : (uint32_t)fz_pick(f, 2);
    call b;
    memset(&b, 0, sizeof b);
    b.v[0] = mview(e, 5, RD, 1, 1);
    b.v[1] = mview(e, 6, RD, 1, 1);
    b.v[2] = mview(e, 7, flags & SN_ACCUMULATE ? AC : WR, 1, 0);
    b.n = 3;
    if (!(flags & SN_ACCUMULATE)) b.allow[2] = 3u; /* dz may alias dxo or dyo */
    b.must = (c_ok ? 0u : ST(SN_ERR_SCALE)) | (flags & ~1u ? ST(SN_ERR_FLAGS) : 0u);
    prepare(e, &b, checked);
    v = b.v, R = b.R;
    float *dxo = NULL, *dyo = NULL, *dz = NULL;
    if (!b.must)
        dxo = gather(e, &v[0], R, D), dyo = gather(e, &v[1], R, D), dz = gather(e, &v[2], R, D);
    st = sn_apply_backward(ctx, b.R, b.D, cs, v[0].p, v[0].ld, v[1].p, v[1].ld, v[2].p, v[2].ld,
                           flags);
    verify(e, &b, ctx, st, "apply_backward");
    if (st == SN_OK) {
        int acc = flags & SN_ACCUMULATE;
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++) {
                double a = dxo[r * D + j], q = dyo[r * D + j], o = acc ? dz[r * D + j] : 0;
                double ex = o + a / cs + q, got = v[2].p[r * v[2].ld + j];
                double tol = 6e-7 * (fabs(o) + fabs(a / cs) + fabs(q)) + 1e-37;
                if (fabs(ex) < 3e38 && fabs(o) + fabs(a / cs) + fabs(q) < 3e38)
                    CHECK_MSG(fabs(got - ex) <= tol, "apply dz %g != dxo / c + dyo %g", got, ex);
            }
    }
    free(dxo), free(dyo), free(dz);
}

static void op_split(env *e, const sn_ctx *ctx, int checked) {
    fz *f = e->f;
    /* 0 e, 1 x, 2 y, 3 dx, 4 dy, 5 de */
    e->nb = 6;
    for (int k = 0; k < 6; k++) e->span[k] = fz_span(e->Rp, e->Dp, e->ld[k] > 0 ? e->ld[k] : e->Dp);
    env_alloc(e);
    int64_t D = e->D;
    call c;
    memset(&c, 0, sizeof c);
    c.v[0] = mview(e, 0, RD, 1, 1);
    c.v[1] = mview(e, 1, WR, 1, 0);
    c.v[2] = mview(e, 2, WR, 1, 0);
    c.n = 3;
    c.allow[1] = 1u; /* x may alias e */
    prepare(e, &c, checked);
    view *v = c.v;
    int64_t R = c.R;
    float *in = c.must ? NULL : gather(e, &v[0], R, D);
    sn_status st =
        sn_split_forward(ctx, c.R, c.D, v[0].p, v[0].ld, v[1].p, v[1].ld, v[2].p, v[2].ld);
    verify(e, &c, ctx, st, "split_forward");
    for (int64_t r = 0; r < R && st == SN_OK; r++)
        CHECK_MSG(memcmp(v[1].p + r * v[1].ld, in + r * D, (size_t)D * 4) == 0 &&
                      memcmp(v[2].p + r * v[2].ld, in + r * D, (size_t)D * 4) == 0,
                  "split forward: x or y is not a copy of e (row %lld)", (long long)r);
    free(in);

    uint32_t flags = fz_pick(f, 6) == 5 ? fz_u32(f) : (uint32_t)fz_pick(f, 2);
    call b;
    memset(&b, 0, sizeof b);
    b.v[0] = mview(e, 3, RD, 1, 1);
    b.v[1] = mview(e, 4, RD, 1, 1);
    b.v[2] = mview(e, 5, flags & SN_ACCUMULATE ? AC : WR, 1, 0);
    b.n = 3;
    if (!(flags & SN_ACCUMULATE)) b.allow[2] = 3u; /* de may alias dx or dy */
    b.must = flags & ~1u ? ST(SN_ERR_FLAGS) : 0u;
    prepare(e, &b, checked);
    v = b.v, R = b.R;
    float *dx = NULL, *dy = NULL, *de = NULL;
    if (!b.must)
        dx = gather(e, &v[0], R, D), dy = gather(e, &v[1], R, D), de = gather(e, &v[2], R, D);
    st = sn_split_backward(ctx, b.R, b.D, v[0].p, v[0].ld, v[1].p, v[1].ld, v[2].p, v[2].ld, flags);
    verify(e, &b, ctx, st, "split_backward");
    if (st == SN_OK) {
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < D; j++) {
                float got = v[2].p[r * v[2].ld + j], s = dx[r * D + j] + dy[r * D + j];
                if (!(flags & SN_ACCUMULATE)) {
                    if (isfinite(s))
                        CHECK_MSG(memcmp(&got, &s, 4) == 0, "split de %g != dx + dy %g",
                                  (double)got, (double)s);
                } else {
                    double a = dx[r * D + j], q = dy[r * D + j], o = de[r * D + j];
                    double ex = o + a + q, tol = 6e-7 * (fabs(o) + fabs(a) + fabs(q)) + 1e-37;
                    if (fabs(o) + fabs(a) + fabs(q) < 3e38)
                        CHECK_MSG(fabs((double)got - ex) <= tol, "split de %g != de + dx + dy %g",
                                  (double)got, ex);
                }
            }
    }
    free(dx), free(dy), free(de);
}

static void op_find(env *e) {
    fz *f = e->f;
    e->nb = 1;
    e->span[0] = fz_span(e->Rp, e->Dp, e->ld[0] > 0 ? e->ld[0] : e->Dp);
    env_alloc(e);
    if (fz_pick(f, 2) && e->span[0] > 0) /* plant a non-finite value somewhere in the buffer */
        e->b[0][fz_u32(f) % (uint32_t)e->span[0]] = fz_pick(f, 2) ? NAN : -INFINITY;
    int rnull = fz_pick(f, 16) == 15;
    call c;
    memset(&c, 0, sizeof c);
    c.v[0] = mview(e, 0, RD, 1, 0);
    c.n = 1;
    if (rnull) c.must = ST(SN_ERR_NULL);
    prepare(e, &c, 0);
    int64_t row = -7;
    sn_status st = sn_find_nonfinite(c.R, c.D, c.v[0].p, c.v[0].ld, rnull ? NULL : &row);
    verify(e, &c, NULL, st, "find_nonfinite");
    if (c.must) {
        CHECK_MSG(row == -7, "find_nonfinite wrote *row on error");
    } else if (st == SN_OK) {
        int64_t want = first_bad_row(&c.v[0], c.R, c.D);
        CHECK_MSG(row == want, "find_nonfinite row %lld, want %lld", (long long)row,
                  (long long)want);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz f = {data, size};
    env e;
    memset(&e, 0, sizeof e);
    e.f = &f;
    int op = fz_pick(&f, 8);
    if (fz_pick(&f, 32) == 31) { /* wide rows: the threaded and wide-row (> 1024) kernel paths */
        static const int64_t wide[] = {1024, 1025, 1100, 2053};
        e.D = wide[fz_pick(&f, 4)], e.R = 1 + fz_pick(&f, 16);
    } else {
        e.R = fz_pick(&f, 9) - (fz_u8(&f) == 255);
        e.D = fz_pick(&f, 67) - (fz_u8(&f) == 254);
    }
    e.Rp = e.R > 0 ? e.R : 1, e.Dp = e.D > 0 ? e.D : 1;
    for (int k = 0; k < NB; k++) {
        int d = fz_pick(&f, 8);
        e.ld[k] = e.D + (d == 7 ? -1 : d == 6 ? 3 : d == 5 ? 17 : 0);
    }
    e.arena_mode = fz_pick(&f, 4) == 3;
    e.wild = fz_pick(&f, 8) == 7;
    int checked = fz_pick(&f, 4) == 3;
    uint8_t ci = fz_u8(&f);
    const sn_ctx *ctx = checked ? checked_ctx(ci) : fz_ctx(ci);
    if (op < 4) op_fuse(&e, ctx, checked);
    else if (op < 6) op_apply(&e, ctx, checked);
    else if (op < 7) op_split(&e, ctx, checked);
    else op_find(&e);
    env_free(&e);
    return 0;
}
