/*
 * space/config.c - the space.conf language (libconfig syntax).
 *
 * Two passes, as in nas/space.h: pass 1 walks the libconfig tree and copies
 * every setting into a plain nas_config (checking names and types, since a
 * string cannot be stored into an int); pass 2 validates the filled struct
 * (ranges, choices that depend on each other). Both passes report
 * "FILE:LINE: what, expected what" with NAS_ECONFIG.
 *
 * Every key is described once, in the `fields` table below: its group, name,
 * kind, storage, default range and allowed words. Parsing, validation,
 * error messages ("expected one of: ...") and the canonical text are all
 * driven by that table, so they cannot drift apart. docs/space-conf.md lists
 * the same keys; tests/unit/test_config.c checks that every key and its
 * default appear there.
 */
#include <errno.h>    /* errno */
#include <float.h>    /* DBL_DIG */
#include <limits.h>   /* INT_MAX, INT64_MAX */
#include <math.h>     /* isfinite */
#include <stdarg.h>   /* va_list */
#include <stddef.h>   /* offsetof */
#include <stdint.h>   /* INT64_MAX */
#include <stdio.h>    /* snprintf, fopen */
#include <stdlib.h>   /* malloc, strtod, realpath */
#include <string.h>   /* strcmp, strlen, strrchr */
#include <libconfig.h> /* config_t, config_read_file, config_setting_* */
#include "nas/layers.h" /* nas_space_check_input */
#include "nas/space.h"
#include "nas/suggest.h" /* nas_suggest_hint: "did you mean" */
#include "space_impl.h"
#include "chain_config.h"
#include "text_impl.h"
#include "space/config_include.h" /* issue 29: @include paths */
#include "nas/parse.h" /* issue 33: nas_parse_duration */

/* Fashion-MNIST has 60,000 training images; valid and train_subset split them. */
#define NAS__FMNIST_TRAIN 60000
/* Most images data.valid and data.train_subset may name (data.format set). */
#define NAS__DATA_MAX_N 1000000000

/* ---- the key table --------------------------------------------------------- */

typedef enum fkind {
    F_INT,      /* int, range [min, max] */
    F_U64,      /* uint64_t (seed), range [min, max] */
    F_FLOAT,    /* double; int or float literal; range [min, max] */
    F_BOOL,     /* int 0/1 from true/false */
    F_STR,      /* char[size], any text (length-checked) */
    F_WORD,     /* char[size], one of `words` */
    F_ENUM,     /* int (an enum), index into `words` */
    F_PATH,     /* char[size]; relative paths resolved against the file's dir */
    F_NAME,     /* experiment name: non-empty, printable */
    F_OPS,      /* space.ops: list of op names -> op_mask */
    F_NODES,    /* space.nodes: must be 4 */
    F_GPUS,     /* workers.gpus: list of ints or "all" */
    F_OBJECTIVES, /* objectives: list of { metric; goal; } */
    F_FLOATS,   /* double[16] at off, its count (int) at offset `size`; [min, max] per value */
    F_SIZE,     /* int[2] (height, width): an int or [H, W] or [S]; [min, max] each; 0 = unset */
    F_COUNT_FRAC, /* int count at off in [min, max], or a float fraction in (0, 1) stored as a
                    double at offset `size` (the count is then 0); data.valid, issue 16 */
    F_DURATION, /* double seconds in [min, max]: a number, or a string such as "30m"
                   (nas_parse_duration); search.time_limit, issue 33 */
    F_GENOTYPES /* search.enqueue (issue 33): a list of genotype strings, parsed by the
                   space's parser in pass 2 (check_enqueue) */
} fkind;

typedef struct field {
    const char *group; /* "" for top level, "search.nao" for nested */
    const char *key;
    fkind kind;
    size_t off;  /* offsetof(nas_config, ...) */
    size_t size; /* bytes of a string field */
    double min, max;
    const char *const *words; /* NULL-terminated choices for F_WORD / F_ENUM */
    int policy; /* 1: storage policy only (what is kept on disk, not what is
                   searched): left out of the canonical text, the experiment's
                   identity, so changing it resumes the same experiment */
} field;

static const char *const w_dataset[] = {"fashion-mnist", NULL};
static const char *const w_format[] = {"idx", "npy", "cifar", "folder", NULL};
static const char *const w_layout[] = {"nhw", "nhwc", "nchw", NULL};
static const char *const w_space_type[] = {"cell", "chain", NULL};
static const char *const w_schedule[] = {"cosine", "constant", NULL};
static const char *const w_backend[] = {"cpu", "ref", "cuda", "auto", NULL};
static const char *const w_precision[] = {"fp32", "bf16", "fp16", NULL};
static const char *const w_strategy[] = {"random", "evolution", "nao", NULL};
static const char *const w_resource[] = {"epochs", "images", NULL};
static const char *const w_scheduler[] = {"none", "sh", "hyperband", "asha", NULL};
static const char *const w_evaluator[] = {"train", "table", "zero-cost", "supernet", NULL};
/* issue 31: nas/zerocost.h's proxies (the names of nas_zc_name; the space
 * layer cannot call the evaluator's nas_zc_from_name), data-free first:
 * the first W_ZC_DATA_FREE of them read no data (nas_zc_needs_data) */
static const char *const w_zc[] = {"synflow", "params", "macs", "naswot", "snip", "grad_norm",
                                   "jacob_cov", NULL};
#define W_ZC_DATA_FREE 3

/* 1 when `proxy` (a w_zc name) reads a minibatch of data. */
static int zc_needs_data(const char *proxy)
{
    for (int i = 0; i < W_ZC_DATA_FREE; i++)
        if (!strcmp(proxy, w_zc[i]))
            return 0;
    return proxy[0] != '\0';
}

static const char *const w_device[] = {"cpu", "cuda", "auto", NULL};
static const char *const w_metric[] = {"val_accuracy", "latency_ms", "macs", "params", NULL};

#define OFF(m) offsetof(nas_config, m)
#define SZ(m) sizeof(((nas_config *)0)->m)
#define I(g, k, m, lo, hi) {g, k, F_INT, OFF(m), 0, lo, hi, NULL, 0}
#define D(g, k, m, lo, hi) {g, k, F_FLOAT, OFF(m), 0, lo, hi, NULL, 0}
#define B(g, k, m) {g, k, F_BOOL, OFF(m), 0, 0, 1, NULL, 0}
#define S(g, k, m) {g, k, F_STR, OFF(m), SZ(m), 0, 0, NULL, 0}
#define W(g, k, m, w) {g, k, F_WORD, OFF(m), SZ(m), 0, 0, w, 0}
#define E(g, k, m, w) {g, k, F_ENUM, OFF(m), 0, 0, 0, w, 0}
#define P(g, k, m) {g, k, F_PATH, OFF(m), SZ(m), 0, 0, NULL, 0}
#define X(g, k, kind) {g, k, kind, 0, 0, 0, 0, NULL, 0}
#define IP(g, k, m, lo, hi) {g, k, F_INT, OFF(m), 0, lo, hi, NULL, 1}
#define DP(g, k, m, lo, hi) {g, k, F_FLOAT, OFF(m), 0, lo, hi, NULL, 1}

