/*
 * export/export_json.c - the architecture description `nas export
 * --format json` writes and `nas train ARCH.json` reads (jansson).
 *
 * Schema (format "nas-architecture", version 1 for cells, 2 for chain
 * spaces: export/arch_chain.c) in docs/export.md. The reader validates
 * like the space.conf parser: every required key with its type and range,
 * the genotype through its space's own parser; unknown keys are ignored
 * so later versions can add fields.
 */
#include <errno.h>    /* errno */
#include <inttypes.h> /* PRIu64 */
#include <limits.h>   /* LLONG_MAX */
#include <math.h>     /* NAN, isfinite */
#include <stdio.h>    /* snprintf */
#include <stdlib.h>   /* strtoull */
#include <string.h>
#include <jansson.h>  /* JSON reading and writing */
#include "export/export_impl.h"
#include "nas/trainer.h"

#define FMNIST_MEAN 0.2860
#define FMNIST_STD 0.3530

void nas_arch_init(nas_arch *a)
{
    memset(a, 0, sizeof *a);
    snprintf(a->space_type, sizeof a->space_type, "cell");
    a->op_mask = (1u << NAS_OP_COUNT) - 1;
    a->net.genotype.len = NAS_CELL_EDGES;
    a->net.channels = 16;
    a->net.stages = 3;
    a->net.cells_per_stage = 1;
    a->net.in_c = 1;
    a->net.in_h = 28;
    a->net.in_w = 28;
    a->net.classes = 10;
    a->recipe.epochs = 1;
    a->recipe.batch_size = 128;
    a->recipe.lr = 0.05;
    a->recipe.momentum = 0.9;
    a->recipe.nesterov = 1;
    a->recipe.weight_decay = 5e-4;
    a->recipe.schedule = NAS_SCHEDULE_COSINE;
    snprintf(a->backend, sizeof a->backend, "cpu");
    snprintf(a->data.dataset, sizeof a->data.dataset, "fashion-mnist");
    snprintf(a->data.dir, sizeof a->data.dir, "/usr/share/datasets/fashion-mnist");
    nas_data_info_fmnist(&a->data.norm);
    a->metrics.val_accuracy = a->metrics.test_accuracy = a->metrics.train_loss = NAN;
    a->metrics.latency_ms = a->metrics.train_seconds = NAN;
    a->metrics.macs = a->metrics.params = -1;
    a->metrics.epochs = -1;
    a->trial_id = a->experiment_id = -1;
}

/* ---- writing ---------------------------------------------------------------------- */

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *count_or_null(int64_t v)
{
    return v >= 0 ? json_integer((json_int_t)v) : json_null();
}

