/*
 * cli/cmd_show.c - `nas show [--db PATH] TRIAL`: every stored field of one
 * trial, its kept weights and its final trainings (nas_report_trial,
 * report/trials.c). Read-only.
 */
#include <limits.h> /* LONG_MAX */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static int show(nas_store *st, const void *id, nas_error *err)
{
    return nas_report_trial(st, *(const long *)id, stdout, err);
}

int nas_cmd_show(int argc, char **argv)
{
    const char *db = "nas.db", *trial_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0) {
            if (++i >= argc)
                return nas_cli_usage_error("show", "--db needs a path");
            db = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return nas_cli_unknown_option("show", argv[i]);
        } else if (!trial_arg) {
            trial_arg = argv[i];
        } else {
            fprintf(stderr, "nas show: unexpected argument '%s' (one TRIAL id)\n", argv[i]);
            return NAS_EXIT_USAGE;
        }
    }
    if (!trial_arg)
        return nas_cli_usage_error("show", "missing TRIAL (a trial id from `nas query`)");
    long id;
    if (nas_parse_long(trial_arg, 1, LONG_MAX, &id)) {
        fprintf(stderr, "nas show: TRIAL must be a positive integer trial id, got '%s'\n",
                trial_arg);
        return NAS_EXIT_USAGE;
    }
    return nas_cli_read_store("show", db, show, &id);
}
