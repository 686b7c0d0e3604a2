/*
 * experiments/bench-train/bench_nas.c - the nas side of the issue-8
 * benchmark (run.sh drives it next to bench_torch.py).
 *
 *   bench_nas train --genotype G [--batch B] [--threads T] [--steps S]
 *             [--eval-images N] [--latency-runs R] [--epochs E] [--backend cpu]
 *             [--precision fp32|bf16] [--train-subset N]
 *       build TinyNetwork (C=16, N=1, Fashion-MNIST 1x28x28) for G and print
 *       key=value lines: build time, first-step time (primitive creation),
 *       training images/s through nas_train (shuffled batches gathered and
 *       uploaded by the trainer's loader), the same steps on one resident
 *       batch (no loader: the loader's share is the difference), evaluation
 *       images/s (eval mode), batch-1 latency (nas_latency_ms median) and,
 *       with --epochs, test accuracy after E epochs on the 60k training set
 *       (or its first N images with --train-subset N). --eval-images 0 (or
 *       less) skips evaluation and latency: with NAS_CPU_PROFILE=1 the per-op
 *       profile then covers the training steps only. --eval-only skips
 *       training, the unfolded evaluation and the latency runs: the profile
 *       then covers the folded evaluation of the untrained net alone.
 *   bench_nas sgemm [--threads T] [--size N]
 *       single-precision GEMM peak: best of 5 cblas_sgemm N^3, GFLOP/s.
 *   bench_nas membw [--threads T] [--n N --c C --hw HW]
 *       memory bandwidth (GB/s) of a read pass, a read + write pass, and of
 *       the fused batch norm + h-swish forward and backward (cmd_membw).
 *   bench_nas trial --conf FILE --genotype G [--trials K]
 *       run K trials through the evaluator (what a search worker does) and
 *       split each trial's wall time into training steps and the rest.
 *
 * FLOP accounting: 2 FLOPs per MAC forward, 4 backward (data + weights),
 * i.e. 6 x MACs per trained image.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cblas.h>
#include "nas/evaluator.h"
#include "nas/space.h"
#include "nas/trainer.h"
#include "nas/layers.h" /* nas_space_input (chain spaces) */
#include "trainer/net_impl.h" /* nas__net_set_fold: eval with and without folding */
#include "trainer/backend_impl.h" /* nas__cpu_bn_act_fwd / _bwd (membw) */
#if defined(__SSE__)
#include <xmmintrin.h> /* _mm_stream_ps (membw's write pass, as the batch norm's) */
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of this process, all threads: unlike wall time it hardly
 * changes when other processes share the cores (with OMP_WAIT_POLICY=
 * passive idle threads sleep instead of spinning), so it compares the work
 * two implementations do even on a busy machine. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *arg_str(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return def;
}

static long arg_int(int argc, char **argv, const char *name, long def)
{
    const char *s = arg_str(argc, argv, name, NULL);
    return s ? strtol(s, NULL, 10) : def;
}

/* 1 when the bare flag `name` is among the options */
static int arg_flag(int argc, char **argv, const char *name)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

static int die(const char *what, int rc, const nas_error *err)
{
    fprintf(stderr, "bench_nas: %s: %s (%s)\n", what, err ? err->msg : "", nas_strerror(rc));
    return 1;
}

static int cmd_sgemm(int argc, char **argv)
{
    int threads = (int)arg_int(argc, argv, "--threads", 2);
    int n = (int)arg_int(argc, argv, "--size", 2048);
    openblas_set_num_threads(threads);
    float *a = malloc((size_t)n * n * sizeof *a), *b = malloc((size_t)n * n * sizeof *b),
          *c = malloc((size_t)n * n * sizeof *c);
    if (!a || !b || !c)
        return 1;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.1f;
    }
    double best = 0;
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                    n);
        double g = 2.0 * n * (double)n * n / (now_s() - t0) / 1e9;
        if (g > best)
            best = g;
    }
    printf("sgemm_gflops=%.1f\n", best);
    free(a);
    free(b);
    free(c);
    return 0;
}

/* Full-batch copy of the first `b` images of d into x (and labels into y). */
static int upload_first(const nas_dataset *d, int b, nas_tensor *x, nas_tensor *y)
{
    size_t per = (size_t)d->c * d->h * d->w;
    float *lab = malloc((size_t)b * sizeof *lab);
    if (!lab)
        return NAS_ENOMEM;
    for (int i = 0; i < b; i++)
        lab[i] = (float)d->labels[i];
    int rc = nas_tensor_upload(x, d->images, (size_t)b * per);
    if (!rc)
        rc = nas_tensor_upload(y, lab, (size_t)b);
    free(lab);
    return rc;
}

