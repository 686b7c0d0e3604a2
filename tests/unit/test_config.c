/*
 * tests/unit/test_config.c - space.conf parsing (space/config.c): good files
 * read into the right fields, bad files rejected with the right message and
 * line, canonical text equal exactly when two configs mean the same search,
 * and docs/space-conf.md listing every key with its default.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <glob.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "nas/space.h"

#define CONF_DIR NAS_SOURCE_DIR "/tests/data/conf"

static void load_ok(const char *path, nas_config *cfg)
{
    nas_error err = {0};
    int rc = nas_config_load(path, cfg, &err);
    if (rc != NAS_OK)
        fail_msg("%s: %s (%s)", path, err.msg, nas_err_name(rc));
}

static void parse_ok(const char *text, nas_config *cfg)
{
    nas_error err = {0};
    int rc = nas_config_parse_string(text, "test.conf", cfg, &err);
    if (rc != NAS_OK)
        fail_msg("'%s': %s", text, err.msg);
}

static void test_defaults(void **state)
{
    (void)state;
    nas_config c;
    nas_config_defaults(&c);
    assert_string_equal(c.experiment, "");
    assert_int_equal(c.seed, 42);
    assert_string_equal(c.data.dataset, "fashion-mnist");
    assert_string_equal(c.data.dir, "/usr/share/datasets/fashion-mnist");
    assert_int_equal(c.data.valid, 5000);
    assert_int_equal(c.data.train_subset, 0);
    assert_int_equal(c.space.op_mask, (1u << NAS_OP_COUNT) - 1);
    assert_int_equal(c.space.channels, 16);
    assert_int_equal(c.proxy.epochs, 1);
    assert_int_equal(c.proxy.batch_size, 128);
    assert_true(c.proxy.nesterov);
    assert_int_equal(c.proxy.schedule, NAS_SCHEDULE_COSINE);
    assert_string_equal(c.proxy.backend, "cpu");
    assert_string_equal(c.proxy.precision, "fp32");
    assert_int_equal(c.search.strategy, NAS_STRATEGY_EVOLUTION);
    assert_int_equal(c.search.population, 10);
    assert_int_equal(c.search.sample_size, 3);
    assert_int_equal(c.evaluator.kind, NAS_EVALUATOR_TRAIN);
    assert_int_equal(c.n_objectives, 1);
    assert_string_equal(c.objectives[0].metric, "val_accuracy");
    assert_true(c.objectives[0].maximize);
    assert_int_equal(c.workers.n_gpus, -1);
    assert_int_equal(c.workers.count, 1);
    /* the defaults are a valid space */
    nas_space *s = NULL;
    assert_int_equal(nas_space_create(&c.space, &s, NULL), NAS_OK);
    nas_space_destroy(s);
}

static void test_good_full(void **state)
{
    (void)state;
    nas_config c;
    load_ok(CONF_DIR "/good_full.conf", &c);
    char dir[PATH_MAX], want[PATH_MAX + 64];
    assert_non_null(realpath(CONF_DIR, dir));

    assert_string_equal(c.path, CONF_DIR "/good_full.conf");
    assert_string_equal(c.experiment, "full-example");
    assert_true(c.seed == 12345678901ULL);
    snprintf(want, sizeof want, "%s/fmnist", dir);
    assert_string_equal(c.data.dir, want);
    assert_int_equal(c.data.train_subset, 10000);
    assert_int_equal(c.data.valid, 2000);
    assert_int_equal(c.space.op_mask, (1u << NAS_OP_NONE) | (1u << NAS_OP_SKIP_CONNECT) |
                                          (1u << NAS_OP_NOR_CONV_3X3));
    assert_int_equal(c.space.channels, 8);
    assert_int_equal(c.space.stages, 2);
    assert_int_equal(c.space.cells_per_stage, 2);
    assert_int_equal(c.proxy.epochs, 3);
    assert_int_equal(c.proxy.batch_size, 64);
    assert_true(c.proxy.lr == 0.1);
    assert_true(c.proxy.momentum == 0.8);
    assert_false(c.proxy.nesterov);
    assert_true(c.proxy.weight_decay == 1e-4);
    assert_int_equal(c.proxy.schedule, NAS_SCHEDULE_CONSTANT);
    assert_int_equal(c.proxy.threads, 1);
    assert_string_equal(c.proxy.backend, "ref");
    assert_string_equal(c.proxy.precision, "bf16");
    assert_true(c.proxy.keep_weights);
    assert_int_equal(c.search.strategy, NAS_STRATEGY_NAO);
    assert_int_equal(c.search.trials, 50);
    assert_int_equal(c.search.population, 8);
    assert_int_equal(c.search.sample_size, 4);
    assert_int_equal(c.search.nao.seed_archs, 10);
    assert_int_equal(c.search.nao.top_k, 7);
    assert_int_equal(c.search.nao.embed_size, 8);
    assert_int_equal(c.search.nao.hidden_size, 32);
    assert_int_equal(c.search.nao.epochs, 50);
    assert_true(c.search.nao.lr == 0.001);
    assert_true(c.search.nao.tradeoff == 0.5);
    assert_true(c.search.nao.step == 2.0);
    assert_true(c.search.nao.step_growth == 2.0);
    assert_int_equal(c.search.nao.max_steps, 7);
    assert_int_equal(c.search.nao.batch_per_round, 3);
    assert_int_equal(c.evaluator.kind, NAS_EVALUATOR_TABLE);
    /* "../tables/nb201.csv", tidied: the ".." folds into the directory */
    snprintf(want, sizeof want, "%s", dir);
    *strrchr(want, '/') = '\0';
    strcat(want, "/tables/nb201.csv");
    assert_string_equal(c.evaluator.table, want);
    assert_string_equal(c.evaluator.column, "cifar100-val");
    assert_string_equal(c.evaluator.test_column, "cifar100-test");
    assert_true(c.evaluator.table_scale == 1.0);
    assert_int_equal(c.evaluator.latency_runs, 5);
    assert_int_equal(c.evaluator.latency_warmup, 1);
    assert_int_equal(c.n_objectives, 2);
    assert_string_equal(c.objectives[0].metric, "val_accuracy");
    assert_true(c.objectives[0].maximize);
    assert_string_equal(c.objectives[1].metric, "params");
    assert_false(c.objectives[1].maximize);
    assert_true(c.constraints.latency_ms == 2.5);
    assert_true(c.constraints.mmacs == 50.0);
    assert_true(c.constraints.params == 1e6);
    assert_int_equal(c.workers.count, 2);
    assert_string_equal(c.workers.device, "auto");
    assert_int_equal(c.workers.trial_timeout_s, 600);
    assert_int_equal(c.workers.heartbeat_s, 10);
    assert_int_equal(c.workers.max_retries, 3);
    assert_int_equal(c.workers.n_gpus, 2);
    assert_int_equal(c.workers.gpus[0], 1);
    assert_int_equal(c.workers.gpus[1], 0);
    assert_int_equal(c.workers.trials_per_gpu, 2);
}

