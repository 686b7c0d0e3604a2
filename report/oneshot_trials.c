/*
 * report/oneshot_trials.c - issue 32: the trials of a one-shot search in
 * `nas query` and `nas show` (report/trials.c). A supernet trial's
 * val_accuracy is by the supernet's inherited weights, not by training, and
 * must not read as a trained one: `nas query` marks it (column kind) and
 * links it to its stand-alone retraining, a finalist to the supernet trial
 * it was chosen from; `nas show` says both in a sentence.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "nas/store.h"
#include "report_impl.h"

int nas__report_os_load(nas_store *st, int64_t exp_id, nas__report_os *os, nas_error *err)
{
    memset(os, 0, sizeof *os);
    os->exp_id = exp_id;
    nas_store_sn_epoch *curve = NULL;
    int n_curve = 0;
    int rc = nas_store_finalist_list(st, exp_id, &os->fin, &os->n_fin, err);
    if (rc == NAS_OK)
        rc = nas_store_supernet_curve(st, exp_id, &curve, &n_curve, err);
    free(curve);
    if (rc != NAS_OK) {
        nas__report_os_free(os);
        return rc;
    }
    os->supernet_exp = n_curve > 0;
    for (int i = 0; i < os->n_fin; i++) {
        os->finalists_exp |= os->fin[i].experiment_id == exp_id;
        os->supernet_exp |= os->fin[i].supernet_experiment_id == exp_id;
    }
    os->active = os->supernet_exp || os->finalists_exp;
    return NAS_OK;
}

void nas__report_os_free(nas__report_os *os)
{
    free(os->fin);
    os->fin = NULL;
    os->n_fin = 0;
}

const nas_store_finalist *nas__report_os_link(const nas__report_os *os, int64_t trial,
                                              int supernet_side)
{
    for (int i = 0; i < os->n_fin; i++)
        if ((supernet_side ? os->fin[i].supernet_trial_id : os->fin[i].trial_id) == trial)
            return &os->fin[i];
    return NULL;
}

const char *nas__report_os_kind(const nas__report_os *os, const nas_store_trial *t)
{
    if (nas__report_os_link(os, t->id, 0))
        return "finalist";
    if (strcmp(t->device, "supernet") == 0 || os->supernet_exp)
        return "supernet";
    return "trained";
}

/* The linked trial and its accuracy for trial t: its supernet trial
 * (finalist) or its stand-alone retraining (supernet trial); -1 / NaN. */
static void linked(const nas__report_os *os, const nas_store_trial *t, int64_t *sn, double *sn_acc,
                   int64_t *re, double *re_acc)
{
    const nas_store_finalist *a = nas__report_os_link(os, t->id, 0);
    const nas_store_finalist *b = nas__report_os_link(os, t->id, 1);
    *sn = a ? a->supernet_trial_id : -1;
    *sn_acc = a ? a->supernet_accuracy : NAN;
    *re = b ? b->trial_id : -1;
    *re_acc = b ? b->standalone_accuracy : NAN;
}

void nas__report_os_table_header(FILE *f, const nas__report_os *os)
{
    if (!os->active)
        return;
    fprintf(f, " %-8s", "kind");
    if (os->finalists_exp)
        fprintf(f, " %8s %8s", "sn_trial", "sn_acc");
    if (os->supernet_exp && os->n_fin > 0)
        fprintf(f, " %9s %8s", "retrained", "retr_acc");
}

void nas__report_os_table_note(FILE *f, const nas__report_os *os)
{
    if (!os->active)
        return;
    fputs("one-shot search (docs/one-shot.md): kind 'supernet': val_acc by the supernet's "
          "inherited weights, not trained", f);
    if (os->supernet_exp && os->n_fin > 0)
        fputs("; retrained, retr_acc: its stand-alone retraining", f);
    if (os->finalists_exp)
        fputs("; kind 'finalist': retrained stand-alone; sn_trial, sn_acc: the supernet trial "
              "it was chosen from and its accuracy by inherited weights", f);
    fputc('\n', f);
}

