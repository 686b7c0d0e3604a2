/*
 * tests/unit/test_recipe.c - recipe choices (issue 33, item 7): a list for
 * proxy.lr, proxy.weight_decay, proxy.batch_size or data.augment is a
 * decision of the space. Parsing (lists, bad lists with FILE:LINE, a list
 * on a key that cannot be a choice, a table search refusing them), the
 * genotype string and canonical key (round trip, distinct keys, the old
 * strings unchanged without choices), counting, sampling and mutation
 * touching the recipe tokens, NAO's vocabulary and proposals, and the
 * values a trial trains with.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "nas/layers.h"
#include "nas/search.h"

static const char *const CELL = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|"
                                "nor_conv_1x1~1|nor_conv_3x3~2|";

/* cfg from text (must parse); its space made. */
static nas_space *space_of(const char *text, nas_config *cfg)
{
    nas_error err;
    int rc = nas_config_parse_string(text, "r.conf", cfg, &err);
    if (rc != NAS_OK)
        print_message("%s\n", err.msg);
    assert_int_equal(rc, NAS_OK);
    nas_space *s = NULL;
    rc = nas_space_create(&cfg->space, &s, &err);
    if (rc != NAS_OK)
        print_message("%s\n", err.msg);
    assert_int_equal(rc, NAS_OK);
    return s;
}

/* The parse error of text: its message must hold every one of the
 * NULL-terminated `want` strings. */
static void parse_fails(const char *text, ...)
{
    nas_config *cfg = malloc(sizeof *cfg);
    nas_error err;
    assert_int_equal(nas_config_parse_string(text, "r.conf", cfg, &err), NAS_ECONFIG);
    va_list ap;
    va_start(ap, text);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *)) {
        if (!strstr(err.msg, w))
            print_message("message '%s' lacks '%s'\n", err.msg, w);
        assert_non_null(strstr(err.msg, w));
    }
    va_end(ap);
    free(cfg);
}

static void test_parse_lists(void **state)
{
    (void)state;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_of("proxy = { lr = [0.05, 0.1, 0.2]; weight_decay = [0.0, 5e-4];\n"
                            "  batch_size = [64, 128]; };\n"
                            "data = { augment = [\"none\", \"flip,crop4\"]; };\n", cfg);
    const nas_recipe_choices *r = &cfg->space.recipe;
    assert_int_equal(r->n[NAS_RECIPE_LR], 3);
    assert_true(r->num[NAS_RECIPE_LR][2] == 0.2);
    assert_int_equal(r->n[NAS_RECIPE_WEIGHT_DECAY], 2);
    assert_int_equal(r->n[NAS_RECIPE_BATCH_SIZE], 2);
    assert_int_equal(r->n[NAS_RECIPE_AUGMENT], 2);
    assert_string_equal(r->augment[1], "crop4,flip"); /* canonical spelling */
    char *canon = nas_config_canonical(cfg);
    assert_non_null(strstr(canon, "proxy.lr = [0.05, 0.1, 0.2];\n"));
    assert_non_null(strstr(canon, "proxy.weight_decay = [0.0, 0.0005];\n"));
    assert_non_null(strstr(canon, "proxy.batch_size = [64, 128];\n"));
    assert_non_null(strstr(canon, "data.augment = [\"none\", \"crop4,flip\"];\n"));
    /* the same search compares equal to its stored text */
    nas_config *again = malloc(sizeof *again);
    assert_int_equal(nas_config_diff(canon, cfg, 1, NULL, 0), 0);
    free(canon);
    /* one value is that value: no decision, the text of the scalar */
    nas_space *s1 = space_of("proxy = { lr = [0.1]; };\n", again);
    assert_int_equal(again->space.recipe.n[NAS_RECIPE_LR], 0);
    assert_true(again->proxy.lr == 0.1);
    canon = nas_config_canonical(again);
    assert_non_null(strstr(canon, "proxy.lr = 0.1;\n"));
    free(canon);
    assert_int_equal(nas_space_seq_len(s1), 6);
    nas_space_destroy(s1);
    nas_space_destroy(s);
    free(again);
    free(cfg);
}