static void test_good_minimal(void **state)
{
    (void)state;
    nas_config c, d;
    load_ok(CONF_DIR "/good_minimal.conf", &c);
    assert_string_equal(c.experiment, "good_minimal"); /* basename, no extension */
    assert_int_equal(c.seed, 7);
    /* everything else is the default */
    nas_config_defaults(&d);
    d.seed = 7;
    snprintf(d.experiment, sizeof d.experiment, "good_minimal");
    char *a = nas_config_canonical(&c), *b = nas_config_canonical(&d);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
}

/* Every examples/NAME.conf in the tree parses (others add them over time). */
static void test_examples(void **state)
{
    (void)state;
    glob_t gl;
    int rc = glob(NAS_SOURCE_DIR "/examples/*.conf", 0, NULL, &gl);
    if (rc == GLOB_NOMATCH) {
        print_message("no examples/*.conf yet: nothing to check\n");
        skip();
    }
    assert_int_equal(rc, 0);
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        nas_config c;
        load_ok(gl.gl_pathv[i], &c);
        nas_space *s = NULL;
        assert_int_equal(nas_space_create(&c.space, &s, NULL), NAS_OK);
        nas_space_destroy(s);
    }
    globfree(&gl);
}

static void test_bad_files(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int line;
        const char *want; /* substring of the message after "FILE:LINE: " */
    } cases[] = {
        {"bad_syntax.conf", 5, "syntax error"},
        {"bad_unknown_op.conf", 6,
         "unknown op 'conv9x9' in space.ops, expected one of: none, skip_connect, nor_conv_1x1, "
         "nor_conv_3x3, avg_pool_3x3"},
        {"bad_range.conf", 5, "proxy.epochs = 0 is out of range, expected an integer in [1, 1000]"},
        {"bad_type.conf", 4, "proxy.batch_size is a string, expected an integer"},
        {"bad_unknown_key.conf", 5,
         "unknown key 'learning_rate' in group 'proxy', expected one of: epochs, batch_size, lr,"},
        {"bad_unknown_group.conf", 4,
         "unknown group 'optimizer', expected one of: experiment, seed, objectives, data, space,"},
        {"bad_float_type.conf", 4, "proxy.nesterov is an integer, expected true or false"},
        {"bad_nodes.conf", 4, "space.nodes = 5 is out of range, expected 4"},
        {"bad_sample_size.conf", 5,
         "search.sample_size = 6 is larger than search.population = 4, expected an integer in [1, 4]"},
        {"bad_choice.conf", 4,
         "proxy.schedule = \"sgd\" is not a known choice, expected one of: \"cosine\", \"constant\""},
        {"bad_metric.conf", 4, "unknown metric \"accuracy\""},
        {"bad_gpus.conf", 4, "workers.gpus = \"some\", expected a list of GPU ids"},
        {"bad_nested_key.conf", 6, "unknown key 'layers' in group 'search.nao', expected one of: seed_archs,"},
        {"bad_big_int.conf", 4,
         "search.trials = 1099511627776 is out of range, expected an integer in [1, 1000000]"},
        {"bad_table.conf", 4, "evaluator.kind = \"table\" needs evaluator.table"},
        /* the error is in the @include'd file, and the message names it */
        {"bad_part.inc", 3, "proxy.epochs = 0 is out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024], prefix[1100];
        snprintf(path, sizeof path, "%s/%s", CONF_DIR, cases[i].file);
        snprintf(prefix, sizeof prefix, "%s:%d: ", path, cases[i].line);
        nas_config c;
        nas_error err = {0};
        if (strcmp(cases[i].file, "bad_part.inc") == 0) /* loaded through its includer */
            snprintf(path, sizeof path, "%s/%s", CONF_DIR, "bad_include.conf");
        int rc = nas_config_load(path, &c, &err);
        if (rc != NAS_ECONFIG)
            fail_msg("%s: rc %s, expected NAS_ECONFIG (%s)", cases[i].file, nas_err_name(rc), err.msg);
        assert_int_equal(err.code, NAS_ECONFIG);
        if (strncmp(err.msg, prefix, strlen(prefix)) != 0 || !strstr(err.msg, cases[i].want))
            fail_msg("%s: message\n  '%s'\nexpected to start with '%s' and contain\n  '%s'",
                     cases[i].file, err.msg, prefix, cases[i].want);
        assert_non_null(strstr(err.msg, "expected"));
    }
}

/* Issue 29, defect 10e: @include "/absolute/path" is opened as it is
 * (libconfig 1.5 prefixed the include directory to it: "cannot open
 * include file"), and a relative @include is taken from the directory of
 * the file holding the line, nested ones too, whatever the working
 * directory; an error in a nested file names it as seen from the cwd. */
