/*
 * tests/e2e/test_eval_oracle.c - nas's eval-mode forward pass against
 * PyTorch after training (issue 19).
 *
 * For a set of genotypes covering every shape of the cell's output node
 * (one conv edge from node 0, 1 or 2; a skip to a node that is itself one
 * conv edge's output, with and without another reader; a skip to the cell
 * input; a pool; a zero node; sums with folded convs adding into them) and
 * both fp32 backends that fold batch norms into convolutions at eval time
 * (`ref`, `cpu`), train the NAS-Bench-201 network briefly (128
 * Fashion-MNIST images, 4 SGD steps; synthetic images when the data set is
 * absent: the defect is structural), then write
 *   - the PyTorch export (nas_export_pytorch: MODULE.py + MODULE.npz) with
 *     the trained weights and running statistics,
 *   - nas's own eval logits on 16 further images (MODULE.logits, an .npz
 *     with images, labels, logits, as `nas export --logits` writes it),
 * and let tests/e2e/check_pytorch.py (Debian's /usr/bin/python3 with torch)
 * compare PyTorch's eval logits with nas's. At initialisation every batch
 * norm is an identity, so only trained weights catch a skipped one.
 * Issue 30: a few of them are also BN-recalibrated (nas_net_bn_recalibrate,
 * RECAL_BATCHES batches of the training images) before the export; for
 * those, tests/e2e/check_recal.py redoes the recalibration in PyTorch
 * (momentum=None) from the export taken before it and compares the running
 * statistics and the logits with nas's.
 * Exit 77 (skipped, with the reason) when /usr/bin/python3 lacks torch or
 * numpy.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>   /* clock */
#include <unistd.h> /* mkdtemp (stdlib), rmdir, unlink */
#include "nas/space.h"
#include "nas/trainer.h"
#include "nas/export.h"  /* nas_export_pytorch */
#include "trainer/weights_impl.h" /* nas__npz_*: the logits file */

#define PY "/usr/bin/python3"
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define N_TRAIN 128
#define N_EVAL 16
#define RECAL_BATCHES 3 /* of 32 training images (issue 30) */

/* Output-node shapes (edges: 1<-0 | 2<-0 2<-1 | 3<-0 3<-1 3<-2). The
 * first block was wrong before issue 19's fix (the cell output is one
 * edge's BN output that only `lastact` reads); the second is close to it
 * but was right. */
static const char *const GENOS[] = {
    /* node 3 = one conv edge (750 cells): from node 0, 1, 2; 1x1 and 3x3 */
    "|nor_conv_3x3~0|+|none~0|none~1|+|nor_conv_3x3~0|none~1|none~2|", /* issue 19's */
    "|avg_pool_3x3~0|+|skip_connect~0|nor_conv_1x1~1|+|nor_conv_1x1~0|none~1|none~2|",
    "|nor_conv_1x1~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|none~0|nor_conv_3x3~1|none~2|",
    "|skip_connect~0|+|none~0|nor_conv_3x3~1|+|none~0|nor_conv_1x1~1|none~2|",
    "|nor_conv_3x3~0|+|avg_pool_3x3~0|skip_connect~1|+|none~0|none~1|nor_conv_3x3~2|",
    "|skip_connect~0|+|nor_conv_1x1~0|none~1|+|none~0|none~1|nor_conv_1x1~2|",
    /* node 3 = skip to node 1, node 1 = one conv edge, no other reader (12) */
    "|nor_conv_3x3~0|+|avg_pool_3x3~0|none~1|+|none~0|skip_connect~1|none~2|",
    "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|none~0|skip_connect~1|none~2|",
    /* node 3 = skip to node 2, node 2 = one conv edge or a skip to such a node 1 (22) */
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|none~1|+|none~0|none~1|skip_connect~2|",
    "|avg_pool_3x3~0|+|none~0|nor_conv_1x1~1|+|none~0|none~1|skip_connect~2|",
    "|nor_conv_3x3~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|",
    /* --- unaffected neighbours --- */
    /* node 1 = one conv edge also read by node 2 (uses 2: never folded twice) */
    "|nor_conv_3x3~0|+|none~0|nor_conv_1x1~1|+|none~0|skip_connect~1|none~2|",
    "|nor_conv_1x1~0|+|skip_connect~0|skip_connect~1|+|none~0|skip_connect~1|none~2|",
    /* node 3 = the cell input (an alias back to the reduction block's sum) */
    "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|",
    /* node 3 = one pool; node 3 = zero */
    "|nor_conv_3x3~0|+|none~0|none~1|+|none~0|avg_pool_3x3~1|none~2|",
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|none~1|+|none~0|none~1|none~2|",
    /* node 3 = sums: conv + conv (one adds into the node), conv + skip, conv + pool */
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|",
    "|nor_conv_1x1~0|+|none~0|none~1|+|nor_conv_3x3~0|nor_conv_1x1~1|none~2|",
    "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|nor_conv_3x3~1|none~2|",
    "|none~0|+|nor_conv_1x1~0|nor_conv_3x3~1|+|avg_pool_3x3~0|none~1|nor_conv_3x3~2|",
    /* a conv edge reading a zero node (its BN sees zeros) */
    "|none~0|+|none~0|none~1|+|none~0|nor_conv_3x3~1|none~2|",
};
#define N_GENOS (int)(sizeof GENOS / sizeof GENOS[0])

