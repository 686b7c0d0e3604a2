/*
 * experiments/strategy-study/strategy_study.c - random search, regularized
 * evolution and NAO compared on a benchmark table, in-process.
 *
 * For every strategy and seed one search of max(budgets) trials runs
 * against the table evaluator (nas_evaluator, kind "table") under one of
 * two protocols (--protocol):
 *   nas    nas's own search, as the controller runs it: a proposal whose
 *          canonical key was already evaluated is dropped and the strategy
 *          asked again without costing a trial; nas's sampler and mutation
 *          never produce an invalid cell;
 *   nb201  the protocol of NAS-Bench-201's random search and REA (Dong &
 *          Yang, ICLR 2020): every proposal costs a trial, duplicates and
 *          invalid cells (which score 9.71 on cifar10-val) included; random
 *          search and REA are ports of the published scripts (below); NAO
 *          is nas's strategy, charged for every proposal.
 * The strategies do not read the budget, so the first b trials of a run
 * are the run with budget b. The architecture a run returns at budget b is
 * the best by the search signal among its first b trials; the study
 * reports its signal and its test-column value. With the 12-epoch table
 * that value is the 12-epoch cifar10-test accuracy (labelled so), not the
 * final accuracy the NATS-Bench protocol reports. Values are printed in
 * the table's units (percent).
 *
 * Outputs (in --out DIR): table.md, summary.csv, best_so_far.svg; with
 * --dump FILE one CSV row per run and budget. Every row names the protocol,
 * the seeds and whether the strategy was tuned on them (--tuned). Ends by
 * printing
 *   protocol,strategy,budget,seeds,mean_signal,std_signal,mean_test_12ep
 * lines on stdout. Exit 77 (SKIPPED) when the table file is absent.
 * Seeds run in parallel in --jobs forked processes; the results do not
 * depend on the number of jobs.
 */
#include <errno.h>     /* errno */
#include <math.h>      /* sqrt, floor, ceil, isfinite */
#include <stdio.h>     /* printf, fopen */
#include <stdlib.h>    /* strtol, malloc, qsort */
#include <string.h>    /* strcmp, strchr */
#include <sys/mman.h>  /* mmap: results shared with the forked workers */
#include <sys/stat.h>  /* mkdir */
#include <sys/wait.h>  /* waitpid */
#include <unistd.h>    /* fork, access */
#include "nas/search.h"
#include "nas/evaluator.h"

#ifndef NAS_STUDY_DEFAULT_TABLE
#define NAS_STUDY_DEFAULT_TABLE "../shared/data/nb201/nb201_mini_accs.csv"
#endif

#define MAX_STRATS 20
#define MAX_BUDGETS 16
#define MAX_DEDUPE_TRIES 10000

static const char *const base_names[3] = {"random", "evolution", "nao"};
static const nas_strategy_kind base_kinds[3] = {NAS_STRATEGY_RANDOM, NAS_STRATEGY_EVOLUTION,
                                                NAS_STRATEGY_NAO};
static const char *const strat_colors[8] = {"#7f7f7f", "#1f77b4", "#2ca02c", "#d62728",
                                                     "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};

/* One strategy of the study: "random", "evolution", "nao", or
 * "evolution:P:S" (regularized evolution with population P, tournament S;
 * plain "evolution" takes P and S from the config, 10 and 3 by default). */
typedef struct strat_spec {
    char name[32];
    int base;  /* index into base_names */
    int P, S;  /* 0: the config's */
    int tuned; /* --tuned: its knobs were chosen on these seeds */
    int warm_n, warm_k; /* issue 31, "+w[:N:K]": zero-cost warm-up (0: none) */
    int mp_c;           /* issue 31, "+m[:C]": evolution's move proposal (0: none) */
} strat_spec;

/* nas: nas's own search (the controller's): a proposal whose canonical key
 * was evaluated is re-drawn without costing a trial; sampling and mutation
 * never produce an invalid cell (no path from input to output).
 * nb201: the protocol of NAS-Bench-201's random search and REA (Dong &
 * Yang, ICLR 2020; AutoDL-Projects exps/algos/RANDOM.py, R_EA.py): every
 * proposal is evaluated and charged, duplicates and invalid cells included;
 * random search draws each edge's op uniformly; REA's mutation picks a node
 * uniformly, then one of its incoming edges, then a different op. */
enum { PROTO_NAS = 0, PROTO_NB201 };
static const char *const proto_names[2] = {"nas", "nb201"};

typedef struct options {
    strat_spec strats[MAX_STRATS];
    int n_strats;
    int protocol;
    char test_label[NAS_NAME_MAX];
    int seeds;
    uint64_t seed0;
    int budgets[MAX_BUDGETS], n_budgets;
    char table[NAS_PATH_MAX];
    char signal[NAS_NAME_MAX];
    char test[NAS_NAME_MAX];
    char out[NAS_PATH_MAX];
    char dump[NAS_PATH_MAX];
    char conf[NAS_PATH_MAX];
    int jobs;
    int quiet;
    /* issue 31: precomputed zero-cost scores (--scores FILE: a CSV with a
     * `key` column and a column named --warmup's proxy, as `nas space
     * --list --zero-cost PROXY` writes) and the defaults of +w and +m */
    char scores[NAS_PATH_MAX];
    char proxy[32];
    int warm_n, warm_k, mp_c;
} options;

/* Issue 31: canonical key -> score, sorted by key (bsearch). */
typedef struct zc_row {
    char *key;
    double v;
} zc_row;
typedef struct zc_table {
    zc_row *rows;
    int n;
} zc_table;
static zc_table g_zc; /* read once in main, before the jobs fork */

/* Per (strategy, seed) run, in shared memory. */
typedef struct run_head {
    int done;   /* 1 when the run finished, -1 on failure */
    char error[256];
} run_head;

typedef struct study {
    options o;
    int T;             /* trials per run = max budget */
    size_t n_runs;
    run_head *head;    /* [n_runs] */
    double *best;      /* [n_runs * T] best-so-far signal (table units) */
    double *ret_sig;   /* [n_runs * n_budgets] signal of the returned arch */
    double *ret_test;  /* [n_runs * n_budgets] its test value (NaN if none) */
    char *ret_geno;    /* [n_runs * n_budgets * NAS_GENOTYPE_STR_MAX] */
} study;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: strategy_study [options]\n"
            "  --strategies LIST  comma-separated list of random, evolution, evolution:P:S\n"
            "                     (population P, tournament S), nao (default random,evolution,nao)\n"
            "  --protocol NAME    nas (default: duplicates re-drawn free, invalid cells never\n"
            "                     proposed, as nas's search) or nb201 (NAS-Bench-201's random\n"
            "                     search and REA: duplicates and invalid cells charged, REA\n"
            "                     mutates a random node's random incoming edge)\n"
            "  --tuned LIST       strategies (as named in --strategies) whose knobs were tuned\n"
            "                     on these seeds; the tables say so per row\n"
            "  --test-label TEXT  name of the test column in the tables (default\n"
            "                     \"12-epoch cifar10-test\": the table's, not a final accuracy)\n"
            "  --seeds N          runs per strategy, seeds SEED0..SEED0+N-1 (default 100)\n"
            "  --seed0 S          first seed (default 1)\n"
            "  --budgets LIST     trial budgets, e.g. 50,100,150,300 (default)\n"
            "  --table FILE       benchmark CSV (default %s)\n"
            "  --signal COLUMN    search signal column (default cifar10-val)\n"
            "  --test COLUMN      column reported for the returned arch (default cifar10-test;\n"
            "                     \"\" for none)\n"
            "  --conf FILE        space.conf whose search knobs to use (default: built-in\n"
            "                     defaults of nas_config_defaults)\n"
            "  --jobs N           parallel worker processes (default 2)\n"
            "  --out DIR          where table.md, summary.csv, best_so_far.svg go (default .)\n"
            "  --dump FILE        CSV: strategy,budget,seed,genotype,signal per run and budget\n"
            "  --quiet            no progress on stderr\n"
            "  --scores FILE      issue 31: zero-cost scores per canonical key, the CSV of\n"
            "                     `nas space CONF --list --zero-cost PROXY` (columns key, PROXY)\n"
            "  --warmup P:N:K     strategies written NAME+w (or NAME+w:N:K) start with the K\n"
            "                     best of N candidates by proxy P (as search.warmup; the N\n"
            "                     scores are not trials, the K are)\n"
            "  --move-proposal P:C  evolution+m (or evolution:P:S+m:C): each step trains the\n"
            "                     best of C mutations by proxy P (as move_proposal)\n",
            NAS_STUDY_DEFAULT_TABLE);
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Issue 31: strip "+w[:N:K]" and "+m[:C]" from tok into sp (-1: N:K
 * left 0 means --warmup's, C 0 means --move-proposal's: set in run_one). */
