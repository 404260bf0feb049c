/* Test: the generated "tales" corpus is the reference bytes (its FNV-1a 64 checksum, also
 * computed independently when the constant was set), the loader accepts it and splits it, and
 * the text has the structure the generator promises. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"

int main(void) {
    int fail = 0;
    unsigned char *b = malloc(TALES_BYTES + 1);
    if (!b) return 1;
    tales_generate(b, TALES_BYTES);
    b[TALES_BYTES] = '\0';
    uint64_t h = fnv1a64(b, TALES_BYTES);
    printf("tales: %zu bytes, fnv1a64 %016llx (reference %016llx)\n", TALES_BYTES,
           (unsigned long long)h, (unsigned long long)TALES_FNV1A64);
    fail |= h != TALES_FNV1A64;
    /* FNV-1a 64 itself, on the published test vector "a" */
    fail |= fnv1a64((const unsigned char *)"a", 1) != 0xAF63DC4C8601EC8Cull;
    fail |= memcmp(b, "Once upon a time, there was ", 28) != 0;
    size_t stories = 0, bytes = 0;
    /* one pass over the bytes (strstr from each match on: under AddressSanitizer's strict string
     * checks each call measures the whole rest of the text, 26 s instead of 0.1) */
    static const char story_end[] = "The end.\n\n";
    const size_t end_len = sizeof story_end - 1;
    for (size_t i = 0; i + end_len <= TALES_BYTES; i++)
        stories += b[i] == 'T' && !memcmp(b + i, story_end, end_len);
    for (size_t i = 0; i < TALES_BYTES; i++) bytes += b[i] >= 32 || b[i] == '\n';
    printf("stories %zu, printable or newline bytes %zu of %zu\n", stories, bytes, TALES_BYTES);
    fail |= stories < 10000 || bytes != TALES_BYTES;
    free(b);

    dataset d;
    if (data_tales(&d, 64, 0.1, 256) != 0) return 1;
    printf("split: %zu training bytes, %d held-out windows\n", d.n_train, d.n_val);
    fail |= d.n_val != 256 || d.n_train != TALES_BYTES - (size_t)(TALES_BYTES * 0.1);
    data_free(&d);
    printf("%s\n", fail ? "FAIL" : "ok");
    return fail;
}
