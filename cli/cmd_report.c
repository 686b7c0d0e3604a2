/*
 * cli/cmd_report.c - `nas report [--db PATH] [--experiment NAME] [-o FILE]
 * [--top-k K]`: write one self-contained HTML page about an experiment
 * (nas_report_write_file, docs/report.md). The database is opened
 * read-only, so it can run while a search writes.
 */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static const char *const VALUE_OPTS[] = {"--db", "--experiment", "-o", "--output", "--top-k",
                                         NULL};

int nas_cmd_report(int argc, char **argv)
{
    const char *db = "nas.db", *out_path = "report.html";
    nas_report_opts opts = {.experiment = NULL, .top_k = 10};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long top_k;
        int known = nas_cli_is_one_of(a, VALUE_OPTS);
        if (!known && a[0] == '-')
            return nas_cli_unknown_option("report", a);
        if (!known || i + 1 >= argc)
            return nas_cli_usage_error("report", "%s '%s'",
                                       known ? "missing value for" : "unknown argument", a);
        const char *v = argv[++i];
        if (strcmp(a, "--db") == 0) {
            db = v;
        } else if (strcmp(a, "--experiment") == 0) {
            opts.experiment = v;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            out_path = v;
        } else if (nas_parse_long(v, 1, 100000, &top_k)) {
            fprintf(stderr, "nas report: --top-k '%s': expected an integer in [1, 100000]\n", v);
            return NAS_EXIT_USAGE;
        } else {
            opts.top_k = (int)top_k;
        }
    }
    nas_error err = {0};
    nas_store *st = NULL;
    int n_front = 0;
    int rc = nas_store_open(db, 1, &st, &err);
    if (rc == NAS_OK)
        rc = nas_report_write_file(st, &opts, out_path, &n_front, &err);
    nas_store_experiment e;
    if (rc != NAS_OK)
        fprintf(stderr, "nas report: %s\n", err.msg);
    else if (nas_store_experiment_find(st, opts.experiment, &e, &err) == NAS_OK)
        printf("nas: wrote %s: experiment '%s', %d trials (%d done, %d failed), Pareto front "
               "of %d\n",
               out_path, e.name, e.n_trials, e.n_done, e.n_failed, n_front);
    else
        printf("nas: wrote %s\n", out_path);
    nas_store_close(st);
    return nas_cli_exit_code(rc);
}
