/* cli/main.c - `nas` entry point: dispatch through the command table. */
#include <stdarg.h> /* va_list */
#include <stdio.h>
#include <stdlib.h> /* getenv, setenv */
#include <string.h>
#include <unistd.h> /* execv */
#include "cli/cli.h"
#include "nas/space.h"   /* nas_genotype_strip_recipe */
#include "nas/suggest.h" /* nas_suggest_hint: "did you mean" */

static const nas_cli_cmd commands[] = {
    {"run", nas_cmd_run, "nas run CONF [--db PATH] [--experiment NAME] [--new] [--quiet] [--report FILE] [--time-limit DURATION] [--enqueue GENOTYPE]...",
     "run, resume or extend the search described by CONF",
     "  --db PATH           results database (default: nas.db in the current directory)\n"
     "  --experiment NAME   run under NAME instead of CONF's `experiment` (resumes NAME\n"
     "                      when it exists)\n"
     "  --new               start a new experiment even if the name exists: NAME-2, NAME-3...\n"
     "  --quiet             no live progress, only the final summary\n"
     "  --report FILE       keep the HTML report FILE up to date: rewritten after every trial,\n"
     "                      reloading itself while the search runs (as nas report writes it)\n"
     "  --time-limit D      stop this run after D (seconds, or 90s, 30m, 2h) as after\n"
     "                      Ctrl-C, and exit 0; overrides search.time_limit; rerun to go on\n"
     "  --enqueue G         evaluate genotype G before the strategy's own proposals\n"
     "                      (repeatable; added to search.enqueue, a defining setting: a\n"
     "                      resume repeats it)\n"
     "An experiment is its name in the database plus its defining settings: the same\n"
     "name resumes it, a larger search.trials extends it, other workers/threads/backend\n"
     "are fine; a changed defining setting (seed, data, space, proxy recipe, strategy,\n"
     "evaluator, objectives, constraints) is refused with the keys that differ.\n"
     "Exit: 0 with at least one done trial (failures counted in a warning), 1 when every\n"
     "trial failed or on a runtime error, 2 for a config error or a refused change, 130\n"
     "after Ctrl-C (0 after the time limit, as for a finished search).\n"},
    {"proxy-check", nas_cmd_proxy_check,
     "nas proxy-check CONF [--db PATH] [--quick] [--genotypes K] [--seeds S] [--quiet]",
     "measure how far CONF's proxy ranks architectures (seed noise, reliability, rungs)",
     "  --db PATH       results database (default: nas.db); the check is experiment\n"
     "                  '<experiment>-proxy-check' in it\n"
     "  --genotypes K   architectures sampled from the space (default 12; --quick: 6)\n"
     "  --seeds S       training seeds per architecture (default 2)\n"
     "  --quick         fewer architectures (6): about half the time\n"
     "  --quiet         no progress lines\n"
     "Trains each architecture with each seed to every rung of the ladder (search.fidelity's,\n"
     "else R/9, R/3, R training images), continuing one run per (architecture, seed). Prints\n"
     "per rung the seed noise, the between-architecture spread, the reliability ICC(1),\n"
     "Spearman and Kendall between seeds and against the top rung, the cost; a verdict;\n"
     "and last `proxy_check reliability=R seed_tau=T low_rung_tau=L cost_s=C`\n"
     "(docs/proxy.md). Ctrl-C stops (exit 130); the same command continues.\n"},
    {"supernet", nas_cmd_supernet,
     "nas supernet CONF [--epochs E] [--genotypes K] [--seeds S] [--recal-batches N] [--valid-images V] [--threads T] [--checkpoint PATH] [--out TSV] [--quiet]",
     "train CONF's space as a weight-sharing supernet and rank random subnets by it",
     "  --epochs E          supernet training epochs (default: proxy.epochs)\n"
     "  --genotypes K       random genotypes (distinct keys) evaluated by the supernet (30)\n"
     "  --seeds S           also train each stand-alone with the proxy, seeds seed..seed+S-1,\n"
     "                      and report Kendall's tau against them (default 0: not)\n"
     "  --recal-batches N   BN recalibration batches per subnet (default 4)\n"
     "  --valid-images V    evaluate subnets on the first V validation images (default: all;\n"
     "                      stand-alone trainings always use all)\n"
     "  --threads T         kernel threads for training (default: proxy.threads); on the\n"
     "                      cpu backend T > 1 evaluates T subnets side by side instead\n"
     "  --checkpoint PATH   supernet weights, written after every epoch; a rerun with the\n"
     "                      same settings continues from it (another run's is refused);\n"
     "                      the subnets are then read from PATH.weights (PATH without\n"
     "                      .npz), written once and mapped read-only, as nas run's workers\n"
     "  --out TSV           per-genotype accuracies to TSV (default: stdout)\n"
     "  --quiet             no progress lines\n"
     "Trains one path per step (uniform over each decision), evaluates each genotype with\n"
     "inherited weights on the validation split, and prints last `supernet supernet_tau=X\n"
     "seed_tau=Y subnets_per_s=Z supernet_s=A eval_s=B standalone_s=C` (docs/one-shot.md).\n"},
    {"experiments", nas_cmd_experiments, "nas experiments [--db PATH] [--format table|csv|json]",
     "list the experiments of a database (id, name, status, trials, best, created)",
     "  --db PATH    results database (default: nas.db)\n"
     "  --format FMT table (default), csv or json\n"
     "The default experiment of query, show, report and export (the most recent with a\n"
     "done trial) is marked.\n"},
    {"query", nas_cmd_query, "nas query [--db PATH] [--experiment NAME] [--format table|csv|json] [--limit N] [--min-fidelity N] [--pareto] [--zero-cost PROXY]",
     "list trials ranked by the first objective (highest fidelity first), or the Pareto front",
     "  --db PATH           results database (default: nas.db)\n"
     "  --experiment NAME   experiment to list (default: the most recent\n"
     "                      with a done trial; `nas experiments` lists them)\n"
     "  --format FMT        table (default), csv or json\n"
     "  --limit N           at most N rows, 0 all (--min-fidelity N: of trials trained to >= N)\n"
     "  --pareto            only the Pareto front under the experiment's objectives\n"
     "                      (done, feasible trials no other trial dominates; best first\n"
     "                      by the first objective; same columns; with rungs, among\n"
     "                      the trials at the highest fidelity)\n"
     "  --zero-cost PROXY   a last column zc_PROXY: the score search.warmup cached\n"
     "                      for the trial's architecture (docs/zero-cost.md)\n"},
    {"show", nas_cmd_show, "nas show [--db PATH] TRIAL",
     "print one trial in full", "  --db PATH   results database (default: nas.db)\n"},
    {"train", nas_cmd_train,
     "nas train (ARCH.json | --genotype STRING) [--epochs N] [--lr LR] [--channels C] [--cells N] [--db PATH] [--proxy] [...]",
     "train one architecture fully (on ARCH.json's data; --genotype: Fashion-MNIST) and report its test accuracy",
     "  ARCH.json           an architecture from `nas export --format json`\n"
     "  --genotype STRING   or any NAS-Bench-201 cell string, e.g. |nor_conv_3x3~0|+|...|\n"
     "  The full-training recipe (docs/export.md): 20 epochs over every training image,\n"
     "  batch 128, SGD lr 0.1 (cosine to 0 per step), Nesterov momentum 0.9, weight decay\n"
     "  5e-4, crop+flip augmentation, every core; the network as exported (--genotype: C 16,\n"
     "  N 1), seed from ARCH.json (--genotype: 0). Options override it:\n"
     "  --epochs N --batch-size B --lr LR --momentum M --weight-decay W --seed S\n"
     "  --schedule cosine|constant   --augment none|crop[N]|flip|cutout[N],... (crop pads 4)\n"
     "  --channels C        first-stage channels    --cells N   cells per stage\n"
     "  --proxy             ARCH.json only: redo the search's proxy training (its recipe,\n"
     "                      split, threads and backend): reproduces the trial\n"
     "  --subset N          train on N training images   --test-subset M   test on M images\n"
     "  --db PATH           record the result in the search's database (table final_training)\n"
     "  --checkpoint PATH   after every epoch; rerun the command to resume (default with\n"
     "                      ARCH.json: ARCH.<mode>-e<N>-s<S>[-<augment>].ckpt.npz; none: off;\n"
     "                      --genotype: off unless given)\n"
     "  --progress S        seconds between progress lines within an epoch (default 1 on a\n"
     "                      terminal, 10 otherwise; 0: every step)\n"
     "  --threads T (default: every core; --proxy: the trial's)  --backend cpu|ref\n"
     "  --precision P       fp32 (default), bf16 (cpu: oneDNN bf16, fp32 master weights) or\n"
     "                      fp16 (cuda only, loss scaling); an error where the backend lacks it\n"
     "  --data DIR          the data directory (data.dir)   --stop-after N   stop after epoch N\n"
     "  --bn-recalibrate N  before testing, recompute the BN statistics over N training\n"
     "                      batches (default: --proxy: ARCH.json's proxy.bn_recalibrate; else 10)\n"},
    {"report", nas_cmd_report,
     "nas report [--db PATH] [--experiment NAME] [-o FILE] [--top-k K]",
     "write a self-contained HTML report of an experiment (plots, Pareto front, failures)",
     "  --db PATH           results database (default: nas.db)\n"
     "  --experiment NAME   experiment to report (default: the most recent\n"
     "                      with a done trial; `nas experiments` lists them)\n"
     "  -o, --output FILE   the HTML page to write (default: report.html)\n"
     "  --top-k K           best trials counted in the op-frequency chart (default 10)\n"},
    {"export", nas_cmd_export,
     "nas export [--db PATH] [--experiment NAME] (--best [--by COLUMN] | --trial ID | --genotype STRING) --format json|onnx|pytorch [--weights trained|init|final] -o FILE",
     "write an architecture as JSON (input of nas train), ONNX, or PyTorch code + .npz weights",
     "  --db PATH            results database (default: nas.db)\n"
     "  --experiment NAME    with --best: the experiment (default: the most recent\n"
     "                       with a done trial; `nas experiments` lists them)\n"
     "  --best               the best done trial by the experiment's first objective, among\n"
     "                       those meeting its constraints\n"
     "  --by COLUMN[:max|min] rank --best by val_accuracy, test_accuracy, score, train_loss,\n"
     "                       macs, params, latency_ms or train_seconds instead\n"
     "  --trial ID           that trial (it must be done)\n"
     "  --genotype STRING    any cell, no database (weights init; --channels C, --cells N, --seed S)\n"
     "  --format FMT         json, onnx (opset 13) or pytorch (FILE.py + FILE.npz)\n"
     "  --weights W          trained (the trial's kept proxy weights; default), init, or final\n"
     "                       (its latest `nas train ARCH.json --db` training's weights)\n"
     "  -o FILE              output file\n"
     "  --logits FILE        also write nas's logits on the first test images of the experiment's data (.npz)\n"
     "  --logits-batch N     images for --logits (default 16)   --backend ref|cpu\n"
     "  --data DIR           where the search's data.dir moved (read by --logits, named by "
     "the export)\n"
     "  docs/export.md describes every format.\n"},
    {"space", nas_cmd_space,
     "nas space CONF [--genotype G] [--samples N] [--seed S] [--enumerate N] [--format text|json] [--list] [--zero-cost METRICS]",
     "describe a search space: decisions, size, distinct keys, samples with MACs and params",
     "  --genotype G    one genotype instead: its layer table (chain), MACs and params\n"
     "  --samples N     random genotypes listed (default 5)   --seed S (default 42)\n"
     "  --enumerate N   also count distinct keys by enumerating spaces of at most N\n"
     "                  genotypes (default 1048576; 0: never)\n"
     "  --format FMT    text (default) or json\n"
     "  --list          every genotype as CSV: genotype,key,macs,params (to make a table;\n"
     "                  spaces of at most --enumerate genotypes)\n"
     "  --zero-cost M   add one CSV column per zero-cost proxy in the comma-separated list M\n"
     "                  (synflow, naswot, snip, grad_norm, jacob_cov, params, macs) to --list, or list\n"
     "                  --samples N sampled genotypes so; docs/zero-cost.md\n"
     "  docs/spaces.md describes the chain space language and the counts.\n"},
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

int nas_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "nas %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    nas_cli_usage(stderr, cmd);
    return NAS_EXIT_USAGE;
}

