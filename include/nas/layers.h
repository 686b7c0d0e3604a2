/*
 * nas/layers.h - a space as a list of decisions, its counts, and the
 * network description (layers with inferred shapes) a genotype lowers to
 * (docs/spaces.md; DESIGN.md "Where the product goes next").
 *
 * Every space type compiles its description into an ordered list of
 * categorical decisions; a genotype holds one token per decision (the
 * token interface of nas/space.h: nas_space_seq_len, nas_space_vocab_size,
 * nas_space_token_allowed). Strategies see only that. The builder
 * (nas_space_layers) turns a genotype of either space type into layers;
 * training (trainer/net.c) reads only them for both. Counting (MACs,
 * params: nas/inspect.h) and the exporters read them for chain spaces; for
 * cells they still have their own copies of the TinyNetwork's structure.
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
 * set, else the data set's (desc.data_c, ...: nas_data_space_input),
 * else Fashion-MNIST's (1 x 28 x 28, 10). */
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
    NAS_LAYER_ADD,      /* out = sum of the n_src operands src, src2, src3, in that order
                           (chain residual: n_src = 2; cell node: 0 to 3; n_src = 0:
                           zeros of the output shape, src then only gives that shape) */
    NAS_LAYER_POOL,     /* global average pooling to C x 1 x 1 */
    NAS_LAYER_DROPOUT,  /* dropout with probability p (training only) */
    NAS_LAYER_LINEAR,   /* fully connected in_c -> out_c with bias, on the flattened input */
    NAS_LAYER_AVGPOOL   /* k x k average pooling, stride, pad, padding excluded from the
                           divisor (count_include_pad = False, as NAS-Bench-201) */
} nas_layer_kind;

typedef struct nas_layer {
    nas_layer_kind kind;
    int src;        /* input: index of an earlier layer, -1 = the network input */
    int src2, src3; /* ADD: the other operands (index, -1 = network input); else -1 */
    int n_src;      /* ADD: number of operands (0..3) */
    int in_c, in_h, in_w;   /* NCHW shape per image */
    int out_c, out_h, out_w;
    int kernel, stride, pad, groups, bias; /* CONV, DWCONV; AVGPOOL: kernel, stride, pad */
    int act;        /* ACT: nas_act */
    int mid;        /* SE: reduced width; */
    int gate_sigmoid; /* SE: 1 sigmoid, 0 hard sigmoid */
    double p;       /* DROPOUT */
    int stage, index; /* chain: stage and layer it belongs to; cell: stage and cell
                         number (-1: stem or head) */
    char name[48];  /* "stem.conv", "s2.l0.expand", "head.linear"; cells: PyTorch's
                       module paths ("cells.3.layers.1.op.1") */
} nas_layer;

typedef struct nas_layers {
    int n, cap;
    nas_layer *l;   /* n layers in execution order (owned) */
    int in_c, in_h, in_w, classes;
} nas_layers;

/*
 * Lower genotype `g` of space `s` to layers in execution order, with every
 * shape inferred: a chain space as docs/spaces.md "Layer order" says, a
 * cell space as nas_cell_layers with the space's channels, stages, cells
 * and effective input (nas_space_input). `out` is filled and owns its
 * array: free it with nas_layers_free. Errors: NAS_EINVAL (g not a member
 * of the space, an input the reductions cannot halve), NAS_ENOMEM.
 */
int nas_space_layers(const nas_space *s, const nas_genotype *g, nas_layers *out, nas_error *err);

/*
 * Lower cell genotype `g` (6 edge ops, nas_op) to NAS-Bench-201's
 * TinyNetwork (Dong & Yang, ICLR 2020; ../shared/reference/
 * nb201-tinynetwork-fmnist.md), using d->channels, d->stages,
 * d->cells_per_stage, d->in_c/in_h/in_w and d->classes as given (all > 0;
 * classes > 1). Layer order = the order the trainer builds and runs them:
 * stem conv3x3 + BN; per stage (a reduction block first from the second
 * stage on: ReLU, conv3x3 s2, BN, ReLU, conv3x3, BN, then avgpool 2x2 s2 and
 * conv1x1 on the block input, then their ADD) d->cells_per_stage cells, each
 * node j in 1..3 the ADD of its non-`none` edges in edge order (an edge
 * k->j: skip = node k itself; conv = ReLU(node k), shared by every conv
 * edge leaving node k and created by the first, then conv and BN; pool =
 * avgpool 3x3 s1 p1); a node of one operand is that operand (no layer);
 * then BN, ReLU, global pool, linear. Names are PyTorch's module paths
 * (reference above). Errors: NAS_EINVAL (bad sizes or op ids, with the
 * reason; an odd spatial size at a reduction), NAS_ENOMEM.
 */
int nas_cell_layers(const nas_space_desc *d, const nas_genotype *g, nas_layers *out,
                    nas_error *err);

/*
 * Issue 28: can a cell space's stages pass an H x W input? Every stage after
 * the first opens with NAS-Bench-201's reduction block (nas_cell_layers),
 * which halves the feature map and needs an even height and width. NAS_OK
 * (also for a chain space, which nas__chain_validate checks, and for h or
 * w <= 0: a size not known yet), or NAS_ECONFIG with the shape arithmetic
 * in msg[n], e.g. "space.stages = 4 cannot pass a 28x28 input: ... (28x28
 * -> 14x14 -> 7x7) ... expected space.stages of at most 3 ...".
 */
int nas_space_check_input(const nas_space_desc *d, int h, int w, char *msg, size_t n);

void nas_layers_free(nas_layers *l); /* NULL-safe; leaves *l empty */

/* Name of a layer kind ("conv", "dwconv", "bn", "act", "se", "add", "pool",
 * "dropout", "linear"). */
const char *nas_layer_kind_name(int kind);

#ifdef __cplusplus
}
#endif
#endif /* NAS_LAYERS_H */
