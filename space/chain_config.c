/*
 * space/chain_config.c - the chain keys of the `space` group of space.conf
 * (docs/spaces.md, docs/space-conf.md): stem, stages, head, se_gate, and
 * the input shape and class count (input, classes) of either space type.
 *
 * space/config.c hands these settings over in pass 1 (nas__chain_read),
 * calls nas__chain_validate in pass 2 and asks nas__space_canonical_field
 * for their canonical text. Errors come back as a message and the setting
 * (pass 1) or line (pass 2) they are about; config.c prefixes "FILE:LINE: ".
 */
#include <stdarg.h> /* va_list */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc */
#include <string.h>
#include <libconfig.h>
#include "nas/layers.h"
#include "space_impl.h"
#include "chain_config.h"
#include "nas/suggest.h" /* nas_suggest_hint: "did you mean" */
#include "text_impl.h"

static const char *const act_words = "\"relu\", \"relu6\", \"hswish\"";
static const char *const op_words =
    "mb<e>_k<k> (e in 1..8, k in 3, 5, 7), conv_k<k> (k in 1, 3, 5, 7), skip, zero";

int nas__chain_claims(const char *name, const config_setting_t *s)
{
    if (strcmp(name, "stages") == 0)
        return config_setting_type(s) == CONFIG_TYPE_LIST;
    return strcmp(name, "stem") == 0 || strcmp(name, "head") == 0 || strcmp(name, "input") == 0 ||
           strcmp(name, "classes") == 0 || strcmp(name, "se_gate") == 0;
}

typedef struct rd {
    const config_setting_t **bad;
    char *msg;
    size_t n;
} rd;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int bad(rd *r, const config_setting_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, r->n, fmt, ap);
    va_end(ap);
    *r->bad = s;
    return NAS_ECONFIG;
}

static int is_int(const config_setting_t *s)
{
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
}

static int get_int(rd *r, const config_setting_t *s, const char *key, int lo, int hi, int *out)
{
    if (!is_int(s))
        return bad(r, s, "%s is not an integer, expected an integer in [%d, %d]", key, lo, hi);
    long long v = config_setting_get_int64(s);
    if (v < lo || v > hi)
        return bad(r, s, "%s = %lld is out of range, expected an integer in [%d, %d]", key, v, lo, hi);
    *out = (int)v;
    return NAS_OK;
}

static int get_act(rd *r, const config_setting_t *s, const char *key, int *out)
{
    const char *v = config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;
    for (int a = NAS_ACT_RELU; v && a <= NAS_ACT_HSWISH; a++)
        if (strcmp(v, nas_act_name(a)) == 0) {
            *out = a;
            return NAS_OK;
        }
    char hint[96];
    return bad(r, s, "%s%s%s%s is not an activation, expected one of: %s%s", key, v ? " = \"" : "",
               v ? v : "", v ? "\"" : "", act_words, nas_suggest_hint(v, act_words, hint, sizeof hint));
}

/* An int or a list of ints -> choices; *is_list = 1 for a list. */
static int get_ints(rd *r, const config_setting_t *s, const char *key, int lo, int hi, int *vals,
                    int *n, int *is_list)
{
    if (is_int(s)) {
        *is_list = 0;
        *n = 1;
        return get_int(r, s, key, lo, hi, &vals[0]);
    }
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
        return bad(r, s, "%s is neither an integer nor a list, expected an integer or a list of "
                         "choices like [2, 3, 4]", key);
    int m = config_setting_length(s);
    if (m == 0)
        return bad(r, s, "%s is an empty choice list, expected at least one value", key);
    if (m > NAS_CHAIN_MAX_CHOICES)
        return bad(r, s, "%s has %d choices, expected at most %d", key, m, NAS_CHAIN_MAX_CHOICES);
    for (int i = 0; i < m; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char k[64];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        int rc = get_int(r, e, k, lo, hi, &vals[i]);
        if (rc)
            return rc;
        for (int j = 0; j < i; j++)
            if (vals[j] == vals[i])
                return bad(r, e, "%s lists %d twice, expected each choice once", key, vals[i]);
    }
    *n = m;
    *is_list = 1;
    return NAS_OK;
}

