/*
 * evaluator/table.c - a benchmark table (e.g. NAS-Bench-201's accuracies,
 * Dong & Yang, ICLR 2020) loaded from CSV (RFC 4180: comma separated,
 * optional double quotes, "" inside quotes) into an open-addressing hash
 * table keyed by the genotype string (FNV-1a hash, linear probing), so a
 * trial is one look-up.
 */
#include <errno.h>
#include <math.h>   /* isfinite */
#include <stdint.h>
#include <stdio.h>  /* fopen, getline */
#include <stdlib.h> /* malloc, strtod */
#include <string.h>
#include "nas/array.h" /* nas_hash_str */
#include <zlib.h>   /* crc32: the table's fingerprint */
#include "nas/evaluator.h"
#include "evaluator/evaluator_impl.h"

typedef struct entry {
    char *key; /* NULL: empty slot */
    double value, test;
} entry;

struct nas__table {
    entry *slots;
    size_t cap; /* power of two */
    int rows;
    int has_test;
    int by_key; /* keyed by canonical key (column "key") */
};

void nas__table_destroy(nas__table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++)
        free(t->slots[i].key);
    free(t->slots);
    free(t);
}

int nas__table_by_key(const nas__table *t)
{
    return t ? t->by_key : 0;
}

int nas__table_rows(const nas__table *t)
{
    return t ? t->rows : 0;
}

static entry *find_slot(const nas__table *t, const char *key)
{
    size_t i = (size_t)nas_hash_str(key) & (t->cap - 1);
    while (t->slots[i].key && strcmp(t->slots[i].key, key) != 0)
        i = (i + 1) & (t->cap - 1);
    return &t->slots[i];
}

static int grow(nas__table *t)
{
    size_t nc = t->cap ? t->cap * 2 : 1024;
    entry *old = t->slots;
    size_t oc = t->cap;
    t->slots = calloc(nc, sizeof *t->slots);
    if (!t->slots) {
        t->slots = old;
        return NAS_ENOMEM;
    }
    t->cap = nc;
    for (size_t i = 0; i < oc; i++)
        if (old[i].key)
            *find_slot(t, old[i].key) = old[i];
    free(old);
    return NAS_OK;
}

int nas__table_lookup(const nas__table *t, const char *key, double *value, double *test)
{
    if (!t || !key || !t->cap)
        return NAS_ENOTFOUND;
    const entry *e = find_slot(t, key);
    if (!e->key)
        return NAS_ENOTFOUND;
    if (value)
        *value = e->value;
    if (test)
        *test = t->has_test ? e->test : -1.0;
    return NAS_OK;
}

/* Split one CSV line in place into at most `max` fields (quotes removed,
 * surrounding blanks trimmed). Returns the field count or -1 for an
 * unterminated quote. */
static int split_csv(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        char *start = p, *w = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0')
                    return -1;
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *w++ = *p++;
                }
            }
            while (*p && *p != ',')
                p++;
        } else {
            while (*p && *p != ',')
                *w++ = *p++;
            while (w > start && (w[-1] == ' ' || w[-1] == '\t'))
                w--;
        }
        char sep = *p;
        *w = '\0';
        if (n < max)
            fields[n] = start;
        n++;
        if (sep != ',')
            break;
        p++;
    }
    return n;
}

