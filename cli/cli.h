/*
 * cli/cli.h - the `nas` command table (after redis's command table): each
 * command is a handler in cli/cmd_<name>.c; help text is generated from
 * the table. Exit codes: 0 ok, 1 runtime failure, 2 usage or config error.
 */
#ifndef NAS_CLI_H
#define NAS_CLI_H

#include <stdint.h>
#include <stdio.h>
#include "nas/status.h"
#include "nas/parse.h" /* nas_parse_long, nas_parse_u64, nas_parse_double */
#include "nas/report.h" /* nas_report_*, and nas_store (nas/store.h) */

#define NAS_EXIT_OK 0
#define NAS_EXIT_FAIL 1
#define NAS_EXIT_USAGE 2

typedef struct nas_cli_cmd {
    const char *name;
    int (*handler)(int argc, char **argv); /* argv[0] is the command name */
    const char *usage;                     /* "nas run CONF [--db PATH]" */
    const char *summary;                   /* one line */
    const char *help;                      /* options, one per line */
} nas_cli_cmd;

int nas_cmd_run(int argc, char **argv);
int nas_cmd_query(int argc, char **argv);
int nas_cmd_experiments(int argc, char **argv); /* issue 22 */
int nas_cmd_show(int argc, char **argv);
int nas_cmd_train(int argc, char **argv);
int nas_cmd_devices(int argc, char **argv);
int nas_cmd_report(int argc, char **argv);
int nas_cmd_export(int argc, char **argv);
int nas_cmd_space(int argc, char **argv);
int nas_cmd_proxy_check(int argc, char **argv); /* issue 30 */
int nas_cmd_supernet(int argc, char **argv);    /* issue 32 */
/* Print the command's usage and help to `f`. */
void nas_cli_usage(FILE *f, const char *cmd_name);

/* Print "nas CMD: MESSAGE" (printf-style) and CMD's usage to stderr;
 * returns NAS_EXIT_USAGE. */
int nas_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "nas CMD: unknown option 'ARG'" with " (did you mean '--X'?)" when one
 * of the options CMD's usage and help name is close (nas/suggest.h), and
 * CMD's usage, on stderr; returns NAS_EXIT_USAGE. */
int nas_cli_unknown_option(const char *cmd, const char *arg);

/* Map a nas_status to an exit code: config/usage errors 2, others 1. */
int nas_cli_exit_code(int status);

/* 1 if `arg` is one of the NULL-terminated `names`. */
int nas_cli_is_one_of(const char *arg, const char *const *names);

/* Issue 33: a --genotype with " KEY=VALUE" recipe words (copied from
 * `nas show` of a search with recipe choices) names the network alone; say
 * on stderr that the words are ignored and what carries them (`hint`:
 * the command's own options, or ""). Silent without such words. */
void nas_cli_note_recipe_words(const char *cmd, const char *genotype, const char *hint);

/* An integer option: its value lo..hi goes to *dst; `range` says so in messages. */
typedef struct nas_cli_int { const char *name; long lo, hi; int *dst; const char *range; } nas_cli_int;

/* Option `a` with value `v` when it is one of t[0..n): -1 once stored,
 * else a usage error "nas CMD: A needs RANGE, not 'V'" (its exit code;
 * v NULL, `a` being the last argument: "A needs a value: RANGE");
 * 0 when `a` is none of them. */
int nas_cli_ints(const char *cmd, const nas_cli_int *t, size_t n, const char *a, const char *v);

/* "table", "csv" or "json" into *fmt: -1; else "nas CMD: unknown format"
 * on stderr and NAS_EXIT_USAGE. */
int nas_cli_format(const char *cmd, const char *s, nas_report_format *fmt);

/* Open the store `db` read-only, call fn(store, arg, err), close it: 0,
 * or "nas CMD: why" on stderr and NAS_EXIT_FAIL. */
int nas_cli_read_store(const char *cmd, const char *db,
                       int (*fn)(nas_store *st, const void *arg, nas_error *err), const void *arg);


#endif
