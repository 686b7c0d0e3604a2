/*
 * search/replay.c - a resumed or extended search replays the experiment's
 * stored trials through the strategy, in id order, with the observations
 * the schedule made before each proposal (search/controller.c's header
 * comment): finished trials are observed in their turn, unfinished ones
 * (pending, running, interrupted) are re-queued. Each trial is replayed
 * under the key (issue 21) and the schedule width (issue 22) it was
 * proposed with; the widths of the earlier runs are kept here too
 * (strategy_state "controller.workers").
 *
 * Issue 29: a resume is O(n) in the stored trials. They are read row by
 * row; each replayed proposal's dedupe check looks its key up in hash sets
 * of the earlier trials' keys (search/key_set.h); an experiment whose
 * finished trials already fill its budget is only counted, without
 * replaying the strategy (nas_search_run then has nothing to do).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "search/controller_impl.h"
#include "search/key_set.h"
#include "nas/array.h"
#include "nas/layers.h" /* nas_space_counts_get */

/* Stored under strategy_state "controller.workers": the schedule width of
 * the last run, so a resume with another width says so. */
#define WIDTH_STATE "controller.workers"

/* ---- the stored trials -------------------------------------------------------- */

/* Issue 29: the keys of c->hist[0 .. n), both kinds, in hash sets that
 * grow with the replay (c->hist_n only grows while one history is
 * replayed), so a dedupe check costs O(1) instead of a scan of the
 * history, and a resume O(n) instead of O(n^2). */
struct hist_index {
    const hist_entry *base; /* the history indexed (c->hist) */
    int n;                  /* its first n entries are in the sets */
    nas__key_set func, nb201;
};

void nas__ctl_hist_index_free(ctl *c)
{
    if (!c->hist_index)
        return;
    nas__key_set_free(&c->hist_index->func);
    nas__key_set_free(&c->hist_index->nb201);
    free(c->hist_index);
    c->hist_index = NULL;
}

/* Bring c->hist_index up to c->hist[0 .. c->hist_n) (started afresh for
 * another history or a shorter prefix). -1 when out of memory. */
static int hist_index_update(ctl *c)
{
    struct hist_index *x = c->hist_index;
    if (x && (x->base != c->hist || x->n > c->hist_n)) {
        nas__ctl_hist_index_free(c);
        x = NULL;
    }
    if (!x) {
        if (!(x = calloc(1, sizeof *x)))
            return -1;
        x->base = c->hist;
        c->hist_index = x;
    }
    for (; x->n < c->hist_n; x->n++)
        if (nas__key_set_add(&x->func, c->hist[x->n].key) != 0 ||
            nas__key_set_add(&x->nb201, c->hist[x->n].key_nb201) != 0)
            return -1;
    return 0;
}

/* Known among the trials before the one replayed, under the key that
 * trial was proposed with (c->hist_nb201: NAS-Bench-201's string, set on
 * the space; see replay_trial). Out of memory for the index falls back to
 * a scan. */
int nas__ctl_known_in_history(void *ctx, const nas_genotype *g)
{
    ctl *c = ctx;
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(c->space, g, key, sizeof key);
    if (hist_index_update(c) == 0)
        return nas__key_set_has(c->hist_nb201 ? &c->hist_index->nb201 : &c->hist_index->func,
                                key);
    for (int i = 0; i < c->hist_n; i++)
        if (strcmp(c->hist_nb201 ? c->hist[i].key_nb201 : c->hist[i].key, key) == 0)
            return 1;
    return 0;
}

/* The last trial id proposed under NAS-Bench-201's string (strategy_state
 * NAS_STORE_NB201_KEYS_STATE, written by schema migration 3); 0 if none. */
static int read_nb201_until(ctl *c, int64_t *until, nas_error *err)
{
    void *blob = NULL;
    size_t size = 0;
    nas_error gerr;
    *until = 0;
    int rc = nas_store_strategy_state_get(c->st, c->exp, NAS_STORE_NB201_KEYS_STATE, &blob, &size,
                                          &gerr);
    if (rc == NAS_ENOTFOUND)
        return NAS_OK;
    if (rc != NAS_OK) {
        *err = gerr;
        return rc;
    }
    char text[32] = "";
    if (blob && size < sizeof text)
        memcpy(text, blob, size);
    free(blob);
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (!size || !end || *end != '\0' || v < 0)
        return nas_error_set(err, NAS_EDB,
                             "database %s: strategy_state '%s' of experiment %lld is not a trial "
                             "id",
                             nas_store_path(c->st), NAS_STORE_NB201_KEYS_STATE, (long long)c->exp);
    *until = v;
    return NAS_OK;
}

