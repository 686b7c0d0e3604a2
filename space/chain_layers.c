/*
 * space/chain_layers.c - lowering a chain genotype to the network
 * description of nas/layers.h: layers in execution order with every shape
 * inferred. The layer order of each op is the one docs/spaces.md
 * documents ("Layer order"); tests/e2e/chain_torch.py rebuilds the same
 * networks in PyTorch from that text, independently of this file.
 *
 * Convolutions use padding k/2, so a k x k conv of stride s maps H to
 * (H + 2(k/2) - k)/s + 1 = ceil(H/s) for odd k.
 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* realloc, free */
#include <string.h>
#include "nas/layers.h"
#include "space_impl.h"

typedef struct builder {
    nas_layers *out;
    int cur;          /* index of the layer producing the current activation (-1: input) */
    int c, h, w;      /* its shape */
    int stage, index; /* chain layer being built (-1: stem, head) */
    int oom;
} builder;

static nas_layer *push(builder *b, nas_layer_kind kind, const char *name)
{
    nas_layers *o = b->out;
    if (o->n == o->cap) {
        int cap = o->cap ? o->cap * 2 : 64;
        nas_layer *l = realloc(o->l, (size_t)cap * sizeof *l);
        if (!l) {
            b->oom = 1;
            return NULL;
        }
        o->l = l;
        o->cap = cap;
    }
    nas_layer *l = &o->l[o->n];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->src = b->cur;
    l->src2 = -1;
    l->in_c = l->out_c = b->c;
    l->in_h = l->out_h = b->h;
    l->in_w = l->out_w = b->w;
    l->stage = b->stage;
    l->index = b->index;
    snprintf(l->name, sizeof l->name, "%s", name);
    b->cur = o->n++;
    return l;
}

static void conv(builder *b, const char *name, int cout, int k, int stride, int depthwise, int bias)
{
    nas_layer *l = push(b, depthwise ? NAS_LAYER_DWCONV : NAS_LAYER_CONV, name);
    if (!l)
        return;
    l->kernel = k;
    l->stride = stride;
    l->pad = k / 2;
    l->groups = depthwise ? b->c : 1;
    l->bias = bias;
    l->out_c = depthwise ? b->c : cout;
    l->out_h = (b->h + 2 * l->pad - k) / stride + 1;
    l->out_w = (b->w + 2 * l->pad - k) / stride + 1;
    b->c = l->out_c;
    b->h = l->out_h;
    b->w = l->out_w;
}

static void simple(builder *b, nas_layer_kind kind, const char *name, int act)
{
    nas_layer *l = push(b, kind, name);
    if (l)
        l->act = act;
}

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

int nas_space_layers(const nas_space *s, const nas_genotype *g, nas_layers *out, nas_error *err)
{
    if (!out)
        return nas_error_set(err, NAS_EINVAL, "nas_space_layers: NULL argument");
    memset(out, 0, sizeof *out);
    if (!s || !g)
        return nas_error_set(err, NAS_EINVAL, "nas_space_layers: NULL argument");
    const nas__chain *ch = nas__space_chain(s);
    if (!ch)
        return nas_error_set(err, NAS_EUNSUPPORTED,
                             "cell spaces do not lower to the layer description yet");
    nas__chain_pick p;
    if (nas__chain_pick_of(ch, g, &p) != 0)
        return nas_error_set(err, NAS_EINVAL, "genotype is not a member of this chain space");
    const nas_chain_desc *d = nas__chain_desc(ch);
    builder b = {out, -1, 0, 0, 0, -1, -1, 0};
    nas__chain_input(ch, &b.c, &b.h, &b.w, &out->classes);
    out->in_c = b.c;
    out->in_h = b.h;
    out->in_w = b.w;
    char nm[48];

    conv(&b, "stem.conv", d->stem_channels, d->stem_kernel, d->stem_stride, 0, 0);
    simple(&b, NAS_LAYER_BN, "stem.bn", 0);
    simple(&b, NAS_LAYER_ACT, "stem.act", d->stem_act);

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
            if (kind == NAS_CHAIN_ZERO || (kind == NAS_CHAIN_SKIP && same))
                continue; /* dropped / identity: no layer */
            if (kind == NAS_CHAIN_SKIP) { /* projection shortcut (He et al. 2016, option B) */
                conv(&b, NAME("proj"), w, 1, stride, 0, 0);
                simple(&b, NAS_LAYER_BN, NAME("proj_bn"), 0);
            } else if (kind == NAS_CHAIN_CONV) {
                conv(&b, NAME("conv"), w, k, stride, 0, 0);
                simple(&b, NAS_LAYER_BN, NAME("bn"), 0);
                simple(&b, NAS_LAYER_ACT, NAME("act"), st->act);
            } else { /* MBConv (Sandler et al. 2018; SE as in Howard et al. 2019) */
                int block_in = b.cur, e = nas_chain_op_expand(op);
                if (e != 1) {
                    conv(&b, NAME("expand"), b.c * e, 1, 1, 0, 0);
                    simple(&b, NAS_LAYER_BN, NAME("expand_bn"), 0);
                    simple(&b, NAS_LAYER_ACT, NAME("expand_act"), st->act);
                }
                conv(&b, NAME("dw"), 0, k, stride, 1, 0);
                simple(&b, NAS_LAYER_BN, NAME("dw_bn"), 0);
                simple(&b, NAS_LAYER_ACT, NAME("dw_act"), st->act);
                if (p.se[si]) {
                    nas_layer *l = push(&b, NAS_LAYER_SE, NAME("se"));
                    if (l) {
                        l->mid = make_divisible8((double)(b.c / 4)); /* C // 4, as MobileNetV3 and OFA */
                        l->gate_sigmoid = d->se_gate_sigmoid;
                    }
                }
                conv(&b, NAME("project"), w, 1, 1, 0, 0);
                simple(&b, NAS_LAYER_BN, NAME("project_bn"), 0);
                if (same) {
                    nas_layer *l = push(&b, NAS_LAYER_ADD, NAME("add"));
                    if (l)
                        l->src2 = block_in;
                }
            }
#undef NAME
        }
    }
    b.stage = b.index = -1;
    if (d->head_channels > 0) {
        conv(&b, "head.conv", d->head_channels, 1, 1, 0, 0);
        simple(&b, NAS_LAYER_BN, "head.bn", 0);
        simple(&b, NAS_LAYER_ACT, "head.act", d->head_act);
    }
    nas_layer *pl = push(&b, NAS_LAYER_POOL, "head.pool");
    if (pl) {
        pl->out_h = pl->out_w = 1;
        b.h = b.w = 1;
    }
    if (d->head_mix > 0) {
        conv(&b, "head.mix", d->head_mix, 1, 1, 0, 0);
        simple(&b, NAS_LAYER_ACT, "head.mix_act", d->head_act);
    }
    if (d->dropout > 0) {
        nas_layer *l = push(&b, NAS_LAYER_DROPOUT, "head.dropout");
        if (l)
            l->p = d->dropout;
    }
    nas_layer *lin = push(&b, NAS_LAYER_LINEAR, "head.linear");
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

void nas_layers_free(nas_layers *l)
{
    if (!l)
        return;
    free(l->l);
    memset(l, 0, sizeof *l);
}

const char *nas_layer_kind_name(int kind)
{
    static const char *const names[] = {"conv", "dwconv", "bn", "act", "se",
                                        "add", "pool", "dropout", "linear"};
    if (kind < 0 || kind >= (int)(sizeof names / sizeof names[0]))
        return "?";
    return names[kind];
}
