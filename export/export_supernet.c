/*
 * export/export_supernet.c - the weights of a one-shot search's subnet
 * (issue 32, docs/one-shot.md) for `nas export`. A trial of an experiment
 * with evaluator.kind = "supernet" (phase 2) was measured with the weights
 * it inherits from the supernet and never trained on its own, so it has
 * no kept weights. Its weights are rebuilt as its evaluation built them:
 * the experiment's stored config makes the evaluator the search made (the
 * data and its split, the seeded calibration sample, the backend), which
 * slices the subnet out of the checkpoint DB.supernet/supernet-CRC.npz,
 * recalibrates its BN statistics and measures it again on the trial's
 * validation images (nas_evaluator_supernet_subnet_save); the weights go
 * to a temporary .npz that build_net (export/export_trial.c) loads and
 * nas__export_supernet_cleanup removes.
 */
#include <errno.h>
#include <inttypes.h> /* PRId64 */
#include <stdio.h>
#include <stdlib.h> /* mkdtemp, getenv */
#include <string.h>
#include <unistd.h> /* rmdir */
#include "export/export_impl.h"
#include "nas/data.h"
#include "nas/evaluator.h"

/* A directory of our own for the weights: $TMPDIR (else /tmp)/nas-export-XXXXXX. */
static int temp_weights(nas_arch *a, nas_error *err)
{
    const char *t = getenv("TMPDIR");
    char dir[NAS_PATH_MAX - 32];
    if (snprintf(dir, sizeof dir, "%s/nas-export-XXXXXX", t && t[0] ? t : "/tmp") >=
        (int)sizeof dir)
        return nas_error_set(err, NAS_EINVAL, "TMPDIR %s is too long", t);
    if (!mkdtemp(dir))
        return nas_error_set(err, NAS_EIO, "cannot create a temporary directory %s for the "
                             "subnet's weights: %s", dir, strerror(errno));
    snprintf(a->weights, sizeof a->weights, "%s/subnet.npz", dir);
    return NAS_OK;
}

/* The subnet's weights into a->weights (a temporary file), r->supernet and
 * its measures; cfg is the experiment's (modified: --data, the cache). */
static int rebuild(const nas_export_opts *o, nas_config *cfg, const char *genotype, nas_arch *a,
                   nas_export_result *r, nas_error *err)
{
    if (o->data && o->data[0]) /* --data: where the experiment's data is now */
        snprintf(cfg->data.dir, sizeof cfg->data.dir, "%s", o->data);
    nas_data_cache_beside(&cfg->data, o->db); /* as `nas run` read it */
    nas_space *sp = NULL;
    nas_evaluator *ev = NULL;
    nas_genotype g;
    char dir[NAS_PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s.supernet", o->db);
    int rc = nas_space_create(&cfg->space, &sp, err);
    if (!rc)
        rc = nas_space_parse(sp, genotype, &g, err);
    if (!rc)
        rc = nas_evaluator_create(cfg, sp, &ev, err);
    if (!rc && nas_evaluator_set_state_dir(ev, dir) != NAS_OK)
        rc = nas_error_set(err, NAS_EINVAL, "supernet directory %s is too long", dir);
    if (!rc)
        nas_evaluator_state_path(ev, r->supernet, sizeof r->supernet);
    if (!rc)
        rc = temp_weights(a, err);
    if (!rc)
        rc = nas_evaluator_supernet_subnet_save(ev, &g, a->weights, &r->supernet_val_accuracy,
                                                err);
    r->supernet_recal_batches = nas_evaluator_supernet_recal_batches(ev); /* run, not asked */
    nas_evaluator_destroy(ev);
    nas_space_destroy(sp);
    return rc;
}

int nas__export_supernet_weights(const nas_export_opts *o, const nas_config *cfg,
                                 const char *genotype, nas_arch *a, nas_export_result *r,
                                 nas_error *err)
{
    a->weights[0] = '\0';
    r->supernet[0] = '\0';
    nas_config *own = malloc(sizeof *own); /* large; not on the stack */
    if (!own)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    *own = *cfg;
    int rc = rebuild(o, own, genotype, a, r, err);
    free(own);
    if (rc) {
        nas__export_supernet_cleanup(a, r);
        r->supernet[0] = '\0';
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err ? err->msg : nas_strerror(rc));
        nas_error_set(err, rc, "trial %" PRId64 " of '%s' is a supernet trial (phase 2 of a "
                      "one-shot search, never trained on its own), and the weights it inherits "
                      "from the supernet cannot be rebuilt: %s. Export a retrained finalist "
                      "instead (`nas run` of its config retrains the best in phase 3, as "
                      "experiment '%s-finalists'), or fresh weights with --weights init",
                      a->trial_id, a->experiment, why, a->experiment);
    }
    return rc;
}

void nas__export_supernet_cleanup(nas_arch *a, const nas_export_result *r)
{
    if (!r->supernet[0] || !a->weights[0])
        return;
    remove(a->weights);
    char *slash = strrchr(a->weights, '/');
    if (slash) {
        *slash = '\0';
        rmdir(a->weights);
    }
    a->weights[0] = '\0'; /* gone: the JSON names no weights file */
}
