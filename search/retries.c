/*
 * search/retries.c - issue 4: how often each trial's worker failed
 * transiently (crashed, was killed, froze, broke the protocol), kept in
 * the store so that a resumed run does not grant fresh retries
 * (workers.max_retries counts over every run of the experiment).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h> /* the persisted retry counts */
#include "search/controller_impl.h"

/* The strategy_state row holding them: a JSON object {"<trial id>": n}
 * with n = transient failures (worker crashed, was killed, froze, broke
 * the protocol) of that trial so far, over every run of the experiment. */
#define RETRIES_STATE "controller.retries"

int nas__ctl_retries_get(const ctl *c, int64_t trial)
{
    for (int i = 0; i < c->n_rt; i++)
        if (c->rt_id[i] == trial)
            return c->rt_n[i];
    return 0;
}

static int retries_put_mem(ctl *c, int64_t trial, int n)
{
    for (int i = 0; i < c->n_rt; i++)
        if (c->rt_id[i] == trial) {
            c->rt_n[i] = n;
            return NAS_OK;
        }
    if (c->n_rt == c->cap_rt) {
        int cap = c->cap_rt ? 2 * c->cap_rt : 8;
        int64_t *ids = realloc(c->rt_id, (size_t)cap * sizeof *ids);
        if (!ids)
            return NAS_ENOMEM;
        c->rt_id = ids;
        int *ns = realloc(c->rt_n, (size_t)cap * sizeof *ns);
        if (!ns)
            return NAS_ENOMEM;
        c->rt_n = ns;
        c->cap_rt = cap;
    }
    c->rt_id[c->n_rt] = trial;
    c->rt_n[c->n_rt++] = n;
    return NAS_OK;
}

/* Read the counts a previous run left (none: a new experiment, or no
 * transient failure yet). A row that is not our JSON is an error: it would
 * mean another program wrote the row. */
int nas__ctl_retries_load(ctl *c, nas_error *err)
{
    void *blob = NULL;
    size_t size = 0;
    nas_error gerr;
    int rc = nas_store_strategy_state_get(c->st, c->exp, RETRIES_STATE, &blob, &size, &gerr);
    if (rc == NAS_ENOTFOUND)
        return NAS_OK;
    if (rc != NAS_OK) {
        *err = gerr;
        return rc;
    }
    json_error_t jerr;
    json_t *o = json_loadb(blob, size, 0, &jerr);
    free(blob);
    if (!json_is_object(o)) {
        json_decref(o);
        return nas_error_set(err, NAS_EFORMAT,
                             "database %s: strategy_state '%s' of experiment %lld is not a JSON "
                             "object of retry counts: %s",
                             nas_store_path(c->st), RETRIES_STATE, (long long)c->exp,
                             o ? "not an object" : jerr.text);
    }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        char *end;
        long long id = strtoll(key, &end, 10);
        if (*end || id <= 0 || !json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > 1000000) {
            json_decref(o);
            return nas_error_set(err, NAS_EFORMAT,
                                 "database %s: strategy_state '%s': bad entry \"%s\"",
                                 nas_store_path(c->st), RETRIES_STATE, key);
        }
        if (retries_put_mem(c, id, (int)json_integer_value(v)) != NAS_OK) {
            json_decref(o);
            return nas_error_set(err, NAS_ENOMEM, "out of memory");
        }
    }
    json_decref(o);
    return NAS_OK;
}

/* Record that `trial` has now failed transiently n times: in memory and,
 * in one short write, in the store (before the retry starts, so a
 * controller killed at any later moment resumes with the count). */
int nas__ctl_retries_set(ctl *c, int64_t trial, int n, nas_error *err)
{
    if (retries_put_mem(c, trial, n) != NAS_OK)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    json_t *o = json_object();
    int bad = !o;
    for (int i = 0; i < c->n_rt && !bad; i++) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)c->rt_id[i]);
        bad = json_object_set_new(o, key, json_integer(c->rt_n[i])) != 0;
    }
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!text)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    int rc = nas_store_strategy_state_put(c->st, c->exp, RETRIES_STATE, text, strlen(text), err);
    free(text);
    return rc;
}
