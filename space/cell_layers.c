/*
 * space/cell_layers.c - lowering a cell genotype to NAS-Bench-201's
 * TinyNetwork (Dong & Yang, "NAS-Bench-201", ICLR 2020) as the network
 * description of nas/layers.h (nas_cell_layers says the order). The order
 * is the one trainer/net.c has always built the network in, so weights
 * initialised from the same seed, and every result, stay bit-identical.
 */
#include <stdio.h>  /* snprintf */
#include <string.h> /* memset */
#include "nas/chain.h" /* nas_act */
#include "nas/layers.h"
#include "layers_impl.h"
#include "space_impl.h"

#define NM(...) (snprintf(nm, sizeof nm, __VA_ARGS__), nm)

/* One cell (InferCell): node j = sum over k < j of op_(j<-k)(node k). */
static void cell(nas__lb *b, const nas_genotype *g, int ci)
{
    char nm[48];
    int node[NAS_CELL_NODES], relu_of[NAS_CELL_NODES];
    int c = b->c, h = b->h, w = b->w;
    node[0] = b->cur;
    for (int j = 0; j < NAS_CELL_NODES; j++)
        relu_of[j] = -2; /* -2: not made yet (-1 is the network input) */
    for (int j = 1; j < NAS_CELL_NODES; j++) {
        int in[NAS_CELL_NODES], n_in = 0;
        for (int k = 0; k < j; k++) {
            int e = nas__cell_edge(j, k), op = g->tok[e];
            if (op == NAS_OP_SKIP_CONNECT) {
                in[n_in++] = node[k];
            } else if (op == NAS_OP_NOR_CONV_1X1 || op == NAS_OP_NOR_CONV_3X3) {
                int kk = op == NAS_OP_NOR_CONV_3X3 ? 3 : 1;
                if (relu_of[k] == -2) {
                    nas__lb_seek(b, node[k], c, h, w);
                    nas__lb_simple(b, NAS_LAYER_ACT, NM("cells.%d.layers.%d.op.0", ci, e),
                                   NAS_ACT_RELU);
                    relu_of[k] = b->cur;
                }
                nas__lb_seek(b, relu_of[k], c, h, w);
                nas__lb_conv(b, NM("cells.%d.layers.%d.op.1", ci, e), c, kk, 1, kk / 2, 0, 0);
                nas__lb_simple(b, NAS_LAYER_BN, NM("cells.%d.layers.%d.op.2", ci, e), 0);
                in[n_in++] = b->cur;
            } else if (op == NAS_OP_AVG_POOL_3X3) {
                nas__lb_seek(b, node[k], c, h, w);
                nas_layer *l = nas__lb_push(b, NAS_LAYER_AVGPOOL, NM("cells.%d.layers.%d.op", ci, e));
                if (l) {
                    l->kernel = 3;
                    l->stride = l->pad = 1;
                }
                in[n_in++] = b->cur;
            }
        }
        if (n_in == 1) {
            node[j] = in[0]; /* one operand: the node is that operand */
            continue;
        }
        nas__lb_seek(b, n_in ? in[0] : node[0], c, h, w);
        nas_layer *l = nas__lb_push(b, NAS_LAYER_ADD, NM("cells.%d.node%d", ci, j));
        if (l) {
            l->n_src = n_in;
            l->src2 = n_in > 1 ? in[1] : -1;
            l->src3 = n_in > 2 ? in[2] : -1;
        }
        node[j] = b->cur;
    }
    nas__lb_seek(b, node[NAS_CELL_NODES - 1], c, h, w);
}

/* The ResNet basic block with stride 2 between stages (NAS-Bench-201's
 * ResNetBasicblock). 0, or NAS_EINVAL when H or W is odd. */
static int reduction(nas__lb *b, int ci)
{
    char nm[48];
    int x = b->cur, c = b->c, h = b->h, w = b->w, cout = 2 * c;
    if (h % 2 || w % 2)
        return NAS_EINVAL;
    nas__lb_simple(b, NAS_LAYER_ACT, NM("cells.%d.conv_a.op.0", ci), NAS_ACT_RELU);
    nas__lb_conv(b, NM("cells.%d.conv_a.op.1", ci), cout, 3, 2, 1, 0, 0);
    nas__lb_simple(b, NAS_LAYER_BN, NM("cells.%d.conv_a.op.2", ci), 0);
    nas__lb_simple(b, NAS_LAYER_ACT, NM("cells.%d.conv_b.op.0", ci), NAS_ACT_RELU);
    nas__lb_conv(b, NM("cells.%d.conv_b.op.1", ci), cout, 3, 1, 1, 0, 0);
    nas__lb_simple(b, NAS_LAYER_BN, NM("cells.%d.conv_b.op.2", ci), 0);
    int main_out = b->cur;
    nas__lb_seek(b, x, c, h, w);
    nas_layer *p = nas__lb_push(b, NAS_LAYER_AVGPOOL, NM("cells.%d.downsample.0", ci));
    if (p) {
        p->kernel = p->stride = 2;
        p->out_h = h / 2;
        p->out_w = w / 2;
        b->h = h / 2;
        b->w = w / 2;
    }
    nas__lb_conv(b, NM("cells.%d.downsample.1", ci), cout, 1, 1, 0, 0, 0);
    int shortcut = b->cur;
    nas__lb_seek(b, main_out, cout, h / 2, w / 2);
    nas_layer *a = nas__lb_push(b, NAS_LAYER_ADD, NM("cells.%d.add", ci));
    if (a) {
        a->n_src = 2;
        a->src2 = shortcut;
    }
    return 0;
}

