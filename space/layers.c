/*
 * space/layers.c - appending layers to a network description (nas/layers.h)
 * with shapes inferred; freeing it; layer kind names.
 */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* realloc, free */
#include <string.h> /* memset */
#include "layers_impl.h"

nas_layer *nas__lb_push(nas__lb *b, nas_layer_kind kind, const char *name)
{
    nas_layers *o = b->out;
    if (b->oom)
        return NULL;
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
    l->src2 = l->src3 = -1;
    l->in_c = l->out_c = b->c;
    l->in_h = l->out_h = b->h;
    l->in_w = l->out_w = b->w;
    l->stage = b->stage;
    l->index = b->index;
    snprintf(l->name, sizeof l->name, "%s", name);
    b->cur = o->n++;
    return l;
}

void nas__lb_conv(nas__lb *b, const char *name, int cout, int k, int stride, int pad,
                  int depthwise, int bias)
{
    nas_layer *l = nas__lb_push(b, depthwise ? NAS_LAYER_DWCONV : NAS_LAYER_CONV, name);
    if (!l)
        return;
    l->kernel = k;
    l->stride = stride;
    l->pad = pad < 0 ? k / 2 : pad;
    l->groups = depthwise ? b->c : 1;
    l->bias = bias;
    l->out_c = depthwise ? b->c : cout;
    l->out_h = (b->h + 2 * l->pad - k) / stride + 1;
    l->out_w = (b->w + 2 * l->pad - k) / stride + 1;
    b->c = l->out_c;
    b->h = l->out_h;
    b->w = l->out_w;
}

void nas__lb_simple(nas__lb *b, nas_layer_kind kind, const char *name, int act)
{
    nas_layer *l = nas__lb_push(b, kind, name);
    if (l)
        l->act = act;
}

void nas__lb_seek(nas__lb *b, int i, int c, int h, int w)
{
    b->cur = i;
    b->c = c;
    b->h = h;
    b->w = w;
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
    static const char *const names[] = {"conv", "dwconv",  "bn",     "act",    "se",
                                        "add",  "pool",    "dropout", "linear", "avgpool"};
    if (kind < 0 || kind >= (int)(sizeof names / sizeof names[0]))
        return "?";
    return names[kind];
}
