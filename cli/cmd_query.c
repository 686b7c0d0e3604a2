/*
 * cli/cmd_query.c - `nas query [--db PATH] [--experiment NAME]
 * [--format table|csv|json] [--limit N] [--pareto]`: the trials of one
 * experiment ranked by validation accuracy (done first, best first;
 * unfinished next; failed last); with --pareto only the Pareto front under
 * the experiment's own objectives (nas_store_pareto: done, feasible trials
 * no other dominates; best first by the first objective), same columns. The database is opened read-only, so it can run while a
 * search writes. csv follows RFC 4180; json (jansson) is an array of
 * objects with the csv's columns, null for missing values.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h> /* JSON output */
#include "cli/cli.h"
#include "nas/store.h"

enum { FMT_TABLE, FMT_CSV, FMT_JSON };

/* Done trials with no accuracy: rejected by constraints.latency_ms before
 * training (issue 6); they are not part of the budget. */
static int count_rejected(void *ctx, const nas_store_trial *t)
{
    if (t->status == NAS_TRIAL_DONE && !isfinite(t->val_accuracy))
        ++*(int *)ctx;
    return 0;
}

typedef struct qctx {
    int format;
    int rank;
    json_t *rows;
    int oom;
    /* issue 22: the experiment's final trainings (`nas train ARCH.json --db`) */
    const nas_store_final_training *ft;
    int n_ft;
    int geno_w;     /* table: width of the genotype column */
    int any_device; /* table: some row has a device name (the last column) */
} qctx;

/* The test accuracy of trial t's latest full training (NaN: none) and
 * the number of its final trainings (full or --proxy reruns). */
static double final_test(const qctx *q, int64_t trial, int *runs)
{
    double v = NAN;
    *runs = 0;
    for (int i = 0; i < q->n_ft; i++) {
        if (q->ft[i].trial_id != trial)
            continue;
        ++*runs;
        if (nas_store_final_training_is_full(&q->ft[i]))
            v = q->ft[i].test_accuracy; /* rows are in id order: the latest wins */
    }
    return v;
}

/* Table layout pass: column widths and whether the device column shows. */
static int measure_row(void *vctx, const nas_store_trial *t)
{
    qctx *q = vctx;
    int w = (int)strlen(t->genotype);
    if (w > q->geno_w)
        q->geno_w = w;
    if (t->device_name[0])
        q->any_device = 1;
    return 0;
}

static void csv_field(FILE *f, const char *s)
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

static void fmt_num(char *buf, size_t n, double v, const char *fmt)
{
    if (isfinite(v))
        snprintf(buf, n, fmt, v);
    else
        buf[0] = '\0';
}

static void fmt_int(char *buf, size_t n, int64_t v)
{
    if (v >= 0)
        snprintf(buf, n, "%lld", (long long)v);
    else
        buf[0] = '\0';
}

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }
static json_t *jint(int64_t v) { return v >= 0 ? json_integer(v) : json_null(); }
static json_t *jstr(const char *s) { return *s ? json_string(s) : json_null(); }