/* Steps on one resident batch: the kernels only (the first step creates
 * the primitives and is timed on its own). */
static int bench_resident(nas_backend *be, nas_net *net, const nas_dataset *train, int batch,
                          int steps)
{
    nas_tensor *x = NULL, *y = NULL;
    int rc = nas_tensor_create(be, batch, 1, 28, 28, &x);
    if (!rc)
        rc = nas_tensor_create(be, batch, 1, 1, 1, &y);
    if (!rc)
        rc = upload_first(train, batch, x, y);
    const nas_tensor *logits;
    float loss = 0;
    int correct = 0;
    double first = 0, resident = 0, resident_cpu = 0;
    for (int s = 0; s < steps + 3 && !rc; s++) {
        double ts = now_s(), cs = cpu_s();
        rc = nas_net_forward(net, x, 1, &logits);
        if (!rc)
            rc = nas_net_backward(net, y, &loss, &correct);
        if (!rc)
            rc = nas_net_sgd_step(net, 0.01f, 0.9f, 5e-4f, 1);
        if (!rc)
            rc = nas_backend_sync(be);
        double dt = now_s() - ts;
        if (s == 0)
            first = dt;
        if (s >= 3) {
            resident += dt;
            resident_cpu += cpu_s() - cs;
        }
    }
    nas_tensor_destroy(x);
    nas_tensor_destroy(y);
    if (rc)
        return die(nas_backend_last_error(be), rc, NULL);
    printf("first_step_s=%.4f\n", first);
    printf("step_ms=%.3f\n", 1e3 * resident / steps);
    printf("train_ips_resident=%.1f\n", (double)steps * batch / resident);
    printf("train_cpu_ms_per_img=%.3f\n", 1e3 * resident_cpu / ((double)steps * batch));
    return 0;
}

/* The same number of steps through nas_train (loader included). */
static int bench_loader(nas_net *net, const nas_dataset *train, const nas_recipe *rec,
                        int steps, int64_t macs)
{
    nas_error err = {0};
    nas_dataset *sub = NULL, *rest = NULL;
    int batch = rec->batch_size;
    int rc = nas_dataset_split(train, 1, steps * batch, 7, &rest, &sub, &err);
    /* split: the first image goes to `sub`, the next steps*batch to `rest` */
    if (rc)
        return die("split", rc, &err);
    nas_train_stats st;
    double t0 = now_s();
    rc = nas_train(net, rest, rec, NULL, NULL, &st, &err);
    double wall = now_s() - t0;
    if (rc)
        return die("nas_train", rc, &err);
    printf("train_ips=%.1f\n", (double)st.steps * batch / wall);
    printf("train_gflops=%.1f\n", 6.0 * (double)macs * st.steps * batch / wall / 1e9);
    /* measured inside nas_train around each batch's gather + upload */
    printf("loader_share=%.4f\n", st.seconds > 0 ? st.load_seconds / st.seconds : 0.0);
    nas_dataset_destroy(sub);
    nas_dataset_destroy(rest);
    return 0;
}

/* Evaluation throughput on the first eval_n test images, then latency. */
static int bench_eval(nas_net *net, const nas_dataset *test, int batch, int eval_n, int lat_runs,
                      int folded_only)
{
    nas_error err = {0};
    nas_dataset ev = *test;
    ev.n = eval_n < test->n ? eval_n : test->n;
    ev.owns = 0;
    double acc = 0, eloss = 0;
    nas_dataset warm = ev;
    warm.n = batch * 2 < ev.n ? batch * 2 : ev.n;
    int rc = nas_net_evaluate(net, &warm, batch, &acc, &eloss, &err);
    double t0 = now_s();
    double c0 = cpu_s();
    if (!rc)
        rc = nas_net_evaluate(net, &ev, batch, &acc, &eloss, &err);
    if (rc)
        return die("evaluate", rc, &err);
    printf("eval_ips=%.1f\n", ev.n / (now_s() - t0));
    printf("eval_cpu_ms_per_img=%.3f\n", 1e3 * (cpu_s() - c0) / ev.n);
    if (folded_only)
        return 0;
    /* the same images with batch norm, activation and sum as separate
     * steps (no folding, no post-ops: issue 34, item 4), for the ratio */
    double acc2 = 0, eloss2 = 0;
    int was = nas__net_set_fold(net, 0);
    rc = nas_net_evaluate(net, &warm, batch, &acc2, &eloss2, &err);
    t0 = now_s();
    c0 = cpu_s();
    if (!rc)
        rc = nas_net_evaluate(net, &ev, batch, &acc2, &eloss2, &err);
    nas__net_set_fold(net, was);
    if (rc)
        return die("evaluate (unfolded)", rc, &err);
    printf("eval_ips_unfolded=%.1f\n", ev.n / (now_s() - t0));
    printf("eval_cpu_ms_per_img_unfolded=%.3f\n", 1e3 * (cpu_s() - c0) / ev.n);
    printf("eval_acc_folded=%.4f eval_acc_unfolded=%.4f\n", acc, acc2);
    double lat = 0;
    rc = nas_latency_ms(net, 1, 20, lat_runs, &lat, &err);
    if (rc)
        return die("latency", rc, &err);
    printf("latency_ms=%.3f\n", lat);
    return 0;
}