static int parse_suffixes(char *tok, strat_spec *sp)
{
    char *plus;
    while ((plus = strrchr(tok, '+')) != NULL) {
        int a = 0, b = 0, used = 0;
        if (!strcmp(plus, "+w"))
            sp->warm_n = -1;
        else if (sscanf(plus, "+w:%d:%d%n", &a, &b, &used) == 2 && !plus[used] && a >= 1 &&
                 b >= 1 && b <= a)
            sp->warm_n = a, sp->warm_k = b;
        else if (!strcmp(plus, "+m"))
            sp->mp_c = -1;
        else if (sscanf(plus, "+m:%d%n", &a, &used) == 1 && !plus[used] && a >= 1)
            sp->mp_c = a;
        else
            return -1;
        *plus = '\0';
    }
    return 0;
}

/* --strategies LIST into o->strats. */
static int parse_strategies(const char *v, options *o)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", v);
    o->n_strats = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        strat_spec sp = {.base = -1};
        int P = 0, S = 0, used = 0;
        char full[32];
        snprintf(full, sizeof full, "%s", tok);
        if (parse_suffixes(tok, &sp) != 0) {
            fprintf(stderr, "strategy_study: bad suffix in '%s' (expected +w, +w:N:K, "
                            "+m, +m:C)\n", full);
            return -1;
        }
        for (int j = 0; j < 3; j++)
            if (strcmp(tok, base_names[j]) == 0)
                sp.base = j;
        if (sp.base < 0 && sscanf(tok, "evolution:%d:%d%n", &P, &S, &used) == 2 &&
            tok[used] == '\0' && P >= 2 && P <= 10000 && S >= 1 && S <= P) {
            sp.base = 1;
            sp.P = P;
            sp.S = S;
        }
        if (sp.base < 0 || o->n_strats == MAX_STRATS) {
            fprintf(stderr, "strategy_study: unknown strategy '%s' (expected random, "
                            "evolution, evolution:P:S with 2 <= P and 1 <= S <= P (as space.conf), nao; "
                            "at most %d)\n", tok, MAX_STRATS);
            return -1;
        }
        if (sp.mp_c && sp.base != 1) {
            fprintf(stderr, "strategy_study: +m is evolution's: '%s'\n", full);
            return -1;
        }
        snprintf(sp.name, sizeof sp.name, "%s", full);
        o->strats[o->n_strats++] = sp;
    }
    if (o->n_strats == 0)
        return -1;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < 3; i++) {
        snprintf(o->strats[i].name, sizeof o->strats[i].name, "%s", base_names[i]);
        o->strats[i].base = i;
    }
    o->n_strats = 3;
    snprintf(o->test_label, sizeof o->test_label, "12-epoch cifar10-test");
    char tuned[256] = "";
    o->seeds = 100;
    o->seed0 = 1;
    const int defb[] = {50, 100, 150, 300};
    memcpy(o->budgets, defb, sizeof defb);
    o->n_budgets = 4;
    snprintf(o->table, sizeof o->table, "%s", NAS_STUDY_DEFAULT_TABLE);
    snprintf(o->signal, sizeof o->signal, "cifar10-val");
    snprintf(o->test, sizeof o->test, "cifar10-test");
    snprintf(o->out, sizeof o->out, ".");
    o->jobs = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "strategy_study: %s needs a value\n", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--strategies") == 0) {
            if (parse_strategies(v, o) != 0)
                return -1;
        } else if (strcmp(a, "--protocol") == 0) {
            if (strcmp(v, "nas") == 0)
                o->protocol = PROTO_NAS;
            else if (strcmp(v, "nb201") == 0)
                o->protocol = PROTO_NB201;
            else {
                fprintf(stderr, "strategy_study: --protocol wants nas or nb201, got '%s'\n", v);
                return -1;
            }
        } else if (strcmp(a, "--tuned") == 0) {
            snprintf(tuned, sizeof tuned, "%s", v);
        } else if (strcmp(a, "--test-label") == 0) {
            snprintf(o->test_label, sizeof o->test_label, "%s", v);
        } else if (strcmp(a, "--seeds") == 0) {
            if (parse_int(v, 1, 1000000, &n)) {
                fprintf(stderr, "strategy_study: --seeds wants a positive integer, got '%s'\n", v);
                return -1;
            }
            o->seeds = (int)n;
        } else if (strcmp(a, "--seed0") == 0) {
            if (parse_int(v, 0, 2000000000L, &n)) {
                fprintf(stderr, "strategy_study: --seed0 wants an integer >= 0, got '%s'\n", v);
                return -1;
            }
            o->seed0 = (uint64_t)n;
        } else if (strcmp(a, "--budgets") == 0) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            o->n_budgets = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (o->n_budgets == MAX_BUDGETS || parse_int(tok, 1, 100000, &n)) {
                    fprintf(stderr, "strategy_study: bad budget '%s'\n", tok);
                    return -1;
                }
                o->budgets[o->n_budgets++] = (int)n;
            }
            if (o->n_budgets == 0)
                return -1;
            qsort(o->budgets, (size_t)o->n_budgets, sizeof(int), cmp_int);
        } else if (strcmp(a, "--table") == 0) {
            snprintf(o->table, sizeof o->table, "%s", v);
        } else if (strcmp(a, "--signal") == 0) {
            snprintf(o->signal, sizeof o->signal, "%s", v);
        } else if (strcmp(a, "--test") == 0) {
            snprintf(o->test, sizeof o->test, "%s", v);
        } else if (strcmp(a, "--conf") == 0) {
            snprintf(o->conf, sizeof o->conf, "%s", v);
        } else if (strcmp(a, "--jobs") == 0) {
            if (parse_int(v, 1, 256, &n)) {
                fprintf(stderr, "strategy_study: --jobs wants 1..256, got '%s'\n", v);
                return -1;
            }
            o->jobs = (int)n;
        } else if (strcmp(a, "--out") == 0) {
            snprintf(o->out, sizeof o->out, "%s", v);
        } else if (strcmp(a, "--dump") == 0) {
            snprintf(o->dump, sizeof o->dump, "%s", v);
        } else if (strcmp(a, "--scores") == 0) {
            snprintf(o->scores, sizeof o->scores, "%s", v);
        } else if (strcmp(a, "--warmup") == 0) {
            char px[32];
            if (sscanf(v, "%31[a-z_]:%d:%d", px, &o->warm_n, &o->warm_k) != 3 || o->warm_n < 1 ||
                o->warm_k < 1 || o->warm_k > o->warm_n) {
                fprintf(stderr, "strategy_study: --warmup wants PROXY:N:K, 1 <= K <= N\n");
                return -1;
            }
            snprintf(o->proxy, sizeof o->proxy, "%s", px);
        } else if (strcmp(a, "--move-proposal") == 0) {
            char px[32];
            if (sscanf(v, "%31[a-z_]:%d", px, &o->mp_c) != 2 || o->mp_c < 1) {
                fprintf(stderr, "strategy_study: --move-proposal wants PROXY:C, C >= 1\n");
                return -1;
            }
            snprintf(o->proxy, sizeof o->proxy, "%s", px);
        } else {
            fprintf(stderr, "strategy_study: unknown option '%s'\n", a);
            usage(stderr);
            return -1;
        }
    }
    for (int k = 0; k < o->n_strats; k++) { /* issue 31: +w / +m need scores and defaults */
        strat_spec *sp = &o->strats[k];
        if ((sp->warm_n || sp->mp_c) && !o->scores[0]) {
            fprintf(stderr, "strategy_study: '%s' needs --scores FILE\n", sp->name);
            return -1;
        }
        if ((sp->warm_n < 0 && !o->warm_n) || (sp->mp_c < 0 && !o->mp_c) ||
            ((sp->warm_n || sp->mp_c) && !o->proxy[0])) {
            fprintf(stderr, "strategy_study: '%s' needs --warmup PROXY:N:K or --move-proposal "
                            "PROXY:C\n", sp->name);
            return -1;
        }
        if (sp->warm_n < 0)
            sp->warm_n = o->warm_n, sp->warm_k = o->warm_k;
        if (sp->mp_c < 0)
            sp->mp_c = o->mp_c;
    }
    for (char *tok = strtok(tuned, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int k = 0; k < o->n_strats; k++)
            if (strcmp(o->strats[k].name, tok) == 0)
                o->strats[k].tuned = found = 1;
        if (!found) {
            fprintf(stderr, "strategy_study: --tuned names '%s', which is not in --strategies\n",
                    tok);
            return -1;
        }
    }
    return 0;
}