static int print_row(void *vctx, const nas_store_trial *t)
{
    qctx *q = vctx;
    q->rank++;
    const char *status = nas_trial_status_name(t->status);
    /* issue 22: a diverged trial is done, and shown as "diverged" */
    const char *shown = t->flag[0] && t->status == NAS_TRIAL_DONE ? t->flag : status;
    char val[32], test[32], loss[32], macs[32], params[32], lat[32], secs[32], ep[16];
    char fin[32];
    int runs = 0;
    fmt_num(fin, sizeof fin, final_test(q, t->id, &runs), "%.4f");
    fmt_num(val, sizeof val, t->val_accuracy, "%.4f");
    fmt_num(test, sizeof test, t->test_accuracy, "%.4f");
    fmt_num(loss, sizeof loss, t->train_loss, "%.4f");
    fmt_int(macs, sizeof macs, t->macs);
    fmt_int(params, sizeof params, t->params);
    fmt_num(lat, sizeof lat, t->latency_ms, "%.3f");
    fmt_num(secs, sizeof secs, t->train_seconds, "%.1f");
    fmt_int(ep, sizeof ep, t->epochs);
    switch (q->format) {
    case FMT_TABLE:
        printf("%4d %6lld  %-11s %8s %8s %11s %8s %10s %8s", q->rank, (long long)t->id, shown,
               val[0] ? val : "-", test[0] ? test : "-", macs[0] ? macs : "-",
               params[0] ? params : "-", lat[0] ? lat : "-", secs[0] ? secs : "-");
        if (q->n_ft > 0) /* issue 22: the latest full training's test accuracy */
            printf(" %10s", fin[0] ? fin : "-");
        printf("  %-*s", q->any_device ? q->geno_w : 0, t->genotype);
        if (t->device_name[0]) /* issue 7: where it ran */
            printf("  %s%s%s%s", t->device_name, t->device_cc[0] ? " (cc " : "", t->device_cc,
                   t->device_cc[0] ? ")" : "");
        putchar('\n');
        if (t->error[0] && t->status == NAS_TRIAL_FAILED)
            printf("%13s error: %s\n", "", t->error);
        break;
    case FMT_CSV: {
        printf("%d,%lld,", q->rank, (long long)t->id);
        csv_field(stdout, t->genotype);
        printf(",%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,", status, val, test, loss, macs, params, lat,
               secs, ep, t->device, t->attempt);
        csv_field(stdout, t->error);
        putchar(',');
        csv_field(stdout, t->device_name);
        putchar(',');
        csv_field(stdout, t->device_cc);
        putchar(',');
        csv_field(stdout, t->flag);
        printf(",%s,%d\n", fin, runs);
        break;
    }
    case FMT_JSON: {
        json_t *o = json_object();
        if (!o) {
            q->oom = 1;
            return 1;
        }
        json_object_set_new(o, "rank", json_integer(q->rank));
        json_object_set_new(o, "trial", json_integer(t->id));
        json_object_set_new(o, "genotype", json_string(t->genotype));
        json_object_set_new(o, "status", json_string(status));
        json_object_set_new(o, "val_accuracy", jnum(t->val_accuracy));
        json_object_set_new(o, "test_accuracy", jnum(t->test_accuracy));
        json_object_set_new(o, "train_loss", jnum(t->train_loss));
        json_object_set_new(o, "macs", jint(t->macs));
        json_object_set_new(o, "params", jint(t->params));
        json_object_set_new(o, "latency_ms", jnum(t->latency_ms));
        json_object_set_new(o, "train_seconds", jnum(t->train_seconds));
        json_object_set_new(o, "epochs", jint(t->epochs));
        json_object_set_new(o, "device", jstr(t->device));
        json_object_set_new(o, "device_name", jstr(t->device_name));
        json_object_set_new(o, "device_cc", jstr(t->device_cc));
        json_object_set_new(o, "attempt", json_integer(t->attempt));
        json_object_set_new(o, "error", jstr(t->error));
        json_object_set_new(o, "experiment", json_string(t->experiment));
        json_object_set_new(o, "flag", jstr(t->flag));
        json_object_set_new(o, "final_test_accuracy", jnum(final_test(q, t->id, &runs)));
        json_object_set_new(o, "final_runs", json_integer(runs));
        if (json_array_append_new(q->rows, o) != 0) {
            q->oom = 1;
            return 1;
        }
        break;
    }
    }
    return 0;
}