/* Order here is the order of the canonical text: never reorder, only add. */
static const field fields[] = {
    {"", "experiment", F_NAME, OFF(experiment), SZ(experiment), 0, 0, NULL, 0},
    {"", "seed", F_U64, OFF(seed), 0, 0, (double)INT64_MAX, NULL, 0},

    /* data.dataset: one of w_dataset unless data.format is set (checked in pass 2) */
    S("data", "dataset", data.dataset),
    P("data", "dir", data.dir),
    I("data", "train_subset", data.train_subset, 0, NAS__DATA_MAX_N),
    {"data", "valid", F_COUNT_FRAC, OFF(data.valid), OFF(data.valid_fraction), 1, NAS__DATA_MAX_N,
     NULL, 0},
    /* issue 16: the data's own format and files (docs/data.md) */
    W("data", "format", data.format, w_format),
    P("data", "train_images", data.train_images),
    P("data", "train_labels", data.train_labels),
    P("data", "test_images", data.test_images),
    P("data", "test_labels", data.test_labels),
    W("data", "layout", data.layout, w_layout),
    {"data", "mean", F_FLOATS, OFF(data.mean), OFF(data.n_mean), -1e30, 1e30, NULL, 0},
    {"data", "std", F_FLOATS, OFF(data.std), OFF(data.n_std), 1e-30, 1e30, NULL, 0},
    {"data", "size", F_SIZE, OFF(data.size), 0, 1, 8192, NULL, 0}, /* folder: resize to [H, W] */
    /* issue 16: augmentation during the search, batches prepared ahead */
    S("data", "augment", data.augment),
    I("data", "loader_threads", data.loader_threads, 0, 16),

    E("space", "type", space.type, w_space_type),
    X("space", "nodes", F_NODES),
    X("space", "ops", F_OPS),
    I("space", "channels", space.channels, 1, 1024),
    I("space", "stages", space.stages, 1, 6),
    I("space", "cells_per_stage", space.cells_per_stage, 1, 32),

    I("proxy", "epochs", proxy.epochs, 1, 1000),
    I("proxy", "batch_size", proxy.batch_size, 1, 65536),
    D("proxy", "lr", proxy.lr, 0, 10),
    D("proxy", "momentum", proxy.momentum, 0, 0.999),
    B("proxy", "nesterov", proxy.nesterov),
    D("proxy", "weight_decay", proxy.weight_decay, 0, 1),
    E("proxy", "schedule", proxy.schedule, w_schedule),
    I("proxy", "threads", proxy.threads, 1, 256),
    W("proxy", "backend", proxy.backend, w_backend),
    W("proxy", "precision", proxy.precision, w_precision),
    B("proxy", "keep_weights", proxy.keep_weights),
    IP("proxy", "keep_top", proxy.keep_top, 0, 1000000),
    DP("proxy", "weights_mb", proxy.weights_mb, 0, 1e9),
    I("proxy", "bn_recalibrate", proxy.bn_recalibrate, 0, 100000), /* issue 30: batches; defining */

    E("search", "strategy", search.strategy, w_strategy),
    I("search", "trials", search.trials, 1, 1000000),
    I("search", "population", search.population, 2, 100000),
    I("search", "sample_size", search.sample_size, 1, 100000),
    I("search.nao", "seed_archs", search.nao.seed_archs, 1, 100000),
    I("search.nao", "top_k", search.nao.top_k, 1, 100000),
    I("search.nao", "embed_size", search.nao.embed_size, 1, 4096),
    I("search.nao", "hidden_size", search.nao.hidden_size, 1, 4096),
    I("search.nao", "epochs", search.nao.epochs, 1, 100000),
    D("search.nao", "lr", search.nao.lr, 1e-8, 1),
    D("search.nao", "tradeoff", search.nao.tradeoff, 0, 1),
    D("search.nao", "step", search.nao.step, 1e-8, 1e6),
    D("search.nao", "step_growth", search.nao.step_growth, 1, 100),
    I("search.nao", "max_steps", search.nao.max_steps, 1, 10000),
    I("search.nao", "batch_per_round", search.nao.batch_per_round, 1, 10000),
    I("search.nao", "beam_width", search.nao.beam_width, 1, 1000),
    I("search.nao", "max_edit", search.nao.max_edit, 0, 1000),
    D("search.nao", "rank_weight", search.nao.rank_weight, 0, 100),
    B("search.nao", "fill_neighbours", search.nao.fill_neighbours),
    /* issue 17: multi-fidelity search (docs/multi-fidelity.md) */
    E("search.fidelity", "resource", search.fidelity.resource, w_resource),
    I("search.fidelity", "min", search.fidelity.min, 1, 1000000000),
    I("search.fidelity", "max", search.fidelity.max, 1, 1000000000),
    I("search.fidelity", "eta", search.fidelity.eta, 2, 100),
    E("search.fidelity", "scheduler", search.fidelity.scheduler, w_scheduler),
    /* issue 33: a time budget (running) and known architectures first (defining); here,
     * at the end of the search group, so that the canonical text still reads back as
     * libconfig groups (export/export_source.c, canonical_to_conf) */
    {"search", "time_limit", F_DURATION, OFF(search.time_limit), 0, 0, 1e9, NULL, 0},
    X("search", "enqueue", F_GENOTYPES),
    /* issue 31: zero-cost warm-up and move proposal (docs/zero-cost.md); before the
     * evaluator group, so that the canonical text reads back as libconfig groups */
    W("search.warmup", "proxy", search.warmup.proxy, w_zc),
    I("search.warmup", "candidates", search.warmup.candidates, 1, 1000000),
    I("search.warmup", "top", search.warmup.top, 1, 100000),
    W("search.evolution.move_proposal", "proxy", search.move_proposal.proxy, w_zc),
    I("search.evolution.move_proposal", "candidates", search.move_proposal.candidates, 1, 10000),

    E("evaluator", "kind", evaluator.kind, w_evaluator),
    P("evaluator", "table", evaluator.table),
    S("evaluator", "column", evaluator.column),
    S("evaluator", "test_column", evaluator.test_column),
    D("evaluator", "table_scale", evaluator.table_scale, 1e-12, 1e12),
    I("evaluator", "latency_runs", evaluator.latency_runs, 1, 100000),
    I("evaluator", "latency_warmup", evaluator.latency_warmup, 0, 100000),
    W("evaluator", "proxy", evaluator.proxy, w_zc), /* issue 31, kind "zero-cost" */
    /* issue 32: the one-shot supernet (docs/one-shot.md); retrain_top is running */
    I("supernet", "epochs", supernet.epochs, 1, 10000),
    I("supernet", "batch_size", supernet.batch_size, 0, 65536),
    D("supernet", "lr", supernet.lr, 0, 10),
    I("supernet", "recal_batches", supernet.recal_batches, 0, 100000),
    I("supernet", "valid", supernet.valid, 0, NAS__DATA_MAX_N),
    IP("supernet", "retrain_top", supernet.retrain_top, 0, NAS_SUPERNET_FINALISTS_MAX),

    X("", "objectives", F_OBJECTIVES),

    D("constraints", "latency_ms", constraints.latency_ms, 0, 1e9),
    D("constraints", "mmacs", constraints.mmacs, 0, 1e12),
    D("constraints", "params", constraints.params, 0, 1e15),

    I("workers", "count", workers.count, 0, 1024),
    W("workers", "device", workers.device, w_device),
    I("workers", "trial_timeout_s", workers.trial_timeout_s, 0, 7 * 24 * 3600),
    I("workers", "heartbeat_s", workers.heartbeat_s, 1, 3600),
    I("workers", "max_retries", workers.max_retries, 0, 100),
    {"workers", "gpus", F_GPUS, 0, 0, 0, 255, NULL, 0},
    I("workers", "trials_per_gpu", workers.trials_per_gpu, 1, 64),
    B("workers", "ordered", workers.ordered),
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

/* Groups, in canonical order; "" is the file's top level. */
static const char *const groups[] = {"",          "data",      "space",       "proxy",  "search",
                                     "search.nao", "evaluator", "constraints", "workers",
                                     "search.fidelity", "search.warmup", "search.evolution",
                                     "search.evolution.move_proposal", "supernet"};
#define N_GROUPS (sizeof groups / sizeof groups[0])

/*
 * Issue 30: defining keys whose default changed from one nas version to the
 * next (the examples' data.valid moved to the default; proxy.bn_recalibrate
 * went from 0 to 10). An experiment made before keeps what it was made with
 * when a config leaves the key unset (nas_config_stored_defaults): the
 * stored value, or `absent` when its canonical text has no line for the key
 * (made before the key existed; NULL: every stored text has it). `set` is
 * the nas_config flag that says the file sets the key.
 */
static const struct changed_default {
    const char *group, *key, *absent;
    size_t set;
} changed_defaults[] = {
    {"data", "valid", NULL, OFF(data.valid_set)},
    {"proxy", "bn_recalibrate", "0", OFF(proxy.bn_recalibrate_set)},
};
#define N_CHANGED (sizeof changed_defaults / sizeof changed_defaults[0])

#define NAS__GPU_MAX ((int)(sizeof(((nas_config *)0)->workers.gpus) / sizeof(int)))

/* ---- defaults ---------------------------------------------------------------- */

void nas_config_defaults(nas_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 42;

    snprintf(cfg->data.dataset, sizeof cfg->data.dataset, "fashion-mnist");
    snprintf(cfg->data.dir, sizeof cfg->data.dir, "/usr/share/datasets/fashion-mnist");
    cfg->data.train_subset = 0;
    cfg->data.valid = 5000;
    cfg->data.loader_threads = 1;

    cfg->space.type = NAS_SPACE_CELL;
    cfg->space.op_mask = NAS__ALL_OPS_MASK;
    cfg->space.channels = 16;
    cfg->space.stages = 3;
    cfg->space.cells_per_stage = 1;

    cfg->proxy.epochs = 1;
    cfg->proxy.batch_size = 128;
    cfg->proxy.lr = 0.05;
    cfg->proxy.momentum = 0.9;
    cfg->proxy.nesterov = 1;
    cfg->proxy.weight_decay = 5e-4;
    cfg->proxy.schedule = NAS_SCHEDULE_COSINE;
    cfg->proxy.threads = 2;
    snprintf(cfg->proxy.backend, sizeof cfg->proxy.backend, "cpu");
    snprintf(cfg->proxy.precision, sizeof cfg->proxy.precision, "fp32");
    cfg->proxy.keep_weights = -1; /* not set: keep the best keep_top trials' weights */
    cfg->proxy.keep_top = 5;
    cfg->proxy.weights_mb = 100;
    cfg->proxy.bn_recalibrate = 10; /* issue 30: was 0 (changed_defaults), docs/proxy.md */

    cfg->search.strategy = NAS_STRATEGY_EVOLUTION;
    cfg->search.trials = 20;
    cfg->search.population = 10;
    cfg->search.sample_size = 3;
    cfg->search.nao.seed_archs = 20;
    cfg->search.warmup.candidates = 100; /* issue 31: proxy "" = no warm-up */
    cfg->search.warmup.top = 10;
    cfg->search.move_proposal.candidates = 10;
    cfg->search.nao.top_k = 5;
    cfg->search.nao.embed_size = 16;
    cfg->search.nao.hidden_size = 32;
    cfg->search.nao.epochs = 30;
    cfg->search.nao.lr = 0.005;
    cfg->search.nao.tradeoff = 0.8;
    cfg->search.nao.step = 0.1;
    cfg->search.nao.step_growth = 1.5;
    cfg->search.nao.max_steps = 8;
    cfg->search.nao.batch_per_round = 2;
    cfg->search.nao.beam_width = 16;
    cfg->search.nao.max_edit = 1;
    cfg->search.nao.rank_weight = 0.0;
    cfg->search.nao.fill_neighbours = 1;
    cfg->search.fidelity.resource = NAS_FIDELITY_EPOCHS;
    cfg->search.fidelity.min = 1;
    cfg->search.fidelity.max = 9;
    cfg->search.fidelity.eta = 3;
    cfg->search.fidelity.scheduler = NAS_FIDELITY_NONE;

    cfg->evaluator.kind = NAS_EVALUATOR_TRAIN;
    cfg->evaluator.table[0] = '\0';
    snprintf(cfg->evaluator.column, sizeof cfg->evaluator.column, "cifar10-val");
    cfg->evaluator.test_column[0] = '\0';
    cfg->evaluator.table_scale = 0.01;
    cfg->evaluator.latency_runs = 20;
    cfg->evaluator.latency_warmup = 3;

    cfg->supernet.epochs = 20; /* issue 32 */
    cfg->supernet.recal_batches = 4;
    cfg->supernet.valid = 1000;
    cfg->supernet.retrain_top = 5;

    cfg->n_objectives = 1;
    snprintf(cfg->objectives[0].metric, sizeof cfg->objectives[0].metric, "val_accuracy");
    cfg->objectives[0].maximize = 1;

    cfg->constraints.latency_ms = 0;
    cfg->constraints.mmacs = 0;
    cfg->constraints.params = 0;

    cfg->workers.count = 1;
    snprintf(cfg->workers.device, sizeof cfg->workers.device, "cpu");
    cfg->workers.trial_timeout_s = 0;
    cfg->workers.heartbeat_s = 5;
    cfg->workers.max_retries = 1;
    cfg->workers.n_gpus = -1;
    cfg->workers.trials_per_gpu = 1;
    cfg->workers.ordered = 1;
}

/* ---- parse context and messages --------------------------------------------- */

typedef struct ctx {
    const char *name;           /* file name used in messages */
    char base_dir[NAS_PATH_MAX]; /* for relative paths; "" = leave them relative */
    nas_error *err;
    nas_config *cfg;
    int line[N_FIELDS];         /* line of each key as set, 0 = default */
    const char *file[N_FIELDS]; /* file of each key (differs under @include) */
    int group_line[N_GROUPS];
    int nodes;                  /* space.nodes as read */
    char name_dir[NAS_PATH_MAX]; /* directory part of `name` ("" if none) */
    nas__cfg_includes inc;      /* rewritten @include'd files (space/config_include.c) */
    int enq_line[NAS_ENQUEUE_MAX];         /* issue 33: line of each search.enqueue entry */
    const char *enq_file[NAS_ENQUEUE_MAX]; /* ... and its file */
} ctx;

static const char *type_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP: return "a group";
    case CONFIG_TYPE_INT: return "an integer";
    case CONFIG_TYPE_INT64: return "a 64-bit integer";
    case CONFIG_TYPE_FLOAT: return "a float";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_ARRAY: return "an array";
    case CONFIG_TYPE_LIST: return "a list";
    }
    return "an empty setting";
}

static const char *setting_file(const ctx *c, const config_setting_t *s)
{
    const char *f = s ? config_setting_source_file(s) : NULL;
    if (!f || strcmp(f, c->name) == 0)
        return c->name;
    /* an @include'd file: its path is already the one the user sees (the
     * config's directory joined to it), or a rewritten copy's */
    return nas__cfg_includes_name(&c->inc, f);
}

/* "FILE:LINE: " + message, code NAS_ECONFIG. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int fail_at(const ctx *c, const char *file, int line, const char *fmt, ...)
{
    char msg[sizeof c->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nas_error_set(c->err, NAS_ECONFIG, "%s:%d: %s", file ? file : c->name, line, msg);
}

#define FAIL_S(c, s, ...) fail_at((c), setting_file((c), (s)), (s) ? config_setting_source_line(s) : 0, __VA_ARGS__)

static void full_key(const field *f, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", f->group, f->group[0] ? "." : "", f->key);
}

static void list_words(const char *const *w, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; w[i]; i++) {
        int k = snprintf(buf + used, n - used, "%s\"%s\"", i ? ", " : "", w[i]);
        if (k < 0 || (size_t)k >= n - used)
            return;
        used += (size_t)k;
    }
}

/* Valid names inside group `g`: its keys, then its subgroups. */
static void list_keys(const char *g, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    size_t glen = strlen(g);
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (strcmp(fields[i].group, g) != 0)
            continue;
        int k = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", fields[i].key);
        if (k < 0 || (size_t)k >= n - used)
            return;
        used += (size_t)k;
    }
    for (size_t i = 1; i < N_GROUPS; i++) {
        const char *sub = groups[i];
        if (glen ? (strncmp(sub, g, glen) != 0 || sub[glen] != '.') : strchr(sub, '.') != NULL)
            continue;
        int k = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", sub + (glen ? glen + 1 : 0));
        if (k < 0 || (size_t)k >= n - used)
            return;
        used += (size_t)k;
    }
}

static void *field_ptr(nas_config *cfg, const field *f) { return (char *)cfg + f->off; }
static const void *field_cptr(const nas_config *cfg, const field *f)
{
    return (const char *)cfg + f->off;
}