/* ---- NAS-Bench-201's own random search and REA (protocol nb201) ---------------
 * A port of the published algorithms (Dong & Yang, ICLR 2020; the
 * AutoDL-Projects scripts exps/algos/RANDOM.py and R_EA.py, which follow
 * Real et al., AAAI 2019, Algorithm 1), with PCG32 in place of Python's
 * random and a trial budget in place of the simulated time budget. Every
 * proposal is evaluated and charged: duplicates and invalid cells too. */

/* Each edge's op uniformly from the space's ops; invalid cells included. */
static void nb201_random_arch(const nas_space *space, nas_rng *r, nas_genotype *g)
{
    int ops[NAS_OP_COUNT], n = 0;
    for (int op = 0; op < NAS_OP_COUNT; op++)
        if (nas_space_token_allowed(space, 0, op))
            ops[n++] = op;
    memset(g, 0, sizeof *g);
    g->len = NAS_CELL_EDGES;
    for (int e = 0; e < NAS_CELL_EDGES; e++)
        g->tok[e] = (uint8_t)ops[nas_rng_bounded(r, (uint32_t)n)];
}

/* R_EA.py's mutate_arch: a node uniformly (1, 2 or 3), one of its incoming
 * edges uniformly, then a different op uniformly (drawn until it differs).
 * So edge (1<-0) changes with probability 1/3, each edge into node 3 with
 * 1/9; nas's own mutation picks among all valid one-edge children. */