/* --epochs: a fresh network (seed 0) trained on the first `subset` images
 * (0: all 60k), tested on the test set. */
static int bench_epochs(nas_backend *be, const nas_net_desc *nd, const nas_recipe *rec,
                        const nas_dataset *train, const nas_dataset *test, int epochs, int subset)
{
    nas_error err = {0};
    nas_net *net = NULL;
    int rc = nas_net_create(be, nd, rec->batch_size, 0, &net, &err);
    nas_recipe full = *rec;
    full.epochs = epochs;
    full.seed = 0;
    double t0 = now_s(), acc = 0, eloss = 0;
    nas_dataset tr = *train;
    tr.owns = 0;
    if (subset > 0 && subset < tr.n)
        tr.n = subset;
    nas_train_stats st;
    if (!rc)
        rc = nas_train(net, &tr, &full, NULL, NULL, &st, &err);
    if (!rc)
        rc = nas_net_evaluate(net, test, rec->batch_size, &acc, &eloss, &err);
    if (rc)
        return die("epochs", rc, &err);
    printf("epochs_s=%.1f\n", now_s() - t0);
    printf("acc=%.4f\n", acc);
    nas_net_destroy(net);
    return 0;
}

static int cmd_train(int argc, char **argv)
{
    const char *geno = arg_str(argc, argv, "--genotype", NULL);
    int batch = (int)arg_int(argc, argv, "--batch", 128);
    int threads = (int)arg_int(argc, argv, "--threads", 2);
    int steps = (int)arg_int(argc, argv, "--steps", 60);
    int eval_n = (int)arg_int(argc, argv, "--eval-images", 5000);
    int lat_runs = (int)arg_int(argc, argv, "--latency-runs", 200);
    int epochs = (int)arg_int(argc, argv, "--epochs", 0);
    int subset = (int)arg_int(argc, argv, "--train-subset", 0);
    const char *backend = arg_str(argc, argv, "--backend", "cpu");
    const char *precision = arg_str(argc, argv, "--precision", "fp32");
    const char *dir = arg_str(argc, argv, "--data", "/usr/share/datasets/fashion-mnist");
    if (!geno) {
        fprintf(stderr, "bench_nas train: --genotype is required\n");
        return 2;
    }
    nas_error err = {0};
    nas_space_desc sd = {.type = NAS_SPACE_CELL, .op_mask = (1u << NAS_OP_COUNT) - 1,
                         .channels = 16, .stages = 3, .cells_per_stage = 1};
    nas_space *space = NULL;
    /* issue 15: --space CONF: a chain space; the genotype is one of its */
    const char *space_conf = arg_str(argc, argv, "--space", NULL);
    nas_config *cfg = NULL;
    int rc;
    if (space_conf) {
        cfg = calloc(1, sizeof *cfg);
        rc = cfg ? nas_config_load(space_conf, cfg, &err) : NAS_ENOMEM;
        if (!rc)
            rc = nas_space_create(&cfg->space, &space, &err);
    } else {
        rc = nas_space_create(&sd, &space, &err);
    }
    if (rc)
        return die("space", rc, &err);
    nas_net_desc nd = {.channels = 16, .stages = 3, .cells_per_stage = 1, .in_c = 1,
                       .in_h = 28, .in_w = 28, .classes = 10};
    if (space_conf) {
        nd.space = space;
        nas_space_input(space, &nd.in_c, &nd.in_h, &nd.in_w, &nd.classes);
    }
    rc = nas_space_parse(space, geno, &nd.genotype, &err);
    if (rc)
        return die("genotype", rc, &err);
    int64_t macs = 0, params = 0;
    nas_count_net(&nd, &macs, &params, NULL, NULL);
    printf("macs=%" PRId64 " params=%" PRId64 "\n", macs, params);

    double t0 = now_s();
    nas_dataset *train = NULL, *test = NULL;
    rc = nas_fmnist_load(dir, "train", &train, &err);
    if (!rc)
        rc = nas_fmnist_load(dir, "test", &test, &err);
    if (rc)
        return die("loading Fashion-MNIST", rc, &err);
    printf("data_load_s=%.3f\n", now_s() - t0);

    nas_backend *be = NULL;
    rc = nas_backend_create(backend, threads, 0, &be, &err);
    if (rc)
        return die("backend", rc, &err);
    rc = nas_backend_set_precision(be, precision);
    if (rc)
        return die(nas_backend_last_error(be), rc, NULL);
    nas_net *net = NULL;
    t0 = now_s();
    rc = nas_net_create(be, &nd, batch, 1, &net, &err);
    if (rc)
        return die("net", rc, &err);
    printf("build_s=%.4f\n", now_s() - t0);

    nas_recipe rec = {.epochs = 1, .batch_size = batch, .lr = 0.05, .momentum = 0.9,
                      .nesterov = 1, .weight_decay = 5e-4, .schedule = NAS_SCHEDULE_COSINE,
                      .seed = 3};
    /* --eval-only: no training, only the folded evaluation (with
     * NAS_CPU_PROFILE=1, a per-op profile of evaluation alone) */
    int eval_only = arg_flag(argc, argv, "--eval-only");
    if (!eval_only)
        rc = bench_resident(be, net, train, batch, steps);
    if (!rc && !eval_only)
        rc = bench_loader(net, train, &rec, steps, macs);
    if (!rc && eval_n > 0) /* --eval-images 0: training only (run.sh's per-op profile) */
        rc = bench_eval(net, test, batch, eval_n, lat_runs, eval_only);
    if (!rc && epochs > 0)
        rc = bench_epochs(be, &nd, &rec, train, test, epochs, subset);
    if (rc)
        return rc;
    nas_net_destroy(net);
    nas_backend_destroy(be);
    nas_dataset_destroy(train);
    nas_dataset_destroy(test);
    nas_space_destroy(space);
    free(cfg);
    return 0;
}