static json_t *str_or_null(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

static json_t *u64_json(uint64_t v)
{
    if (v <= (uint64_t)LLONG_MAX)
        return json_integer((json_int_t)v);
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    return json_string(b);
}

/* The double whose shortest text is the float's (0.2860 for 0.286f, not
 * 0.28600001335144043). */
static double float_exact(float v)
{
    char b[32];
    for (int p = 1; p <= 9; p++) {
        snprintf(b, sizeof b, "%.*g", p, (double)v);
        if (strtof(b, NULL) == v)
            break;
    }
    return strtod(b, NULL);
}

/* Issue 16, added only when set (so files for Fashion-MNIST stay as they
 * were): proxy_data's train/test files and npy layout, data.valid as a
 * fraction (a float "valid"), the folder's data.size (issue 28), the
 * search's augmentation (recipe.augment). */
static void data_json(const nas_arch *a, json_t *root)
{
    json_t *pd = json_object_get(root, "proxy_data");
    const struct {
        const char *key, *val;
    } files[] = {{"train_images", a->data.train_images}, {"train_labels", a->data.train_labels},
                 {"test_images", a->data.test_images},   {"test_labels", a->data.test_labels},
                 {"layout", a->data.layout}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (files[i].val[0])
            json_object_set_new(pd, files[i].key, json_string(files[i].val));
    if (a->data.valid_fraction > 0)
        json_object_set_new(pd, "valid", json_real(a->data.valid_fraction));
    /* issue 28: idx and npy name their files; a data.dir would be Fashion-MNIST's default */
    if (!strcmp(a->data.format, "idx") || !strcmp(a->data.format, "npy"))
        json_object_del(pd, "dir");
    if (a->data.size[0] > 0) /* issue 28: folder images resized to [H, W] */
        json_object_set_new(pd, "size", json_pack("[i,i]", a->data.size[0], a->data.size[1]));
    const nas_augment *g = &a->recipe.augment;
    if (g->crop_pad > 0 || g->flip || g->cutout > 0) {
        char aug[48];
        nas_augment_format(g, aug, sizeof aug);
        json_object_set_new(json_object_get(root, "recipe"), "augment", json_string(aug));
    }
}

int nas_arch_write_json(const nas_arch *a, const char *path, nas_error *err)
{
    if (!a || !path)
        return nas_error_set(err, NAS_EINVAL, "nas_arch_write_json: NULL argument");
    json_t *ops = json_array();
    for (int i = 0; i < NAS_OP_COUNT; i++)
        if (a->op_mask & (1u << i))
            json_array_append_new(ops, json_string(nas_op_name(i)));
    json_t *root = json_pack(
        "{s:s, s:i, s:{s:s, s:i, s:o}, s:s, s:{s:i, s:i, s:i}, s:{s:[i,i,i], s:s, s:f, s:f}, s:i,"
        " s:{s:i, s:i, s:f, s:f, s:b, s:f, s:s, s:o},"
        " s:{s:s, s:s, s:i, s:i, s:o}, s:{s:s, s:i}}",
        "format", NAS_ARCH_FORMAT, "version", NAS_ARCH_VERSION_CELL,
        "space", "type", a->space_type, "nodes", NAS_CELL_NODES, "ops", ops,
        "genotype", a->genotype,
        "network", "channels", a->net.channels, "stages", a->net.stages, "cells_per_stage",
        a->net.cells_per_stage,
        "input", "shape", a->net.in_c, a->net.in_h, a->net.in_w, "dataset", a->data.dataset,
        "mean", FMNIST_MEAN, "std", FMNIST_STD,
        "classes", a->net.classes,
        "recipe", "epochs", a->recipe.epochs, "batch_size", a->recipe.batch_size, "lr",
        a->recipe.lr, "momentum", a->recipe.momentum, "nesterov", a->recipe.nesterov,
        "weight_decay", a->recipe.weight_decay, "schedule",
        a->recipe.schedule == NAS_SCHEDULE_COSINE ? "cosine" : "constant", "seed",
        u64_json(a->recipe.seed),
        "proxy_data", "dataset", a->data.dataset, "dir", a->data.dir, "train_subset",
        a->data.train_subset, "valid", a->data.valid, "split_seed", u64_json(a->data.split_seed),
        "backend", "name", a->backend, "threads", a->threads);
    if (!root)
        return nas_error_set(err, NAS_ENOMEM, "building the JSON for %s failed", path);
    json_t *metrics = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "val_accuracy",
        num_or_null(a->metrics.val_accuracy), "test_accuracy", num_or_null(a->metrics.test_accuracy),
        "train_loss", num_or_null(a->metrics.train_loss), "macs", count_or_null(a->metrics.macs),
        "params", count_or_null(a->metrics.params), "latency_ms", num_or_null(a->metrics.latency_ms),
        "train_seconds", num_or_null(a->metrics.train_seconds), "epochs",
        count_or_null(a->metrics.epochs));
    json_t *source = json_pack("{s:o, s:o, s:o, s:o, s:o}", "trial_id", count_or_null(a->trial_id),
                               "experiment", str_or_null(a->experiment), "experiment_id",
                               count_or_null(a->experiment_id), "db", str_or_null(a->db_path),
                               "weights", str_or_null(a->weights));
    if (source && a->measured_by[0]) /* only when not a proxy training: older files unchanged */
        json_object_set_new(source, "measured_by", json_string(a->measured_by));
    if (!metrics || !source) {
        json_decref(root);
        json_decref(metrics);
        json_decref(source);
        return nas_error_set(err, NAS_ENOMEM, "building the JSON for %s failed", path);
    }
    if (!strcmp(a->space_type, "chain")) { /* issue 15: version 2, the space and its layers */
        json_t *space, *network;
        int rc = nas__arch_chain_json(a, &space, &network, err);
        if (rc) {
            json_decref(root);
            json_decref(metrics);
            json_decref(source);
            return rc;
        }
        json_object_set_new(root, "version", json_integer(NAS_ARCH_VERSION));
        json_object_set_new(root, "space", space);
        json_object_set_new(root, "network", network);
    }
    if (a->data.format[0]) { /* issue 16: the data's own normalisation, per channel */
        json_t *in = json_object_get(root, "input"), *m = json_array(), *sd = json_array();
        const nas_data_info *d = &a->data.norm;
        for (int c = 0; c < d->c && c < NAS_DATA_MAX_C; c++) {
            json_array_append_new(m, json_real(float_exact(d->mean[c])));
            json_array_append_new(sd, json_real(float_exact(d->std[c])));
        }
        json_object_set_new(in, "mean", d->c == 1 ? json_incref(json_array_get(m, 0)) : json_incref(m));
        json_object_set_new(in, "std", d->c == 1 ? json_incref(json_array_get(sd, 0)) : json_incref(sd));
        json_decref(m);
        json_decref(sd);
        json_object_set_new(in, "pixels", json_string(d->u8 ? "uint8" : "float32"));
        json_object_set_new(in, "format", json_string(a->data.format));
        json_object_set_new(json_object_get(root, "proxy_data"), "format", json_string(a->data.format));
    }
    data_json(a, root); /* issue 16: files, fraction, augmentation */
    if (a->bn_recalibrate > 0) /* issue 30, only when set: older files stay as they were */
        json_object_set_new(json_object_get(root, "recipe"), "bn_recalibrate",
                            json_integer(a->bn_recalibrate));
    if (a->fidelity.budget > 0) /* a multi-fidelity trial only: others stay as they were */
        json_object_set_new(json_object_get(root, "recipe"), "fidelity",
                            json_pack("{s:s, s:I, s:I}", "resource",
                                      a->fidelity.images ? "images" : "epochs", "budget",
                                      (json_int_t)a->fidelity.budget, "max",
                                      (json_int_t)a->fidelity.max));
    json_object_set_new(root, "metrics", metrics);
    json_object_set_new(root, "source", source);
    int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(root);
    if (rc != 0) {
        FILE *f = fopen(path, "a");
        if (f)
            fclose(f);
        return nas_error_set(err, NAS_EIO, "cannot write %s%s", path,
                             f ? "" : ": directory missing or not writable");
    }
    return NAS_OK;
}

void nas__arch_data_conf(const nas_arch *a, const char *dir, nas_data_conf *dc)
{
    memset(dc, 0, sizeof *dc);
    snprintf(dc->dataset, sizeof dc->dataset, "%s", a->data.dataset);
    snprintf(dc->dir, sizeof dc->dir, "%s", dir && dir[0] ? dir : a->data.dir);
    snprintf(dc->format, sizeof dc->format, "%s", a->data.format);
    snprintf(dc->train_images, sizeof dc->train_images, "%s", a->data.train_images);
    snprintf(dc->train_labels, sizeof dc->train_labels, "%s", a->data.train_labels);
    snprintf(dc->test_images, sizeof dc->test_images, "%s", a->data.test_images);
    snprintf(dc->test_labels, sizeof dc->test_labels, "%s", a->data.test_labels);
    snprintf(dc->layout, sizeof dc->layout, "%s", a->data.layout);
    dc->train_subset = a->data.train_subset;
    dc->valid = a->data.valid;
    dc->valid_fraction = a->data.valid_fraction;
    dc->size[0] = a->data.size[0];
    dc->size[1] = a->data.size[1];
}

/* ---- reading ---------------------------------------------------------------------- */

typedef struct reader {
    const char *path;
    json_t *root;
    nas_error *err;
    int rc;
} reader;

/* The value at dotted key `key` ("recipe.lr"), or NULL. */
static json_t *at(reader *r, const char *key)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", key);
    json_t *v = r->root;
    for (char *save = NULL, *tok = strtok_r(buf, ".", &save); tok && v;
         tok = strtok_r(NULL, ".", &save))
        v = json_is_object(v) ? json_object_get(v, tok) : NULL;
    return v;
}

