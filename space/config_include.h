/*
 * space/config_include.h - `@include` for space.conf, resolved the way a
 * reader expects (issue 29, defect 10e): an absolute path as it is, a
 * relative one against the directory of the file that holds the line,
 * whatever the working directory. See space/config_include.c.
 */
#ifndef NAS_SPACE_CONFIG_INCLUDE_H
#define NAS_SPACE_CONFIG_INCLUDE_H

#include <stdio.h>
#include "nas/space.h"

#define NAS__CFG_INC_MAX 16 /* rewritten included files per config */

/* The rewritten copies of included files one parse made: libconfig reads
 * each through `path` ("/dev/fd/N" of an unlinked temporary file); `name`
 * is the file as the user sees it, for messages. Zero it before use. */
typedef struct nas__cfg_includes {
    int n;
    FILE *tmp[NAS__CFG_INC_MAX];
    char path[NAS__CFG_INC_MAX][32];
    char name[NAS__CFG_INC_MAX][NAS_PATH_MAX];
} nas__cfg_includes;

/*
 * The config text `text` with every `@include "P"` line's P replaced by
 * the path libconfig must open with no include directory set: P when
 * absolute; else DIR/P, where `dir` is the directory of the file holding
 * the line as the user names it ("" for the working directory: P as it
 * is). An included file that holds relative @include lines itself and
 * lies in another directory is rewritten the same way, recursively (at
 * most 10 levels, libconfig's own limit), into a temporary file recorded
 * in `inc`. A line whose file cannot be read is left for libconfig to
 * report. Returns a malloc'd text (same number of lines), or NULL when out
 * of memory.
 */
char *nas__cfg_includes_rewrite(const char *text, const char *dir, nas__cfg_includes *inc);

/* The user's name for a file libconfig names `f` (a temporary copy's
 * original, else f itself). */
const char *nas__cfg_includes_name(const nas__cfg_includes *inc, const char *f);

/* The directory part of `path` into out[n]: "a/b.conf" -> "a", "/x.conf"
 * -> "/", "b.conf" -> "" (the working directory). */
void nas__cfg_dir_of(const char *path, char *out, size_t n);

/* The whole of file `path` as a malloc'd string; NULL when it cannot be
 * read, memory runs out, or it holds more than NAS_CONFIG_MAX_BYTES (an
 * included file that large is left for libconfig to open itself). */
char *nas__cfg_read_file(const char *path);

/* Close the temporary copies. */
void nas__cfg_includes_close(nas__cfg_includes *inc);

#endif /* NAS_SPACE_CONFIG_INCLUDE_H */
