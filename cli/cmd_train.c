/*
 * cli/cmd_train.c - `nas train (ARCH.json | --genotype STRING) [...]`:
 * options (each also as --opt=value) into a nas_arch_train_opts, one
 * nas_arch_train call (export/arch_train.c, docs/export.md "nas train").
 * Ctrl-C (SIGINT) or SIGTERM stops after the current step; the checkpoint
 * keeps the last finished epoch and the same command resumes (exit 130).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "nas/export.h"

static volatile sig_atomic_t g_stop; /* set by SIGINT/SIGTERM */

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* One option with its value v; -1 when handled, else the exit code. The
 * integer and plain-text options are tables of where each value goes. */
static int option(nas_arch_train_opts *o, const char *a, const char *v)
{
    const nas_cli_int ints[] = {
        {"--channels", 1, 4096, &o->channels, "1..4096"},
        {"--cells", 0, 64, &o->cells, "0..64 (cells per stage)"},
        {"--epochs", 1, 100000, &o->epochs, "1..100000"},
        {"--threads", 0, 1024, &o->threads, "0..1024"},
        {"--batch-size", 1, 65536, &o->batch, "1..65536"},
        {"--subset", 1, 60000, &o->subset, "1..60000"},
        {"--test-subset", 1, 10000, &o->test_subset, "1..10000"},
        {"--stop-after", 1, 100000, &o->stop_after, "a positive epoch"},
        {"--bn-recalibrate", 0, 100000, &o->bn_recalibrate, "0..100000 (batches; 0: off)"},
    };
    const struct {
        const char *name;
        const char **dst;
    } texts[] = {{"--genotype", &o->genotype}, {"--db", &o->db},
                 {"--augment", &o->augment},   {"--backend", &o->backend},
                 {"--data", &o->data},         {"--checkpoint", &o->checkpoint},
                 {"--schedule", &o->schedule}, {"--precision", &o->precision}};
    int rc = nas_cli_ints("train", ints, sizeof ints / sizeof ints[0], a, v);
    if (rc)
        return rc;
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
        if (!strcmp(a, texts[k].name)) {
            *texts[k].dst = v;
            return -1;
        }
    if (!strcmp(a, "--lr")) {
        if (nas_parse_double(v, 0, 0, 100, &o->lr))
            return nas_cli_usage_error("train",
                                       "--lr needs a positive number up to 100, not '%s'", v);
    } else if (!strcmp(a, "--momentum")) {
        if (nas_parse_double(v, 0, 1, 0.999, &o->momentum))
            return nas_cli_usage_error("train", "--momentum needs 0..0.999, not '%s'", v);
    } else if (!strcmp(a, "--weight-decay")) {
        if (nas_parse_double(v, 0, 1, 1, &o->weight_decay))
            return nas_cli_usage_error("train", "--weight-decay needs 0..1, not '%s'", v);
    } else if (!strcmp(a, "--progress")) {
        if (nas_parse_double(v, 0, 1, 86400, &o->progress_s))
            return nas_cli_usage_error("train", "--progress needs seconds between progress "
                                       "lines (0: every step), not '%s'", v);
    } else if (!strcmp(a, "--seed")) {
        if (nas_parse_u64(v, &o->seed))
            return nas_cli_usage_error("train", "--seed needs a non-negative integer, not '%s'", v);
        o->have_seed = 1;
    } else {
        return nas_cli_unknown_option("train", a);
    }
    return -1;
}

static int parse(int argc, char **argv, nas_arch_train_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char name[64];
        const char *eq = a[0] == '-' ? strchr(a, '=') : NULL;
        int inline_v = 0;
        if (eq && (size_t)(eq - a) < sizeof name) { /* --opt=value */
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
            a = name;
            v = eq + 1;
            inline_v = 1;
        }
        if (a[0] != '-') {
            if (o->arch)
                return nas_cli_usage_error("train", "unexpected argument '%s' (one ARCH.json)", a);
            o->arch = a;
            continue;
        }
        if (!strcmp(a, "--proxy") && !inline_v) {
            o->proxy = 1;
            continue;
        }
        if (!v)
            return nas_cli_usage_error("train", "%s needs a value", a);
        if (!inline_v)
            i++;
        int rc = option(o, a, v);
        if (rc >= 0)
            return rc;
    }
    return -1;
}

int nas_cmd_train(int argc, char **argv)
{
    nas_arch_train_opts o;
    nas_arch_train_opts_init(&o);
    int prc = parse(argc, argv, &o);
    if (prc >= 0)
        return prc;
    nas_cli_note_recipe_words("train", o.genotype, "; or give --lr, --weight-decay, "
                              "--batch-size, --augment");
    o.out = stdout;
    o.progress = stderr;
    o.stop = &g_stop;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    nas_arch_train_result r;
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_arch_train(&o, &r, &err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc == NAS_ECONFIG) /* the options (nas_arch_train_opts_check), a recipe of 0 epochs */
        return nas_cli_usage_error("train", "%s", err.msg);
    if (rc)
        fprintf(stderr, "nas train: %s\n", err.msg[0] ? err.msg : nas_strerror(rc));
    if (rc == NAS_EINTR)
        return 130;
    if (rc && !r.stage) /* reading ARCH.json (runtime) or the genotype (usage) */
        return o.arch ? NAS_EXIT_FAIL : NAS_EXIT_USAGE;
    return rc ? (rc == NAS_EINVAL || rc == NAS_ENOTFOUND ? NAS_EXIT_USAGE : NAS_EXIT_FAIL)
              : NAS_EXIT_OK;
}