static int bad(reader *r, const char *key, const char *what)
{
    if (!r->rc)
        r->rc = nas_error_set(r->err, NAS_EFORMAT, "%s: key '%s' %s", r->path, key, what);
    return r->rc;
}

static void get_int(reader *r, const char *key, int required, long lo, long hi, int *out)
{
    json_t *v = at(r, key);
    if (!v || json_is_null(v)) {
        if (required)
            bad(r, key, "is missing");
        return;
    }
    if (!json_is_integer(v)) {
        bad(r, key, "must be an integer");
        return;
    }
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) {
        char m[96];
        snprintf(m, sizeof m, "is %lld, expected %ld..%ld", (long long)x, lo, hi);
        bad(r, key, m);
        return;
    }
    *out = (int)x;
}

static void get_i64(reader *r, const char *key, int64_t *out)
{
    json_t *v = at(r, key);
    if (!v || json_is_null(v))
        return;
    if (!json_is_integer(v)) {
        bad(r, key, "must be an integer or null");
        return;
    }
    *out = (int64_t)json_integer_value(v);
}

static void get_u64(reader *r, const char *key, int required, uint64_t *out)
{
    json_t *v = at(r, key);
    if (!v || json_is_null(v)) {
        if (required)
            bad(r, key, "is missing");
        return;
    }
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        unsigned long long x = strtoull(s, &end, 10);
        if (*s && *end == 0 && s[0] != '-') {
            *out = (uint64_t)x;
            return;
        }
    }
    bad(r, key, "must be a non-negative integer");
}