static int get_ops(rd *r, const config_setting_t *s, const char *key, uint16_t *ops, int *n)
{
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
        return bad(r, s, "%s is not a list, expected a list of ops like [\"mb3_k3\", \"mb6_k5\", "
                         "\"skip\"]", key);
    int m = config_setting_length(s);
    if (m == 0)
        return bad(r, s, "%s is an empty choice list, expected at least one op: %s", key, op_words);
    if (m > NAS_CHAIN_MAX_OPS)
        return bad(r, s, "%s has %d ops, expected at most %d", key, m, NAS_CHAIN_MAX_OPS);
    for (int i = 0; i < m; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING)
            return bad(r, e, "%s[%d] is not a string, expected an op name: %s", key, i, op_words);
        const char *name = config_setting_get_string(e);
        char hint[96];
        if (nas_chain_op_parse(name, &ops[i]) != 0)
            return bad(r, e, "unknown op '%s' in %s, expected one of: %s%s", name, key, op_words,
                       nas_suggest_hint(name, op_words, hint, sizeof hint));
        for (int j = 0; j < i; j++)
            if (ops[j] == ops[i])
                return bad(r, e, "op '%s' is listed twice in %s, expected each op once", name, key);
    }
    *n = m;
    return NAS_OK;
}

static int read_stem(rd *r, const config_setting_t *s, nas_chain_desc *d)
{
    if (config_setting_type(s) != CONFIG_TYPE_GROUP)
        return bad(r, s, "space.stem is not a group, expected { kernel = 3; channels = 16; stride = 1; "
                         "activation = \"relu\"; }");
    d->line_stem = config_setting_source_line(s);
    d->stem_kernel = 3;
    d->stem_stride = 1;
    int n = config_setting_length(s), have_c = 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        const char *k = config_setting_name(e);
        int rc;
        if (strcmp(k, "kernel") == 0) {
            rc = get_int(r, e, "space.stem.kernel", 1, 11, &d->stem_kernel);
            if (!rc && d->stem_kernel % 2 == 0)
                rc = bad(r, e, "space.stem.kernel = %d is even, expected an odd kernel (1, 3, 5, 7, ...)",
                         d->stem_kernel);
        } else if (strcmp(k, "channels") == 0) {
            rc = get_int(r, e, "space.stem.channels", 1, 4096, &d->stem_channels);
            have_c = 1;
        } else if (strcmp(k, "stride") == 0) {
            rc = get_int(r, e, "space.stem.stride", 1, 4, &d->stem_stride);
        } else if (strcmp(k, "activation") == 0) {
            rc = get_act(r, e, "space.stem.activation", &d->stem_act);
        } else {
            const char *keys = "kernel, channels, stride, activation";
            char hint[96];
            rc = bad(r, e, "unknown key '%s' in space.stem, expected one of: %s%s", k, keys,
                     nas_suggest_hint(k, keys, hint, sizeof hint));
        }
        if (rc)
            return rc;
    }
    if (!have_c)
        return bad(r, s, "space.stem has no channels, expected channels = N;");
    return NAS_OK;
}