static void nb201_mutate(const nas_space *space, nas_rng *r, const nas_genotype *parent,
                         nas_genotype *child)
{
    int ops[NAS_OP_COUNT], n = 0;
    for (int op = 0; op < NAS_OP_COUNT; op++)
        if (nas_space_token_allowed(space, 0, op))
            ops[n++] = op;
    *child = *parent;
    int node = 1 + (int)nas_rng_bounded(r, NAS_CELL_NODES - 1);
    int from = (int)nas_rng_bounded(r, (uint32_t)node);
    int e = node * (node - 1) / 2 + from;
    if (n < 2)
        return;
    int op;
    do
        op = ops[nas_rng_bounded(r, (uint32_t)n)];
    while (op == child->tok[e]);
    child->tok[e] = (uint8_t)op;
}

/* ---- issue 31: precomputed zero-cost scores ------------------------------------ */

static int cmp_zc(const void *a, const void *b)
{
    return strcmp(((const zc_row *)a)->key, ((const zc_row *)b)->key);
}

/* One CSV field of line at *p (quoted or not) into out[n]; advances *p. */
static void csv_field(const char **p, char *out, size_t n)
{
    size_t k = 0;
    const char *q = *p;
    int quoted = *q == '"';
    q += quoted;
    while (*q && (quoted ? *q != '"' : *q != ',' && *q != '\n' && *q != '\r')) {
        if (k + 1 < n)
            out[k++] = *q;
        q++;
    }
    out[k] = '\0';
    q += quoted && *q == '"';
    if (*q == ',')
        q++;
    *p = q;
}

/* --scores FILE: the `key` column and the column named `proxy`. */
static int load_scores(const char *path, const char *proxy, zc_table *t)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "strategy_study: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    static char line[8192];
    char field[2048];
    int ck = -1, cp = -1, cap = 0;
    if (fgets(line, sizeof line, f)) {
        const char *p = line;
        for (int c = 0; *p && *p != '\n' && *p != '\r'; c++) {
            csv_field(&p, field, sizeof field);
            ck = !strcmp(field, "key") ? c : ck;
            cp = !strcmp(field, proxy) ? c : cp;
        }
    }
    if (ck < 0 || cp < 0) {
        fprintf(stderr, "strategy_study: %s has no 'key' and '%s' columns\n", path, proxy);
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        const char *p = line;
        char key[NAS_GENOTYPE_STR_MAX] = "";
        double v = NAN;
        for (int c = 0; *p && *p != '\n'; c++) {
            csv_field(&p, field, sizeof field);
            if (c == ck)
                snprintf(key, sizeof key, "%s", field);
            else if (c == cp && field[0])
                v = strtod(field, NULL);
        }
        if (t->n == cap) {
            cap = cap ? 2 * cap : 16384;
            zc_row *r = realloc(t->rows, (size_t)cap * sizeof *r);
            if (!r)
                break;
            t->rows = r;
        }
        t->rows[t->n].key = strdup(key);
        t->rows[t->n++].v = v;
    }
    fclose(f);
    qsort(t->rows, (size_t)t->n, sizeof *t->rows, cmp_zc);
    return 0;
}

/* The score of g (NaN: not in the file, e.g. an invalid cell). */
static double zc_lookup(void *ctx, const nas_genotype *g)
{
    const nas_space *space = ctx;
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(space, g, key, sizeof key);
    zc_row want = {.key = key};
    const zc_row *r = bsearch(&want, g_zc.rows, (size_t)g_zc.n, sizeof want, cmp_zc);
    return r ? r->v : NAN;
}

typedef struct warm_cand {
    nas_genotype g;
    double v;
    int i;
} warm_cand;