static void get_num(reader *r, const char *key, int required, double lo, double hi, double *out)
{
    json_t *v = at(r, key);
    if (!v || json_is_null(v)) {
        if (required)
            bad(r, key, "is missing");
        return;
    }
    if (!json_is_number(v)) {
        bad(r, key, "must be a number");
        return;
    }
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi)) {
        char m[96];
        snprintf(m, sizeof m, "is %g, expected %g..%g", x, lo, hi);
        bad(r, key, m);
        return;
    }
    *out = x;
}

static void get_str(reader *r, const char *key, int required, char *out, size_t n)
{
    json_t *v = at(r, key);
    if (!v || json_is_null(v)) {
        if (required)
            bad(r, key, "is missing");
        return;
    }
    if (!json_is_string(v)) {
        bad(r, key, "must be a string");
        return;
    }
    if (strlen(json_string_value(v)) >= n) {
        bad(r, key, "is too long");
        return;
    }
    snprintf(out, n, "%s", json_string_value(v));
}

/* nas_arch_read_json, step 1: "format", "version", "space.type", "space.ops"
 * (cell) or "space.conf" (chain). */
static void read_space(reader *r, nas_arch *a)
{
    char fmt[64] = "";
    get_str(r, "format", 1, fmt, sizeof fmt);
    if (!r->rc && strcmp(fmt, NAS_ARCH_FORMAT) != 0)
        bad(r, "format", "is not \"" NAS_ARCH_FORMAT "\" (not an architecture exported by nas)");
    int version = 0;
    get_int(r, "version", 1, 1, 1000, &version);
    if (!r->rc && version > NAS_ARCH_VERSION) {
        char m[96];
        snprintf(m, sizeof m, "is %d; this nas reads versions 1 to %d", version, NAS_ARCH_VERSION);
        bad(r, "version", m);
    }
    get_str(r, "space.type", 1, a->space_type, sizeof a->space_type);
    if (!r->rc && strcmp(a->space_type, "cell") != 0 && strcmp(a->space_type, "chain") != 0)
        bad(r, "space.type", "must be \"cell\" or \"chain\"");
    if (!r->rc && !strcmp(a->space_type, "chain")) {
        r->rc = nas__arch_chain_read_space(at(r, "space"), r->path, a, r->err);
        return;
    }
    json_t *ops = at(r, "space.ops");
    if (!r->rc && ops) {
        if (!json_is_array(ops) || json_array_size(ops) == 0) {
            bad(r, "space.ops", "must be a non-empty array of op names");
        } else {
            a->op_mask = 0;
            size_t i;
            json_t *o;
            json_array_foreach(ops, i, o) {
                int op;
                if (!json_is_string(o) || nas_op_from_name(json_string_value(o), &op) != NAS_OK) {
                    bad(r, "space.ops", "holds an unknown op");
                    break;
                }
                a->op_mask |= 1u << op;
            }
        }
    }
}

