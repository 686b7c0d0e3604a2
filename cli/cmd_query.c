/*
 * cli/cmd_query.c - `nas query [--db PATH] [--experiment NAME]
 * [--format table|csv|json] [--limit N] [--min-fidelity N] [--pareto]
 * [--zero-cost PROXY]`: the trials of one experiment, ranked, or its Pareto
 * front (--zero-cost: a column of the proxy's cached scores, issue 31) (nas_report_trials,
 * report/trials.c). The database is opened read-only, so it can run while
 * a search writes.
 */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static const char *const VALUE_OPTS[] = {"--db", "--experiment", "--format", "--limit", "--min-fidelity",
                                     "--zero-cost", NULL};

static int list(nas_store *st, const void *o, nas_error *err)
{
    return nas_report_trials(st, o, stdout, err);
}

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
            return a[0] == '-' ? nas_cli_unknown_option("query", a)
                               : nas_cli_usage_error("query", "unknown argument '%s'", a);
        } else if (++i >= argc) {
            return nas_cli_usage_error("query", "%s needs a value", a);
        } else if (!strcmp(a, "--db")) {
            db = argv[i];
        } else if (!strcmp(a, "--experiment")) {
            o.experiment = argv[i];
        } else if (!strcmp(a, "--format")) {
            format = argv[i];
        } else if (!strcmp(a, "--zero-cost")) { /* issue 31: the warm-up's cached scores */
            o.zero_cost = argv[i];
        } else if (nas_parse_long(argv[i], 0, 1000000000, &limit)) {
            fprintf(stderr, "nas query: %s expects a non-negative integer, got '%s'\n", a, argv[i]);
            return NAS_EXIT_USAGE;
        } else if (!strcmp(a, "--limit")) {
            o.limit = (int)limit;
        } else { /* --min-fidelity (issue 17) */
            o.min_fidelity = limit;
        }
    }
    int rc = nas_cli_format("query", format, &o.format);
    return rc >= 0 ? rc : nas_cli_read_store("query", db, list, &o);
}
