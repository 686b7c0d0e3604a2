/*
 * report/trials.c - the stored trials as text (issue 13: the views of
 * `nas query` and `nas show`, moved out of the CLI):
 *  - nas_report_trials: the trials of one experiment ranked by validation
 *    accuracy (done first, best first; unfinished next; failed last), or
 *    only the Pareto front under the experiment's own objectives, as a
 *    table, RFC 4180 CSV or a JSON array (jansson) of objects with the
 *    CSV's columns, null for missing values;
 *  - nas_report_trial: every stored field of one trial, one "name value"
 *    line each ("-" when missing), its kept weights and its final
 *    trainings.
 * Read-only: both run while a search writes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h> /* stat: is the kept weights file this database's own */
#include <jansson.h> /* JSON output */
#include "nas/report.h"
#include "report/report_impl.h"

/* ---- nas query ---------------------------------------------------------------- */

/* Done trials with no accuracy (n[0]): rejected by constraints.latency_ms
 * before training (issue 6), not part of the budget; and trained ones with
 * no score (n[1]): infeasible, over a constraint. */
static int count_rejected(void *ctx, const nas_store_trial *t)
{
    int *n = ctx;
    if (t->status == NAS_TRIAL_DONE && t->has_result && !isfinite(t->val_accuracy))
        n[0]++;
    else if (t->status == NAS_TRIAL_DONE && t->has_result && !nas_store_trial_feasible(t))
        n[1]++;
    return 0;
}

typedef struct qctx {
    FILE *out;
    nas_report_format format;
    int rank;
    json_t *rows;
    int oom;
    /* issue 22: the experiment's final trainings (`nas train ARCH.json --db`) */
    const nas_store_final_training *ft;
    int n_ft;
    int geno_w;     /* table: width of the genotype column */
    int any_device; /* table: some row has a device name (the last column) */
    int any_fid;    /* table: some row has a fidelity (issue 17): the column shows */
    int64_t min_fid; /* issue 17: only trials whose highest fidelity is at least this */
    int limit;       /* --pareto: rows to write (the front is a list, not a query) */
    nas_store *st;   /* issue 31: --zero-cost PROXY's cached scores */
    const char *zc;
    nas__report_os os; /* issue 32: one-shot columns */
} qctx;

/* Issue 31: the cached score of q->zc for trial t (NaN: none). */
static double zc_score(const qctx *q, const nas_store_trial *t)
{
    double v = NAN;
    nas_error e;
    if (q->zc && nas_store_zc_get(q->st, t->experiment_id, q->zc, t->arch_key, &v, &e) != NAS_OK)
        v = NAN;
    return v;
}

/* Issue 17: a --pareto row filtered out by --min-fidelity (the trial
 * listing filters in its query: nas_store_trial_foreach_min). */