static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_include_paths(void **state)
{
    (void)state;
    char root[] = "/tmp/nas_inc_XXXXXX", cwd[PATH_MAX], buf[1200];
    assert_non_null(mkdtemp(root));
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(buf, sizeof buf, "%s/a", root);
    assert_int_equal(mkdir(buf, 0700), 0);
    snprintf(buf, sizeof buf, "%s/a/parts", root);
    assert_int_equal(mkdir(buf, 0700), 0);
    snprintf(buf, sizeof buf, "%s/other", root);
    assert_int_equal(mkdir(buf, 0700), 0);
    char main_conf[1200];
    snprintf(main_conf, sizeof main_conf,
             "experiment = \"inc\";\n@include \"parts/p1.inc\"\n@include \"%s/abs.inc\"\n", root);
    write_file(root, "a/main.conf", main_conf);
    write_file(root, "a/parts/p1.inc", "# nested: relative to parts/\n@include \"p2.inc\"\n");
    write_file(root, "a/parts/p2.inc", "seed = 7;\n");
    write_file(root, "abs.inc", "search: { trials = 3; };\n");
    write_file(root, "a/bad.conf", "experiment = \"bad\";\n@include \"parts/bad1.inc\"\n");
    write_file(root, "a/parts/bad1.inc", "@include \"bad2.inc\"\n");
    write_file(root, "a/parts/bad2.inc", "\nproxy: { epochs = 0; };\n");
    static const char *const from[] = {"/", "other", "a/parts"};
    for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
        if (from[i][0] == '/')
            snprintf(buf, sizeof buf, "%s", from[i]);
        else
            snprintf(buf, sizeof buf, "%s/%s", root, from[i]);
        assert_int_equal(chdir(buf), 0);
        nas_config c;
        nas_error err = {0};
        snprintf(buf, sizeof buf, "%s/a/main.conf", root); /* absolute name */
        int rc = nas_config_load(buf, &c, &err);
        if (rc != NAS_OK)
            fail_msg("from %s: %s", from[i], err.msg);
        assert_int_equal(c.seed, 7);
        assert_int_equal(c.search.trials, 3);
        snprintf(buf, sizeof buf, "%s/a/bad.conf", root);
        assert_int_equal(nas_config_load(buf, &c, &err), NAS_ECONFIG);
        char want[1200];
        snprintf(want, sizeof want, "%s/a/parts/bad2.inc:2: proxy.epochs = 0 is out of range", root);
        if (strncmp(err.msg, want, strlen(want)) != 0)
            fail_msg("from %s: '%s', expected it to start with '%s'", from[i], err.msg, want);
    }
    /* a relative name: from other/, "../a/main.conf" */
    snprintf(buf, sizeof buf, "%s/other", root);
    assert_int_equal(chdir(buf), 0);
    nas_config c;
    nas_error err = {0};
    if (nas_config_load("../a/main.conf", &c, &err) != NAS_OK)
        fail_msg("../a/main.conf: %s", err.msg);
    assert_int_equal(c.seed, 7);
    assert_int_equal(c.search.trials, 3);
    assert_int_equal(nas_config_load("../a/bad.conf", &c, &err), NAS_ECONFIG);
    assert_non_null(strstr(err.msg, "../a/parts/bad2.inc:2: proxy.epochs = 0"));
    assert_int_equal(chdir(cwd), 0);
    snprintf(buf, sizeof buf, "rm -rf '%s'", root);
    assert_int_equal(system(buf), 0);
}

static void test_missing_file(void **state)
{
    (void)state;
    nas_config c;
    nas_error err = {0};
    int rc = nas_config_load(CONF_DIR "/no_such_file.conf", &c, &err);
    assert_int_equal(rc, NAS_EIO);
    assert_non_null(strstr(err.msg, "no_such_file.conf"));
}

/* Errors from strings: messages use the given name; more cases. */
static void test_string_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *want;
    } cases[] = {
        {"seed = -1;", "test.conf:1: seed = -1 is out of range"},
        {"seed = 1.5;", "test.conf:1: seed is a float, expected an integer"},
        {"\n\nproxy = 3;", "test.conf:3: proxy is an integer, expected a group"},
        {"space = { ops = []; };", "test.conf:1: space.ops is empty"},
        {"space = { ops = [\"none\"]; };", "space.ops holds only \"none\""},
        {"space = { ops = [\"none\", \"none\"]; };", "op 'none' is listed twice"},
        {"space = { ops = (\"none\", 3); };", "space.ops[1] is an integer, expected an op name"},
        {"space = { type = \"graph\"; };", "space.type = \"graph\" is not a known choice, expected one of: \"cell\", \"chain\""},
        {"space = { type = \"chain\"; };", "space.type = \"chain\" has no stem, expected stem = {"},
        {"proxy = { lr = -0.5; };", "proxy.lr = -0.5 is out of range, expected a number in [0, 10]"},
        {"proxy = { lr = \"fast\"; };", "proxy.lr is a string, expected a number"},
        {"proxy = { backend = \"tpu\"; };", "expected one of: \"cpu\", \"ref\", \"cuda\", \"auto\""},
        {"proxy = { precision = \"int8\"; };", "expected one of: \"fp32\", \"bf16\", \"fp16\""},
        {"data = { dataset = \"cifar10\"; };", "expected one of: \"fashion-mnist\""},
        {"data = { valid = 50000; train_subset = 20000; };", "exceeds the 60000 training images"},
        /* issue 16: data.format and its keys */
        {"data = { format = \"tfrecord\"; };", "expected one of: \"idx\", \"npy\", \"cifar\""},
        {"data = { format = \"npy\"; };", "needs data.train_images and data.train_labels"},
        {"data = { format = \"idx\"; train_images = \"a\"; train_labels = \"b\"; test_images = \"c\"; };",
         "data.test_images and data.test_labels go together"},
        {"data = { format = \"cifar\"; mean = [0.5]; };", "data.mean has 1 values and data.std 0"},
        {"data = { format = \"cifar\"; mean = [0.5]; std = [0.0]; };", "data.std[0] is not a number in"},
        {"data = { format = \"cifar\"; mean = 0.5; std = [0.2]; };", "data.mean is a float, expected an array"},
        {"data = { mean = [0.5]; std = [0.2]; };", "data.mean and data.std need data.format"},
        {"data = { format = \"npy\"; train_images = \"a\"; train_labels = \"b\"; layout = \"hwc\"; };",
         "expected one of: \"nhw\", \"nhwc\", \"nchw\""},
        {"search = { strategy = \"bayes\"; };", "expected one of: \"random\", \"evolution\", \"nao\""},
        {"objectives = { metric = \"macs\"; };", "objectives is a group, expected a list of groups"},
        {"objectives = ( { metric = \"macs\"; goal = \"up\"; } );", "expected one of: \"max\", \"min\""},
        {"objectives = ( { metric = \"macs\"; }, { metric = \"macs\"; } );", "appears twice"},
        {"objectives = ( { goal = \"max\"; } );", "has no metric"},
        {"objectives = ( { metric = \"macs\"; weight = 1; } );", "unknown key 'weight'"},
        {"objectives = ();", "objectives is empty"},
        {"workers = { gpus = [0, 300]; };", "workers.gpus[1] = 300 is out of range, expected an integer in [0, 255]"},
        {"workers = { gpus = []; };", "workers.gpus is empty"},
        {"workers = { device = \"tpu\"; };", "expected one of: \"cpu\", \"cuda\", \"auto\""},
        {"experiment = \"\";", "experiment name is empty"},
        {"experiment = 3;", "experiment is an integer, expected a string"},
        {"constraints = { latency_ms = -1; };", "constraints.latency_ms = -1 is out of range"},
        {"search = { nao = { tradeoff = 1.5; }; };", "search.nao.tradeoff = 1.5 is out of range, expected a number in [0, 1]"},
        {"search = { nao = 1; };", "search.nao is an integer, expected a group"},
        {"a = 1; a = 2;", "duplicate setting name, expected libconfig syntax"},
        {"proxy = { lr = 0.1 };\nworkers = {", "test.conf:2: syntax error, expected libconfig syntax"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nas_config c;
        nas_error err = {0};
        int rc = nas_config_parse_string(cases[i].text, "test.conf", &c, &err);
        if (rc != NAS_ECONFIG || !strstr(err.msg, cases[i].want) || strncmp(err.msg, "test.conf:", 10))
            fail_msg("'%s': rc %s message '%s', expected '%s'", cases[i].text, nas_err_name(rc), err.msg,
                     cases[i].want);
    }
}