static void test_parse_errors(void **state)
{
    (void)state;
    parse_fails("proxy = {\n lr = (0.1, \"fast\");\n};\n", "r.conf:2:", "proxy.lr[1]",
                "a number", NULL);
    parse_fails("proxy = {\n weight_decay = (0, 5e-4, 2.0);\n};\n", "r.conf:2:",
                "weight_decay[2] = 2 is out of range", NULL);
    parse_fails("proxy = {\n lr = [0.1, 20.0];\n};\n", "r.conf:2:", "out of range", NULL);
    parse_fails("proxy = {\n lr = [0.1, 0.1];\n};\n", "r.conf:2:", "repeats", NULL);
    parse_fails("proxy = {\n batch_size = (64, 0.5);\n};\n", "r.conf:2:", "an integer", NULL);
    parse_fails("proxy = {\n lr = [];\n};\n", "r.conf:2:", "1 to 16", NULL);
    parse_fails("data = {\n augment = [\"none\", \"rotate\"];\n};\n", "r.conf:2:",
                "is not an augmentation", NULL);
    /* a list on a key that cannot be a choice */
    parse_fails("proxy = {\n\n epochs = [1, 2];\n};\n", "r.conf:3:", "proxy.epochs is a list",
                "only proxy.lr, proxy.weight_decay, proxy.batch_size and data.augment", NULL);
    parse_fails("seed = [1, 2];\n", "r.conf:1:", "seed is a list", NULL);
    /* a table search: the table has no recipe */
    parse_fails("evaluator = { kind = \"table\"; table = \"t.csv\"; };\nproxy = {\n"
                "  weight_decay = [0.0, 0.001];\n};\n",
                "r.conf:3:", "proxy.weight_decay is a list of choices", "the table has no recipe",
                NULL);
}

/* Without recipe choices every string, key and size is the one nas wrote
 * before (old databases, ARCH.json files, table lookups). */
static void test_old_space_unchanged(void **state)
{
    (void)state;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_of("proxy = { lr = 0.1; };\n", cfg);
    assert_int_equal(nas_space_seq_len(s), 6);
    assert_int_equal(nas_space_arch_len(s), 6);
    assert_int_equal(nas_space_recipe_len(s), 0);
    assert_int_equal(nas_space_vocab_size(s), NAS_OP_COUNT);
    assert_int_equal(nas_space_size(s), 15625);
    nas_genotype g;
    nas_error err;
    assert_int_equal(nas_space_parse(s, CELL, &g, &err), NAS_OK);
    char buf[NAS_GENOTYPE_STR_MAX], key[NAS_GENOTYPE_STR_MAX], key0[NAS_GENOTYPE_STR_MAX];
    assert_int_equal(nas_space_format(s, &g, buf, sizeof buf), NAS_OK);
    assert_string_equal(buf, CELL);
    nas_space_key(s, &g, key, sizeof key);
    nas_space_key(NULL, &g, key0, sizeof key0); /* the store's key, without a space */
    assert_string_equal(key, key0);
    assert_null(strchr(key, ' '));
    assert_int_not_equal(nas_space_parse(s, "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|"
                                            "skip_connect~0|nor_conv_1x1~1|nor_conv_3x3~2| lr=0.1",
                                         &g, &err), NAS_OK);
    nas_space_destroy(s);
    free(cfg);
}