/* Step 2: the genotype string, the network widths, "input" (shape, pixels, normalisation) and "classes". */
static void read_network(reader *r, nas_arch *a)
{
    get_str(r, "genotype", 1, a->genotype, sizeof a->genotype);
    if (strcmp(a->space_type, "chain") != 0) { /* a chain's widths are in its space */
        get_int(r, "network.channels", 1, 1, 4096, &a->net.channels);
        get_int(r, "network.stages", 1, 1, 8, &a->net.stages);
        get_int(r, "network.cells_per_stage", 1, 0, 64, &a->net.cells_per_stage);
    }
    json_t *shape = at(r, "input.shape");
    if (!r->rc) {
        if (!json_is_array(shape) || json_array_size(shape) != 3 ||
            !json_is_integer(json_array_get(shape, 0)) ||
            !json_is_integer(json_array_get(shape, 1)) ||
            !json_is_integer(json_array_get(shape, 2)))
            bad(r, "input.shape", "must be [channels, height, width]");
        else {
            a->net.in_c = (int)json_integer_value(json_array_get(shape, 0));
            a->net.in_h = (int)json_integer_value(json_array_get(shape, 1));
            a->net.in_w = (int)json_integer_value(json_array_get(shape, 2));
            if (a->net.in_c < 1 || a->net.in_c > NAS_DATA_MAX_C || a->net.in_h < 1 ||
                a->net.in_w < 1 || a->net.in_h > 8192 || a->net.in_w > 8192)
                bad(r, "input.shape", "must be [channels 1..16, height, width] of positive sizes");
        }
    }
    get_int(r, "classes", 1, 2, 256, &a->net.classes);
    get_str(r, "proxy_data.format", 0, a->data.format, sizeof a->data.format);
    if (!r->rc) { /* issue 16: the data's normalisation (a number per channel, or one number) */
        nas_data_info *d = &a->data.norm;
        d->c = a->net.in_c, d->h = a->net.in_h, d->w = a->net.in_w, d->classes = a->net.classes;
        json_t *px = json_object_get(json_object_get(r->root, "input"), "pixels");
        d->u8 = !(json_is_string(px) && !strcmp(json_string_value(px), "float32"));
        for (int k = 0; k < 2 && !r->rc; k++) {
            json_t *v = json_object_get(json_object_get(r->root, "input"), k ? "std" : "mean");
            float *dst = k ? d->std : d->mean;
            for (int c = 0; c < d->c && v; c++) {
                json_t *e = json_is_array(v) ? json_array_get(v, (size_t)c) : v;
                if (!json_is_number(e) || (k && !(json_number_value(e) > 0)))
                    bad(r, k ? "input.std" : "input.mean",
                        "must be a number or one number per channel (std > 0)");
                else
                    dst[c] = (float)json_number_value(e);
            }
        }
    }
}

/* "recipe.fidelity" (a multi-fidelity trial; absent: none): the resource,
 * the budget trained (1..max) and the schedule's span max. */
static void read_fidelity(reader *r, nas_arch *a)
{
    if (!at(r, "recipe.fidelity") || r->rc)
        return;
    char res[16] = "";
    get_str(r, "recipe.fidelity.resource", 1, res, sizeof res);
    if (!r->rc && strcmp(res, "epochs") && strcmp(res, "images"))
        bad(r, "recipe.fidelity.resource", "must be \"epochs\" or \"images\"");
    a->fidelity.images = !strcmp(res, "images");
    a->fidelity.budget = a->fidelity.max = -1;
    get_i64(r, "recipe.fidelity.budget", &a->fidelity.budget);
    get_i64(r, "recipe.fidelity.max", &a->fidelity.max);
    if (!r->rc && (a->fidelity.max < 1 || a->fidelity.max > ((int64_t)1 << 40)))
        bad(r, "recipe.fidelity.max", "must be an integer >= 1");
    else if (!r->rc && (a->fidelity.budget < 1 || a->fidelity.budget > a->fidelity.max))
        bad(r, "recipe.fidelity.budget", "must be an integer from 1 to recipe.fidelity.max");
    if (!a->fidelity.images && !r->rc && a->fidelity.max > 100000)
        bad(r, "recipe.fidelity.max", "is over 100000 epochs");
}

