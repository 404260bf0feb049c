/* Test 'roles' (suite core): sn_net_norm_role, sn_net_find_norm and the role, operand and dtype
 * name tables.
 *   1. the name tables: a distinct name for every value below the COUNT, NULL outside, and
 *      sn_dtype_from_name the inverse of sn_dtype_name;
 *   2. every placement up to SN_PLACEMENT_COUNT (a placement added later included), several
 *      depths: a role exactly where sn_net_norm_at has a norm, each role at most once per
 *      stage, sn_net_find_norm agreeing, roles only where they belong (merge roles at the
 *      merge, embed at the split, scale on SN_NORM_SCALE norms and nowhere else);
 *   3. the ten placements of 0.4 against an independent statement of their roles (the
 *      header's equations, written out per stage);
 *   4. behaviour, every placement: shifting the beta of a stage's INPUT norm by d shifts that
 *      sub-layer's block input h by exactly d and changes no earlier h; shifting a FINAL
 *      norm's beta shifts the network output by d (the blocks' outputs held fixed);
 *   5. bad arguments: statuses, outputs untouched.
 * `test_roles --markdown` prints the roles table of docs/api.md ("Norm roles"); with a path,
 * `test_roles DOC` checks that the table between the markers <!-- roles --> and
 * <!-- /roles --> of DOC is exactly that (meson passes docs/api.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "siamesenorm.h"
#include "testutil.h"

enum { R = 3, D = 8 };

/* "role:operand role:operand ..." of stage i, from the library. */
static void stage_string(const sn_net *net, int32_t i, char *buf, size_t n) {
    buf[0] = '\0';
    sn_norm_role r;
    sn_norm_operand o;
    for (int32_t j = 0; sn_net_norm_role(net, i, j, &r, &o) == SN_OK; j++) {
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s:%s", j ? " " : "", sn_norm_role_name(r),
                 sn_norm_operand_name(o));
    }
}

/* The same, from the header's equations of each placement of 0.4 (NULL: a placement this test
 * does not know, added later). */
static const char *expected(int p, int32_t S, int32_t i, float mix) {
    const int32_t L = (S + 1) / 2, layer = i / 2, attn = i % 2 == 0;
    if (i < 0) return p == SN_PLACEMENT_PERI_LN ? "embed:e" : "";
    if (i == S) {
        switch (p) {
        case SN_PLACEMENT_POST_NORM:
        case SN_PLACEMENT_DEEPNORM: return "";
        case SN_PLACEMENT_SIAMESE:
        case SN_PLACEMENT_SIAMESE_PAPER:
        case SN_PLACEMENT_SIAMESE_HYBRID_PRE: return "merge_x:x merge_y:y final:fused";
        default: return p < 10 ? "final:x" : NULL;
        }
    }
    switch (p) {
    case SN_PLACEMENT_PRE_NORM: return "input:x";
    case SN_PLACEMENT_POST_NORM:
    case SN_PLACEMENT_DEEPNORM: return "post:residual";
    case SN_PLACEMENT_SIAMESE: return "post:x pre:y input:fused";
    case SN_PLACEMENT_SIAMESE_PAPER: return "post:residual pre:y input:fused";
    case SN_PLACEMENT_SIAMESE_HYBRID_PRE:
        return attn ? "scale:x pre:y" : "post:x pre:y input:fused";
    case SN_PLACEMENT_PERI_LN: return "input:x out:z";
    case SN_PLACEMENT_MIX_LN:
        return layer < (int32_t)(mix * (float)L) ? "post:residual" : "input:x";
    case SN_PLACEMENT_HYBRIDNORM_STAR:
        if (layer == 0) return "input:x";
        /* fall through */
    case SN_PLACEMENT_HYBRIDNORM: return attn ? "input:x" : "post:x";
    default: return NULL;
    }
}