static int cmp_warm(const void *a, const void *b)
{
    const warm_cand *x = a, *y = b;
    int xn = isnan(x->v), yn = isnan(y->v);
    if (xn != yn)
        return xn - yn;
    if (!xn && x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return x->i - y->i;
}

/* The warm-up's top K of N (search/warmup.c's choice, from the file's
 * scores) into out[K]; returns how many. */
static int warm_top(const nas_config *cfg, const nas_space *space, int N, int K, nas_genotype *out)
{
    nas_genotype *g = malloc((size_t)N * sizeof *g);
    warm_cand *v = malloc((size_t)N * sizeof *v);
    nas_error err;
    int n = g && v ? nas_warmup_candidates(cfg, space, N, g, &err) : -1, k = 0;
    for (int i = 0; i < n; i++)
        v[i] = (warm_cand){g[i], zc_lookup((void *)space, &g[i]), i};
    if (n > 0)
        qsort(v, (size_t)n, sizeof *v, cmp_warm);
    for (; k < K && k < n && !isnan(v[k].v); k++)
        out[k] = v[k].g;
    free(g);
    free(v);
    return k;
}

/* ---- one search ------------------------------------------------------------ */

typedef struct run_ctx {
    study *st;
    nas_evaluator *ev;
    const nas_space *space;
    double scale;
    size_t r;
    int t; /* trials charged so far */
    double best;
    double *sig, *tst;
    nas_genotype *gs;
} run_ctx;

/* Evaluate g as trial rc->t (a table look-up) and charge it; returns the
 * score the strategy observes (a fraction, NaN for a failure). */
static double charge(run_ctx *rc, const nas_genotype *g)
{
    nas_trial_result res;
    nas_evaluator_run(rc->ev, g, NULL, NULL, &res);
    double score = res.status == NAS_OK ? res.val_accuracy : NAN;
    int t = rc->t++;
    const int T = rc->st->T;
    rc->gs[t] = *g;
    rc->sig[t] = isfinite(score) ? score / rc->scale : NAN;
    rc->tst[t] = res.status == NAS_OK && res.test_accuracy >= 0 ? res.test_accuracy / rc->scale
                                                                : NAN;
    if (isfinite(rc->sig[t]) && rc->sig[t] > rc->best)
        rc->best = rc->sig[t];
    rc->st->best[rc->r * T + t] = rc->best;
    return score;
}

/* REA as in R_EA.py: P random cells, then cycles of a tournament of S drawn
 * with replacement from the population (the first best in draw order is the
 * parent), its mutated child evaluated and appended, the oldest removed. */
static void nb201_rea(run_ctx *rc, int P, int S, nas_rng *r, const nas_genotype *warm,
                      int n_warm, int mp_c)
{
    const int T = rc->st->T;
    nas_genotype *pop = malloc((size_t)P * sizeof *pop);
    double *acc = malloc((size_t)P * sizeof *acc);
    if (!pop || !acc) {
        free(pop);
        free(acc);
        return;
    }
    int head = 0, n = 0; /* ring buffer: oldest at head */
    while (n < P && rc->t < T) {
        if (n < n_warm) /* issue 31: the warm-up's first */
            pop[n] = warm[n];
        else
            nb201_random_arch(rc->space, r, &pop[n]);
        acc[n] = charge(rc, &pop[n]);
        n++;
    }
    while (rc->t < T) {
        int parent = -1;
        for (int i = 0; i < S; i++) {
            int c = (head + (int)nas_rng_bounded(r, (uint32_t)n)) % P;
            if (parent < 0 || acc[c] > acc[parent] || (isfinite(acc[c]) && !isfinite(acc[parent])))
                parent = c;
        }
        nas_genotype child;
        nb201_mutate(rc->space, r, &pop[parent], &child);
        double best = mp_c > 1 ? zc_lookup((void *)rc->space, &child) : NAN;
        for (int c = 1; c < mp_c; c++) { /* issue 31: the best-scoring of mp_c mutations */
            nas_genotype o;
            nb201_mutate(rc->space, r, &pop[parent], &o);
            double v = zc_lookup((void *)rc->space, &o);
            if (!isnan(v) && (isnan(best) || v > best)) {
                best = v;
                child = o;
            }
        }
        double a = charge(rc, &child);
        pop[head] = child; /* append the child, drop the oldest */
        acc[head] = a;
        head = (head + 1) % P;
    }
    free(pop);
    free(acc);
}

typedef struct known_keys {
    char (*keys)[NAS_GENOTYPE_STR_MAX];
    int n;
    const nas_space *space;
    int never; /* protocol nb201: nothing is known, every proposal is charged */
} known_keys;

static int key_known(const known_keys *k, const char *key)
{
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->keys[i], key) == 0)
            return 1;
    return 0;
}

/* is_known callback: the canonical key was evaluated already. */
static int known_fn(void *ctx, const nas_genotype *g)
{
    known_keys *k = ctx;
    if (k->never)
        return 0;
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(k->space, g, key, sizeof key);
    return key_known(k, key);
}

/* Run strategy `si` with seed `seed` for st->T trials into run slot r. */
static int run_one(study *st, const nas_config *base, const nas_space *space, nas_evaluator *ev,
                   int si, uint64_t seed, size_t r, nas_error *err)
{
    const strat_spec *sp = &st->o.strats[si];
    nas_config cfg = *base;
    cfg.seed = seed;
    cfg.search.strategy = base_kinds[sp->base];
    cfg.search.trials = st->T;
    if (sp->P > 0) {
        cfg.search.population = sp->P;
        cfg.search.sample_size = sp->S;
    }
    if (sp->mp_c > 1) { /* issue 31: scores from --scores (nas_strategy_set_proxy) */
        snprintf(cfg.search.move_proposal.proxy, sizeof cfg.search.move_proposal.proxy, "%s",
                 st->o.proxy);
        cfg.search.move_proposal.candidates = sp->mp_c;
    }
    nas_genotype warm[1024];
    int n_warm = sp->warm_n ? warm_top(&cfg, space, sp->warm_n, sp->warm_k < 1024 ? sp->warm_k
                                                                                  : 1024, warm)
                            : 0;
    const int nb201 = st->o.protocol == PROTO_NB201;
    nas_strategy *s = NULL;
    int rc = NAS_OK;
    if (!(nb201 && sp->base != 2) && (rc = nas_strategy_create(&cfg, space, &s, err)) != NAS_OK)
        return rc;
    if (s && sp->mp_c > 1)
        nas_strategy_set_proxy(s, zc_lookup, (void *)space);
    const int T = st->T, NB = st->o.n_budgets;
    known_keys kk = {.keys = calloc((size_t)T, NAS_GENOTYPE_STR_MAX), .n = 0, .space = space,
                     .never = nb201};
    run_ctx ctx = {.st = st, .ev = ev, .space = space, .scale = cfg.evaluator.table_scale,
                   .r = r, .best = -INFINITY};
    ctx.sig = malloc((size_t)T * sizeof *ctx.sig);
    ctx.tst = malloc((size_t)T * sizeof *ctx.tst);
    ctx.gs = malloc((size_t)T * sizeof *ctx.gs);
    if (!kk.keys || !ctx.sig || !ctx.tst || !ctx.gs) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory");
        goto out;
    }
    if (nb201 && sp->base != 2) {
        nas_rng rng;
        nas_rng_seed(&rng, seed, 0x6e62323031ull); /* "nb201" */
        if (sp->base == 0)
            while (ctx.t < T) {
                nas_genotype g;
                if (ctx.t < n_warm) /* issue 31: the warm-up's first */
                    g = warm[ctx.t];
                else
                    nb201_random_arch(space, &rng, &g);
                charge(&ctx, &g);
            }
        else
            nb201_rea(&ctx, cfg.search.population, cfg.search.sample_size, &rng, warm, n_warm,
                      sp->mp_c);
    }
    for (int w = 0; s && w < n_warm && ctx.t < T; w++) { /* issue 31: as the controller */
        nas_strategy_enqueued(s, &warm[w]);
        if (!nb201)
            nas_space_key(space, &warm[w], kk.keys[kk.n++], NAS_GENOTYPE_STR_MAX);
        nas_strategy_observe(s, &warm[w], charge(&ctx, &warm[w]));
    }
    while (ctx.t < T) { /* a nas strategy (both protocols; nb201: NAO only) */
        nas_genotype g;
        char key[NAS_GENOTYPE_STR_MAX];
        int tries = 0;
        for (;;) {
            rc = nas_strategy_propose(s, known_fn, &kk, &g, err);
            if (rc)
                goto out;
            if (nb201)
                break; /* charged, whether new or not */
            nas_space_key(space, &g, key, sizeof key);
            if (!key_known(&kk, key))
                break;
            if (++tries >= MAX_DEDUPE_TRIES) {
                rc = nas_error_set(err, NAS_EINFEASIBLE,
                                   "%s proposed nothing new in %d attempts", sp->name,
                                   MAX_DEDUPE_TRIES);
                goto out;
            }
        }
        if (!nb201)
            memcpy(kk.keys[kk.n++], key, NAS_GENOTYPE_STR_MAX);
        double score = charge(&ctx, &g);
        nas_strategy_observe(s, &g, score);
    }
    if (ctx.t < T) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory");
        goto out;
    }
    for (int b = 0; b < NB; b++) {
        int lim = st->o.budgets[b] < T ? st->o.budgets[b] : T, arg = -1;
        for (int t = 0; t < lim; t++)
            if (isfinite(ctx.sig[t]) && (arg < 0 || ctx.sig[t] > ctx.sig[arg]))
                arg = t;
        size_t k = r * NB + b;
        st->ret_sig[k] = arg >= 0 ? ctx.sig[arg] : NAN;
        st->ret_test[k] = arg >= 0 ? ctx.tst[arg] : NAN;
        char *gbuf = st->ret_geno + k * NAS_GENOTYPE_STR_MAX;
        if (arg < 0 || nas_space_format(space, &ctx.gs[arg], gbuf, NAS_GENOTYPE_STR_MAX) != NAS_OK)
            gbuf[0] = '\0';
    }
    rc = NAS_OK;