static void test_round_trip_and_keys(void **state)
{
    (void)state;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_of("proxy = { lr = [0.01, 0.1]; };\n"
                            "data = { augment = [\"none\", \"crop4,flip\"]; };\n", cfg);
    assert_int_equal(nas_space_seq_len(s), 8);
    assert_int_equal(nas_space_arch_len(s), 6);
    assert_int_equal(nas_space_recipe_len(s), 2);
    assert_int_equal(nas_space_size(s), 15625 * 4);
    nas_space_counts c;
    assert_int_equal(nas_space_counts_get(s, &c), NAS_OK);
    assert_int_equal(c.size, 15625 * 4);
    assert_true(c.keys_counted && c.keys % 4 == 0 && c.keys > 4 * 5000);
    char txt[NAS_GENOTYPE_STR_MAX], buf[NAS_GENOTYPE_STR_MAX];
    snprintf(txt, sizeof txt, "%s lr=0.1 augment=crop4,flip", CELL);
    nas_genotype g, h, a;
    nas_error err;
    assert_int_equal(nas_space_parse(s, txt, &g, &err), NAS_OK);
    assert_true(nas_space_is_valid(s, &g));
    assert_int_equal(nas_space_format(s, &g, buf, sizeof buf), NAS_OK);
    assert_string_equal(buf, txt);
    /* numbers by value, words in any order, policies in any spelling */
    snprintf(txt, sizeof txt, "  %s   augment=flip,crop4 lr=0.10 ", CELL);
    assert_int_equal(nas_space_parse(s, txt, &h, &err), NAS_OK);
    assert_memory_equal(g.tok, h.tok, 8);
    /* keys: the cell's key plus the words; lr alone makes them differ */
    char kg[NAS_GENOTYPE_STR_MAX], kh[NAS_GENOTYPE_STR_MAX], k0[NAS_GENOTYPE_STR_MAX];
    nas_space_key(s, &g, kg, sizeof kg);
    a = g;
    a.len = 6;
    nas_space_key(NULL, &a, k0, sizeof k0);
    snprintf(buf, sizeof buf, "%s lr=0.1 augment=crop4,flip", k0);
    assert_string_equal(kg, buf);
    snprintf(txt, sizeof txt, "%s lr=0.01 augment=crop4,flip", CELL);
    assert_int_equal(nas_space_parse(s, txt, &h, &err), NAS_OK);
    nas_space_key(s, &h, kh, sizeof kh);
    assert_string_not_equal(kg, kh);
    /* the network alone: arch_len tokens format as the cell's string */
    assert_int_equal(nas_space_format(s, &a, buf, sizeof buf), NAS_OK);
    assert_string_equal(buf, CELL);
    /* omitted, unknown or not a choice: errors naming the choices */
    assert_int_equal(nas_space_parse(s, CELL, &h, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "no recipe choice lr"));
    assert_non_null(strstr(err.msg, "lr=0.01, lr=0.1"));
    snprintf(txt, sizeof txt, "%s lr=0.05 augment=none", CELL);
    assert_int_equal(nas_space_parse(s, txt, &h, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "lr=0.05 is not one of"));
    snprintf(txt, sizeof txt, "%s lt=0.1 augment=none", CELL);
    assert_int_equal(nas_space_parse(s, txt, &h, &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "did you mean 'lr'"));
    /* a bare genotype string drops the words */
    snprintf(txt, sizeof txt, "%s lr=0.05 augment=none", CELL);
    assert_int_equal(nas_genotype_strip_recipe(txt), 2);
    assert_string_equal(txt, CELL);
    /* the values a trial trains with */
    nas_recipe_values v;
    nas_config_recipe_values(cfg, s, &g, &v);
    assert_true(v.lr == 0.1);
    assert_string_equal(v.augment, "crop4,flip");
    assert_true(v.weight_decay == cfg->proxy.weight_decay);
    snprintf(txt, sizeof txt, "%s lr=0.01 augment=none", CELL);
    assert_int_equal(nas_space_parse(s, txt, &h, &err), NAS_OK);
    nas_config_recipe_values(cfg, s, &h, &v);
    assert_true(v.lr == 0.01);
    assert_string_equal(v.augment, "");
    /* the network ignores the recipe tokens */
    nas_layers la, lb;
    assert_int_equal(nas_space_layers(s, &g, &la, &err), NAS_OK);
    assert_int_equal(nas_space_layers(s, &h, &lb, &err), NAS_OK);
    assert_int_equal(la.n, lb.n);
    nas_layers_free(&la);
    nas_layers_free(&lb);
    nas_space_destroy(s);
    free(cfg);
}

