/*
 * tests/unit/test_chain.c - chain spaces (issue 14): decisions and the
 * token interface, genotype string round trips, the canonical key's rules
 * (checked against the lowered networks: equal keys exactly when the layer
 * descriptions are equal), distinct-key counts by formula against
 * brute-force enumeration, counts past 2^63, one-decision mutation, and
 * nas_space_report called without the CLI.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include "nas/inspect.h"
#include "nas/layers.h"
#include "tests/unit/chain_space.h"

static void key_of(const nas_space *s, const char *str, char *buf)
{
    nas_genotype g = space_parse(s, str);
    nas_space_key(s, &g, buf, NAS_GENOTYPE_STR_MAX);
}

/* The lowered network as text: every layer's kind, shapes and attributes
 * (names and chain positions left out: they say where, not what). */
static char *net_text(const nas_space *s, const nas_genotype *g)
{
    nas_layers l;
    assert_int_equal(nas_space_layers(s, g, &l, NULL), NAS_OK);
    size_t cap = 64 + (size_t)l.n * 96, len = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    t[0] = '\0';
    for (int i = 0; i < l.n; i++) {
        const nas_layer *y = &l.l[i];
        len += (size_t)snprintf(t + len, cap - len, "%d:%d:%d,%d,%d>%d,%d,%d:k%d s%d g%d b%d a%d m%d r%d;",
                                y->kind, y->src, y->in_c, y->in_h, y->in_w, y->out_c, y->out_h, y->out_w,
                                y->kernel, y->stride, y->groups, y->bias, y->act, y->mid, y->src2);
    }
    nas_layers_free(&l);
    return t;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Keys are equal exactly when the lowered networks are equal, and the
 * formula counts the distinct ones. */
static void check_keys_against_networks(const char *rel, uint64_t want)
{
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load(rel, cfg);
    nas_space_counts cnt;
    assert_int_equal(nas_space_counts_get(s, &cnt), NAS_OK);
    assert_true(cnt.size_exact && cnt.keys_exact && cnt.keys_counted);
    size_t n = (size_t)cnt.size;
    char **pairs = malloc(n * sizeof *pairs);
    for (size_t i = 0; i < n; i++) {
        nas_genotype g;
        nas_space_genotype_at(s, i, &g);
        assert_true(nas_space_is_valid(s, &g));
        char key[NAS_GENOTYPE_STR_MAX];
        nas_space_key(s, &g, key, sizeof key);
        char *net = net_text(s, &g);
        size_t len = strlen(key) + strlen(net) + 2;
        pairs[i] = malloc(len);
        snprintf(pairs[i], len, "%s\t%s", net, key);
        free(net);
    }
    qsort(pairs, n, sizeof *pairs, cmp_str);
    uint64_t nets = 0;
    for (size_t i = 0; i < n; i++) {
        char *tab = strchr(pairs[i], '\t');
        if (i > 0) {
            char *ptab = strchr(pairs[i - 1], '\t');
            int same_net = (size_t)(tab - pairs[i]) == (size_t)(ptab - pairs[i - 1]) &&
                           strncmp(pairs[i], pairs[i - 1], (size_t)(tab - pairs[i])) == 0;
            int same_key = strcmp(tab, ptab) == 0;
            if (same_net != same_key)
                fail_msg("key and network disagree:\n%s\n%s", pairs[i - 1], pairs[i]);
            if (same_net)
                continue;
        }
        nets++;
    }
    uint64_t distinct = 0, valid = 0;
    assert_int_equal(nas_space_enumerate_keys(s, n, &distinct, &valid), NAS_OK);
    assert_int_equal(valid, n);
    assert_int_equal(nets, want);
    assert_int_equal(distinct, want);
    assert_int_equal(cnt.keys, want);
    for (size_t i = 0; i < n; i++)
        free(pairs[i]);
    free(pairs);
    nas_space_destroy(s);
    free(cfg);
}

static void test_keys_small(void **st)
{
    (void)st;
    /* stage 1 (keeps the shape): sequences over {mb3_k3, conv_k3} of length
     * 0..3 = 15; stage 2 (stride 2): 3 first ops x (1 + 2 + 4) = 21 */
    check_keys_against_networks("tests/data/conf/chain_small.conf", 15 * 21);
}

static void test_keys_mixed(void **st)
{
    (void)st;
    check_keys_against_networks("tests/data/conf/chain_mixed.conf", 15552);
}

static void test_key_rules(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load("examples/spaces/fashion-chain.conf", cfg);
    char a[NAS_GENOTYPE_STR_MAX], b[NAS_GENOTYPE_STR_MAX];
    /* layers beyond the chosen depth do not matter */
    key_of(s, "mb1_k3|c16:d1:mb3_k3:mb3_k3|c32:d2:se_off:mb3_k3:mb3_k3:mb3_k5|mb3_k3:mb6_k3", a);
    key_of(s, "mb1_k3|c16:d1:mb3_k3:skip|c32:d2:se_off:mb3_k3:mb3_k3:mb6_k5|mb3_k3:mb6_k3", b);
    assert_string_equal(a, b);
    /* an identity skip's position within its stage does not matter */
    key_of(s, "mb1_k3|c16:d2:mb3_k3:skip|c32:d3:se_off:mb3_k3:skip:mb3_k5|mb3_k3:zero", a);
    key_of(s, "mb1_k3|c16:d1:mb3_k3:mb6_k3|c32:d3:se_off:mb3_k3:mb3_k5:skip|mb3_k3:zero", b);
    assert_string_equal(a, b);
    /* ... and depth 3 ending in skip is depth 2 */
    key_of(s, "mb1_k3|c16:d1:mb3_k3:mb6_k3|c32:d2:se_off:mb3_k3:mb3_k5:mb6_k5|mb3_k3:zero", b);
    assert_string_equal(a, b);
    /* a skip that changes the shape is a projection, not a no-op */
    key_of(s, "mb1_k3|c16:d2:skip:mb3_k3|c32:d2:se_off:mb3_k3:mb3_k5:mb6_k5|mb3_k3:zero", a);
    key_of(s, "mb1_k3|c16:d1:mb3_k3:mb3_k3|c32:d2:se_off:mb3_k3:mb3_k5:mb6_k5|mb3_k3:zero", b);
    assert_string_not_equal(a, b);
    /* nothing else: order of different ops, widths, SE with MBConv */
    key_of(s, "mb1_k3|c16:d2:mb3_k3:mb6_k3|c32:d2:se_off:mb3_k3:mb3_k5:mb6_k5|mb3_k3:zero", a);
    key_of(s, "mb1_k3|c16:d2:mb6_k3:mb3_k3|c32:d2:se_off:mb3_k3:mb3_k5:mb6_k5|mb3_k3:zero", b);
    assert_string_not_equal(a, b);
    key_of(s, "mb1_k3|c24:d2:mb3_k3:mb6_k3|c32:d2:se_off:mb3_k3:mb3_k5:mb6_k5|mb3_k3:zero", b);
    assert_string_not_equal(a, b);
    key_of(s, "mb1_k3|c16:d2:mb3_k3:mb6_k3|c32:d2:se_on:mb3_k3:mb3_k5:mb6_k5|mb3_k3:zero", b);
    assert_string_not_equal(a, b);
    /* the SE switch does not matter when no MBConv runs in its stage */
    key_of(s, "mb1_k3|c16:d2:mb3_k3:mb6_k3|c32:d2:se_off:skip:skip:mb6_k5|mb3_k3:zero", a);
    key_of(s, "mb1_k3|c16:d2:mb3_k3:mb6_k3|c32:d2:se_on:skip:skip:mb6_k5|mb3_k3:zero", b);
    assert_string_equal(a, b); /* the projection skip at layer 0 is no MBConv: SE plays no part */
    nas_space_destroy(s);
    free(cfg);
}

static void test_strings_and_tokens(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load("examples/spaces/fashion-chain.conf", cfg);
    assert_int_equal(nas_space_seq_len(s), 13);
    assert_true(nas_space_vocab_size(s) <= 255);
    for (int i = 0; i < nas_space_seq_len(s); i++) {
        int n = 0;
        for (int t = 0; t < nas_space_vocab_size(s); t++)
            n += nas_space_token_allowed(s, i, t);
        assert_int_equal(n, nas_space_decision_choices(s, i));
    }
    char name[64];
    assert_string_equal(nas_space_decision_name(s, 2, name, sizeof name), "s2.depth");
    nas_rng r;
    nas_rng_seed(&r, 1, 1);
    for (int k = 0; k < 500; k++) {
        nas_genotype g, back, child;
        nas_space_sample(s, &r, &g);
        char buf[NAS_GENOTYPE_STR_MAX], buf2[NAS_GENOTYPE_STR_MAX];
        assert_int_equal(nas_space_format(s, &g, buf, sizeof buf), NAS_OK);
        back = space_parse(s, buf);
        assert_int_equal(back.len, g.len);
        assert_memory_equal(back.tok, g.tok, (size_t)g.len);
        nas_space_mutate(s, &r, &g, &child);
        int diff = 0;
        for (int i = 0; i < g.len; i++)
            diff += child.tok[i] != g.tok[i];
        assert_int_equal(diff, 1); /* a mutation changes one decision */
        assert_true(nas_space_is_valid(s, &child));
        nas_space_format(s, &child, buf2, sizeof buf2);
        assert_string_not_equal(buf, buf2);
        /* the counter agrees with the layer description */
        int64_t m1, p1, m2, p2;
        nas_layers l;
        assert_int_equal(nas_count_genotype(NULL, s, &g, &m1, &p1), NAS_OK);
        assert_int_equal(nas_space_layers(s, &g, &l, NULL), NAS_OK);
        nas_count_layers(&l, &m2, &p2);
        nas_layers_free(&l);
        assert_true(m1 == m2 && p1 == p2 && m1 > 0 && p1 > 0);
    }
    nas_genotype g;
    nas_error err;
    static const char *const bad[] = {
        "mb1_k3|c16:d1:mb3_k3:skip",                                             /* too few stages */
        "mb1_k3|c16:d1:mb3_k3:skip|c32:d2:se_off:mb3_k3:mb3_k3:mb3_k5|mb3_k3",  /* too few tokens */
        "mb1_k3|c20:d1:mb3_k3:skip|c32:d2:se_off:mb3_k3:mb3_k3:mb3_k5|mb3_k3:zero", /* no such width */
        "mb1_k3|c16:d1:mb3_k3:zero|c32:d2:se_off:mb3_k3:mb3_k3:mb3_k5|mb3_k3:zero", /* zero not here */
        "mb1_k3|c16:d1:mb3_k3:skip|c32:d2:se_off:mb3_k3:mb3_k3:mb3_k5|mb3_k3:zero|x",
        "mb1_k3|c16:d1:mb3_k3:skip|c32:d2:se_off:mb3_k3:mb3_k3:mb3_k5:skip|mb3_k3:zero",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(nas_space_parse(s, bad[i], &g, &err), NAS_EFORMAT);
    nas_space_destroy(s);
    free(cfg);
}

static void test_counts_past_2_63(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load("examples/spaces/ofa-mbv3.conf", cfg);
    nas_space_counts c;
    assert_int_equal(nas_space_counts_get(s, &c), NAS_OK);
    assert_int_equal(c.size_exact, 0);
    assert_true(c.size == NAS_SPACE_COUNT_CAP);
    assert_int_equal(c.keys_exact, 0);
    /* 3 x 9^4 per stage, 5 stages; keys: (9^2 + 9^3 + 9^4)^5 */
    assert_true(fabs(c.log10_size - 5 * log10(3.0 * 6561)) < 1e-9);
    assert_true(fabs(c.log10_keys - 5 * log10(81.0 + 729 + 6561)) < 1e-9);
    assert_true(nas_space_size(s) == NAS_SPACE_COUNT_CAP);
    uint64_t d;
    assert_int_equal(nas_space_enumerate_keys(s, 1000, &d, NULL), NAS_EUNSUPPORTED);
    nas_space_destroy(s);
    s = space_load("examples/spaces/proxyless.conf", cfg);
    assert_int_equal(nas_space_counts_get(s, &c), NAS_OK);
    assert_true(c.size_exact && c.size == UINT64_C(221502229807900608)); /* 6^6 x 7^15 */
    nas_space_destroy(s);
    free(cfg);
}

static void test_report_without_cli(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load("tests/data/conf/chain_small.conf", cfg);
    nas_space_destroy(s);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    nas_space_report_opts o = {.samples = 2, .seed = 1, .enumerate_max = 1000};
    nas_error err;
    assert_int_equal(nas_space_report(f, cfg, &o, &err), NAS_OK);
    fclose(f);
    assert_non_null(strstr(text, "decisions  6\n"));
    assert_non_null(strstr(text, "genotypes  729\n"));
    assert_non_null(strstr(text, "keys       315 distinct (by formula); 315 by enumerating"));
    free(text);
    f = open_memstream(&text, &len);
    o.genotype = "skip:skip:skip|skip:skip:skip";
    assert_int_equal(nas_space_report(f, cfg, &o, &err), NAS_OK);
    fclose(f);
    /* stem 3x3 1->8 on 28x28, BN; projection 8->16 stride 2 on 14x14, BN; linear 16->10 */
    int64_t macs = 9 * 8 * 784 + 8 * 16 * 196 + 160, params = 72 + 16 + 128 + 32 + 170;
    char want[128];
    snprintf(want, sizeof want, "MACs     %lld ", (long long)macs);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof want, "params   %lld\n", (long long)params);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "key      |skip\n"));
    free(text);
    f = open_memstream(&text, &len);
    o.genotype = "skip:skip:skip|skip:skip";
    assert_int_equal(nas_space_report(f, cfg, &o, &err), NAS_EFORMAT);
    fclose(f);
    free(text);
    free(cfg);
}

