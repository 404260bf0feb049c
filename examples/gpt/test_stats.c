/* Test: sn-gpt-compare's statistics on known inputs. Student's t quantiles against published
 * tables, the paired interval against a hand computation, and the verdict on crafted per-seed
 * results: clearly lower, clearly higher, overlapping, and diverged seeds left out; reading a
 * loss curve (the loss at a step, the mean over the run) on crafted curves with known answers,
 * and the mean telling "learns faster" from "ends lower". Also sn-gpt-train's time left
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
    verdict_line(&q, 0.95, "siamese", "pre", line, sizeof line);
    printf("  %s\n", line);
    expect("verdict line says lower by 0.3500",
           strstr(line, "lower than pre by 0.3500 (95% CI") != NULL);

    /* a large seed-to-seed spread around a small mean difference: no verdict */
    const double c[6] = {1.0, 2.0, 1.5, 0.7, 1.2, 1.9};
    const double e[6] = {1.1, 1.8, 1.6, 0.6, 1.3, 1.8};
    paired r = paired_t(c, e, 6, 0.95);
    expect("verdict: no difference", verdict_of(&r) == VERDICT_NONE && r.lo < 0 && r.hi > 0);
    verdict_line(&r, 0.95, "siamese", "pre", line, sizeof line);
    printf("  %s\n", line);
    expect("verdict line says no difference", strstr(line, "no difference detectable") != NULL);

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
