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

/* What nas_space_key computes for s (nas_space_set_key_kind). */
nas_key_kind nas__space_key_kind(const nas_space *s);

/* All-ops mask of the registry. */
#define NAS__ALL_OPS_MASK ((1u << NAS_OP_COUNT) - 1u)

/* ---- chain spaces (space/chain.c, space/chain_layers.c) ----------------------
 * The cell functions of space/cell.c and space/cell_key.c hand a chain
 * space over to these (one `if` per public function). */
typedef struct nas__chain nas__chain;

/* The chain part of a space, or NULL for a cell space. */
nas__chain *nas__space_chain(const nas_space *s);

/* Compile desc->chain into decisions and a vocabulary. Errors: NAS_EINVAL
 * with a message (too many decisions, vocabulary over 255 words, genotype
 * strings over NAS_GENOTYPE_STR_MAX - 1), NAS_ENOMEM. */
int nas__chain_create(const nas_space_desc *desc, nas__chain **out, nas_error *err);
void nas__chain_destroy(nas__chain *c);
int nas__chain_seq_len(const nas__chain *c);
int nas__chain_vocab_size(const nas__chain *c);
int nas__chain_token_allowed(const nas__chain *c, int pos, int tok);
uint64_t nas__chain_size(const nas__chain *c);
int nas__chain_is_valid(const nas__chain *c, const nas_genotype *g);
void nas__chain_sample(const nas__chain *c, nas_rng *r, nas_genotype *out);
void nas__chain_mutate(const nas__chain *c, nas_rng *r, const nas_genotype *parent,
                       nas_genotype *child);
int nas__chain_format(const nas__chain *c, const nas_genotype *g, char *buf, size_t n);
int nas__chain_parse(const nas__chain *c, const char *str, nas_genotype *out, nas_error *err);
void nas__chain_key(const nas__chain *c, const nas_genotype *g, char *buf, size_t n);

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
struct nas_space_counts;
int nas__chain_counts(const nas__chain *c, struct nas_space_counts *out);
const char *nas__chain_decision_name(const nas__chain *c, int i, char *buf, size_t n);
const char *nas__chain_token_name(const nas__chain *c, int tok);
int nas__chain_decision_choices(const nas__chain *c, int i);
uint8_t nas__chain_decision_token(const nas__chain *c, int i, int j);
void nas__chain_input(const nas__chain *c, int *ch, int *h, int *w, int *classes);

/* The input shape and class count of d, each unset one (0) as the default
 * (Fashion-MNIST's 1 x 28 x 28, 10 classes; docs/space-conf.md). NULL
 * outputs are skipped. decisions.c; nas_space_input for a built space. */
void nas__desc_input(const nas_space_desc *d, int *c, int *h, int *w, int *classes);

/* 1 when chain op `op` does nothing at a layer that keeps the shape
 * (`same`: stride 1, same width): zero, or skip. Such a layer has no
 * network layer and no place in the canonical key. chain.c. */
int nas__chain_op_is_noop(uint16_t op, int same);

#endif
