/*
 * nas/inspect.h - counting any genotype (cell or chain) and inspecting a
 * space without running a search (`nas space`, docs/spaces.md).
 *
 * MACs are the multiply-accumulates of convolutions (dense, depthwise and
 * the 1x1 convolutions inside SE) and linear layers, per image, biases not
 * counted: the convention of thop (`profile`) and of fvcore restricted to
 * conv and linear (fvcore by default also counts batch norm and adaptive
 * pooling; we do not). BN, activations, pooling, additions, the SE gate
 * and its channel-wise multiply cost 0. FLOPs = 2 x MACs. Params are every
 * trainable parameter: conv and linear weights, biases where a layer has
 * them (SE convs, the classifier), BN gamma and beta (running statistics
 * are buffers, not counted), as torch's sum(p.numel() for p in
 * model.parameters()).
 */
#ifndef NAS_INSPECT_H
#define NAS_INSPECT_H

#include <stdint.h>
#include <stdio.h>
#include "nas/evaluator.h"
#include "nas/layers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MACs per image and trainable parameters of one layer (rules above). */
int64_t nas_layer_macs(const nas_layer *l);
int64_t nas_layer_params(const nas_layer *l);

/* Totals over a network description. Returns NAS_OK or NAS_EINVAL. */
int nas_count_layers(const nas_layers *l, int64_t *macs, int64_t *params);

/*
 * MACs and params of genotype g of any space: nas_evaluator_net_desc and
 * nas_count_net (a chain space's layers, nas_space_layers and
 * nas_count_layers; a cell network's modules). The shape is the evaluator's
 * data when `ev` is non-NULL (then `space` may be NULL), else `space`'s
 * (space.input / space.classes, default 1 x 28 x 28, 10 classes).
 * Errors: NAS_EINVAL (g not in the space), NAS_ENOMEM.
 */
int nas_count_genotype(const nas_evaluator *ev, const nas_space *space, const nas_genotype *g,
                       int64_t *macs, int64_t *params);

typedef struct nas_space_report_opts {
    int samples;          /* random genotypes listed with MACs and params (default 5) */
    uint64_t seed;        /* their seed */
    const char *genotype; /* non-NULL: describe this genotype instead (layer table) */
    uint64_t enumerate_max; /* also count keys by enumeration up to this many genotypes
                               (0: never) */
    int json;             /* 1: one JSON document instead of text */
    int list;             /* 1: every genotype instead, as CSV "genotype,key,macs,params"
                             (spaces of at most enumerate_max genotypes; for making tables) */
    const char *zero_cost; /* non-NULL: comma-separated nas/zerocost.h proxies, one CSV
                              column each, with list (every genotype) or else for
                              `samples` sampled genotypes (issue 31) */
} nas_space_report_opts;

/*
 * What `nas space CONF` prints, to `out`: the space's decisions with their
 * choices, its size, its number of distinct keys (by formula, and by
 * enumeration when the space has at most enumerate_max genotypes), and
 * `samples` random genotypes with key, MACs and params; with o->genotype,
 * that genotype's layer table (chain) or layer list (cell), MACs and
 * params. Counts past 2^63 are printed as "more than 2^63 (about 10^x)",
 * never overflowed. JSON (o->json) also carries the parsed space
 * description, for tools that rebuild the networks (tests/e2e). With
 * o->list, every genotype in enumeration order (nas_space_genotype_at) as
 * CSV with a header row; NAS_EUNSUPPORTED when the space has more than
 * o->enumerate_max genotypes. With o->zero_cost, the same CSV with one
 * column per proxy after params (weights of PCG32(cfg->seed); docs/zero-cost.md),
 * for every genotype (o->list) or o->samples sampled ones, and a
 * progress line on stderr.
 * Errors: NAS_EINVAL / NAS_EFORMAT (bad genotype, message in err),
 * NAS_ENOMEM, NAS_EIO (write error).
 */
int nas_space_report(FILE *out, const nas_config *cfg, const nas_space_report_opts *o,
                     nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_INSPECT_H */