static void names(void) {
    for (int a = 0; a < SN_ROLE_COUNT; a++) {
        CHECK_MSG(sn_norm_role_name((sn_norm_role)a) != NULL, "role %d has no name", a);
        for (int b = 0; b < a; b++)
            CHECK(strcmp(sn_norm_role_name((sn_norm_role)a), sn_norm_role_name((sn_norm_role)b)));
    }
    for (int a = 0; a < SN_OPERAND_COUNT; a++) {
        CHECK_MSG(sn_norm_operand_name((sn_norm_operand)a) != NULL, "operand %d has no name", a);
        for (int b = 0; b < a; b++)
            CHECK(strcmp(sn_norm_operand_name((sn_norm_operand)a),
                         sn_norm_operand_name((sn_norm_operand)b)));
    }
    CHECK(sn_norm_role_name((sn_norm_role)SN_ROLE_COUNT) == NULL);
    CHECK(sn_norm_role_name((sn_norm_role)-1) == NULL);
    CHECK(sn_norm_operand_name((sn_norm_operand)SN_OPERAND_COUNT) == NULL);
    CHECK(sn_norm_operand_name((sn_norm_operand)-1) == NULL);
    CHECK(strcmp(sn_norm_role_name(SN_ROLE_INPUT), "input") == 0);
    CHECK(strcmp(sn_norm_role_name(SN_ROLE_FINAL), "final") == 0);

    for (int k = 0; k < SN_DTYPE_COUNT; k++) {
        sn_dtype d = (sn_dtype)-1;
        CHECK_OK(sn_dtype_from_name(sn_dtype_name((sn_dtype)k), &d));
        CHECK((int)d == k);
    }
    sn_dtype d = SN_DTYPE_BF16;
    CHECK_STATUS(sn_dtype_from_name("fp32", &d), SN_ERR_DTYPE);
    CHECK_STATUS(sn_dtype_from_name("BF16", &d), SN_ERR_DTYPE);
    CHECK_STATUS(sn_dtype_from_name("", &d), SN_ERR_DTYPE);
    CHECK_STATUS(sn_dtype_from_name("bf16 ", &d), SN_ERR_DTYPE);
    CHECK(d == SN_DTYPE_BF16); /* unchanged */
    CHECK_STATUS(sn_dtype_from_name(NULL, &d), SN_ERR_NULL);
    CHECK_STATUS(sn_dtype_from_name("f32", NULL), SN_ERR_NULL);
}

/* 2 and 3 for one net. */
static void structure(const sn_net *net) {
    const int32_t S = net->n_sublayers;
    const char *pname = sn_placement_name((sn_placement)net->placement);
    for (int32_t i = -1; i <= S; i++) {
        int seen[SN_ROLE_COUNT] = {0};
        int32_t j = 0;
        for (;; j++) {
            sn_norm nm;
            sn_norm_role r = (sn_norm_role)-1;
            sn_norm_operand o = (sn_norm_operand)-1;
            sn_status at = sn_net_norm_at(net, i, j, &nm, NULL);
            sn_status st = sn_net_norm_role(net, i, j, &r, &o);
            CHECK_MSG(at == st, "%s S=%d stage %d norm %d: norm_at %d, norm_role %d", pname, S, i,
                      j, at, st);
            if (at != SN_OK || st != SN_OK) break;
            CHECK_MSG((int)r >= 0 && (int)r < SN_ROLE_COUNT && (int)o >= 0 &&
                          (int)o < SN_OPERAND_COUNT,
                      "%s stage %d norm %d: role %d operand %d", pname, i, j, r, o);
            if ((int)r < 0 || (int)r >= SN_ROLE_COUNT) continue;
            CHECK_MSG(!seen[r], "%s stage %d: role %s twice", pname, i, sn_norm_role_name(r));
            seen[r] = 1;
            const int merge_role =
                r == SN_ROLE_MERGE_X || r == SN_ROLE_MERGE_Y || r == SN_ROLE_FINAL;
            if (i == S) CHECK_MSG(merge_role, "%s merge: role %s", pname, sn_norm_role_name(r));
            else if (i < 0)
                CHECK_MSG(r == SN_ROLE_EMBED, "%s split: role %s", pname, sn_norm_role_name(r));
            else
                CHECK_MSG(!merge_role && r != SN_ROLE_EMBED, "%s sub-layer %d: role %s", pname, i,
                          sn_norm_role_name(r));
            CHECK_MSG((r == SN_ROLE_SCALE) == (nm.kind == SN_NORM_SCALE),
                      "%s stage %d norm %d: role %s, kind %d", pname, i, j, sn_norm_role_name(r),
                      nm.kind);
            CHECK((o == SN_OPERAND_E) == (r == SN_ROLE_EMBED));
            int32_t found = -1;
            CHECK_OK(sn_net_find_norm(net, i, r, &found));
            CHECK(found == j);
        }
        CHECK_STATUS(sn_net_norm_role(net, i, j + 1, NULL, NULL), SN_ERR_INDEX);
        for (int r = 0; r < SN_ROLE_COUNT; r++)
            if (!seen[r]) {
                int32_t found = 77;
                CHECK_STATUS(sn_net_find_norm(net, i, (sn_norm_role)r, &found), SN_ERR_INDEX);
                CHECK(found == 77);
            }
        char got[256];
        stage_string(net, i, got, sizeof got);
        const char *want = expected(net->placement, S, i, net->mix_fraction);
        if (want)
            CHECK_MSG(strcmp(got, want) == 0, "%s S=%d stage %d: roles \"%s\", expected \"%s\"",
                      pname, S, i, got, want);
    }
}