static int cmd_trial(int argc, char **argv)
{
    const char *conf = arg_str(argc, argv, "--conf", NULL);
    const char *geno = arg_str(argc, argv, "--genotype", NULL);
    int trials = (int)arg_int(argc, argv, "--trials", 2);
    if (!conf || !geno) {
        fprintf(stderr, "bench_nas trial: --conf and --genotype are required\n");
        return 2;
    }
    nas_error err = {0};
    nas_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return 1;
    int rc = nas_config_load(conf, cfg, &err);
    if (rc)
        return die("config", rc, &err);
    nas_space *space = NULL;
    rc = nas_space_create(&cfg->space, &space, &err);
    if (rc)
        return die("space", rc, &err);
    nas_genotype g;
    rc = nas_space_parse(space, geno, &g, &err);
    if (rc)
        return die("genotype", rc, &err);
    double t0 = now_s();
    nas_evaluator *ev = NULL;
    rc = nas_evaluator_create(cfg, space, &ev, &err);
    if (rc)
        return die("evaluator", rc, &err);
    printf("evaluator_create_s=%.3f\n", now_s() - t0);
    for (int i = 0; i < trials; i++) {
        nas_trial_result res;
        t0 = now_s();
        rc = nas_evaluator_run(ev, &g, NULL, NULL, &res);
        double wall = now_s() - t0;
        if (rc)
            return die(res.error, rc, NULL);
        printf("trial=%d wall_s=%.3f train_s=%.3f outside_share=%.3f val_acc=%.4f "
               "latency_ms=%.3f\n",
               i + 1, wall, res.train_seconds, 1.0 - res.train_seconds / wall, res.val_accuracy,
               res.latency_ms);
    }
    nas_evaluator_destroy(ev);
    nas_space_destroy(space);
    free(cfg);
    return 0;
}

