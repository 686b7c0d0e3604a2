/*
 * space/layers_impl.h - the small builder that space/chain_layers.c and
 * space/cell_layers.c use to append layers of nas/layers.h with their
 * shapes inferred (space/layers.c). Not public: only space/ includes it.
 */
#ifndef NAS_SPACE_LAYERS_IMPL_H
#define NAS_SPACE_LAYERS_IMPL_H

#include "nas/layers.h"

typedef struct nas__lb {
    nas_layers *out;
    int cur;          /* index of the layer producing the current activation (-1: input) */
    int c, h, w;      /* its shape (per image) */
    int stage, index; /* stage and layer (chain) or cell (cell) being built; -1: stem, head */
    int oom;          /* 1 once an append ran out of memory (later appends do nothing) */
} nas__lb;

/* Append a layer of `kind` reading the current activation, with the output
 * shape equal to the input's; it becomes the current one. NULL when out of
 * memory (b->oom is then set). */
nas_layer *nas__lb_push(nas__lb *b, nas_layer_kind kind, const char *name);

/* Append a k x k convolution of stride `stride`, padding `pad` (< 0: k/2),
 * to `cout` channels (depthwise: groups = channels, cout ignored). */
void nas__lb_conv(nas__lb *b, const char *name, int cout, int k, int stride, int pad,
                  int depthwise, int bias);

/* Append a shape-keeping layer (BN, ACT with activation `act`). */
void nas__lb_simple(nas__lb *b, nas_layer_kind kind, const char *name, int act);

/* Make layer `i` (-1: the input) the current activation, of shape c x h x w. */
void nas__lb_seek(nas__lb *b, int i, int c, int h, int w);

#endif