/* issue 16: a data.format config's canonical text; the dataset label
 * defaults to the format, given mean/std print exactly. */
static void test_data_format_canonical(void **state)
{
    (void)state;
    nas_config c;
    nas_error err = {0};
    const char *text = "experiment = \"x\"; data = { format = \"npy\"; train_images = \"/d/i.npy\"; "
                       "train_labels = \"/d/l.npy\"; mean = [0.49, 0.48, 0.45]; std = [0.25, 0.24, 0.26]; "
                       "valid = 70000; };";
    assert_int_equal(nas_config_parse_string(text, "t.conf", &c, &err), NAS_OK);
    assert_string_equal(c.data.dataset, "npy");
    assert_int_equal(c.data.n_mean, 3);
    char *canon = nas_config_canonical(&c);
    assert_non_null(canon);
    assert_non_null(strstr(canon, "data.format = \"npy\";\n"));
    assert_non_null(strstr(canon, "data.mean = [0.49, 0.48, 0.45];\n"));
    assert_non_null(strstr(canon, "data.valid = 70000;\n"));
    free(canon);
    assert_int_equal(nas_config_key_defining("data.format"), 1);
    assert_int_equal(nas_config_key_defining("data.mean"), 1);
    assert_int_equal(nas_config_key_defining("data.train_images"), 0);
    assert_int_equal(nas_config_key_defining("data.test_labels"), 0);
}

static void test_accepts(void **state)
{
    (void)state;
    nas_config c;
    /* ints for floats, int64 ints, gpus "all", groups with '=' or ':' */
    parse_ok("experiment = \"x\"; seed = 9000000000L; proxy = { lr = 1; momentum = 0; };"
             "workers: { gpus = \"all\"; }; space = { nodes = 4; ops = (\"nor_conv_1x1\"); };",
             &c);
    assert_true(c.seed == 9000000000ULL);
    assert_true(c.proxy.lr == 1.0);
    assert_true(c.proxy.momentum == 0.0);
    assert_int_equal(c.workers.n_gpus, -1);
    assert_int_equal(c.space.op_mask, 1u << NAS_OP_NOR_CONV_1X1);
    /* relative paths from a string are resolved against the name's dir */
    nas_error err = {0};
    assert_int_equal(nas_config_parse_string("data = { dir = \"d\"; };", "/some/dir/x.conf", &c, &err),
                     NAS_OK);
    assert_string_equal(c.data.dir, "/some/dir/d");
    assert_string_equal(c.experiment, "x");
    assert_string_equal(c.path, "/some/dir/x.conf");
    assert_int_equal(nas_config_parse_string("data = { dir = \"/abs\"; };", "/some/dir/x.conf", &c, &err),
                     NAS_OK);
    assert_string_equal(c.data.dir, "/abs");
    assert_int_equal(nas_config_parse_string("data = { dir = \"./a//b/../c/\"; };", "rel/x.conf", &c, &err),
                     NAS_OK);
    assert_string_equal(c.data.dir, "rel/a/c");
    assert_int_equal(nas_config_parse_string("data = { dir = \"../../d\"; };", "rel/x.conf", &c, &err),
                     NAS_OK);
    assert_string_equal(c.data.dir, "../d");
}

static char *canon_of(const char *text)
{
    nas_config c;
    parse_ok(text, &c);
    char *s = nas_config_canonical(&c);
    assert_non_null(s);
    return s;
}

static void test_canonical(void **state)
{
    (void)state;
    /* the same search written differently */
    char *a = canon_of("experiment = \"e\";\n"
                       "proxy = { lr = 0.05; epochs = 2; weight_decay = 0.0005; };\n"
                       "space = { ops = [\"nor_conv_3x3\", \"skip_connect\"]; };\n");
    char *b = canon_of("space: { ops = [\"skip_connect\", \"nor_conv_3x3\"]; nodes = 4; }\n"
                       "proxy: { epochs = 2; lr = 5e-2; weight_decay = 5e-4; momentum = 0.9; }\n"
                       "experiment = \"e\"; seed = 42;");
    assert_string_equal(a, b);
    /* a different search */
    char *c = canon_of("experiment = \"e\"; proxy = { lr = 0.05; epochs = 3; weight_decay = 0.0005; };"
                       "space = { ops = [\"nor_conv_3x3\", \"skip_connect\"]; };");
    assert_string_not_equal(a, c);
    /* fixed format: one `key = value;` per line, no path */
    assert_non_null(strstr(a, "proxy.lr = 0.05;\n"));
    assert_non_null(strstr(a, "proxy.epochs = 2;\n"));
    assert_non_null(strstr(a, "proxy.weight_decay = 0.0005;\n"));
    assert_non_null(strstr(a, "space.ops = [\"skip_connect\", \"nor_conv_3x3\"];\n"));
    assert_non_null(strstr(a, "experiment = \"e\";\n"));
    assert_non_null(strstr(a, "workers.gpus = \"all\";\n"));
    assert_null(strstr(a, "test.conf"));
    for (const char *p = a; *p;) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        assert_true(nl - p >= 5);
        assert_memory_equal(nl - 1, ";", 1);
        assert_non_null(memchr(p, '=', (size_t)(nl - p)));
        p = nl + 1;
    }
    /* the location of the file does not enter the text */
    nas_config x, y;
    parse_ok("seed = 3;", &x);
    nas_error err;
    assert_int_equal(nas_config_parse_string("seed = 3;", "elsewhere/test.conf", &y, &err), NAS_OK);
    char *cx = nas_config_canonical(&x), *cy = nas_config_canonical(&y);
    assert_string_equal(cx, cy);
    /* a float that needs all its digits survives */
    char *d = canon_of("proxy = { lr = 0.1234567890123; };");
    assert_non_null(strstr(d, "proxy.lr = 0.1234567890123;\n"));
    char *e = canon_of("proxy = { lr = 1; }; constraints = { mmacs = 5e1; params = 1e6; latency_ms = 1e-9; };");
    assert_non_null(strstr(e, "proxy.lr = 1.0;\n"));
    assert_non_null(strstr(e, "constraints.mmacs = 50.0;\n"));
    assert_non_null(strstr(e, "constraints.params = 1000000.0;\n"));
    assert_non_null(strstr(e, "constraints.latency_ms = 1e-09;\n"));
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    free(cx);
    free(cy);
}