typedef struct fixture {
    nas_dataset *full; /* Fashion-MNIST test split, or NULL: synthetic */
    float *images;     /* N_TRAIN + N_EVAL images [1,28,28], normalised */
    uint8_t *labels;
    const char *source;
    char dir[64];
} fixture;

static void load_images(fixture *f)
{
    nas_error err = {0};
    f->images = NULL;
    if (nas_fmnist_load(FMNIST_DIR, "test", &f->full, &err) == NAS_OK &&
        f->full->n >= N_TRAIN + N_EVAL) {
        f->images = f->full->images;
        f->labels = f->full->labels;
        f->source = "Fashion-MNIST (" FMNIST_DIR ", test split)";
        return;
    }
    nas_dataset_destroy(f->full);
    f->full = NULL;
    size_t px = (size_t)(N_TRAIN + N_EVAL) * 28 * 28;
    f->images = malloc(px * sizeof *f->images);
    f->labels = malloc((size_t)(N_TRAIN + N_EVAL));
    assert_non_null(f->images);
    assert_non_null(f->labels);
    nas_rng r;
    nas_rng_seed(&r, 19, 1);
    for (size_t i = 0; i < px; i++)
        f->images[i] = nas_rng_normal(&r);
    for (int i = 0; i < N_TRAIN + N_EVAL; i++)
        f->labels[i] = (uint8_t)nas_rng_bounded(&r, 10);
    f->source = "synthetic images (Fashion-MNIST not found in " FMNIST_DIR ")";
}

/* Issue 30: export the trained net to DIR/BASE_pre.py, recalibrate its
 * BN statistics on the first RECAL_BATCHES x 32 training images (written
 * to DIR/BASE.recal with the batch size), and append "PRE.py POST.npz
 * RECAL LOGITS" (check_recal.py's arguments; BASE's files come after). */
