/*
 * cli/cmd_report.c - `nas report [--db PATH] [--experiment NAME] [-o FILE]
 * [--top-k K]`: write one self-contained HTML page about an experiment
 * (nas_report_write, docs/report.md). The database is opened read-only, so
 * it can run while a search writes. The page is written to FILE.tmp and
 * renamed over FILE when complete, so a viewer never sees half a page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h> /* strtol */
#include <string.h>
#include "cli/cli.h"
#include "nas/report.h"
#include "nas/store.h"

int nas_cmd_report(int argc, char **argv)
{
    const char *db = "nas.db", *experiment = NULL, *out_path = "report.html";
    long top_k = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (strcmp(a, "--db") == 0 && has_val) {
            db = argv[++i];
        } else if (strcmp(a, "--experiment") == 0 && has_val) {
            experiment = argv[++i];
        } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && has_val) {
            out_path = argv[++i];
        } else if (strcmp(a, "--top-k") == 0 && has_val) {
            char *end = NULL;
            errno = 0;
            top_k = strtol(argv[++i], &end, 10);
            if (errno || !end || *end || top_k < 1 || top_k > 100000) {
                fprintf(stderr, "nas report: --top-k '%s': expected an integer in [1, 100000]\n",
                        argv[i]);
                return NAS_EXIT_USAGE;
            }
        } else {
            int known = strcmp(a, "--db") == 0 || strcmp(a, "--experiment") == 0 ||
                        strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 ||
                        strcmp(a, "--top-k") == 0;
            fprintf(stderr, "nas report: %s '%s'\n", known ? "missing value for" : "unknown argument",
                    a);
            nas_cli_usage(stderr, "report");
            return NAS_EXIT_USAGE;
        }
    }
    nas_error err = {0};
    nas_store *st = NULL;
    int rc = nas_store_open(db, 1, &st, &err);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas report: %s\n", err.msg);
        return nas_cli_exit_code(rc);
    }
    size_t n = strlen(out_path) + 5;
    char *tmp = malloc(n);
    if (!tmp) {
        nas_store_close(st);
        fprintf(stderr, "nas report: out of memory\n");
        return NAS_EXIT_FAIL;
    }
    snprintf(tmp, n, "%s.tmp", out_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "nas report: cannot write %s: %s\n", tmp, strerror(errno));
        free(tmp);
        nas_store_close(st);
        return NAS_EXIT_FAIL;
    }
    nas_report_opts opts = {.experiment = experiment, .top_k = (int)top_k};
    int n_front = 0;
    rc = nas_report_write(st, &opts, f, &n_front, &err);
    if (fclose(f) != 0 && rc == NAS_OK)
        rc = nas_error_set(&err, NAS_EIO, "cannot write %s: %s", tmp, strerror(errno));
    if (rc == NAS_OK && rename(tmp, out_path) != 0)
        rc = nas_error_set(&err, NAS_EIO, "cannot rename %s to %s: %s", tmp, out_path,
                           strerror(errno));
    if (rc != NAS_OK) {
        remove(tmp);
        fprintf(stderr, "nas report: %s\n", err.msg);
    } else {
        nas_store_experiment e;
        nas_error e2;
        if (nas_store_experiment_find(st, experiment, &e, &e2) == NAS_OK)
            printf("nas: wrote %s: experiment '%s', %d trials (%d done, %d failed), Pareto front "
                   "of %d\n",
                   out_path, e.name, e.n_trials, e.n_done, e.n_failed, n_front);
        else
            printf("nas: wrote %s\n", out_path);
    }
    free(tmp);
    nas_store_close(st);
    return nas_cli_exit_code(rc);
}
