/*
 * tests/e2e/test_supernet_export.c - a supernet's subnet exported to
 * PyTorch (issue 32's oracle, second half).
 *
 * After a few supernet training steps (tests/unit/supernet_fixture.h),
 * the subnet of a cell genotype and of a narrower chain genotype, with
 * inherited weights and its BN statistics recalibrated on two batches
 * (as nas_supernet_evaluate does), is exported with nas_export_pytorch
 * (MODULE.py + MODULE.npz) and nas's eval logits on N_EVAL images are
 * written beside it; tests/e2e/check_pytorch.py loads the module with
 * strict load_state_dict and compares PyTorch's eval logits with nas's
 * (NAS_TOL below), on the cpu and ref backends. Exit 77 (skipped, with
 * the reason) when /usr/bin/python3 lacks torch or numpy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nas/export.h" /* nas_export_pytorch */
#include "tests/unit/supernet_fixture.h"
#include "trainer/weights_impl.h" /* nas__npz_*: the logits file */
#define SCRATCH_NAME "supernet_export"
#include "tests/unit/scratch_dir.h"

#define PY "/usr/bin/python3"
#define TOL "1e-5"

/* Export the subnet of one case and append "MODULE LOGITS PARAMS" to args. */
static void one_case(const char *conf, const char *cell, const char *backend, char *args,
                     size_t cap)
{
    fixture f;
    fixture_open(&f, conf, backend);
    nas_supernet *sn = trained(&f, STEPS);
    nas_genotype g = genotype_of(&f, cell);
    nas_net *sub = NULL;
    nas_error err;
    if (nas_supernet_subnet(sn, &g, BATCH * 2, &sub, &err))
        fail_msg("subnet: %s", err.msg);
    if (nas_net_bn_recalibrate(sub, f.data, 2, BATCH, &err))
        fail_msg("recalibrate: %s", err.msg);
    char py[512], lg[512];
    snprintf(py, sizeof py, "%s/%s_%s.py", g_dir, cell ? "cell" : "chain", backend);
    snprintf(lg, sizeof lg, "%s/%s_%s.logits", g_dir, cell ? "cell" : "chain", backend);
    if (nas_export_pytorch(sub, NULL, py, NULL, 0, &err))
        fail_msg("export: %s", err.msg);
    int k = f.classes;
    float *logits = malloc((size_t)N_EVAL * k * sizeof *logits);
    eval_logits(f.be, sub, f.data, logits, k);
    int64_t labels[N_EVAL];
    for (int i = 0; i < N_EVAL; i++)
        labels[i] = f.data->labels[i];
    nas__npz_writer *z = NULL;
    int64_t ishape[4] = {N_EVAL, f.c, f.h, f.w}, lshape[2] = {N_EVAL, k}, bshape[1] = {N_EVAL};
    assert_int_equal(nas__npz_create(lg, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_add(z, "images", "<f4", 4, ishape, f.data->images,
                                  (size_t)N_EVAL * f.c * f.h * f.w * sizeof(float), &err),
                     NAS_OK);
    assert_int_equal(nas__npz_add(z, "labels", "<i8", 1, bshape, labels, sizeof labels, &err),
                     NAS_OK);
    assert_int_equal(nas__npz_add(z, "logits", "<f4", 2, lshape, logits,
                                  (size_t)N_EVAL * k * sizeof(float), &err),
                     NAS_OK);
    assert_int_equal(nas__npz_close(z, &err), NAS_OK);
    size_t len = strlen(args);
    snprintf(args + len, cap - len, " '%s' '%s' %lld", py, lg,
             (long long)nas_net_param_count(sub));
    free(logits);
    nas_net_destroy(sub);
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

static void test_subnet_export_matches_pytorch(void **state)
{
    (void)state;
    if (system(PY " -c 'import torch, numpy' 2>/dev/null") != 0) {
        printf("SKIPPED: " PY " lacks torch or numpy\n");
        exit(77);
    }
    char args[8192] = "";
    const char *backends[] = {"ref", "cpu"};
    for (int b = 0; b < 2; b++) {
        one_case(CELL_CONF, CELL_G, backends[b], args, sizeof args);
        one_case(CHAIN_CONF, NULL, backends[b], args, sizeof args);
    }
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "NAS_TOL=" TOL " %s '%s/tests/e2e/check_pytorch.py'%s", PY,
             NAS_SOURCE_DIR, args);
    fflush(stdout);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("a subnet's eval logits differ from PyTorch's (check_pytorch.py exit %d; the "
                 "lines above name the module)", rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_subnet_export_matches_pytorch)};
    return cmocka_run_group_tests(tests, scratch_dir_setup, scratch_dir_teardown);
}