out:
    free(kk.keys);
    free(ctx.sig);
    free(ctx.tst);
    free(ctx.gs);
    nas_strategy_destroy(s);
    return rc;
}

/* ---- statistics and outputs ------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct stats {
    int n;
    double mean, std, median;
} stats;

static stats stats_of(const double *x, int n)
{
    stats s = {0, NAN, NAN, NAN};
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v)
        return s;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]))
            v[s.n++] = x[i];
    if (s.n > 0) {
        double sum = 0, sq = 0;
        for (int i = 0; i < s.n; i++)
            sum += v[i];
        s.mean = sum / s.n;
        for (int i = 0; i < s.n; i++)
            sq += (v[i] - s.mean) * (v[i] - s.mean);
        s.std = s.n > 1 ? sqrt(sq / (s.n - 1)) : 0.0;
        qsort(v, (size_t)s.n, sizeof *v, cmp_double);
        s.median = s.n % 2 ? v[s.n / 2] : 0.5 * (v[s.n / 2 - 1] + v[s.n / 2]);
    }
    free(v);
    return s;
}

static size_t run_index(const study *st, int k, int seed_i)
{
    return (size_t)k * st->o.seeds + (size_t)seed_i;
}

/* Best-so-far curves: mean and standard deviation over seeds, one SVG
 * polyline per strategy with a +-1 std band, written by hand. */
static int write_svg(const study *st, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const int T = st->T, NS = st->o.n_strats, N = st->o.seeds;
    double *mean = calloc((size_t)NS * T, sizeof *mean), *sd = calloc((size_t)NS * T, sizeof *sd);
    double *col = malloc((size_t)N * sizeof *col);
    if (!mean || !sd || !col) {
        fclose(f);
        free(mean);
        free(sd);
        free(col);
        return -1;
    }
    for (int k = 0; k < NS; k++)
        for (int t = 0; t < T; t++) {
            for (int i = 0; i < N; i++)
                col[i] = st->best[run_index(st, k, i) * T + t];
            stats s = stats_of(col, N);
            mean[(size_t)k * T + t] = s.mean;
            sd[(size_t)k * T + t] = s.std;
        }
    /* y range: from the lowest mean at trial min(10, T) to the highest mean + std */
    int t0 = T < 10 ? T - 1 : 9;
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < NS; k++) {
        for (int t = t0; t < T; t++) {
            double m = mean[(size_t)k * T + t], u = m + sd[(size_t)k * T + t];
            if (isfinite(m) && m < lo)
                lo = m;
            if (isfinite(u) && u > hi)
                hi = u;
        }
    }
    if (!isfinite(lo) || !isfinite(hi) || hi <= lo) {
        lo = 0;
        hi = 100;
    }
    lo = floor(lo);
    hi = ceil(hi * 2.0) / 2.0;
    const double W = 820, H = 520, ml = 70, mr = 170, mt = 40, mb = 60;
    const double pw = W - ml - mr, ph = H - mt - mb;
