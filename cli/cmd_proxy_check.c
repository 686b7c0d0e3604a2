/*
 * cli/cmd_proxy_check.c - `nas proxy-check CONF [--db DB] [--quick]
 * [--genotypes K] [--seeds S] [--quiet]` (issue 30, docs/proxy.md): how
 * far CONF's proxy ranks architectures (nas_proxy_check_run). Progress on
 * stderr; the figures, the verdict and the last line on stdout. Ctrl-C
 * stops (exit 130); the same command continues.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "nas/search.h"
#include "nas/space.h"

/* Set by the signal handler, read through nas_proxy_check_opts.stop. */
static volatile sig_atomic_t pc_stop;

static void on_stop(int sig)
{
    static const char msg[] = "\nnas proxy-check: stopping: stored trainings are kept\n";
    if (pc_stop) { /* a second signal aborts at once */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    pc_stop = sig;
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

int nas_cmd_proxy_check(int argc, char **argv)
{
    const char *conf = NULL;
    nas_proxy_check_opts o = {.db_path = "nas.db", .stop = &pc_stop};
    const nas_cli_int ints[] = {{"--genotypes", 2, 10000, &o.archs, "2 to 10000"},
                                {"--seeds", 2, 100, &o.seeds, "2 to 100"}};
    for (int i = 1; i < argc; i++) {
        int r;
        if (!strcmp(argv[i], "--db")) {
            if (++i >= argc || !*argv[i])
                return nas_cli_usage_error("proxy-check", "--db needs a path");
            o.db_path = argv[i];
        } else if (!strcmp(argv[i], "--quick")) {
            o.quick = 1;
        } else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
            o.quiet = 1;
        } else if ((r = nas_cli_ints("proxy-check", ints, 2, argv[i],
                                     i + 1 < argc ? argv[i + 1] : NULL)) != 0) {
            if (r > 0)
                return r;
            i++;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return nas_cli_usage_error("proxy-check", "unknown option '%s'", argv[i]);
        } else if (!conf) {
            conf = argv[i];
        } else {
            return nas_cli_usage_error("proxy-check", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!conf)
        return nas_cli_usage_error("proxy-check", "missing CONF (the space.conf to check)");
    nas_config *cfg = malloc(sizeof *cfg);
    if (!cfg) {
        fprintf(stderr, "nas proxy-check: out of memory\n");
        return NAS_EXIT_FAIL;
    }
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_config_load(conf, cfg, &err);
    if (rc != NAS_OK) {
        fprintf(stderr, "nas proxy-check: %s\n", err.msg);
        free(cfg);
        return NAS_EXIT_USAGE;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = nas_proxy_check_run(cfg, &o, &err);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    free(cfg);
    if (rc == NAS_EINTR)
        return 130;
    if (rc != NAS_OK) {
        fprintf(stderr, "nas proxy-check: %s\n", err.msg);
        return nas_cli_exit_code(rc);
    }
    return NAS_EXIT_OK;
}
