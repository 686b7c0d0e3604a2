/*
 * space/recipe.c - recipe choices as genotype tokens (issue 33; Keras
 * Tuner's hp.Choice, NNI's ValueChoice on training settings).
 *
 * A space.conf list where a proxy number is expected (`proxy.lr = [0.05,
 * 0.1]`, proxy.weight_decay, proxy.batch_size) or a list of policies for
 * data.augment makes that setting a decision: one token per such key,
 * after the space type's own tokens, in the NAS_RECIPE_* order. Choice j
 * of decision d is token tok0[d] + j, numbered after the type's
 * vocabulary, so a learned strategy (NAO) sees one vocabulary. In the
 * string form (and the canonical key) each decision is one " KEY=VALUE"
 * word after the type's string. The facade (space/space.c) splits and
 * joins the two parts; this file knows only the recipe part.
 */
#include <ctype.h>  /* isspace */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* strtod */
#include <string.h> /* strcmp, strncmp */
#include "nas/suggest.h" /* nas_suggest_hint */
#include "space_impl.h"
#include "text_impl.h" /* nas__fmt_double */

static const char *const key_names[NAS_RECIPE_KEYS] = {"lr", "weight_decay", "batch_size",
                                                       "augment"};

const char *nas__recipe_key_name(int key)
{
    return key >= 0 && key < NAS_RECIPE_KEYS ? key_names[key] : "?";
}

/* The value text of choice j of `key`: numbers in their shortest exact
 * form (nas__fmt_double), batch sizes as integers, policies as given. */
void nas__recipe_value_text(const nas_recipe_choices *c, int key, int j, char *buf, size_t n)
{
    if (key == NAS_RECIPE_AUGMENT)
        snprintf(buf, n, "%s", c->augment[j]);
    else if (key == NAS_RECIPE_BATCH_SIZE)
        snprintf(buf, n, "%d", (int)c->num[key][j]);
    else
        nas__fmt_double(c->num[key][j], buf, n);
}

int nas__recipe_init(nas__recipe *r, const nas_recipe_choices *c, int type_vocab, nas_error *err)
{
    memset(r, 0, sizeof *r);
    int tok = type_vocab;
    for (int k = 0; k < NAS_RECIPE_KEYS; k++) {
        if (c->n[k] == 0)
            continue;
        if (c->n[k] < 2 || c->n[k] > NAS_RECIPE_MAX_CHOICES)
            return nas_error_set(err, NAS_EINVAL, "space: %d choices of %s, expected 2 to %d",
                                 c->n[k], key_names[k], NAS_RECIPE_MAX_CHOICES);
        int d = r->n_dec++;
        r->key[d] = k;
        r->n[d] = c->n[k];
        r->tok0[d] = tok;
        tok += c->n[k];
        for (int j = 0; j < c->n[k]; j++) {
            char v[NAS_AUGMENT_STR_MAX];
            nas__recipe_value_text(c, k, j, v, sizeof v);
            snprintf(r->word[d][j], sizeof r->word[d][j], "%s=%s", key_names[k], v);
        }
    }
    if (tok > 256)
        return nas_error_set(err, NAS_EINVAL, "space: %d words with the recipe choices' %d, "
                             "expected at most 256 (a genotype token is one byte)",
                             tok, tok - type_vocab);
    r->vocab = tok;
    return NAS_OK;
}

int nas__recipe_token_allowed(const nas__recipe *r, int d, int tok)
{
    return d >= 0 && d < r->n_dec && tok >= r->tok0[d] && tok < r->tok0[d] + r->n[d];
}

const char *nas__recipe_token_name(const nas__recipe *r, int tok)
{
    for (int d = 0; d < r->n_dec; d++)
        if (nas__recipe_token_allowed(r, d, tok))
            return r->word[d][tok - r->tok0[d]];
    return NULL;
}

int nas__recipe_format(const nas__recipe *r, const uint8_t *tok, char *buf, size_t n)
{
    size_t used = strlen(buf);
    for (int d = 0; d < r->n_dec; d++) {
        if (!nas__recipe_token_allowed(r, d, tok[d]))
            return NAS_EINVAL;
        int w = snprintf(buf + used, n - used, " %s", r->word[d][tok[d] - r->tok0[d]]);
        if (w < 0 || (size_t)w >= n - used)
            return NAS_EINVAL;
        used += (size_t)w;
    }
    return NAS_OK;
}

