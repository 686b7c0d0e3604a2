/* cli/main.c - `nas` entry point: dispatch through the command table. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static const nas_cli_cmd commands[] = {
    {"run", nas_cmd_run, "nas run CONF [--db PATH] [--quiet]",
     "run (or resume) the search described by CONF",
     "  --db PATH   results database (default: nas.db in the current directory)\n"
     "  --quiet     no live progress, only the final summary\n"},
    {"query", nas_cmd_query, "nas query [--db PATH] [--experiment NAME] [--format table|csv|json] [--limit N]",
     "list trials ranked by validation accuracy",
     "  --db PATH           results database (default: nas.db)\n"
     "  --experiment NAME   experiment to list (default: the most recent)\n"
     "  --format FMT        table (default), csv or json\n"
     "  --limit N           at most N rows\n"},
    {"show", nas_cmd_show, "nas show [--db PATH] TRIAL",
     "print one trial in full", "  --db PATH   results database (default: nas.db)\n"},
    {"train", nas_cmd_train,
     "nas train --genotype STRING [--epochs N] [--seed S] [--batch-size B] [--lr LR] [--threads T] [--backend cpu|ref] [--data DIR]",
     "train one architecture on Fashion-MNIST and report its test accuracy",
     "  --genotype STRING   NAS-Bench-201 cell string, e.g. |nor_conv_3x3~0|+|...|\n"
     "  --epochs N          epochs over the full training set (default 3)\n"
     "  --seed S            weight init and batch order (default 0)\n"
     "  --batch-size B      (default 128)   --lr LR (default 0.05, cosine schedule)\n"
     "  --channels C        first-stage channels (default 16)  --cells N (default 1)\n"
     "  --threads T         kernel threads (default 2)\n"
     "  --backend NAME      cpu (default) or ref\n"
     "  --data DIR          Fashion-MNIST idx files (default /usr/share/datasets/fashion-mnist)\n"},
    {"devices", nas_cmd_devices, "nas devices", "list compiled-in backends and devices found", ""},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void print_main_usage(FILE *f)
{
    fprintf(f, "nas %s - neural architecture search\n\nusage: nas COMMAND [OPTIONS]\n\ncommands:\n",
            NAS_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'nas COMMAND --help' describes a command. Exit codes: 0 ok, 1 failure, 2 usage or config error.\n");
}

void nas_cli_usage(FILE *f, const char *cmd_name)
{
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i].name, cmd_name) == 0) {
            fprintf(f, "usage: %s\n%s\n%s", commands[i].usage, commands[i].summary, commands[i].help);
            return;
        }
    }
}

int nas_cli_exit_code(int status)
{
    if (status == NAS_OK)
        return NAS_EXIT_OK;
    if (status == NAS_ECONFIG || status == NAS_EINVAL)
        return NAS_EXIT_USAGE;
    return NAS_EXIT_FAIL;
}

int nas_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_main_usage(stderr);
        return NAS_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            nas_cli_usage(stdout, argv[2]);
            return NAS_EXIT_OK;
        }
        print_main_usage(stdout);
        return NAS_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("nas %s\n", NAS_VERSION);
        return NAS_EXIT_OK;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i].name, argv[1]) == 0) {
            if (nas_cli_wants_help(argc - 1, argv + 1)) {
                nas_cli_usage(stdout, argv[1]);
                return NAS_EXIT_OK;
            }
            return commands[i].handler(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "nas: unknown command '%s'\n\n", argv[1]);
    print_main_usage(stderr);
    return NAS_EXIT_USAGE;
}