/* The options that command i's usage and help name ("--db", "-o", ...),
 * separated by spaces, into buf[n]: a '-' after a space, '[', '(' or '|'
 * and before a letter or '-' starts one. */
static void command_options(size_t i, char *buf, size_t n)
{
    const char *texts[2] = {commands[i].usage, commands[i].help};
    size_t used = 0;
    buf[0] = '\0';
    for (int t = 0; t < 2; t++)
        for (const char *p = texts[t]; *p; p++) {
            char prev = p == texts[t] ? ' ' : p[-1];
            if (*p != '-' || !strchr(" [(|", prev) || !(p[1] == '-' || (p[1] >= 'a' && p[1] <= 'z')))
                continue;
            size_t len = strspn(p, "-abcdefghijklmnopqrstuvwxyz0123456789");
            int k = snprintf(buf + used, n - used, "%.*s ", (int)len, p);
            if (k < 0 || (size_t)k >= n - used)
                return;
            used += (size_t)k;
            p += len - 1;
        }
}

int nas_cli_unknown_option(const char *cmd, const char *arg)
{
    char opts[2048] = "", hint[96];
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, cmd) == 0)
            command_options(i, opts, sizeof opts);
    return nas_cli_usage_error(cmd, "unknown option '%s'%s", arg,
                               nas_suggest_hint(arg, opts, hint, sizeof hint));
}