/* 4: a forward with fixed block outputs; h[i] and out recorded. */
static void forward(const sn_net *net, const float *params, float *h, float *out) {
    int64_t np, apr;
    CHECK_OK(sn_net_sizes(net, &np, &apr, NULL));
    float *acts = tu_fzeros(R * apr), *e = tu_falloc(R * D), *z = tu_falloc(R * D);
    for (int k = 0; k < R * D; k++) e[k] = 0.3f * (float)((k * 7) % 11) - 1.1f;
    const sn_net_pass pass = {.rows = R, .params = params, .acts = acts};
    CHECK_OK(sn_net_split(NULL, net, &pass, e, D));
    for (int32_t i = 0; i < net->n_sublayers; i++) {
        CHECK_OK(sn_net_enter(NULL, net, &pass, i, h + (int64_t)i * R * D, D));
        for (int k = 0; k < R * D; k++) z[k] = 0.2f * (float)(((k + i) * 5) % 9) - 0.7f;
        CHECK_OK(sn_net_exit(NULL, net, &pass, i, z, D));
    }
    CHECK_OK(sn_net_merge(NULL, net, &pass, out, D));
    free(acts);
    free(e);
    free(z);
}

static void behaviour(const sn_net *net) {
    const int32_t S = net->n_sublayers;
    const char *pname = sn_placement_name((sn_placement)net->placement);
    int64_t np;
    CHECK_OK(sn_net_sizes(net, &np, NULL, NULL));
    float *params = tu_falloc(np > 0 ? np : 1), *h0 = tu_falloc(S * R * D),
          *h1 = tu_falloc(S * R * D);
    float out0[R * D], out1[R * D];
    tu_rng g = {0x5eed};
    for (int64_t k = 0; k < np; k++) params[k] = (float)tu_unif(&g, 0.5, 1.5);
    forward(net, params, h0, out0);
    int tested = 0;
    for (int32_t i = 0; i <= S; i++) {
        const sn_norm_role role = i < S ? SN_ROLE_INPUT : SN_ROLE_FINAL;
        int32_t j;
        sn_norm nm;
        int64_t off;
        if (sn_net_find_norm(net, i, role, &j) != SN_OK) continue;
        CHECK_OK(sn_net_norm_at(net, i, j, &nm, &off));
        if (nm.kind == SN_NORM_IDENTITY || nm.affine != SN_AFFINE_SCALE_SHIFT) continue;
        float delta[D], beta[D];
        memcpy(beta, params + off + D, sizeof beta);
        for (int c = 0; c < D; c++) {
            delta[c] = 0.25f * (float)(c % 3 + 1);
            params[off + D + c] += delta[c];
        }
        forward(net, params, h1, out1);
        memcpy(params + off + D, beta, sizeof beta);
        const float *a = i < S ? h0 + (int64_t)i * R * D : out0;
        const float *b = i < S ? h1 + (int64_t)i * R * D : out1;
        double worst = 0;
        for (int k = 0; k < R * D; k++) {
            double err = (double)b[k] - (double)a[k] - (double)delta[k % D];
            if (err < 0) err = -err;
            if (err > worst) worst = err;
        }
        CHECK_MSG(worst <= 1e-5, "%s stage %d: the %s norm's beta + d moved %s by d +- %.2e", pname,
                  i, sn_norm_role_name(role), i < S ? "h" : "out", worst);
        if (i < S)
            CHECK_MSG(memcmp(h0, h1, (size_t)i * R * D * sizeof(float)) == 0,
                      "%s stage %d: an earlier block input changed", pname, i);
        tested++;
    }
    CHECK_MSG(tested > 0 || net->placement == SN_PLACEMENT_POST_NORM ||
                  net->placement == SN_PLACEMENT_DEEPNORM,
              "%s: no input or final norm tested", pname);
    free(params);
    free(h0);
    free(h1);
}

