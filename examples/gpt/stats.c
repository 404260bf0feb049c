/* Summaries, Student's t and the paired comparison behind sn-gpt-compare's verdict. */
#include <math.h>
#include <stdio.h>

#include "stats.h"

summary summarize(const double *x, int n) {
    summary s = {n, 0.0, 0.0, 0.0, 0.0};
    if (n < 1) return s;
    s.min = s.max = x[0];
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        sum += x[i];
        s.min = x[i] < s.min ? x[i] : s.min;
        s.max = x[i] > s.max ? x[i] : s.max;
    }
    s.mean = sum / n;
    if (n > 1) {
        double ss = 0.0;
        for (int i = 0; i < n; i++) ss += (x[i] - s.mean) * (x[i] - s.mean);
        s.sd = sqrt(ss / (n - 1));
    }
    return s;
}

/* The continued fraction of the regularised incomplete beta function I_x(a, b), evaluated
 * by the modified Lentz method; converges fast for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x) {
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    d = fabs(d) < tiny ? tiny : d;
    d = 1.0 / d;
    double f = d;
    for (int m = 1; m <= 300; m++) {
        for (int half = 0; half < 2; half++) {
            /* the even term m(b-m)x / ((a+2m-1)(a+2m)), then the odd one */
            double num = half == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                   : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
            d = 1.0 + num * d;
            d = fabs(d) < tiny ? tiny : d;
            c = 1.0 + num / c;
            c = fabs(c) < tiny ? tiny : c;
            d = 1.0 / d;
            f *= d * c;
            if (half == 1 && fabs(d * c - 1.0) < 1e-15) return f;
        }
    }
    return f;
}

/* I_x(a, b) */
static double beta_reg(double a, double b, double x) {
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_cf(a, b, x) / a;
    return 1.0 - front * beta_cf(b, a, 1.0 - x) / b;
}

double t_cdf(double t, int df) {
    double v = (double)df;
    /* P(|T| > |t|) = I_{v / (v + t^2)}(v / 2, 1 / 2) */
    double tail = 0.5 * beta_reg(0.5 * v, 0.5, v / (v + t * t));
    return t >= 0.0 ? 1.0 - tail : tail;
}

