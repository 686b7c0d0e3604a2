/*
 * tests/e2e/test_chain_export.c - chain networks exported to PyTorch
 * against nas's own eval forward (issue 15), as test_eval_oracle.c does
 * for cells.
 *
 * For genotypes of examples/spaces/fashion-chain.conf covering every layer
 * kind (MBConv with and without expansion, SE with its hard-sigmoid gate,
 * relu and hswish, residual adds, projection skips, dropped layers, head
 * conv, dropout) on the ref and cpu backends: train briefly (8 SGD steps
 * on synthetic images, so batch-norm statistics and weights move), write
 * the PyTorch export (nas_export_pytorch: MODULE.py + MODULE.npz) and nas's
 * eval logits on 8 further images, and let tests/e2e/check_pytorch.py
 * (/usr/bin/python3 with torch) check that ChainNetwork loads the .npz
 * strictly, has nas's parameter count, and gives the same logits.
 * Exit 77 (skipped, with the reason) when torch or numpy is missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nas/export.h"
#include "nas/layers.h"
#include "nas/space.h"
#include "nas/trainer.h"
#include "trainer/weights_impl.h"

#define PY "/usr/bin/python3"
#define N_TRAIN 64
#define N_EVAL 8

static const char *const GENOS[] = {
    "mb1_k3|c24:d2:mb3_k5:mb6_k3|c40:d3:se_on:mb6_k5:skip:mb3_k3|mb6_k5:zero",
    "mb1_k3|c16:d1:skip:mb3_k3|c32:d2:se_off:mb3_k3:mb6_k3:mb3_k3|mb3_k3:mb6_k3",
};

static void one_case(const char *dir, nas_space *s, nas_backend *be, const char *genotype,
                     const char *base, char *args, size_t cap)
{
    nas_error err = {0};
    nas_net_desc d;
    memset(&d, 0, sizeof d);
    if (nas_space_parse(s, genotype, &d.genotype, &err) != NAS_OK)
        fail_msg("%s: %s", genotype, err.msg);
    d.space = s;
    nas_space_input(s, &d.in_c, &d.in_h, &d.in_w, &d.classes);
    nas_net *net = NULL;
    if (nas_net_create(be, &d, 16, 5, &net, &err) != NAS_OK)
        fail_msg("%s: %s", genotype, err.msg);
    size_t px = (size_t)(N_TRAIN + N_EVAL) * 28 * 28;
    float *img = malloc(px * sizeof *img);
    uint8_t lab[N_TRAIN + N_EVAL];
    nas_rng r;
    nas_rng_seed(&r, 15, 1);
    for (size_t i = 0; i < px; i++)
        img[i] = nas_rng_normal(&r);
    for (int i = 0; i < N_TRAIN + N_EVAL; i++)
        lab[i] = (uint8_t)nas_rng_bounded(&r, 10);
    nas_dataset train = {N_TRAIN, 1, 28, 28, 10, img, lab, 0};
    nas_recipe recipe = {1, 8, 0.1, 0.9, 1, 5e-4, NAS_SCHEDULE_CONSTANT, 7};
    nas_train_stats st;
    if (nas_train(net, &train, &recipe, NULL, NULL, &st, &err) != NAS_OK)
        fail_msg("%s on %s: training: %s", genotype, nas_backend_name(be), err.msg);
    char py[512], logits_path[512];
    snprintf(py, sizeof py, "%s/%s.py", dir, base);
    snprintf(logits_path, sizeof logits_path, "%s/%s.logits", dir, base);
    if (nas_export_pytorch(net, NULL, py, NULL, 0, &err) != NAS_OK)
        fail_msg("%s: export: %s", genotype, err.msg);
    const float *ev = img + (size_t)N_TRAIN * 28 * 28;
    nas_tensor *x = NULL;
    assert_int_equal(nas_tensor_create(be, N_EVAL, 1, 28, 28, &x), NAS_OK);
    assert_int_equal(nas_tensor_upload(x, ev, x->count), NAS_OK);
    const nas_tensor *lg = NULL;
    assert_int_equal(nas_net_forward(net, x, 0, &lg), NAS_OK);
    float logits[N_EVAL * 10];
    assert_int_equal(nas_tensor_download(lg, logits, lg->count), NAS_OK);
    int64_t labels[N_EVAL];
    for (int i = 0; i < N_EVAL; i++)
        labels[i] = lab[N_TRAIN + i];
    nas__npz_writer *z = NULL;
    int64_t ishape[4] = {N_EVAL, 1, 28, 28}, lshape[2] = {N_EVAL, 10}, bshape[1] = {N_EVAL};
    assert_int_equal(nas__npz_create(logits_path, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_add(z, "images", "<f4", 4, ishape, ev,
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
    free(img);
    nas_tensor_destroy(x);
    nas_net_destroy(net);
}

static void test_chain_export_matches_pytorch(void **state)
{
    (void)state;
    char dir[] = "/tmp/nas_chain_export_XXXXXX";
    assert_non_null(mkdtemp(dir));
    nas_config *cfg = malloc(sizeof *cfg);
    nas_error err = {0};
    assert_int_equal(nas_config_load(NAS_SOURCE_DIR "/examples/spaces/fashion-chain.conf", cfg,
                                     &err),
                     NAS_OK);
    nas_space *s = NULL;
    assert_int_equal(nas_space_create(&cfg->space, &s, &err), NAS_OK);
    char args[8192] = "";
    const char *backends[] = {"ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        nas_backend *be = NULL;
        assert_int_equal(nas_backend_create(backends[b], 1, 0, &be, &err), NAS_OK);
        for (size_t g = 0; g < sizeof GENOS / sizeof GENOS[0]; g++) {
            char base[32];
            snprintf(base, sizeof base, "chain_%s_%zu", backends[b], g);
            one_case(dir, s, be, GENOS[g], base, args, sizeof args);
        }
        nas_backend_destroy(be);
    }
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "NAS_TOL=2e-4 %s %s/tests/e2e/check_pytorch.py%s", PY,
             NAS_SOURCE_DIR, args);
    int rc = system(cmd);
    int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    if (system(rm) != 0)
        printf("could not remove %s\n", dir);
    nas_space_destroy(s);
    free(cfg);
    if (code == 77) {
        printf("SKIPPED: %s lacks torch or numpy\n", PY);
        skip();
    }
    assert_int_equal(code, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_chain_export_matches_pytorch)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