/* ---- the schedule widths of earlier runs (issue 22) ---------------------------- */

/*
 * The schedule widths of the experiment's earlier runs (issue 22), kept
 * under strategy_state WIDTH_STATE as text: "FROM:N,FROM:N,..." - from
 * trial ordinal FROM (1-based, trials in id order) on, trials were proposed
 * with N workers; a plain "N" (nas before issue 22) is "1:N". *prev gets the
 * last width (0: none stored); c->w_from/w_n the whole history.
 */
int nas__ctl_width_load(ctl *c, int *prev, nas_error *err)
{
    void *blob = NULL;
    size_t size = 0;
    nas_error gerr;
    *prev = 0;
    c->n_w = 0;
    int rc = nas_store_strategy_state_get(c->st, c->exp, WIDTH_STATE, &blob, &size, &gerr);
    if (rc == NAS_ENOTFOUND)
        return NAS_OK;
    if (rc != NAS_OK) {
        *err = gerr;
        return rc;
    }
    char text[1024];
    snprintf(text, sizeof text, "%.*s", (int)(size < sizeof text ? size : sizeof text - 1),
             (const char *)blob);
    free(blob);
    for (char *p = text, *end; *p && c->n_w < (int)(sizeof c->w_n / sizeof c->w_n[0]);) {
        long from = 1, v = strtol(p, &end, 10);
        if (*end == ':') {
            from = v;
            v = strtol(end + 1, &end, 10);
        }
        if (end == p || (*end && *end != ',') || v < 1 || v > 1000000 || from < 1)
            return nas_error_set(err, NAS_EFORMAT,
                                 "database %s: strategy_state '%s' of experiment %lld is not a "
                                 "list of worker counts: '%s'",
                                 nas_store_path(c->st), WIDTH_STATE, (long long)c->exp, text);
        c->w_from[c->n_w] = (int)from;
        c->w_n[c->n_w++] = (int)v;
        p = *end ? end + 1 : end;
    }
    *prev = c->n_w > 0 ? c->w_n[c->n_w - 1] : 0;
    return NAS_OK;
}

/* The width trial ordinal k was proposed with (`dflt` when none stored). */
static int width_at(const ctl *c, int k, int dflt)
{
    int w = dflt;
    for (int i = 0; i < c->n_w; i++)
        if (c->w_from[i] <= k)
            w = c->w_n[i];
    return w;
}

/* Add this run's width to the history when it differs from the last one:
 * the proposals from trial ordinal n_hist + 1 on use it. */
