/*
 * store/query.c - read-only queries used by `nas report`, `nas query
 * --pareto`, `nas export` and the controller's replay (see nas/store.h,
 * "read-only queries"). The Pareto front comes from evaluator/pareto.c,
 * below the store, so the store never calls into search/. Built only
 * on the public store API, except the config text, which the store does
 * not hand out: it is read over the store's own connection
 * (store/store_impl.h).
 */
#include <math.h>   /* isfinite, NAN */
#include <stdio.h>
#include <stdlib.h> /* malloc, realloc, free, qsort */
#include <string.h>
#include <sqlite3.h> /* the config text query */
#include "nas/array.h"
#include "nas/store.h"
#include "store_impl.h"
#include "nas/evaluator.h" /* nas_pareto_front, nas_objective_value */

int nas_store_experiment_conf_text(nas_store *st, int64_t id, char **out, nas_error *err)
{
    *out = NULL;
    const char *path = nas_store_path(st);
    sqlite3 *db = nas__store_sqlite(st); /* the store's own (store/store_impl.h) */
    sqlite3_stmt *s = NULL;
    int rc;
    if (sqlite3_prepare_v2(db, "SELECT conf_text FROM experiment WHERE id = ?1", -1, &s, NULL) !=
        SQLITE_OK)
        return nas_error_set(err, NAS_EDB, "database %s: cannot read the config text: %s", path,
                             sqlite3_errmsg(db));
    sqlite3_bind_int64(s, 1, id);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(s, 0);
        size_t len = text ? strlen(text) : 0;
        *out = malloc(len + 1);
        if (!*out) {
            rc = nas_error_set(err, NAS_ENOMEM, "database %s: out of memory", path);
        } else {
            memcpy(*out, text ? text : "", len + 1);
            rc = NAS_OK;
        }
    } else if (step == SQLITE_DONE) {
        rc = nas_error_set(err, NAS_ENOTFOUND, "database %s: no experiment %lld", path,
                           (long long)id);
    } else {
        rc = nas_error_set(err, NAS_EDB, "database %s: cannot read the config text: %s", path,
                           sqlite3_errmsg(db));
    }
    sqlite3_finalize(s);
    return rc;
}

/* Append `line` (up to and excluding '\n') to buf; 0 when it does not fit. */
static int append(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + n + 1 > cap)
        return 0;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
    return 1;
}

int nas_store_experiment_objectives(nas_store *st, int64_t id, nas_config *cfg, nas_error *err)
{
    nas_config_defaults(cfg);
    char *canon = NULL;
    int rc = nas_store_experiment_canonical(st, id, &canon, err);
    if (rc != NAS_OK)
        return rc;
    /* Rebuild a tiny space.conf from the canonical lines "objectives = (...);"
     * and "constraints.KEY = V;" and let the config parser validate it. */
    char text[4096];
    size_t len = 0;
    const char head[] = "experiment = \"stored\";\n";
    append(text, sizeof text, &len, head, sizeof head - 1);
    const char open[] = "constraints: {\n";
    append(text, sizeof text, &len, open, sizeof open - 1);
    int found = 0, ok = 1;
    for (const char *p = canon; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 12 && strncmp(p, "constraints.", 12) == 0)
            ok &= append(text, sizeof text, &len, p + 12, n - 12) &&
                  append(text, sizeof text, &len, "\n", 1);
        p += n + (e ? 1 : 0);
    }
    append(text, sizeof text, &len, "};\n", 3);
    for (const char *p = canon; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 13 && strncmp(p, "objectives = ", 13) == 0) {
            ok &= append(text, sizeof text, &len, p, n) && append(text, sizeof text, &len, "\n", 1);
            found = 1;
        }
        p += n + (e ? 1 : 0);
    }
    free(canon);
    nas_config parsed;
    nas_error perr;
    if (!found || !ok || nas_config_parse_string(text, "stored config", &parsed, &perr) != NAS_OK)
        return nas_error_set(err, NAS_EFORMAT,
                             "database %s: experiment %lld: cannot read its objectives%s%s",
                             nas_store_path(st), (long long)id, found ? ": " : " (none stored)",
                             found ? perr.msg : "");
    cfg->n_objectives = parsed.n_objectives;
    memcpy(cfg->objectives, parsed.objectives, sizeof cfg->objectives);
    cfg->constraints.latency_ms = parsed.constraints.latency_ms;
    cfg->constraints.mmacs = parsed.constraints.mmacs;
    cfg->constraints.params = parsed.constraints.params;
    return NAS_OK;
}

void nas_store_trial_result(const nas_store_trial *t, nas_trial_result *res)
{
    memset(res, 0, sizeof *res);
    res->status = t->status == NAS_TRIAL_DONE ? NAS_OK : NAS_EWORKER;
    if (res->status != NAS_OK)
        snprintf(res->error, sizeof res->error, "%s",
                 t->error[0] ? t->error : nas_trial_status_name((int)t->status));
    res->val_accuracy = t->val_accuracy;
    res->test_accuracy = isfinite(t->test_accuracy) ? t->test_accuracy : -1;
    res->train_loss = t->train_loss;
    res->macs = t->macs;
    res->params = t->params;
    res->latency_ms = t->latency_ms;
    res->train_seconds = t->train_seconds;
    res->epochs = t->epochs;
}