static int fid_skip(const qctx *q, const nas_store_trial *t)
{
    return q->min_fid > 0 && t->fidelity < q->min_fid;
}

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
    if (fid_skip(q, t))
        return 0;
    if (t->fidelity >= 0)
        q->any_fid = 1;
    int w = (int)strlen(t->genotype);
    if (w > q->geno_w)
        q->geno_w = w;
    if (t->device_name[0])
        q->any_device = 1;
    return 0;
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
    if (fid_skip(q, t))
        return 0;
    if (q->limit > 0 && q->rank >= q->limit)
        return 1;
    q->rank++;
    const char *status = nas_trial_status_name(t->status);
    /* issue 22: a diverged trial is done, and shown as "diverged"; a done
     * trial over a constraint as "rejected" or "infeasible", as the report */
    const char *flag = t->status == NAS_TRIAL_DONE ? nas__report_flag(t) : "";
    const char *shown = flag[0] ? flag : status;
    char val[32], test[32], loss[32], macs[32], params[32], lat[32], secs[32], ep[16];
    char fin[32];
    int runs = 0;
    /* the table rounds for reading; CSV keeps 10 significant digits, so a
     * spreadsheet or pandas sees the stored values and their ties, as JSON */
    int csv = q->format == NAS_REPORT_CSV;
    fmt_num(fin, sizeof fin, final_test(q, t->id, &runs), csv ? "%.10g" : "%.4f");
    fmt_num(val, sizeof val, t->val_accuracy, csv ? "%.10g" : "%.4f");
    fmt_num(test, sizeof test, t->test_accuracy, csv ? "%.10g" : "%.4f");
    fmt_num(loss, sizeof loss, t->train_loss, csv ? "%.10g" : "%.4f");
    fmt_int(macs, sizeof macs, t->macs);
    fmt_int(params, sizeof params, t->params);
    fmt_num(lat, sizeof lat, t->latency_ms, csv ? "%.10g" : "%.3f");
    fmt_num(secs, sizeof secs, t->train_seconds, csv ? "%.10g" : "%.1f");
    fmt_int(ep, sizeof ep, t->epochs);
    char fid[24], zcs[32];
    fmt_int(fid, sizeof fid, t->fidelity);
    double zc = zc_score(q, t);
    snprintf(zcs, sizeof zcs, csv ? "%.10g" : "%.6g", zc);
    switch (q->format) {
    case NAS_REPORT_TABLE:
        fprintf(q->out, "%4d %6lld  %-11s %8s %8s %11s %8s %10s %8s", q->rank, (long long)t->id, shown,
               val[0] ? val : "-", test[0] ? test : "-", macs[0] ? macs : "-",
               params[0] ? params : "-", lat[0] ? lat : "-", secs[0] ? secs : "-");
        nas__report_os_table_row(q->out, &q->os, t); /* issue 32 */
        if (q->n_ft > 0) /* issue 22: the latest full training's test accuracy */
            fprintf(q->out, " %10s", fin[0] ? fin : "-");
        if (q->any_fid) /* issue 17: the highest fidelity reached */
            fprintf(q->out, " %9s", fid[0] ? fid : "-");
        if (q->zc) /* issue 31 */
            fprintf(q->out, " %12s", isfinite(zc) ? zcs : "-");
        fprintf(q->out, "  %-*s", q->any_device ? q->geno_w : 0, t->genotype);
        if (t->device_name[0]) /* issue 7: where it ran */
            fprintf(q->out, "  %s%s%s%s", t->device_name, t->device_cc[0] ? " (cc " : "", t->device_cc,
                   t->device_cc[0] ? ")" : "");
        fputc('\n', q->out);
        if (t->error[0] && t->status == NAS_TRIAL_FAILED)
            fprintf(q->out, "%13s error: %s\n", "", t->error);
        break;
    case NAS_REPORT_CSV: {
        fprintf(q->out, "%d,%lld,", q->rank, (long long)t->id);
        nas__report_csv_field(q->out, t->genotype);
        fprintf(q->out, ",%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,", status, val, test, loss, macs, params, lat,
               secs, ep, t->device, t->attempt);
        nas__report_csv_field(q->out, t->error);
        fputc(',', q->out);
        nas__report_csv_field(q->out, t->device_name);
        fputc(',', q->out);
        nas__report_csv_field(q->out, t->device_cc);
        fputc(',', q->out);
        nas__report_csv_field(q->out, t->flag);
        fprintf(q->out, ",%s,%d,%s", fin, runs, fid);
        nas__report_os_csv_row(q->out, &q->os, t); /* issue 32 */
        if (q->zc)
            fprintf(q->out, ",%s", isfinite(zc) ? zcs : "");
        fputc('\n', q->out);
        break;
    }
    case NAS_REPORT_JSON: {
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
        json_object_set_new(o, "fidelity", jint(t->fidelity));
        nas__report_os_json_row(o, &q->os, t); /* issue 32 */
        if (q->zc) {
            char name[64];
            snprintf(name, sizeof name, "zc_%s", q->zc);
            json_object_set_new(o, name, jnum(zc));
        }
        if (json_array_append_new(q->rows, o) != 0) {
            q->oom = 1;
            return 1;
        }
        break;
    }
    }
    return 0;
}


