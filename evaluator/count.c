/*
 * evaluator/count.c - analytic MACs and parameters of the NAS-Bench-201
 * TinyNetwork (Dong & Yang, ICLR 2020), layer by layer, in PyTorch module
 * order and with PyTorch's module paths, as listed in
 * ../shared/reference/nb201-tinynetwork-fmnist.md.
 *
 * Counting rules (as PyTorch counters such as thop/ptflops do): a
 * convolution costs K*C*R*R MACs per output pixel, the linear layer K*M
 * MACs; BN, ReLU, pooling and sums cost nothing. Parameters: conv weights
 * (no bias), BN gamma and beta (running statistics are buffers), linear
 * weight and bias. Rows are reported for convolutions, batch norms, average
 * pools (edges and reduction shortcuts) and the classifier; ReLU, global
 * pooling and sums have no row (the reference table lists none).
 */
#include <stdio.h>  /* snprintf */
#include <string.h> /* memset */
#include "nas/evaluator.h"
#include "nas/inspect.h"
#include "nas/layers.h"

typedef struct counter {
    int64_t macs, params;
    void (*layer)(void *ctx, const nas_layer_info *info);
    void *ctx;
} counter;

/* Shape of the activation flowing through the network. */
typedef struct shape {
    int c, h, w;
} shape;

static void emit(counter *k, const char *module, const char *op, shape in, shape out,
                 int64_t params, int64_t macs)
{
    k->params += params;
    k->macs += macs;
    if (!k->layer)
        return;
    nas_layer_info li;
    memset(&li, 0, sizeof li);
    snprintf(li.module, sizeof li.module, "%s", module);
    snprintf(li.op, sizeof li.op, "%s", op);
    li.in_c = in.c;
    li.in_h = in.h;
    li.in_w = in.w;
    li.out_c = out.c;
    li.out_h = out.h;
    li.out_w = out.w;
    li.params = params;
    li.macs = macs;
    k->layer(k->ctx, &li);
}

static shape conv(counter *k, const char *module, shape in, int cout, int r, int stride, int pad)
{
    shape out = {cout, (in.h + 2 * pad - r) / stride + 1, (in.w + 2 * pad - r) / stride + 1};
    char op[24];
    snprintf(op, sizeof op, "conv%dx%d s%d", r, r, stride);
    int64_t params = (int64_t)cout * in.c * r * r;
    emit(k, module, op, in, out, params, params * out.h * out.w);
    return out;
}

static void bn(counter *k, const char *module, shape s)
{
    emit(k, module, "batchnorm", s, s, 2 * (int64_t)s.c, 0);
}

static shape pool(counter *k, const char *module, shape in, int r, int stride, int pad)
{
    shape out = {in.c, (in.h + 2 * pad - r) / stride + 1, (in.w + 2 * pad - r) / stride + 1};
    char op[24];
    if (stride == 1)
        snprintf(op, sizeof op, "avgpool%d", r);
    else
        snprintf(op, sizeof op, "avgpool%d s%d", r, stride);
    emit(k, module, op, in, out, 0, 0);
    return out;
}

int nas_count_net(const nas_net_desc *desc, int64_t *macs, int64_t *params,
                  void (*layer)(void *ctx, const nas_layer_info *info), void *ctx)
{
    if (macs)
        *macs = 0;
    if (params)
        *params = 0;
    if (desc && desc->space) { /* issue 15: a chain network counts from its layers */
        nas_layers l;
        int rc = nas_space_layers(desc->space, &desc->genotype, &l, NULL);
        if (rc == NAS_OK)
            rc = nas_count_layers(&l, macs, params);
        nas_layers_free(&l);
        return rc;
    }
    if (!desc || desc->genotype.len != NAS_CELL_EDGES || desc->channels <= 0 ||
        desc->stages <= 0 || desc->cells_per_stage < 0 || desc->in_c <= 0 || desc->in_h <= 0 ||
        desc->in_w <= 0 || desc->classes <= 0)
        return NAS_EINVAL;
    for (int e = 0; e < NAS_CELL_EDGES; e++)
        if (desc->genotype.tok[e] >= NAS_OP_COUNT)
            return NAS_EINVAL;

    counter k = {0, 0, layer, ctx};
    char m[96];
    shape s = {desc->in_c, desc->in_h, desc->in_w};
    int C = desc->channels;
    s = conv(&k, "stem.0", s, C, 3, 1, 1);
    bn(&k, "stem.1", s);
    int cell = 0;
    for (int st = 0; st < desc->stages; st++) {
        if (st > 0) {
            /* ResNet basic block with stride 2 (NAS-Bench-201's ResNetBasicblock). */
            int cout = s.c * 2;
            shape in = s;
            snprintf(m, sizeof m, "cells.%d.conv_a.op.1", cell);
            shape a = conv(&k, m, in, cout, 3, 2, 1);
            snprintf(m, sizeof m, "cells.%d.conv_a.op.2", cell);
            bn(&k, m, a);
            snprintf(m, sizeof m, "cells.%d.conv_b.op.1", cell);
            shape b = conv(&k, m, a, cout, 3, 1, 1);
            snprintf(m, sizeof m, "cells.%d.conv_b.op.2", cell);
            bn(&k, m, b);
            snprintf(m, sizeof m, "cells.%d.downsample.0", cell);
            shape p = pool(&k, m, in, 2, 2, 0);
            snprintf(m, sizeof m, "cells.%d.downsample.1", cell);
            shape d = conv(&k, m, p, cout, 1, 1, 0);
            if (d.h != b.h || d.w != b.w)
                return NAS_EINVAL; /* odd spatial size: the residual sum would not fit */
            s = b;
            cell++;
        }
        for (int n = 0; n < desc->cells_per_stage; n++, cell++) {
            for (int e = 0; e < NAS_CELL_EDGES; e++) {
                int op = desc->genotype.tok[e];
                if (op == NAS_OP_NOR_CONV_1X1 || op == NAS_OP_NOR_CONV_3X3) {
                    int r = op == NAS_OP_NOR_CONV_3X3 ? 3 : 1;
                    snprintf(m, sizeof m, "cells.%d.layers.%d.op.1", cell, e);
                    conv(&k, m, s, s.c, r, 1, r / 2);
                    snprintf(m, sizeof m, "cells.%d.layers.%d.op.2", cell, e);
                    bn(&k, m, s);
                } else if (op == NAS_OP_AVG_POOL_3X3) {
                    snprintf(m, sizeof m, "cells.%d.layers.%d.op", cell, e);
                    pool(&k, m, s, 3, 1, 1);
                }
            }
        }
    }
    bn(&k, "lastact.0", s);
    shape feat = {s.c, 1, 1}, out = {desc->classes, 1, 1};
    int64_t lw = (int64_t)desc->classes * s.c;
    emit(&k, "classifier", "linear", feat, out, lw + desc->classes, lw);
    if (macs)
        *macs = k.macs;
    if (params)
        *params = k.params;
    return NAS_OK;
}