typedef struct list_ctx {
    nas_store_trial *v;
    int n, cap;
    nas_error oom; /* code NAS_ENOMEM when the list could not grow */
} list_ctx;

static int list_add(void *vctx, const nas_store_trial *t)
{
    list_ctx *c = vctx;
    if (nas_array_grow(&c->v, c->n, &c->cap, 64, sizeof *c->v, &c->oom) != NAS_OK)
        return 1;
    c->v[c->n++] = *t;
    return 0;
}

int nas_store_trial_list(nas_store *st, int64_t exp_id, nas_store_trial **out, int *n,
                         nas_error *err)
{
    *out = NULL;
    *n = 0;
    list_ctx c = {0};
    int rc = nas_store_trial_foreach(st, exp_id, NAS_STORE_ORDER_ID, 0, list_add, &c, err);
    if (rc == NAS_OK && c.oom.code)
        rc = nas_error_set(err, NAS_ENOMEM, "database %s: out of memory listing trials",
                           nas_store_path(st));
    if (rc != NAS_OK) {
        free(c.v);
        return rc;
    }
    *out = c.v;
    *n = c.n;
    return NAS_OK;
}

int nas_store_trial_feasible(const nas_store_trial *t)
{
    return t->status == NAS_TRIAL_DONE && t->has_result && isfinite(t->score);
}

int nas_store_pareto(nas_store *st, int64_t exp_id, const nas_objective *obj, int n_obj,
                     nas_store_trial **out, int *n, nas_error *err)
{
    *out = NULL;
    *n = 0;
    if (!obj || n_obj < 1 || n_obj > NAS_MAX_OBJECTIVES)
        return nas_error_set(err, NAS_EINVAL, "pareto: %d objectives, expected 1..%d", n_obj,
                             NAS_MAX_OBJECTIVES);
    nas_trial_result probe = {.status = NAS_OK, .val_accuracy = 0.5, .latency_ms = 1,
                              .macs = 1, .params = 1};
    int maximize[NAS_MAX_OBJECTIVES];
    for (int k = 0; k < n_obj; k++) {
        if (isnan(nas_objective_value(obj[k].metric, &probe)))
            return nas_error_set(err, NAS_EINVAL,
                                 "pareto: unknown metric \"%s\" (expected val_accuracy, "
                                 "latency_ms, macs or params)",
                                 obj[k].metric);
        maximize[k] = obj[k].maximize;
    }
    nas_store_trial *all = NULL;
    int total = 0;
    int rc = nas_store_trial_list(st, exp_id, &all, &total, err);
    if (rc != NAS_OK)
        return rc;
    /* Candidates: done, feasible, every objective measured. */
    int m = 0;
    double *pts = malloc((size_t)(total > 0 ? total : 1) * (size_t)n_obj * sizeof *pts);
    unsigned char *on = malloc((size_t)(total > 0 ? total : 1));
    if (!pts || !on) {
        free(all);
        free(pts);
        free(on);
        return nas_error_set(err, NAS_ENOMEM, "pareto: out of memory");
    }
    for (int i = 0; i < total; i++) {
        if (!nas_store_trial_feasible(&all[i]))
            continue;
        nas_trial_result res;
        nas_store_trial_result(&all[i], &res);
        int measured = 1;
        for (int k = 0; k < n_obj; k++) {
            double v = nas_objective_value(obj[k].metric, &res);
            measured &= isfinite(v);
            pts[(size_t)m * n_obj + k] = v;
        }
        if (measured)
            all[m++] = all[i]; /* compact in place: m <= i */
    }
    /* Multi-fidelity (issue 17): only the candidates at the highest
     * fidelity any of them reached, the rule of `nas export --best`; a
     * trial stopped at a low rung is not compared with fully trained ones.
     * Without rungs every fidelity is -1 and nothing is dropped. */
    int64_t top_fid = -1;
    for (int i = 0; i < m; i++)
        if (all[i].fidelity > top_fid)
            top_fid = all[i].fidelity;
    int kept = 0;
    for (int i = 0; i < m; i++)
        if (all[i].fidelity == top_fid) {
            memmove(pts + (size_t)kept * n_obj, pts + (size_t)i * n_obj, (size_t)n_obj * sizeof *pts);
            all[kept++] = all[i];
        }
    m = kept;
    int count = nas_pareto_front(pts, m, n_obj, maximize, on);
    int k = 0;
    for (int i = 0; i < m && count > 0; i++)
        if (on[i])
            all[k++] = all[i];
    /* Best first by the first objective, ties by id (insertion sort: fronts are small). */
    for (int i = 1; i < k; i++) {
        nas_store_trial t = all[i];
        nas_trial_result rt;
        nas_store_trial_result(&t, &rt);
        double vt = nas_objective_value(obj[0].metric, &rt);
        int j = i - 1;
        for (; j >= 0; j--) {
            nas_trial_result rj;
            nas_store_trial_result(&all[j], &rj);
            double vj = nas_objective_value(obj[0].metric, &rj);
            int before = obj[0].maximize ? vt > vj : vt < vj;
            if (!(before || (vt == vj && t.id < all[j].id)))
                break;
            all[j + 1] = all[j];
        }
        all[j + 1] = t;
    }
    free(pts);
    free(on);
    if (k == 0) {
        free(all);
        all = NULL;
    }
    *out = all;
    *n = k;
    return NAS_OK;
}
