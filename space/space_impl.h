/*
 * space/space_impl.h - internals shared by the files of space/ (not public).
 */
#ifndef NAS_SPACE_IMPL_H
#define NAS_SPACE_IMPL_H

#include <stddef.h>
#include "nas/space.h"

/* Edge index of (to <- from) in the NAS-Bench-201 order (1<-0), (2<-0),
 * (2<-1), (3<-0), (3<-1), (3<-2); requires 0 <= from < to <= 3. */
static inline int nas__cell_edge(int to, int from) { return (to - 1) * to / 2 + from; }

/* Write the op names whose bits are set in `mask` as "a, b, c" into buf
 * (all ops for mask == 0). Returns buf. */
const char *nas__op_list(unsigned mask, char *buf, size_t n);

/* All-ops mask of the registry. */
#define NAS__ALL_OPS_MASK ((1u << NAS_OP_COUNT) - 1u)

struct nas_layers;
struct nas_space_counts;

/* ---- space types (space/space.c is the facade) ------------------------------
 * Every public nas_space_* function that depends on the space's type calls
 * through the type's table; the facade (space/space.c) owns the nas_space
 * handle and calls nothing else. A type's files never call the facade or
 * another type. Adding a space type: a file that defines its table, and one
 * entry in space.c's list of types.
 *
 * `impl` is the type's own state, made by create; NULL only for the cell
 * type, and only in parse, format and key (the store reads cell genotypes
 * without a space: nas_space_parse(NULL, ...)). */
typedef struct nas__space_type {
    nas_space_type id; /* the desc->type it builds */
    int (*create)(const nas_space_desc *desc, void **impl, nas_error *err);
    void (*destroy)(void *impl);
    int (*seq_len)(const void *impl);
    int (*vocab_size)(const void *impl);
    int (*token_allowed)(const void *impl, int pos, int tok);
    uint64_t (*size)(const void *impl); /* saturates at NAS_SPACE_COUNT_CAP */
    int (*is_valid)(const void *impl, const nas_genotype *g);
    void (*sample)(const void *impl, nas_rng *r, nas_genotype *out);
    void (*mutate)(const void *impl, nas_rng *r, const nas_genotype *parent, nas_genotype *child);
    int (*format)(const void *impl, const nas_genotype *g, char *buf, size_t n);
    int (*parse)(const void *impl, const char *str, nas_genotype *out, nas_error *err);
    void (*key)(const void *impl, nas_key_kind kind, const nas_genotype *g, char *buf, size_t n);
    /* NULL: the facade counts by enumerating the space (small spaces) */
    int (*counts)(const void *impl, struct nas_space_counts *out);
    /* i is in [0, seq_len) in these three (the facade checks) */
    const char *(*decision_name)(const void *impl, int i, char *buf, size_t n);
    int (*decision_choices)(const void *impl, int i);
    int (*decision_token)(const void *impl, int i, int j);
    const char *(*token_name)(const void *impl, int tok);
    int (*layers)(const void *impl, const nas_genotype *g, struct nas_layers *out, nas_error *err);
} nas__space_type;

extern const nas__space_type nas__cell_type;  /* space/cell.c */
extern const nas__space_type nas__chain_type; /* space/chain_layers.c (over space/chain.c) */

/* ---- recipe choices (space/recipe.c; issue 33) ----------------------------------
 * The facade appends one token per recipe decision after the type's tokens
 * and " KEY=VALUE" words after its string. */
typedef struct nas__recipe {
    int n_dec;                   /* decisions (keys with choices), in NAS_RECIPE_* order */
    int key[NAS_RECIPE_KEYS];    /* decision d -> NAS_RECIPE_* key */
    int n[NAS_RECIPE_KEYS];      /* its choice count */
    int tok0[NAS_RECIPE_KEYS];   /* its first token (after the type's vocabulary) */
    int vocab;                   /* the whole vocabulary */
    char word[NAS_RECIPE_KEYS][NAS_RECIPE_MAX_CHOICES][64]; /* "lr=0.1" */
} nas__recipe;

/* Number the decisions of c after a vocabulary of type_vocab words.
 * Errors: NAS_EINVAL (a count outside 2..16, more than 256 words). */
