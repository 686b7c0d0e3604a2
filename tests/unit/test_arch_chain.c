/*
 * tests/unit/test_arch_chain.c - the architecture JSON of chain spaces
 * (issue 15, export/arch_chain.c, docs/export.md):
 *  - an old cell ARCH.json (version 1, written by nas before chain
 *    spaces: tests/data/arch/cell_v1.json) still loads, and written again
 *    it is byte for byte the same file;
 *  - a chain architecture written and read back has the same space (its
 *    canonical config text), genotype, input, classes and network (the
 *    same layers, the same parameter count); the file is version 2 and
 *    carries the space.conf text, the decisions and the layers;
 *  - refusals name the file and key: a layer list that no longer matches
 *    the genotype, a space.conf that does not parse, a genotype outside the
 *    space, an input shape other than the space's, a version from the
 *    future.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nas/evaluator.h"
#include "nas/export.h"
#include "nas/layers.h"
#include "nas/space.h"

#define SCRATCH_NAME "arch_chain"
#include "scratch_dir.h" /* g_dir */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Replace the first `from` in *s by `to` (reallocating). */
static void replace(char **s, const char *from, const char *to)
{
    char *p = strstr(*s, from);
    assert_non_null(p);
    size_t n = strlen(*s) - strlen(from) + strlen(to) + 1;
    char *o = malloc(n);
    assert_non_null(o);
    snprintf(o, n, "%.*s%s%s", (int)(p - *s), *s, to, p + strlen(from));
    free(*s);
    *s = o;
}

static int64_t params_of(const nas_arch *a)
{
    nas_space *sp = NULL;
    nas_error err;
    assert_int_equal(nas_arch_space(a, &sp, &err), NAS_OK);
    nas_net_desc d = a->net;
    d.space = !strcmp(a->space_type, "chain") ? sp : NULL;
    int64_t macs = -1, params = -1;
    assert_int_equal(nas_count_net(&d, &macs, &params, NULL, NULL), NAS_OK);
    nas_space_destroy(sp);
    return params;
}

static void test_old_cell_json_loads_unchanged(void **state)
{
    (void)state;
    char old[1024], again[512];
    snprintf(old, sizeof old, "%s/tests/data/arch/cell_v1.json", NAS_SOURCE_DIR);
    snprintf(again, sizeof again, "%s/again.json", g_dir);
    nas_arch *a = malloc(sizeof *a);
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_arch_read_json(old, a, &err), NAS_OK);
    assert_string_equal(a->space_type, "cell");
    assert_string_equal(a->genotype, "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|"
                                     "skip_connect~0|nor_conv_1x1~1|none~2|");
    assert_int_equal(a->net.genotype.len, NAS_CELL_EDGES);
    assert_int_equal(a->net.channels, 4);
    assert_int_equal(a->recipe.seed, 11);
    assert_int_equal(a->metrics.params, 11374);
    assert_int_equal(params_of(a), 11374);
    assert_int_equal(nas_arch_write_json(a, again, &err), NAS_OK);
    char *x = slurp(old), *y = slurp(again);
    assert_string_equal(x, y); /* still version 1, nothing added */
    free(x);
    free(y);
    free(a);
}

/* A chain architecture of tests/data/conf/chain_train.conf. */
static void chain_arch(nas_arch *a, const char *genotype)
{
    char conf[1024];
    snprintf(conf, sizeof conf, "%s/tests/data/conf/chain_train.conf", NAS_SOURCE_DIR);
    nas_config *cfg = malloc(sizeof *cfg);
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_config_load(conf, cfg, &err), NAS_OK);
    nas_arch_init(a);
    snprintf(a->space_type, sizeof a->space_type, "chain");
    a->space = cfg->space;
    a->recipe.seed = 9;
    snprintf(a->genotype, sizeof a->genotype, "%s", genotype);
    nas_space *sp = NULL;
    assert_int_equal(nas_arch_space(a, &sp, &err), NAS_OK);
    assert_int_equal(nas_space_parse(sp, genotype, &a->net.genotype, &err), NAS_OK);
    nas_space_input(sp, &a->net.in_c, &a->net.in_h, &a->net.in_w, &a->net.classes);
    a->data.norm.c = a->net.in_c;
    nas_space_destroy(sp);
    free(cfg);
}