/* The choices of decision d, "lr=0.01, lr=0.1", for messages. */
static void list_words(const nas__recipe *r, int d, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int j = 0; j < r->n[d] && used < n; j++) {
        int w = snprintf(buf + used, n - used, "%s%s", j ? ", " : "", r->word[d][j]);
        used = w < 0 ? n : used + (size_t)w;
    }
}

/* Choice of decision d named by value text v (numbers compared by value,
 * policies by their canonical form), or -1. */
static int find_choice(const nas__recipe *r, const nas_recipe_choices *c, int d, const char *v)
{
    int k = r->key[d];
    if (k == NAS_RECIPE_AUGMENT) {
        nas_augment a;
        char canon[NAS_AUGMENT_STR_MAX];
        if (nas_augment_parse(!strcmp(v, "none") ? "" : v, &a) != 0)
            return -1;
        nas_augment_format(&a, canon, sizeof canon);
        for (int j = 0; j < r->n[d]; j++)
            if (!strcmp(canon, c->augment[j]))
                return j;
        return -1;
    }
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end)
        return -1;
    for (int j = 0; j < r->n[d]; j++)
        if (x == c->num[k][j])
            return j;
    return -1;
}

/* One "KEY=VALUE" word w (len bytes) into tok[]; seen[d] counts. */
static int parse_word(const nas__recipe *r, const nas_recipe_choices *c, const char *whole,
                      const char *w, size_t len, uint8_t *tok, int *seen, nas_error *err)
{
    char word[128], names[128] = "", hint[96], list[NAS_RECIPE_MAX_CHOICES * 64];
    snprintf(word, sizeof word, "%.*s", (int)len, w);
    for (int d = 0; d < r->n_dec; d++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", d ? ", " : "",
                 key_names[r->key[d]]);
    char *eq = strchr(word, '=');
    if (eq)
        *eq = '\0';
    int d = 0;
    while (d < r->n_dec && strcmp(word, key_names[r->key[d]]) != 0)
        d++;
    if (!eq || d == r->n_dec)
        return nas_error_set(err, NAS_EFORMAT, "genotype '%s': '%.*s' is not a recipe choice of "
                             "this space, expected KEY=VALUE with KEY one of: %s%s", whole,
                             (int)len, w, names, nas_suggest_hint(word, names, hint, sizeof hint));
    if (seen[d]++)
        return nas_error_set(err, NAS_EFORMAT, "genotype '%s': recipe choice %s given twice",
                             whole, word);
    int j = find_choice(r, c, d, eq + 1);
    list_words(r, d, list, sizeof list);
    if (j < 0)
        return nas_error_set(err, NAS_EFORMAT, "genotype '%s': %s=%s is not one of this "
                             "space's choices, expected one of: %s", whole, word, eq + 1, list);
    tok[d] = (uint8_t)(r->tok0[d] + j);
    return NAS_OK;
}

int nas__recipe_parse(const nas__recipe *r, const nas_recipe_choices *c, const char *words,
                      const char *whole, uint8_t *tok, nas_error *err)
{
    int seen[NAS_RECIPE_KEYS] = {0};
    for (const char *p = words; *p;) {
        while (isspace((unsigned char)*p))
            p++;
        size_t len = 0;
        while (p[len] && !isspace((unsigned char)p[len]))
            len++;
        if (len == 0)
            break;
        int rc = parse_word(r, c, whole, p, len, tok, seen, err);
        if (rc != NAS_OK)
            return rc;
        p += len;
    }
    for (int d = 0; d < r->n_dec; d++) {
        char list[NAS_RECIPE_MAX_CHOICES * 64];
        list_words(r, d, list, sizeof list);
        if (!seen[d])
            return nas_error_set(err, NAS_EFORMAT, "genotype '%s' has no recipe choice %s: this "
                                 "space searches it, append one of: %s", whole,
                                 key_names[r->key[d]], list);
    }
    return NAS_OK;
}

int nas_genotype_strip_recipe(char *str)
{
    if (!str)
        return 0;
    char *p = str;
    while (isspace((unsigned char)*p))
        p++;
    char *cut = p + strcspn(p, " \t\r\n"), *q = cut;
    int words = 0;
    for (;;) {
        while (isspace((unsigned char)*q))
            q++;
        if (!*q)
            break;
        size_t len = strcspn(q, " \t\r\n"), k = strcspn(q, "=");
        int known = 0;
        for (int i = 0; i < NAS_RECIPE_KEYS && k < len; i++)
            known |= strlen(key_names[i]) == k && !strncmp(q, key_names[i], k);
        if (!known)
            return 0; /* not recipe words: the type's parser says what is wrong */
        words++;
        q += len;
    }
    *cut = '\0';
    return words;
}