static void test_chain_space(void **state)
{
    (void)state;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_of(
        "space = { type = \"chain\"; input = [1, 28, 28]; classes = 10;\n"
        "  stem = { kernel = 3; channels = 8; stride = 1; };\n"
        "  stages = ( { channels = [8, 16]; stride = 2; layers = 2; depth = [1, 2];\n"
        "               ops = [\"mb3_k3\", \"mb3_k5\"]; } );\n"
        "  head = { channels = 32; }; };\n"
        "proxy = { batch_size = [32, 64]; };\n", cfg);
    int L = nas_space_arch_len(s);
    assert_int_equal(nas_space_seq_len(s), L + 1);
    nas_rng r;
    nas_rng_seed(&r, 5, 1);
    nas_genotype g, h;
    char buf[NAS_GENOTYPE_STR_MAX];
    nas_error err;
    int seen[2] = {0, 0};
    for (int i = 0; i < 40; i++) {
        nas_space_sample(s, &r, &g);
        assert_true(nas_space_is_valid(s, &g));
        assert_int_equal(nas_space_format(s, &g, buf, sizeof buf), NAS_OK);
        assert_non_null(strstr(buf, " batch_size="));
        assert_int_equal(nas_space_parse(s, buf, &h, &err), NAS_OK);
        assert_int_equal(h.len, g.len);
        assert_memory_equal(h.tok, g.tok, (size_t)g.len);
        nas_recipe_values v;
        nas_config_recipe_values(cfg, s, &g, &v);
        assert_true(v.batch_size == 32 || v.batch_size == 64);
        seen[v.batch_size == 64]++;
    }
    assert_true(seen[0] > 0 && seen[1] > 0);
    nas_space_destroy(s);
    free(cfg);
}

/* A chain space whose strings fit alone (4 stages of 15 layers of 7-letter
 * ops: 479 characters) but not with the recipe words (48 more) is refused
 * at the stages' line; before, every trial failed with "genotype cannot be
 * formatted" and every canonical key was empty. */
static void test_string_too_long(void **state)
{
    (void)state;
    char text[2048];
    const char *st = "{ channels = 4; stride = 1; layers = 15; ops = [\"conv_k5\", \"conv_k7\"]; }";
    const char *fmt = "space = { type = \"chain\"; input = [1, 28, 28]; classes = 10;\n"
                      "  stem = { kernel = 3; channels = 4; stride = 4; };\n"
                      "  stages = ( %s, %s, %s, %s );\n"
                      "  head = { channels = 8; }; };\n"
                      "proxy = { lr = %s; weight_decay = %s; };\n";
    snprintf(text, sizeof text, fmt, st, st, st, st, "0.012345678901", "0.00012345678901");
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space_destroy(space_of(text, cfg)); /* alone it fits */
    free(cfg);
    snprintf(text, sizeof text, fmt, st, st, st, st, "[0.012345678901, 0.02]",
             "[0.00012345678901, 0.0]");
    parse_fails(text, "r.conf:3:", "with the recipe choices' words could be 527 characters",
                NULL);
}

/* Evolution's one-position mutation reaches the recipe tokens (about 2 in
 * 8 children with 6 edges and 2 choices) and changes one decision. */
static void test_mutation(void **state)
{
    (void)state;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_of("proxy = { lr = [0.01, 0.1, 1.0]; weight_decay = [0.0, 0.001]; };\n",
                            cfg);
    nas_rng r;
    nas_rng_seed(&r, 11, 3);
    nas_genotype p, c;
    nas_space_sample(s, &r, &p);
    int recipe = 0, arch = 0;
    for (int i = 0; i < 800; i++) {
        nas_space_mutate(s, &r, &p, &c);
        assert_true(nas_space_is_valid(s, &c));
        int d_arch = 0, d_rec = 0;
        for (int q = 0; q < 8; q++)
            *(q < 6 ? &d_arch : &d_rec) += c.tok[q] != p.tok[q];
        assert_int_equal(d_arch + d_rec, 1);
        recipe += d_rec;
        arch += d_arch;
    }
    print_message("%d of 800 mutations changed a recipe token\n", recipe);
    assert_true(recipe > 120 && recipe < 280); /* expected 200 */
    /* through the strategy too: evolution's children carry recipe tokens */
    nas_space_destroy(s);
    free(cfg);
}