int nas__ctl_width_save(ctl *c, nas_error *err)
{
    if (c->n_w > 0 && c->w_n[c->n_w - 1] == c->width)
        return NAS_OK;
    int cap = (int)(sizeof c->w_n / sizeof c->w_n[0]);
    if (c->n_w == cap) { /* keep the first entry, drop the oldest change */
        memmove(&c->w_from[1], &c->w_from[2], (size_t)(cap - 2) * sizeof c->w_from[0]);
        memmove(&c->w_n[1], &c->w_n[2], (size_t)(cap - 2) * sizeof c->w_n[0]);
        c->n_w--;
    }
    c->w_from[c->n_w] = c->n_w == 0 ? 1 : c->n_hist + 1;
    c->w_n[c->n_w++] = c->width;
    char text[1024];
    size_t len = 0;
    for (int i = 0; i < c->n_w && len < sizeof text; i++) {
        int w = snprintf(text + len, sizeof text - len, "%s%d:%d", i ? "," : "", c->w_from[i],
                         c->w_n[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    return nas_store_strategy_state_put(c->st, c->exp, WIDTH_STATE, text, strlen(text), err);
}

/* ---- the replay --------------------------------------------------------------- */

/* nas_store_trial_foreach's callback: append stored trial t to the
 * hist_vec being read (issue 29: one row at a time, not a list of every
 * stored row beside h). Returns 1 (stop) when out of memory. */
typedef struct load_ctx {
    hist_vec *h;
    int cap;
    nas_error oom;
} load_ctx;

/* Stored trial t as a history entry (no keys yet). */
static void fill_entry(hist_entry *e, const nas_store_trial *t)
{
    e->id = t->id;
    e->status = t->status;
    snprintf(e->geno, sizeof e->geno, "%s", t->genotype);
    e->key[0] = e->key_nb201[0] = '\0';
    e->score = t->score;
    e->val = t->val_accuracy;
    e->diverged = strcmp(t->flag, "diverged") == 0;
    e->promo_failed = 0;
    long long to = 0; /* issue 29: a failed promotion (NAS__CTL_PROMO_FAILED) */
    int end = 0;      /* the whole prefix matched (not "... interrupted") */
    if (e->status == NAS_TRIAL_DONE &&
        sscanf(t->error, "promotion to %lld failed:%n", &to, &end) == 1 && end > 0 && to > 0)
        e->promo_failed = to;
    e->promo_stopped = 0;
    if (e->status == NAS_TRIAL_DONE &&
        sscanf(t->error, "promotion to %lld interrupted%n", &to, &end) == 1 && end > 0 && to > 0)
        e->promo_stopped = to;
    nas_store_trial_result(t, &e->res);
}

static int load_one(void *vctx, const nas_store_trial *t)
{
    load_ctx *lc = vctx;
    hist_vec *h = lc->h;
    if (nas_array_grow(&h->v, h->n, &lc->cap, 256, sizeof *h->v, &lc->oom) != NAS_OK)
        return 1;
    fill_entry(&h->v[h->n++], t);
    return 0;
}

/* The stored trials into h (no keys yet) and room for the re-queued ones
 * (c->requeue). Errors: the store's, NAS_ENOMEM. */
static int load_trials(ctl *c, hist_vec *h, nas_error *err)
{
    load_ctx lc = {.h = h};
    int rc = nas_store_trial_foreach(c->st, c->exp, NAS_STORE_ORDER_ID, 0, load_one, &lc, err);
    if (rc == NAS_OK && lc.oom.code)
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading the trials");
    if (rc != NAS_OK)
        return rc;
    c->requeue = calloc((size_t)(h->n > 0 ? h->n : 1), sizeof *c->requeue);
    if (!c->requeue)
        return nas_error_set(err, NAS_ENOMEM, "out of memory reading the trials");
    return NAS_OK;
}

/* Both keys of every trial of h (see nas__ctl_replay_load). */
static int load_keys(ctl *c, hist_vec *h, int64_t *nb201_until, nas_error *err)
{
    /* Issue 21: trials up to `nb201_until` (schema migration 3 records it)
     * were proposed by an older nas whose key was NAS-Bench-201's string;
     * their proposals are replayed with that key, so the replay makes the
     * same dedupe decisions, and the same proposals, as the run that made
     * them. Later trials, and the live search, use the functional key. */
    int rc = read_nb201_until(c, nb201_until, err);
    if (rc != NAS_OK)
        return rc;
    for (int i = 0; i < h->n; i++) {
        nas_genotype g;
        nas_error perr;
        if (nas_space_parse(c->space, h->v[i].geno, &g, &perr) != NAS_OK)
            continue; /* reported by replay_trial */
        nas_space_set_key_kind(c->space, NAS_KEY_FUNCTION);
        nas_space_key(c->space, &g, h->v[i].key, sizeof h->v[i].key);
        nas_space_nb201_str(&g, h->v[i].key_nb201, sizeof h->v[i].key_nb201);
    }
    return NAS_OK;
}

int nas__ctl_replay_load(ctl *c, hist_vec *h, int64_t *nb201_until, nas_error *err)
{
    *nb201_until = 0;
    int rc = load_trials(c, h, err);
    return rc != NAS_OK ? rc : load_keys(c, h, nb201_until, err);
}

/* Replay stored trial i of h: the observations the schedule makes before
 * its proposal, the proposal (counted in *mismatch when it differs from
 * the stored genotype; none once the strategy was *exhausted), then its
 * stored outcome (accounted, and observed in its turn) or its re-queueing.
 * Errors: NAS_EFORMAT (a genotype this space cannot read), the strategy's,
 * NAS_ENOMEM. */
static int replay_trial(ctl *c, const hist_vec *h, int i, int64_t nb201_until, int *exhausted,
                        int *mismatch, nas_error *err)
{
    hist_entry *e = &h->v[i];
    nas_genotype stored;
    nas_error perr;
    if (nas_space_parse(c->space, e->geno, &stored, &perr) != NAS_OK)
        return nas_error_set(err, NAS_EFORMAT,
                             "database %s: trial %lld has genotype '%s' that this space "
                             "cannot read: %s",
                             nas_store_path(c->st), (long long)e->id, e->geno, perr.msg);
    c->hist_nb201 = e->id <= nb201_until;
    nas_space_set_key_kind(c->space, c->hist_nb201 ? NAS_KEY_NB201 : NAS_KEY_FUNCTION);
    /* the observations the schedule makes before proposal i + 1, under
     * the width it was made with (issue 22: workers.count may change) */
    c->width = width_at(c, i + 1, c->width);
    nas__ctl_drain(c, DRAIN_REPLAY, err);
    if (!*exhausted) {
        c->hist = h->v;
        c->hist_n = i;
        nas_genotype g;
        char key[NAS_GENOTYPE_STR_MAX];
        nas_error pe;
        int prc = nas__ctl_propose_new(c, nas__ctl_known_in_history, &g, key, &pe);
        if (prc == NAS_EINFEASIBLE)
            *exhausted = 1;
        else if (prc != NAS_OK) {
            *err = pe;
            return prc;
        }
        if (prc != NAS_OK || strcmp(key, c->hist_nb201 ? e->key_nb201 : e->key) != 0)
            (*mismatch)++;
    } else {
        (*mismatch)++;
    }
    int rc = NAS_OK;
    if (e->status == NAS_TRIAL_DONE || e->status == NAS_TRIAL_FAILED) {
        nas__ctl_account(c, e->id, e->geno, &e->res, e->score, e->diverged);
        if (c->cfg->workers.ordered)
            rc = nas__ctl_pend_push(c, e->id, &stored, &e->res, err);
        else /* observed at once, as it was then */
            nas__ctl_observe(c, &stored, &e->res, DRAIN_REPLAY, err);
    } else {
        c->requeue[c->nrequeue++] = *e;
        rc = nas__ctl_pend_push(c, e->id, &stored, NULL, err);
    }
    return rc;
}

/* Issue 29: the stored trials that count in the budget (done and failed
 * ones, latency rejections not counted, as nas__ctl_account counts), read
 * one row at a time. */
typedef struct count_ctx {
    int finished;
} count_ctx;

static int count_one(void *vctx, const nas_store_trial *t)
{
    count_ctx *cc = vctx;
    if (t->status == NAS_TRIAL_DONE || t->status == NAS_TRIAL_FAILED) {
        nas_trial_result res;
        nas_store_trial_result(t, &res);
        cc->finished += !nas__ctl_rejected(&res);
    }
    return 0;
}

/* A finished experiment (its trials fill the budget): count its trials,
 * the best and the Pareto front as the replay would, without the strategy
 * (no proposals, no observations: nas_search_run then has nothing to do),
 * one stored row at a time: a history of every trial (2.3 KB each) made
 * the resume of a 30,000-trial search touch 70 MB for nothing. Unfinished
 * trials are listed in c->requeue for the counts. */
typedef struct counts_ctx {
    ctl *c;
    int n;   /* rows seen */
    int cap; /* of c->requeue */
    nas_error oom;
} counts_ctx;

static int count_stored(void *vctx, const nas_store_trial *t)
{
    counts_ctx *cc = vctx;
    ctl *c = cc->c;
    hist_entry e;
    fill_entry(&e, t);
    cc->n++;
    if (e.status == NAS_TRIAL_DONE || e.status == NAS_TRIAL_FAILED) {
        nas__ctl_account(c, e.id, e.geno, &e.res, e.score, e.diverged);
        return 0;
    }
    if (nas_array_grow(&c->requeue, c->nrequeue, &cc->cap, 16, sizeof *c->requeue, &cc->oom) !=
        NAS_OK)
        return 1;
    c->requeue[c->nrequeue++] = e;
    return 0;
}

/* 1 when experiment c->exp is finished and has been counted (count_stored;
 * c->n_hist set), 0 when it has trials to run (nothing counted), or an
 * error (negative: the store's, NAS_ENOMEM). */
static int replay_counts_only(ctl *c, nas_error *err)
{
    count_ctx k = {0};
    int rc = nas_store_trial_foreach(c->st, c->exp, NAS_STORE_ORDER_ID, 0, count_one, &k, err);
    if (rc != NAS_OK)
        return -rc;
    if (k.finished < c->budget)
        return 0;
    counts_ctx cc = {.c = c};
    rc = nas_store_trial_foreach(c->st, c->exp, NAS_STORE_ORDER_ID, 0, count_stored, &cc, err);
    if (rc == NAS_OK && cc.oom.code)
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading the trials");
    if (rc != NAS_OK)
        return -rc;
    c->n_hist = cc.n;
    return 1;
}

/* Stored under strategy_state ROUNDS_STATE: the strategy's round log
 * (nas_strategy_round_log), so a replay need not train NAO's rounds again. */
#define ROUNDS_STATE "strategy.rounds"

/* Issue 29: hand the strategy the stored proposals and the round log of
 * the earlier runs (nas_strategy_replay_hint). Best effort: without them
 * the replay trains every round, as before. */
static void replay_hint(ctl *c, const hist_vec *h)
{
    void *blob = NULL;
    size_t size = 0;
    nas_error gerr;
    if (nas_store_strategy_state_get(c->st, c->exp, ROUNDS_STATE, &blob, &size, &gerr) != NAS_OK)
        return;
    char *log = malloc(size + 1);
    nas_genotype *g = malloc((size_t)(h->n > 0 ? h->n : 1) * sizeof *g);
    int n = 0;
    if (log && g && blob) {
        memcpy(log, blob, size);
        log[size] = '\0';
        for (; n < h->n && nas_space_parse(c->space, h->v[n].geno, &g[n], &gerr) == NAS_OK; n++)
            ;
        (void)nas_strategy_replay_hint(c->strat, g, n, log, &gerr);
    }
    free(blob);
    free(log);
    free(g);
}

void nas__ctl_strategy_log_save(ctl *c)
{
    if (!c->strat || !c->st || c->exp <= 0)
        return;
    char *log = nas_strategy_round_log(c->strat);
    nas_error serr;
    if (log)
        (void)nas_store_strategy_state_put(c->st, c->exp, ROUNDS_STATE, log, strlen(log), &serr);
    free(log);
}

int nas__ctl_replay(ctl *c, int *mismatch, nas_error *err)
{
    *mismatch = 0;
    int done = replay_counts_only(c, err); /* issue 29: no history, no keys, no strategy */
    if (done != 0)
        return done > 0 ? NAS_OK : -done;
    hist_vec h = {0};
    int64_t nb201_until = 0;
    int rc = load_trials(c, &h, err);
    int exhausted = 0;
    if (rc == NAS_OK && (rc = load_keys(c, &h, &nb201_until, err)) == NAS_OK) {
        replay_hint(c, &h);
        for (int i = 0; i < h.n && rc == NAS_OK; i++)
            rc = replay_trial(c, &h, i, nb201_until, &exhausted, mismatch, err);
        (void)nas_strategy_replay_hint(c->strat, NULL, 0, NULL, NULL);
    }
    c->hist = NULL;
    c->hist_n = 0;
    c->n_hist = h.n;
    c->hist_nb201 = 0;
    nas_space_set_key_kind(c->space, NAS_KEY_FUNCTION);
    free(h.v);
    return rc;
}

/* ---- the budget against the space (issue 29) ----------------------------------- */

void nas__ctl_warn_budget(ctl *c)
{
    nas_space_counts cnt;
    if (c->finished >= c->budget || nas_space_counts_get(c->space, &cnt) != NAS_OK ||
        !cnt.keys_counted || !cnt.keys_exact || (uint64_t)c->budget <= cnt.keys)
        return;
    nas__ctl_say(c,
                 "nas: warning: search.trials = %d is more than the %llu distinct architectures "
                 "of this space (`nas space %s` counts them): the search can run at most %llu "
                 "trials and ends 'exhausted' when the strategy has tried them all (the ETA "
                 "assumes %d)",
                 c->budget, (unsigned long long)cnt.keys, c->cfg->path[0] ? c->cfg->path : "CONF",
                 (unsigned long long)cnt.keys, c->budget);
}