/* ---- pass 1: read the tree ------------------------------------------------------ */

static int is_int(const config_setting_t *s)
{
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
}

static int range_error(const ctx *c, const config_setting_t *s, const field *f, const char *val)
{
    char key[160];
    full_key(f, key, sizeof key);
    if (f->kind == F_U64 && config_setting_type(s) == CONFIG_TYPE_INT)
        return FAIL_S(c, s, "%s = %s is out of range, expected an integer in [0, 2^63-1] "
                      "(libconfig reads a literal beyond 2147483647 as 32 bits, wrapped: write "
                      "it with an L suffix, e.g. %s = 12345678901L)", key, val, key);
    if (f->kind == F_U64)
        return FAIL_S(c, s, "%s = %s is out of range, expected an integer in [0, 2^63-1]", key, val);
    return FAIL_S(c, s, "%s = %s is out of range, expected an integer in [%.17g, %.17g]", key, val,
                  f->min, f->max);
}

static int type_error(const ctx *c, const config_setting_t *s, const char *key, const char *want)
{
    return FAIL_S(c, s, "%s is %s, expected %s", key, type_name(config_setting_type(s)), want);
}

static int copy_string(const ctx *c, const config_setting_t *s, const char *key, const char *v,
                       char *dst, size_t size)
{
    size_t len = strlen(v);
    if (len >= size)
        return FAIL_S(c, s, "%s is %zu characters long, expected at most %zu", key, len, size - 1);
    memcpy(dst, v, len + 1);
    return NAS_OK;
}

/* Lexically tidy a path in place: drop "." segments and repeated '/',
 * fold "dir/.." (but keep leading ".." of a relative path). */
static void tidy_path(char *p)
{
    int abs = p[0] == '/';
    char *seg[NAS_PATH_MAX / 2];
    int n = 0;
    char *save = NULL;
    char copy[2 * NAS_PATH_MAX + 2];
    snprintf(copy, sizeof copy, "%s", p);
    for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (strcmp(t, ".") == 0)
            continue;
        if (strcmp(t, "..") == 0 && n > 0 && strcmp(seg[n - 1], "..") != 0) {
            n--;
            continue;
        }
        if (strcmp(t, "..") == 0 && abs)
            continue; /* "/.." is "/" */
        if (n < (int)(sizeof seg / sizeof seg[0]))
            seg[n++] = t;
    }
    size_t used = 0, cap = strlen(p) + 1;
    if (abs)
        p[used++] = '/';
    for (int i = 0; i < n; i++) {
        int w = snprintf(p + used, cap - used, "%s%s", i ? "/" : "", seg[i]);
        if (w < 0 || (size_t)w >= cap - used)
            break;
        used += (size_t)w;
    }
    if (used == 0)
        p[used++] = '.';
    p[used] = '\0';
}

static int read_path(const ctx *c, const config_setting_t *s, const char *key, const char *v,
                     char *dst, size_t size)
{
    if (v[0] == '\0')
        return copy_string(c, s, key, v, dst, size);
    char joined[2 * NAS_PATH_MAX + 2];
    if (v[0] == '/' || c->base_dir[0] == '\0')
        snprintf(joined, sizeof joined, "%s", v);
    else
        snprintf(joined, sizeof joined, "%s/%s", c->base_dir, v);
    tidy_path(joined);
    return copy_string(c, s, key, joined, dst, size);
}

static int read_ops(ctx *c, const config_setting_t *s)
{
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
        return type_error(c, s, "space.ops", "an array of op names like [\"nor_conv_3x3\", \"skip_connect\"]");
    int n = config_setting_length(s);
    unsigned mask = 0;
    char list[256];
    nas__op_list(0, list, sizeof list);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING)
            return FAIL_S(c, e, "space.ops[%d] is %s, expected an op name (one of: %s)", i,
                          type_name(config_setting_type(e)), list);
        const char *name = config_setting_get_string(e);
        int op;
        if (nas_op_from_name(name, &op) != NAS_OK)
        {
            char hint[96];
            return FAIL_S(c, e, "unknown op '%s' in space.ops, expected one of: %s%s", name, list,
                          nas_suggest_hint(name, list, hint, sizeof hint));
        }
        if (mask & (1u << op))
            return FAIL_S(c, e, "op '%s' is listed twice in space.ops, expected each op once", name);
        mask |= 1u << op;
    }
    c->cfg->space.op_mask = mask; /* emptiness is checked in pass 2 */
    return NAS_OK;
}

static int read_gpus(ctx *c, const config_setting_t *s)
{
    int t = config_setting_type(s);
    const char *want = "a list of GPU ids like [0, 1] or the string \"all\"";
    if (t == CONFIG_TYPE_STRING) {
        if (strcmp(config_setting_get_string(s), "all") != 0)
            return FAIL_S(c, s, "workers.gpus = \"%s\", expected %s", config_setting_get_string(s),
                          want);
        c->cfg->workers.n_gpus = -1;
        return NAS_OK;
    }
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
        return type_error(c, s, "workers.gpus", want);
    int n = config_setting_length(s);
    if (n == 0)
        return FAIL_S(c, s, "workers.gpus is empty, expected %s", want);
    if (n > NAS__GPU_MAX)
        return FAIL_S(c, s, "workers.gpus has %d entries, expected at most %d", n, NAS__GPU_MAX);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (!is_int(e))
            return FAIL_S(c, e, "workers.gpus[%d] is %s, expected an integer GPU id", i,
                          type_name(config_setting_type(e)));
        long long v = config_setting_get_int64(e);
        if (v < 0 || v > 255)
            return FAIL_S(c, e, "workers.gpus[%d] = %lld is out of range, expected an integer in [0, 255]",
                          i, v);
        for (int j = 0; j < i; j++)
            if (c->cfg->workers.gpus[j] == (int)v)
                return FAIL_S(c, e, "GPU %lld is listed twice in workers.gpus, expected each id once", v);
        c->cfg->workers.gpus[i] = (int)v;
    }
    c->cfg->workers.n_gpus = n;
    return NAS_OK;
}

static int read_objectives(ctx *c, const config_setting_t *s)
{
    char metrics[160];
    list_words(w_metric, metrics, sizeof metrics);
    if (config_setting_type(s) != CONFIG_TYPE_LIST)
        return type_error(c, s, "objectives",
                          "a list of groups like ( { metric = \"val_accuracy\"; goal = \"max\"; } )");
    int n = config_setting_length(s);
    if (n == 0)
        return FAIL_S(c, s, "objectives is empty, expected at least one { metric = ...; goal = ...; }");
    if (n > NAS_MAX_OBJECTIVES)
        return FAIL_S(c, s, "objectives has %d entries, expected at most %d", n, NAS_MAX_OBJECTIVES);
    nas_config *cfg = c->cfg;
    cfg->n_objectives = 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *o = config_setting_get_elem(s, (unsigned)i);
        char key[64];
        snprintf(key, sizeof key, "objectives[%d]", i);
        if (config_setting_type(o) != CONFIG_TYPE_GROUP)
            return type_error(c, o, key, "a group { metric = \"...\"; goal = \"max\" | \"min\"; }");
        const char *metric = NULL;
        int goal = -1;
        const config_setting_t *metric_s = NULL;
        int m = config_setting_length(o);
        for (int j = 0; j < m; j++) {
            const config_setting_t *e = config_setting_get_elem(o, (unsigned)j);
            const char *name = config_setting_name(e);
            if (strcmp(name, "metric") == 0) {
                if (config_setting_type(e) != CONFIG_TYPE_STRING)
                    return type_error(c, e, "objectives.metric", "a string");
                metric = config_setting_get_string(e);
                metric_s = e;
                int k;
                for (k = 0; w_metric[k]; k++)
                    if (strcmp(w_metric[k], metric) == 0)
                        break;
                char hint[96];
                if (!w_metric[k])
                    return FAIL_S(c, e, "unknown metric \"%s\" in %s, expected one of: %s%s", metric, key,
                                  metrics, nas_suggest_hint(metric, metrics, hint, sizeof hint));
            } else if (strcmp(name, "goal") == 0) {
                if (config_setting_type(e) != CONFIG_TYPE_STRING)
                    return type_error(c, e, "objectives.goal", "a string");
                const char *v = config_setting_get_string(e);
                if (strcmp(v, "max") == 0)
                    goal = 1;
                else if (strcmp(v, "min") == 0)
                    goal = 0;
                else
                    return FAIL_S(c, e, "%s.goal = \"%s\", expected one of: \"max\", \"min\"", key, v);
            } else {
                char hint[96];
                return FAIL_S(c, e, "unknown key '%s' in %s, expected one of: metric, goal%s", name, key,
                              nas_suggest_hint(name, "metric, goal", hint, sizeof hint));
            }
        }
        if (!metric)
            return FAIL_S(c, o, "%s has no metric, expected metric = one of: %s", key, metrics);
        for (int j = 0; j < cfg->n_objectives; j++)
            if (strcmp(cfg->objectives[j].metric, metric) == 0)
                return FAIL_S(c, metric_s, "metric \"%s\" appears twice in objectives, expected each once",
                              metric);
        nas_objective *obj = &cfg->objectives[cfg->n_objectives++];
        snprintf(obj->metric, sizeof obj->metric, "%s", metric);
        /* Default goal: accuracy is maximised, costs are minimised. */
        obj->maximize = goal >= 0 ? goal : strcmp(metric, "val_accuracy") == 0;
    }
    return NAS_OK;
}

/* F_SIZE: `S` or `[S]` (S x S), `[H, W]`, each in [min, max]; `0` (the
 * canonical text of "not set") leaves it unset. */
static int read_size(ctx *c, const config_setting_t *s, const field *f, const char *key)
{
    int *dst = field_ptr(c->cfg, f), t = config_setting_type(s);
    int n = t == CONFIG_TYPE_ARRAY || t == CONFIG_TYPE_LIST ? config_setting_length(s) : is_int(s) ? 0 : -1;
    if (n == 0 && is_int(s) && config_setting_get_int64(s) == 0) {
        dst[0] = dst[1] = 0;
        return NAS_OK;
    }
    if (n < 0 || n > 2 || (n == 0 && !is_int(s)))
        return type_error(c, s, key, "an integer or [height, width], like [32, 32]");
    long long v[2];
    for (int i = 0; i < (n ? n : 1); i++) {
        const config_setting_t *e = n ? config_setting_get_elem(s, (unsigned)i) : s;
        if (!is_int(e))
            return type_error(c, s, key, "an integer or [height, width], like [32, 32]");
        v[i] = config_setting_get_int64(e);
        if (v[i] < f->min || v[i] > f->max)
            return FAIL_S(c, e, "%s = %lld is out of range, expected an image side in [%g, %g] "
                          "pixels", key, v[i], f->min, f->max);
    }
    dst[0] = (int)v[0];
    dst[1] = (int)(n == 2 ? v[1] : v[0]);
    return NAS_OK;
}

/* F_DURATION (issue 33): seconds as a number, or a string with a unit
 * (nas_parse_duration: "90s", "30m", "2h"); in [min, max]. */
static int read_duration(ctx *c, const config_setting_t *s, const field *f, const char *key)
{
    int t = config_setting_type(s);
    double v = NAN;
    const char *want = "seconds (a number) or a string such as \"90s\", \"30m\", \"2h\"";
    if (is_int(s))
        v = (double)config_setting_get_int64(s);
    else if (t == CONFIG_TYPE_FLOAT)
        v = config_setting_get_float(s);
    else if (t != CONFIG_TYPE_STRING)
        return type_error(c, s, key, "a duration: seconds (a number) or a string such as \"30m\"");
    else if (nas_parse_duration(config_setting_get_string(s), &v) != 0)
        return FAIL_S(c, s, "%s = \"%s\" is not a duration, expected %s", key,
                      config_setting_get_string(s), want);
    if (!(v >= f->min && v <= f->max))
        return FAIL_S(c, s, "%s = %g seconds is out of range, expected a duration in [%g, %g] "
                      "seconds (0: no limit)", key, v, f->min, f->max);
    *(double *)field_ptr(c->cfg, f) = v;
    return NAS_OK;
}