static int read_stage(rd *r, const config_setting_t *s, int idx, nas_chain_stage *st)
{
    char key[64];
    if (config_setting_type(s) != CONFIG_TYPE_GROUP)
        return bad(r, s, "space.stages[%d] is not a group, expected { channels = ...; stride = ...; "
                         "layers = ...; ops = [...]; }", idx);
    memset(st, 0, sizeof *st);
    st->stride = 1;
    st->act = NAS_ACT_RELU;
    st->line = config_setting_source_line(s);
    int n = config_setting_length(s);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        const char *k = config_setting_name(e);
        int line = config_setting_source_line(e), rc, dummy;
        snprintf(key, sizeof key, "space.stages[%d].%s", idx, k);
        if (strcmp(k, "channels") == 0) {
            rc = get_ints(r, e, key, 1, 4096, st->width, &st->n_width, &st->width_choice);
            st->line_width = line;
        } else if (strcmp(k, "stride") == 0) {
            rc = get_int(r, e, key, 1, 4, &st->stride);
            st->line_stride = line;
        } else if (strcmp(k, "layers") == 0) {
            rc = get_int(r, e, key, 1, NAS_CHAIN_MAX_LAYERS, &st->layers);
            st->line_layers = line;
        } else if (strcmp(k, "depth") == 0) {
            rc = get_ints(r, e, key, 1, 1000, st->depth, &st->n_depth, &dummy);
            st->line_depth = line;
        } else if (strcmp(k, "ops") == 0) {
            rc = get_ops(r, e, key, st->ops, &st->n_ops);
            st->line_ops = line;
        } else if (strcmp(k, "first_ops") == 0) {
            rc = get_ops(r, e, key, st->first, &st->n_first);
            st->line_first = line;
        } else if (strcmp(k, "se") == 0) {
            rc = NAS_OK;
            if (config_setting_type(e) == CONFIG_TYPE_BOOL)
                st->se = config_setting_get_bool(e) ? 1 : 0;
            else if (config_setting_type(e) == CONFIG_TYPE_STRING &&
                     strcmp(config_setting_get_string(e), "choice") == 0)
                st->se = 2;
            else
                rc = bad(r, e, "%s is not true, false or \"choice\", expected one of those", key);
        } else if (strcmp(k, "activation") == 0) {
            rc = get_act(r, e, key, &st->act);
        } else {
            const char *keys = "channels, stride, layers, depth, ops, first_ops, se, activation";
            char hint[96];
            rc = bad(r, e, "unknown key '%s' in space.stages[%d], expected one of: %s%s", k, idx, keys,
                     nas_suggest_hint(k, keys, hint, sizeof hint));
        }
        if (rc)
            return rc;
    }
    if (!st->line_width)
        return bad(r, s, "space.stages[%d] has no channels, expected channels = N; or a list of choices",
                   idx);
    if (!st->line_ops)
        return bad(r, s, "space.stages[%d] has no ops, expected ops = [...]; (%s)", idx, op_words);
    if (!st->line_layers)
        st->layers = 1;
    return NAS_OK;
}

static int read_head(rd *r, const config_setting_t *s, nas_chain_desc *d)
{
    if (config_setting_type(s) != CONFIG_TYPE_GROUP)
        return bad(r, s, "space.head is not a group, expected { channels = 1280; activation = "
                         "\"relu6\"; pool = \"avg\"; dropout = 0.2; }");
    d->line_head = config_setting_source_line(s);
    int n = config_setting_length(s);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        const char *k = config_setting_name(e);
        int rc;
        if (strcmp(k, "channels") == 0) {
            rc = get_int(r, e, "space.head.channels", 0, 65536, &d->head_channels);
        } else if (strcmp(k, "mix") == 0) {
            rc = get_int(r, e, "space.head.mix", 0, 65536, &d->head_mix);
        } else if (strcmp(k, "activation") == 0) {
            rc = get_act(r, e, "space.head.activation", &d->head_act);
        } else if (strcmp(k, "pool") == 0) {
            rc = NAS_OK;
            if (config_setting_type(e) != CONFIG_TYPE_STRING || strcmp(config_setting_get_string(e), "avg"))
                rc = bad(r, e, "space.head.pool is not \"avg\", expected \"avg\" (global average pooling)");
        } else if (strcmp(k, "dropout") == 0) {
            double v = is_int(e) ? (double)config_setting_get_int64(e)
                                 : config_setting_type(e) == CONFIG_TYPE_FLOAT ? config_setting_get_float(e)
                                                                               : -1;
            rc = NAS_OK;
            if (!(v >= 0 && v < 1))
                rc = bad(r, e, "space.head.dropout is out of range, expected a number in [0, 1)");
            else
                d->dropout = v;
        } else {
            const char *keys = "channels, activation, pool, mix, dropout";
            char hint[96];
            rc = bad(r, e, "unknown key '%s' in space.head, expected one of: %s%s", k, keys,
                     nas_suggest_hint(k, keys, hint, sizeof hint));
        }
        if (rc)
            return rc;
    }
    return NAS_OK;
}

