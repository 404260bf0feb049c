/* Test: sn-gpt-compare's statistics on known inputs. Student's t quantiles against published
 * tables, the paired interval against a hand computation, and the verdict on crafted per-seed
 * results: clearly lower, clearly higher, overlapping, and diverged seeds left out; the
 * two-sided p of a paired result against closed forms of t, Holm's adjustment by hand, and the
 * verdict's words in a family of comparisons; reading a loss curve (the loss at a step, the
 * mean over the run) on crafted curves with known answers, and the mean telling "learns
 * faster" from "ends lower". Also sn-gpt-train's time left
 * (clock.h, eta_left) on known step and evaluation counts. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "stats.h"

static int failures;

static void near(const char *what, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol;
    printf("%-44s %.10f (want %.10f) %s\n", what, got, want, ok ? "ok" : "FAIL");
    failures += !ok;
}

static void expect(const char *what, int cond) {
    printf("%-44s %s\n", what, cond ? "ok" : "FAIL");
    failures += !cond;
}

int main(void) {
    /* two-sided 95% critical values t_{0.975, df} (any statistics table) */
    near("t quantile 0.975, df 1", t_quantile(0.975, 1), 12.7062047362, 1e-7);
    near("t quantile 0.975, df 2", t_quantile(0.975, 2), 4.3026527297, 1e-8);
    near("t quantile 0.975, df 5", t_quantile(0.975, 5), 2.5705818366, 1e-8);
    near("t quantile 0.975, df 10", t_quantile(0.975, 10), 2.2281388520, 1e-8);
    near("t quantile 0.975, df 30", t_quantile(0.975, 30), 2.0422724563, 1e-8);
    near("t quantile 0.995, df 7", t_quantile(0.995, 7), 3.4994832973, 1e-8);
    near("t quantile 0.025, df 5 (symmetry)", t_quantile(0.025, 5), -2.5705818366, 1e-8);
    near("t cdf at 0, df 3", t_cdf(0.0, 3), 0.5, 1e-12);
    /* df 1 is the Cauchy distribution: P(T <= 1) = 3/4 */
    near("t cdf at 1, df 1 (Cauchy)", t_cdf(1.0, 1), 0.75, 1e-12);
    /* df 2 has a closed form: P(T <= t) = 1/2 + t / (2 sqrt(2 + t^2)) */
    near("t cdf at 1.5, df 2", t_cdf(1.5, 2), 0.5 + 1.5 / (2 * sqrt(2 + 2.25)), 1e-12);

    summary s = summarize((const double[]){1, 2, 3, 4}, 4);
    near("summary mean of 1..4", s.mean, 2.5, 1e-15);
    near("summary sd of 1..4 (n-1)", s.sd, sqrt(5.0 / 3.0), 1e-15);
    expect("summary min/max of 1..4", s.min == 1 && s.max == 4);

    /* differences 0.1, 0.2, 0.3, 0.4, 0.5, 0.6: mean 0.35, sd sqrt(0.035), n 6 */
    const double a[6] = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    const double b[6] = {1.1, 1.2, 1.3, 1.4, 1.5, 1.6};
    paired p = paired_t(a, b, 6, 0.95);
    double half = 2.5705818366 * sqrt(0.035) / sqrt(6.0);
    near("paired mean", p.mean, 0.35, 1e-12);
    near("paired 95% lower end", p.lo, 0.35 - half, 1e-9);
    near("paired 95% upper end", p.hi, 0.35 + half, 1e-9);
    expect("verdict: higher", verdict_of(&p) == VERDICT_HIGHER);
    paired q = paired_t(b, a, 6, 0.95);
    expect("verdict: lower (arms swapped)", verdict_of(&q) == VERDICT_LOWER);
    char line[256];
    verdict_line(&q, 0.95, paired_p(&q), 1, "siamese", "pre", line, sizeof line);
    printf("  %s\n", line);
    expect("verdict line says lower by 0.3500",
           strstr(line, "lower than pre by 0.3500 (95% CI") != NULL);

    /* a large seed-to-seed spread around a small mean difference: no verdict */
    const double c[6] = {1.0, 2.0, 1.5, 0.7, 1.2, 1.9};
    const double e[6] = {1.1, 1.8, 1.6, 0.6, 1.3, 1.8};
    paired r = paired_t(c, e, 6, 0.95);
    expect("verdict: no difference", verdict_of(&r) == VERDICT_NONE && r.lo < 0 && r.hi > 0);
    verdict_line(&r, 0.95, paired_p(&r), 1, "siamese", "pre", line, sizeof line);
    printf("  %s\n", line);
    expect("verdict line says no difference", strstr(line, "no difference detectable") != NULL);

    /* Two-sided p-values of paired results. Expected values computed independently of t_cdf:
     * closed forms of Student's t for 1, 2 and 5 degrees of freedom (df 1, Cauchy: p = 1 -
     * (2/pi) atan|t|; df 2: p = 1 - |t| / sqrt(2 + t^2); df 5, Abramowitz and Stegun 26.7.3:
     * p = 1 - (2/pi) (th + sin th (cos th + (2/3) cos^3 th)), th = atan(|t| / sqrt 5)), the t
     * statistic by hand, and the df 2 and df 5 values checked in numpy against a Simpson
     * integral of the density Gamma((v+1)/2) / (Gamma(v/2) sqrt(v pi)) (1 + x^2/v)^(-(v+1)/2)
     * (2e6 intervals; agreement to 1e-15). */
    /* differences 0.1, 0.3: mean 0.2, sd sqrt(0.02), t = 0.2 / (sqrt(0.02) / sqrt 2) = 2 */
    paired p1 = paired_t((const double[]){1, 1}, (const double[]){1.1, 1.3}, 2, 0.95);
    near("p, df 1 (Cauchy), t = 2", paired_p(&p1), 1.0 - 2.0 / acos(-1.0) * atan(2.0), 1e-12);
    /* differences 0.1, 0.2, 0.6: mean 0.3, sd^2 0.07, t^2 = 0.09 / (0.07 / 3) = 27/7, so
     * p = 1 - sqrt(27/7) / sqrt(41/7) = 1 - sqrt(27/41) = 0.18849732879931 */
    paired p2 = paired_t((const double[]){0, 0, 0}, (const double[]){0.1, 0.2, 0.6}, 3, 0.95);
    near("p, df 2, t^2 = 27/7", paired_p(&p2), 1.0 - sqrt(27.0 / 41.0), 1e-12);
    /* the differences 0.1..0.6 above: t = 0.35 sqrt(6 / 0.035) = 4.5825756950, df 5 */
    near("p, df 5, t = 4.58", paired_p(&p), 0.005933544517592204, 1e-12);
    near("p, the arms swapped: the same", paired_p(&q), 0.005933544517592204, 1e-12);
    /* t at the table's t_{0.975, 5}: p is 0.05, where the 95% interval touches 0 */
    paired at_q = {6, 2.5705818366, sqrt(6.0), NAN, NAN};
    near("p at t = t_{0.975, 5} is 0.05", paired_p(&at_q), 0.05, 1e-9);
    double pr = paired_p(&r);
    expect("p of the no-difference case is >= 0.05", pr >= 0.05 && pr <= 1.0);
    paired same = {4, -0.05, 0.0, -0.05, -0.05}, zero = {4, 0.0, 0.0, 0.0, 0.0};
    expect("p, every difference the same: 0, or 1 when it is 0",
           paired_p(&same) == 0.0 && paired_p(&zero) == 1.0);
    paired one = {1, 0.3, NAN, NAN, NAN};
    expect("p with one pair: NaN", isnan(paired_p(&one)));

    /* Holm's adjustment, by hand: rank the p, multiply the r-th smallest by m - r + 1, cap at
     * 1, and carry the running maximum up the ranks (checked in numpy: argsort(kind='stable'),
     * minimum(1, (m - arange(m)) * p[o]), maximum.accumulate) */
    double h[5];
    const double h4[4] = {0.01, 0.04, 0.03, 0.005};
    /* 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, raised to 0.06 */
    expect("holm: returns 0", holm_adjust(h4, 4, h) == 0);
    near("holm: smallest of 4 (x 4)", h[3], 0.02, 1e-15);
    near("holm: second (x 3)", h[0], 0.03, 1e-15);
    near("holm: third (x 2)", h[2], 0.06, 1e-15);
    near("holm: largest, raised to the third's", h[1], 0.06, 1e-15);
    /* 0.2 x 3 = 0.6; 0.7 x 2 = 1.4, capped at 1; 0.9 raised to 1 */
    holm_adjust((const double[]){0.7, 0.2, 0.9}, 3, h);
    expect("holm: capped at 1", h[0] == 1.0 && fabs(h[1] - 0.6) < 1e-15 && h[2] == 1.0);
    /* a comparison without a test (NaN) counts as p = 1: 0.01 x 3, 0.02 x 2, 1 */
    holm_adjust((const double[]){0.01, NAN, 0.02}, 3, h);
    expect("holm: NaN counts as 1, in the family",
           fabs(h[0] - 0.03) < 1e-15 && h[1] == 1.0 && fabs(h[2] - 0.04) < 1e-15);
    /* reproduction.md's four rows of the main claim: all below 0.05 after Holm */
    double main4[4] = {0.004, 0.010, 0.0013, 0.031};
    holm_adjust(main4, 4, main4); /* in place */
    expect("holm in place: 0.012, 0.02, 0.0052, 0.031",
           fabs(main4[0] - 0.012) < 1e-15 && fabs(main4[1] - 0.02) < 1e-15 &&
               fabs(main4[2] - 0.0052) < 1e-15 && fabs(main4[3] - 0.031) < 1e-15);
    h[0] = h[1] = 0.5;
    holm_adjust((const double[]){0.02, 0.02}, 2, h);
    expect("holm: ties, both 0.04", fabs(h[0] - 0.04) < 1e-15 && fabs(h[1] - 0.04) < 1e-15);
    expect("holm: one p is itself", holm_adjust((const double[]){0.3}, 1, h) == 0 && h[0] == 0.3);
    expect("holm: m = 0 is fine, m past STATS_MAX_N refused",
           holm_adjust(h, 0, h) == 0 && holm_adjust(h, STATS_MAX_N + 1, h) == -1);

    /* the verdict's words in a family: one comparison (no correction), one that holds after
     * Holm, one whose interval excludes 0 but whose Holm p does not: a lead */
    verdict_line(&q, 0.95, paired_p(&q), 1, "siamese", "pre", line, sizeof line);
    printf("  %s\n", line);
    expect("one comparison: p, no Holm",
           strstr(line, "6 paired seeds, p = 0.00593)") != NULL && !strstr(line, "Holm"));
    verdict_line(&q, 0.95, 0.0178, 3, "siamese", "pre", line, sizeof line);
    printf("  %s\n", line);
    expect("3 comparisons, Holm p 0.0178: holds, both p",
           strstr(line, "lower than pre by 0.3500 (95% CI") != NULL &&
               strstr(line, "p = 0.00593, Holm p = 0.0178)") != NULL && !strstr(line, "lead"));
    verdict_line(&q, 0.95, 0.093, 3, "siamese", "pre", line, sizeof line);
    printf("  %s\n", line);
    expect("3 comparisons, Holm p 0.093: a lead, said before the interval",
           strstr(line,
                  "lower than pre by 0.3500, but only uncorrected (Holm over 3 comparisons): a "
                  "lead, not a finding (95% CI") != NULL &&
               strstr(line, "p = 0.00593, Holm p = 0.093)") != NULL);
    verdict_line(&p, 0.95, 0.05, 2, "siamese", "pre", line, sizeof line);
    printf("  %s\n", line);
    expect("higher, Holm p exactly 0.05: a lead too",
           strstr(line, "higher than pre by 0.3500, but only uncorrected") != NULL);
    verdict_line(&r, 0.95, 1.0, 2, "siamese", "pre", line, sizeof line);
    printf("  %s\n", line);
    expect("no difference in a family: both p, no lead",
           strstr(line, "no difference detectable") != NULL && strstr(line, "Holm p = 1)") &&
               !strstr(line, "lead"));

    /* diverged runs (NaN, inf) leave their pair out */
    const double f[4] = {1.0, NAN, 1.0, 1.0};
    const double g[4] = {0.9, 0.8, INFINITY, 0.95};
    paired t = paired_t(f, g, 4, 0.95);
    expect("diverged pairs left out (2 of 4 used)", t.n == 2);
    paired u = paired_t(f, g, 2, 0.95);
    expect("fewer than 2 pairs: too few", verdict_of(&u) == VERDICT_TOO_FEW && isnan(u.lo));
    expect("one pair: its sd NaN, not 0", u.n == 1 && isnan(u.sd) && isfinite(u.mean));
    paired none = paired_t(f + 1, g + 1, 2, 0.95); /* NaN and inf: no pair */
    expect("no pair: mean and sd NaN, not 0", none.n == 0 && isnan(none.mean) && isnan(none.sd));

    /* Reading curves. Two crafted held-out curves over a budget of 100 steps, evaluated every
     * 10: "fast" falls to 2.0 by step 40 and stays; "slow" falls linearly from 3.0 at step 10
     * to 2.0 at step 100. Both end at 2.0; fast is lower everywhere before the end. */
    int steps[11];
    double fast[11], slow[11];
    for (int k = 0; k <= 10; k++) {
        steps[k] = 10 * k;
        fast[k] = k == 0 ? 5.5 : k < 4 ? 3.0 - (k - 1) / 3.0 : 2.0;
        slow[k] = k == 0 ? 5.5 : 3.0 - (k - 1) / 9.0;
    }
    near("curve_at an evaluation (step 40, fast)", curve_at(steps, fast, 11, 40), 2.0, 1e-15);
    near("curve_at between (step 25, slow)", curve_at(steps, slow, 11, 25), 3.0 - 1.5 / 9.0, 1e-12);
    near("curve_at the end (step 100, slow)", curve_at(steps, slow, 11, 100), 2.0, 1e-15);
    expect("curve_at past the end is NAN", isnan(curve_at(steps, slow, 11, 101)));
    /* the mean over steps 10..100 (step 0 left out): slow is linear, so its mean is the
     * mid-point 2.5; fast: (3 + 2) / 2 over 10..40 (30 steps) and 2 over 40..100 (60 steps) */
    near("curve_mean of a straight line", curve_mean(steps, slow, 11, 100), 2.5, 1e-12);
    near("curve_mean of the fast curve", curve_mean(steps, fast, 11, 100),
         (2.5 * 30 + 2.0 * 60) / 90.0, 1e-12);
    expect("curve_mean needs the evaluation at the budget's end",
           isnan(curve_mean(steps, slow, 11, 110)) && isnan(curve_mean(steps, slow, 10, 100)));
    expect("curve_mean needs step 0", isnan(curve_mean(steps + 1, slow + 1, 10, 100)));
    /* six seeds: fast arms that end where the slow ones do (plus noise that cancels in the
     * mean): the final difference is not told apart, the mean over the run is lower */
    double end_slow[6], end_fast[6], mean_slow[6], mean_fast[6];
    for (int sd = 0; sd < 6; sd++) {
        double noise = 0.01 * (sd % 3 - 1), shift[11], fs[11], ss[11];
        for (int k = 0; k <= 10; k++) {
            shift[k] = 0.05 * sd; /* seeds differ by a constant: paired, it cancels */
            fs[k] = fast[k] + shift[k] + (k == 10 ? noise : 0.0);
            ss[k] = slow[k] + shift[k];
        }
        end_slow[sd] = ss[10], end_fast[sd] = fs[10];
        mean_slow[sd] = curve_mean(steps, ss, 11, 100);
        mean_fast[sd] = curve_mean(steps, fs, 11, 100);
    }
    paired pe = paired_t(end_slow, end_fast, 6, 0.95), pm = paired_t(mean_slow, mean_fast, 6, 0.95);
    expect("crafted: no difference at the end", verdict_of(&pe) == VERDICT_NONE);
    expect("crafted: lower along the run", verdict_of(&pm) == VERDICT_LOWER);
    near("crafted: mean-over-run difference", pm.mean, (2.5 * 30 + 2.0 * 60) / 90.0 - 2.5, 2e-3);

    /* sn-gpt-train's time left counts the evaluations left (0.6.18 counted the steps only and
     * said 0s where evaluations took the time): after step 2 of 8, every 2 steps: 4, 6, 8 */
    near("eta: evaluations every 2 of 8, after 2", eta_left(2, 8, 2, 0.0, 1.0), 3.0, 0.0);
    near("eta: ... of 9, the last one too", eta_left(2, 9, 2, 0.0, 1.0), 4.0, 0.0);
    near("eta: steps and evaluations", eta_left(3, 8, 2, 0.5, 2.0), 2.5 + 6.0, 0.0);
    near("eta: no eval interval, the last only", eta_left(0, 8, 0, 0.5, 1.0), 5.0, 0.0);
    near("eta: at the end", eta_left(8, 8, 2, 1.0, 1.0), 0.0, 0.0);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
