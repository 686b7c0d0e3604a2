/*
 * cli/cmd_train.c - `nas train`: both forms, `nas train ARCH.json` and
 * `nas train --genotype STRING`, are one command with one full-training
 * recipe and one set of options (issue 22), implemented in
 * cli/cmd_train_arch.c. This file keeps the precision helpers both use.
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
    /* Both forms (ARCH.json and --genotype) share one implementation, one
     * recipe and one set of options (cli/cmd_train_arch.c). */
    return nas__cmd_train_arch(argc, argv);
}