int nas__chain_read(const config_setting_t *s, nas_space_desc *d, const config_setting_t **bad_s,
                    char *msg, size_t n)
{
    rd r = {bad_s, msg, n};
    nas_chain_desc *c = &d->chain;
    const char *name = config_setting_name(s);
    int line = config_setting_source_line(s);
    if (strcmp(name, "stem") == 0)
        return read_stem(&r, s, c);
    if (strcmp(name, "head") == 0)
        return read_head(&r, s, c);
    if (strcmp(name, "se_gate") == 0) {
        const char *v = config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : "";
        if (strcmp(v, "hsigmoid") == 0)
            c->se_gate_sigmoid = 0;
        else if (strcmp(v, "sigmoid") == 0)
            c->se_gate_sigmoid = 1;
        else
            return bad(&r, s, "space.se_gate is not a known gate, expected one of: \"hsigmoid\", \"sigmoid\"");
        c->line_se_gate = line;
        return NAS_OK;
    }
    if (strcmp(name, "classes") == 0) {
        c->line_classes = line;
        return get_int(&r, s, "space.classes", 1, 1000000, &d->classes);
    }
    if (strcmp(name, "input") == 0) {
        int t = config_setting_type(s);
        if ((t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) || config_setting_length(s) != 3)
            return bad(&r, s, "space.input is not a list of 3 integers, expected [C, H, W] like [3, 32, 32]");
        int v[3];
        for (int i = 0; i < 3; i++) {
            static const char *const k[3] = {"space.input[0] (C)", "space.input[1] (H)", "space.input[2] (W)"};
            int rc = get_int(&r, config_setting_get_elem(s, (unsigned)i), k[i], 1, 65536, &v[i]);
            if (rc)
                return rc;
        }
        d->in_c = v[0];
        d->in_h = v[1];
        d->in_w = v[2];
        c->line_input = line;
        return NAS_OK;
    }
    /* stages: a list of groups */
    int m = config_setting_length(s);
    c->line_stages = line;
    if (m == 0)
        return bad(&r, s, "space.stages is an empty list, expected at least one stage { ... }");
    if (m > NAS_CHAIN_MAX_STAGES)
        return bad(&r, s, "space.stages has %d stages, expected at most %d", m, NAS_CHAIN_MAX_STAGES);
    for (int i = 0; i < m; i++) {
        int rc = read_stage(&r, config_setting_get_elem(s, (unsigned)i), i, &c->stages[i]);
        if (rc)
            return rc;
    }
    c->n_stages = m;
    return NAS_OK;
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static int vbad(int *line_out, int line, char *msg, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, n, fmt, ap);
    va_end(ap);
    *line_out = line;
    return NAS_ECONFIG;
}

static int has_op_kind(const uint16_t *ops, int n, int kind)
{
    for (int i = 0; i < n; i++)
        if (nas_chain_op_kind_of(ops[i]) == kind)
            return 1;
    return 0;
}

