/*
 * cli/cmd_space.c - `nas space CONF [--genotype G] [--samples N] [--seed S]
 * [--enumerate N] [--format text|json] [--list]`: inspect a search space without
 * running a search. The work is nas_space_report (evaluator/inspect.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "nas/inspect.h"

int nas_cmd_space(int argc, char **argv)
{
    const char *conf = NULL;
    nas_space_report_opts o = {.samples = 5, .seed = 42, .genotype = NULL,
                               .enumerate_max = 1u << 20, .json = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        if ((strcmp(a, "--genotype") == 0 || strcmp(a, "--samples") == 0 || strcmp(a, "--seed") == 0 ||
             strcmp(a, "--enumerate") == 0 || strcmp(a, "--format") == 0) &&
            i + 1 >= argc) {
            fprintf(stderr, "nas space: %s needs a value\n", a);
            nas_cli_usage(stderr, "space");
            return NAS_EXIT_USAGE;
        }
        if (strcmp(a, "--list") == 0) {
            o.list = 1;
        } else if (strcmp(a, "--genotype") == 0) {
            o.genotype = argv[++i];
        } else if (strcmp(a, "--samples") == 0) {
            if (nas_cli_parse_long(argv[++i], 0, 100000, &v)) {
                fprintf(stderr, "nas space: --samples must be an integer in [0, 100000], got '%s'\n", argv[i]);
                return NAS_EXIT_USAGE;
            }
            o.samples = (int)v;
        } else if (strcmp(a, "--seed") == 0) {
            if (nas_cli_parse_long(argv[++i], 0, 0x7fffffffL, &v)) {
                fprintf(stderr, "nas space: --seed must be a non-negative integer, got '%s'\n", argv[i]);
                return NAS_EXIT_USAGE;
            }
            o.seed = (uint64_t)v;
        } else if (strcmp(a, "--enumerate") == 0) {
            if (nas_cli_parse_long(argv[++i], 0, 100000000L, &v)) {
                fprintf(stderr, "nas space: --enumerate must be an integer in [0, 100000000], got '%s'\n",
                        argv[i]);
                return NAS_EXIT_USAGE;
            }
            o.enumerate_max = (uint64_t)v;
        } else if (strcmp(a, "--format") == 0) {
            const char *f = argv[++i];
            if (strcmp(f, "json") == 0)
                o.json = 1;
            else if (strcmp(f, "text") == 0)
                o.json = 0;
            else {
                fprintf(stderr, "nas space: --format must be text or json, got '%s'\n", f);
                return NAS_EXIT_USAGE;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "nas space: unknown option '%s'\n", a);
            nas_cli_usage(stderr, "space");
            return NAS_EXIT_USAGE;
        } else if (!conf) {
            conf = a;
        } else {
            fprintf(stderr, "nas space: unexpected argument '%s' (one CONF)\n", a);
            return NAS_EXIT_USAGE;
        }
    }
    if (!conf) {
        fprintf(stderr, "nas space: missing CONF (the space.conf to inspect)\n");
        nas_cli_usage(stderr, "space");
        return NAS_EXIT_USAGE;
    }
    nas_config *cfg = malloc(sizeof *cfg);
    nas_error err;
    nas_error_clear(&err);
    if (!cfg) {
        fprintf(stderr, "nas space: out of memory\n");
        return NAS_EXIT_FAIL;
    }
    int rc = nas_config_load(conf, cfg, &err);
    if (rc == NAS_OK)
        rc = nas_space_report(stdout, cfg, &o, &err);
    free(cfg);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas space: %s\n", err.msg);
        return rc == NAS_EFORMAT || rc == NAS_EUNSUPPORTED ? NAS_EXIT_USAGE : nas_cli_exit_code(rc);
    }
    return NAS_EXIT_OK;
}