/* F_GENOTYPES (issue 33): a list of strings, each a genotype checked in
 * pass 2 (check_enqueue), where its line is remembered. */
static int read_genotypes(ctx *c, const config_setting_t *s, const char *key)
{
    int t = config_setting_type(s);
    const char *want = "a list of genotype strings like [\"|nor_conv_3x3~0|+|...|\"]";
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
        return type_error(c, s, key, want);
    int n = config_setting_length(s);
    if (n > NAS_ENQUEUE_MAX)
        return FAIL_S(c, s, "%s has %d genotypes, expected at most %d", key, n, NAS_ENQUEUE_MAX);
    nas_config *cfg = c->cfg;
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char ek[180];
        snprintf(ek, sizeof ek, "%s[%d]", key, i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING)
            return type_error(c, e, ek, "a genotype string");
        int rc = copy_string(c, e, ek, config_setting_get_string(e), cfg->search.enqueue[i],
                             sizeof cfg->search.enqueue[i]);
        if (rc != NAS_OK)
            return rc;
        c->enq_line[i] = config_setting_source_line(e);
        c->enq_file[i] = setting_file(c, e);
    }
    cfg->search.n_enqueue = n;
    return NAS_OK;
}

/* Issue 33: the keys a list makes a recipe choice of (docs/space-conf.md,
 * "Recipe choices"); their NAS_RECIPE_* index, or -1. */
static int recipe_key(const field *f)
{
    static const char *const keys[NAS_RECIPE_KEYS][2] = {
        {"proxy", "lr"}, {"proxy", "weight_decay"}, {"proxy", "batch_size"}, {"data", "augment"}};
    for (int k = 0; k < NAS_RECIPE_KEYS; k++)
        if (!strcmp(f->group, keys[k][0]) && !strcmp(f->key, keys[k][1]))
            return k;
    return -1;
}

/* One choice of a recipe list: a number in the key's range (an integer
 * for batch_size), or an augmentation policy, into choice j. */
static int read_choice(ctx *c, const field *f, int k, const config_setting_t *e, const char *ek,
                       int j)
{
    nas_recipe_choices *rc = &c->cfg->space.recipe;
    if (k == NAS_RECIPE_AUGMENT) {
        nas_augment a;
        if (config_setting_type(e) != CONFIG_TYPE_STRING)
            return type_error(c, e, ek, "an augmentation string such as \"crop4,flip\" or \"none\"");
        const char *v = config_setting_get_string(e);
        if (nas_augment_parse(v, &a) != 0)
            return FAIL_S(c, e, "%s = \"%s\" is not an augmentation, expected \"none\" or a list "
                                "of crop, cropN, flip, cutout, cutoutN such as \"crop4,flip\"", ek, v);
        nas_augment_format(&a, rc->augment[j], sizeof rc->augment[j]);
        for (int i = 0; i < j; i++)
            if (!strcmp(rc->augment[i], rc->augment[j]))
                return FAIL_S(c, e, "%s = \"%s\" repeats an earlier choice, expected each "
                                    "augmentation once", ek, rc->augment[j]);
        return NAS_OK;
    }
    double v;
    if (is_int(e))
        v = (double)config_setting_get_int64(e);
    else if (config_setting_type(e) == CONFIG_TYPE_FLOAT && f->kind == F_FLOAT)
        v = config_setting_get_float(e);
    else
        return type_error(c, e, ek, f->kind == F_INT ? "an integer" : "a number");
    if (!(v >= f->min && v <= f->max))
        return FAIL_S(c, e, "%s = %g is out of range, expected %s in [%g, %g]", ek, v,
                      f->kind == F_INT ? "an integer" : "a number", f->min, f->max);
    rc->num[k][j] = v;
    for (int i = 0; i < j; i++)
        if (rc->num[k][i] == v)
            return FAIL_S(c, e, "%s = %g repeats an earlier choice, expected each value once", ek, v);
    return NAS_OK;
}

/* Issue 33: `KEY = [a, b, ...]` where KEY takes one value: a recipe choice
 * of the search for the four keys recipe_key knows (each value once, at
 * most NAS_RECIPE_MAX_CHOICES; one value is that value), an error naming
 * them for any other key. The key's own field holds the first choice. */
static int read_choices(ctx *c, const field *f, const config_setting_t *s, const char *key)
{
    int k = recipe_key(f), n = config_setting_length(s);
    if (k < 0)
        return FAIL_S(c, s, "%s is a list, but only proxy.lr, proxy.weight_decay, "
                            "proxy.batch_size and data.augment may be a list of choices searched "
                            "with the architecture, expected one value", key);
    if (n < 1 || n > NAS_RECIPE_MAX_CHOICES)
        return FAIL_S(c, s, "%s has %d choices, expected 1 to %d", key, n, NAS_RECIPE_MAX_CHOICES);
    nas_recipe_choices *rc = &c->cfg->space.recipe;
    for (int j = 0; j < n; j++) {
        char ek[180];
        snprintf(ek, sizeof ek, "%s[%d]", key, j);
        int r = read_choice(c, f, k, config_setting_get_elem(s, (unsigned)j), ek, j);
        if (r != NAS_OK)
            return r;
    }
    rc->n[k] = n > 1 ? n : 0; /* one value: no decision */
    if (k == NAS_RECIPE_AUGMENT)
        snprintf(c->cfg->data.augment, sizeof c->cfg->data.augment, "%s", rc->augment[0]);
    else if (f->kind == F_INT)
        *(int *)field_ptr(c->cfg, f) = (int)rc->num[k][0];
    else
        *(double *)field_ptr(c->cfg, f) = rc->num[k][0];
    return NAS_OK;
}

static int read_field(ctx *c, size_t idx, const config_setting_t *s)
{
    const field *f = &fields[idx];
    nas_config *cfg = c->cfg;
    char key[160];
    full_key(f, key, sizeof key);
    c->line[idx] = config_setting_source_line(s);
    c->file[idx] = setting_file(c, s);
    int t = config_setting_type(s);
    if ((t == CONFIG_TYPE_ARRAY || t == CONFIG_TYPE_LIST) &&
        (f->kind == F_INT || f->kind == F_FLOAT || f->kind == F_BOOL || f->kind == F_STR ||
         f->kind == F_WORD || f->kind == F_ENUM || f->kind == F_U64))
        return read_choices(c, f, s, key); /* issue 33 */

    switch (f->kind) {
    case F_COUNT_FRAC: {
        double *frac = (double *)((char *)cfg + f->size);
        *frac = 0;
        if (t == CONFIG_TYPE_FLOAT) {
            double v = config_setting_get_float(s);
            if (!(v > 0 && v < 1))
                return FAIL_S(c, s, "%s = %g is out of range, expected an integer count or a "
                                    "fraction in (0, 1)", key, v);
            *frac = v;
            *(int *)field_ptr(cfg, f) = 0;
            return NAS_OK;
        }
        if (!is_int(s))
            return type_error(c, s, key, "an integer count or a fraction in (0, 1)");
        __attribute__((fallthrough)); /* a count: as F_INT */
    }
    case F_INT:
    case F_U64: {
        if (!is_int(s))
            return type_error(c, s, key, "an integer");
        long long v = config_setting_get_int64(s);
        char val[32];
        snprintf(val, sizeof val, "%lld", v);
        if (f->kind == F_U64) {
            if (v < 0)
                return range_error(c, s, f, val);
            *(uint64_t *)field_ptr(cfg, f) = (uint64_t)v;
        } else {
            if (v < INT_MIN || v > INT_MAX) /* does not fit: report the key's range now */
                return range_error(c, s, f, val);
            *(int *)field_ptr(cfg, f) = (int)v;
        }
        return NAS_OK;
    }
    case F_FLOAT: {
        double v;
        if (is_int(s))
            v = (double)config_setting_get_int64(s);
        else if (t == CONFIG_TYPE_FLOAT)
            v = config_setting_get_float(s);
        else
            return type_error(c, s, key, "a number");
        *(double *)field_ptr(cfg, f) = v;
        return NAS_OK;
    }
    case F_BOOL:
        if (t != CONFIG_TYPE_BOOL)
            return type_error(c, s, key, "true or false");
        *(int *)field_ptr(cfg, f) = config_setting_get_bool(s) ? 1 : 0;
        return NAS_OK;
    case F_STR:
    case F_NAME:
    case F_PATH:
    case F_WORD:
    case F_ENUM: {
        char words[256] = "";
        if (f->words)
            list_words(f->words, words, sizeof words);
        if (t != CONFIG_TYPE_STRING) {
            char want[300];
            snprintf(want, sizeof want, "a string%s%s", f->words ? ", one of: " : "", words);
            return type_error(c, s, key, want);
        }
        const char *v = config_setting_get_string(s);
        if (f->kind == F_PATH)
            return read_path(c, s, key, v, field_ptr(cfg, f), f->size);
        if (f->kind == F_STR || f->kind == F_NAME)
            return copy_string(c, s, key, v, field_ptr(cfg, f), f->size);
        int k;
        for (k = 0; f->words[k]; k++)
            if (strcmp(f->words[k], v) == 0)
                break;
        char hint[96];
        if (!f->words[k])
            return FAIL_S(c, s, "%s = \"%s\" is not a known choice, expected one of: %s%s", key, v, words,
                          nas_suggest_hint(v, words, hint, sizeof hint));
        if (f->kind == F_ENUM)
            *(int *)field_ptr(cfg, f) = k;
        else
            snprintf(field_ptr(cfg, f), f->size, "%s", v);
        return NAS_OK;
    }
    case F_OPS: return read_ops(c, s);
    case F_NODES:
        if (!is_int(s))
            return type_error(c, s, key, "an integer (4)");
        {
            long long v = config_setting_get_int64(s);
            c->nodes = (v < INT_MIN || v > INT_MAX) ? INT_MAX : (int)v;
        }
        return NAS_OK;
    case F_GPUS: return read_gpus(c, s);
    case F_OBJECTIVES: return read_objectives(c, s);
    case F_FLOATS: {
        if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
            return type_error(c, s, key, "an array of numbers, one per channel, like [0.49, 0.48, 0.45]");
        int n = config_setting_length(s);
        if (n < 1 || n > 16)
            return FAIL_S(c, s, "%s has %d values, expected 1 to 16 (one per channel)", key, n);
        double *dst = field_ptr(cfg, f);
        for (int i = 0; i < n; i++) {
            const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
            double v = is_int(e) ? (double)config_setting_get_int64(e)
                                 : config_setting_type(e) == CONFIG_TYPE_FLOAT ? config_setting_get_float(e)
                                                                               : NAN;
            if (!(v >= f->min && v <= f->max))
                return FAIL_S(c, e, "%s[%d] is not a number in [%g, %g]", key, i, f->min, f->max);
            dst[i] = v;
        }
        *(int *)((char *)cfg + f->size) = n;
        return NAS_OK;
    }
    case F_SIZE: return read_size(c, s, f, key);
    case F_DURATION: return read_duration(c, s, f, key);
    case F_GENOTYPES: return read_genotypes(c, s, key);
    }
    return FAIL_S(c, s, "internal error: key %s has no reader", key);
}

static int group_index(const char *g)
{
    for (size_t i = 0; i < N_GROUPS; i++)
        if (strcmp(groups[i], g) == 0)
            return (int)i;
    return -1;
}