static void recalibrate_case(const fixture *f, nas_net *net, const char *base, char *rargs,
                             size_t cap)
{
    nas_error err = {0};
    char pre[256], recal_path[256];
    snprintf(pre, sizeof pre, "%s/%s_pre.py", f->dir, base);
    snprintf(recal_path, sizeof recal_path, "%s/%s.recal", f->dir, base);
    if (nas_export_pytorch(net, NULL, pre, NULL, 0, &err) != NAS_OK)
        fail_msg("%s: export before recalibration: %s", base, err.msg);
    const int n = RECAL_BATCHES * 32;
    nas_dataset recal = {n, 1, 28, 28, 10, f->images, f->labels, 0, {0}};
    if (nas_net_bn_recalibrate(net, &recal, RECAL_BATCHES, 32, &err) != NAS_OK)
        fail_msg("%s: recalibration: %s", base, err.msg);
    nas__npz_writer *z = NULL;
    int64_t ishape[4] = {n, 1, 28, 28}, one = 1, batch = 32;
    assert_int_equal(nas__npz_create(recal_path, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_add(z, "images", "<f4", 4, ishape, f->images,
                                  (size_t)n * 28 * 28 * sizeof(float), &err),
                     NAS_OK);
    assert_int_equal(nas__npz_add(z, "batch", "<i8", 1, &one, &batch, sizeof batch, &err), NAS_OK);
    assert_int_equal(nas__npz_close(z, &err), NAS_OK);
    size_t len = strlen(rargs);
    snprintf(rargs + len, cap - len, " '%s' '%s/%s.npz' '%s' '%s/%s.logits'", pre, f->dir, base,
             recal_path, f->dir, base);
}

/* Train genotype g briefly on backend `be`, export it to DIR/BASE.py (+
 * .npz) and write nas's eval logits to DIR/BASE.logits. Appends the
 * "MODULE LOGITS PARAMS" triple to args. rargs non-NULL: recalibrate
 * first (recalibrate_case). */
static void one_case(const fixture *f, nas_backend *be, const char *genotype, const char *base,
                     char *args, char *rargs, size_t cap)
{
    nas_space *space = NULL;
    nas_error err = {0};
    nas_space_desc sd = {.type = NAS_SPACE_CELL, .op_mask = (1u << NAS_OP_COUNT) - 1, .channels = 4, .stages = 3, .cells_per_stage = 1};
    assert_int_equal(nas_space_create(&sd, &space, &err), NAS_OK);
    nas_net_desc d;
    memset(&d, 0, sizeof d);
    if (nas_space_parse(space, genotype, &d.genotype, &err) != NAS_OK)
        fail_msg("%s: %s", genotype, err.msg);
    nas_space_destroy(space);
    d.channels = 4;
    d.stages = 3;
    d.cells_per_stage = 1;
    d.in_c = 1;
    d.in_h = 28;
    d.in_w = 28;
    d.classes = 10;
    nas_net *net = NULL;
    if (nas_net_create(be, &d, 64, 7, &net, &err) != NAS_OK)
        fail_msg("%s: %s", genotype, err.msg);
    nas_dataset train = {N_TRAIN, 1, 28, 28, 10, f->images, f->labels, 0, {0}};
    nas_recipe recipe = {1, 32, 0.1, 0.9, 1, 5e-4, NAS_SCHEDULE_CONSTANT, 7, {0, 0, 0}, 0};
    nas_train_stats st;
    if (nas_train(net, &train, &recipe, NULL, NULL, &st, &err) != NAS_OK)
        fail_msg("%s on %s: training: %s", genotype, nas_backend_name(be), err.msg);
    if (rargs)
        recalibrate_case(f, net, base, rargs, cap);

    char py[256], logits_path[256];
    snprintf(py, sizeof py, "%s/%s.py", f->dir, base);
    snprintf(logits_path, sizeof logits_path, "%s/%s.logits", f->dir, base);
    if (nas_export_pytorch(net, NULL, py, NULL, 0, &err) != NAS_OK)
        fail_msg("%s: export: %s", genotype, err.msg);

    /* nas's eval forward (running statistics, folded BN) on N_EVAL images */
    const float *img = f->images + (size_t)N_TRAIN * 28 * 28;
    nas_tensor *x = NULL;
    assert_int_equal(nas_tensor_create(be, N_EVAL, 1, 28, 28, &x), NAS_OK);
    assert_int_equal(nas_tensor_upload(x, img, x->count), NAS_OK);
    const nas_tensor *lg = NULL;
    assert_int_equal(nas_net_forward(net, x, 0, &lg), NAS_OK);
    float logits[N_EVAL * 10];
    assert_int_equal(lg->count, N_EVAL * 10);
    assert_int_equal(nas_tensor_download(lg, logits, lg->count), NAS_OK);
    int64_t labels[N_EVAL];
    for (int i = 0; i < N_EVAL; i++)
        labels[i] = f->labels[N_TRAIN + i];
    nas__npz_writer *z = NULL;
    int64_t ishape[4] = {N_EVAL, 1, 28, 28}, lshape[2] = {N_EVAL, 10}, bshape[1] = {N_EVAL};
    assert_int_equal(nas__npz_create(logits_path, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_add(z, "images", "<f4", 4, ishape, img,
                                  (size_t)N_EVAL * 28 * 28 * sizeof(float), &err),
                     NAS_OK);
    assert_int_equal(nas__npz_add(z, "labels", "<i8", 1, bshape, labels, sizeof labels, &err),
                     NAS_OK);
    assert_int_equal(nas__npz_add(z, "logits", "<f4", 2, lshape, logits, sizeof logits, &err),
                     NAS_OK);
    assert_int_equal(nas__npz_close(z, &err), NAS_OK);
    size_t len = strlen(args);
    snprintf(args + len, cap - len, " '%s' '%s' %lld", py, logits_path,
             (long long)nas_net_param_count(net));
    nas_tensor_destroy(x);
    nas_net_destroy(net);
}

static void test_eval_matches_pytorch(void **state)
{
    fixture *f = *state;
    printf("data: %s\n", f->source);
    size_t cap = 64 * 1024;
    char *args = calloc(1, cap), *rargs = calloc(1, cap);
    assert_non_null(args);
    assert_non_null(rargs);
    const int recal_genos[] = {0, 16, 19}; /* issue 30: one conv edge; sums; a zero node */
    const char *backends[] = {"ref", "cpu"};
    int cases = 0;
    for (int b = 0; b < 2; b++) {
        nas_backend *be = NULL;
        nas_error err = {0};
        if (nas_backend_create(backends[b], 1, 0, &be, &err) != NAS_OK) {
            printf("SKIPPED backend %s: %s\n", backends[b], err.msg);
            continue;
        }
        for (int g = 0; g < N_GENOS; g++) {
            char base[32];
            snprintf(base, sizeof base, "%s_g%02d", backends[b], g);
            printf("%s: %s\n", base, GENOS[g]);
            one_case(f, be, GENOS[g], base, args, NULL, cap);
            cases++;
        }
        for (int k = 0; k < (int)(sizeof recal_genos / sizeof recal_genos[0]); k++) {
            char base[32];
            snprintf(base, sizeof base, "%s_recal%02d", backends[b], recal_genos[k]);
            printf("%s: %s, BN recalibrated\n", base, GENOS[recal_genos[k]]);
            one_case(f, be, GENOS[recal_genos[k]], base, args, rargs, cap);
        }
        nas_backend_destroy(be);
    }
    assert_true(cases >= N_GENOS); /* ref is always built */
    /* eval logits are O(1..10); a skipped BN moves them by ~1e-2 or more */
    char *cmd = malloc(cap + 256);
    assert_non_null(cmd);
    snprintf(cmd, cap + 256, "NAS_TOL=2e-4 %s '%s/tests/e2e/check_pytorch.py'%s", PY,
             NAS_SOURCE_DIR, args);
    printf("%d trained networks: %.1f s CPU\n", cases, (double)clock() / CLOCKS_PER_SEC);
    fflush(stdout);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("nas's eval logits differ from PyTorch's for some genotype (check_pytorch.py "
                 "exit status %d; the lines above name each module and its difference)",
                 rc);
    snprintf(cmd, cap + 256, "NAS_TOL=2e-4 %s '%s/tests/e2e/check_recal.py'%s", PY, NAS_SOURCE_DIR,
             rargs);
    fflush(stdout);
    rc = system(cmd);
    free(cmd);
    free(args);
    free(rargs);
    if (rc != 0)
        fail_msg("nas's BN recalibration differs from PyTorch's momentum=None (check_recal.py "
                 "exit status %d; the lines above name each module and its difference)", rc);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/nas-eval-oracle-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    load_images(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    if (f->full) {
        nas_dataset_destroy(f->full);
    } else {
        free(f->images);
        free(f->labels);
    }
    free(f);
    return 0;
}

int main(void)
{
    if (system(PY " -c 'import numpy, torch' >/dev/null 2>&1") != 0) {
        printf("SKIP: " PY " cannot import numpy and torch (apt-get install python3-torch)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_matches_pytorch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
