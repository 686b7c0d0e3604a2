/*
 * cli/cmd_train.c - `nas train --genotype STRING [options]`: train one
 * NAS-Bench-201 cell network on the full Fashion-MNIST training set (60k)
 * with NAS-Bench-201's recipe (SGD, Nesterov momentum 0.9, weight decay
 * 5e-4, cosine learning rate per step), print per-epoch loss, accuracy,
 * time and throughput, then the test accuracy on the 10k test images and
 * the network's MACs and parameters.
 *
 * Options are parsed from one table (name, kind, destination) so new ones
 * (and a positional ARCH.json later) slot in without new parsing code.
 *
 * --precision fp32|bf16|fp16 (default fp32: no config is read here) goes to
 * nas_backend_set_precision, as proxy.precision does for the trials of a
 * search (evaluator/evaluator.c); a backend that cannot do it is an error
 * with the backend's reason, never a silent fp32 run.
 */
#include <errno.h>
#include <inttypes.h> /* PRId64 */
#include <stdio.h>
#include <stdlib.h>   /* strtol, strtod, strtoull */
#include <string.h>
#include <unistd.h>   /* isatty */
#include "cli/cli.h"
#include "nas/evaluator.h"
#include "nas/space.h"
#include "nas/trainer.h"

typedef struct train_opts {
    const char *genotype;
    long epochs, batch, channels, cells, threads;
    unsigned long long seed;
    double lr;
    const char *backend;
    const char *data;
    const char *precision; /* "fp32" | "bf16" | "fp16" */
} train_opts;

enum opt_kind { OPT_STR, OPT_INT, OPT_U64, OPT_DBL };

typedef struct opt_def {
    const char *name;
    int kind;
    size_t off;  /* offset in train_opts */
    double min, max;
} opt_def;

static const opt_def OPTS[] = {
    {"--genotype", OPT_STR, offsetof(train_opts, genotype), 0, 0},
    {"--epochs", OPT_INT, offsetof(train_opts, epochs), 1, 1000},
    {"--seed", OPT_U64, offsetof(train_opts, seed), 0, 0},
    {"--batch-size", OPT_INT, offsetof(train_opts, batch), 1, 65536},
    {"--lr", OPT_DBL, offsetof(train_opts, lr), 0, 100},
    {"--channels", OPT_INT, offsetof(train_opts, channels), 1, 4096},
    {"--cells", OPT_INT, offsetof(train_opts, cells), 0, 64},
    {"--threads", OPT_INT, offsetof(train_opts, threads), 0, 1024},
    {"--backend", OPT_STR, offsetof(train_opts, backend), 0, 0},
    {"--data", OPT_STR, offsetof(train_opts, data), 0, 0},
    {"--precision", OPT_STR, offsetof(train_opts, precision), 0, 0},
};
#define N_OPTS (sizeof OPTS / sizeof OPTS[0])

static int usage_error(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "nas train: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    nas_cli_usage(stderr, "train");
    return NAS_EXIT_USAGE;
}

static int parse_opts(int argc, char **argv, train_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = NULL;
        const char *eq = strchr(arg, '=');
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        const opt_def *d = NULL;
        for (size_t k = 0; k < N_OPTS; k++)
            if (strlen(OPTS[k].name) == nlen && strncmp(OPTS[k].name, arg, nlen) == 0)
                d = &OPTS[k];
        if (!d) {
            if (arg[0] == '-')
                return usage_error("unknown option '%s'%s", arg, "");
            return usage_error("unexpected argument '%s'%s (give the cell with --genotype)", arg,
                               "");
        }
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return usage_error("option %s needs a value%s", d->name, "");
        char *end = NULL;
        errno = 0;
        char *dst = (char *)o + d->off;
        switch (d->kind) {
        case OPT_STR:
            *(const char **)dst = val;
            break;
        case OPT_INT: {
            long v = strtol(val, &end, 10);
            if (errno || end == val || *end || v < (long)d->min || v > (long)d->max)
                return usage_error("%s: '%s' is not an integer in range", d->name, val);
            *(long *)dst = v;
            break;
        }
        case OPT_U64: {
            unsigned long long v = strtoull(val, &end, 10);
            if (errno || end == val || *end || val[0] == '-')
                return usage_error("%s: '%s' is not a non-negative integer", d->name, val);
            *(unsigned long long *)dst = v;
            break;
        }
        case OPT_DBL: {
            double v = strtod(val, &end);
            if (errno || end == val || *end || !(v > d->min) || v > d->max)
                return usage_error("%s: '%s' is not a positive number in range", d->name, val);
            *(double *)dst = v;
            break;
        }
        }
    }
    return NAS_EXIT_OK;
}

/* Live step counter on a terminal's stderr (not in logs). */
static int print_step(void *ctx, int step, int steps, float loss)
{
    (void)ctx;
    if (step % 20 == 0 || step == steps) {
        fprintf(stderr, "\r  step %d/%d  loss %.4f ", step, steps, (double)loss);
        fflush(stderr);
    }
    return 0;
}

static int print_epoch(void *ctx, const nas_epoch_stats *e)
{
    if (ctx)
        fprintf(stderr, "\r%40s\r", "");
    printf("epoch %d/%d  loss %.4f  train acc %.4f  time %.1f s  %.0f img/s\n", e->epoch,
           e->epochs, e->loss, e->accuracy, e->seconds, e->images_per_s);
    fflush(stdout);
    return 0;
}

int nas__cli_precision_ok(const char *p)
{
    return p && (!strcmp(p, "fp32") || !strcmp(p, "bf16") || !strcmp(p, "fp16"));
}