#define SX(t) (ml + pw * ((double)(t) - 1.0) / (T > 1 ? (double)(T - 1) : 1.0))
#define SY(v) (mt + ph * (1.0 - ((v) - lo) / (hi - lo)))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"13\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<defs><clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\"/></clipPath></defs>\n", ml, mt, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"24\" font-size=\"15\">Best %s so far (protocol %s, mean "
               "over seeds %llu-%llu, band: &#177;1 std)</text>\n", ml, st->o.signal,
            proto_names[st->o.protocol], (unsigned long long)st->o.seed0,
            (unsigned long long)(st->o.seed0 + (uint64_t)N - 1));
    /* grid and axes */
    double ystep = hi - lo > 6 ? 2.0 : (hi - lo > 3 ? 1.0 : 0.5);
    for (double y = lo; y <= hi + 1e-9; y += ystep) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ml,
                SY(y), ml + pw, SY(y));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", ml - 6,
                SY(y) + 4, y);
    }
    int xstep = T > 200 ? 50 : (T > 60 ? 25 : 10);
    for (int t = 0; t <= T; t += xstep) {
        int tt = t < 1 ? 1 : t;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", SX(tt),
                mt + ph + 18, tt);
    }
    for (int b = 0; b < st->o.n_budgets; b++)
        if (st->o.budgets[b] <= T)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\" "
                       "stroke-dasharray=\"4,4\"/>\n",
                    SX(st->o.budgets[b]), mt, SX(st->o.budgets[b]), mt + ph);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"black\"/>\n", ml, mt, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">trials (architectures "
               "evaluated)</text>\n", ml + pw / 2, H - 18);
    fprintf(f, "<text transform=\"translate(20,%.1f) rotate(-90)\" text-anchor=\"middle\">best "
               "%s (%%)</text>\n", mt + ph / 2, st->o.signal);
    /* bands, then lines */
    fprintf(f, "<g clip-path=\"url(#plot)\">\n");
    for (int k = 0; k < NS; k++) {
        const double *m = mean + (size_t)k * T, *s = sd + (size_t)k * T;
        fprintf(f, "<polygon fill=\"%s\" fill-opacity=\"0.15\" stroke=\"none\" points=\"",
                strat_colors[k % 8]);
        for (int t = 0; t < T; t++)
            if (isfinite(m[t]))
                fprintf(f, "%.1f,%.1f ", SX(t + 1), SY(m[t] + s[t]));
        for (int t = T - 1; t >= 0; t--)
            if (isfinite(m[t]))
                fprintf(f, "%.1f,%.1f ", SX(t + 1), SY(m[t] - s[t]));
        fprintf(f, "\"/>\n");
    }
    for (int k = 0; k < NS; k++) {
        const double *m = mean + (size_t)k * T;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                strat_colors[k % 8]);
        for (int t = 0; t < T; t++)
            if (isfinite(m[t]))
                fprintf(f, "%.1f,%.1f ", SX(t + 1), SY(m[t]));
        fprintf(f, "\"/>\n");
    }
    fprintf(f, "</g>\n");
    for (int k = 0; k < NS; k++) {
        double y = mt + 20 + 22 * k;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"3\"/>\n", ml + pw + 15, y, ml + pw + 45, y,
                strat_colors[k % 8]);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", ml + pw + 52, y + 4,
                st->o.strats[k].name);
    }
    fprintf(f, "</svg>\n");
#undef SX
#undef SY
    free(mean);
    free(sd);
    free(col);
    return fclose(f) == 0 ? 0 : -1;
}

