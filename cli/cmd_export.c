/*
 * cli/cmd_export.c - `nas export`: options into a nas_export_opts, one
 * nas_export_trial call (export/export_trial.c, docs/export.md), and a
 * summary of what was written.
 */
#include <inttypes.h> /* PRId64 */
#include <limits.h>   /* LONG_MAX */
#include <math.h>     /* isfinite, fabs */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "nas/export.h"
#include "nas/suggest.h" /* nas_suggest_hint: "did you mean" */

/* One option with its value v; -1 when handled, else the exit code. */
static int option(nas_export_opts *o, const char *a, const char *v)
{
    const nas_cli_int ints[] = {{"--logits-batch", 1, 10000, &o->logits_batch, "1..10000"},
                                {"--channels", 1, 4096, &o->channels, "1..4096"},
                                {"--cells", 0, 64, &o->cells, "0..64"}};
    long n;
    int rc = nas_cli_ints("export", ints, sizeof ints / sizeof ints[0], a, v); /* v: not NULL */
    if (rc)
        return rc;
    if (!strcmp(a, "--db")) {
        o->db = v;
    } else if (!strcmp(a, "--experiment")) {
        o->experiment = v;
    } else if (!strcmp(a, "--trial")) {
        if (nas_parse_long(v, 1, LONG_MAX, &n))
            return nas_cli_usage_error("export", "--trial needs a positive trial id, not '%s'", v);
        o->trial = n;
    } else if (!strcmp(a, "--genotype")) {
        o->genotype = v;
    } else if (!strcmp(a, "--by")) {
        o->by = v;
    } else if (!strcmp(a, "--format")) { /* checked by nas_export_opts_check */
        o->format = v;
    } else if (!strcmp(a, "--weights")) {
        char hint[96];
        if (strcmp(v, "trained") && strcmp(v, "init") && strcmp(v, "final"))
            return nas_cli_usage_error("export", "--weights must be trained, init or final, not "
                                       "'%s'%s", v,
                                       nas_suggest_hint(v, "trained init final", hint, sizeof hint));
        o->init_weights = !strcmp(v, "init");
        o->final_weights = !strcmp(v, "final"); /* issue 33: nas train --db's weights */
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
        o->out = v;
    } else if (!strcmp(a, "--logits")) {
        o->logits = v;
    } else if (!strcmp(a, "--backend")) {
        o->backend = v;
    } else if (!strcmp(a, "--data")) {
        o->data = v;
    } else if (!strcmp(a, "--seed")) {
        if (nas_parse_u64(v, &o->seed))
            return nas_cli_usage_error("export",
                                       "--seed needs a non-negative integer, not '%s'", v);
    } else {
        return a[0] == '-' ? nas_cli_unknown_option("export", a)
                           : nas_cli_usage_error("export", "unexpected argument '%s'", a);
    }
    return -1;
}

static const char *const VALUE_OPTS[] = {"--db", "--experiment", "--trial", "--genotype", "--by",
    "--format", "--weights", "-o", "--output", "--logits", "--logits-batch", "--backend",
    "--data", "--channels", "--cells", "--seed", NULL};

int nas_cmd_export(int argc, char **argv)
{
    nas_export_opts o;
    nas_export_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        int rc = -1;
        if (!strcmp(argv[i], "--best"))
            o.best = 1;
        else if (!nas_cli_is_one_of(argv[i], VALUE_OPTS))
            rc = option(&o, argv[i], NULL); /* unknown: a usage error */
        else if (i + 1 >= argc)
            return nas_cli_usage_error("export", "%s needs a value", argv[i]);
        else {
            rc = option(&o, argv[i], argv[i + 1]);
            i++;
        }
        if (rc >= 0)
            return rc;
    }
    nas_error err;
    nas_error_clear(&err);
    if (nas_export_opts_check(&o, &err))
        return nas_cli_usage_error("export", "%s", err.msg);
    nas_cli_note_recipe_words("export", o.genotype, "");
    nas_export_result r;
    int rc = nas_export_trial(&o, &r, &err);
    const nas_arch *a = &r.arch;
    if (r.picked)
        fprintf(stderr, "nas export: best trial of '%s' by %s (%s): %" PRId64 "\n", a->experiment,
                r.by_metric, r.by_maximize ? "max" : "min", a->trial_id);
    if (rc) {
        fprintf(stderr, "nas export: %s\n", err.msg[0] ? err.msg : nas_strerror(rc));
        if (o.genotype && (rc == NAS_EINVAL || rc == NAS_EFORMAT)) /* a bad --genotype */
            return NAS_EXIT_USAGE;
        return rc == NAS_EINVAL ? NAS_EXIT_FAIL : nas_cli_exit_code(rc);
    }
    printf("exported %s", a->genotype);
    if (a->trial_id >= 0)
        printf(" (trial %" PRId64 " of '%s'", a->trial_id, a->experiment);
    if (a->trial_id >= 0 && isfinite(a->metrics.val_accuracy))
        printf(", val_accuracy %.4f", a->metrics.val_accuracy);
    printf("%s as %s to %s", a->trial_id >= 0 ? ")" : "", o.format, o.out);
    if (r.npz[0])
        printf(" + %s", r.npz);
    if (r.supernet[0]) /* issue 32: a subnet of a one-shot search, not retrained */
        printf("\nparameters: %" PRId64 "  weights: inherited from the supernet %s, BN "
               "recalibrated on %d batches as the trial's evaluation (val_accuracy %.4f, the "
               "trial's %.4f)%s\nnote: trial %" PRId64 " is a subnet of the one-shot search, not "
               "retrained: phase 3 of `nas run` retrains the best supernet.retrain_top as "
               "experiment '%s-finalists'\n", r.params, r.supernet, r.supernet_recal_batches,
               r.supernet_val_accuracy, a->metrics.val_accuracy,
               !strcmp(o.format, "json") ? " for --logits (the JSON names no weights)" : "",
               a->trial_id, a->experiment);
    else if (!strcmp(o.format, "json")) /* the JSON describes the architecture only */
        printf("\nparameters: %" PRId64 "  weights: none in the JSON%s%s%s\n", r.params,
               !a->weights[0]            ? ""
               : r.final_training_id > 0 ? " (source.weights names the final training's weights: "
                                         : " (source.weights names the kept proxy weights: ",
               a->weights, a->weights[0] ? ")" : "");
    else if (r.final_training_id > 0)
        printf("\nparameters: %" PRId64 "  weights: final training %" PRId64 " (test accuracy "
               "%.4f) from %s\n", r.params, r.final_training_id, r.final_test_accuracy,
               a->weights);
    else
        printf("\nparameters: %" PRId64 "  weights: %s%s%s\n", r.params,
               r.trained ? "trained" : "init", r.trained ? " from " : "",
               r.trained ? a->weights : "");
    if (o.logits)
        printf("logits of %d test images: %s\n", r.logits_images, o.logits);
    if (r.supernet[0] && !(fabs(r.supernet_val_accuracy - a->metrics.val_accuracy) <= 1e-9))
        fprintf(stderr, "nas export: warning: the inherited weights measure val_accuracy %.6f on "
                "trial %" PRId64 "'s validation images, but the trial recorded %.6f (the data, "
                "the backend or its threads differ from the search's?)\n",
                r.supernet_val_accuracy, a->trial_id, a->metrics.val_accuracy);
    return NAS_EXIT_OK;
}