double t_quantile(double p, int df) {
    if (p == 0.5) return 0.0;
    if (p < 0.5) return -t_quantile(1.0 - p, df);
    double lo = 0.0, hi = 1.0;
    while (t_cdf(hi, df) < p && hi < 1e12) hi *= 2.0;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (t_cdf(mid, df) < p) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

paired paired_t(const double *a, const double *b, int n, double level) {
    double d[STATS_MAX_N] = {0};
    int m = 0;
    for (int i = 0; i < n && i < STATS_MAX_N; i++)
        if (isfinite(a[i]) && isfinite(b[i])) d[m++] = b[i] - a[i];
    summary s = summarize(d, m);
    paired p = {m, m > 0 ? s.mean : NAN, m > 1 ? s.sd : NAN, NAN, NAN};
    if (m >= 2) {
        double half = t_quantile(0.5 + 0.5 * level, m - 1) * s.sd / sqrt((double)m);
        p.lo = s.mean - half;
        p.hi = s.mean + half;
    }
    return p;
}

verdict verdict_of(const paired *p) {
    if (p->n < 2) return VERDICT_TOO_FEW;
    if (p->hi < 0.0) return VERDICT_LOWER;
    if (p->lo > 0.0) return VERDICT_HIGHER;
    return VERDICT_NONE;
}

double paired_p(const paired *p) {
    if (p->n < 2 || !isfinite(p->mean) || !isfinite(p->sd)) return NAN;
    if (p->sd == 0.0) return p->mean == 0.0 ? 1.0 : 0.0;
    double t = p->mean / (p->sd / sqrt((double)p->n));
    /* t_cdf of a negative t is the lower tail itself (no 1 - x): small p keep their digits */
    double two = 2.0 * t_cdf(-fabs(t), p->n - 1);
    return two < 1.0 ? two : 1.0;
}

int holm_adjust(const double *p, int m, double *adj) {
    if (m < 0 || m > STATS_MAX_N) return -1;
    double v[STATS_MAX_N];
    int rank[STATS_MAX_N]; /* rank[r]: the index of the r-th smallest p */
    for (int i = 0; i < m; i++) {
        v[i] = isnan(p[i]) ? 1.0 : p[i];
        /* insertion sort, stable: equal p keep their order */
        int r = i;
        while (r > 0 && v[rank[r - 1]] > v[i]) {
            rank[r] = rank[r - 1];
            r--;
        }
        rank[r] = i;
    }
    double run = 0.0; /* the running maximum keeps the adjusted p in the order of the p */
    for (int r = 0; r < m; r++) {
        double x = (double)(m - r) * v[rank[r]];
        x = x < 1.0 ? x : 1.0;
        run = x > run ? x : run;
        adj[rank[r]] = run;
    }
    return 0;
}

/* "p = 0.00404", or "p < 0.0001" below that (the digits of a tiny p say nothing more) */
static void p_is(const char *name, double p, char *buf, size_t size) {
    if (p < 1e-4) snprintf(buf, size, "%s < 0.0001", name);
    else snprintf(buf, size, "%s = %.3g", name, p);
}

/* ", p = 0.00404" and, in a family of more than one, ", Holm p = 0.0121" */
static void p_text(double p, double p_holm, int m, char *buf, size_t size) {
    char a[32], b[40];
    p_is("p", p, a, sizeof a);
    p_is("Holm p", p_holm, b, sizeof b);
    snprintf(buf, size, ", %s%s%s", a, m > 1 ? ", " : "", m > 1 ? b : "");
}

void verdict_line(const paired *p, double level, double p_holm, int m, const char *b, const char *a,
                  char *buf, size_t size) {
    int pct = (int)lround(100.0 * level);
    double pv = paired_p(p);
    char ps[128], only[160] = "";
    p_text(pv, p_holm, m, ps, sizeof ps);
    /* an interval that excludes 0 on its own, in a family where the correction undoes it
     * (alpha from the rounded percentage: 1.0 - 0.95 is a little above 0.05) */
    if (m > 1 && !(p_holm < (100 - pct) / 100.0))
        snprintf(only, sizeof only,
                 ", but only uncorrected (Holm over %d comparisons): a lead, not a finding", m);
    switch (verdict_of(p)) {
    case VERDICT_LOWER:
        snprintf(buf, size,
                 "%s: held-out loss lower than %s by %.4f%s (%d%% CI %.4f..%.4f, %d "
                 "paired seeds%s)",
                 b, a, -p->mean, only, pct, -p->hi, -p->lo, p->n, ps);
        break;
    case VERDICT_HIGHER:
        snprintf(buf, size,
                 "%s: held-out loss higher than %s by %.4f%s (%d%% CI %.4f..%.4f, %d "
                 "paired seeds%s)",
                 b, a, p->mean, only, pct, p->lo, p->hi, p->n, ps);
        break;
    case VERDICT_NONE:
        snprintf(buf, size,
                 "%s vs %s: no difference detectable at this budget (difference "
                 "%+.4f, %d%% CI %+.4f..%+.4f, %d paired seeds%s)",
                 b, a, p->mean, pct, p->lo, p->hi, p->n, ps);
        break;
    case VERDICT_TOO_FEW:
        snprintf(buf, size,
                 "%s vs %s: too few seeds finished on both sides (%d) for an "
                 "interval",
                 b, a, p->n);
        break;
    }
}

double curve_at(const int *step, const double *val, int n, double at) {
    if (n < 1 || at < step[0] || at > step[n - 1]) return NAN;
    int k = 0;
    while (k + 1 < n && step[k + 1] <= at) k++;
    if (step[k] == at || k + 1 == n) return step[k] == at ? val[k] : NAN;
    double w = (at - step[k]) / (double)(step[k + 1] - step[k]);
    return (1.0 - w) * val[k] + w * val[k + 1];
}

double curve_mean(const int *step, const double *val, int n, int total) {
    int k0 = 0;
    while (k0 < n && step[k0] <= 0) k0++;
    if (k0 == 0 || k0 + 1 >= n || step[n - 1] != total) return NAN;
    double area = 0.0;
    for (int k = k0; k + 1 < n; k++) area += 0.5 * (val[k] + val[k + 1]) * (step[k + 1] - step[k]);
    return isfinite(area) ? area / (total - step[k0]) : NAN;
}
