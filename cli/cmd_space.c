/*
 * cli/cmd_space.c - `nas space CONF [--genotype G] [--samples N] [--seed S]
 * [--enumerate N] [--format text|json] [--list] [--zero-cost METRICS]`: inspect a search space without
 * running a search. The work is nas_space_report (evaluator/inspect.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "nas/data.h" /* issue 28: nas_data_space_input */
#include "nas/inspect.h"
#include "nas/suggest.h" /* nas_suggest_hint: "did you mean" */

static const char *const formats[] = {"text", "json", NULL};

int nas_cmd_space(int argc, char **argv)
{
    const char *conf = NULL;
    nas_space_report_opts o = {.samples = 5, .seed = 42, .enumerate_max = 1u << 20};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (strcmp(a, "--list") == 0) {
            o.list = 1;
            continue;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (conf)
                return nas_cli_usage_error("space", "unexpected argument '%s' (one CONF)", a);
            conf = a;
            continue;
        }
        if (nas_cli_is_one_of(a, (const char *const[]){"--genotype", "--samples", "--seed",
                                                          "--enumerate", "--format", "--zero-cost",
                                                          NULL}) &&
            !v)
            return nas_cli_usage_error("space", "%s needs a value", a);
        i++;
        if (strcmp(a, "--genotype") == 0)
            o.genotype = v;
        else if (strcmp(a, "--zero-cost") == 0)
            o.zero_cost = v; /* names checked by nas_space_report */
        else if (strcmp(a, "--samples") == 0 && !nas_parse_long(v, 0, 100000, &n))
            o.samples = (int)n;
        else if (strcmp(a, "--seed") == 0 && !nas_parse_long(v, 0, 0x7fffffffL, &n))
            o.seed = (uint64_t)n;
        else if (strcmp(a, "--enumerate") == 0 && !nas_parse_long(v, 0, 100000000L, &n))
            o.enumerate_max = (uint64_t)n;
        else if (strcmp(a, "--format") == 0 && nas_cli_is_one_of(v, formats))
            o.json = strcmp(v, "json") == 0;
        else if (strcmp(a, "--format") == 0) {
            char hint[96];
            return nas_cli_usage_error("space", "bad value '%s' for --format, expected text or "
                                       "json%s", v, nas_suggest_hint(v, "text json", hint, sizeof hint));
        } else if (nas_cli_is_one_of(a, (const char *const[]){"--samples", "--seed", "--enumerate",
                                                                 NULL}))
            return nas_cli_usage_error("space", "bad value '%s' for %s", v, a);
        else
            return nas_cli_unknown_option("space", a);
    }
    if (!conf)
        return nas_cli_usage_error("space", "missing CONF (the space.conf to inspect)");
    if (o.zero_cost && (o.genotype || o.json))
        return nas_cli_usage_error("space", "--zero-cost writes CSV rows for --list or --samples N, "
                                            "not with %s", o.genotype ? "--genotype" : "--format json");
    nas_config *cfg = malloc(sizeof *cfg); /* large; not on the stack */
    nas_error err;
    nas_error_clear(&err);
    int rc = cfg ? nas_config_load(conf, cfg, &err) : nas_error_set(&err, NAS_ENOMEM, "out of memory");
    nas_error derr;
    nas_error_clear(&derr);
    /* issue 28: a chain space without space.input / classes counts for the data's */
    if (rc == NAS_OK && nas_data_space_input(&cfg->data, &cfg->space, &derr) != NAS_OK)
        fprintf(stderr, "nas space: warning: space.input or space.classes is not set and the data "
                "cannot be read (%s): counting for 1x28x28 images and 10 classes\n", derr.msg);
    if (rc == NAS_OK)
        rc = nas_space_report(stdout, cfg, &o, &err);
    free(cfg);
    if (rc == NAS_OK)
        return NAS_EXIT_OK;
    fprintf(stderr, "nas space: %s\n", err.msg);
    return rc == NAS_EFORMAT || rc == NAS_EUNSUPPORTED ? NAS_EXIT_USAGE : nas_cli_exit_code(rc);
}