int nas_cli_exit_code(int status)
{
    if (status == NAS_OK)
        return NAS_EXIT_OK;
    if (status == NAS_ECONFIG || status == NAS_EINVAL)
        return NAS_EXIT_USAGE;
    return NAS_EXIT_FAIL;
}

int nas_cli_is_one_of(const char *arg, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(arg, *names))
            return 1;
    return 0;
}

void nas_cli_note_recipe_words(const char *cmd, const char *genotype, const char *hint)
{
    char net[NAS_GENOTYPE_STR_MAX];
    if (!genotype || strlen(genotype) >= sizeof net)
        return;
    memcpy(net, genotype, strlen(genotype) + 1);
    if (nas_genotype_strip_recipe(net) <= 0) /* cuts net where the words begin */
        return;
    const char *words = genotype + strlen(net);
    words += strspn(words, " \t\r\n");
    fprintf(stderr, "nas %s: note: --genotype's recipe words (%s) are ignored: they are a search "
            "trial's proxy settings, which `nas export --trial N` writes into ARCH.json (`nas "
            "train ARCH.json --proxy` trains with them)%s\n", cmd, words, hint);
}

int nas_cli_ints(const char *cmd, const nas_cli_int *t, size_t n, const char *a, const char *v)
{
    long x;
    for (size_t k = 0; k < n; k++) {
        if (strcmp(a, t[k].name))
            continue;
        if (!v)
            return nas_cli_usage_error(cmd, "%s needs a value: %s", a, t[k].range);
        if (nas_parse_long(v, t[k].lo, t[k].hi, &x))
            return nas_cli_usage_error(cmd, "%s needs %s, not '%s'", a, t[k].range, v);
        *t[k].dst = (int)x;
        return -1;
    }
    return 0;
}