/* membw: one timed run of f, best (shortest) of `reps`, in seconds. */
typedef void (*membw_fn)(void *arg);
static double best_of(membw_fn f, void *arg, int reps, membw_fn evict, void *earg)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        if (evict)
            evict(earg);
        double t0 = now_s();
        f(arg);
        double dt = now_s() - t0;
        if (dt < best)
            best = dt;
    }
    return best;
}

typedef struct membw_arg {
    const float *x, *dy;
    float *y, *dx, *gamma, *beta, *mean, *var, *invstd, *dgamma, *dbeta;
    double *ws, sum;
    size_t count;
    int n, c, hw, threads;
    int failed; /* a batch norm kernel refused the shape */
} membw_arg;

/* One read of x (count floats) on `threads` OpenMP threads, summed in
 * 16-float vectors. */
typedef float membw_v16 __attribute__((vector_size(64)));
static void read_pass(void *p)
{
    membw_arg *a = p;
    double total = 0;
#pragma omp parallel for num_threads(a->threads) reduction(+ : total) schedule(static)
    for (size_t b = 0; b < a->count / 4096; b++) {
        membw_v16 acc0 = {0}, acc1 = {0}, acc2 = {0}, acc3 = {0}, v;
        const float *q = a->x + b * 4096;
        for (int i = 0; i < 4096; i += 64) {
            memcpy(&v, q + i, sizeof v), acc0 += v;
            memcpy(&v, q + i + 16, sizeof v), acc1 += v;
            memcpy(&v, q + i + 32, sizeof v), acc2 += v;
            memcpy(&v, q + i + 48, sizeof v), acc3 += v;
        }
        acc0 += acc1 + acc2 + acc3;
        for (int j = 0; j < 16; j++)
            total += acc0[j];
    }
    a->sum = total;
}

/* y = 2x + 1: one read of x, one write of y by streaming stores where the
 * compiler target has them (as the batch norm's large outputs). */
static void scale_pass(void *p)
{
    membw_arg *a = p;
#pragma omp parallel for num_threads(a->threads) schedule(static)
    for (size_t b = 0; b < a->count / 4096; b++) {
        const float *q = a->x + b * 4096;
        float *o = a->y + b * 4096;
#if defined(__SSE__)
        for (int i = 0; i < 4096; i += 4) {
            __m128 v = _mm_loadu_ps(q + i);
            _mm_stream_ps(o + i, _mm_add_ps(_mm_mul_ps(v, _mm_set1_ps(2.f)), _mm_set1_ps(1.f)));
        }
#else
        for (int i = 0; i < 4096; i++)
            o[i] = 2.f * q[i] + 1.f;
#endif
    }
#if defined(__SSE__)
    _mm_sfence();
#endif
}

static void bn_fwd_pass(void *p)
{
    membw_arg *a = p;
    if (nas__cpu_bn_act_fwd(NAS_FN_HSWISH, a->x, a->gamma, a->beta, a->y, NULL, a->mean,
                            a->var, a->invstd, a->ws, a->n, a->c, (size_t)a->hw, 8, 1e-5f,
                            a->threads))
        a->failed = 1;
}

static void bn_bwd_pass(void *p)
{
    membw_arg *a = p;
    if (nas__cpu_bn_act_bwd(NAS_FN_HSWISH, a->x, a->dy, NULL, NULL, a->gamma, a->beta,
                            a->mean, a->invstd, a->dx, a->dgamma, a->dbeta, a->ws, a->n, a->c,
                            (size_t)a->hw, 8, a->threads))
        a->failed = 1;
}

/* bench_nas membw [--threads T] [--n N --c C --hw HW]: the memory
 * bandwidth the batch norm passes can have (issue 34: is the fused
 * BN + h-swish at the memory roofline?). Prints GB/s (1e9 bytes/s, best of
 * 5) of one read pass and of a read + streaming-write pass over 256 MiB
 * arrays (beyond any cache), and of nas__cpu_bn_act_fwd / _bwd (h-swish,
 * nChw8c, default [128,144,14,14] = chain-se's largest expansion) counted
 * as the passes they make: forward 2 reads of x + 1 write of y, backward
 * 2 reads of x and dy + 1 write of dx (trainer/cpu_bn_act.c); warm (the
 * same tensors again, in the cache as far as they fit) and cold (after a
 * pass over 512 MiB, as in a training step). */
