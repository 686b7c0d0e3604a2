/*
 * space/config_include.c - `@include` paths for libconfig 1.5 (issue 29,
 * defect 10e). libconfig 1.5 (Debian 12's) has one include directory per
 * config and joins it to every @include path, absolute ones too
 * ("/etc/x.conf" became "DIR//etc/x.conf": "cannot open include file"), and
 * a nested file's relative @include was taken from the main file's
 * directory. libconfig 1.7's config_set_include_func would let us resolve
 * each path ourselves; 1.5 has no such hook, so this file rewrites the
 * @include lines before libconfig sees them and sets no include directory:
 * a relative path becomes DIR/PATH, DIR being the directory of the file
 * holding the line as the user named it, which libconfig then opens from
 * the working directory as it is. An included file whose own relative
 * includes need rewriting is handed to libconfig as a rewritten temporary
 * copy; messages name the original (nas__cfg_includes_name). Every line
 * keeps its number, so libconfig's FILE:LINE stay right. The syntax
 * matched is libconfig 1.5's scanner's: at the start of a line, optional
 * blanks, `@include`, blanks, a double-quoted path in which \\ and \" are
 * escapes.
 */
#include <stdio.h>  /* tmpfile, fopen, snprintf */
#include <stdlib.h> /* malloc, realloc, free */
#include <string.h> /* strchr, strlen, memcpy */
#include "space/config_include.h"
#include "space/text_impl.h" /* nas__sbuf */

#define MAX_DEPTH 10 /* libconfig 1.5's MAX_INCLUDE_DEPTH */

void nas__cfg_dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    size_t len = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    snprintf(out, n, "%.*s", (int)len, path);
}

char *nas__cfg_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *t = malloc((size_t)NAS_CONFIG_MAX_BYTES + 1);
    size_t k = t ? fread(t, 1, (size_t)NAS_CONFIG_MAX_BYTES + 1, f) : 0;
    int bad = ferror(f) || k > (size_t)NAS_CONFIG_MAX_BYTES;
    fclose(f);
    if (!t || bad) {
        free(t);
        return NULL;
    }
    t[k] = '\0';
    return t;
}

static char *rewrite(const char *text, const char *dir, nas__cfg_includes *inc, int depth);

/* Where libconfig must open @include path `p` written in a file in `dir`:
 * into out[n]. A file that needs its own includes rewritten becomes a
 * temporary copy ("/dev/fd/N"). */
static void resolve(const char *p, const char *dir, nas__cfg_includes *inc, int depth, char *out,
                    size_t n)
{
    if (p[0] == '/' || !dir[0])
        snprintf(out, n, "%s", p);
    else
        snprintf(out, n, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", p);
    if (depth + 1 >= MAX_DEPTH || inc->n >= NAS__CFG_INC_MAX)
        return;
    char *body = nas__cfg_read_file(out);
    if (!body)
        return;
    char sub[NAS_PATH_MAX];
    nas__cfg_dir_of(out, sub, sizeof sub);
    char *again = rewrite(body, sub, inc, depth + 1);
    FILE *t = again && strcmp(again, body) != 0 && inc->n < NAS__CFG_INC_MAX ? tmpfile() : NULL;
    if (t && fputs(again, t) >= 0 && fflush(t) == 0) {
        int i = inc->n++;
        inc->tmp[i] = t;
        snprintf(inc->path[i], sizeof inc->path[i], "/dev/fd/%d", fileno(t));
        snprintf(inc->name[i], sizeof inc->name[i], "%s", out);
        snprintf(out, n, "%s", inc->path[i]);
    } else if (t) {
        fclose(t);
    }
    free(again);
    free(body);
}

/* One line (without its newline) into b, its @include path rewritten. */
static void line(nas__sbuf *b, const char *s, size_t n, const char *dir, nas__cfg_includes *inc,
                 int depth)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    size_t j = i + 8;
    if (n < j || strncmp(s + i, "@include", 8) != 0 || j >= n || (s[j] != ' ' && s[j] != '\t')) {
        nas__sb_printf(b, "%.*s", (int)n, s);
        return;
    }
    while (j < n && (s[j] == ' ' || s[j] == '\t'))
        j++;
    if (j >= n || s[j] != '"') {
        nas__sb_printf(b, "%.*s", (int)n, s);
        return;
    }
    char p[NAS_PATH_MAX];
    size_t k = j + 1, m = 0;
    for (; k < n && s[k] != '"' && m + 1 < sizeof p; k++) {
        if (s[k] == '\\' && k + 1 < n && (s[k + 1] == '\\' || s[k + 1] == '"'))
            k++;
        p[m++] = s[k];
    }
    if (k >= n || s[k] != '"') { /* no closing quote (or too long): libconfig's to judge */
        nas__sb_printf(b, "%.*s", (int)n, s);
        return;
    }
    p[m] = '\0';
    char to[NAS_PATH_MAX];
    resolve(p, dir, inc, depth, to, sizeof to);
    nas__sb_printf(b, "%.*s", (int)j, s); /* up to the opening quote */
    nas__sb_quoted(b, to);                /* "to", \\ and \" escaped as libconfig reads them */
    nas__sb_printf(b, "%.*s", (int)(n - k - 1), s + k + 1);
}

static char *rewrite(const char *text, const char *dir, nas__cfg_includes *inc, int depth)
{
    nas__sbuf b = nas__sb_new(strlen(text) + 256);
    for (const char *s = text; *s;) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        line(&b, s, n, dir, inc, depth);
        if (e)
            nas__sb_printf(&b, "\n");
        s += n + (e ? 1 : 0);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

char *nas__cfg_includes_rewrite(const char *text, const char *dir, nas__cfg_includes *inc)
{
    return rewrite(text, dir ? dir : "", inc, 0);
}

const char *nas__cfg_includes_name(const nas__cfg_includes *inc, const char *f)
{
    for (int i = 0; f && i < inc->n; i++)
        if (strcmp(inc->path[i], f) == 0)
            return inc->name[i];
    return f;
}

void nas__cfg_includes_close(nas__cfg_includes *inc)
{
    for (int i = 0; i < inc->n; i++)
        fclose(inc->tmp[i]);
    inc->n = 0;
}
