/*
 * nas/layers.h - a space as a list of decisions, its counts, and the
 * network description (layers with inferred shapes) a genotype lowers to
 * (docs/spaces.md; DESIGN.md "Where the product goes next").
 *
 * Every space type compiles its description into an ordered list of
 * categorical decisions; a genotype holds one token per decision (the
 * token interface of nas/space.h: nas_space_seq_len, nas_space_vocab_size,
 * nas_space_token_allowed). Strategies see only that. The builder
 * (nas_space_layers) turns a chain genotype into layers; counting (MACs,
 * params: nas/inspect.h), training (trainer/net.c) and the exporters read
 * only them (cell spaces keep their own builder for now).
 */
#ifndef NAS_LAYERS_H
#define NAS_LAYERS_H

#include <stddef.h>
#include <stdint.h>
#include "nas/space.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- decisions ------------------------------------------------------------- */

/* Name of decision `i` into buf ("s2.depth", "s2.op0"; cell: "edge 1<-0");
 * "" for i out of range. Returns buf. */
const char *nas_space_decision_name(const nas_space *s, int i, char *buf, size_t n);

/* The word of token `tok` ("mb6_k3", "c24", "d3", "se_on"; cell: op
 * names), or NULL for a token outside the vocabulary. */
const char *nas_space_token_name(const nas_space *s, int tok);

/* Number of allowed tokens of decision `i` (0 for i out of range). */
int nas_space_decision_choices(const nas_space *s, int i);

/* Allowed token `j` (0 <= j < nas_space_decision_choices) of decision `i`,
 * in the order the space declares them. */
int nas_space_decision_token(const nas_space *s, int i, int j);

/* Counts never overflow: a count of NAS_SPACE_COUNT_CAP or more is
 * reported as NAS_SPACE_COUNT_CAP with exact = 0 ("more than 2^63"). */
#define NAS_SPACE_COUNT_CAP (UINT64_C(1) << 63)

typedef struct nas_space_counts {
    uint64_t size;      /* genotypes (product of the decisions' choice counts) */
    int size_exact;     /* 0: size >= 2^63, `size` is the cap */
    double log10_size;  /* log10 of the size, also past the cap */
    uint64_t keys;      /* distinct canonical keys (distinct functions) */
    int keys_exact;     /* 0: keys >= 2^63 (or not countable) */
    double log10_keys;
    int keys_counted;   /* 1: `keys` was computed (chain: by formula; cell: by enumeration) */
} nas_space_counts;

/*
 * Size of the space and number of distinct canonical keys. Chain: keys by
 * the closed formula of docs/spaces.md ("Counting keys"), exact up to 2^63.
 * Cell: by enumerating every valid genotype (at most 5^6).
 * Returns NAS_OK or NAS_EINVAL (NULL arguments).
 */
int nas_space_counts_get(const nas_space *s, nas_space_counts *out);

/*
 * Distinct keys by brute force: enumerate every genotype (mixed radix over
 * the decisions), keep the valid ones, sort their keys and count distinct
 * ones. For tests and `nas space` on small spaces. Errors: NAS_EUNSUPPORTED when
 * the space has more than `limit` genotypes, NAS_ENOMEM.
 */
int nas_space_enumerate_keys(const nas_space *s, uint64_t limit, uint64_t *distinct,
                             uint64_t *valid);

/* Genotype number `idx` in mixed radix over the allowed tokens of each
 * decision (decision 0 varies fastest). idx must be < the space size. */
void nas_space_genotype_at(const nas_space *s, uint64_t idx, nas_genotype *g);

/* Effective input shape and class count: space.input / space.classes when
 * set, else the data set's (fashion-mnist: 1 x 28 x 28, 10). */
void nas_space_input(const nas_space *s, int *c, int *h, int *w, int *classes);

/* ---- the network description ----------------------------------------------- */

typedef enum nas_layer_kind {
    NAS_LAYER_CONV = 0, /* dense k x k conv, stride, padding k/2, no bias (bias = 1: with bias) */
    NAS_LAYER_DWCONV,   /* depthwise k x k conv (groups = channels), no bias */
    NAS_LAYER_BN,       /* batch norm with affine gamma, beta (running stats are buffers) */
    NAS_LAYER_ACT,      /* activation `act` (nas_act) */
    NAS_LAYER_SE,       /* squeeze-and-excitation: global avg pool, 1x1 conv C->mid (bias),
                           ReLU, 1x1 conv mid->C (bias), gate (hard sigmoid or sigmoid),
                           channel-wise multiply with the input */
    NAS_LAYER_ADD,      /* out = input + output of layer src2 (residual) */
    NAS_LAYER_POOL,     /* global average pooling to C x 1 x 1 */
    NAS_LAYER_DROPOUT,  /* dropout with probability p (training only) */
    NAS_LAYER_LINEAR    /* fully connected in_c -> out_c with bias, on the flattened input */
} nas_layer_kind;

typedef struct nas_layer {
    nas_layer_kind kind;
    int src;        /* input: index of an earlier layer, -1 = the network input */
    int src2;       /* ADD: the other operand (index, -1 = network input); else -1 */
    int in_c, in_h, in_w;   /* NCHW shape per image */
    int out_c, out_h, out_w;
    int kernel, stride, pad, groups, bias; /* CONV, DWCONV */
    int act;        /* ACT: nas_act */
    int mid;        /* SE: reduced width; */
    int gate_sigmoid; /* SE: 1 sigmoid, 0 hard sigmoid */
    double p;       /* DROPOUT */
    int stage, index; /* chain layer it belongs to (-1: stem or head) */
    char name[48];  /* "stem.conv", "s2.l0.expand", "head.linear", ... */
} nas_layer;

typedef struct nas_layers {
    int n, cap;
    nas_layer *l;   /* n layers in execution order (owned) */
    int in_c, in_h, in_w, classes;
} nas_layers;

/*
 * Lower genotype `g` of a chain space to layers in execution order, with
 * every shape inferred (docs/spaces.md "Layer order"). `out` is filled and
 * owns its array: free it with nas_layers_free. Errors: NAS_EINVAL (g not
 * a member of the space), NAS_EUNSUPPORTED (cell spaces do not lower to
 * layers yet), NAS_ENOMEM.
 */
int nas_space_layers(const nas_space *s, const nas_genotype *g, nas_layers *out, nas_error *err);
void nas_layers_free(nas_layers *l); /* NULL-safe; leaves *l empty */

/* Name of a layer kind ("conv", "dwconv", "bn", "act", "se", "add", "pool",
 * "dropout", "linear"). */
const char *nas_layer_kind_name(int kind);

#ifdef __cplusplus
}
#endif
#endif /* NAS_LAYERS_H */
