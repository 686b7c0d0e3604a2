/*
 * cli/cmd_query.c - `nas query [--db PATH] [--experiment NAME]
 * [--format table|csv|json] [--limit N] [--min-fidelity N] [--pareto]`: the trials of one
 * experiment, ranked, or its Pareto front (nas_report_trials,
 * report/trials.c). The database is opened read-only, so it can run while
 * a search writes.
 */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "nas/report.h"

static const char *const VALUE_OPTS[] = {"--db", "--experiment", "--format", "--limit", "--min-fidelity", NULL};

int nas_cmd_query(int argc, char **argv)
{
    const char *db = "nas.db", *format = "table";
    nas_report_trials_opts o = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long limit;
        if (!strcmp(a, "--pareto")) {
            o.pareto = 1;
        } else if (!nas_cli_is_one_of(a, VALUE_OPTS)) {
            return nas_cli_usage_error("query", "unknown argument '%s'", a);
        } else if (++i >= argc) {
            return nas_cli_usage_error("query", "%s needs a value", a);
        } else if (!strcmp(a, "--db")) {
            db = argv[i];
        } else if (!strcmp(a, "--experiment")) {
            o.experiment = argv[i];
        } else if (!strcmp(a, "--format")) {
            format = argv[i];
        } else if (nas_parse_long(argv[i], 0, 1000000000, &limit)) {
            fprintf(stderr, "nas query: %s expects a non-negative integer, got '%s'\n", a, argv[i]);
            return NAS_EXIT_USAGE;
        } else if (!strcmp(a, "--limit")) {
            o.limit = (int)limit;
        } else { /* --min-fidelity (issue 17) */
            o.min_fidelity = limit;
        }
    }
    if (nas_report_format_parse(format, &o.format)) {
        fprintf(stderr, "nas query: unknown format '%s' (expected table, csv or json)\n", format);
        return NAS_EXIT_USAGE;
    }
    nas_error err;
    nas_store *st = NULL;
    int rc = nas_store_open(db, 1, &st, &err);
    if (rc == NAS_OK)
        rc = nas_report_trials(st, &o, stdout, &err);
    nas_store_close(st);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas query: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    return NAS_EXIT_OK;
}