static int read_group(ctx *c, const config_setting_t *grp, const char *gname)
{
    int n = config_setting_length(grp);
    for (int i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(grp, (unsigned)i);
        const char *name = config_setting_name(s);
        if (strcmp(gname, "space") == 0 && nas__chain_claims(name, s)) { /* space/chain_config.c */
            const config_setting_t *bad = s;
            char msg[900];
            if (nas__chain_read(s, &c->cfg->space, &bad, msg, sizeof msg) != NAS_OK)
                return FAIL_S(c, bad, "%s", msg);
            continue;
        }
        size_t idx;
        for (idx = 0; idx < N_FIELDS; idx++)
            if (strcmp(fields[idx].group, gname) == 0 && strcmp(fields[idx].key, name) == 0)
                break;
        if (idx < N_FIELDS) {
            int rc = read_field(c, idx, s);
            if (rc != NAS_OK)
                return rc;
            continue;
        }
        char sub[160];
        snprintf(sub, sizeof sub, "%s%s%s", gname, gname[0] ? "." : "", name);
        int gi = group_index(sub);
        char valid[1024], hint[96];
        list_keys(gname, valid, sizeof valid);
        if (gi < 0) {
            nas_suggest_hint(name, valid, hint, sizeof hint);
            if (config_setting_type(s) == CONFIG_TYPE_GROUP)
                return gname[0] ? FAIL_S(c, s, "unknown group '%s' in group '%s', expected one of: %s%s",
                                         name, gname, valid, hint)
                                : FAIL_S(c, s, "unknown group '%s', expected one of: %s%s", name, valid,
                                         hint);
            return gname[0] ? FAIL_S(c, s, "unknown key '%s' in group '%s', expected one of: %s%s", name,
                                     gname, valid, hint)
                            : FAIL_S(c, s, "unknown key '%s' at top level, expected one of: %s%s", name,
                                     valid, hint);
        }
        if (config_setting_type(s) != CONFIG_TYPE_GROUP)
            return type_error(c, s, sub, "a group { ... }");
        c->group_line[gi] = config_setting_source_line(s);
        int rc = read_group(c, s, sub);
        if (rc != NAS_OK)
            return rc;
    }
    return NAS_OK;
}

/* ---- pass 2: validate --------------------------------------------------------- */

/* Line for a message about field idx: where it was set, else its group's
 * opening line, else line 1. */
static int field_line(const ctx *c, size_t idx)
{
    if (c->line[idx])
        return c->line[idx];
    int g = group_index(fields[idx].group);
    if (g > 0 && c->group_line[g])
        return c->group_line[g];
    return 1;
}

static const char *field_file(const ctx *c, size_t idx) { return c->file[idx] ? c->file[idx] : c->name; }

static size_t field_index(const char *group, const char *key)
{
    for (size_t i = 0; i < N_FIELDS; i++)
        if (strcmp(fields[i].group, group) == 0 && strcmp(fields[i].key, key) == 0)
            return i;
    return 0; /* not reached for names in the table */
}

#define FAIL_F(c, idx, ...) fail_at((c), field_file((c), (idx)), field_line((c), (idx)), __VA_ARGS__)

static int validate_fidelity(ctx *c);
static int validate_zero_cost(ctx *c);
static int validate_supernet(ctx *c);

static int validate(ctx *c)
{
    nas_config *cfg = c->cfg;
    char key[160];
    for (size_t i = 0; i < N_FIELDS; i++) {
        const field *f = &fields[i];
        full_key(f, key, sizeof key);
        if (f->kind == F_INT ||
            (f->kind == F_COUNT_FRAC && *(const double *)((const char *)cfg + f->size) == 0)) {
            int v = *(const int *)field_cptr(cfg, f);
            if (v < f->min || v > f->max)
                return FAIL_F(c, i, "%s = %d is out of range, expected an integer in [%.17g, %.17g]", key,
                              v, f->min, f->max);
        } else if (f->kind == F_FLOAT) {
            double v = *(const double *)field_cptr(cfg, f);
            if (!(v >= f->min && v <= f->max))
                return FAIL_F(c, i, "%s = %g is out of range, expected a number in [%g, %g]", key, v,
                              f->min, f->max);
        } else if (f->kind == F_NAME) {
            const char *v = (const char *)field_cptr(cfg, f);
            if (v[0] == '\0')
                return FAIL_F(c, i, "experiment name is empty, expected a name (experiment = \"...\";)");
            if (!nas_config_name_ok(v))
                return FAIL_F(c, i, "experiment name contains a control character, expected "
                                    "printable text");
        }
    }
    if (cfg->space.type == NAS_SPACE_CHAIN) { /* keys of the cell space only */
        static const char *const cell_keys[] = {"nodes", "ops", "channels", "stages", "cells_per_stage"};
        for (size_t k = 0; k < sizeof cell_keys / sizeof cell_keys[0]; k++) {
            size_t i = field_index("space", cell_keys[k]);
            if (c->line[i])
                return FAIL_F(c, i, "space.%s belongs to the cell space, expected it only with "
                                    "space.type = \"cell\" (a chain space has stem, stages = ( ... ), "
                                    "head)", cell_keys[k]);
        }
    }
    {
        int gl = c->group_line[group_index("space")], line = 0;
        char msg[900];
        if (nas__chain_validate(&cfg->space, gl ? gl : 1, &line, msg, sizeof msg) != NAS_OK)
            return fail_at(c, c->file[field_index("space", "type")] ? c->file[field_index("space", "type")]
                                                                     : c->name,
                           line, "%s", msg);
    }
    size_t i_nodes = field_index("space", "nodes");
    if (c->nodes != 4)
        return FAIL_F(c, i_nodes, "space.nodes = %d is out of range, expected 4 (the NAS-Bench-201 "
                                  "cell has 4 nodes)", c->nodes);
    size_t i_ops = field_index("space", "ops");
    if (cfg->space.op_mask == 0)
        return FAIL_F(c, i_ops, "space.ops is empty, expected at least one op other than \"none\"");
    if (!(cfg->space.op_mask & ~(1u << NAS_OP_NONE)))
        return FAIL_F(c, i_ops, "space.ops holds only \"none\", expected at least one op that "
                                "carries data (no cell could connect input to output)");
    size_t i_ds = field_index("data", "dataset");
    if (cfg->data.format[0] == '\0' && strcmp(cfg->data.dataset, w_dataset[0]) != 0) {
        char words[64], hint[96];
        list_words(w_dataset, words, sizeof words);
        return FAIL_F(c, i_ds, "data.dataset = \"%s\" is not a known choice, expected one of: %s "
                               "(or set data.format to read your own files: idx, npy, cifar, folder)%s",
                      cfg->data.dataset, words,
                      nas_suggest_hint(cfg->data.dataset, words, hint, sizeof hint));
    }
    if (cfg->data.format[0] != '\0') {
        if (c->line[i_ds] == 0) /* a label for messages and exports: the format's name */
            snprintf(cfg->data.dataset, sizeof cfg->data.dataset, "%s", cfg->data.format);
        int files = strcmp(cfg->data.format, "cifar") != 0 && strcmp(cfg->data.format, "folder") != 0;
        if (cfg->data.size[0] > 0 && strcmp(cfg->data.format, "folder") != 0)
            return FAIL_F(c, field_index("data", "size"), "data.size resizes the images of data.format "
                          "= \"folder\" only, not \"%s\"", cfg->data.format);
        if (files && (cfg->data.train_images[0] == '\0' || cfg->data.train_labels[0] == '\0'))
            return FAIL_F(c, field_index("data", "format"),
                          "data.format = \"%s\" needs data.train_images and data.train_labels, "
                          "expected the paths of the training images and labels", cfg->data.format);
        if (files && (cfg->data.test_images[0] == '\0') != (cfg->data.test_labels[0] == '\0'))
            return FAIL_F(c, field_index("data", cfg->data.test_images[0] ? "test_images" : "test_labels"),
                          "data.test_images and data.test_labels go together, expected both or neither");
        if (cfg->data.train_subset > 0 && (long long)cfg->data.train_subset + cfg->data.valid > NAS__DATA_MAX_N)
            return FAIL_F(c, field_index("data", "train_subset"),
                          "data.train_subset + data.valid exceeds %d images", NAS__DATA_MAX_N);
        if (cfg->data.n_mean != cfg->data.n_std)
            return FAIL_F(c, field_index("data", cfg->data.n_mean ? "mean" : "std"),
                          "data.mean has %d values and data.std %d, expected both with one value "
                          "per channel, or neither (computed on the training split)",
                          cfg->data.n_mean, cfg->data.n_std);
    } else if (cfg->data.size[0] > 0) {
        return FAIL_F(c, field_index("data", "size"), "data.size needs data.format = \"folder\"");
    } else if (cfg->data.n_mean || cfg->data.n_std) {
        return FAIL_F(c, field_index("data", cfg->data.n_mean ? "mean" : "std"),
                      "data.mean and data.std need data.format (fashion-mnist keeps its fixed "
                      "0.2860 and 0.3530)");
    } else if (cfg->data.valid > NAS__FMNIST_TRAIN - 1 || cfg->data.train_subset > NAS__FMNIST_TRAIN - 1) {
        size_t i = field_index("data", cfg->data.valid > NAS__FMNIST_TRAIN - 1 ? "valid" : "train_subset");
        return FAIL_F(c, i, "data.%s = %d is out of range, expected an integer in [%d, %d] (fashion-mnist "
                            "has %d training images)", fields[i].key,
                      *(const int *)field_cptr(cfg, &fields[i]), i == field_index("data", "valid"),
                      NAS__FMNIST_TRAIN - 1, NAS__FMNIST_TRAIN);
    }
    int fm_valid = cfg->data.valid_fraction > 0 ? nas_config_valid_count(&cfg->data, NAS__FMNIST_TRAIN)
                                                : cfg->data.valid;
    if (cfg->data.format[0] == '\0' && cfg->data.train_subset + fm_valid > NAS__FMNIST_TRAIN) {
        size_t i = field_index("data", c->line[field_index("data", "train_subset")] ? "train_subset" : "valid");
        return FAIL_F(c, i, "data.train_subset + data.valid = %d exceeds the %d training images of "
                            "fashion-mnist, expected at most %d",
                      cfg->data.train_subset + fm_valid, NAS__FMNIST_TRAIN, NAS__FMNIST_TRAIN);
    }
    {
        nas_augment aug;
        size_t ia = field_index("data", "augment");
        if (nas_augment_parse(cfg->data.augment, &aug) != 0)
            return FAIL_F(c, ia, "data.augment = \"%s\" is not an augmentation, expected \"none\" "
                                 "or a list of crop, cropN, flip, cutout, cutoutN such as "
                                 "\"crop4,flip\"", cfg->data.augment);
        nas_augment_format(&aug, cfg->data.augment, sizeof cfg->data.augment); /* canonical */
        if (!strcmp(cfg->data.augment, "none"))
            cfg->data.augment[0] = '\0';
    }
    if (cfg->search.sample_size > cfg->search.population) {
        size_t i = field_index("search", "sample_size");
        return FAIL_F(c, i, "search.sample_size = %d is larger than search.population = %d, expected "
                            "an integer in [1, %d]",
                      cfg->search.sample_size, cfg->search.population, cfg->search.population);
    }
    if (cfg->evaluator.kind == NAS_EVALUATOR_TABLE) {
        size_t ik = field_index("evaluator", "kind");
        if (cfg->evaluator.table[0] == '\0')
            return FAIL_F(c, ik, "evaluator.kind = \"table\" needs evaluator.table, expected "
                                 "table = \"path/to/table.csv\"");
        if (cfg->evaluator.column[0] == '\0')
            return FAIL_F(c, field_index("evaluator", "column"),
                          "evaluator.column is empty, expected the name of a CSV column");
        /* a table has accuracies only: no latency to rank by (a latency
         * constraint is accepted, as before, and not applied: `nas run`
         * says so) */
        for (int o = 0; o < cfg->n_objectives; o++)
            if (strcmp(cfg->objectives[o].metric, "latency_ms") == 0)
                return FAIL_F(c, field_index("", "objectives"),
                              "objective \"latency_ms\" needs a measured latency, but "
                              "evaluator.kind = \"table\" measures none, expected "
                              "evaluator.kind = \"train\" or objectives on val_accuracy, macs "
                              "or params");
    }
    int rc = validate_zero_cost(c);
    if (!rc)
        rc = validate_supernet(c);
    return rc ? rc : validate_fidelity(c);
}