static int parse_num(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

#define MAX_FIELDS 256

int nas__table_load(const char *path, const char *column, const char *test_column,
                    nas__table **out, nas_error *err)
{
    return nas__table_load_limited(path, column, test_column, NAS__TABLE_MAX_ROWS, out, err);
}

int nas__table_load_limited(const char *path, const char *column, const char *test_column,
                            int max_rows, nas__table **out, nas_error *err)
{
    if (out)
        *out = NULL;
    if (!path || !column || !out)
        return nas_error_set(err, NAS_EINVAL, "nas__table_load: NULL argument");
    FILE *f = fopen(path, "r");
    if (!f)
        return nas_error_set(err, NAS_EIO, "cannot open table %s: %s", path, strerror(errno));
    nas__table *t = calloc(1, sizeof *t);
    char *line = NULL;
    size_t lcap = 0;
    char **fields = malloc(MAX_FIELDS * sizeof *fields);
    int rc = (t && fields) ? NAS_OK : NAS_ENOMEM;
    int lineno = 0, kcol = -1, vcol = -1, tcol = -1, need = 0, data_rows = 0;
    int want_test = test_column && test_column[0];
    if (!rc)
        rc = grow(t);
    if (rc) {
        nas_error_set(err, rc, "out of memory loading table %s", path);
        goto done;
    }
    t->has_test = want_test;
    while (getline(&line, &lcap, f) >= 0) {
        lineno++;
        size_t L = strlen(line);
        while (L && (line[L - 1] == '\n' || line[L - 1] == '\r'))
            line[--L] = '\0';
        if (L == 0)
            continue;
        int nf = split_csv(line, fields, MAX_FIELDS);
        if (nf < 0) {
            rc = nas_error_set(err, NAS_EFORMAT, "%s:%d: unterminated quoted field", path, lineno);
            goto done;
        }
        if (kcol < 0) { /* header */
            int gcol = -1, keycol = -1;
            for (int i = 0; i < nf && i < MAX_FIELDS; i++) {
                if (strcmp(fields[i], "cellstr") == 0)
                    kcol = i;
                else if (strcmp(fields[i], "genotype") == 0)
                    gcol = i;
                else if (strcmp(fields[i], "key") == 0)
                    keycol = i;
                if (strcmp(fields[i], column) == 0)
                    vcol = i;
                if (want_test && strcmp(fields[i], test_column) == 0)
                    tcol = i;
            }
            if (kcol < 0)
                kcol = gcol;
            if (kcol < 0 && keycol >= 0) {
                kcol = keycol;
                t->by_key = 1;
            }
            if (kcol < 0) {
                rc = nas_error_set(err, NAS_EFORMAT,
                                   "%s:%d: no key column 'cellstr', 'genotype' or 'key' in the header",
                                   path, lineno);
                goto done;
            }
            if (vcol < 0) {
                rc = nas_error_set(err, NAS_EFORMAT, "%s:%d: no column '%s' in the header", path,
                                   lineno, column);
                goto done;
            }
            if (want_test && tcol < 0) {
                rc = nas_error_set(err, NAS_EFORMAT, "%s:%d: no test column '%s' in the header",
                                   path, lineno, test_column);
                goto done;
            }
            need = kcol > vcol ? kcol : vcol;
            need = tcol > need ? tcol : need;
            continue;
        }
        if (++data_rows > max_rows) {
            rc = nas_error_set(err, NAS_EFORMAT,
                               "%s:%d: more than %d data rows, the most a table may have "
                               "(docs/space-conf.md, Limits)",
                               path, lineno, max_rows);
            goto done;
        }
        if (nf <= need) {
            rc = nas_error_set(err, NAS_EFORMAT, "%s:%d: %d fields, expected at least %d", path,
                               lineno, nf, need + 1);
            goto done;
        }
        double v, tv = -1;
        if (parse_num(fields[vcol], &v)) {
            rc = nas_error_set(err, NAS_EFORMAT, "%s:%d: column '%s': '%s' is not a number", path,
                               lineno, column, fields[vcol]);
            goto done;
        }
        if (tcol >= 0 && parse_num(fields[tcol], &tv)) {
            rc = nas_error_set(err, NAS_EFORMAT, "%s:%d: column '%s': '%s' is not a number", path,
                               lineno, test_column, fields[tcol]);
            goto done;
        }
        if (fields[kcol][0] == '\0') {
            rc = nas_error_set(err, NAS_EFORMAT, "%s:%d: empty genotype", path, lineno);
            goto done;
        }
        if ((size_t)(t->rows + 1) * 2 > t->cap && (rc = grow(t))) {
            nas_error_set(err, rc, "out of memory loading table %s", path);
            goto done;
        }
        entry *e = find_slot(t, fields[kcol]);
        if (e->key)
            continue; /* duplicate genotype: the first row wins */
        e->key = strdup(fields[kcol]);
        if (!e->key) {
            rc = nas_error_set(err, NAS_ENOMEM, "out of memory loading table %s", path);
            goto done;
        }
        e->value = v;
        e->test = tv;
        t->rows++;
    }
    if (ferror(f)) {
        rc = nas_error_set(err, NAS_EIO, "%s: read error", path);
        goto done;
    }
    if (kcol < 0) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s:1: empty table (no header row)", path);
        goto done;
    }
    *out = t;
    t = NULL;
done:
    free(line);
    free(fields);
    nas__table_destroy(t);
    fclose(f);
    return rc;
}

int nas_evaluator_table_fingerprint(const char *path, char *out, size_t n, nas_error *err)
{
    if (!path || !out || n < 40)
        return nas_error_set(err, NAS_EINVAL, "nas_evaluator_table_fingerprint: bad argument");
    out[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return nas_error_set(err, NAS_EIO, "cannot open table %s: %s", path, strerror(errno));
    unsigned char *buf = malloc(1 << 16);
    if (!buf) {
        fclose(f);
        return nas_error_set(err, NAS_ENOMEM, "out of memory reading table %s", path);
    }
    uLong crc = crc32(0L, Z_NULL, 0);
    unsigned long long bytes = 0;
    size_t k;
    while ((k = fread(buf, 1, 1 << 16, f)) > 0) {
        crc = crc32(crc, buf, (uInt)k);
        bytes += k;
    }
    int bad = ferror(f);
    int e = errno;
    free(buf);
    fclose(f);
    if (bad)
        return nas_error_set(err, NAS_EIO, "cannot read table %s: %s", path, strerror(e));
    snprintf(out, n, "crc32 %08lx, %llu bytes", (unsigned long)crc, bytes);
    return NAS_OK;
}
