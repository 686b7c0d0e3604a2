/*
 * nas/chain.h - the description of a chain (MobileNet-style) search space,
 * as parsed from space.conf (`space.type = "chain"`, docs/spaces.md).
 *
 * A chain network is a stem (conv k x k, BN, activation), a list of stages
 * of layers, and a head (optional 1x1 conv + BN + activation, global
 * average pooling, optional 1x1 "mix" conv + activation, optional dropout,
 * linear classifier). Each stage fixes a stride (of its first layer), a
 * number of layers and an activation, and may leave open: its width (a
 * list of channel counts), its depth (the first d layers run), its op per
 * layer and squeeze-and-excitation. Each open choice is one decision of
 * the genotype (space/chain.c compiles them; nas/layers.h lowers a
 * genotype to layers). Plain data, no pointers: it lives inside nas_config.
 *
 * Ops are packed into a uint16_t code: kind << 8 | expansion << 4 | kernel
 * (see nas_chain_op_*): MBConv (Sandler et al., "MobileNetV2", CVPR 2018)
 * `mb<e>_k<k>`, plain `conv_k<k>`, `skip` and `zero`.
 */
#ifndef NAS_CHAIN_H
#define NAS_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NAS_CHAIN_MAX_STAGES 12
#define NAS_CHAIN_MAX_LAYERS 16  /* per stage */
#define NAS_CHAIN_MAX_CHOICES 16 /* widths or depths of one stage */
#define NAS_CHAIN_MAX_OPS 32     /* ops of one stage */

typedef enum nas_chain_op_kind {
    NAS_CHAIN_MB = 1,   /* mb<e>_k<k>: inverted residual, e in 1..8, k in 3, 5, 7 */
    NAS_CHAIN_CONV = 2, /* conv_k<k>: conv, BN, activation; k in 1, 3, 5, 7 */
    NAS_CHAIN_SKIP = 3, /* identity, or 1x1 conv + BN where the shape changes */
    NAS_CHAIN_ZERO = 4  /* layer dropped (only where input and output shapes match) */
} nas_chain_op_kind;

typedef enum nas_act { NAS_ACT_RELU = 0, NAS_ACT_RELU6, NAS_ACT_HSWISH, NAS_ACT_NONE } nas_act;

static inline int nas_chain_op_kind_of(uint16_t op) { return op >> 8; }
static inline int nas_chain_op_expand(uint16_t op) { return (op >> 4) & 15; }
static inline int nas_chain_op_kernel(uint16_t op) { return op & 15; }
static inline uint16_t nas_chain_op_make(int kind, int e, int k)
{
    return (uint16_t)((kind << 8) | ((e & 15) << 4) | (k & 15));
}

/* Op name ("mb6_k3", "conv_k3", "skip", "zero") into buf; returns buf. */
const char *nas_chain_op_name(uint16_t op, char *buf, size_t n);

/* Parse an op name. Returns 0 and sets *op, or -1 for an unknown name
 * (e.g. "mb6_k9": k must be 3, 5 or 7). */
int nas_chain_op_parse(const char *name, uint16_t *op);

/* "relu", "relu6", "hswish" (NULL for other values). */
const char *nas_act_name(int act);

typedef struct nas_chain_stage {
    int n_width;                         /* channel choices (1 when fixed) */
    int width[NAS_CHAIN_MAX_CHOICES];
    int width_choice;                    /* 1: `channels` was a list: a decision */
    int stride;                          /* of the first layer: 1 or 2 (up to 4) */
    int layers;                          /* layers of the stage */
    int n_depth;                         /* 0: no depth decision (all layers run) */
    int depth[NAS_CHAIN_MAX_CHOICES];
    int n_ops;                           /* ops allowed at every layer */
    uint16_t ops[NAS_CHAIN_MAX_OPS];
    int n_first;                         /* ops at layer 0 instead (0: same as ops) */
    uint16_t first[NAS_CHAIN_MAX_OPS];
    int se;                              /* 0 off, 1 on, 2 a decision */
    int act;                             /* nas_act of the MBConv / conv layers */
    /* source lines for pass-2 messages (0 = not set) */
    int line, line_width, line_stride, line_layers, line_depth, line_ops, line_first;
} nas_chain_stage;

typedef struct nas_chain_desc {
    int stem_kernel, stem_channels, stem_stride, stem_act;
    int n_stages;
    nas_chain_stage stages[NAS_CHAIN_MAX_STAGES];
    int head_channels;  /* 1x1 conv + BN + act before pooling; 0 = none */
    int head_mix;       /* 1x1 conv (no BN, no bias) + act after pooling; 0 = none */
    int head_act;
    double dropout;     /* before the classifier; 0 = none */
    int se_gate_sigmoid;/* 0: hard sigmoid gate (MobileNetV3), 1: sigmoid */
    int line_stem, line_stages, line_head, line_se_gate, line_input, line_classes;
} nas_chain_desc;

#ifdef __cplusplus
}
#endif
#endif /* NAS_CHAIN_H */
