/* atomic_file.h: write to a temporary in the target's directory, fsync, rename. */
#define _XOPEN_SOURCE 700
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file to replace: PATH itself, or where PATH leads when it is a symbolic link. */
static int resolve_target(const char *path, char out[PATH_MAX]) {
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        char buf[PATH_MAX];
        if (realpath(path, buf)) {
            memcpy(out, buf, strlen(buf) + 1);
            return 0;
        }
        /* a dangling link: write through it to the path it names */
        ssize_t n = readlink(path, buf, sizeof buf - 1);
        if (n < 0) return -1;
        buf[n] = '\0';
        const char *slash = strrchr(path, '/');
        size_t dir = (buf[0] == '/' || !slash) ? 0 : (size_t)(slash - path) + 1;
        if (dir + (size_t)n + 1 > PATH_MAX) return -1;
        memcpy(out, path, dir);
        memcpy(out + dir, buf, (size_t)n + 1);
        return 0;
    }
    size_t n = strlen(path);
    if (n == 0 || n + 1 > PATH_MAX) return -1;
    memcpy(out, path, n + 1);
    return 0;
}

/* "DIR/.BASE.tmp-XXXXXX" for DST, DIR being "." when DST names none. */
static int temp_name(const char *dst, char out[PATH_MAX]) {
    const char *slash = strrchr(dst, '/');
    size_t dir = slash ? (size_t)(slash - dst) + 1 : 0;
    const char *base = dst + dir;
    int n = snprintf(out, PATH_MAX, "%.*s.%s.tmp-XXXXXX", (int)dir, dst, base);
    return n > 0 && n < PATH_MAX ? 0 : -1;
}

static void sync_dir_of(const char *dst) {
    char dir[PATH_MAX];
    const char *slash = strrchr(dst, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dst) strcpy(dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - dst), dst);
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd); /* best effort: some file systems refuse fsync on a directory */
        close(fd);
    }
}

int af_open(af_file *a, const char *path) {
    a->f = NULL;
    a->tmp[0] = a->dst[0] = '\0';
    if (resolve_target(path, a->dst) != 0 || temp_name(a->dst, a->tmp) != 0) {
        fprintf(stderr, "%s: path too long or unreadable link\n", path);
        return -1;
    }
    mode_t mode;
    struct stat st;
    if (stat(a->dst, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            fprintf(stderr, "%s: exists and is not a regular file\n", path);
            return -1;
        }
        mode = st.st_mode & 07777;
    } else {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    int fd = mkstemp(a->tmp);
    if (fd < 0) {
        fprintf(stderr, "%s: cannot create a file in its directory: %s\n", path, strerror(errno));
        return -1;
    }
    if (fchmod(fd, mode) != 0 || !(a->f = fdopen(fd, "wb"))) {
        fprintf(stderr, "%s: %s\n", a->tmp, strerror(errno));
        close(fd);
        unlink(a->tmp);
        return -1;
    }
    return 0;
}

int af_commit(af_file *a) {
    int ok = a->f && fflush(a->f) == 0 && !ferror(a->f) && fsync(fileno(a->f)) == 0;
    int err = errno;
    if (a->f && fclose(a->f) != 0) ok = 0, err = errno;
    a->f = NULL;
    if (ok) {
        const char *fail = getenv("SN_AF_FAIL_BEFORE_RENAME");
        if (fail && strcmp(fail, "1") == 0) ok = 0, err = EIO;
    }
    if (ok && rename(a->tmp, a->dst) != 0) ok = 0, err = errno;
    if (!ok) {
        fprintf(stderr, "%s: write failed (%s); the file is as it was\n", a->dst, strerror(err));
        unlink(a->tmp);
        return -1;
    }
    sync_dir_of(a->dst);
    return 0;
}

void af_abort(af_file *a) {
    if (a->f) fclose(a->f);
    a->f = NULL;
    if (a->tmp[0]) unlink(a->tmp);
}

int af_check_writable(const char *path) {
    af_file a;
    if (af_open(&a, path) != 0) return -1;
    af_abort(&a);
    return 0;
}

/* Where a write to PATH, which does not exist, would create its file: the target (through a
 * dangling link) with its directory resolved by realpath, "/RESOLVED-DIR/BASE". 0, or -1 when
 * the directory does not exist or a name is too long. */
static int future_name(const char *path, char out[PATH_MAX]) {
    char dst[PATH_MAX], dir[PATH_MAX], real[PATH_MAX];
    if (resolve_target(path, dst) != 0) return -1;
    const char *slash = strrchr(dst, '/');
    const char *base = slash ? slash + 1 : dst;
    if (!*base) return -1;
    if (!slash) strcpy(dir, ".");
    else if (slash == dst) strcpy(dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - dst), dst);
    if (!realpath(dir, real)) return -1;
    int n = snprintf(out, PATH_MAX, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
    return n > 0 && n < PATH_MAX ? 0 : -1;
}

int af_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea || eb) return 0; /* one exists: the other, once written, is a new file */
    /* neither exists yet: the same file once written if they name the same entry of the same
     * directory */
    char na[PATH_MAX], nb[PATH_MAX];
    return future_name(a, na) == 0 && future_name(b, nb) == 0 && strcmp(na, nb) == 0;
}

int af_stdout_status(const char *prog) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    fprintf(stderr, "%s: writing standard output failed (%s)\n", prog,
            errno ? strerror(errno) : "a write error");
    return 1;
}