/* The experiment's summary line(s) and the column header of the table. */
static void table_header(qctx *q, nas_store *st, const nas_store_experiment *e, int pareto,
                         int n_front, const nas_config *ocfg)
{
    FILE *f = q->out;
    int n_cnt[2] = {0, 0};
    nas_error cerr;
    if (nas_store_trial_foreach(st, e->id, NAS_STORE_ORDER_ID, 0, count_rejected, n_cnt,
                                &cerr) != NAS_OK)
        n_cnt[0] = n_cnt[1] = 0;
    int n_rej = n_cnt[0];
    fprintf(f, "experiment '%s' (id %lld, %s, strategy %s): %d of %d trials finished "
            "(%d done, %d failed), %d unfinished",
            e->name, (long long)e->id, e->status, e->strategy, e->n_done - n_rej + e->n_failed,
            e->trials_budget, e->n_done - n_rej, e->n_failed,
            e->n_pending + e->n_running + e->n_interrupted);
    if (n_rej > 0)
        fprintf(f, "; %d rejected by constraints.latency_ms before training", n_rej);
    if (n_cnt[1] > 0)
        fprintf(f, "; %d infeasible (trained, but over a constraint: no score, ranked after the "
                "feasible trials)", n_cnt[1]);
    if (e->n_diverged > 0) /* issue 22 */
        fprintf(f, "; %d diverged (status 'diverged': done, but train_loss not finite or "
                "> 23.03, or val_accuracy at chance level)",
                e->n_diverged);
    fputc('\n', f);
    if (pareto) {
        fprintf(f, "Pareto front: %d trial(s) under", n_front);
        for (int k = 0; k < ocfg->n_objectives; k++)
            fprintf(f, "%s %s (%s)", k ? "," : "", ocfg->objectives[k].metric,
                    ocfg->objectives[k].maximize ? "max" : "min");
        fprintf(f, "%s\n", ocfg->constraints.latency_ms > 0 || ocfg->constraints.mmacs > 0 ||
                                   ocfg->constraints.params > 0
                               ? "; feasible trials only"
                               : "");
    }
    if (q->n_ft > 0)
        fprintf(f, "%d final training(s) recorded (`nas show TRIAL` lists them); final_test: "
                "test accuracy of the trial's latest full `nas train`\n",
                q->n_ft);
    nas__report_os_table_note(f, &q->os); /* issue 32 */
    fprintf(f, "%4s %6s  %-11s %8s %8s %11s %8s %10s %8s", "rank", "trial", "status", "val_acc",
            "test_acc", "macs", "params", "latency_ms", "train_s");
    nas__report_os_table_header(f, &q->os);
    if (q->n_ft > 0)
        fprintf(f, " %10s", "final_test");
    if (q->any_fid)
        fprintf(f, " %9s", "fidelity");
    if (q->zc) {
        char name[64];
        snprintf(name, sizeof name, "zc_%s", q->zc);
        fprintf(f, " %12s", name);
    }
    fprintf(f, "  %-*s%s\n", q->any_device ? q->geno_w : 0, "genotype",
            q->any_device ? "  device" : "");
}

/* The table's column widths: a pass over the rows it will print. */
static void table_measure(qctx *q, nas_store *st, int64_t exp_id, const nas_report_trials_opts *o,
                          const nas_store_trial *front, int n_front)
{
    nas_error err;
    q->geno_w = (int)strlen("genotype");
    if (o->pareto)
        for (int i = 0; i < n_front && (o->limit <= 0 || q->min_fid > 0 || i < o->limit); i++)
            measure_row(q, &front[i]);
    else if (nas_store_trial_foreach_min(st, exp_id, NAS_STORE_ORDER_RANK, o->limit, q->min_fid,
                                         measure_row, q, &err) != NAS_OK)
        q->any_device = 0;
}