void nas__report_os_table_row(FILE *f, const nas__report_os *os, const nas_store_trial *t)
{
    if (!os->active)
        return;
    int64_t sn, re;
    double sn_acc, re_acc;
    linked(os, t, &sn, &sn_acc, &re, &re_acc);
    char a[24] = "-", b[24] = "-", c[24] = "-", d[24] = "-";
    if (sn >= 0)
        snprintf(a, sizeof a, "%lld", (long long)sn);
    if (isfinite(sn_acc))
        snprintf(b, sizeof b, "%.4f", sn_acc);
    if (re >= 0)
        snprintf(c, sizeof c, "%lld", (long long)re);
    if (isfinite(re_acc))
        snprintf(d, sizeof d, "%.4f", re_acc);
    fprintf(f, " %-8s", nas__report_os_kind(os, t));
    if (os->finalists_exp)
        fprintf(f, " %8s %8s", a, b);
    if (os->supernet_exp && os->n_fin > 0)
        fprintf(f, " %9s %8s", c, d);
}

void nas__report_os_csv_header(FILE *f, const nas__report_os *os)
{
    if (os->active)
        fputs(",kind,supernet_trial,supernet_accuracy,retrained_trial,retrained_accuracy", f);
}

void nas__report_os_csv_row(FILE *f, const nas__report_os *os, const nas_store_trial *t)
{
    if (!os->active)
        return;
    int64_t sn, re;
    double sn_acc, re_acc;
    linked(os, t, &sn, &sn_acc, &re, &re_acc);
    fprintf(f, ",%s,", nas__report_os_kind(os, t));
    if (sn >= 0)
        fprintf(f, "%lld", (long long)sn);
    fputc(',', f);
    if (isfinite(sn_acc))
        fprintf(f, "%.10g", sn_acc);
    fputc(',', f);
    if (re >= 0)
        fprintf(f, "%lld", (long long)re);
    fputc(',', f);
    if (isfinite(re_acc))
        fprintf(f, "%.10g", re_acc);
}

void nas__report_os_json_row(json_t *o, const nas__report_os *os, const nas_store_trial *t)
{
    if (!os->active)
        return;
    int64_t sn, re;
    double sn_acc, re_acc;
    linked(os, t, &sn, &sn_acc, &re, &re_acc);
    json_object_set_new(o, "kind", json_string(nas__report_os_kind(os, t)));
    json_object_set_new(o, "supernet_trial", sn >= 0 ? json_integer(sn) : json_null());
    json_object_set_new(o, "supernet_accuracy", isfinite(sn_acc) ? json_real(sn_acc) : json_null());
    json_object_set_new(o, "retrained_trial", re >= 0 ? json_integer(re) : json_null());
    json_object_set_new(o, "retrained_accuracy", isfinite(re_acc) ? json_real(re_acc)
                                                                  : json_null());
}

int nas__report_os_show(FILE *f, nas_store *st, const nas_store_trial *t, nas_error *err)
{
    nas__report_os os;
    int rc = nas__report_os_load(st, t->experiment_id, &os, err);
    if (rc != NAS_OK || !os.active) {
        nas__report_os_free(&os);
        return rc;
    }
    const nas_store_finalist *a = nas__report_os_link(&os, t->id, 0);
    const nas_store_finalist *b = nas__report_os_link(&os, t->id, 1);
    const char *kind = nas__report_os_kind(&os, t);
    fprintf(f, "%-14s %s: %s\n", "kind", kind,
            strcmp(kind, "supernet") == 0 ? "val_accuracy by the supernet's inherited weights, "
                                            "not trained"
            : strcmp(kind, "finalist") == 0 ? "retrained stand-alone (one-shot search, phase 3)"
                                            : "trained");
    if (a) {
        nas_store_experiment e;
        if ((rc = nas_store_experiment_get(st, a->supernet_experiment_id, &e, err)) == NAS_OK) {
            fprintf(f, "%-14s chosen from supernet trial %lld of experiment '%s' (supernet "
                       "accuracy ", "finalist", (long long)a->supernet_trial_id, e.name);
            fprintf(f, isfinite(a->supernet_accuracy) ? "%.4f)\n" : "-)\n",
                    a->supernet_accuracy);
        }
    } else if (b) {
        fprintf(f, "%-14s retrained as trial %lld (val_accuracy ", "retrained",
                (long long)b->trial_id);
        if (isfinite(b->standalone_accuracy))
            fprintf(f, "%.4f)\n", b->standalone_accuracy);
        else
            fprintf(f, "-, %s)\n", b->done ? "none" : "not finished");
    }
    nas__report_os_free(&os);
    return rc;
}
