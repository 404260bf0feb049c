/* The default corpus of sn-gpt-train: real English text that is the same bytes on every
 * machine, read from Debian's `fortunes` package (version 1:1.99.1-7.3, Debian 12; installed by
 * tools/deps.sh) and checked against a checksum at every start. Nothing is committed to the
 * repository or downloaded at run time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"

/* The package's cookie files (not its .dat indexes or .u8 links), in this order: their
 * concatenation is FORTUNES_BYTES bytes with FNV-1a 64 FORTUNES_FNV1A64. */
static const char *const fortune_files[] = {
    "art",          "ascii-art", "computers",   "cookie",    "debian",        "definitions",
    "disclaimer",   "drugs",     "education",   "ethnic",    "food",          "goedel",
    "humorists",    "kids",      "knghtbrd",    "law",       "linux",         "linuxcookie",
    "love",         "magic",     "medicine",    "men-women", "miscellaneous", "news",
    "paradoxum",    "people",    "perl",        "pets",      "platitudes",    "politics",
    "pratchett",    "science",   "songs-poems", "sports",    "startrek",      "tao",
    "translate-me", "wisdom",    "work",        "zippy"};
#define N_FORTUNE_FILES (sizeof fortune_files / sizeof fortune_files[0])

static void missing_package(const char *path, const char *why) {
    fprintf(stderr,
            "fortunes: %s: %s\n"
            "fortunes: the default corpus is the text of the Debian package '%s' (version %s); "
            "install it with `sh tools/deps.sh` (as root: apt-get install %s), or train on "
            "--task tales, --task addition or --data FILE\n",
            path, why, FORTUNES_PACKAGE, FORTUNES_VERSION, FORTUNES_PACKAGE);
}

/* Reads the whole file into a fresh buffer; its length in *n. NULL (and says why) on error. */
static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        missing_package(path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *nb = cap <= FORTUNES_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!nb) free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        missing_package(path, err ? "read error" : "larger than the whole corpus");
        return NULL;
    }
    *n = len;
    return buf;
}

int data_fortunes(dataset *d, const char *dir, int T, double val_frac, int n_val) {
    memset(d, 0, sizeof *d);
    d->kind = DATA_FORTUNES;
    d->T = T;
    if (!dir) dir = FORTUNES_DIR;
    unsigned char *all = malloc(FORTUNES_BYTES);
    unsigned char *tails = malloc(FORTUNES_BYTES);
    if (!all || !tails) {
        free(all);
        free(tails);
        fprintf(stderr, "fortunes: out of memory\n");
        return -1;
    }
    /* Every file's head goes to training and its last val_frac to the held-out part, so that
     * both sample every topic: all = the heads, then the tails. */
    size_t n = 0, n_head = 0, n_tail = 0;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 over the files as the package has them */
    for (size_t i = 0; i < N_FORTUNE_FILES; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, fortune_files[i]);
        size_t len = 0;
        unsigned char *b = read_all(path, &len);
        if (!b) {
            free(all);
            free(tails);
            return -1;
        }
        for (size_t k = 0; k < len; k++) h = (h ^ b[k]) * 0x100000001b3ull;
        n += len;
        if (n > FORTUNES_BYTES) {
            free(b);
            break;
        }
        size_t hold = (size_t)((double)len * val_frac);
        memcpy(all + n_head, b, len - hold);
        memcpy(tails + n_tail, b + len - hold, hold);
        n_head += len - hold;
        n_tail += hold;
        free(b);
    }
    if (n != FORTUNES_BYTES || h != FORTUNES_FNV1A64) {
        fprintf(stderr,
                "fortunes: the files in %s are %s%zu bytes with checksum %016llx; the corpus is "
                "%zu bytes with checksum %016llx: they are not the Debian package '%s' version "
                "%s (check `dpkg -s %s`)\n",
                dir, n > FORTUNES_BYTES ? "more than " : "", n, (unsigned long long)h,
                (size_t)FORTUNES_BYTES, (unsigned long long)FORTUNES_FNV1A64, FORTUNES_PACKAGE,
                FORTUNES_VERSION, FORTUNES_PACKAGE);
        free(all);
        free(tails);
        return -1;
    }
    memcpy(all + n_head, tails, n_tail);
    free(tails);
    d->text = all;
    d->n_text = n;
    return text_split(d, "fortunes", n_head, n_val);
}