int nas_cli_format(const char *cmd, const char *s, nas_report_format *fmt)
{
    if (!nas_report_format_parse(s, fmt))
        return -1;
    char hint[96];
    fprintf(stderr, "nas %s: unknown format '%s' (expected table, csv or json)%s\n", cmd, s,
            nas_suggest_hint(s, "table csv json", hint, sizeof hint));
    return NAS_EXIT_USAGE;
}

int nas_cli_read_store(const char *cmd, const char *db,
                       int (*fn)(nas_store *st, const void *arg, nas_error *err), const void *arg)
{
    nas_error err;
    nas_store *st = NULL;
    int rc = nas_store_open(db, 1, &st, &err);
    if (rc == NAS_OK)
        rc = fn(st, arg, &err);
    nas_store_close(st);
    if (rc == NAS_OK)
        return NAS_EXIT_OK;
    fprintf(stderr, "nas %s: %s\n", cmd, err.msg);
    return NAS_EXIT_FAIL;
}

/* 1 if argv has -h/--help (then main prints the command's usage). */
static int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    return 0;
}

/*
 * oneDNN's threads (Debian: OpenMP runtime) that spin while waiting make
 * every parallel kernel several times slower when the cores are shared
 * (other workers, other processes): PyTorch on this network
 * trained at 18 img/s with libgomp's default policy and 70 img/s with
 * OMP_WAIT_POLICY=passive on the same loaded 2-core machine (issue 8,
 * experiments/bench-train). libgomp reads the variable once, when it is
 * loaded, so when the user has not chosen a policy, nas sets "passive" and
 * re-executes itself once (NAS_REEXEC guards against a loop); if that
 * fails it simply carries on.
 */
static void prefer_passive_openmp(char **argv)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("NAS_REEXEC"))
        return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0 || setenv("NAS_REEXEC", "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
}

int main(int argc, char **argv)
{
    prefer_passive_openmp(argv);
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
            if (wants_help(argc - 1, argv + 1)) {
                nas_cli_usage(stdout, argv[1]);
                return NAS_EXIT_OK;
            }
            return commands[i].handler(argc - 1, argv + 1);
        }
    }
    char names[256] = "", hint[96];
    for (size_t i = 0; i < N_COMMANDS; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s ", commands[i].name);
    fprintf(stderr, "nas: unknown command '%s'%s\n\n", argv[1],
            nas_suggest_hint(argv[1], names, hint, sizeof hint));
    print_main_usage(stderr);
    return NAS_EXIT_USAGE;
}