static char *canonical_space(const nas_space_desc *d)
{
    nas_config *cfg = malloc(sizeof *cfg);
    nas_config_defaults(cfg);
    cfg->space = *d;
    char *s = nas_config_canonical(cfg);
    free(cfg);
    assert_non_null(s);
    return s;
}

static void test_chain_round_trip(void **state)
{
    (void)state;
    const char *g = "se_on:mb3_k5:mb3_k3|mb3_k3";
    char path[512];
    snprintf(path, sizeof path, "%s/chain.json", g_dir);
    nas_arch *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    chain_arch(a, g);
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_arch_write_json(a, path, &err), NAS_OK);
    char *text = slurp(path);
    assert_non_null(strstr(text, "\"version\": 2"));
    assert_non_null(strstr(text, "\"type\": \"chain\""));
    assert_non_null(strstr(text, "\"conf\": \"space: {\\n  type = \\\"chain\\\";"));
    assert_non_null(strstr(text, "\"s1.se\": \"se_on\""));
    assert_non_null(strstr(text, "\"name\": \"s1.l0.se\""));
    assert_non_null(strstr(text, "\"kind\": \"dwconv\""));
    free(text);
    assert_int_equal(nas_arch_read_json(path, b, &err), NAS_OK);
    assert_string_equal(b->space_type, "chain");
    assert_string_equal(b->genotype, g);
    assert_memory_equal(&b->net.genotype, &a->net.genotype, sizeof a->net.genotype);
    assert_int_equal(b->net.in_c, 1);
    assert_int_equal(b->net.in_h, 8);
    assert_int_equal(b->net.classes, 4);
    assert_int_equal(b->recipe.seed, 9);
    char *ca = canonical_space(&a->space), *cb = canonical_space(&b->space);
    assert_string_equal(ca, cb);
    free(ca);
    free(cb);
    assert_int_equal(params_of(b), params_of(a));
    assert_true(params_of(a) > 0);
    free(a);
    free(b);
}

/* Write the chain JSON, apply one edit, expect a refusal naming `key`. */
static void refused(const char *from, const char *to, const char *key)
{
    char path[512];
    snprintf(path, sizeof path, "%s/bad.json", g_dir);
    nas_arch *a = malloc(sizeof *a);
    chain_arch(a, "se_off:mb3_k3:mb3_k5|skip");
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_arch_write_json(a, path, &err), NAS_OK);
    char *text = slurp(path);
    replace(&text, from, to);
    spit(path, text);
    free(text);
    int rc = nas_arch_read_json(path, a, &err);
    if (rc != NAS_EFORMAT || !strstr(err.msg, key) || !strstr(err.msg, path))
        fail_msg("edit '%s' -> '%s': rc %d, message '%s' (expected key %s)", from, to, rc,
                 err.msg, key);
    free(a);
}

static void test_chain_refusals(void **state)
{
    (void)state;
    refused("\"name\": \"s1.l0.dw\"", "\"name\": \"s1.l0.renamed\"", "'network.layers': layer");
    refused("\"kind\": \"linear\"", "\"kind\": \"conv\"", "'network.layers'");
    refused("stride = 2; layers = 1;", "stride = 2; layers = 99;", "'space.conf'");
    refused("\"genotype\": \"se_off:mb3_k3:mb3_k5|skip\"", "\"genotype\": \"se_off:mb6_k7|skip\"",
            "'genotype'");
    refused("\"classes\": 4", "\"classes\": 10", "input.shape");
    refused("\"version\": 2", "\"version\": 3", "'version'");
    refused("\"conf\": \"space: {", "\"conf_gone\": \"space: {", "'space.conf'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_cell_json_loads_unchanged),
        cmocka_unit_test(test_chain_round_trip),
        cmocka_unit_test(test_chain_refusals),
    };
    return cmocka_run_group_tests(tests, scratch_dir_setup, scratch_dir_teardown);
}