/* The canonical text of a chain space reads back to the same space (the
 * store keeps it; nas export re-parses it), and names no cell key. */
static void test_canonical(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg), *back = malloc(sizeof *back);
    nas_space_destroy(space_load("tests/data/conf/chain_mixed.conf", cfg));
    char *text = nas_config_canonical(cfg);
    assert_non_null(text);
    assert_non_null(strstr(text, "\nspace.type = \"chain\";\nspace.input = [3, 20, 20];\nspace.classes = 7;\n"));
    assert_non_null(strstr(text, "first_ops = [\"mb3_k5\", \"skip\"]; se = \"choice\";"));
    assert_null(strstr(text, "space.ops"));
    assert_null(strstr(text, "space.cells_per_stage"));
    /* the space lines as a space group */
    size_t cap = strlen(text) + 64, len = 0;
    char *conf = malloc(cap);
    len += (size_t)snprintf(conf, cap, "space: {\n");
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "space.", 6) == 0)
            len += (size_t)snprintf(conf + len, cap - len, "%s\n", line + 6);
    snprintf(conf + len, cap - len, "};\n");
    free(text);
    nas_error err;
    if (nas_config_parse_string(conf, "canonical", back, &err) != NAS_OK)
        fail_msg("%s\n%s", err.msg, conf);
    char *t1 = nas_config_canonical(cfg), *t2 = nas_config_canonical(back);
    char *s1 = strstr(t1, "space.type"), *s2 = strstr(t2, "space.type");
    *strstr(s1, "proxy.") = '\0';
    *strstr(s2, "proxy.") = '\0';
    assert_string_equal(s1, s2);
    free(t1);
    free(t2);
    free(conf);
    free(cfg);
    free(back);
}