static int cmd_membw(int argc, char **argv)
{
    membw_arg a = {.threads = (int)arg_int(argc, argv, "--threads", 2),
                   .n = (int)arg_int(argc, argv, "--n", 128),
                   .c = (int)arg_int(argc, argv, "--c", 144),
                   .hw = (int)arg_int(argc, argv, "--hw", 196)};
    if (a.threads < 1 || a.n < 1 || a.c < 8 || a.c % 8 || a.hw < 1) {
        fprintf(stderr, "bench_nas membw: bad --threads/--n/--c/--hw (C a multiple of 8)\n");
        return 2;
    }
    size_t big = (size_t)64 << 20; /* floats: 256 MiB */
    size_t t = (size_t)a.n * a.c * a.hw, cnt = big > t ? big : t;
    size_t cnt_b = (cnt * sizeof(float) + 63) / 64 * 64, tb64 = (t * sizeof(float) + 63) / 64 * 64;
    float *x = aligned_alloc(64, cnt_b), *y = aligned_alloc(64, cnt_b);
    float *dy = aligned_alloc(64, tb64), *dx = aligned_alloc(64, tb64);
    float *pc = malloc(7 * (size_t)a.c * sizeof *pc);
    double *ws = malloc(NAS__CPU_BN_ACT_WS_BYTES(a.n, a.c));
    if (!x || !y || !dy || !dx || !pc || !ws) {
        fprintf(stderr, "bench_nas membw: out of memory\n");
        free(x), free(y), free(dy), free(dx), free(pc), free(ws);
        return 1;
    }
    for (size_t i = 0; i < cnt; i++) {
        x[i] = (float)(i % 13) * 0.25f - 1.5f;
        y[i] = 0.f;
    }
    for (size_t i = 0; i < t; i++) {
        dy[i] = (float)(i % 11) * 0.1f - 0.5f;
        dx[i] = 0.f;
    }
    for (int i = 0; i < a.c; i++) {
        pc[i] = 1.f;
        pc[a.c + i] = 0.1f;
    }
    a.gamma = pc, a.beta = pc + a.c, a.mean = pc + 2 * a.c, a.var = pc + 3 * a.c;
    a.invstd = pc + 4 * a.c, a.dgamma = pc + 5 * a.c, a.dbeta = pc + 6 * a.c;
    a.ws = ws, a.x = x, a.y = y, a.dy = dy, a.dx = dx;
    a.count = cnt / 4096 * 4096;
    membw_arg big_a = a; /* the eviction pass: the whole 256 MiB arrays */
    double gb = (double)a.count * sizeof(float) / 1e9;
    double rd = gb / best_of(read_pass, &a, 5, NULL, NULL);
    double sc = 2 * gb / best_of(scale_pass, &a, 5, NULL, NULL);
    a.count = t;
    double tb = (double)t * sizeof(float) / 1e9;
    bn_fwd_pass(&a); /* warm: mean and invstd for the backward */
    /* warm: the tensors stay in the cache between repeats as far as they
     * fit; cold: a pass over 512 MiB before each repeat evicts them, as a
     * training step's other tensors do in a network */
    double bf = 3 * tb / best_of(bn_fwd_pass, &a, 5, NULL, NULL);
    double bb = 5 * tb / best_of(bn_bwd_pass, &a, 5, NULL, NULL);
    double cf = 3 * tb / best_of(bn_fwd_pass, &a, 5, scale_pass, &big_a);
    double cb = 5 * tb / best_of(bn_bwd_pass, &a, 5, scale_pass, &big_a);
    if (a.failed) {
        fprintf(stderr, "bench_nas membw: the batch norm kernel refused N=%d C=%d HW=%d\n", a.n,
                a.c, a.hw);
        free(x), free(y), free(dy), free(dx), free(pc), free(ws);
        return 1;
    }
    printf("read_gbs=%.1f read_write_gbs=%.1f bn_fwd_gbs=%.1f bn_bwd_gbs=%.1f "
           "bn_fwd_cold_gbs=%.1f bn_bwd_cold_gbs=%.1f (N=%d C=%d HW=%d, %d threads, "
           "checksum %.3g)\n",
           rd, sc, bf, bb, cf, cb, a.n, a.c, a.hw, a.threads, a.sum);
    free(x), free(y), free(dy), free(dx), free(pc), free(ws);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "membw") == 0)
        return cmd_membw(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "train") == 0)
        return cmd_train(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "sgemm") == 0)
        return cmd_sgemm(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "trial") == 0)
        return cmd_trial(argc, argv);
    fprintf(stderr, "usage: bench_nas train|sgemm|trial|membw [options] (see the source's header)\n");
    return 2;
}
