/*
 * export/export_trial.c - `nas export` as a library call (issue 13):
 * nas_export_trial turns a stored trial (export/export_source.c) or a
 * bare genotype into an architecture JSON, an ONNX model or a PyTorch
 * module + .npz weights (docs/export.md), optionally with nas's own logits
 * on the first images of the experiment's own test set, so tests (and
 * users) can check an export against nas without nas.
 */
#include <errno.h>    /* errno */
#include <inttypes.h> /* PRId64 */
#include <limits.h>   /* PATH_MAX: realpath */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h> /* stat: does the data directory exist */
#include "export/export_impl.h"
#include "nas/data.h"
#include "nas/evaluator.h"
#include "nas/suggest.h" /* nas_suggest_hint: "did you mean" */
#include "nas/trainer.h"
#include "trainer/weights_impl.h" /* nas__npz_*: the logits file */

void nas_export_opts_init(nas_export_opts *o)
{
    memset(o, 0, sizeof *o);
    o->db = "nas.db";
    o->trial = -1;
    o->channels = 16;
    o->cells = 1;
    o->logits_batch = 16;
    o->backend = "ref";
}

int nas_export_opts_check(const nas_export_opts *o, nas_error *err)
{
    int sources = (o->best != 0) + (o->trial > 0) + (o->genotype != NULL);
    if (sources != 1)
        return nas_error_set(err, NAS_EINVAL,
                             "give exactly one of --best, --trial ID or --genotype STRING");
    if (!o->format)
        return nas_error_set(err, NAS_EINVAL, "--format json|onnx|pytorch is required");
    char hint[96];
    if (strcmp(o->format, "json") && strcmp(o->format, "onnx") && strcmp(o->format, "pytorch"))
        return nas_error_set(err, NAS_EINVAL, "--format must be json, onnx or pytorch, not '%s'%s",
                             o->format, nas_suggest_hint(o->format, "json onnx pytorch", hint,
                                                         sizeof hint));
    if (!o->out)
        return nas_error_set(err, NAS_EINVAL, "-o FILE is required");
    if (o->final_weights && (o->genotype || o->init_weights))
        return nas_error_set(err, NAS_EINVAL, "--weights final exports a stored trial's final "
                             "training: give --best or --trial ID");
    if (o->by && !o->best)
        return nas_error_set(err, NAS_EINVAL, "--by ranks trials for --best only");
    if (o->logits && !strcmp(o->format, "pytorch")) {
        /* FILE.py's weights go to FILE.npz: the logits must not overwrite them. */
        size_t n = strlen(o->out);
        char npz[4096];
        snprintf(npz, sizeof npz, "%.*s.npz",
                 (int)(n > 3 && !strcmp(o->out + n - 3, ".py") ? n - 3 : n), o->out);
        if (!strcmp(npz, o->logits))
            return nas_error_set(err, NAS_EINVAL, "--logits %s would overwrite the module's "
                                 "weights: choose another name", o->logits);
    }
    if (o->logits && !strcmp(o->logits, o->out))
        return nas_error_set(err, NAS_EINVAL, "--logits %s is also the output file", o->logits);
    if (o->logits && (o->logits_batch < 1 || o->logits_batch > 10000))
        return nas_error_set(err, NAS_EINVAL, "--logits-batch needs 1..10000, not %d",
                             o->logits_batch);
    return NAS_OK;
}

/* The first o->logits_batch test images, their labels and the network's
 * eval-mode logits, as an .npz at o->logits. */
static int write_npz(const char *path, const nas_dataset *test, int b, int classes,
                     const float *logits, nas_error *err)
{
    size_t per = (size_t)test->c * test->h * test->w;
    int64_t ishape[4] = {b, test->c, test->h, test->w}, lshape[2] = {b, classes}, nshape[1] = {b};
    int64_t *labels = malloc((size_t)b * sizeof *labels);
    if (!labels)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    for (int i = 0; i < b; i++)
        labels[i] = test->labels[i];
    nas__npz_writer *z = NULL;
    int rc = nas__npz_create(path, &z, err);
    if (!rc)
        rc = nas__npz_add(z, "images", "<f4", 4, ishape, test->images,
                          (size_t)b * per * sizeof(float), err);
    if (!rc)
        rc = nas__npz_add(z, "labels", "<i8", 1, nshape, labels, (size_t)b * sizeof *labels, err);
    if (!rc)
        rc = nas__npz_add(z, "logits", "<f4", 2, lshape, logits,
                          (size_t)b * (size_t)classes * sizeof(float), err);
    if (!rc)
        rc = nas__npz_close(z, err);
    else
        nas__npz_abort(z);
    free(labels);
    return rc;
}

/* 1 when the experiment's data is read from a directory, data.dir (the
 * Fashion-MNIST shorthand's idx files, the CIFAR batches, a folder), 0
 * when its format names its files (idx, npy: --data does not apply). */