int nas_space_check_input(const nas_space_desc *d, int h, int w, char *msg, size_t n)
{
    if (!d || d->type != NAS_SPACE_CELL || h <= 0 || w <= 0)
        return NAS_OK;
    char path[160];
    int used = snprintf(path, sizeof path, "%dx%d", h, w);
    int ch = h, cw = w;
    for (int s = 1; s < d->stages; s++) {
        if (ch % 2 || cw % 2) {
            if (msg && n)
                snprintf(msg, n,
                         "space.stages = %d cannot pass a %dx%d input: each stage after the first "
                         "opens with a reduction block that halves the feature map (%s), and stage %d "
                         "would halve %dx%d, an odd size, expected space.stages of at most %d for "
                         "this input",
                         d->stages, h, w, path, s + 1, ch, cw, s);
            return NAS_ECONFIG;
        }
        ch /= 2;
        cw /= 2;
        if (used > 0 && (size_t)used < sizeof path)
            used += snprintf(path + used, sizeof path - (size_t)used, " -> %dx%d", ch, cw);
    }
    return NAS_OK;
}

static int check(const nas_space_desc *d, const nas_genotype *g, nas_error *err)
{
    if (g->len != NAS_CELL_EDGES)
        return nas_error_set(err, NAS_EINVAL, "genotype has %d tokens, a cell needs %d", g->len,
                             NAS_CELL_EDGES);
    for (int e = 0; e < NAS_CELL_EDGES; e++)
        if (g->tok[e] >= NAS_OP_COUNT)
            return nas_error_set(err, NAS_EINVAL, "edge %d: invalid op id %d", e, g->tok[e]);
    if (d->channels <= 0 || d->stages <= 0 || d->cells_per_stage < 0 || d->in_c <= 0 ||
        d->in_h <= 0 || d->in_w <= 0 || d->classes <= 1)
        return nas_error_set(err, NAS_EINVAL,
                             "bad network description (channels %d, stages %d, cells %d, input "
                             "%dx%dx%d, classes %d)",
                             d->channels, d->stages, d->cells_per_stage, d->in_c, d->in_h,
                             d->in_w, d->classes);
    return NAS_OK;
}

int nas_cell_layers(const nas_space_desc *d, const nas_genotype *g, nas_layers *out,
                    nas_error *err)
{
    if (!out)
        return nas_error_set(err, NAS_EINVAL, "nas_cell_layers: NULL argument");
    memset(out, 0, sizeof *out);
    if (!d || !g)
        return nas_error_set(err, NAS_EINVAL, "nas_cell_layers: NULL argument");
    int rc = check(d, g, err);
    if (rc)
        return rc;
    nas__lb b = {out, -1, d->in_c, d->in_h, d->in_w, -1, -1, 0};
    out->in_c = d->in_c;
    out->in_h = d->in_h;
    out->in_w = d->in_w;
    out->classes = d->classes;
    nas__lb_conv(&b, "stem.0", d->channels, 3, 1, 1, 0, 0);
    nas__lb_simple(&b, NAS_LAYER_BN, "stem.1", 0);
    int ci = 0;
    for (int s = 0; s < d->stages && !rc; s++) {
        b.stage = s;
        if (s > 0) {
            b.index = ci;
            rc = reduction(&b, ci++);
        }
        for (int c = 0; c < d->cells_per_stage && !rc; c++) {
            b.index = ci;
            cell(&b, g, ci++);
        }
    }
    b.stage = b.index = -1;
    nas__lb_simple(&b, NAS_LAYER_BN, "lastact.0", 0);
    nas__lb_simple(&b, NAS_LAYER_ACT, "lastact.1", NAS_ACT_RELU);
    nas_layer *pl = nas__lb_push(&b, NAS_LAYER_POOL, "global_pooling");
    if (pl) {
        pl->out_h = pl->out_w = 1;
        b.h = b.w = 1;
    }
    nas_layer *lin = nas__lb_push(&b, NAS_LAYER_LINEAR, "classifier");
    if (lin) {
        lin->in_c = b.c;
        lin->in_h = lin->in_w = 1;
        lin->out_c = d->classes;
        lin->out_h = lin->out_w = 1;
        lin->bias = 1;
    }
    if (rc || b.oom) {
        nas_layers_free(out);
        if (rc) {
            char why[sizeof err->msg];
            nas_space_check_input(d, d->in_h, d->in_w, why, sizeof why);
            return nas_error_set(err, rc, "%s", why);
        }
        return nas_error_set(err, NAS_ENOMEM, "out of memory building the layer description");
    }
    return NAS_OK;
}
