/*
 * cli/cmd_show.c - `nas show [--db PATH] TRIAL`: every stored field of one
 * trial (its row, its result and its experiment), one "name value" line
 * each, then its kept weights file and its final trainings (`nas train
 * ARCH.json --db`, one line each plus its recipe); missing values print
 * as "-". Read-only.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "nas/store.h"

static void line_str(const char *name, const char *v) { printf("%-14s %s\n", name, *v ? v : "-"); }

static void line_num(const char *name, double v, const char *fmt)
{
    printf("%-14s ", name);
    if (isfinite(v))
        printf(fmt, v);
    else
        printf("-");
    putchar('\n');
}

static void line_int(const char *name, int64_t v)
{
    if (v >= 0)
        printf("%-14s %lld\n", name, (long long)v);
    else
        printf("%-14s -\n", name);
}

int nas_cmd_show(int argc, char **argv)
{
    const char *db = "nas.db", *trial_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0) {
            if (++i >= argc) {
                fprintf(stderr, "nas show: --db needs a path\n");
                nas_cli_usage(stderr, "show");
                return NAS_EXIT_USAGE;
            }
            db = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "nas show: unknown option '%s'\n", argv[i]);
            nas_cli_usage(stderr, "show");
            return NAS_EXIT_USAGE;
        } else if (!trial_arg) {
            trial_arg = argv[i];
        } else {
            fprintf(stderr, "nas show: unexpected argument '%s' (one TRIAL id)\n", argv[i]);
            return NAS_EXIT_USAGE;
        }
    }
    if (!trial_arg) {
        fprintf(stderr, "nas show: missing TRIAL (a trial id from `nas query`)\n");
        nas_cli_usage(stderr, "show");
        return NAS_EXIT_USAGE;
    }
    char *end;
    errno = 0;
    long long id = strtoll(trial_arg, &end, 10);
    if (errno || *end || end == trial_arg || id <= 0) {
        fprintf(stderr, "nas show: TRIAL must be a positive integer trial id, got '%s'\n",
                trial_arg);
        return NAS_EXIT_USAGE;
    }

    nas_error err;
    nas_store *st = NULL;
    if (nas_store_open(db, 1, &st, &err) != NAS_OK) {
        fprintf(stderr, "nas show: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    nas_store_trial *t = malloc(sizeof *t);
    nas_store_experiment e;
    int rc = t ? nas_store_trial_get(st, id, t, &err)
               : nas_error_set(&err, NAS_ENOMEM, "out of memory");
    if (rc == NAS_OK)
        rc = nas_store_experiment_get(st, t->experiment_id, &e, &err);
    /* issue 22: its kept weights and its final trainings (`nas train --db`) */
    char weights[NAS_PATH_MAX] = "";
    nas_store_final_training *ft = NULL;
    int n_ft = 0;
    nas_error werr;
    if (rc == NAS_OK && nas_store_trial_weights_get(st, id, weights, sizeof weights, &werr))
        weights[0] = '\0';
    if (rc == NAS_OK)
        rc = nas_store_final_training_list(st, -1, id, &ft, &n_ft, &err);
    nas_store_close(st);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas show: %s\n", err.msg);
        free(t);
        return NAS_EXIT_FAIL;
    }
    char buf[NAS_NAME_MAX + 64];
    line_int("trial", t->id);
    snprintf(buf, sizeof buf, "%s (id %lld, %s)", e.name, (long long)e.id, e.status);
    line_str("experiment", buf);
    line_str("genotype", t->genotype);
    line_str("arch_key", t->arch_key);
    line_str("status", nas_trial_status_name(t->status));
    line_str("flag", t->flag); /* issue 22: "diverged" (the reason is in error) */
    line_str("error", t->error);
    line_str("proposed_by", t->proposed_by);
    line_int("attempt", t->attempt);
    line_int("worker", t->worker);
    line_str("device", t->device);
    line_str("device_name", t->device_name); /* issue 7: GPU name or CPU model */
    line_str("device_cc", t->device_cc);     /* GPU compute capability */
    line_str("created_at", t->created_at);
    line_str("started_at", t->started_at);
    line_str("finished_at", t->finished_at);
    line_num("val_accuracy", t->val_accuracy, "%.6f");
    line_num("test_accuracy", t->test_accuracy, "%.6f");
    line_num("train_loss", t->train_loss, "%.6f");
    line_int("macs", t->macs);
    line_int("params", t->params);
    line_num("latency_ms", t->latency_ms, "%.4f");
    line_num("train_seconds", t->train_seconds, "%.2f");
    line_int("epochs", t->epochs);
    line_num("score", t->score, "%.6g");
    line_str("weights", weights);
    /* final trainings of this trial, oldest first (docs/export.md) */
    if (n_ft == 0)
        line_str("final_training", "");
    for (int i = 0; i < n_ft; i++) {
        const nas_store_final_training *f = &ft[i];
        char acc[32] = "-";
        if (isfinite(f->test_accuracy))
            snprintf(acc, sizeof acc, "%.4f", f->test_accuracy);
        printf("%-14s %lld: test_accuracy %s (%s, %d epoch(s), %lld train images, augment %s, "
               "%s backend, %.0f s) %s\n",
               "final_training", (long long)f->id, acc,
               nas_store_final_training_is_full(f) ? "full" : "proxy rerun", f->epochs,
               (long long)f->train_images, f->augment, f->backend,
               isfinite(f->train_seconds) ? f->train_seconds : 0.0, f->created_at);
        printf("%-14s %s\n", "", f->recipe);
    }
    free(ft);
    free(t);
    return NAS_EXIT_OK;
}
