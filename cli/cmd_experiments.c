/*
 * cli/cmd_experiments.c - `nas experiments [--db PATH] [--format
 * table|csv|json]` (issue 22): every experiment of a database, oldest
 * first: id, name, status, trials done / failed / budget, diverged trials,
 * the best trial (highest val_accuracy among done, feasible trials) and
 * when it was created; the one query, show, report and export use by
 * default (nas_store_experiment_find with no name: the most recent with a
 * done trial) is marked. Read-only, so it can run while a search writes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h> /* JSON output */
#include "cli/cli.h"
#include "nas/store.h"

enum { FMT_TABLE, FMT_CSV, FMT_JSON };

typedef struct list_ctx {
    int format;
    int64_t dflt; /* the default experiment's id */
    int n;
    json_t *rows;
    int oom;
} list_ctx;

/* RFC 4180: quote a field that holds a comma, a quote or a line break. */
static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static int print_experiment(void *vctx, const nas_store_experiment *e)
{
    list_ctx *l = vctx;
    l->n++;
    int has_best = e->best_trial >= 0 && isfinite(e->best_val_accuracy);
    int is_default = e->id == l->dflt;
    switch (l->format) {
    case FMT_TABLE: {
        char best[64] = "-";
        if (has_best)
            snprintf(best, sizeof best, "%.4f (trial %lld)", e->best_val_accuracy,
                     (long long)e->best_trial);
        printf("%5lld  %-20s %-11s %6d %6d %6d %8d  %-22s %s%s\n", (long long)e->id, e->name,
               e->status, e->n_done, e->n_failed, e->trials_budget, e->n_diverged, best,
               e->created_at, is_default ? "  <- default" : "");
        break;
    }
    case FMT_CSV:
        printf("%lld,", (long long)e->id);
        csv_field(e->name);
        printf(",%s,%d,%d,%d,%d,", e->status, e->n_done, e->n_failed, e->n_diverged,
               e->trials_budget);
        if (has_best)
            printf("%.6f,%lld", e->best_val_accuracy, (long long)e->best_trial);
        else
            putchar(',');
        printf(",%s,%d\n", e->created_at, is_default);
        break;
    case FMT_JSON: {
        json_t *o = json_pack("{s:I, s:s, s:s, s:i, s:i, s:i, s:i, s:o, s:o, s:s, s:b}", "id",
                              (json_int_t)e->id, "name", e->name, "status", e->status, "done",
                              e->n_done, "failed", e->n_failed, "diverged", e->n_diverged,
                              "budget", e->trials_budget, "best_val_accuracy",
                              has_best ? json_real(e->best_val_accuracy) : json_null(),
                              "best_trial",
                              has_best ? json_integer(e->best_trial) : json_null(),
                              "created_at", e->created_at, "default", is_default);
        if (!o || json_array_append_new(l->rows, o) != 0) {
            l->oom = 1;
            return 1;
        }
        break;
    }
    }
    return 0;
}

int nas_cmd_experiments(int argc, char **argv)
{
    const char *db = "nas.db", *format = "table";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **target = strcmp(a, "--db") == 0       ? &db
                              : strcmp(a, "--format") == 0 ? &format
                                                           : NULL;
        if (!target) {
            fprintf(stderr, "nas experiments: unknown argument '%s'\n", a);
            nas_cli_usage(stderr, "experiments");
            return NAS_EXIT_USAGE;
        }
        if (++i >= argc) {
            fprintf(stderr, "nas experiments: %s needs a value\n", a);
            nas_cli_usage(stderr, "experiments");
            return NAS_EXIT_USAGE;
        }
        *target = argv[i];
    }
    list_ctx l = {0};
    if (strcmp(format, "table") == 0)
        l.format = FMT_TABLE;
    else if (strcmp(format, "csv") == 0)
        l.format = FMT_CSV;
    else if (strcmp(format, "json") == 0)
        l.format = FMT_JSON;
    else {
        fprintf(stderr, "nas experiments: unknown format '%s' (expected table, csv or json)\n",
                format);
        return NAS_EXIT_USAGE;
    }
    nas_error err;
    nas_store *st = NULL;
    if (nas_store_open(db, 1, &st, &err) != NAS_OK) {
        fprintf(stderr, "nas experiments: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    nas_store_experiment d;
    nas_error derr;
    l.dflt = nas_store_experiment_find(st, NULL, &d, &derr) == NAS_OK ? d.id : -1;
    if (l.format == FMT_TABLE)
        printf("%5s  %-20s %-11s %6s %6s %6s %8s  %-22s %s\n", "id", "name", "status", "done",
               "failed", "budget", "diverged", "best val_acc", "created");
    else if (l.format == FMT_CSV)
        printf("id,name,status,done,failed,diverged,budget,best_val_accuracy,best_trial,"
               "created_at,default\n");
    else if (!(l.rows = json_array())) {
        nas_store_close(st);
        fprintf(stderr, "nas experiments: out of memory\n");
        return NAS_EXIT_FAIL;
    }
    int rc = nas_store_experiment_foreach(st, print_experiment, &l, &err);
    nas_store_close(st);
    if (rc == NAS_OK && l.oom)
        rc = nas_error_set(&err, NAS_ENOMEM, "out of memory");
    if (rc != NAS_OK) {
        json_decref(l.rows);
        fprintf(stderr, "nas experiments: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    if (l.format == FMT_JSON) {
        json_dumpf(l.rows, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(l.rows);
    } else if (l.format == FMT_TABLE) {
        if (l.n == 0)
            printf("(no experiments yet in %s: `nas run CONF --db %s` makes one)\n", db, db);
        else
            printf("default of query, show, report and export: the most recent experiment "
                   "with a done trial (--experiment NAME picks another)\n");
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "nas experiments: cannot write the output: %s\n", strerror(errno));
        return NAS_EXIT_FAIL;
    }
    return NAS_EXIT_OK;
}