int nas__recipe_init(nas__recipe *r, const nas_recipe_choices *c, int type_vocab, nas_error *err);
const char *nas__recipe_key_name(int key); /* "lr", "weight_decay", ... */
/* Choice j of key as text ("0.1", "64", "crop4,flip") into buf[n]. */
void nas__recipe_value_text(const nas_recipe_choices *c, int key, int j, char *buf, size_t n);
int nas__recipe_token_allowed(const nas__recipe *r, int d, int tok);
const char *nas__recipe_token_name(const nas__recipe *r, int tok); /* NULL: not a recipe token */
/* Append " KEY=VALUE" per decision (tok[d]) to the string in buf[n].
 * NAS_EINVAL: a token not allowed, or buf too small. */
int nas__recipe_format(const nas__recipe *r, const uint8_t *tok, char *buf, size_t n);
/* Read the KEY=VALUE words of `words` (white-space separated) into tok[d];
 * every decision once. `whole` is the genotype text, for messages.
 * Errors: NAS_EFORMAT naming the word and the choices. */
int nas__recipe_parse(const nas__recipe *r, const nas_recipe_choices *c, const char *words,
                      const char *whole, uint8_t *tok, nas_error *err);

/* ---- the cell type's parts (space/cell_key.c, space/cell_layers.c) ---------- */

/* The key of a cell genotype: the functional key or NAS-Bench-201's unique
 * string (nas_space_key). cell_key.c. */
void nas__cell_key(nas_key_kind kind, const nas_genotype *g, char *buf, size_t n);

/* ---- chain spaces (space/chain.c, space/chain_layers.c) ---------------------- */
typedef struct nas__chain nas__chain;

/* Compile desc->chain into decisions and a vocabulary. Errors: NAS_EINVAL
 * with a message (too many decisions, vocabulary over 255 words, genotype
 * strings over NAS_GENOTYPE_STR_MAX - 1), NAS_ENOMEM. */
int nas__chain_create(const nas_space_desc *desc, void **out, nas_error *err);
void nas__chain_destroy(void *c);
int nas__chain_seq_len(const void *c);
int nas__chain_vocab_size(const void *c);
int nas__chain_token_allowed(const void *c, int pos, int tok);
uint64_t nas__chain_size(const void *c);
int nas__chain_is_valid(const void *c, const nas_genotype *g);
void nas__chain_sample(const void *c, nas_rng *r, nas_genotype *out);
void nas__chain_mutate(const void *c, nas_rng *r, const nas_genotype *parent, nas_genotype *child);
int nas__chain_format(const void *c, const nas_genotype *g, char *buf, size_t n);
int nas__chain_parse(const void *c, const char *str, nas_genotype *out, nas_error *err);
void nas__chain_key(const void *c, nas_key_kind kind, const nas_genotype *g, char *buf, size_t n);
int nas__chain_counts(const void *c, struct nas_space_counts *out);
const char *nas__chain_decision_name(const void *c, int i, char *buf, size_t n);
const char *nas__chain_token_name(const void *c, int tok);
int nas__chain_decision_choices(const void *c, int i);
int nas__chain_decision_token(const void *c, int i, int j);

/* One genotype's choices, decoded (width, depth, se and op of every stage). */
typedef struct nas__chain_pick {
    int width[NAS_CHAIN_MAX_STAGES];
    int depth[NAS_CHAIN_MAX_STAGES];
    int se[NAS_CHAIN_MAX_STAGES];
    uint16_t op[NAS_CHAIN_MAX_STAGES][NAS_CHAIN_MAX_LAYERS];
} nas__chain_pick;

/* Decode g (must be valid). Returns 0, or -1 for a genotype of another space. */
int nas__chain_pick_of(const nas__chain *c, const nas_genotype *g, nas__chain_pick *p);
const nas_chain_desc *nas__chain_desc(const nas__chain *c);
void nas__chain_input(const nas__chain *c, int *ch, int *h, int *w, int *classes);

/* The input shape and class count of d, each unset one (0) as the default
 * (Fashion-MNIST's 1 x 28 x 28, 10 classes; docs/space-conf.md). NULL
 * outputs are skipped. space/input.c; nas_space_input for a built space. */
void nas__desc_input(const nas_space_desc *d, int *c, int *h, int *w, int *classes);

/* 1 when chain op `op` does nothing at a layer that keeps the shape
 * (`same`: stride 1, same width): zero, or skip. Such a layer has no
 * network layer and no place in the canonical key. chain.c. */
int nas__chain_op_is_noop(uint16_t op, int same);

#endif
