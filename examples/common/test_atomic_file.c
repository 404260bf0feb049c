/* test_atomic_file DIR: atomic_file.h against what it promises. A target is replaced only by a
 * commit; an aborted or failed write (SN_AF_FAIL_BEFORE_RENAME=1) leaves it and the directory
 * as they were; links are written through; same-file detection sees through hard and symbolic
 * links and ./ spellings. */
#define _XOPEN_SOURCE 700
#include "atomic_file.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static char dir[PATH_MAX / 2];
static char pbuf[4][PATH_MAX];
static const char *p(int slot, const char *name) {
    snprintf(pbuf[slot], PATH_MAX, "%s/%s", dir, name);
    return pbuf[slot];
}

static int put(const char *path, const char *text) {
    af_file a;
    if (af_open(&a, path) != 0) return -1;
    fputs(text, a.f);
    return af_commit(&a);
}

static int holds(const char *path, const char *text) {
    char buf[256] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(text) && memcmp(buf, text, n) == 0;
}

static int entries(void) { /* files in DIR, . and .. not counted */
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    snprintf(dir, sizeof dir, "%s", argv[1]);
    mkdir(dir, 0777);
    DIR *d = opendir(dir); /* start empty: a failed earlier run may have left files */
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(p(0, e->d_name));
    if (d) closedir(d);
    CHECK(entries() == 0);

    /* a new file, then a replacement */
    CHECK(put(p(0, "a"), "one") == 0 && holds(p(0, "a"), "one"));
    CHECK(put(p(0, "a"), "two") == 0 && holds(p(0, "a"), "two"));
    CHECK(entries() == 1);

    /* until the commit the target is unchanged; an abort leaves it so and no temporary */
    af_file w;
    CHECK(af_open(&w, p(0, "a")) == 0);
    fputs("three", w.f);
    fflush(w.f);
    CHECK(holds(p(0, "a"), "two"));
    af_abort(&w);
    CHECK(holds(p(0, "a"), "two") && entries() == 1);

    /* an injected failure just before the rename: the same */
    setenv("SN_AF_FAIL_BEFORE_RENAME", "1", 1);
    CHECK(put(p(0, "a"), "four") == -1);
    unsetenv("SN_AF_FAIL_BEFORE_RENAME");
    CHECK(holds(p(0, "a"), "two") && entries() == 1);

    /* the permissions of the file replaced are kept */
    chmod(p(0, "a"), 0640);
    CHECK(put(p(0, "a"), "five") == 0);
    struct stat st;
    CHECK(stat(p(0, "a"), &st) == 0 && (st.st_mode & 07777) == 0640);

    /* a missing directory fails at open, creating nothing */
    CHECK(af_open(&w, p(0, "missing/x")) == -1);
    CHECK(af_check_writable(p(0, "missing/x")) == -1);
    CHECK(af_check_writable(p(0, "a")) == 0 && entries() == 1);

    /* same-file detection */
    CHECK(link(p(0, "a"), p(1, "hard")) == 0);
    CHECK(symlink("a", p(0, "sym")) == 0);
    char dot[PATH_MAX];
    snprintf(dot, sizeof dot, "%s/./a", dir);
    CHECK(af_same_file(p(0, "a"), p(1, "hard")) == 1);
    CHECK(af_same_file(p(0, "a"), p(1, "sym")) == 1);
    CHECK(af_same_file(p(0, "a"), dot) == 1);
    CHECK(af_same_file(p(0, "a"), p(1, "nothing")) == 0);
    /* two paths to a file not written yet: the same when they name one directory entry */
    char dotnew[PATH_MAX];
    snprintf(dotnew, sizeof dotnew, "%s/./new", dir);
    CHECK(af_same_file(p(0, "new"), p(1, "new")) == 1);
    CHECK(af_same_file(p(0, "new"), dotnew) == 1);
    CHECK(symlink("new", p(0, "to-new")) == 0);
    CHECK(af_same_file(p(0, "to-new"), p(1, "new")) == 1);
    CHECK(af_same_file(p(0, "new"), p(1, "new2")) == 0);
    CHECK(af_same_file(p(0, "missing/x"), p(1, "missing/x")) == 0);
    CHECK(unlink(p(0, "to-new")) == 0);
    CHECK(put(p(0, "target"), "t") == 0);
    CHECK(af_same_file(p(0, "a"), p(1, "target")) == 0);

    /* a symbolic link is written through: the link stays, its target changes */
    CHECK(put(p(0, "sym"), "six") == 0);
    CHECK(lstat(p(0, "sym"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(holds(p(0, "a"), "six"));
    CHECK(symlink("target", p(0, "dangling")) == 0 && unlink(p(1, "target")) == 0);
    CHECK(put(p(0, "dangling"), "seven") == 0 && holds(p(0, "target"), "seven"));
    CHECK(lstat(p(0, "dangling"), &st) == 0 && S_ISLNK(st.st_mode));

    /* a directory is not replaced */
    CHECK(af_open(&w, dir) == -1);

    if (failures) fprintf(stderr, "test_atomic_file: %d failures\n", failures);
    printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
    return failures != 0;
}