static int data_in_dir(const nas_arch *a)
{
    const char *f = a->data.format;
    return !f[0] || !strcmp(f, "cifar") || !strcmp(f, "folder");
}

/* Where the exported data lives. With --data DIR (o->data) it must be a
 * directory, and it replaces a->data.dir (made absolute, so the PyTorch
 * module's DATA_DIR and the JSON's proxy_data.dir work from any directory),
 * as it does for --logits. Without it, --logits on a data.dir that no
 * longer exists is refused naming it and --data; a PyTorch module is still
 * written, with a warning that its DATA_DIR is gone. Errors: NAS_EIO. */
static int data_dir_option(const nas_export_opts *o, nas_arch *a, nas_error *err)
{
    struct stat st;
    if (!data_in_dir(a)) {
        if (o->data)
            fprintf(stderr, "nas export: warning: --data %s is not used: the experiment's data "
                    "(format %s) names its files, not a directory\n", o->data, a->data.format);
        return NAS_OK;
    }
    if (o->data) {
        int e = stat(o->data, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
        if (e)
            return nas_error_set(err, NAS_EIO, "--data %s: %s, expected the directory the "
                                 "experiment's data moved to", o->data, strerror(e));
        char real[PATH_MAX];
        snprintf(a->data.dir, sizeof a->data.dir, "%s", realpath(o->data, real) ? real : o->data);
        return NAS_OK;
    }
    const char *dir = a->data.dir[0] ? a->data.dir : NAS_FMNIST_DIR;
    if (stat(dir, &st) == 0)
        return NAS_OK;
    if (o->logits)
        return nas_error_set(err, NAS_EIO, "--logits runs the network on the experiment's test "
                             "images, but its data directory %s (%s) %s: if the data moved, give "
                             "its new place with --data DIR", dir,
                             a->trial_id >= 0 ? "data.dir of the search" : "the default",
                             a->trial_id >= 0 ? "no longer exists" : "does not exist");
    if (!strcmp(o->format, "pytorch"))
        fprintf(stderr, "nas export: warning: the experiment's data directory %s (%s) %s, so the "
                "module's DATA_DIR names a missing directory: if the data moved, export again "
                "with --data DIR\n", dir,
                a->trial_id >= 0 ? "data.dir of the search" : "the default",
                a->trial_id >= 0 ? "no longer exists" : "does not exist");
    return NAS_OK;
}

/* The test images --logits runs on (issue 28): the experiment's own test
 * set, read and normalised as the search read it - Fashion-MNIST's idx
 * files from data.dir (or --data) for the data.dataset shorthand, else
 * data.format's reader (nas_data_load_test) with the experiment's
 * normalisation. Errors: the readers'; NAS_EINVAL when the data has no
 * test images. */
static int logits_data(const nas_export_opts *o, const nas_arch *a, nas_dataset **test,
                       nas_error *err)
{
    *test = NULL;
    if (!a->data.format[0])
        return nas_fmnist_load(o->data ? o->data : (a->data.dir[0] ? a->data.dir : NAS_FMNIST_DIR),
                               "test", test, err);
    nas_data_conf dc;
    nas__arch_data_conf(a, o->data, &dc);
    int rc = nas_data_load_test(&dc, &a->data.norm, test, err);
    if (rc)
        nas_error_prefix(err, "--logits");
    else if (!*test)
        rc = nas_error_set(err, NAS_EINVAL, "--logits runs the network on the experiment's test "
                           "images, but its data (format %s) has none (%s)", dc.format,
                           nas__no_test_data(dc.format));
    return rc;
}

/* The first o->logits_batch images of `test` through `net` (eval mode),
 * written with their labels and logits to o->logits (write_npz). */
static int write_logits(nas_net *net, nas_backend *be, const nas_export_opts *o,
                        const nas_arch *a, const nas_dataset *test, nas_error *err)
{
    int b = o->logits_batch < test->n ? o->logits_batch : test->n;
    size_t per = (size_t)test->c * test->h * test->w;
    nas_tensor *x = NULL;
    const nas_tensor *y = NULL;
    float *logits = NULL;
    int rc = nas_tensor_create(be, b, test->c, test->h, test->w, &x);
    if (!rc)
        rc = nas_tensor_upload(x, test->images, (size_t)b * per);
    if (!rc)
        rc = nas_net_forward(net, x, 0, &y);
    if (!rc && !(logits = malloc(y->count * sizeof *logits)))
        rc = NAS_ENOMEM;
    if (!rc)
        rc = nas_tensor_download(y, logits, y->count);
    if (rc)
        rc = nas_error_set(err, rc, "forward pass for --logits: %s %s", nas_strerror(rc),
                           nas_backend_last_error(be));
    else
        rc = write_npz(o->logits, test, b, a->net.classes, logits, err);
    free(logits);
    nas_tensor_destroy(x);
    return rc;
}

/* The network of r->arch on o->backend: trained weights loaded when asked
 * for and kept (a JSON only names them), the parameter count checked
 * against the trial's record. A chain network reads its layers from *sp,
 * which must outlive it. */
static int build_net(const nas_export_opts *o, nas_export_result *r, nas_space **sp,
                     nas_backend **be, nas_net **net, nas_error *err)
{
    nas_arch *a = &r->arch;
    int rc = nas_arch_space(a, sp, err);
    if (!rc)
        rc = nas_backend_create(o->backend, 1, 0, be, err);
    nas_net_desc d = a->net;
    d.space = !strcmp(a->space_type, "chain") ? *sp : NULL;
    if (!rc)
        rc = nas_net_create(*be, &d, o->logits ? o->logits_batch : 1, a->recipe.seed, net, err);
    r->trained = !o->init_weights && a->weights[0];
    if (!rc && r->trained) {
        rc = nas_weights_load(*net, a->weights, err);
        if (rc && r->final_training_id > 0)
            nas_error_prefix(err, "trial %" PRId64 "'s final training %" PRId64, a->trial_id,
                             r->final_training_id);
        else if (rc)
            nas_error_prefix(err, "trial %" PRId64 "'s %s", a->trial_id,
                             r->supernet[0] ? "weights inherited from the supernet"
                                            : "kept weights");
    }
    if (!rc && a->metrics.params >= 0 && nas_net_param_count(*net) != a->metrics.params)
        rc = nas_error_set(err, NAS_EINVAL,
                           "the network has %" PRId64 " parameters but the trial recorded %" PRId64,
                           nas_net_param_count(*net), a->metrics.params);
    if (!rc)
        r->params = nas_net_param_count(*net);
    return rc;
}

int nas_export_trial(const nas_export_opts *o, nas_export_result *r, nas_error *err)
{
    memset(r, 0, sizeof *r);
    r->final_training_id = -1;
    nas_arch *a = &r->arch;
    nas_arch_init(a);
    int rc = nas_export_opts_check(o, err);
    if (rc)
        return rc;
    rc = o->genotype ? nas__export_arch_from_genotype(o, a, err)
                     : nas__export_arch_from_store(o, a, r, err);
    if (!rc && !o->genotype)
        rc = nas__arch_parse(a, NULL, NULL, NULL, err);
    if (!rc)
        rc = data_dir_option(o, a, err);
    nas_space *sp = NULL;
    nas_backend *be = NULL;
    nas_net *net = NULL;
    if (!rc)
        rc = build_net(o, r, &sp, &be, &net, err);
    nas__export_supernet_cleanup(a, r); /* issue 32: the rebuilt weights are loaded */
    char doc[NAS_GENOTYPE_STR_MAX + 256], what[64];
    if (!strcmp(a->space_type, "chain"))
        snprintf(what, sizeof what, "chain network");
    else
        snprintf(what, sizeof what, "NAS-Bench-201 TinyNetwork");
    snprintf(doc, sizeof doc, "%s %s", what, a->genotype);
    if (strcmp(a->space_type, "chain") != 0)
        snprintf(doc + strlen(doc), sizeof doc - strlen(doc), " (C=%d, N=%d)", a->net.channels,
                 a->net.cells_per_stage);
    snprintf(doc + strlen(doc), sizeof doc - strlen(doc),
             "; trial %" PRId64 " of experiment '%s'; weights %s", a->trial_id,
             a->experiment[0] ? a->experiment : "-",
             r->final_training_id > 0 ? "of its final training"
             : r->supernet[0] && r->trained ? "inherited from the supernet, BN recalibrated"
             : r->trained                   ? "trained"
                                            : "init");
    nas_dataset *test = NULL; /* read first: bad test data writes nothing */
    if (!rc && o->logits)
        rc = logits_data(o, a, &test, err);
    int wrote = 0;
    if (!rc) {
        if (!strcmp(o->format, "json"))
            rc = nas_arch_write_json(a, o->out, err);
        else if (!strcmp(o->format, "onnx"))
            rc = nas_export_onnx(net, o->out, doc, err);
        else
            rc = nas_export_pytorch(net, a, o->out, r->npz, sizeof r->npz, err);
        wrote = rc == NAS_OK;
    }
    if (!rc && o->logits)
        rc = write_logits(net, be, o, a, test, err);
    if (!rc && test) /* the test set may hold fewer than --logits-batch images */
        r->logits_images = o->logits_batch < test->n ? o->logits_batch : test->n;
    if (rc && wrote) { /* issue 28: a failed export leaves no output behind */
        remove(o->out);
        if (r->npz[0])
            remove(r->npz);
        r->npz[0] = 0;
    }
    nas_dataset_destroy(test);
    nas_net_destroy(net);
    nas_backend_destroy(be);
    nas_space_destroy(sp);
    return rc;
}