static int write_outputs(const study *st)
{
    const options *o = &st->o;
    const int NB = o->n_budgets, N = o->seeds;
    char path[NAS_PATH_MAX + 32];
    double *sig = malloc((size_t)N * sizeof *sig), *tst = malloc((size_t)N * sizeof *tst);
    if (!sig || !tst)
        return -1;
    snprintf(path, sizeof path, "%s/summary.csv", o->out);
    FILE *csv = fopen(path, "w");
    snprintf(path, sizeof path, "%s/table.md", o->out);
    FILE *md = fopen(path, "w");
    if (!csv || !md) {
        fprintf(stderr, "strategy_study: cannot write into %s\n", o->out);
        if (csv)
            fclose(csv);
        if (md)
            fclose(md);
        free(sig);
        free(tst);
        return -1;
    }
    char seeds[64];
    snprintf(seeds, sizeof seeds, "%llu-%llu", (unsigned long long)o->seed0,
             (unsigned long long)(o->seed0 + (uint64_t)N - 1));
    const char *proto = proto_names[o->protocol];
    fprintf(csv, "protocol,seeds,tuned_on_these_seeds,strategy,budget,runs,mean_signal,std_signal,"
                 "median_signal,mean_test_12ep,std_test_12ep,median_test_12ep\n");
    fprintf(md, "Table `%s`, signal `%s`, reported column `%s` (%s); protocol `%s`; %d seeds "
                "(%s) per strategy.\nValues in the table's units (percent). Each run returns the "
                "best architecture by signal among its first `budget` trials. \"tuned\": the "
                "strategy's knobs were chosen on these seeds.\n\n",
            o->table, o->signal, o->test[0] ? o->test : "-", o->test_label, proto, N, seeds);
    fprintf(md, "| protocol | seeds | tuned | strategy | budget | mean %s | std | median | mean %s "
                "| std | median |\n",
            o->signal, o->test[0] ? o->test_label : "test");
    fprintf(md, "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int b = 0; b < NB; b++)
        for (int k = 0; k < o->n_strats; k++) {
            for (int i = 0; i < N; i++) {
                size_t r = run_index(st, k, i);
                sig[i] = st->ret_sig[r * NB + b];
                tst[i] = st->ret_test[r * NB + b];
            }
            stats s = stats_of(sig, N), t = stats_of(tst, N);
            const char *name = o->strats[k].name;
            const char *tuned = o->strats[k].tuned ? "yes" : "no";
            fprintf(csv, "%s,%s,%s,%s,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n", proto, seeds, tuned,
                    name, o->budgets[b], s.n, s.mean, s.std, s.median, t.mean, t.std, t.median);
            fprintf(md, "| %s | %s | %s | %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n",
                    proto, seeds, tuned, name, o->budgets[b], s.mean, s.std, s.median, t.mean,
                    t.std, t.median);
        }
    fclose(csv);
    fclose(md);
    snprintf(path, sizeof path, "%s/best_so_far.svg", o->out);
    if (write_svg(st, path) != 0) {
        fprintf(stderr, "strategy_study: cannot write %s\n", path);
        free(sig);
        free(tst);
        return -1;
    }
    if (o->dump[0]) {
        FILE *d = fopen(o->dump, "w");
        if (!d) {
            fprintf(stderr, "strategy_study: cannot write %s\n", o->dump);
            free(sig);
            free(tst);
            return -1;
        }
        fprintf(d, "strategy,budget,seed,genotype,signal\n");
        for (int k = 0; k < o->n_strats; k++)
            for (int i = 0; i < N; i++)
                for (int b = 0; b < NB; b++) {
                    size_t r = run_index(st, k, i);
                    fprintf(d, "%s,%d,%llu,%s,%.4f\n", o->strats[k].name, o->budgets[b],
                            (unsigned long long)(o->seed0 + (uint64_t)i),
                            st->ret_geno + (r * NB + b) * NAS_GENOTYPE_STR_MAX,
                            st->ret_sig[r * NB + b]);
                }
        fclose(d);
    }
    /* the summary on stdout */
    printf("protocol,strategy,budget,seeds,mean_signal,std_signal,mean_test_12ep\n");
    for (int b = 0; b < NB; b++)
        for (int k = 0; k < o->n_strats; k++) {
            for (int i = 0; i < N; i++) {
                size_t r = run_index(st, k, i);
                sig[i] = st->ret_sig[r * NB + b];
                tst[i] = st->ret_test[r * NB + b];
            }
            stats s = stats_of(sig, N), t = stats_of(tst, N);
            printf("%s,%s,%d,%d,%.3f,%.3f,%.3f\n", proto, o->strats[k].name, o->budgets[b], s.n,
                   s.mean, s.std, t.mean);
        }
    free(sig);
    free(tst);
    return 0;
}

static void *shared_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv)
{
    study st;
    memset(&st, 0, sizeof st);
    if (parse_args(argc, argv, &st.o) != 0)
        return 2;
    options *o = &st.o;
    if (access(o->table, R_OK) != 0) {
        printf("SKIPPED: benchmark table %s is not readable (%s); nothing to study\n", o->table,
               strerror(errno));
        return 77;
    }
    nas_config base;
    nas_error err;
    nas_error_clear(&err);
    nas_config_defaults(&base);
    if (o->conf[0] && nas_config_load(o->conf, &base, &err) != NAS_OK) {
        fprintf(stderr, "strategy_study: %s\n", err.msg);
        return 1;
    }
    snprintf(base.experiment, sizeof base.experiment, "strategy-study");
    if (o->scores[0] && load_scores(o->scores, o->proxy, &g_zc) != 0)
        return 1;
    base.evaluator.kind = NAS_EVALUATOR_TABLE;
    snprintf(base.evaluator.table, sizeof base.evaluator.table, "%s", o->table);
    snprintf(base.evaluator.column, sizeof base.evaluator.column, "%s", o->signal);
    snprintf(base.evaluator.test_column, sizeof base.evaluator.test_column, "%s", o->test);
    if (!(base.evaluator.table_scale > 0))
        base.evaluator.table_scale = 0.01;

    nas_space *space = NULL;
    nas_evaluator *ev = NULL;
    if (nas_space_create(&base.space, &space, &err) != NAS_OK ||
        nas_evaluator_create(&base, space, &ev, &err) != NAS_OK) {
        fprintf(stderr, "strategy_study: %s\n", err.msg);
        nas_space_destroy(space);
        return 1;
    }
    st.T = o->budgets[o->n_budgets - 1];
    st.n_runs = (size_t)o->n_strats * o->seeds;
    const size_t NB = (size_t)o->n_budgets;
    st.head = shared_alloc(st.n_runs * sizeof *st.head);
    st.best = shared_alloc(st.n_runs * st.T * sizeof(double));
    st.ret_sig = shared_alloc(st.n_runs * NB * sizeof(double));
    st.ret_test = shared_alloc(st.n_runs * NB * sizeof(double));
    st.ret_geno = shared_alloc(st.n_runs * NB * NAS_GENOTYPE_STR_MAX);
    if (!st.head || !st.best || !st.ret_sig || !st.ret_test || !st.ret_geno) {
        fprintf(stderr, "strategy_study: out of memory\n");
        return 1;
    }
    if (!o->quiet)
        fprintf(stderr, "strategy_study: %d strategies x %d seeds x %d trials on %s (%s), "
                        "protocol %s, %d jobs\n", o->n_strats, o->seeds, st.T, o->table,
                o->signal, proto_names[o->protocol], o->jobs);
    fflush(NULL);
    /* run r = (strategy k, seed i) goes to job r % jobs */
    pid_t pids[256];
    int jobs = o->jobs;
    for (int j = 0; j < jobs; j++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "strategy_study: fork failed: %s\n", strerror(errno));
            return 1;
        }
        if (pid == 0) {
            size_t done = 0;
            for (size_t r = (size_t)j; r < st.n_runs; r += (size_t)jobs) {
                int k = (int)(r / (size_t)o->seeds), i = (int)(r % (size_t)o->seeds);
                nas_error e;
                nas_error_clear(&e);
                int rc = run_one(&st, &base, space, ev, k, o->seed0 + (uint64_t)i, r,
                                 &e);
                st.head[r].done = rc == NAS_OK ? 1 : -1;
                if (rc != NAS_OK)
                    snprintf(st.head[r].error, sizeof st.head[r].error, "%s", e.msg);
                done++;
                if (!o->quiet && j == 0)
                    fprintf(stderr, "\r  %s seed %llu done (%zu/%zu runs in this job)   ",
                            o->strats[k].name, (unsigned long long)(o->seed0 + (uint64_t)i),
                            done, (st.n_runs + (size_t)jobs - 1 - (size_t)j) / (size_t)jobs);
            }
            _exit(0);
        }
        pids[j] = pid;
    }
    int failed = 0;
    for (int j = 0; j < jobs; j++) {
        int status;
        if (waitpid(pids[j], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    if (!o->quiet)
        fprintf(stderr, "\n");
    for (size_t r = 0; r < st.n_runs; r++)
        if (st.head[r].done != 1) {
            fprintf(stderr, "strategy_study: run %s seed %llu failed: %s\n",
                    o->strats[r / (size_t)o->seeds].name,
                    (unsigned long long)(o->seed0 + r % (size_t)o->seeds),
                    st.head[r].done ? st.head[r].error : "worker died");
            failed = 1;
        }
    nas_evaluator_destroy(ev);
    nas_space_destroy(space);
    if (failed)
        return 1;
    mkdir(o->out, 0777); /* may exist */
    return write_outputs(&st) == 0 ? 0 : 1;
}