/* Step 3: the training recipe ("recipe.*"). */
static void read_recipe(reader *r, nas_arch *a)
{
    get_int(r, "recipe.epochs", 1, 0, 100000, &a->recipe.epochs);
    get_int(r, "recipe.batch_size", 1, 1, 65536, &a->recipe.batch_size);
    get_num(r, "recipe.lr", 1, 0, 100, &a->recipe.lr);
    get_num(r, "recipe.momentum", 1, 0, 1, &a->recipe.momentum);
    json_t *nest = at(r, "recipe.nesterov");
    if (!r->rc) {
        if (!json_is_boolean(nest))
            bad(r, "recipe.nesterov", nest ? "must be true or false" : "is missing");
        else
            a->recipe.nesterov = json_is_true(nest);
    }
    get_num(r, "recipe.weight_decay", 1, 0, 1, &a->recipe.weight_decay);
    char sched[32] = "";
    get_str(r, "recipe.schedule", 1, sched, sizeof sched);
    if (!r->rc) {
        if (!strcmp(sched, "cosine"))
            a->recipe.schedule = NAS_SCHEDULE_COSINE;
        else if (!strcmp(sched, "constant"))
            a->recipe.schedule = NAS_SCHEDULE_CONSTANT;
        else
            bad(r, "recipe.schedule", "must be \"cosine\" or \"constant\"");
    }
    get_u64(r, "recipe.seed", 1, &a->recipe.seed);
    get_int(r, "recipe.bn_recalibrate", 0, 0, 100000, &a->bn_recalibrate); /* issue 30; absent: 0 */
    read_fidelity(r, a);
    char aug[64] = "";
    get_str(r, "recipe.augment", 0, aug, sizeof aug); /* issue 16; absent: none */
    if (!r->rc && nas_augment_parse(aug, &a->recipe.augment) != 0)
        bad(r, "recipe.augment", "is not an augmentation (crop, cropN, flip, cutout, cutoutN)");
}