/* docs/space-conf.md has a table row for every key, holding its default as
 * the canonical text prints it. */
/* Issue 22: defining and running settings, compared key by key against a
 * stored canonical text. */
static void test_defining_diff(void **state)
{
    (void)state;
    assert_int_equal(nas_config_key_defining("seed"), 1);
    assert_int_equal(nas_config_key_defining("search.nao.lr"), 1);
    assert_int_equal(nas_config_key_defining("objectives"), 1);
    assert_int_equal(nas_config_key_defining("constraints.latency_ms"), 1);
    assert_int_equal(nas_config_key_defining("search.trials"), 0);
    assert_int_equal(nas_config_key_defining("workers.count"), 0);
    assert_int_equal(nas_config_key_defining("workers.ordered"), 0);
    assert_int_equal(nas_config_key_defining("proxy.threads"), 0);
    assert_int_equal(nas_config_key_defining("experiment"), 0);
    assert_int_equal(nas_config_key_defining("no.such.key"), 0);
    char *stored = canon_of("experiment = \"e\"; seed = 5; search = { trials = 20; };");
    nas_config c;
    char out[1024];
    /* the budget and the workers are running settings */
    parse_ok("experiment = \"e\"; seed = 5; search = { trials = 30; }; workers = { count = 2; };",
             &c);
    assert_int_equal(nas_config_diff(stored, &c, 1, out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(nas_config_diff(stored, &c, 0, out, sizeof out), 2);
    assert_non_null(strstr(out, "  search.trials: 20 -> 30\n"));
    assert_non_null(strstr(out, "  workers.count: 1 -> 2\n"));
    /* defining ones are listed old -> new */
    parse_ok("experiment = \"e\"; seed = 6; proxy = { lr = 0.1; }; search = { trials = 20; };", &c);
    assert_int_equal(nas_config_diff(stored, &c, 1, out, sizeof out), 2);
    assert_non_null(strstr(out, "  seed: 5 -> 6\n"));
    assert_non_null(strstr(out, "  proxy.lr: 0.05 -> 0.1\n"));
    /* a key the stored text lacks (added later) counts as its default; a key
     * it has that this nas does not know is ignored (the texts name
     * proxy.bn_recalibrate, whose default changed: a text without it had 0,
     * tests/unit/test_config_split.c) */
    parse_ok("experiment = \"e\"; seed = 5;", &c);
    assert_int_equal(nas_config_diff("seed = 5;\nold.removed = 1;\nproxy.bn_recalibrate = 10;\n",
                                     &c, 1, out, sizeof out), 0);
    parse_ok("experiment = \"e\"; seed = 5; search = { population = 12; };", &c);
    assert_int_equal(nas_config_diff("seed = 5;\nproxy.bn_recalibrate = 10;\n", &c, 1, out,
                                     sizeof out), 1);
    assert_string_equal(out, "  search.population: 10 -> 12\n");
    free(stored);
}

/* A cell space trained at the data's shape (evaluator "train" or
 * "supernet"): its space.input and space.classes shaped no network, so an
 * experiment an older nas stored with ones that contradict the data (nas
 * run refuses them now) resumes when they are left out: a running change.
 * Defining for a table or zero-cost search (they count MACs and parameters
 * at them) and a chain space. */
static void test_cell_input_diff(void **state)
{
    (void)state;
    static const char *const base = "experiment = \"e\"; seed = 5; ";
    char text[512], out[1024];
    nas_config c;
    snprintf(text, sizeof text, "%sspace = { classes = 10; input = [3, 32, 32]; };", base);
    char *stored = canon_of(text);
    assert_non_null(strstr(stored, "space.classes = 10;"));
    parse_ok("experiment = \"e\"; seed = 5;", &c);
    assert_int_equal(nas_config_diff(stored, &c, 1, out, sizeof out), 0);
    assert_int_equal(nas_config_diff(stored, &c, 0, out, sizeof out), 2);
    assert_non_null(strstr(out, "  space.classes: 10 -> (not set: the data's)\n"));
    assert_non_null(strstr(out, "  space.input: [3, 32, 32] -> (not set: the data's)\n"));
    free(stored);
    static const char *const sn = "evaluator = { kind = \"supernet\"; };";
    snprintf(text, sizeof text, "%sspace = { classes = 10; input = [3, 32, 32]; }; %s", base, sn);
    stored = canon_of(text);
    snprintf(text, sizeof text, "%s%s", base, sn);
    parse_ok(text, &c);
    assert_int_equal(nas_config_diff(stored, &c, 1, out, sizeof out), 0);
    assert_int_equal(nas_config_diff(stored, &c, 0, out, sizeof out), 2);
    free(stored);
    /* a table search, zero-cost proxies: counted at space.input */
    static const char *const table = "evaluator = { kind = \"table\"; table = \"t.csv\"; };";
    snprintf(text, sizeof text, "%sspace = { classes = 10; }; %s", base, table);
    stored = canon_of(text);
    snprintf(text, sizeof text, "%s%s", base, table);
    parse_ok(text, &c);
    assert_int_equal(nas_config_diff(stored, &c, 1, out, sizeof out), 1);
    assert_string_equal(out, "  space.classes: 10 -> (not set: the data's)\n");
    assert_int_equal(nas_config_diff(stored, &c, 0, out, sizeof out), 0);
    free(stored);
    for (int i = 0; i < 2; i++) {
        static const char *const proxy[2] = {"synflow", "naswot"};
        snprintf(text, sizeof text, "%sspace = { classes = 10; }; evaluator = { kind = "
                 "\"zero-cost\"; proxy = \"%s\"; };", base, proxy[i]);
        stored = canon_of(text);
        snprintf(text, sizeof text, "%sevaluator = { kind = \"zero-cost\"; proxy = \"%s\"; };",
                 base, proxy[i]);
        parse_ok(text, &c);
        assert_int_equal(nas_config_diff(stored, &c, 1, out, sizeof out), 1);
        free(stored);
    }
}

static void test_docs_cover_every_key(void **state)
{
    (void)state;
    FILE *f = fopen(NAS_SOURCE_DIR "/docs/space-conf.md", "r");
    assert_non_null(f);
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);
    nas_config c;
    nas_config_defaults(&c);
    snprintf(c.experiment, sizeof c.experiment, "(file name)");
    char *canon = nas_config_canonical(&c);
    assert_non_null(canon);
    for (char *line = strtok(canon, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strstr(line, " = ");
        assert_non_null(eq);
        *eq = '\0';
        char *value = eq + 3;
        value[strlen(value) - 1] = '\0'; /* drop ';' */
        char needle[256];
        snprintf(needle, sizeof needle, "| `%s` |", line);
        const char *row = strstr(doc, needle);
        if (!row)
            fail_msg("docs/space-conf.md has no row for `%s`", line);
        const char *end = strchr(row, '\n');
        assert_non_null(end);
        char rowbuf[2048];
        snprintf(rowbuf, sizeof rowbuf, "%.*s", (int)(end - row), row);
        if (strcmp(line, "experiment") != 0 && !strstr(rowbuf, value))
            fail_msg("docs row for `%s` does not show its default %s:\n%s", line, value, rowbuf);
    }
    free(canon);
}

/* issue 22: proxy.keep_weights is three-valued (not set = keep the best
 * proxy.keep_top within proxy.weights_mb); keep_top and weights_mb are
 * storage policy, left out of the canonical text, and an unset
 * keep_weights prints as the old default (false): experiments started
 * before these keys existed keep their identity. */
static void test_weights_policy(void **state)
{
    (void)state;
    nas_config c;
    parse_ok("seed = 3;", &c);
    assert_int_equal(c.proxy.keep_weights, -1);
    assert_int_equal(c.proxy.keep_top, 5);
    assert_true(c.proxy.weights_mb == 100.0);
    parse_ok("proxy = { keep_weights = false; };", &c);
    assert_int_equal(c.proxy.keep_weights, 0);
    parse_ok("proxy = { keep_weights = true; keep_top = 0; weights_mb = 2.5; };", &c);
    assert_int_equal(c.proxy.keep_weights, 1);
    assert_int_equal(c.proxy.keep_top, 0);
    assert_true(c.proxy.weights_mb == 2.5);
    char *a = canon_of("seed = 3;");
    char *b = canon_of("seed = 3; proxy = { keep_top = 9; weights_mb = 1; };");
    char *old = canon_of("seed = 3; proxy = { keep_weights = false; };");
    assert_string_equal(a, b);
    assert_string_equal(a, old);
    assert_non_null(strstr(a, "proxy.keep_weights = false;\n"));
    assert_null(strstr(a, "keep_top"));
    assert_null(strstr(a, "weights_mb"));
    free(a);
    free(b);
    free(old);
    nas_error err = {0};
    assert_int_equal(nas_config_parse_string("proxy = { keep_top = -1; };", "t.conf", &c, &err),
                     NAS_ECONFIG);
    assert_non_null(strstr(err.msg, "t.conf:1: proxy.keep_top = -1 is out of range"));
    FILE *f = fopen(NAS_SOURCE_DIR "/docs/space-conf.md", "r");
    assert_non_null(f);
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);
    assert_non_null(strstr(doc, "| `proxy.keep_top` | integer | 5 |"));
    assert_non_null(strstr(doc, "| `proxy.weights_mb` | float | 100 |"));
}

/* Issue 18, docs/space-conf.md "Limits": a config text longer than
 * NAS_CONFIG_MAX_BYTES (string or file) is refused before libconfig reads
 * it (libconfig's string scanner is quadratic: 4 MiB took 22 s); a text at
 * the limit parses; nesting too deep for libconfig's parser says so. */
static void test_limits(void **state)
{
    (void)state;
    static const char head[] = "experiment = \"limits\";\n";
    size_t n = NAS_CONFIG_MAX_BYTES;
    char *text = malloc(n + 2);
    assert_non_null(text);
    memcpy(text, head, sizeof head - 1);
    memset(text + sizeof head - 1, ' ', n - (sizeof head - 1) - 1);
    text[n - 1] = '\n';
    text[n] = '\0';
    nas_config c;
    nas_error err;
    if (nas_config_parse_string(text, "atlimit.conf", &c, &err) != NAS_OK)
        fail_msg("a config of exactly %zu bytes: %s", n, err.msg);
    /* one byte more, as a string and as a file */
    text[n] = '\n';
    text[n + 1] = '\0';
    assert_int_equal(nas_config_parse_string(text, "long.conf", &c, &err), NAS_ECONFIG);
    print_message("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "long.conf"));
    assert_non_null(strstr(err.msg, "262144"));
    char path[] = "/tmp/nas_test_config_long_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n + 1, f), n + 1);
    fclose(f);
    assert_int_equal(nas_config_load(path, &c, &err), NAS_ECONFIG);
    print_message("%s\n", err.msg);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "262144"));
    unlink(path);
    /* 5000 nested groups: libconfig's parser stack overflows */
    size_t k = 0;
    k += (size_t)sprintf(text + k, "%s", head);
    for (int d = 0; d < 5000; d++)
        k += (size_t)sprintf(text + k, "a: {");
    k += (size_t)sprintf(text + k, "b = 1;");
    for (int d = 0; d < 5000; d++)
        k += (size_t)sprintf(text + k, "};");
    assert_int_equal(nas_config_parse_string(text, "deep.conf", &c, &err), NAS_ECONFIG);
    print_message("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "deep.conf:2: "));
    assert_non_null(strstr(err.msg, "nested too deeply"));
    free(text);
}

/* Issue 17: search.fidelity parses, its errors name file:line, and an old
 * config's stored settings read back as scheduler "none" (no difference). */
static void expect_fidelity_error(const char *text, const char *want)
{
    nas_config c;
    nas_error err = {0};
    assert_int_equal(nas_config_parse_string(text, "f.conf", &c, &err), NAS_ECONFIG);
    if (!strstr(err.msg, want))
        fail_msg("'%s': got '%s', expected '%s'", text, err.msg, want);
}

/* Issue 32: the supernet group - defaults, values, which keys are
 * defining, canonical text, and the refusals of kind "supernet". */
static void test_supernet_group(void **state)
{
    (void)state;
    nas_config c;
    parse_ok("seed = 1;", &c);
    assert_int_equal(c.supernet.epochs, 20);
    assert_int_equal(c.supernet.recal_batches, 4);
    assert_int_equal(c.supernet.valid, 1000);
    assert_int_equal(c.supernet.retrain_top, 5);
    assert_int_equal(c.supernet.batch_size, 0);
    parse_ok("evaluator = { kind = \"supernet\"; };\n"
             "supernet = { epochs = 7; batch_size = 32; lr = 0.2; recal_batches = 0; valid = 0; "
             "retrain_top = 0; };", &c);
    assert_int_equal(c.evaluator.kind, NAS_EVALUATOR_SUPERNET);
    assert_int_equal(c.supernet.epochs, 7);
    assert_int_equal(c.supernet.batch_size, 32);
    assert_true(c.supernet.lr == 0.2);
    assert_int_equal(c.supernet.retrain_top, 0);
    assert_int_equal(nas_config_key_defining("supernet.epochs"), 1);
    assert_int_equal(nas_config_key_defining("supernet.valid"), 1);
    assert_int_equal(nas_config_key_defining("supernet.retrain_top"), 0);
    char *canon = canon_of("supernet = { epochs = 9; retrain_top = 3; };");
    assert_non_null(strstr(canon, "supernet.epochs = 9;\n"));
    assert_null(strstr(canon, "retrain_top")); /* running: not part of the identity */
    free(canon);
    expect_fidelity_error("supernet = {\n retrain_top = 33; };",
                          "f.conf:2: supernet.retrain_top = 33 is out of range");
    expect_fidelity_error("evaluator = { kind = \"supernet\"; };\n"
                          "objectives = (\n { metric = \"latency_ms\"; goal = \"min\"; } );",
                          "f.conf:2: objective \"latency_ms\" needs a measured latency, but "
                          "evaluator.kind = \"supernet\" measures none");
    expect_fidelity_error("evaluator = { kind = \"supernet\"; };\n"
                          "proxy = {\n lr = [0.05, 0.1]; };",
                          "f.conf:3: proxy.lr is a list of choices, but evaluator.kind = "
                          "\"supernet\"");
    expect_fidelity_error("evaluator = { kind = \"supernet\"; };\n"
                          "search = { fidelity = {\n scheduler = \"sh\"; }; };",
                          "f.conf:3: search.fidelity.scheduler = \"sh\" needs evaluator.kind");
}

static void test_fidelity(void **state)
{
    (void)state;
    nas_config c;
    parse_ok("seed = 1;", &c);
    assert_int_equal(c.search.fidelity.scheduler, NAS_FIDELITY_NONE);
    assert_int_equal(c.search.fidelity.resource, NAS_FIDELITY_EPOCHS);
    assert_int_equal(c.search.fidelity.eta, 3);
    parse_ok("search = { fidelity = { resource = \"images\"; min = 1000; max = 27000; "
             "scheduler = \"asha\"; }; };", &c);
    assert_int_equal(c.search.fidelity.resource, NAS_FIDELITY_IMAGES);
    assert_int_equal(c.search.fidelity.min, 1000);
    assert_int_equal(c.search.fidelity.max, 27000);
    assert_int_equal(c.search.fidelity.scheduler, NAS_FIDELITY_ASHA);
    parse_ok("search = { fidelity = { min = 1; max = 27; eta = 3; scheduler = \"hyperband\"; }; };",
             &c);
    assert_int_equal(c.search.fidelity.scheduler, NAS_FIDELITY_HYPERBAND);
    expect_fidelity_error("search = {\n fidelity = {\n scheduler = \"bohb\"; }; };",
                          "f.conf:3: search.fidelity.scheduler");
    expect_fidelity_error("search = {\n fidelity = {\n min = 3;\n max = 8;\n scheduler = \"sh\"; }; };",
                          "f.conf:4: search.fidelity.max = 8 is less than min x eta = 9");
    expect_fidelity_error("search = { fidelity = {\n eta = 1; }; };", "f.conf:2: search.fidelity.eta = 1");
    expect_fidelity_error("search = { fidelity = { bogus = 1; }; };", "unknown key 'bogus'");
    expect_fidelity_error("evaluator = { kind = \"table\"; table = \"t.csv\"; };\n"
                          "search = { fidelity = {\n scheduler = \"sh\"; }; };",
                          "f.conf:3: search.fidelity.scheduler = \"sh\" needs evaluator.kind");
    /* a table measures no latency: an objective on it is refused (a
     * constraint is accepted as before: `nas run` says it is not applied) */
    expect_fidelity_error("evaluator = { kind = \"table\"; table = \"t.csv\"; };\n"
                          "objectives = (\n { metric = \"val_accuracy\"; goal = \"max\"; },\n"
                          " { metric = \"latency_ms\"; goal = \"min\"; } );",
                          "f.conf:2: objective \"latency_ms\" needs a measured latency");
    parse_ok("evaluator = { kind = \"table\"; table = \"t.csv\"; };\n"
             "objectives = ( { metric = \"val_accuracy\"; goal = \"max\"; },"
             " { metric = \"params\"; goal = \"min\"; } );\n"
             "constraints = { latency_ms = 5.0; };", &c);
    /* none ignores min/max: the same bounds are no error */
    parse_ok("search = { fidelity = { min = 3; max = 8; }; };", &c);
    /* a stored canonical text from before issue 17 has no fidelity keys:
     * they count as their defaults, so an old experiment resumes */
    char *canon = canon_of("seed = 5;");
    assert_non_null(strstr(canon, "search.fidelity.scheduler = \"none\";\n"));
    char *old = strdup(canon), *w = old;
    for (char *line = canon; *line;) { /* drop the fidelity lines */
        char *e = strchr(line, '\n');
        size_t n = e ? (size_t)(e - line + 1) : strlen(line);
        if (strncmp(line, "search.fidelity.", 16) != 0) {
            memcpy(w, line, n);
            w += n;
        }
        line += n;
    }
    *w = '\0';
    parse_ok("seed = 5;", &c);
    char out[512];
    assert_int_equal(nas_config_diff(old, &c, 1, out, sizeof out), 0);
    parse_ok("seed = 5; search = { fidelity = { scheduler = \"sh\"; }; };", &c);
    assert_int_equal(nas_config_diff(old, &c, 1, out, sizeof out), 1);
    assert_string_equal(out, "  search.fidelity.scheduler: \"none\" -> \"sh\"\n");
    free(old);
    free(canon);
}

/* Issue 33: search.time_limit, a running setting: seconds as a number or
 * a string with a unit; bad durations fail at their line. */
static void test_time_limit(void **state)
{
    (void)state;
    nas_config c;
    parse_ok("seed = 5;", &c);
    assert_true(c.search.time_limit == 0);
    static const struct { const char *text; double s; } good[] = {
        {"90", 90}, {"1.5", 1.5}, {"\"30m\"", 1800}, {"\"2h\"", 7200}, {"\"45s\"", 45},
        {"\"1d\"", 86400}, {"\"0\"", 0}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "search = { time_limit = %s; };", good[i].text);
        parse_ok(text, &c);
        if (c.search.time_limit != good[i].s)
            fail_msg("%s: %g seconds", good[i].text, c.search.time_limit);
    }
    static const char *const bad[] = {"\"30x\"", "\"\"", "\"m\"", "\"10 s\"", "-1", "\"-5m\"",
                                      "true", "\"inf\"", "2e9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "seed = 1;\nsearch = {\n  time_limit = %s;\n};", bad[i]);
        nas_error err = {0};
        assert_int_equal(nas_config_parse_string(text, "t.conf", &c, &err), NAS_ECONFIG);
        if (!strstr(err.msg, "t.conf:3: search.time_limit"))
            fail_msg("%s: %s", bad[i], err.msg);
    }
    assert_int_equal(nas_config_key_defining("search.time_limit"), 0);
    char *stored = canon_of("seed = 5; search = { time_limit = 10; };");
    parse_ok("seed = 5; search = { time_limit = \"1h\"; };", &c);
    char out[512];
    assert_int_equal(nas_config_diff(stored, &c, 1, out, sizeof out), 0);
    assert_int_equal(nas_config_diff(stored, &c, 0, out, sizeof out), 1);
    assert_string_equal(out, "  search.time_limit: 10.0 -> 3600.0\n");
    free(stored);
}

