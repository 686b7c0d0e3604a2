/*
 * tests/unit/test_report_query.c - the read-only report queries (store/query.c)
 * and the HTML report (report/report.c) on a database written through the
 * store API with synthetic results: every done trial drawn, the Pareto
 * fronts equal to brute force, failed and infeasible trials listed with
 * their reasons, the config text escaped, nothing loaded from the network,
 * and a stored trial replayed through nas_search_score scoring as stored.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include <cmocka.h>
#include "nas/report.h"
#include "nas/store.h"
#include "nas/search.h"

#define N_TRIALS 40

static const char CONF[] =
    "# report test <script>alert('x')</script> & more\n"
    "experiment = \"report-test\";\n"
    "seed = 9;\n"
    "search: { strategy = \"evolution\"; trials = 41; population = 8; sample_size = 3; };\n"
    "objectives = ({ metric = \"val_accuracy\"; goal = \"max\"; }, { metric = \"latency_ms\"; goal = \"min\"; });\n"
    "constraints: { latency_ms = 2.0; };\n";

typedef struct fx {
    char dir[64];
    char db[128];
    nas_config cfg;
    nas_space *space;
    nas_store *st;
    int64_t exp;
    int64_t ids[N_TRIALS];
    nas_trial_result res[N_TRIALS];
    double score[N_TRIALS];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/nas_test_report_XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/r.db", f->dir);
    nas_error err;
    assert_int_equal(nas_config_parse_string(CONF, "report.conf", &f->cfg, &err), NAS_OK);
    assert_int_equal(nas_space_create(&f->cfg.space, &f->space, &err), NAS_OK);
    assert_int_equal(nas_store_open(f->db, 0, &f->st, &err), NAS_OK);
    char *canon = nas_config_canonical(&f->cfg);
    assert_non_null(canon);
    int created = 0;
    assert_int_equal(nas_store_experiment_open(f->st, "report-test", canon, CONF, "report.conf", 9,
                                               "evolution", 41, &f->exp, &created, &err),
                     NAS_OK);
    free(canon);
    nas_rng r;
    nas_rng_seed(&r, 4, 4);
    int made = 0;
    while (made < N_TRIALS) {
        nas_genotype g;
        nas_space_sample(f->space, &r, &g);
        char gs[NAS_GENOTYPE_STR_MAX], key[NAS_GENOTYPE_STR_MAX];
        nas_space_format(f->space, &g, gs, sizeof gs);
        nas_space_key(f->space, &g, key, sizeof key);
        int64_t id;
        if (nas_store_trial_insert(f->st, f->exp, gs, key, "evolution", &id, &err) == NAS_EEXIST)
            continue;
        assert_int_equal(nas_store_trial_start(f->st, id, 0, "cpu", &err), NAS_OK);
        nas_trial_result *res = &f->res[made];
        memset(res, 0, sizeof *res);
        res->test_accuracy = -1;
        /* coarse values: ties and duplicates on the fronts */
        res->val_accuracy = 0.5 + 0.05 * (double)nas_rng_bounded(&r, 8);
        res->latency_ms = 0.5 + 0.25 * (double)nas_rng_bounded(&r, 8); /* > 2 ms: infeasible */
        res->macs = 200000 + 100000 * (int64_t)nas_rng_bounded(&r, 6);
        res->params = 3000 + 100 * (int64_t)nas_rng_bounded(&r, 50);
        res->train_seconds = 1;
        res->epochs = 1;
        if (made % 7 == 3) {
            res->status = NAS_ENAN;
            snprintf(res->error, sizeof res->error, "loss became NaN at step %d <&> (trial %d)", made, made);
        }
        char note[256];
        f->score[made] = nas_search_score(&f->cfg, res, note, sizeof note);
        assert_int_equal(nas_store_trial_finish(f->st, id, res, f->score[made], note, &err), NAS_OK);
        f->ids[made++] = id;
    }
    /* one trial still pending: not drawn anywhere */
    int64_t pending;
    assert_int_equal(nas_store_trial_insert(f->st, f->exp, "|none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|",
                                            "pending-key", "evolution", &pending, &err),
                     NAS_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    nas_store_close(f->st);
    nas_space_destroy(f->space);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* Brute-force front of (max accuracy, min latency) over feasible done trials. */
static void brute_front(const fx *f, int *on)
{
    for (int i = 0; i < N_TRIALS; i++) {
        const nas_trial_result *a = &f->res[i];
        on[i] = a->status == NAS_OK && isfinite(f->score[i]);
        for (int j = 0; j < N_TRIALS && on[i]; j++) {
            const nas_trial_result *b = &f->res[j];
            if (j == i || b->status != NAS_OK || !isfinite(f->score[j]))
                continue;
            if (b->val_accuracy >= a->val_accuracy && b->latency_ms <= a->latency_ms &&
                (b->val_accuracy > a->val_accuracy || b->latency_ms < a->latency_ms))
                on[i] = 0;
        }
    }
}

static char *render(fx *f, const char *experiment, int *n_front, int want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    nas_report_opts o = {.experiment = experiment, .top_k = 5};
    nas_error err;
    int rc = nas_report_write(f->st, &o, m, n_front, &err);
    fclose(m);
    assert_int_equal(rc, want);
    /* a copy: GCC 12's -Wdangling-pointer at -O2 takes the memstream's
     * buffer for the address of the local `buf` */
    char *copy = strdup(buf ? buf : "");
    free(buf);
    assert_non_null(copy);
    return copy;
}

/* The text of the element whose id is `id` up to `end`. */
static char *section(const char *html, const char *id, const char *end)
{
    char pat[96];
    snprintf(pat, sizeof pat, "id=\"%s\"", id);
    const char *a = strstr(html, pat);
    assert_non_null(a);
    const char *b = strstr(a, end);
    assert_non_null(b);
    size_t n = (size_t)(b - a);
    char *s = malloc(n + 1);
    memcpy(s, a, n);
    s[n] = '\0';
    return s;
}

static int count(const char *s, const char *pat)
{
    int n = 0;
    for (const char *p = strstr(s, pat); p; p = strstr(p + 1, pat))
        n++;
    return n;
}

static void test_queries(void **state)
{
    fx *f = *state;
    nas_error err;
    char *text = NULL;
    assert_int_equal(nas_store_experiment_conf_text(f->st, f->exp, &text, &err), NAS_OK);
    assert_string_equal(text, CONF);
    free(text);
    assert_int_equal(nas_store_experiment_conf_text(f->st, 999, &text, &err), NAS_ENOTFOUND);
    assert_null(text);

    nas_config c;
    assert_int_equal(nas_store_experiment_objectives(f->st, f->exp, &c, &err), NAS_OK);
    assert_int_equal(c.n_objectives, 2);
    assert_string_equal(c.objectives[1].metric, "latency_ms");
    assert_int_equal(c.objectives[1].maximize, 0);
    assert_true(c.constraints.latency_ms == 2.0);

    nas_store_trial *all = NULL;
    int n = 0;
    assert_int_equal(nas_store_trial_list(f->st, f->exp, &all, &n, &err), NAS_OK);
    assert_int_equal(n, N_TRIALS + 1);
    for (int i = 0; i < N_TRIALS; i++) {
        /* a stored trial replays to the score the controller stored */
        nas_trial_result res;
        nas_store_trial_result(&all[i], &res);
        double s = nas_search_score(&f->cfg, &res, NULL, 0);
        assert_int_equal(isnan(s), isnan(f->score[i]));
        if (!isnan(s))
            assert_true(fabs(s - f->score[i]) < 1e-12);
        assert_int_equal(nas_store_trial_feasible(&all[i]), !isnan(f->score[i]));
        assert_int_equal(res.status == NAS_OK, f->res[i].status == NAS_OK);
    }
    free(all);

    int on[N_TRIALS], want = 0;
    brute_front(f, on);
    for (int i = 0; i < N_TRIALS; i++)
        want += on[i];
    assert_true(want >= 2);
    nas_store_trial *front = NULL;
    assert_int_equal(nas_store_pareto(f->st, f->exp, c.objectives, 2, &front, &n, &err), NAS_OK);
    assert_int_equal(n, want);
    for (int k = 0; k < n; k++) {
        int i = 0;
        while (i < N_TRIALS && f->ids[i] != front[k].id)
            i++;
        assert_true(i < N_TRIALS);
        assert_true(on[i]);
        if (k > 0) /* best accuracy first, ties by id */
            assert_true(front[k - 1].val_accuracy > front[k].val_accuracy ||
                        (front[k - 1].val_accuracy == front[k].val_accuracy && front[k - 1].id < front[k].id));
    }
    free(front);
    nas_objective bad = {.metric = "flops", .maximize = 0};
    assert_int_equal(nas_store_pareto(f->st, f->exp, &bad, 1, &front, &n, &err), NAS_EINVAL);
}

static void test_report_page(void **state)
{
    fx *f = *state;
    int n_front = -1;
    char *html = render(f, NULL, &n_front, NAS_OK);
    assert_true(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    assert_non_null(strstr(html, "</html>\n"));
    /* self-contained */
    assert_null(strstr(html, "http:"));
    assert_null(strstr(html, "https:"));
    assert_null(strstr(html, " src="));
    assert_null(strstr(html, "<link"));
    assert_null(strstr(html, "@import"));
    /* the config is escaped */
    assert_null(strstr(html, "<script>alert"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more"));
    assert_int_equal(count(html, "<script>"), 1);
    const char *ids[] = {"plot-best-trials", "plot-best-time", "plot-acc-latency", "plot-acc-macs",
                         "plot-ops", "pareto-latency", "pareto-macs", "front", "failed",
                         "config-text", "config-canonical", "tip", "trials", "trial-table"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, "id=\"%s\"", ids[i]);
        assert_int_equal(count(html, pat), 1);
    }

    /* accuracy/latency: one circle per done trial, the front as brute force */
    int on[N_TRIALS], n_done = 0, n_failed = 0, n_infeasible = 0, want_front = 0;
    brute_front(f, on);
    char *lat = section(html, "plot-acc-latency", "</svg>");
    for (int i = 0; i < N_TRIALS; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, "data-trial=\"%lld\"", (long long)f->ids[i]);
        int done = f->res[i].status == NAS_OK;
        n_done += done;
        n_failed += !done;
        n_infeasible += done && isnan(f->score[i]);
        want_front += on[i];
        assert_int_equal(count(lat, pat), done);
        snprintf(pat, sizeof pat, "class=\"trial front\" data-trial=\"%lld\"", (long long)f->ids[i]);
        assert_int_equal(count(lat, pat), on[i]);
    }
    assert_int_equal(count(lat, "<circle class=\"trial "), n_done);
    assert_int_equal(count(lat, "class=\"trial infeasible\""), n_infeasible);
    assert_true(n_infeasible > 0 && n_failed > 0);
    assert_int_equal(n_front, want_front); /* the experiment's objectives are the same pair */
    free(lat);

    /* best so far against trials: a point per done trial, a cross per failure */
    char *best = section(html, "plot-best-trials", "</svg>");
    assert_int_equal(count(best, "<circle class=\"trial "), n_done);
    assert_int_equal(count(best, "class=\"failed-mark\" data-trial="), n_failed);
    assert_int_equal(count(best, "class=\"best\""), 1);
    free(best);

    /* MACs plot: every done trial, front of (max acc, min MACs) by brute force */
    char *macs = section(html, "plot-acc-macs", "</svg>");
    int want_macs = 0;
    for (int i = 0; i < N_TRIALS; i++) {
        const nas_trial_result *a = &f->res[i];
        if (a->status != NAS_OK || isnan(f->score[i]))
            continue;
        int front = 1;
        for (int j = 0; j < N_TRIALS && front; j++) {
            const nas_trial_result *b = &f->res[j];
            if (j != i && b->status == NAS_OK && !isnan(f->score[j]) &&
                b->val_accuracy >= a->val_accuracy && b->macs <= a->macs &&
                (b->val_accuracy > a->val_accuracy || b->macs < a->macs))
                front = 0;
        }
        want_macs += front;
    }
    assert_int_equal(count(macs, "<circle class=\"trial "), n_done);
    assert_int_equal(count(macs, "class=\"trial front\""), want_macs);
    free(macs);

    /* failures and infeasible trials with their reasons */
    char *failed = section(html, "failed", "</table>");
    assert_int_equal(count(failed, "<tr class=\"failed\""), n_failed);
    assert_int_equal(count(failed, "<tr class=\"infeasible\""), n_infeasible);
    for (int i = 0; i < N_TRIALS; i++) {
        if (f->res[i].status == NAS_OK)
            continue;
        char want[160];
        snprintf(want, sizeof want, "loss became NaN at step %d &lt;&amp;&gt; (trial %d)", i, i);
        assert_non_null(strstr(failed, want));
    }
    assert_non_null(strstr(failed, "infeasible: latency"));
    free(failed);

    /* op chart: one bar pair per op */
    char *ops = section(html, "plot-ops", "</svg>");
    assert_int_equal(count(ops, "<rect class=\"bar-top\" data-op="), NAS_OP_COUNT);
    assert_int_equal(count(ops, "<rect class=\"bar-all\" data-op="), NAS_OP_COUNT);
    assert_non_null(strstr(ops, "top 5 trials"));
    free(ops);
    free(html);
}

static void test_report_errors_and_empty(void **state)
{
    fx *f = *state;
    int n_front = -1;
    char *html = render(f, "no-such-experiment", &n_front, NAS_ENOTFOUND);
    free(html);
    /* a second experiment without trials renders, with messages */
    nas_error err;
    int64_t id;
    int created;
    assert_int_equal(nas_store_experiment_open(f->st, "empty", "experiment = \"empty\";\n",
                                               "experiment = \"empty\";\n", "e.conf", 1, "random",
                                               5, &id, &created, &err),
                     NAS_OK);
    html = render(f, "empty", &n_front, NAS_OK);
    assert_int_equal(n_front, 0);
    assert_non_null(strstr(html, "no finished trial with an accuracy yet"));
    assert_non_null(strstr(html, "id=\"no-failures\""));
    assert_non_null(strstr(html, "id=\"front-empty\""));
    assert_non_null(strstr(html, "no readable objectives"));
    assert_non_null(strstr(html, "</html>"));
    free(html);
}

/* Issue 17: `nas query` with rung results - the fidelity column (only
 * when some trial has one), the highest fidelity ranked first, and
 * --min-fidelity filtering before --limit. */
static char *query_text(fx *f, nas_report_format format, int64_t min_fid, int limit)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    nas_report_trials_opts o = {"report-test", format, limit, 0, min_fid, NULL};
    nas_error err;
    assert_int_equal(nas_report_trials(f->st, &o, out, &err), NAS_OK);
    fclose(out);
    return buf;
}

static void test_query_fidelity(void **state)
{
    fx *f = *state;
    char *t = query_text(f, NAS_REPORT_TABLE, 0, 0);
    assert_null(strstr(t, "fidelity")); /* no rungs: the table as before */
    free(t);
    int n_front;
    char *html = render(f, "report-test", &n_front, NAS_OK);
    assert_null(strstr(html, "id=\"rungs\"")); /* and the report */
    free(html);
    nas_error err;
    /* ids[0] to 9, ids[1] and ids[2] to 3 (ids[3] failed) */
    nas_store_rung g[3] = {{f->ids[0], 9, 0.5, 1, 1}, {f->ids[1], 3, 0.5, 1, 1},
                           {f->ids[2], 3, 0.5, 1, 1}};
    for (int i = 0; i < 3; i++)
        assert_int_equal(nas_store_rung_put(f->st, &g[i], &err), NAS_OK);
    t = query_text(f, NAS_REPORT_TABLE, 0, 0);
    assert_non_null(strstr(t, " fidelity  genotype"));
    free(t);
    char *csv = query_text(f, NAS_REPORT_CSV, 3, 0);
    assert_non_null(strstr(csv, ",final_runs,fidelity\n"));
    assert_int_equal(count(csv, "\n"), 4); /* header + 3 trials */
    char first[64];
    snprintf(first, sizeof first, "\n1,%lld,", (long long)f->ids[0]); /* highest fidelity first */
    assert_non_null(strstr(csv, first));
    assert_non_null(strstr(csv, ",9\n"));
    free(csv);
    csv = query_text(f, NAS_REPORT_CSV, 9, 0);
    assert_int_equal(count(csv, "\n"), 2);
    free(csv);
    csv = query_text(f, NAS_REPORT_CSV, 3, 2); /* filter first, then the limit */
    assert_int_equal(count(csv, "\n"), 3);
    free(csv);
    char *js = query_text(f, NAS_REPORT_JSON, 9, 0);
    assert_non_null(strstr(js, "\"fidelity\": 9"));
    free(js);
    /* the Pareto front (nas query --pareto, the report's front) compares only
     * trials at the highest fidelity a feasible trial reached (the rungs
     * above; -1 for trials without one) */
    int64_t top = -1;
    for (int i = 0; i < 3; i++) {
        nas_store_trial t;
        assert_int_equal(nas_store_trial_get(f->st, g[i].trial_id, &t, &err), NAS_OK);
        assert_int_equal(t.fidelity, g[i].fidelity);
        if (nas_store_trial_feasible(&t) && t.fidelity > top)
            top = t.fidelity;
    }
    assert_true(top > 0); /* else the check below would not test the rule */
    nas_objective obj[2] = {{"val_accuracy", 1}, {"latency_ms", 0}};
    nas_store_trial *front = NULL;
    int nf = 0;
    assert_int_equal(nas_store_pareto(f->st, f->exp, obj, 2, &front, &nf, &err), NAS_OK);
    assert_true(nf >= 1);
    for (int i = 0; i < nf; i++)
        assert_int_equal(front[i].fidelity, top);
    free(front);
    /* the report's learning curves: a line and dots per trial with rungs */
    html = render(f, "report-test", &n_front, NAS_OK);
    char *sec = section(html, "rungs", "</section>");
    assert_non_null(sec);
    assert_int_equal(count(sec, "<path class=\"curve\""), 3);
    assert_int_equal(count(sec, "<circle class=\"trial feasible\""), 3);
    char want[64];
    snprintf(want, sizeof want, "data-trial=\"%lld\"", (long long)f->ids[0]);
    assert_non_null(strstr(sec, want));
    free(sec);
    free(html);
}

/* nas query's table marks a trained trial over a constraint (no score) as
 * "infeasible" in its status column, as the report's trial table does, and
 * its first line counts them: it showed "done", ranked below worse trials
 * with nothing saying why. */
static void test_query_marks_infeasible(void **state)
{
    fx *f = *state;
    int n_inf = 0;
    for (int i = 0; i < N_TRIALS; i++)
        n_inf += f->res[i].status == NAS_OK && !isfinite(f->score[i]);
    assert_true(n_inf > 0); /* else nothing below is tested */
    char *t = query_text(f, NAS_REPORT_TABLE, 0, 0);
    char want[160];
    snprintf(want, sizeof want, "; %d infeasible (trained, but over a constraint", n_inf);
    assert_non_null(strstr(t, want));
    int rows = 0;
    for (const char *line = strchr(t, '\n'); line; line = strchr(line + 1, '\n')) {
        int rank;
        long long id;
        char st[32];
        if (sscanf(line + 1, "%d %lld %31s", &rank, &id, st) != 3)
            continue;
        for (int i = 0; i < N_TRIALS; i++) {
            if (f->ids[i] != id)
                continue;
            const char *expect = f->res[i].status != NAS_OK    ? "failed"
                                 : !isfinite(f->score[i]) ? "infeasible"
                                                          : "done";
            assert_string_equal(st, expect);
            rows++;
        }
    }
    assert_int_equal(rows, N_TRIALS);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queries),
        cmocka_unit_test(test_report_page),
        cmocka_unit_test(test_report_errors_and_empty),
        cmocka_unit_test(test_query_marks_infeasible),
        cmocka_unit_test(test_query_fidelity),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