/* Issue 32: a supernet search measures accuracies by inherited weights
 * only (no latency), and trains one supernet with one recipe, so its
 * genotypes carry no recipe choices (their picks would be ignored by the
 * supernet and honoured by the finalists' retraining). */
static int validate_supernet(ctx *c)
{
    const nas_config *cfg = c->cfg;
    if (cfg->evaluator.kind != NAS_EVALUATOR_SUPERNET)
        return NAS_OK;
    for (int o = 0; o < cfg->n_objectives; o++)
        if (strcmp(cfg->objectives[o].metric, "latency_ms") == 0)
            return FAIL_F(c, field_index("", "objectives"),
                          "objective \"latency_ms\" needs a measured latency, but "
                          "evaluator.kind = \"supernet\" measures none, expected objectives on "
                          "val_accuracy (inherited weights), macs or params");
    if (cfg->constraints.latency_ms > 0) /* the finalists' retraining would apply it alone */
        return FAIL_F(c, field_index("constraints", "latency_ms"),
                      "constraints.latency_ms = %g needs a measured latency, but evaluator.kind = "
                      "\"supernet\" measures none in its search, expected constraints on mmacs "
                      "or params", cfg->constraints.latency_ms);
    for (size_t i = 0; i < N_FIELDS; i++) {
        int k = recipe_key(&fields[i]);
        if (k >= 0 && cfg->space.recipe.n[k])
            return FAIL_F(c, i, "%s.%s is a list of choices, but evaluator.kind = \"supernet\" "
                                "trains one supernet with one recipe and shares weights across "
                                "architectures only, expected one value", fields[i].group,
                          fields[i].key);
    }
    return NAS_OK;
}

/* Issue 17: search.fidelity's keys that depend on each other (a scheduler
 * set: at least one promotion, a trained evaluator, a whole number of
 * epochs in the LR schedule). */
static int validate_fidelity(ctx *c)
{
    const nas_config *cfg = c->cfg;
    if (cfg->search.fidelity.scheduler == NAS_FIDELITY_NONE)
        return NAS_OK;
    int lo = cfg->search.fidelity.min, hi = cfg->search.fidelity.max;
    if (hi < (long long)lo * cfg->search.fidelity.eta)
        return FAIL_F(c, field_index("search.fidelity", "max"),
                      "search.fidelity.max = %d is less than min x eta = %lld, expected at least "
                      "one promotion (max >= min x eta)",
                      hi, (long long)lo * cfg->search.fidelity.eta);
    if (cfg->search.fidelity.resource == NAS_FIDELITY_EPOCHS && hi > 1000)
        return FAIL_F(c, field_index("search.fidelity", "max"),
                      "search.fidelity.max = %d epochs is out of range, expected at most 1000 "
                      "(as proxy.epochs)", hi);
    if (cfg->evaluator.kind != NAS_EVALUATOR_TRAIN)
        return FAIL_F(c, field_index("search.fidelity", "scheduler"),
                      "search.fidelity.scheduler = \"%s\" needs evaluator.kind = \"train\" (a "
                      "table has one fidelity), expected scheduler = \"none\"",
                      w_scheduler[cfg->search.fidelity.scheduler]);
    return NAS_OK;
}

/* ---- entry points ------------------------------------------------------------------ */

int nas_config_valid_count(const nas_data_conf *dc, int n)
{
    if (dc->valid_fraction <= 0)
        return dc->valid;
    double v = floor(dc->valid_fraction * (double)n);
    return v < 1 ? 1 : (int)v;
}

/* experiment default: the basename of `name` without its extension. */
static void default_experiment(nas_config *cfg, const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t len = strlen(base);
    const char *dot = strrchr(base, '.');
    if (dot && dot != base)
        len = (size_t)(dot - base);
    if (len >= sizeof cfg->experiment)
        len = sizeof cfg->experiment - 1;
    memcpy(cfg->experiment, base, len);
    cfg->experiment[len] = '\0';
}

/* Issue 28: the image height and width the networks get, as far as the
 * config alone fixes them: a table evaluator counts at space.input (else
 * 28x28, nas__desc_input); a trained one at the data's size, the
 * Fashion-MNIST shorthand's 28x28, CIFAR-10's 32x32 or a folder's
 * data.size; 0 when only the data files tell (idx, npy, a folder of one
 * size), and evaluator creation checks then. */
static int config_image_size(const nas_config *cfg, int *h, int *w)
{
    const nas_data_conf *d = &cfg->data;
    *h = *w = 0;
    if (cfg->evaluator.kind == NAS_EVALUATOR_TABLE || /* issue 31: a data-free proxy: the same */
        (cfg->evaluator.kind == NAS_EVALUATOR_ZERO_COST && !zc_needs_data(cfg->evaluator.proxy)))
        nas__desc_input(&cfg->space, NULL, h, w, NULL);
    else if (d->format[0] == '\0')
        *h = *w = 28;
    else if (strcmp(d->format, "cifar") == 0)
        *h = *w = 32;
    else if (strcmp(d->format, "folder") == 0 && d->size[0] > 0)
        *h = d->size[0], *w = d->size[1];
    return *h > 0;
}

/* The data's shape against space.input / space.classes: a set key that is
 * not the data's is a configuration error at it. A chain space's networks
 * could not take the data (nas_net_create would refuse every one); a cell
 * space's, and a zero-cost scorer's, are built at the data's shape and
 * class count, so the key would be silently ignored. Unset keys (0) take
 * the data's. */
int nas_config_check_data(const nas_config *cfg, int c, int h, int w, int classes, nas_error *err)
{
    if (!cfg)
        return nas_error_set(err, NAS_EINVAL, "nas_config_check_data: NULL argument");
    const nas_space_desc *s = &cfg->space;
    const char *kind = s->type == NAS_SPACE_CHAIN ? "chain" : "cell";
    char at[NAS_PATH_MAX + 16];
    if (s->in_c > 0 && (s->in_c != c || s->in_h != h || s->in_w != w)) {
        snprintf(at, sizeof at, s->chain.line_input ? "%s:%d" : "%s", cfg->path,
                 s->chain.line_input);
        return nas_error_set(err, NAS_ECONFIG, "%s: space.input = [%d, %d, %d] is not the data's "
                             "shape [%d, %d, %d] (C, H, W): set it to the data's, or leave it out "
                             "(a %s space without space.input takes the data's)", at, s->in_c,
                             s->in_h, s->in_w, c, h, w, kind);
    }
    if (s->classes > 0 && s->classes != classes) {
        snprintf(at, sizeof at, s->chain.line_classes ? "%s:%d" : "%s", cfg->path,
                 s->chain.line_classes);
        return nas_error_set(err, NAS_ECONFIG, "%s: space.classes = %d is not the data's %d "
                             "classes: set it to %d, or leave it out (a %s space without "
                             "space.classes takes the data's)", at, s->classes, classes, classes,
                             kind);
    }
    return NAS_OK;
}

/* data.augment, or each of its recipe choices, against the data's h x w
 * images: a crop that can shift the window off the image or a cutout that
 * can cover it trains on nothing (nas_augment_check). */
int nas_config_check_augment(const nas_config *cfg, int h, int w, nas_error *err)
{
    if (!cfg)
        return nas_error_set(err, NAS_EINVAL, "nas_config_check_augment: NULL argument");
    const nas_recipe_choices *rc = &cfg->space.recipe;
    int n = rc->n[NAS_RECIPE_AUGMENT] > 0 ? rc->n[NAS_RECIPE_AUGMENT] : 1;
    char at[NAS_PATH_MAX + 16], why[400];
    snprintf(at, sizeof at, cfg->data.line_augment ? "%s:%d" : "%s", cfg->path,
             cfg->data.line_augment);
    for (int j = 0; j < n; j++) {
        const char *text = rc->n[NAS_RECIPE_AUGMENT] > 0 ? rc->augment[j] : cfg->data.augment;
        nas_augment a;
        if (nas_augment_parse(!strcmp(text, "none") ? "" : text, &a) != 0)
            continue; /* checked by pass 2 */
        if (nas_augment_check(&a, h, w, why, sizeof why) != NAS_OK)
            return nas_error_set(err, NAS_ECONFIG, "%s: data.augment%s = \"%s\": %s", at,
                                 rc->n[NAS_RECIPE_AUGMENT] > 0 ? " choice" : "", text, why);
    }
    return NAS_OK;
}

/* A cell space whose reductions cannot halve the input: the error at
 * space.stages, with the shape arithmetic (nas_space_check_input). */
static int validate_cell_input(ctx *c)
{
    nas_config *cfg = c->cfg;
    size_t i = field_index("space", "stages");
    cfg->space.line_stages = field_file(c, i) == c->name ? c->line[i] : 0;
    /* the data keys whose fit only the data's files tell (nas_data_load) */
    nas_data_conf *d = &cfg->data;
    snprintf(d->conf_file, sizeof d->conf_file, "%s", c->name ? c->name : "");
    size_t iv = field_index("data", "valid"), is = field_index("data", "train_subset"),
           im = field_index("data", "mean"), ia = field_index("data", "augment");
    d->line_valid = field_file(c, iv) == c->name ? c->line[iv] : 0;
    d->line_train_subset = field_file(c, is) == c->name ? c->line[is] : 0;
    d->line_mean = field_file(c, im) == c->name ? c->line[im] : 0;
    d->line_augment = field_file(c, ia) == c->name ? c->line[ia] : 0;
    int h, w;
    char msg[600];
    if (cfg->space.type == NAS_SPACE_CELL && config_image_size(cfg, &h, &w) &&
        nas_space_check_input(&cfg->space, h, w, msg, sizeof msg) != NAS_OK)
        return FAIL_F(c, i, "%s", msg);
    return NAS_OK;
}

/* Issue 33: each search.enqueue entry must be a genotype of the space
 * (nas_space_parse, cell and chain spaces alike), and is kept in the
 * space's own form (nas_space_format), so that the canonical text does not
 * depend on how it was written. A space that cannot be made here (a chain
 * space waiting for the data's input) leaves the check to nas run. */
static int check_enqueue(ctx *c)
{
    nas_config *cfg = c->cfg;
    if (cfg->search.n_enqueue == 0)
        return NAS_OK;
    nas_space *sp = NULL;
    nas_error serr;
    if (nas_space_create(&cfg->space, &sp, &serr) != NAS_OK)
        return NAS_OK;
    int rc = NAS_OK;
    for (int i = 0; i < cfg->search.n_enqueue && rc == NAS_OK; i++) {
        nas_genotype g;
        char *txt = cfg->search.enqueue[i];
        if (nas_space_parse(sp, txt, &g, &serr) != NAS_OK)
            rc = fail_at(c, c->enq_file[i], c->enq_line[i],
                         "search.enqueue[%d] = \"%s\" is not a genotype of this space: %s", i,
                         txt, serr.msg);
        else if (!nas_space_is_valid(sp, &g))
            rc = fail_at(c, c->enq_file[i], c->enq_line[i],
                         "search.enqueue[%d] = \"%s\" cannot be trained in this space (no "
                         "path carries data from input to output, or a token it does not "
                         "allow), expected a valid genotype", i, txt);
        else
            nas_space_format(sp, &g, txt, NAS_GENOTYPE_STR_MAX);
    }
    nas_space_destroy(sp);
    return rc;
}

/* Issue 33: recipe choices need a trained evaluator: a table looks
 * accuracies up by architecture alone. */
static int check_recipe(ctx *c)
{
    for (size_t i = 0; i < N_FIELDS; i++) {
        int k = recipe_key(&fields[i]);
        if (k >= 0 && c->cfg->space.recipe.n[k] && c->cfg->evaluator.kind == NAS_EVALUATOR_TABLE)
            return FAIL_F(c, i, "%s.%s is a list of choices, but evaluator.kind = \"table\" "
                                "looks accuracies up by architecture alone (the table has no "
                                "recipe), expected one value", fields[i].group, fields[i].key);
    }
    return NAS_OK;
}