/* The rows (and for JSON the array around them). */
static int write_rows(qctx *q, nas_store *st, int64_t exp_id, const nas_report_trials_opts *o,
                      const nas_store_trial *front, int n_front, nas_error *err)
{
    int rc = NAS_OK;
    if (q->format == NAS_REPORT_JSON && !(q->rows = json_array()))
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    if (o->pareto)
        for (int i = 0; i < n_front && !q->oom && !print_row(q, &front[i]); i++)
            ;
    else
        rc = nas_store_trial_foreach_min(st, exp_id, NAS_STORE_ORDER_RANK, o->limit, q->min_fid,
                                         print_row, q, err);
    if (rc == NAS_OK && q->oom)
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory");
    if (rc == NAS_OK && q->format == NAS_REPORT_JSON) {
        json_dumpf(q->rows, q->out, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', q->out);
    }
    json_decref(q->rows);
    q->rows = NULL;
    return rc;
}

int nas_report_trials(nas_store *st, const nas_report_trials_opts *o, FILE *out, nas_error *err)
{
    nas_store_experiment e;
    int rc = nas_store_experiment_find(st, o->experiment, &e, err);
    if (rc != NAS_OK)
        return rc;
    nas_store_trial *front = NULL;
    int n_front = 0;
    nas_config ocfg;
    if (o->pareto) { /* issue 6: the front under the experiment's objectives */
        rc = nas_store_experiment_objectives(st, e.id, &ocfg, err);
        if (rc == NAS_OK)
            rc = nas_store_pareto(st, e.id, ocfg.objectives, ocfg.n_objectives, &front, &n_front,
                                  err);
        if (rc != NAS_OK) {
            nas_error_prefix(err, "--pareto");
            return rc;
        }
    }
    qctx q = {0};
    q.out = out;
    q.format = o->format;
    q.min_fid = o->min_fidelity;
    q.limit = o->limit;
    q.st = st;
    q.zc = o->zero_cost && o->zero_cost[0] ? o->zero_cost : NULL;
    nas_store_final_training *ft = NULL;
    rc = nas_store_final_training_list(st, e.id, -1, &ft, &q.n_ft, err);
    q.ft = ft;
    if (rc == NAS_OK)
        rc = nas__report_os_load(st, e.id, &q.os, err); /* issue 32 */
    if (rc == NAS_OK && q.format == NAS_REPORT_TABLE) {
        table_measure(&q, st, e.id, o, front, n_front);
        table_header(&q, st, &e, o->pareto, n_front, &ocfg);
    } else if (rc == NAS_OK && q.format == NAS_REPORT_CSV) {
        fprintf(out, "rank,trial,genotype,status,val_accuracy,test_accuracy,train_loss,macs,"
                "params,latency_ms,train_seconds,epochs,device,attempt,error,device_name,"
                "device_cc,flag,final_test_accuracy,final_runs,fidelity");
        nas__report_os_csv_header(out, &q.os); /* issue 32: after fidelity, before zc_ */
        fprintf(out, "%s%s\n", q.zc ? ",zc_" : "", q.zc ? q.zc : "");
    }
    if (rc == NAS_OK)
        rc = write_rows(&q, st, e.id, o, front, n_front, err);
    free(front);
    free(ft);
    nas__report_os_free(&q.os);
    return rc == NAS_OK ? nas__report_flush(out, err) : rc;
}

/* ---- nas show ------------------------------------------------------------------ */

static void line_str(FILE *f, const char *name, const char *v)
{
    fprintf(f, "%-14s %s\n", name, *v ? v : "-");
}

static void line_num(FILE *f, const char *name, double v, const char *fmt)
{
    fprintf(f, "%-14s ", name);
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fprintf(f, "-");
    fputc('\n', f);
}

static void line_int(FILE *f, const char *name, int64_t v)
{
    if (v >= 0)
        fprintf(f, "%-14s %lld\n", name, (long long)v);
    else
        fprintf(f, "%-14s -\n", name);
}

static void show_fields(FILE *f, const nas_store_trial *t, const nas_store_experiment *e,
                        const char *weights)
{
    char buf[NAS_NAME_MAX + 64];
    line_int(f, "trial", t->id);
    snprintf(buf, sizeof buf, "%s (id %lld, %s)", e->name, (long long)e->id, e->status);
    line_str(f, "experiment", buf);
    line_str(f, "genotype", t->genotype);
    line_str(f, "arch_key", t->arch_key);
    const char *picks = strchr(t->genotype, ' '); /* issue 33: " lr=0.1 ..." words */
    if (picks) {
        char rbuf[NAS_GENOTYPE_STR_MAX + 32];
        snprintf(rbuf, sizeof rbuf, "%s (recipe choices of the search)", picks + 1);
        line_str(f, "recipe", rbuf);
    }
    line_str(f, "status", nas_trial_status_name(t->status));
    /* issue 22: "diverged" (the reason is in error); a done trial over a
     * constraint "rejected" or "infeasible", as nas query and the report */
    line_str(f, "flag", t->status == NAS_TRIAL_DONE ? nas__report_flag(t) : t->flag);
    line_str(f, "error", t->error);
    line_str(f, "proposed_by", t->proposed_by);
    line_int(f, "attempt", t->attempt);
    line_int(f, "worker", t->worker);
    line_str(f, "device", t->device);
    line_str(f, "device_name", t->device_name); /* issue 7: GPU name or CPU model */
    line_str(f, "device_cc", t->device_cc);     /* GPU compute capability */
    line_str(f, "created_at", t->created_at);
    line_str(f, "started_at", t->started_at);
    line_str(f, "finished_at", t->finished_at);
    line_num(f, "val_accuracy", t->val_accuracy, "%.6f");
    line_num(f, "test_accuracy", t->test_accuracy, "%.6f");
    line_num(f, "train_loss", t->train_loss, "%.6f");
    line_int(f, "macs", t->macs);
    line_int(f, "params", t->params);
    line_num(f, "latency_ms", t->latency_ms, "%.4f");
    line_num(f, "train_seconds", t->train_seconds, "%.2f");
    line_int(f, "epochs", t->epochs);
    line_num(f, "score", t->score, "%.6g");
    line_str(f, "weights", weights);
}

/* The trial's final trainings, oldest first (docs/export.md). */
static void show_final(FILE *f, const nas_store_final_training *ft, int n_ft)
{
    if (n_ft == 0)
        line_str(f, "final_training", "");
    for (int i = 0; i < n_ft; i++) {
        const nas_store_final_training *x = &ft[i];
        char acc[32] = "-";
        if (isfinite(x->test_accuracy))
            snprintf(acc, sizeof acc, "%.4f", x->test_accuracy);
        fprintf(f, "%-14s %lld: test_accuracy %s (%s, %d epoch(s), %lld train images, augment "
                "%s, %s backend, %.0f s) %s\n",
                "final_training", (long long)x->id, acc,
                nas_store_final_training_is_full(x) ? "full" : "proxy rerun", x->epochs,
                (long long)x->train_images, x->augment, x->backend,
                isfinite(x->train_seconds) ? x->train_seconds : 0.0, x->created_at);
        fprintf(f, "%-14s %s\n", "", x->recipe);
    }
}

/* Issue 33: the trial's rung history in a multi-fidelity search
 * (store/rung.c), one line per rung in budget order: "rung  BUDGET:
 * val_accuracy A, loss L, S s"; nothing for a trial without rungs (every
 * trial of a search without a scheduler). Errors: the store's. */
static int show_rungs(FILE *f, nas_store *st, const nas_store_trial *t, nas_error *err)
{
    nas_store_rung *v = NULL;
    int n = 0;
    int rc = nas_store_rung_list(st, t->experiment_id, &v, &n, err);
    for (int i = 0; rc == NAS_OK && i < n; i++) {
        if (v[i].trial_id != t->id)
            continue;
        fprintf(f, "%-14s %lld: val_accuracy ", "rung", (long long)v[i].fidelity);
        fprintf(f, isfinite(v[i].val_accuracy) ? "%.4f" : "-", v[i].val_accuracy);
        fprintf(f, ", loss ");
        fprintf(f, isfinite(v[i].loss) ? "%.4f" : "-", v[i].loss);
        fprintf(f, ", ");
        fprintf(f, isfinite(v[i].seconds) ? "%.1f s\n" : "- s\n", v[i].seconds);
    }
    free(v);
    return rc;
}

/* Issue 31: one "zero_cost" line per proxy the experiment's warm-up or
 * move proposal scored the trial's canonical key with (nothing when none). */
static void show_zc_line(void *ctx, const char *proxy, double score)
{
    FILE *f = ctx;
    char name[64];
    snprintf(name, sizeof name, "zc_%s", proxy);
    line_num(f, name, score, "%.6g");
}

/* The kept weights line of `nas show`: `w` as recorded, or the database's
 * own DB.weights/<name> when that exists and is another file (a database
 * copied or moved with its folder keeps the original's paths in its rows;
 * nas export reads the own file then, and pruning deletes only it). */
static void shown_weights(const nas_store *st, char *w, size_t n)
{
    if (!w[0])
        return;
    const char *base = strrchr(w, '/');
    char own[NAS_PATH_MAX + 32];
    struct stat so, sw;
    int k = snprintf(own, sizeof own, "%s.weights/%s", nas_store_path(st), base ? base + 1 : w);
    if (k < 0 || k >= (int)sizeof own || stat(own, &so) != 0)
        return;
    if (stat(w, &sw) == 0 && sw.st_dev == so.st_dev && sw.st_ino == so.st_ino)
        return;
    char line[2 * NAS_PATH_MAX + 64];
    snprintf(line, sizeof line, "%s (this database's own; recorded as %s)", own, w);
    snprintf(w, n, "%s", line);
}

int nas_report_trial(nas_store *st, int64_t trial_id, FILE *out, nas_error *err)
{
    nas_store_trial *t = malloc(sizeof *t);
    nas_store_experiment e;
    int rc = t ? nas_store_trial_get(st, trial_id, t, err)
               : nas_error_set(err, NAS_ENOMEM, "out of memory");
    if (rc == NAS_OK)
        rc = nas_store_experiment_get(st, t->experiment_id, &e, err);
    /* issue 22: its kept weights and its final trainings (`nas train --db`) */
    char weights[2 * NAS_PATH_MAX + 64] = "";
    nas_store_final_training *ft = NULL;
    int n_ft = 0;
    nas_error werr;
    if (rc == NAS_OK &&
        nas_store_trial_weights_get(st, trial_id, weights, sizeof weights, &werr) != NAS_OK)
        weights[0] = '\0';
    shown_weights(st, weights, sizeof weights);
    if (rc == NAS_OK)
        rc = nas_store_final_training_list(st, -1, trial_id, &ft, &n_ft, err);
    if (rc == NAS_OK) {
        show_fields(out, t, &e, weights);
        rc = nas__report_os_show(out, st, t, err); /* issue 32 */
        if (rc == NAS_OK)
            rc = nas_store_zc_foreach(st, t->experiment_id, t->arch_key, show_zc_line, out, err);
        if (rc == NAS_OK)
            rc = show_rungs(out, st, t, err); /* issue 33 */
    }
    if (rc == NAS_OK)
        show_final(out, ft, n_ft);
    free(ft);
    free(t);
    return rc;
}
