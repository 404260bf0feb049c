/* numarg: how the example programs read a number from a command-line flag. Every numeric flag
 * of sn-gpt-train and sn-gpt-compare goes through these, with limits chosen so that nothing
 * computed from the value downstream can overflow (see each program's table of limits).
 *
 * A value is accepted only when the whole text is one number of the expected kind (no
 * trailing characters, no empty text, no leading sign on an unsigned value), the conversion
 * did not overflow or underflow (ERANGE), it is not a NaN or an infinity, and it lies within
 * [lo, hi] (a bound marked open excludes itself). A float is checked again after the rounding
 * to float, so that e.g. 1e-50 for a value that must be > 0 is refused instead of becoming 0.
 * On failure nothing is written to *out and a message naming the flag, the text and the
 * accepted range is printed on stderr. */
#ifndef SN_NUMARG_H
#define SN_NUMARG_H

#include <stdint.h>

/* bits of `open`: which bounds exclude themselves */
#define NA_OPEN_LO 1u
#define NA_OPEN_HI 2u

/* A decimal integer in [lo, hi]. 0, or -1 with a message. */
int na_int(const char *flag, const char *text, long long lo, long long hi, int *out);
/* A decimal unsigned integer in [lo, hi] (no sign). 0, or -1 with a message. */
int na_u64(const char *flag, const char *text, uint64_t lo, uint64_t hi, uint64_t *out);
/* A finite real number in the range (see `open`). 0, or -1 with a message. */
int na_double(const char *flag, const char *text, double lo, double hi, unsigned open, double *out);
/* na_double, then rounded to float and checked against the range once more. */
int na_float(const char *flag, const char *text, double lo, double hi, unsigned open, float *out);

#endif
