/* test_numarg: numarg.h's parsers against a table of texts: each row is accepted with its
 * value or refused (and then leaves the output as it was). Covers what the audit found in the
 * programs' flags: NaN and infinities, overflow past the type and past the limits, trailing
 * text, empty text, a sign on an unsigned value, floats that round to 0 or past the range. */
#include "numarg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void expect(int ok, const char *what, const char *text) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s on \"%s\"\n", what, text);
        failures++;
    }
}

typedef struct {
    const char *text;
    long long lo, hi;
    int ok;
    int value;
} int_case;

typedef struct {
    const char *text;
    double lo, hi;
    unsigned open;
    int ok;
    double value;
} real_case;

int main(void) {
    static const int_case ints[] = {
        {"5", 1, 10, 1, 5},
        {"1", 1, 10, 1, 1},
        {"10", 1, 10, 1, 10},
        {"0", 1, 10, 0, 0},
        {"11", 1, 10, 0, 0},
        {"-3", -5, 5, 1, -3},
        {"+4", 0, 5, 1, 4},
        {"", 0, 5, 0, 0},
        {" 3", 0, 5, 0, 0},
        {"3 ", 0, 5, 0, 0},
        {"3x", 0, 5, 0, 0},
        {"0x10", 0, 100, 0, 0},
        {"1e3", 0, 10000, 0, 0},
        {"nan", 0, 5, 0, 0},
        {"2147483647", 0, 2147483647LL, 1, 2147483647},
        {"2147483648", 0, 4294967296LL, 0, 0}, /* past int: hi is clamped to INT_MAX */
        {"1073741824", 1, 1024, 0, 0},         /* the audit's --layers */
        {"99999999999999999999", 0, 5, 0, 0},  /* ERANGE */
        {"-99999999999999999999", -5, 5, 0, 0},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int v = -777, rc = na_int("--n", ints[i].text, ints[i].lo, ints[i].hi, &v);
        expect(ints[i].ok ? rc == 0 && v == ints[i].value : rc == -1 && v == -777, "na_int",
               ints[i].text);
    }

    uint64_t u = 7;
    expect(na_u64("--seed", "18446744073709551615", 0, UINT64_MAX, &u) == 0 && u == UINT64_MAX,
           "na_u64 max", "18446744073709551615");
    u = 7;
    expect(na_u64("--seed", "18446744073709551616", 0, UINT64_MAX, &u) == -1 && u == 7,
           "na_u64 overflow", "18446744073709551616");
    expect(na_u64("--seed", "-1", 0, UINT64_MAX, &u) == -1 && u == 7, "na_u64 sign", "-1");
    expect(na_u64("--seed", "+1", 0, UINT64_MAX, &u) == -1 && u == 7, "na_u64 sign", "+1");
    expect(na_u64("--seed", "12", 0, 10, &u) == -1 && u == 7, "na_u64 range", "12");
    expect(na_u64("--seed", "", 0, 10, &u) == -1 && u == 7, "na_u64 empty", "");

    static const real_case reals[] = {
        {"0.1", 0, 1, NA_OPEN_LO | NA_OPEN_HI, 1, 0.1},
        {"nan", 0, 1, NA_OPEN_LO | NA_OPEN_HI, 0, 0}, /* the audit's --val-frac nan */
        {"NaN", 0, 1, 0, 0, 0},
        {"-nan", -1, 1, 0, 0, 0},
        {"inf", 0, 1e300, 0, 0, 0},
        {"-inf", -1e300, 0, 0, 0, 0},
        {"infinity", 0, 1e300, 0, 0, 0},
        {"0", 0, 1, NA_OPEN_LO, 0, 0},
        {"0", 0, 1, 0, 1, 0},
        {"1", 0, 1, NA_OPEN_HI, 0, 0},
        {"1", 0, 1, 0, 1, 1},
        {"1e400", 0, 1e308, 0, 0, 0}, /* overflow */
        {"1e-400", -1, 1, 0, 0, 0},   /* underflow */
        {"0.5x", 0, 1, 0, 0, 0},
        {"", 0, 1, 0, 0, 0},
        {" 0.5", 0, 1, 0, 0, 0},
        {".5", 0, 1, 0, 1, 0.5},
        {"-0.25", -1, 1, 0, 1, -0.25},
        {"1e-3", 0, 1, NA_OPEN_LO, 1, 1e-3},
    };
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        const real_case *c = &reals[i];
        double d = -777.0;
        int rc = na_double("--x", c->text, c->lo, c->hi, c->open, &d);
        expect(c->ok ? rc == 0 && d == c->value : rc == -1 && d == -777.0, "na_double", c->text);
    }

    float f = -7.0f;
    /* finite as a double, but 0 as a float: a value that must be > 0 is refused */
    expect(na_float("--lr", "1e-50", 0, 1e6, NA_OPEN_LO, &f) == -1 && f == -7.0f,
           "na_float rounding to 0", "1e-50");
    /* within the double range, past FLT_MAX: infinite as a float */
    expect(na_float("--x", "1e39", 0, 1e300, 0, &f) == -1 && f == -7.0f, "na_float rounding to inf",
           "1e39");
    expect(na_float("--lr", "3e-4", 0, 1e6, NA_OPEN_LO, &f) == 0 && f == 3e-4f, "na_float", "3e-4");
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("numarg: every row as expected\n");
    return failures ? 1 : 0;
}