int nas__cli_set_precision(nas_backend *be, const char *precision, nas_error *err)
{
    int rc = nas_backend_set_precision(be, precision);
    if (rc != NAS_OK) {
        const char *why = nas_backend_last_error(be);
        nas_error_set(err, rc, "--precision %s is not available on the %s backend: %s%s",
                      precision, nas_backend_name(be), why && *why ? why : nas_strerror(rc),
                      !strcmp(precision, "fp16") ? " (fp16 with loss scaling is CUDA-only; use "
                                                   "bf16 or fp32 on the CPU)"
                                                 : "");
    }
    return rc;
}

int nas_cmd_train(int argc, char **argv)
{
    train_opts o = {.genotype = NULL, .epochs = 3, .batch = 128, .channels = 16, .cells = 1,
                    .threads = 2, .seed = 0, .lr = 0.05, .backend = "cpu",
                    .data = "/usr/share/datasets/fashion-mnist", .precision = "fp32"};
    /* `nas train ARCH.json ...`: an exported architecture (cli/cmd_train_arch.c). */
    if (argc > 1 && argv[1][0] != '-')
        return nas__cmd_train_arch(argc, argv);
    int ec = parse_opts(argc, argv, &o);
    if (ec)
        return ec;
    if (!o.genotype)
        return usage_error("--genotype STRING is required%s%s", "", "");
    if (!nas__cli_precision_ok(o.precision))
        return usage_error("--precision: '%s' is not fp32, bf16 or fp16%s", o.precision, "");

    nas_error err = {0};
    nas_space_desc sd = {.type = NAS_SPACE_CELL, .op_mask = (1u << NAS_OP_COUNT) - 1,
                         .channels = (int)o.channels, .stages = 3,
                         .cells_per_stage = (int)o.cells};
    nas_space *space = NULL;
    nas_backend *be = NULL;
    nas_dataset *train = NULL, *test = NULL;
    nas_net *net = NULL;
    int rc = nas_space_create(&sd, &space, &err);
    if (rc) {
        fprintf(stderr, "nas train: %s\n", err.msg);
        return NAS_EXIT_USAGE;
    }
    nas_net_desc nd = {.channels = (int)o.channels, .stages = 3, .cells_per_stage = (int)o.cells,
                       .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10};
    rc = nas_space_parse(space, o.genotype, &nd.genotype, &err);
    if (rc) {
        fprintf(stderr, "nas train: bad genotype '%s': %s\n", o.genotype, err.msg);
        nas_space_destroy(space);
        return NAS_EXIT_USAGE;
    }
    if (!nas_space_is_valid(space, &nd.genotype)) {
        fprintf(stderr, "nas train: genotype '%s' has no path from the cell input to its output\n",
                o.genotype);
        nas_space_destroy(space);
        return NAS_EXIT_USAGE;
    }
    int64_t macs = 0, params = 0;
    nas_count_net(&nd, &macs, &params, NULL, NULL);

    const char *stage = "loading Fashion-MNIST";
    rc = nas_fmnist_load(o.data, "train", &train, &err);
    if (!rc)
        rc = nas_fmnist_load(o.data, "test", &test, &err);
    if (!rc) {
        stage = "creating the backend";
        rc = nas_backend_create(o.backend, (int)o.threads, 0, &be, &err);
    }
    if (!rc) {
        stage = "setting the precision";
        rc = nas__cli_set_precision(be, o.precision, &err);
    }
    if (!rc) {
        stage = "building the network";
        rc = nas_net_create(be, &nd, (int)o.batch, o.seed, &net, &err);
    }
    if (!rc && nas_net_param_count(net) != params) {
        rc = nas_error_set(&err, NAS_EINVAL, "network has %" PRId64 " parameters, counter %" PRId64,
                           nas_net_param_count(net), params);
    }
    if (rc) {
        fprintf(stderr, "nas train: %s: %s\n", stage, err.msg);
        if (rc == NAS_ENOTFOUND) /* unknown --backend name: a usage error */
            rc = NAS_EINVAL;
        goto out;
    }
    printf("nas train: %s\n", o.genotype);
    printf("C=%ld N=%ld, %s backend, %s, %ld threads, %d train / %d test images, batch %ld, "
           "lr %g, %ld epochs, seed %llu\n",
           o.channels, o.cells, o.backend, o.precision, o.threads, train->n, test->n, o.batch,
           o.lr, o.epochs, o.seed);
    printf("params %" PRId64 ", MACs %" PRId64 " (%.2f M)\n", params, macs, (double)macs / 1e6);
    fflush(stdout);

    nas_recipe rec = {.epochs = (int)o.epochs, .batch_size = (int)o.batch, .lr = o.lr,
                      .momentum = 0.9, .nesterov = 1, .weight_decay = 5e-4,
                      .schedule = NAS_SCHEDULE_COSINE, .seed = o.seed};
    nas_train_stats st;
    int tty = isatty(STDERR_FILENO);
    rc = nas_train_epochs(net, train, &rec, tty ? print_step : NULL, print_epoch,
                          tty ? (void *)&tty : NULL, &st, &err);
    if (rc) {
        fprintf(stderr, "nas train: training: %s\n", err.msg);
        goto out;
    }
    double acc = 0, loss = 0;
    rc = nas_net_evaluate(net, test, (int)o.batch, &acc, &loss, &err);
    if (rc) {
        fprintf(stderr, "nas train: testing: %s\n", err.msg);
        goto out;
    }
    printf("training: %.1f s, %.0f img/s\n", st.seconds, st.images_per_s);
    printf("test accuracy %.4f  test loss %.4f\n", acc, loss);
    printf("MACs %" PRId64 "  params %" PRId64 "\n", macs, params);
out:
    nas_net_destroy(net);
    nas_backend_destroy(be);
    nas_dataset_destroy(train);
    nas_dataset_destroy(test);
    nas_space_destroy(space);
    return nas_cli_exit_code(rc);
}
