/* atomic_file: how the example programs write a user's file (checkpoints, converted models,
 * logs and CSVs that replace a previous one): whole or not at all.
 *
 * The bytes go to a temporary file in the target's own directory (so that rename(2) is atomic
 * on that file system). af_commit flushes and fsyncs it, renames it over the target and fsyncs
 * the directory; until then the target is exactly as it was, and af_abort (or a failed commit)
 * removes the temporary. A target that is a symbolic link is written through the link: the file
 * it points to is replaced, the link stays.
 *
 * Every function prints its own message on stderr, naming the path, when it fails. */
#ifndef SN_ATOMIC_FILE_H
#define SN_ATOMIC_FILE_H

#include <limits.h>
#include <stdio.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

typedef struct {
    FILE *f;            /* write here between af_open and af_commit / af_abort */
    char tmp[PATH_MAX]; /* the temporary file */
    char dst[PATH_MAX]; /* the file that af_commit replaces (a link's target, resolved) */
} af_file;

/* Creates the temporary beside PATH and opens it for binary writing into a->f. The new file's
 * permissions are those of an existing PATH, or 0666 less the umask. Returns 0, or -1 when the
 * directory is missing or not writable (nothing is created then). */
int af_open(af_file *a, const char *path);

/* Flushes, fsyncs and closes a->f, then renames the temporary over the target. Returns 0; or
 * -1 when any step failed (a write error of an earlier fwrite included), and then the temporary
 * is removed and the target left as it was. For tests, the environment variable
 * SN_AF_FAIL_BEFORE_RENAME=1 makes it fail just before the rename, as an interrupted write
 * would. */
int af_commit(af_file *a);

/* Closes and removes the temporary; the target stays as it was. */
void af_abort(af_file *a);

/* Whether a file could be created in PATH's directory now (checked by creating and removing a
 * temporary there): 0 if so, -1 with a message otherwise. For programs that write PATH only
 * at the end of a long run. */
int af_check_writable(const char *path);

/* Whether paths A and B name the same file (the same device and inode, through links and
 * ./ spellings): 1 if so, 0 if not. When neither exists yet, whether writing each would create
 * the same file: the same entry of the same directory (realpath of the directory, through a
 * dangling link); 0 when only one exists or a directory is missing. */
int af_same_file(const char *a, const char *b);

/* Whether everything the program printed on stdout reached it (flushed, no write error, as
 * with > /dev/full or a full disk): 0 if so, 1 with a message naming PROG otherwise, to be
 * the exit status of a program that would otherwise succeed. */
int af_stdout_status(const char *prog);

#endif
