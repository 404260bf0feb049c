/* The arguments the bench tools share: a size list and an element-type list. Each parser takes
 * the whole argument or nothing, so that a tool prints its usage instead of running no case, or
 * half of them, on a typo. */
#ifndef SN_BENCH_ARGS_H
#define SN_BENCH_ARGS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* "RxD,RxD,...": at most max sizes, each R and D in 1 .. 2^20 with R * D <= 2^26 (256 MiB of
 * floats per matrix); the count in *n. 0 on anything else. */
static inline int bench_sizes(const char *s, int64_t *R, int64_t *D, int max, int *n) {
    *n = 0;
    while (*s) {
        char *e;
        if (*s < '0' || *s > '9') return 0; /* strtoll would take a sign or spaces */
        const long long r = strtoll(s, &e, 10);
        if (*e != 'x' || e[1] < '0' || e[1] > '9') return 0;
        s = e + 1;
        const long long d = strtoll(s, &e, 10);
        if (*e && *e != ',') return 0;
        if (r < 1 || d < 1 || r > (1 << 20) || d > (1 << 20) || r * d > (1ll << 26) || *n == max)
            return 0;
        R[*n] = r, D[*n] = d, (*n)++;
        s = *e ? e + 1 : e;
        if (*e && !*s) return 0; /* a trailing comma */
    }
    return *n > 0;
}

/* "f32", "bf16" or both, comma-separated: bit 0 f32, bit 1 bf16; 0 on anything else */
static inline int bench_dtypes(const char *s) {
    int types = 0;
    while (*s) {
        const size_t k = strcspn(s, ",");
        if (k == 3 && !strncmp(s, "f32", 3)) types |= 1;
        else if (k == 4 && !strncmp(s, "bf16", 4)) types |= 2;
        else return 0;
        s += k;
        if (*s && !*++s) return 0; /* a trailing comma */
    }
    return types;
}

#endif