/* NAO's vocabulary holds the recipe tokens, allowed only at their
 * positions, and its proposals are valid genotypes with both values. */
typedef struct keys_seen {
    const nas_space *s;
    int n;
    char k[64][NAS_GENOTYPE_STR_MAX];
} keys_seen;

static int known_fn(void *ctx, const nas_genotype *g)
{
    keys_seen *ks = ctx;
    char key[NAS_GENOTYPE_STR_MAX];
    nas_space_key(ks->s, g, key, sizeof key);
    for (int i = 0; i < ks->n; i++)
        if (!strcmp(ks->k[i], key))
            return 1;
    return 0;
}

static void test_nao_vocabulary(void **state)
{
    (void)state;
    nas_config *cfg = malloc(sizeof *cfg);
    nas_space *s = space_of("proxy = { lr = [0.01, 0.1]; batch_size = [64, 128, 256]; };\n"
                            "search = { strategy = \"nao\"; nao = { seed_archs = 6; epochs = 5;"
                            " batch_per_round = 2; }; };\n", cfg);
    assert_int_equal(nas_space_vocab_size(s), NAS_OP_COUNT + 2 + 3);
    for (int tok = 0; tok < nas_space_vocab_size(s); tok++) {
        assert_int_equal(nas_space_token_allowed(s, 0, tok), tok < NAS_OP_COUNT);
        assert_int_equal(nas_space_token_allowed(s, 6, tok), tok >= 5 && tok < 7);
        assert_int_equal(nas_space_token_allowed(s, 7, tok), tok >= 7 && tok < 10);
    }
    assert_string_equal(nas_space_token_name(s, 6), "lr=0.1");
    assert_string_equal(nas_space_token_name(s, 9), "batch_size=256");
    char name[64];
    assert_string_equal(nas_space_decision_name(s, 7, name, sizeof name), "proxy.batch_size");
    nas_strategy *st = NULL;
    nas_error err;
    assert_int_equal(nas_strategy_create(cfg, s, &st, &err), NAS_OK);
    keys_seen *ks = calloc(1, sizeof *ks);
    ks->s = s;
    int lr_hi = 0, model_lr_hi = 0;
    for (int t = 0; t < 20; t++) {
        nas_genotype g;
        assert_int_equal(nas_strategy_propose(st, known_fn, ks, &g, &err), NAS_OK);
        assert_true(nas_space_is_valid(s, &g));
        assert_int_equal(known_fn(ks, &g), 0);
        nas_space_key(s, &g, ks->k[ks->n++], NAS_GENOTYPE_STR_MAX);
        int hi = g.tok[6] == 6; /* lr=0.1: the synthetic score rewards it */
        lr_hi += hi;
        model_lr_hi += t >= 6 && hi;
        nas_strategy_observe(st, &g, hi ? 1.0 : 0.0);
    }
    print_message("lr=0.1 in %d of 20 proposals, %d of the 14 model-phase ones\n", lr_hi,
                  model_lr_hi);
    assert_true(lr_hi > 0 && lr_hi < 20);
    assert_true(model_lr_hi >= 7);
    nas_strategy_destroy(st);
    free(ks);
    nas_space_destroy(s);
    free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_lists),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_old_space_unchanged),
        cmocka_unit_test(test_round_trip_and_keys),
        cmocka_unit_test(test_chain_space),
        cmocka_unit_test(test_string_too_long),
        cmocka_unit_test(test_mutation),
        cmocka_unit_test(test_nao_vocabulary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