/* Step 4: the optional "proxy_data.*", "backend.*", "metrics.*" and "source.*" keys. */
static void read_source(reader *r, nas_arch *a)
{
    get_str(r, "proxy_data.dataset", 0, a->data.dataset, sizeof a->data.dataset);
    get_str(r, "proxy_data.dir", 0, a->data.dir, sizeof a->data.dir);
    get_int(r, "proxy_data.train_subset", 0, 0, 1 << 30, &a->data.train_subset);
    json_t *vf = at(r, "proxy_data.valid");
    if (json_is_real(vf)) { /* issue 16: a fraction */
        a->data.valid_fraction = json_real_value(vf);
        if (!(a->data.valid_fraction > 0 && a->data.valid_fraction < 1))
            bad(r, "proxy_data.valid", "must be a count or a fraction in (0, 1)");
    } else {
        get_int(r, "proxy_data.valid", 0, 0, 1 << 30, &a->data.valid);
    }
    get_str(r, "proxy_data.train_images", 0, a->data.train_images, sizeof a->data.train_images);
    get_str(r, "proxy_data.train_labels", 0, a->data.train_labels, sizeof a->data.train_labels);
    get_str(r, "proxy_data.test_images", 0, a->data.test_images, sizeof a->data.test_images);
    get_str(r, "proxy_data.test_labels", 0, a->data.test_labels, sizeof a->data.test_labels);
    get_str(r, "proxy_data.layout", 0, a->data.layout, sizeof a->data.layout);
    json_t *size = at(r, "proxy_data.size"); /* issue 28; absent: the images' own size */
    if (size && !r->rc) {
        if (!json_is_array(size) || json_array_size(size) != 2 ||
            !json_is_integer(json_array_get(size, 0)) ||
            !json_is_integer(json_array_get(size, 1)) ||
            json_integer_value(json_array_get(size, 0)) < 1 ||
            json_integer_value(json_array_get(size, 1)) < 1 ||
            json_integer_value(json_array_get(size, 0)) > 8192 ||
            json_integer_value(json_array_get(size, 1)) > 8192)
            bad(r, "proxy_data.size", "must be [height, width], each 1..8192");
        else
            for (int k = 0; k < 2; k++)
                a->data.size[k] = (int)json_integer_value(json_array_get(size, (size_t)k));
    }
    a->data.split_seed = a->recipe.seed;
    get_u64(r, "proxy_data.split_seed", 0, &a->data.split_seed);
    get_str(r, "backend.name", 0, a->backend, sizeof a->backend);
    get_int(r, "backend.threads", 0, 0, 1024, &a->threads);
    get_num(r, "metrics.val_accuracy", 0, -1e300, 1e300, &a->metrics.val_accuracy);
    get_num(r, "metrics.test_accuracy", 0, -1e300, 1e300, &a->metrics.test_accuracy);
    get_num(r, "metrics.train_loss", 0, -1e300, 1e300, &a->metrics.train_loss);
    get_num(r, "metrics.latency_ms", 0, -1e300, 1e300, &a->metrics.latency_ms);
    get_num(r, "metrics.train_seconds", 0, -1e300, 1e300, &a->metrics.train_seconds);
    get_i64(r, "metrics.macs", &a->metrics.macs);
    get_i64(r, "metrics.params", &a->metrics.params);
    get_int(r, "metrics.epochs", 0, -1, 1 << 30, &a->metrics.epochs);
    get_i64(r, "source.trial_id", &a->trial_id);
    get_i64(r, "source.experiment_id", &a->experiment_id);
    get_str(r, "source.experiment", 0, a->experiment, sizeof a->experiment);
    get_str(r, "source.db", 0, a->db_path, sizeof a->db_path);
    get_str(r, "source.weights", 0, a->weights, sizeof a->weights);
    get_str(r, "source.measured_by", 0, a->measured_by, sizeof a->measured_by);
}

/* Step 5: the genotype through the space's own parser (NAS_EFORMAT naming
 * `path` when it does not parse or carries nothing from input to output);
 * a chain's input, classes and layer list against its space. */
static void read_genotype(reader *r, nas_arch *a, const char *path, nas_error *err)
{
    if (r->rc)
        return;
    nas_space *sp = NULL;
    nas_error e2;
    int valid = 0, step = 0;
    if (nas__arch_parse(a, &sp, &valid, &step, &e2) != NAS_OK)
        r->rc = nas_error_set(err, NAS_EFORMAT, "%s: %s: %s", path,
                              step ? "key 'genotype'" : "space", e2.msg);
    else if (!valid)
        r->rc = nas_error_set(err, NAS_EFORMAT,
                              "%s: key 'genotype': %s carries nothing from input to output", path,
                              a->genotype);
    else if (!strcmp(a->space_type, "chain"))
        r->rc = nas__arch_chain_check(at(r, "network"), sp, path, a, err);
    nas_space_destroy(sp);
}

int nas_arch_read_json(const char *path, nas_arch *out, nas_error *err)
{
    if (!path || !out)
        return nas_error_set(err, NAS_EINVAL, "nas_arch_read_json: NULL argument");
    nas_arch_init(out);
    FILE *f = fopen(path, "r");
    if (!f)
        return nas_error_set(err, NAS_EIO, "cannot read %s: %s", path, strerror(errno));
    json_error_t je;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root)
        return nas_error_set(err, NAS_EFORMAT, "%s:%d:%d: not valid JSON: %s", path, je.line,
                             je.column, je.text);
    reader r = {path, root, err, NAS_OK};
    nas_arch *a = out;
    if (!json_is_object(root)) {
        bad(&r, "(top level)", "must be an object");
        goto done;
    }
    read_space(&r, a);
    read_network(&r, a);
    read_recipe(&r, a);
    read_source(&r, a);
    read_genotype(&r, a, path, err);
done:
    json_decref(root);
    if (r.rc) {
        nas_arch_init(out);
        return r.rc;
    }
    return NAS_OK;
}