/* Issue 33: search.enqueue, a defining setting: genotypes of the space (its
 * own parser, cell and chain), kept in canonical form; a bad one fails at
 * its own line; an old experiment without the key has none. */
static void test_enqueue(void **state)
{
    (void)state;
    nas_config c;
    const char *g1 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|"
                     "nor_conv_3x3~1|nor_conv_3x3~2|";
    char text[1024];
    snprintf(text, sizeof text, "seed = 5; search = { enqueue = [\"%s\", \"%s\"]; };", g1, g1);
    parse_ok(text, &c);
    assert_int_equal(c.search.n_enqueue, 2);
    assert_string_equal(c.search.enqueue[0], g1);
    char *canon = nas_config_canonical(&c);
    assert_non_null(canon);
    char want[700];
    snprintf(want, sizeof want, "search.enqueue = [\"%s\", \"%s\"];\n", g1, g1);
    assert_non_null(strstr(canon, want));
    assert_int_equal(nas_config_key_defining("search.enqueue"), 1);
    char out[2048];
    const char *before = "seed = 5;\nproxy.bn_recalibrate = 10;\n"; /* made before enqueue */
    assert_int_equal(nas_config_diff(before, &c, 1, out, sizeof out), 1);
    assert_non_null(strstr(out, "  search.enqueue: [] -> [\""));
    assert_int_equal(nas_config_diff(canon, &c, 1, out, sizeof out), 0);
    parse_ok("seed = 5;", &c);
    assert_int_equal(c.search.n_enqueue, 0);
    assert_int_equal(nas_config_diff(before, &c, 1, out, sizeof out), 0);
    free(canon);
    /* an op the space does not allow, a malformed string, a cell without a
     * path to the output: at the entry's line */
    static const char *const bad[] = {
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|avg_pool_3x3~2|",
        "|conv9x9~0|",
        "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text,
                 "seed = 1;\nspace = { ops = [\"none\", \"skip_connect\", \"nor_conv_3x3\"]; };\n"
                 "search = {\n  enqueue = [\n    \"%s\",\n    \"%s\" ];\n};", g1, bad[i]);
        nas_error err = {0};
        assert_int_equal(nas_config_parse_string(text, "t.conf", &c, &err), NAS_ECONFIG);
        if (!strstr(err.msg, "t.conf:6: search.enqueue[1] = \""))
            fail_msg("%s: %s", bad[i], err.msg);
    }
    nas_error err = {0};
    assert_int_equal(nas_config_parse_string("search = { enqueue = [1]; };", "t.conf", &c, &err),
                     NAS_ECONFIG);
    assert_non_null(strstr(err.msg, "t.conf:1: search.enqueue[0] is an integer"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_good_full),
        cmocka_unit_test(test_good_minimal),
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_include_paths),
        cmocka_unit_test(test_string_errors),
        cmocka_unit_test(test_accepts),
        cmocka_unit_test(test_data_format_canonical),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_defining_diff),
        cmocka_unit_test(test_docs_cover_every_key),
        cmocka_unit_test(test_weights_policy),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_fidelity),
        cmocka_unit_test(test_supernet_group),
        cmocka_unit_test(test_time_limit),
        cmocka_unit_test(test_enqueue),
        cmocka_unit_test(test_cell_input_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
