/*
 * cli/cmd_experiments.c - `nas experiments [--db PATH] [--format
 * table|csv|json]` (issue 22): every experiment of a database
 * (nas_report_experiments, report/experiments.c). Read-only, so it can run
 * while a search writes.
 */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "nas/report.h"

int nas_cmd_experiments(int argc, char **argv)
{
    const char *db = "nas.db", *format = "table";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **target = strcmp(a, "--db") == 0       ? &db
                              : strcmp(a, "--format") == 0 ? &format
                                                           : NULL;
        if (!target)
            return nas_cli_usage_error("experiments", "unknown argument '%s'", a);
        if (++i >= argc)
            return nas_cli_usage_error("experiments", "%s needs a value", a);
        *target = argv[i];
    }
    nas_report_format fmt;
    if (nas_report_format_parse(format, &fmt)) {
        fprintf(stderr, "nas experiments: unknown format '%s' (expected table, csv or json)\n",
                format);
        return NAS_EXIT_USAGE;
    }
    nas_error err;
    nas_store *st = NULL;
    int rc = nas_store_open(db, 1, &st, &err);
    if (rc == NAS_OK)
        rc = nas_report_experiments(st, fmt, stdout, &err);
    nas_store_close(st);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas experiments: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    return NAS_EXIT_OK;
}