int nas__chain_validate(const nas_space_desc *d, int space_line, int *line, char *msg, size_t n)
{
    const nas_chain_desc *c = &d->chain;
    if (d->type != NAS_SPACE_CHAIN) {
        int l = c->line_stem ? c->line_stem : c->line_head ? c->line_head : c->line_stages ? c->line_stages
                                                                                               : c->line_se_gate;
        if (l)
            return vbad(line, l, msg, n, "stem, stages (a list), head and se_gate belong to a chain space, "
                                         "expected space.type = \"chain\" (or the cell keys ops, channels, "
                                         "stages = N, cells_per_stage)");
        return NAS_OK;
    }
    if (!c->line_stem)
        return vbad(line, space_line, msg, n, "space.type = \"chain\" has no stem, expected "
                                              "stem = { kernel = 3; channels = 16; stride = 1; activation = \"relu\"; };");
    if (c->n_stages == 0)
        return vbad(line, space_line, msg, n, "space.type = \"chain\" has no stages, expected "
                                              "stages = ( { channels = ...; stride = ...; layers = ...; ops = [...]; }, ... );");
    int input_h, input_w;
    nas__desc_input(d, NULL, &input_h, &input_w, NULL);
    int h = input_h, w = input_w;
    if (h < c->stem_stride || w < c->stem_stride)
        return vbad(line, c->line_stem, msg, n, "the stem's stride %d shrinks the %dx%d input below 1x1, "
                                                "expected a stride of at most %d",
                    c->stem_stride, h, w, h < w ? h : w);
    h = (h - 1) / c->stem_stride + 1;
    w = (w - 1) / c->stem_stride + 1;
    int in_w[NAS_CHAIN_MAX_CHOICES] = {c->stem_channels}, n_in = 1;
    for (int s = 0; s < c->n_stages; s++) {
        const nas_chain_stage *st = &c->stages[s];
        int sl = st->line;
        if (h < st->stride || w < st->stride)
            return vbad(line, st->line_stride ? st->line_stride : sl, msg, n,
                        "space.stages[%d]: stride %d shrinks the %dx%d feature map below 1x1, expected a "
                        "stride of at most %d here (input %dx%d)",
                        s, st->stride, h, w, h < w ? h : w, input_h, input_w);
        h = (h - 1) / st->stride + 1;
        w = (w - 1) / st->stride + 1;
        for (int i = 0; i < st->n_depth; i++)
            if (st->depth[i] > st->layers)
                return vbad(line, st->line_depth, msg, n,
                            "space.stages[%d].depth holds %d, larger than the stage's %d layers, expected "
                            "depths in [1, %d]",
                            s, st->depth[i], st->layers, st->layers);
        /* zero only where input and output shapes always match */
        int changes = st->stride != 1 || n_in != 1 || st->n_width != 1 || in_w[0] != st->width[0];
        const uint16_t *f = st->n_first ? st->first : st->ops;
        int nf = st->n_first ? st->n_first : st->n_ops;
        if (changes && has_op_kind(f, nf, NAS_CHAIN_ZERO))
            return vbad(line, st->n_first ? st->line_first : st->line_ops, msg, n,
                        "space.stages[%d]: zero at layer 0, which changes the shape (stride %d, %s), "
                        "expected zero only where input and output shapes match (give layer 0 its "
                        "own choices with first_ops = [...])",
                        s, st->stride, st->n_width > 1 || n_in > 1 ? "width a choice" : "new width");
        if (st->se == 2 && !has_op_kind(st->ops, st->n_ops, NAS_CHAIN_MB) &&
            !has_op_kind(st->first, st->n_first, NAS_CHAIN_MB))
            return vbad(line, sl, msg, n, "space.stages[%d]: se = \"choice\" but no MBConv op, expected "
                                          "an mb<e>_k<k> op (SE is part of MBConv)", s);
        memcpy(in_w, st->width, sizeof(int) * (size_t)st->n_width);
        n_in = st->n_width;
    }
    /* compile: decision count, vocabulary and string length limits */
    nas_space *sp = NULL;
    nas_error e;
    if (nas_space_create(d, &sp, &e) != NAS_OK)
        return vbad(line, c->line_stages, msg, n, "%s", e.msg + (strncmp(e.msg, "space: ", 7) ? 0 : 7));
    nas_space_destroy(sp);
    return NAS_OK;
}

/* ---- canonical text -------------------------------------------------------------- */

static void put_ints(nas__sbuf *b, const int *v, int n, int list)
{
    if (!list) {
        nas__sb_printf(b, "%d", v[0]);
        return;
    }
    nas__sb_printf(b, "[");
    for (int i = 0; i < n; i++)
        nas__sb_printf(b, "%s%d", i ? ", " : "", v[i]);
    nas__sb_printf(b, "]");
}

