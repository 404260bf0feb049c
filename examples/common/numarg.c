/* numarg.h: range-checked numbers from command-line text. */
#include "numarg.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The text must be non-empty and start with a digit, a sign or a point (strto* would skip
 * leading space). */
static int starts_well(const char *text, int sign_ok) {
    unsigned char c = (unsigned char)text[0];
    return c != '\0' && (isdigit(c) || c == '.' || (sign_ok && (c == '-' || c == '+')));
}

int na_int(const char *flag, const char *text, long long lo, long long hi, int *out) {
    if (lo < INT_MIN) lo = INT_MIN;
    if (hi > INT_MAX) hi = INT_MAX;
    char *end = NULL;
    errno = 0;
    long long v = starts_well(text, 1) ? strtoll(text, &end, 10) : 0;
    if (!end || end == text || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "%s %s: expected an integer in [%lld, %lld]\n", flag, text, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int na_u64(const char *flag, const char *text, uint64_t lo, uint64_t hi, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = starts_well(text, 0) ? strtoull(text, &end, 10) : 0;
    if (!end || end == text || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "%s %s: expected an integer in [%llu, %llu]\n", flag, text,
                (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

static int in_range(double v, double lo, double hi, unsigned open) {
    if (!isfinite(v)) return 0;
    if ((open & NA_OPEN_LO) ? !(v > lo) : !(v >= lo)) return 0;
    if ((open & NA_OPEN_HI) ? !(v < hi) : !(v <= hi)) return 0;
    return 1;
}

static int range_error(const char *flag, const char *text, double lo, double hi, unsigned open) {
    fprintf(stderr, "%s %s: expected a number in %c%g, %g%c\n", flag, text,
            (open & NA_OPEN_LO) ? '(' : '[', lo, hi, (open & NA_OPEN_HI) ? ')' : ']');
    return -1;
}

int na_double(const char *flag, const char *text, double lo, double hi, unsigned open,
              double *out) {
    char *end = NULL;
    errno = 0;
    double v = starts_well(text, 1) ? strtod(text, &end) : NAN;
    if (!end || end == text || *end != '\0' || errno == ERANGE || !in_range(v, lo, hi, open))
        return range_error(flag, text, lo, hi, open);
    *out = v;
    return 0;
}

int na_float(const char *flag, const char *text, double lo, double hi, unsigned open, float *out) {
    double v;
    if (na_double(flag, text, lo, hi, open, &v) != 0) return -1;
    float f = (float)v;
    if (!in_range((double)f, lo, hi, open)) return range_error(flag, text, lo, hi, open);
    *out = f;
    return 0;
}