int nas_cmd_query(int argc, char **argv)
{
    const char *db = "nas.db", *name = NULL, *format = "table";
    long limit = 0;
    int pareto = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **target = NULL;
        if (strcmp(a, "--pareto") == 0) {
            pareto = 1;
            continue;
        }
        if (strcmp(a, "--db") == 0)
            target = &db;
        else if (strcmp(a, "--experiment") == 0)
            target = &name;
        else if (strcmp(a, "--format") == 0)
            target = &format;
        if (target || strcmp(a, "--limit") == 0) {
            if (++i >= argc) {
                fprintf(stderr, "nas query: %s needs a value\n", a);
                nas_cli_usage(stderr, "query");
                return NAS_EXIT_USAGE;
            }
            if (target) {
                *target = argv[i];
            } else {
                char *end;
                errno = 0;
                limit = strtol(argv[i], &end, 10);
                if (errno || *end || end == argv[i] || limit < 0 || limit > 1000000000) {
                    fprintf(stderr, "nas query: --limit expects a non-negative integer, got '%s'\n",
                            argv[i]);
                    return NAS_EXIT_USAGE;
                }
            }
            continue;
        }
        fprintf(stderr, "nas query: unknown argument '%s'\n", a);
        nas_cli_usage(stderr, "query");
        return NAS_EXIT_USAGE;
    }
    qctx q = {0};
    if (strcmp(format, "table") == 0)
        q.format = FMT_TABLE;
    else if (strcmp(format, "csv") == 0)
        q.format = FMT_CSV;
    else if (strcmp(format, "json") == 0)
        q.format = FMT_JSON;
    else {
        fprintf(stderr, "nas query: unknown format '%s' (expected table, csv or json)\n", format);
        return NAS_EXIT_USAGE;
    }

    nas_error err;
    nas_store *st = NULL;
    int rc = nas_store_open(db, 1, &st, &err);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas query: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    nas_store_experiment e;
    rc = nas_store_experiment_find(st, name, &e, &err);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas query: %s\n", err.msg);
        nas_store_close(st);
        return NAS_EXIT_FAIL;
    }
    nas_store_trial *front = NULL;
    int n_front = 0;
    nas_config ocfg;
    if (pareto) { /* issue 6: the front under the experiment's objectives */
        rc = nas_store_experiment_objectives(st, e.id, &ocfg, &err);
        if (rc == NAS_OK)
            rc = nas_store_pareto(st, e.id, ocfg.objectives, ocfg.n_objectives, &front, &n_front,
                                  &err);
        if (rc != NAS_OK) {
            fprintf(stderr, "nas query: --pareto: %s\n", err.msg);
            nas_store_close(st);
            return NAS_EXIT_FAIL;
        }
    }
    nas_store_final_training *ft = NULL;
    if (nas_store_final_training_list(st, e.id, -1, &ft, &q.n_ft, &err) != NAS_OK) {
        fprintf(stderr, "nas query: %s\n", err.msg);
        free(front);
        nas_store_close(st);
        return NAS_EXIT_FAIL;
    }
    q.ft = ft;
    q.geno_w = (int)strlen("genotype");
    if (q.format == FMT_TABLE) {
        if (pareto)
            for (int i = 0; i < n_front && (limit == 0 || i < limit); i++)
                measure_row(&q, &front[i]);
        else if (nas_store_trial_foreach(st, e.id, NAS_STORE_ORDER_RANK, (int)limit, measure_row,
                                         &q, &err) != NAS_OK)
            q.any_device = 0;
    }
    if (q.format == FMT_TABLE) {
        int n_rej = 0;
        nas_error cerr;
        if (nas_store_trial_foreach(st, e.id, NAS_STORE_ORDER_ID, 0, count_rejected, &n_rej,
                                    &cerr) != NAS_OK)
            n_rej = 0;
        printf("experiment '%s' (id %lld, %s, strategy %s): %d of %d trials finished "
               "(%d done, %d failed), %d unfinished",
               e.name, (long long)e.id, e.status, e.strategy, e.n_done - n_rej + e.n_failed,
               e.trials_budget, e.n_done - n_rej, e.n_failed,
               e.n_pending + e.n_running + e.n_interrupted);
        if (n_rej > 0)
            printf("; %d rejected by constraints.latency_ms before training", n_rej);
        if (e.n_diverged > 0) /* issue 22 */
            printf("; %d diverged (status 'diverged': done, but train_loss not finite or "
                   "> 23.03, or val_accuracy at chance level)",
                   e.n_diverged);
        putchar('\n');
        if (pareto) {
            printf("Pareto front: %d trial(s) under", n_front);
            for (int k = 0; k < ocfg.n_objectives; k++)
                printf("%s %s (%s)", k ? "," : "", ocfg.objectives[k].metric,
                       ocfg.objectives[k].maximize ? "max" : "min");
            printf("%s\n", ocfg.constraints.latency_ms > 0 || ocfg.constraints.mmacs > 0 ||
                                   ocfg.constraints.params > 0
                               ? "; feasible trials only"
                               : "");
        }
        if (q.n_ft > 0)
            printf("%d final training(s) recorded (`nas show TRIAL` lists them); final_test: "
                   "test accuracy of the trial's latest full `nas train`\n",
                   q.n_ft);
        printf("%4s %6s  %-11s %8s %8s %11s %8s %10s %8s", "rank", "trial", "status", "val_acc",
               "test_acc", "macs", "params", "latency_ms", "train_s");
        if (q.n_ft > 0)
            printf(" %10s", "final_test");
        printf("  %-*s%s\n", q.any_device ? q.geno_w : 0, "genotype",
               q.any_device ? "  device" : "");
    } else if (q.format == FMT_CSV) {
        printf("rank,trial,genotype,status,val_accuracy,test_accuracy,train_loss,macs,params,"
               "latency_ms,train_seconds,epochs,device,attempt,error,device_name,device_cc,flag,"
               "final_test_accuracy,final_runs\n");
    } else {
        q.rows = json_array();
        if (!q.rows) {
            fprintf(stderr, "nas query: out of memory\n");
            nas_store_close(st);
            return NAS_EXIT_FAIL;
        }
    }
    if (pareto) {
        for (int i = 0; i < n_front && (limit == 0 || i < limit) && !q.oom; i++)
            print_row(&q, &front[i]);
        free(front);
    } else {
        rc = nas_store_trial_foreach(st, e.id, NAS_STORE_ORDER_RANK, (int)limit, print_row, &q,
                                     &err);
    }
    nas_store_close(st);
    free(ft);
    if (rc == NAS_OK && q.oom)
        rc = nas_error_set(&err, NAS_ENOMEM, "out of memory");
    if (rc != NAS_OK) {
        json_decref(q.rows);
        fprintf(stderr, "nas query: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    if (q.format == FMT_JSON) {
        json_dumpf(q.rows, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        putchar('\n');
        json_decref(q.rows);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "nas query: cannot write the output: %s\n", strerror(errno));
        return NAS_EXIT_FAIL;
    }
    return NAS_EXIT_OK;
}