/* Read the tree in `lc` (already parsed) into cfg and validate it. */
static int load_tree(config_t *lc, ctx *c)
{
    nas_config *cfg = c->cfg;
    int rc = read_group(c, config_root_setting(lc), "");
    if (rc == NAS_OK && c->line[field_index("", "experiment")] == 0)
        default_experiment(cfg, c->name); /* not set; an explicit "" is an error */
    for (size_t i = 0; i < N_CHANGED; i++) /* issue 30: which changed defaults the file sets */
        *(int *)((char *)cfg + changed_defaults[i].set) =
            c->line[field_index(changed_defaults[i].group, changed_defaults[i].key)] != 0;
    if (rc == NAS_OK)
        rc = validate(c);
    if (rc == NAS_OK)
        rc = validate_cell_input(c);
    if (rc == NAS_OK)
        rc = check_recipe(c);
    if (rc == NAS_OK)
        rc = check_enqueue(c);
    return rc;
}

static int syntax_error(const ctx *c, config_t *lc)
{
    const char *file = nas__cfg_includes_name(&c->inc, config_error_file(lc));
    const char *text = config_error_text(lc) ? config_error_text(lc) : "syntax error";
    if (strcmp(text, "memory exhausted") == 0) /* bison's stack: nesting, not memory */
        return fail_at(c, file ? file : c->name, config_error_line(lc),
                       "groups, lists or arrays nested too deeply for libconfig's parser (about "
                       "1000 levels fit; space.conf needs 2)");
    return fail_at(c, file ? file : c->name, config_error_line(lc),
                   "%s, expected libconfig syntax: name = value; each name once per group, "
                   "groups in { }, lists in ( ), arrays in [ ]",
                   text);
}

static int parse_common(const char *text, const char *file, const char *name, const char *base_dir,
                        nas_config *cfg, nas_error *err)
{
    ctx *c = calloc(1, sizeof *c);
    if (!c)
        return nas_error_set(err, NAS_ENOMEM, "%s: out of memory", name);
    c->name = name;
    c->err = err;
    c->cfg = cfg;
    c->nodes = 4;
    snprintf(c->base_dir, sizeof c->base_dir, "%s", base_dir);
    nas__cfg_dir_of(name, c->name_dir, sizeof c->name_dir);

    nas_config_defaults(cfg);
    snprintf(cfg->path, sizeof cfg->path, "%s", name);

    config_t lc;
    config_init(&lc);
    /* issue 29: no include directory (libconfig 1.5 would prefix it to
     * absolute paths too); @include paths are rewritten to be taken from
     * the including file's directory instead (space/config_include.c) */
    char *own = NULL;
    if (file) {
        char *body = nas__cfg_read_file(file);
        own = body ? nas__cfg_includes_rewrite(body, c->name_dir, &c->inc) : NULL;
        free(body);
    }
    int ok = file && !own ? -1 : config_read_string(&lc, own ? own : text);
    int rc;
    if (ok == -1)
        rc = nas_error_set(err, NAS_EIO, "cannot read config file '%s'", name);
    else if (ok != CONFIG_TRUE)
        rc = syntax_error(c, &lc);
    else
        rc = load_tree(&lc, c);
    config_destroy(&lc);
    nas__cfg_includes_close(&c->inc);
    free(own);
    free(c);
    if (rc != NAS_OK) {
        nas_config_defaults(cfg);
        snprintf(cfg->path, sizeof cfg->path, "%s", name);
    }
    return rc;
}

int nas_config_load(const char *path, nas_config *cfg, nas_error *err)
{
    if (!path || !cfg)
        return nas_error_set(err, NAS_EINVAL, "config: NULL argument");
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        nas_config_defaults(cfg);
        return nas_error_set(err, NAS_EIO, "cannot open config file '%s': %s", path, strerror(e));
    }
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    fclose(f);
    if (size > NAS_CONFIG_MAX_BYTES) {
        nas_config_defaults(cfg);
        return nas_error_set(err, NAS_ECONFIG,
                             "%s: the file is %ld bytes, more than the %d bytes a config may have "
                             "(docs/space-conf.md, Limits)",
                             path, size, NAS_CONFIG_MAX_BYTES);
    }
    /* Relative paths in the file are taken from the file's directory, made
     * absolute so the canonical text does not depend on the working dir. */
    char dir[NAS_PATH_MAX], abs[PATH_MAX];
    nas__cfg_dir_of(path, dir, sizeof dir);
    if (realpath(dir[0] ? dir : ".", abs))
        snprintf(dir, sizeof dir, "%s", abs);
    int rc = parse_common(NULL, path, path, dir, cfg, err);
    if (rc == NAS_OK) /* the folder reader's decode cache when there is no database (docs/data.md) */
        snprintf(cfg->data.cache_dir, sizeof cfg->data.cache_dir, "%.*s/nas-data",
                 (int)sizeof cfg->data.cache_dir - 10, dir[0] ? dir : ".");
    return rc;
}

int nas_config_parse_string(const char *text, const char *name, nas_config *cfg, nas_error *err)
{
    if (!text || !cfg)
        return nas_error_set(err, NAS_EINVAL, "config: NULL argument");
    if (!name)
        name = "<string>";
    size_t len = strnlen(text, (size_t)NAS_CONFIG_MAX_BYTES + 1);
    if (len > NAS_CONFIG_MAX_BYTES) {
        nas_config_defaults(cfg);
        return nas_error_set(err, NAS_ECONFIG,
                             "%s: the config text is more than the %d bytes a config may have "
                             "(docs/space-conf.md, Limits)",
                             name, NAS_CONFIG_MAX_BYTES);
    }
    char dir[NAS_PATH_MAX];
    nas__cfg_dir_of(name, dir, sizeof dir);
    return parse_common(text, NULL, name, dir, cfg, err);
}

/* Issue 31: evaluator.kind = "zero-cost" names its proxy; a table search
 * has no data, so its warm-up and move proposal take data-free proxies
 * only; the move proposal is evolution's; the warm-up's top K are among
 * its N candidates. */
static int validate_zero_cost(ctx *c)
{
    const nas_config *cfg = c->cfg;
    if (cfg->evaluator.kind == NAS_EVALUATOR_ZERO_COST && !cfg->evaluator.proxy[0])
        return FAIL_F(c, field_index("evaluator", "kind"),
                      "evaluator.kind = \"zero-cost\" needs evaluator.proxy, expected one of: "
                      "synflow, params, macs, naswot, snip, grad_norm, jacob_cov");
    if (cfg->evaluator.kind == NAS_EVALUATOR_ZERO_COST)
        for (int o = 0; o < cfg->n_objectives; o++)
            if (strcmp(cfg->objectives[o].metric, "latency_ms") == 0)
                return FAIL_F(c, field_index("", "objectives"),
                              "objective \"latency_ms\" needs a measured latency, but "
                              "evaluator.kind = \"zero-cost\" measures none, expected "
                              "objectives on val_accuracy (the proxy's score), macs or params");
    static const struct { const char *group; size_t off; } uses[] = {
        {"search.warmup", offsetof(nas_config, search.warmup.proxy)},
        {"search.evolution.move_proposal", offsetof(nas_config, search.move_proposal.proxy)},
    };
    for (size_t u = 0; u < sizeof uses / sizeof uses[0]; u++) {
        const char *p = (const char *)cfg + uses[u].off;
        if (cfg->evaluator.kind == NAS_EVALUATOR_TABLE && zc_needs_data(p))
            return FAIL_F(c, field_index(uses[u].group, "proxy"),
                          "%s.proxy = \"%s\" reads a minibatch of training data, but a table "
                          "search (evaluator.kind = \"table\") has none, expected a data-free "
                          "proxy: synflow, params or macs", uses[u].group, p);
    }
    if (cfg->search.move_proposal.proxy[0] && cfg->search.strategy != NAS_STRATEGY_EVOLUTION)
        return FAIL_F(c, field_index("search.evolution.move_proposal", "proxy"),
                      "search.evolution.move_proposal needs search.strategy = \"evolution\", "
                      "expected no move_proposal group");
    if (cfg->search.warmup.proxy[0] && cfg->search.warmup.top > cfg->search.warmup.candidates)
        return FAIL_F(c, field_index("search.warmup", "top"),
                      "search.warmup.top = %d is more than candidates = %d, expected an integer "
                      "in [1, %d]", cfg->search.warmup.top, cfg->search.warmup.candidates,
                      cfg->search.warmup.candidates);
    return NAS_OK;
}

/* ---- canonical text ------------------------------------------------------------------ */

