/*
 * experiments/loader-wait/loader_wait.c - issue 16: the share of a proxy
 * trial's training time the trainer waits for its batches, with the
 * loader's batches prepared in the training thread (loader_threads 0) and
 * ahead of it (1, the default), on the data and recipe of a space.conf.
 *
 *   loader_wait CONF [--trials K] [--subset N] [--steps S] [--augment WORDS]
 *
 * Reads CONF's data as nas run does (nas_data_load: split, normalisation),
 * samples K architectures of its space (PCG32 seed 1), trains each for S
 * steps (--subset N images per epoch, default the config's train_subset)
 * with CONF's proxy recipe, backend and threads, once per loader setting,
 * and prints per architecture: steps, ms per step, the wait share
 * (nas_train_stats.wait_seconds / seconds) for each setting, and whether
 * the two runs' losses are identical (they must be).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nas/data.h"
#include "nas/evaluator.h"
#include "nas/trainer.h"

static const char *arg(int argc, char **argv, const char *name, const char *dflt)
{
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return dflt;
}

static int train_once(const nas_config *cfg, const nas_net_desc *d, const nas_dataset *data,
                      int steps, int loader_threads, nas_train_stats *st, nas_error *err)
{
    nas_backend *be = NULL;
    int rc = nas_backend_create(cfg->proxy.backend, cfg->proxy.threads, 0, &be, err);
    nas_net *net = NULL;
    int batch = cfg->proxy.batch_size;
    if (!rc)
        rc = nas_net_create(be, d, batch, cfg->seed, &net, err);
    nas_recipe rec = {.epochs = 1, .batch_size = batch, .lr = cfg->proxy.lr,
                      .momentum = cfg->proxy.momentum, .nesterov = cfg->proxy.nesterov,
                      .weight_decay = cfg->proxy.weight_decay, .schedule = cfg->proxy.schedule,
                      .seed = cfg->seed, .loader_threads = loader_threads};
    nas_augment_parse(cfg->data.augment, &rec.augment);
    nas_dataset view = *data; /* the first steps x batch images: `steps` steps */
    view.owns = 0;
    if ((long)steps * batch < view.n)
        view.n = steps * batch;
    if (!rc)
        rc = nas_train(net, &view, &rec, NULL, NULL, st, err);
    nas_net_destroy(net);
    nas_backend_destroy(be);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: loader_wait CONF [--trials K] [--subset N] [--steps S] "
                        "[--augment WORDS]\n");
        return 2;
    }
    nas_config *cfg = calloc(1, sizeof *cfg);
    nas_error err = {0};
    if (!cfg || nas_config_load(argv[1], cfg, &err)) {
        fprintf(stderr, "loader_wait: %s\n", err.msg);
        return 2;
    }
    int trials = atoi(arg(argc, argv, "--trials", "3"));
    int steps = atoi(arg(argc, argv, "--steps", "40"));
    const char *subset = arg(argc, argv, "--subset", NULL), *aug = arg(argc, argv, "--augment", NULL);
    if (subset)
        cfg->data.train_subset = atoi(subset);
    if (aug)
        snprintf(cfg->data.augment, sizeof cfg->data.augment, "%s", aug);
    nas_data_info info;
    nas_dataset *train = NULL, *valid = NULL;
    nas_space *space = NULL;
    if (nas_data_load(&cfg->data, cfg->seed, &info, &train, &valid, &err) ||
        nas_space_create(&cfg->space, &space, &err)) {
        fprintf(stderr, "loader_wait: %s\n", err.msg);
        return 1;
    }
    printf("# %s: %d training images %dx%dx%d, batch %d, backend %s, %d threads, augment '%s'\n",
           argv[1], train->n, train->c, train->h, train->w, cfg->proxy.batch_size,
           cfg->proxy.backend, cfg->proxy.threads, cfg->data.augment);
    nas_rng r;
    nas_rng_seed(&r, 1, 1);
    double worst = 0;
    for (int t = 0; t < trials; t++) {
        nas_genotype g;
        do
            nas_space_sample(space, &r, &g);
        while (!nas_space_is_valid(space, &g));
        nas_net_desc d;
        nas_evaluator_net_desc(NULL, space, &g, &d);
        d.in_c = train->c, d.in_h = train->h, d.in_w = train->w, d.classes = train->classes;
        nas_train_stats s0, s1;
        if (train_once(cfg, &d, train, steps, 0, &s0, &err) ||
            train_once(cfg, &d, train, steps, 1, &s1, &err)) {
            fprintf(stderr, "loader_wait: %s\n", err.msg);
            return 1;
        }
        double w0 = s0.wait_seconds / s0.seconds, w1 = s1.wait_seconds / s1.seconds;
        worst = w1 > worst ? w1 : worst;
        printf("arch %d: %d steps, %.1f ms/step; waiting for data: %.3f%% in the training thread "
               "(loader_threads 0), %.3f%% with a loader thread (1); losses %s\n",
               t + 1, s1.steps, 1000.0 * s1.seconds / s1.steps, 100.0 * w0, 100.0 * w1,
               memcmp(&s0.train_loss, &s1.train_loss, sizeof s0.train_loss) ? "DIFFER" : "identical");
    }
    printf("# worst wait share with a loader thread: %.3f%%\n", 100.0 * worst);
    nas_space_destroy(space);
    nas_dataset_destroy(train);
    nas_dataset_destroy(valid);
    free(cfg);
    return 0;
}