static void bad_arguments(void) {
    sn_net net;
    CHECK_OK(sn_net_init(&net, SN_PLACEMENT_SIAMESE, 4, D, SN_NORM_LAYERNORM, 1e-5f));
    sn_norm_role r = SN_ROLE_SCALE;
    sn_norm_operand o = SN_OPERAND_E;
    int32_t j = 77;
    CHECK_STATUS(sn_net_norm_role(NULL, 0, 0, &r, &o), SN_ERR_NULL);
    CHECK_STATUS(sn_net_norm_role(&net, -2, 0, &r, &o), SN_ERR_INDEX);
    CHECK_STATUS(sn_net_norm_role(&net, 5, 0, &r, &o), SN_ERR_INDEX);
    CHECK_STATUS(sn_net_norm_role(&net, 0, -1, &r, &o), SN_ERR_INDEX);
    CHECK_STATUS(sn_net_norm_role(&net, 0, 3, &r, &o), SN_ERR_INDEX);
    CHECK_STATUS(sn_net_norm_role(&net, -1, 0, &r, &o), SN_ERR_INDEX); /* no split norm */
    CHECK(r == SN_ROLE_SCALE && o == SN_OPERAND_E);                    /* untouched */
    CHECK_OK(sn_net_norm_role(&net, 0, 0, NULL, NULL));
    CHECK_STATUS(sn_net_find_norm(&net, 0, SN_ROLE_INPUT, NULL), SN_ERR_NULL);
    CHECK_STATUS(sn_net_find_norm(&net, 0, (sn_norm_role)SN_ROLE_COUNT, &j), SN_ERR_CONFIG);
    CHECK_STATUS(sn_net_find_norm(&net, 0, (sn_norm_role)-1, &j), SN_ERR_CONFIG);
    CHECK_STATUS(sn_net_find_norm(&net, 9, SN_ROLE_INPUT, &j), SN_ERR_INDEX);
    CHECK_STATUS(sn_net_find_norm(&net, 0, SN_ROLE_FINAL, &j), SN_ERR_INDEX);
    CHECK(j == 77);
    sn_net bad = net;
    bad.placement = SN_PLACEMENT_COUNT;
    CHECK_STATUS(sn_net_norm_role(&bad, 0, 0, &r, &o), SN_ERR_PLACEMENT);
    CHECK_STATUS(sn_net_find_norm(&bad, 0, SN_ROLE_INPUT, &j), SN_ERR_PLACEMENT);
    bad = net;
    bad.reserved[0] = 1;
    CHECK_STATUS(sn_net_norm_role(&bad, 0, 0, &r, &o), SN_ERR_CONFIG);
    CHECK(r == SN_ROLE_SCALE && o == SN_OPERAND_E && j == 77);
}

/* The roles table of docs/api.md: a 4-layer net of each placement; layer 0 and the layers
 * after it (which are all alike in every placement) in columns. */
