/*
 * space/chain_layers.c - lowering a chain genotype to the network
 * description of nas/layers.h: layers in execution order with every shape
 * inferred. The layer order of each op is the one docs/spaces.md
 * documents ("Layer order"); tests/e2e/chain_torch.py rebuilds the same
 * networks in PyTorch from that text, independently of this file.
 *
 * The chain type's table (space_impl.h) is here, over space/chain.c.
 *
 * Convolutions use padding k/2, so a k x k conv of stride s maps H to
 * (H + 2(k/2) - k)/s + 1 = ceil(H/s) for odd k.
 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* realloc, free */
#include <string.h>
#include "nas/layers.h"
#include "space_impl.h"
#include "layers_impl.h"

/* MobileNetV3's _make_divisible(v, 8): round to the nearest multiple of 8,
 * at least 8, never below 90% of v. */
static int make_divisible8(double v)
{
    int n = (int)(v + 4) / 8 * 8;
    if (n < 8)
        n = 8;
    if (n < 0.9 * v)
        n += 8;
    return n;
}

/* The chain type's lowering (nas_space_layers). */
static int chain_layers(const void *self, const nas_genotype *g, nas_layers *out, nas_error *err)
{
    const nas__chain *ch = self;
    nas__chain_pick p;
    if (nas__chain_pick_of(ch, g, &p) != 0)
        return nas_error_set(err, NAS_EINVAL, "genotype is not a member of this chain space");
    const nas_chain_desc *d = nas__chain_desc(ch);
    nas__lb b = {out, -1, 0, 0, 0, -1, -1, 0};
    nas__chain_input(ch, &b.c, &b.h, &b.w, &out->classes);
    out->in_c = b.c;
    out->in_h = b.h;
    out->in_w = b.w;
    char nm[48];

    nas__lb_conv(&b, "stem.conv", d->stem_channels, d->stem_kernel, d->stem_stride, -1, 0, 0);
    nas__lb_simple(&b, NAS_LAYER_BN, "stem.bn", 0);
    nas__lb_simple(&b, NAS_LAYER_ACT, "stem.act", d->stem_act);

    for (int si = 0; si < d->n_stages; si++) {
        const nas_chain_stage *st = &d->stages[si];
        int w = p.width[si];
        for (int li = 0; li < p.depth[si]; li++) {
            uint16_t op = p.op[si][li];
            int stride = li == 0 ? st->stride : 1;
            int same = stride == 1 && b.c == w;
            int kind = nas_chain_op_kind_of(op), k = nas_chain_op_kernel(op);
            b.stage = si + 1;
            b.index = li;
#define NAME(part) (snprintf(nm, sizeof nm, "s%d.l%d.%s", si + 1, li, part), nm)
            if (nas__chain_op_is_noop(op, same))
                continue; /* dropped / identity: no layer */
            if (kind == NAS_CHAIN_SKIP) { /* projection shortcut (He et al. 2016, option B) */
                nas__lb_conv(&b, NAME("proj"), w, 1, stride, -1, 0, 0);
                nas__lb_simple(&b, NAS_LAYER_BN, NAME("proj_bn"), 0);
            } else if (kind == NAS_CHAIN_CONV) {
                nas__lb_conv(&b, NAME("conv"), w, k, stride, -1, 0, 0);
                nas__lb_simple(&b, NAS_LAYER_BN, NAME("bn"), 0);
                nas__lb_simple(&b, NAS_LAYER_ACT, NAME("act"), st->act);
            } else { /* MBConv (Sandler et al. 2018; SE as in Howard et al. 2019) */
                int block_in = b.cur, e = nas_chain_op_expand(op);
                if (e != 1) {
                    nas__lb_conv(&b, NAME("expand"), b.c * e, 1, 1, -1, 0, 0);
                    nas__lb_simple(&b, NAS_LAYER_BN, NAME("expand_bn"), 0);
                    nas__lb_simple(&b, NAS_LAYER_ACT, NAME("expand_act"), st->act);
                }
                nas__lb_conv(&b, NAME("dw"), 0, k, stride, -1, 1, 0);
                nas__lb_simple(&b, NAS_LAYER_BN, NAME("dw_bn"), 0);
                nas__lb_simple(&b, NAS_LAYER_ACT, NAME("dw_act"), st->act);
                if (p.se[si]) {
                    nas_layer *l = nas__lb_push(&b, NAS_LAYER_SE, NAME("se"));
                    if (l) {
                        l->mid = make_divisible8((double)(b.c / 4)); /* C // 4, as MobileNetV3 and OFA */
                        l->gate_sigmoid = d->se_gate_sigmoid;
                    }
                }
                nas__lb_conv(&b, NAME("project"), w, 1, 1, -1, 0, 0);
                nas__lb_simple(&b, NAS_LAYER_BN, NAME("project_bn"), 0);
                if (same) {
                    nas_layer *l = nas__lb_push(&b, NAS_LAYER_ADD, NAME("add"));
                    if (l) {
                        l->src2 = block_in;
                        l->n_src = 2;
                    }
                }
            }
#undef NAME
        }
    }
    b.stage = b.index = -1;
    if (d->head_channels > 0) {
        nas__lb_conv(&b, "head.conv", d->head_channels, 1, 1, -1, 0, 0);
        nas__lb_simple(&b, NAS_LAYER_BN, "head.bn", 0);
        nas__lb_simple(&b, NAS_LAYER_ACT, "head.act", d->head_act);
    }
    nas_layer *pl = nas__lb_push(&b, NAS_LAYER_POOL, "head.pool");
    if (pl) {
        pl->out_h = pl->out_w = 1;
        b.h = b.w = 1;
    }
    if (d->head_mix > 0) {
        nas__lb_conv(&b, "head.mix", d->head_mix, 1, 1, -1, 0, 0);
        nas__lb_simple(&b, NAS_LAYER_ACT, "head.mix_act", d->head_act);
    }
    if (d->dropout > 0) {
        nas_layer *l = nas__lb_push(&b, NAS_LAYER_DROPOUT, "head.dropout");
        if (l)
            l->p = d->dropout;
    }
    nas_layer *lin = nas__lb_push(&b, NAS_LAYER_LINEAR, "head.linear");
    if (lin) {
        lin->in_c = b.c * b.h * b.w;
        lin->in_h = lin->in_w = 1;
        lin->out_c = out->classes;
        lin->out_h = lin->out_w = 1;
        lin->bias = 1;
    }
    if (b.oom) {
        nas_layers_free(out);
        return nas_error_set(err, NAS_ENOMEM, "out of memory building the layer description");
    }
    return NAS_OK;
}

const nas__space_type nas__chain_type = {
    .id = NAS_SPACE_CHAIN,
    .create = nas__chain_create,
    .destroy = nas__chain_destroy,
    .seq_len = nas__chain_seq_len,
    .vocab_size = nas__chain_vocab_size,
    .token_allowed = nas__chain_token_allowed,
    .size = nas__chain_size,
    .is_valid = nas__chain_is_valid,
    .sample = nas__chain_sample,
    .mutate = nas__chain_mutate,
    .format = nas__chain_format,
    .parse = nas__chain_parse,
    .key = nas__chain_key,
    .counts = nas__chain_counts,
    .decision_name = nas__chain_decision_name,
    .decision_choices = nas__chain_decision_choices,
    .decision_token = nas__chain_decision_token,
    .token_name = nas__chain_token_name,
    .layers = chain_layers,
};
