/* The statistics of sn-gpt-compare: summaries of per-seed results, Student's t, and the paired
 * comparison of two arms that gives the verdict. Plain functions of arrays, tested on known
 * values by test_stats.c. */
#ifndef SN_GPT_STATS_H
#define SN_GPT_STATS_H

#include <stddef.h>

typedef struct summary {
    int n;           /* values */
    double mean, sd; /* sd: the sample standard deviation (n - 1); 0 when n < 2 */
    double min, max;
} summary;

summary summarize(const double *x, int n);

/* Student's t distribution with df degrees of freedom: P(T <= t), and its inverse for
 * 0 < p < 1 (to about 1e-8). df >= 1. */
double t_cdf(double t, int df);
double t_quantile(double p, int df);

/* The paired comparison of arm b against arm a over n seeds: d_i = b_i - a_i, their mean and
 * sd, and the two-sided `level` (e.g. 0.95) t interval of the mean difference. Pairs with a
 * non-finite value on either side (a diverged run) are left out; `n` counts those used. With
 * no pair the mean is NaN, with fewer than 2 the sd, lo and hi are NaN. */
#define STATS_MAX_N 1024 /* paired_t reads at most this many pairs */

typedef struct paired {
    int n;
    double mean, sd, lo, hi;
} paired;

paired paired_t(const double *a, const double *b, int n, double level);

typedef enum verdict {
    VERDICT_LOWER,  /* the whole interval below 0: b's loss is lower */
    VERDICT_HIGHER, /* the whole interval above 0 */
    VERDICT_NONE,   /* the interval holds 0: no difference detectable at this budget */
    VERDICT_TOO_FEW /* fewer than 2 pairs: no interval */
} verdict;

verdict verdict_of(const paired *p);

/* The two-sided p-value of a paired comparison: P(|T| >= |t|) for t = mean / (sd / sqrt(n)) and
 * T Student's t with n - 1 degrees of freedom. The interval of paired_t at level L excludes 0
 * exactly when p < 1 - L. NaN with fewer than 2 pairs; when every difference is the same (sd
 * 0), 0 if that difference is not 0 and 1 if it is. */
double paired_p(const paired *p);

/* Holm's step-down adjustment of the m p-values p[] of one family of comparisons, into adj[]
 * (which may be p itself): with the p-values ranked from the smallest, p_(1) <= ... <= p_(m),
 * adj_(i) = max over j <= i of min(1, (m - j + 1) p_(j)). A comparison is significant at alpha
 * over the whole family when its adjusted p is below alpha (the family-wise error rate is at
 * most alpha whatever the dependence between the comparisons). A NaN p (a comparison without a
 * test, e.g. too few pairs) counts as 1: it stays in the family and is never significant.
 * Returns 0, or -1 when m < 0 or m > STATS_MAX_N (adj untouched). */
int holm_adjust(const double *p, int m, double *adj);

/* The one-line verdict, e.g. "siamese: held-out loss lower than pre by 0.0386 (95% CI
 * 0.0321..0.0451, 6 paired seeds, p = 0.00012)". level as given to paired_t. m: the number of
 * comparisons in the family the verdict is one of, p_holm its Holm-adjusted p (holm_adjust);
 * with m > 1 the line gives "Holm p" too, and a verdict whose interval excludes 0 but whose
 * Holm p is not below 1 - level says that it holds only uncorrected ("lower than pre by
 * 0.0386, but only uncorrected (Holm over 3 comparisons): a lead, not a finding (95% CI ...,
 * p = 0.031, Holm p = 0.093)"). */
void verdict_line(const paired *p, double level, double p_holm, int m, const char *b, const char *a,
                  char *buf, size_t size);

/* Reading a held-out loss curve: n evaluations, val[k] at step[k] (steps increasing).
 * curve_at: the loss at step `at`, linear between the two evaluations around it (exact at an
 * evaluation); NAN when `at` is outside step[0]..step[n-1] or a value it needs is not finite.
 * curve_mean: the mean loss over the run: the trapezoid area under the curve from the first
 * evaluation after step 0 to the evaluation at `total`, divided by that span (the loss at
 * initialisation is left out: it says nothing about learning and varies most). It needs an
 * evaluation at step 0, at least two after it, the last at total (NAN otherwise, or when a
 * value is not finite). Two arms that end at the same loss have different means when one got
 * there sooner: the mean separates "learns faster" from "ends lower". */
double curve_at(const int *step, const double *val, int n, double at);
double curve_mean(const int *step, const double *val, int n, int total);

#endif