static void markdown(FILE *f) {
    fprintf(f, "| placement | layer 0 attention | layer 0 MLP | later attention | later MLP | "
               "merge | split |\n|---|---|---|---|---|---|---|\n");
    for (int p = 0; p < SN_PLACEMENT_COUNT; p++) {
        sn_net net;
        if (sn_net_init(&net, (sn_placement)p, 8, D, SN_NORM_LAYERNORM, 1e-5f) != SN_OK) continue;
        fprintf(f, "| `%s` |", sn_placement_name((sn_placement)p));
        const int32_t cols[6] = {0, 1, 2, 3, 8, -1};
        for (int c = 0; c < 6; c++) {
            char s[256], t[256];
            stage_string(&net, cols[c], s, sizeof s);
            if (c == 2 || c == 3) /* the later layers must agree, or the table would lie */
                for (int32_t i = cols[c] + 2; i < 8; i += 2) {
                    stage_string(&net, i, t, sizeof t);
                    if (strcmp(s, t)) snprintf(s, sizeof s, "(varies)");
                }
            fputc(' ', f);
            if (!s[0]) fputs("none", f);
            for (char *w = strtok(s, " "); w; w = strtok(NULL, " ")) {
                char *colon = strchr(w, ':');
                if (colon) *colon = '\0';
                fprintf(f, "%s%s%s%s%s", w == s ? "" : ", ", w, colon ? "(" : "",
                        colon ? colon + 1 : "", colon ? ")" : "");
            }
            fputs(" |", f);
        }
        fputc('\n', f);
    }
}

static void doc_table(const char *doc) {
    FILE *f = fopen(doc, "r");
    CHECK_MSG(f != NULL, "cannot read %s", doc);
    if (!f) return;
    char line[1024], have[16384] = "", want[16384];
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "<!-- /roles -->", 15) == 0) in = 0;
        if (in && strlen(have) + strlen(line) < sizeof have) strcat(have, line);
        if (strncmp(line, "<!-- roles -->", 14) == 0) in = 1;
    }
    fclose(f);
    FILE *m = tmpfile();
    CHECK(m != NULL);
    if (!m) return;
    markdown(m);
    rewind(m);
    size_t n = fread(want, 1, sizeof want - 1, m);
    want[n] = '\0';
    fclose(m);
    CHECK_MSG(strcmp(have, want) == 0,
              "%s: the roles table differs from the library's; regenerate it with "
              "`test_roles --markdown`:\n%s",
              doc, want);
}

/* Mix-LN's Post-Norm layers, counted by role: floor(fraction * L) with the fraction the decimal
 * its float stands for (0.7f * 10 layers is 6.99999988 in float arithmetic: 7 layers). */
static void mix_counts(void) {
    static const struct {
        float f;
        int32_t layers, post;
    } cases[] = {{0.7f, 10, 7},   {0.9f, 10, 9}, {0.35f, 20, 7}, {0.3f, 10, 3}, {0.69f, 10, 6},
                 {0.1f, 512, 51}, {0.25f, 6, 1}, {0.5f, 7, 3},   {0.6f, 5, 3},  {1.0f, 3, 3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sn_net net;
        CHECK_OK(sn_net_init(&net, SN_PLACEMENT_MIX_LN, 2 * cases[c].layers, D, SN_NORM_LAYERNORM,
                             1e-5f));
        net.mix_fraction = cases[c].f;
        int32_t post = 0;
        for (int32_t i = 0; i < net.n_sublayers; i += 2) {
            sn_norm_role r;
            CHECK_OK(sn_net_norm_role(&net, i, 0, &r, NULL));
            post += r == SN_ROLE_POST;
        }
        CHECK_MSG(post == cases[c].post, "mix_ln fraction %g of %d layers: %d Post-Norm, want %d",
                  (double)cases[c].f, cases[c].layers, post, cases[c].post);
    }
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
        markdown(stdout);
        return 0;
    }
    names();
    static const int32_t depths[] = {1, 2, 3, 8, 9};
    for (int p = 0; p < SN_PLACEMENT_COUNT; p++)
        for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
            sn_net net;
            CHECK_OK(sn_net_init(&net, (sn_placement)p, depths[d], D, SN_NORM_LAYERNORM, 1e-5f));
            structure(&net);
            behaviour(&net);
            if (p == SN_PLACEMENT_MIX_LN) { /* every layer Post-Norm, then none */
                net.mix_fraction = 1.0f;
                structure(&net);
                behaviour(&net);
                net.mix_fraction = 0.0f;
                structure(&net);
            }
            net.norm.kind = SN_NORM_RMSNORM; /* roles do not depend on the kind */
            net.norm.affine = SN_AFFINE_SCALE;
            net.input_norm = net.norm;
            structure(&net);
        }
    mix_counts();
    bad_arguments();
    if (argc == 2) doc_table(argv[1]);
    return tu_finish("roles");
}
