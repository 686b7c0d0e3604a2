/*
 * search/table_identity.c - issue 29, defect 9: an experiment on a table
 * evaluator is identified by the table's contents too. evaluator.table is
 * a running setting (the file may move), so before this a changed CSV under
 * the same or another path continued the experiment and mixed the old
 * table's values with the new one's. The table's fingerprint is recorded
 * in the experiment's canonical text as a "# table: ..." comment line (as
 * the data's "# data: ..." line, search/controller.c data_identity), and a
 * resumed run whose table differs is refused like a changed defining
 * setting, listed with them. An experiment stored before this has no line:
 * its table is taken as unknown, not changed, and the first run that
 * resumes it records the line (docs/space-conf.md, evaluator).
 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* realloc */
#include <string.h> /* strlen, strstr, strncmp */
#include "nas/evaluator.h"
#include "search/table_identity.h"

#define TABLE_LINE "# table: "

int nas__table_identity(const nas_config *cfg, char **canon, nas_error *err)
{
    if (cfg->evaluator.kind != NAS_EVALUATOR_TABLE || !cfg->evaluator.table[0])
        return NAS_OK;
    char fp[96];
    nas_error ferr;
    nas_error_clear(&ferr);
    if (nas_evaluator_table_fingerprint(cfg->evaluator.table, fp, sizeof fp, &ferr) != NAS_OK)
        return NAS_OK; /* nas_evaluator_create says what is wrong with the file */
    char line[128];
    size_t n = strlen(*canon);
    int k = snprintf(line, sizeof line, "%s" TABLE_LINE "%s\n",
                     n > 0 && (*canon)[n - 1] != '\n' ? "\n" : "", fp);
    char *grown = realloc(*canon, n + (size_t)k + 1);
    if (!grown)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    memcpy(grown + n, line, (size_t)k + 1);
    *canon = grown;
    return NAS_OK;
}

/* The text after "# table: " at the start of a line of `text`, up to the
 * line's end, into out[n]; 0 when there is none. */
static int table_line(const char *text, char *out, size_t n)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, TABLE_LINE, strlen(TABLE_LINE)) != 0)
            continue;
        p += strlen(TABLE_LINE);
        snprintf(out, n, "%.*s", (int)strcspn(p, "\n"), p);
        return 1;
    }
    return 0;
}

int nas__table_identity_diff(const char *stored, const char *now, char *out, size_t n)
{
    char was[128], is[128];
    if (!stored || !now || !table_line(stored, was, sizeof was) ||
        !table_line(now, is, sizeof is) || strcmp(was, is) == 0)
        return 0;
    size_t used = strnlen(out, n);
    if (used < n)
        snprintf(out + used, n - used, "  evaluator.table (contents): %s -> %s\n", was, is);
    return 1;
}
