/*
 * cli/cmd_experiments.c - `nas experiments [--db PATH] [--format
 * table|csv|json]` (issue 22): every experiment of a database
 * (nas_report_experiments, report/experiments.c). Read-only, so it can run
 * while a search writes.
 */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static int list(nas_store *st, const void *fmt, nas_error *err)
{
    return nas_report_experiments(st, *(const nas_report_format *)fmt, stdout, err);
}

int nas_cmd_experiments(int argc, char **argv)
{
    const char *db = "nas.db", *format = "table";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **target = strcmp(a, "--db") == 0       ? &db
                              : strcmp(a, "--format") == 0 ? &format
                                                           : NULL;
        if (!target)
            return a[0] == '-' ? nas_cli_unknown_option("experiments", a)
                               : nas_cli_usage_error("experiments", "unknown argument '%s'", a);
        if (++i >= argc)
            return nas_cli_usage_error("experiments", "%s needs a value", a);
        *target = argv[i];
    }
    nas_report_format fmt;
    int rc = nas_cli_format("experiments", format, &fmt);
    return rc >= 0 ? rc : nas_cli_read_store("experiments", db, list, &fmt);
}
