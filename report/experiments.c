/*
 * report/experiments.c - the experiments of a database as text (issue 22;
 * the view of `nas experiments`, moved out of the CLI by issue 13): id,
 * name, status, trials done / failed / budget, diverged trials, the best
 * trial (highest val_accuracy among done, feasible trials) and when it was
 * created, oldest first; the one query, show, report and export use by
 * default (nas_store_experiment_find with no name: the most recent with a
 * done trial) is marked. Read-only.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h> /* free */
#include <string.h>
#include <jansson.h> /* JSON output */
#include "nas/parse.h" /* nas_shell_quote */
#include "nas/report.h"
#include "report/report_impl.h"

void nas__report_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int nas__report_flush(FILE *out, nas_error *err)
{
    if (fflush(out) != 0 || ferror(out))
        return nas_error_set(err, NAS_EIO, "cannot write the output: %s", strerror(errno));
    return NAS_OK;
}

int nas_report_format_parse(const char *s, nas_report_format *out)
{
    if (!strcmp(s, "table"))
        *out = NAS_REPORT_TABLE;
    else if (!strcmp(s, "csv"))
        *out = NAS_REPORT_CSV;
    else if (!strcmp(s, "json"))
        *out = NAS_REPORT_JSON;
    else
        return -1;
    return 0;
}

typedef struct list_ctx {
    nas_store *st;
    FILE *out;
    nas_report_format format;
    int64_t dflt; /* the default experiment's id */
    int n;
    json_t *rows;
    int oom;
    int n_rejected; /* latency rejections of the listed experiments */
} list_ctx;

/* A done trial with no accuracy: rejected by constraints.latency_ms before
 * training (issue 6), not one of the budget's trials. */
static int count_rejected(void *ctx, const nas_store_trial *t)
{
    if (t->status == NAS_TRIAL_DONE && t->has_result && !isfinite(t->val_accuracy))
        ++*(int *)ctx;
    return 0;
}

/* A proxy check (issue 30) counts its trainings (table proxy_check) in
 * n_done and n_failed; its budget is its trainings. A read error leaves 0. */
static void pc_counts(nas_store *st, nas_store_experiment *e)
{
    nas_store_pc_row *v = NULL;
    int n = 0;
    nas_error err;
    e->n_done = e->n_failed = 0;
    if (nas_store_pc_list(st, e->id, &v, &n, &err) != NAS_OK)
        return;
    for (int i = 0; i < n; i++)
        *(v[i].error[0] ? &e->n_failed : &e->n_done) += 1;
    free(v);
}

static int print_experiment(void *vctx, const nas_store_experiment *e)
{
    list_ctx *l = vctx;
    FILE *f = l->out;
    l->n++;
    int has_best = e->best_trial >= 0 && isfinite(e->best_val_accuracy);
    nas_store_experiment pc;
    int n_rej = 0;
    if (!strcmp(e->strategy, NAS_STORE_PROXY_CHECK)) { /* issue 30: its trainings, not trials */
        pc = *e;
        pc_counts(l->st, &pc);
        e = &pc;
    }
    nas_store_experiment tr;
    nas_error cerr;
    if (e != &pc && e->n_done > 0 &&
        nas_store_trial_foreach(l->st, e->id, NAS_STORE_ORDER_ID, 0, count_rejected, &n_rej,
                                &cerr) == NAS_OK &&
        n_rej > 0) { /* done counts trained trials, as the budget and nas query */
        tr = *e;
        tr.n_done -= n_rej;
        e = &tr;
        l->n_rejected += n_rej;
    }
    int is_default = e->id == l->dflt;
    switch (l->format) {
    case NAS_REPORT_TABLE: {
        char best[64] = "-";
        if (has_best)
            snprintf(best, sizeof best, "%.4f (trial %lld)", e->best_val_accuracy,
                     (long long)e->best_trial);
        else if (e == &pc)
            snprintf(best, sizeof best, "(proxy check)");
        fprintf(f, "%5lld  %-20s %-11s %6d %6d %6d %8d  %-22s %s%s\n", (long long)e->id, e->name,
                e->status, e->n_done, e->n_failed, e->trials_budget, e->n_diverged, best,
                e->created_at, is_default ? "  <- default" : "");
        break;
    }
    case NAS_REPORT_CSV:
        fprintf(f, "%lld,", (long long)e->id);
        nas__report_csv_field(f, e->name);
        fprintf(f, ",%s,%d,%d,%d,%d,", e->status, e->n_done, e->n_failed, e->n_diverged,
                e->trials_budget);
        if (has_best)
            fprintf(f, "%.6f,%lld", e->best_val_accuracy, (long long)e->best_trial);
        else
            fputc(',', f);
        fprintf(f, ",%s,%d,%d\n", e->created_at, is_default, n_rej);
        break;
    case NAS_REPORT_JSON: {
        json_t *o = json_pack("{s:I, s:s, s:s, s:i, s:i, s:i, s:i, s:o, s:o, s:s, s:b, s:i}", "id",
                              (json_int_t)e->id, "name", e->name, "status", e->status, "done",
                              e->n_done, "failed", e->n_failed, "diverged", e->n_diverged,
                              "budget", e->trials_budget, "best_val_accuracy",
                              has_best ? json_real(e->best_val_accuracy) : json_null(),
                              "best_trial",
                              has_best ? json_integer(e->best_trial) : json_null(),
                              "created_at", e->created_at, "default", is_default,
                              "rejected", n_rej);
        if (!o || json_array_append_new(l->rows, o) != 0) {
            l->oom = 1;
            return 1;
        }
        break;
    }
    }
    return 0;
}

int nas_report_experiments(nas_store *st, nas_report_format format, FILE *out, nas_error *err)
{
    list_ctx l = {0};
    l.st = st;
    l.out = out;
    l.format = format;
    nas_store_experiment d;
    nas_error derr;
    l.dflt = nas_store_experiment_find(st, NULL, &d, &derr) == NAS_OK ? d.id : -1;
    if (format == NAS_REPORT_TABLE)
        fprintf(out, "%5s  %-20s %-11s %6s %6s %6s %8s  %-22s %s\n", "id", "name", "status",
                "done", "failed", "budget", "diverged", "best val_acc", "created");
    else if (format == NAS_REPORT_CSV)
        fprintf(out, "id,name,status,done,failed,diverged,budget,best_val_accuracy,best_trial,"
                "created_at,default,rejected\n");
    else if (!(l.rows = json_array()))
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    int rc = nas_store_experiment_foreach(st, print_experiment, &l, err);
    if (rc == NAS_OK && l.oom)
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory");
    if (rc == NAS_OK && format == NAS_REPORT_JSON) {
        json_dumpf(l.rows, out, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', out);
    } else if (rc == NAS_OK && format == NAS_REPORT_TABLE) {
        const char *db = nas_store_path(st);
        char qdb[NAS_SHELL_QUOTE_MAX(NAS_PATH_MAX)];
        if (l.n == 0)
            fprintf(out, "(no experiments yet in %s: `nas run CONF --db %s` makes one)\n", db,
                    nas_shell_quote(db, qdb, sizeof qdb));
        else
            fprintf(out, "default of query, show, report and export: the most recent "
                    "experiment with a done trial (--experiment NAME picks another)\n");
        if (l.n_rejected > 0)
            fprintf(out, "done counts trained trials: %d trial(s) rejected by "
                    "constraints.latency_ms before training are not among them (nas query "
                    "lists them)\n", l.n_rejected);
    }
    json_decref(l.rows);
    return rc == NAS_OK ? nas__report_flush(out, err) : rc;
}