char *nas_config_canonical(const nas_config *cfg)
{
    nas__sbuf b = nas__sb_new(2048);
    if (!b.p)
        return NULL;
    char key[160], num[64];
    for (size_t i = 0; i < N_FIELDS; i++) {
        const field *f = &fields[i];
        if (f->policy)
            continue;
        full_key(f, key, sizeof key);
        if (!strcmp(key, "data.dir") && (!strcmp(cfg->data.format, "idx") || !strcmp(cfg->data.format, "npy")))
            continue; /* issue 28: unused (the files are named), so not Fashion-MNIST's default; a
                         running key, which nas_config_diff skips when absent here */
        if (strcmp(f->group, "space") == 0) { /* chain keys, input, classes: space/chain_config.c */
            int replace = 0;
            char *text = nas__space_canonical_field(&cfg->space, f->key, &replace);
            if (replace) {
                if (!text)
                    b.oom = 1;
                else if (text[0])
                    nas__sb_printf(&b, "%s\n", text);
                free(text);
                continue;
            }
        }
        nas__sb_printf(&b, "%s = ", key);
        int rk = recipe_key(f);
        if (rk >= 0 && cfg->space.recipe.n[rk] > 0) { /* issue 33: a recipe choice */
            nas__sb_printf(&b, "[");
            for (int j = 0; j < cfg->space.recipe.n[rk] && j < NAS_RECIPE_MAX_CHOICES; j++) {
                nas__recipe_value_text(&cfg->space.recipe, rk, j, num, sizeof num);
                nas__sb_printf(&b, "%s", j ? ", " : "");
                if (rk == NAS_RECIPE_AUGMENT)
                    nas__sb_quoted(&b, num);
                else
                    nas__sb_printf(&b, "%s", num);
            }
            nas__sb_printf(&b, "];\n");
            continue;
        }
        switch (f->kind) {
        case F_INT: nas__sb_printf(&b, "%d", *(const int *)field_cptr(cfg, f)); break;
        case F_COUNT_FRAC: { /* a count prints as before; a fraction as a float */
            double fr = *(const double *)((const char *)cfg + f->size);
            if (fr > 0) {
                nas__fmt_double(fr, num, sizeof num);
                nas__sb_printf(&b, "%s", num);
            } else {
                nas__sb_printf(&b, "%d", *(const int *)field_cptr(cfg, f));
            }
            break;
        }
        case F_U64: nas__sb_printf(&b, "%llu", (unsigned long long)*(const uint64_t *)field_cptr(cfg, f)); break;
        case F_FLOAT:
            nas__fmt_double(*(const double *)field_cptr(cfg, f), num, sizeof num);
            nas__sb_printf(&b, "%s", num);
            break;
        /* proxy.keep_weights not set (-1) prints as false, its old default,
         * so experiments started before proxy.keep_top keep their identity */
        case F_BOOL: nas__sb_printf(&b, "%s", *(const int *)field_cptr(cfg, f) > 0 ? "true" : "false"); break;
        case F_STR:
        case F_NAME:
        case F_PATH:
        case F_WORD: nas__sb_quoted(&b, (const char *)field_cptr(cfg, f)); break;
        case F_ENUM: {
            int v = *(const int *)field_cptr(cfg, f);
            int n = 0;
            while (f->words[n])
                n++;
            nas__sb_quoted(&b, v >= 0 && v < n ? f->words[v] : "?");
            break;
        }
        case F_NODES: nas__sb_printf(&b, "%d", NAS_CELL_NODES); break;
        case F_FLOATS: {
            int cnt = *(const int *)((const char *)cfg + f->size);
            const double *v = field_cptr(cfg, f);
            nas__sb_printf(&b, "[");
            for (int k = 0; k < cnt && k < 16; k++) {
                nas__fmt_double(v[k], num, sizeof num);
                nas__sb_printf(&b, "%s%s", k ? ", " : "", num);
            }
            nas__sb_printf(&b, "]");
            break;
        }
        case F_DURATION:
            nas__fmt_double(*(const double *)field_cptr(cfg, f), num, sizeof num);
            nas__sb_printf(&b, "%s", num);
            break;
        case F_GENOTYPES:
            nas__sb_printf(&b, "[");
            for (int k = 0; k < cfg->search.n_enqueue && k < NAS_ENQUEUE_MAX; k++) {
                nas__sb_printf(&b, "%s", k ? ", " : "");
                nas__sb_quoted(&b, cfg->search.enqueue[k]);
            }
            nas__sb_printf(&b, "]");
            break;
        case F_SIZE: { /* unset: 0 (read back as unset) */
            const int *v = field_cptr(cfg, f);
            if (v[0] > 0)
                nas__sb_printf(&b, "[%d, %d]", v[0], v[1]);
            else
                nas__sb_printf(&b, "0");
            break;
        }
        case F_OPS: {
            int first = 1;
            nas__sb_printf(&b, "[");
            for (int op = 0; op < NAS_OP_COUNT; op++) {
                if (!(cfg->space.op_mask & (1u << op)))
                    continue;
                nas__sb_printf(&b, "%s", first ? "" : ", ");
                nas__sb_quoted(&b, nas_op_name(op));
                first = 0;
            }
            nas__sb_printf(&b, "]");
            break;
        }
        case F_GPUS:
            if (cfg->workers.n_gpus < 0) {
                nas__sb_printf(&b, "\"all\"");
            } else {
                nas__sb_printf(&b, "[");
                for (int g = 0; g < cfg->workers.n_gpus && g < NAS__GPU_MAX; g++)
                    nas__sb_printf(&b, "%s%d", g ? ", " : "", cfg->workers.gpus[g]);
                nas__sb_printf(&b, "]");
            }
            break;
        case F_OBJECTIVES:
            nas__sb_printf(&b, "(");
            for (int o = 0; o < cfg->n_objectives && o < NAS_MAX_OBJECTIVES; o++) {
                nas__sb_printf(&b, "%s{ metric = ", o ? ", " : " ");
                nas__sb_quoted(&b, cfg->objectives[o].metric);
                nas__sb_printf(&b, "; goal = \"%s\"; }", cfg->objectives[o].maximize ? "max" : "min");
            }
            nas__sb_printf(&b, " )");
            break;
        }
        nas__sb_printf(&b, ";\n");
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- defining and running settings (issue 22) ------------------------------------ */

/* The running settings (nas/space.h): how a search is run or extended,
 * not which search it is. "workers." covers the whole group. */
static const char *const running_keys[] = {
    "experiment",     "search.trials",   "proxy.threads", "proxy.backend",
    "proxy.keep_weights", "proxy.keep_top", "proxy.weights_mb", "data.dir",
    "data.train_images", "data.train_labels", "data.test_images", "data.test_labels",
    "data.loader_threads",
    "evaluator.table", "workers.", "search.time_limit",
    "supernet.retrain_top", /* issue 32: how many finalists, not what the supernet measures */
};

int nas_config_name_ok(const char *name)
{
    if (!*name || strlen(name) >= NAS_NAME_MAX)
        return 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

int nas_config_key_defining(const char *key)
{
    int known = 0;
    char k[160];
    for (size_t i = 0; i < N_FIELDS && !known; i++) {
        full_key(&fields[i], k, sizeof k);
        known = strcmp(k, key) == 0;
    }
    if (!known)
        return 0;
    for (size_t i = 0; i < sizeof running_keys / sizeof running_keys[0]; i++) {
        size_t n = strlen(running_keys[i]);
        if (running_keys[i][n - 1] == '.' ? strncmp(key, running_keys[i], n) == 0
                                          : strcmp(key, running_keys[i]) == 0)
            return 0;
    }
    return 1;
}

/* The value of `key` in canonical text: the text between "KEY = " at the
 * start of a line and the line's final ';' into val[n]. 0 when absent. */
static int canon_value(const char *canon, const char *key, char *val, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = canon; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > kl + 3 && strncmp(p, key, kl) == 0 && strncmp(p + kl, " = ", 3) == 0) {
            const char *v = p + kl + 3;
            size_t vl = len - kl - 3;
            while (vl && (v[vl - 1] == ';' || v[vl - 1] == ' ' || v[vl - 1] == '\r'))
                vl--;
            snprintf(val, n, "%.*s", (int)vl, v);
            return 1;
        }
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/* 1 when cfg's networks are cell networks trained, counted and timed at
 * the data's shape and class count whatever space.input and space.classes
 * say (evaluator kinds "train" and "supernet": nas_evaluator_net_desc takes
 * the loaded data's): the keys shape nothing there. A chain space is built
 * from them; a table or zero-cost search counts MACs and parameters at
 * them. */
static int cell_takes_data(const nas_config *cfg)
{
    return cfg->space.type != NAS_SPACE_CHAIN && (cfg->evaluator.kind == NAS_EVALUATOR_TRAIN ||
                                                  cfg->evaluator.kind == NAS_EVALUATOR_SUPERNET);
}

/* Issue 28: the space's own canonical lines that are not fields of the
 * table above (space.input and space.classes of either type, a chain
 * space's stem, head and se_gate; its stages are the "stages" field) are
 * defining too (`defining` 1), except space.input and space.classes of a
 * cell space built at the data's shape (cell_takes_data): those are
 * running settings (`defining` 0), so an experiment an older nas stored
 * with keys that contradict its data (they were ignored; nas run refuses
 * them now) resumes once they are left out or set to the data's. A line
 * the stored text lacks is a key its nas did not write (input, classes:
 * not set, the data's): not a change. One now missing (not set any more)
 * is listed as "(not set: the data's)". The changes are appended to
 * out[n] from *used on; returns their count. */
static int space_lines_diff(const char *stored, const char *now, int defining, int takes_data,
                            char *out, size_t n, size_t *used)
{
    static const char *const keys[] = {"space.input", "space.classes", "space.stem",
                                       "space.head", "space.se_gate"};
    char old[1024], cur[1024];
    int count = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if ((i < 2 && takes_data ? 0 : 1) != defining)
            continue;
        if (!canon_value(stored, keys[i], old, sizeof old))
            continue;
        if (!canon_value(now, keys[i], cur, sizeof cur))
            snprintf(cur, sizeof cur, "(not set: the data's)");
        if (strcmp(old, cur) == 0)
            continue;
        count++;
        if (out && *used < n) {
            int w = snprintf(out + *used, n - *used, "  %s: %s -> %s\n", keys[i], old, cur);
            *used = w < 0 ? n : *used + (size_t)w;
        }
    }
    return count;
}

/* Issue 30: `v` (a stored canonical value) read as field f's value into
 * cfg; 0 when it does not parse or is out of range. Kinds: those of
 * changed_defaults (an int; data.valid's count or fraction). */
static int set_from_canon(nas_config *cfg, const field *f, const char *v)
{
    char *end;
    double x = strtod(v, &end);
    int is_frac = strchr(v, '.') || strchr(v, 'e');
    if (end == v || *end || x > f->max || (!is_frac || f->kind != F_COUNT_FRAC ? !(x >= f->min)
                                                                                : !(x > 0)))
        return 0;
    if (f->kind == F_COUNT_FRAC) { /* data.valid: a count, or a fraction in (0, 1) */
        if (is_frac ? x >= 1 : x != floor(x))
            return 0;
        *(double *)((char *)cfg + f->size) = is_frac ? x : 0;
        *(int *)field_ptr(cfg, f) = is_frac ? 0 : (int)x;
        return 1;
    }
    if (f->kind != F_INT || is_frac || x != floor(x))
        return 0;
    *(int *)field_ptr(cfg, f) = (int)x;
    return 1;
}

int nas_config_stored_defaults(nas_config *cfg, const char *stored, char *out, size_t n)
{
    if (out && n)
        out[0] = '\0';
    if (!cfg || !stored)
        return 0;
    int count = 0;
    size_t used = 0;
    char key[160], was[64], now[64], dflt[64];
    for (size_t i = 0; i < N_CHANGED; i++) {
        const struct changed_default *d = &changed_defaults[i];
        const field *f = &fields[field_index(d->group, d->key)];
        full_key(f, key, sizeof key);
        int absent = !canon_value(stored, key, was, sizeof was);
        if (*(const int *)((const char *)cfg + d->set) || (absent && !d->absent))
            continue;
        if (absent)
            snprintf(was, sizeof was, "%s", d->absent);
        char *before = nas_config_canonical(cfg);
        int have = before && canon_value(before, key, dflt, sizeof dflt);
        free(before);
        if (!have || strcmp(was, dflt) == 0 || !set_from_canon(cfg, f, was))
            continue;
        char *after = nas_config_canonical(cfg);
        have = after && canon_value(after, key, now, sizeof now);
        free(after);
        if (!have || strcmp(now, dflt) == 0)
            continue; /* the same value written another way */
        count++;
        if (out && used < n) {
            int w = snprintf(out + used, n - used, "%s = %s (%s; the default now is %s)\n",
                             key, now, absent ? "made before the key existed" : "stored", dflt);
            used = w < 0 ? n : used + (size_t)w;
        }
    }
    return count;
}

/* Issue 30: a changed default's value in experiments made before its key
 * existed (changed_defaults' `absent`), into val[n]; 0 for other keys. */
static int changed_absent(const char *key, char *val, size_t n)
{
    char k[160];
    for (size_t i = 0; i < N_CHANGED; i++) {
        snprintf(k, sizeof k, "%s.%s", changed_defaults[i].group, changed_defaults[i].key);
        if (changed_defaults[i].absent && strcmp(k, key) == 0) {
            snprintf(val, n, "%s", changed_defaults[i].absent);
            return 1;
        }
    }
    return 0;
}

int nas_config_diff(const char *stored, const nas_config *cfg, int defining, char *out,
                    size_t n)
{
    if (out && n)
        out[0] = '\0';
    nas_config *def = malloc(sizeof *def);
    char *now = nas_config_canonical(cfg), *dflt = NULL;
    if (def) {
        nas_config_defaults(def);
        dflt = nas_config_canonical(def);
    }
    free(def);
    if (!now || !dflt) {
        free(now);
        free(dflt);
        return -1;
    }
    int count = 0;
    size_t used = 0;
    char key[160];
    /* issue 33: search.enqueue's value is as long as its genotypes */
    enum { VAL_MAX = NAS_ENQUEUE_MAX * (NAS_GENOTYPE_STR_MAX + 4) + 64 };
    char *old = malloc(2 * VAL_MAX), *cur = old ? old + VAL_MAX : NULL;
    if (!old) {
        free(now);
        free(dflt);
        return -1;
    }
    for (size_t i = 0; i < N_FIELDS; i++) {
        full_key(&fields[i], key, sizeof key);
        if (nas_config_key_defining(key) != defining || !canon_value(now, key, cur, VAL_MAX))
            continue;
        if (!canon_value(stored ? stored : "", key, old, VAL_MAX) &&
            !changed_absent(key, old, VAL_MAX) && !canon_value(dflt, key, old, VAL_MAX))
            continue;
        if (strcmp(old, cur) == 0)
            continue;
        count++;
        if (out && used < n) {
            int w = snprintf(out + used, n - used, "  %s: %s -> %s\n", key, old, cur);
            used = w < 0 ? n : used + (size_t)w;
        }
    }
    count += space_lines_diff(stored ? stored : "", now, defining, cell_takes_data(cfg), out, n,
                              &used);
    free(old);
    free(now);
    free(dflt);
    return count;
}