static void put_ops(nas__sbuf *b, const uint16_t *ops, int n)
{
    char w[16];
    nas__sb_printf(b, "[");
    for (int i = 0; i < n; i++)
        nas__sb_printf(b, "%s\"%s\"", i ? ", " : "", nas_chain_op_name(ops[i], w, sizeof w));
    nas__sb_printf(b, "]");
}

static const char *const cell_only[] = {"nodes", "ops", "channels", "cells_per_stage", NULL};

char *nas__space_canonical_field(const nas_space_desc *d, const char *key, int *replace)
{
    *replace = 0;
    int chain = d->type == NAS_SPACE_CHAIN;
    int last_cell = strcmp(key, "cells_per_stage") == 0, stages = strcmp(key, "stages") == 0;
    if (!chain && !last_cell)
        return NULL;
    if (chain)
        for (int i = 0; cell_only[i]; i++)
            if (strcmp(key, cell_only[i]) == 0) {
                *replace = 1;
                return strdup(""); /* not a chain key */
            }
    if (chain && !stages)
        return NULL;
    nas__sbuf b = nas__sb_new(4096);
    if (!b.p)
        return NULL;
    *replace = 1;
    if (!chain) { /* cell: its own line, then input and classes when set */
        nas__sb_printf(&b, "space.cells_per_stage = %d;\n", d->cells_per_stage);
    }
    if (d->in_c > 0)
        nas__sb_printf(&b, "space.input = [%d, %d, %d];\n", d->in_c, d->in_h, d->in_w);
    if (d->classes > 0)
        nas__sb_printf(&b, "space.classes = %d;\n", d->classes);
    if (chain) {
        const nas_chain_desc *c = &d->chain;
        nas__sb_printf(&b, "space.stem = { kernel = %d; channels = %d; stride = %d; activation = \"%s\"; };\n",
            c->stem_kernel, c->stem_channels, c->stem_stride, nas_act_name(c->stem_act));
        nas__sb_printf(&b, "space.stages = (");
        for (int s = 0; s < c->n_stages; s++) {
            const nas_chain_stage *st = &c->stages[s];
            nas__sb_printf(&b, "%s { channels = ", s ? "," : "");
            put_ints(&b, st->width, st->n_width, st->width_choice);
            nas__sb_printf(&b, "; stride = %d; layers = %d;", st->stride, st->layers);
            if (st->n_depth) {
                nas__sb_printf(&b, " depth = ");
                put_ints(&b, st->depth, st->n_depth, 1);
                nas__sb_printf(&b, ";");
            }
            nas__sb_printf(&b, " ops = ");
            put_ops(&b, st->ops, st->n_ops);
            nas__sb_printf(&b, ";");
            if (st->n_first) {
                nas__sb_printf(&b, " first_ops = ");
                put_ops(&b, st->first, st->n_first);
                nas__sb_printf(&b, ";");
            }
            nas__sb_printf(&b, " se = %s; activation = \"%s\"; }",
                st->se == 2 ? "\"choice\"" : st->se ? "true" : "false", nas_act_name(st->act));
        }
        nas__sb_printf(&b, " );\n");
        char dr[40];
        nas__fmt_double(c->dropout, dr, sizeof dr); /* shortest round-trip text */
        nas__sb_printf(&b, "space.head = { channels = %d; activation = \"%s\"; pool = \"avg\"; mix = %d; "
                "dropout = %s; };\n",
            c->head_channels, nas_act_name(c->head_act), c->head_mix, dr);
        nas__sb_printf(&b, "space.se_gate = \"%s\";\n", c->se_gate_sigmoid ? "sigmoid" : "hsigmoid");
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (b.len > 0 && b.p[b.len - 1] == '\n')
        b.p[--b.len] = '\0'; /* config.c ends the line */
    return b.p;
}