/* Cell spaces answer the same questions (keys by enumeration). */
static void test_cell_space_counts(void **st)
{
    (void)st;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_load("examples/nb201-table.conf", cfg);
    nas_space_counts c;
    assert_int_equal(nas_space_counts_get(s, &c), NAS_OK);
    assert_true(c.size_exact && c.size == 15625 && c.keys_counted && c.keys_exact);
    uint64_t d = 0, valid = 0;
    assert_int_equal(nas_space_enumerate_keys(s, 15625, &d, &valid), NAS_OK);
    assert_int_equal(valid, 15284); /* test_space.c: valid cells */
    assert_true(d == c.keys && d > 0 && d < 6466);
    char name[32];
    assert_string_equal(nas_space_decision_name(s, 2, name, sizeof name), "edge 2<-1");
    assert_int_equal(nas_space_decision_choices(s, 0), 5);
    nas_space_destroy(s);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    nas_space_report_opts o = {.samples = 2, .seed = 1, .enumerate_max = 100000};
    nas_error err;
    assert_int_equal(nas_space_report(f, cfg, &o, &err), NAS_OK);
    fclose(f);
    assert_non_null(strstr(text, "genotypes  15625\n"));
    free(text);
    free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_small),
        cmocka_unit_test(test_keys_mixed),
        cmocka_unit_test(test_key_rules),
        cmocka_unit_test(test_strings_and_tokens),
        cmocka_unit_test(test_counts_past_2_63),
        cmocka_unit_test(test_report_without_cli),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_cell_space_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
