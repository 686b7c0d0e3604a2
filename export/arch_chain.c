/*
 * export/arch_chain.c - chain architectures (issue 15) in the architecture
 * JSON (export/export_json.c, docs/export.md "Chain architectures"), and
 * the search space of any nas_arch.
 *
 * A chain architecture is its space plus a genotype of it. The JSON keeps
 * the space as the space.conf text nas would read ("space.conf": the
 * space's canonical settings from nas_config_canonical, as one libconfig
 * group), so the reader rebuilds it with the config parser itself and
 * every later space key round-trips without a JSON schema of its own. For
 * people and other tools it adds the genotype's decisions ("network.
 * decisions": decision name -> token) and the layers the genotype lowers
 * to ("network.layers", nas/layers.h: kind, shapes, kernel, stride,
 * groups, ...); the reader checks those layers against its own lowering,
 * so a hand-edited file that no longer matches is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export/export_impl.h"
#include "nas/layers.h"

int nas_arch_space(const nas_arch *a, nas_space **out, nas_error *err)
{
    if (!strcmp(a->space_type, "chain")) { /* issue 28: unset input and classes are the data's */
        nas_space_desc cd = a->space;
        cd.data_c = a->net.in_c;
        cd.data_h = a->net.in_h;
        cd.data_w = a->net.in_w;
        cd.data_classes = a->net.classes;
        return nas_space_create(&cd, out, err);
    }
    nas_space_desc sd = {.type = NAS_SPACE_CELL, .op_mask = a->op_mask, .channels = a->net.channels,
                         .stages = a->net.stages, .cells_per_stage = a->net.cells_per_stage};
    return nas_space_create(&sd, out, err);
}

int nas__arch_parse(nas_arch *a, nas_space **sp, int *valid, int *step, nas_error *err)
{
    nas_space *s = NULL;
    nas_genotype_strip_recipe(a->genotype); /* issue 33: the network alone */
    int rc = nas_arch_space(a, &s, err);
    if (step)
        *step = rc ? 0 : 1;
    if (!rc)
        rc = nas_space_parse(s, a->genotype, &a->net.genotype, err);
    if (!rc && valid)
        *valid = nas_space_is_valid(s, &a->net.genotype);
    if (sp && !rc)
        *sp = s;
    else
        nas_space_destroy(s);
    return rc;
}

/* ---- writing ------------------------------------------------------------------------ */

/* "space: {\n  type = \"chain\";\n  ...\n};\n": the space group of the
 * canonical config text (its "space.KEY = VALUE;" lines). malloc'd or NULL. */
static char *space_conf_text(const nas_space_desc *d)
{
    nas_config *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return NULL;
    nas_config_defaults(cfg);
    cfg->space = *d;
    char *canon = nas_config_canonical(cfg);
    free(cfg);
    if (!canon)
        return NULL;
    size_t cap = strlen(canon) + 64, len = 0;
    char *out = malloc(cap);
    if (out) {
        len += (size_t)snprintf(out, cap, "space: {\n");
        for (const char *p = canon; *p;) {
            size_t n = strcspn(p, "\n");
            if (n > 6 && !strncmp(p, "space.", 6))
                len += (size_t)snprintf(out + len, cap - len, "  %.*s\n", (int)(n - 6), p + 6);
            p += n + (p[n] ? 1 : 0);
        }
        snprintf(out + len, cap - len, "};\n");
    }
    free(canon);
    return out;
}

static json_t *shape_json(int c, int h, int w)
{
    return json_pack("[i,i,i]", c, h, w);
}

/* One layer of nas/layers.h as a JSON object: name, kind, inputs, shapes
 * and the fields its kind uses. */
static json_t *layer_json(const nas_layer *l)
{
    json_t *o = json_pack("{s:s, s:s, s:i, s:o, s:o}", "name", l->name, "kind",
                          nas_layer_kind_name(l->kind), "src", l->src, "in",
                          shape_json(l->in_c, l->in_h, l->in_w), "out",
                          shape_json(l->out_c, l->out_h, l->out_w));
    if (!o)
        return NULL;
    switch (l->kind) {
    case NAS_LAYER_CONV:
    case NAS_LAYER_DWCONV:
        json_object_set_new(o, "kernel", json_integer(l->kernel));
        json_object_set_new(o, "stride", json_integer(l->stride));
        json_object_set_new(o, "pad", json_integer(l->pad));
        json_object_set_new(o, "groups", json_integer(l->groups));
        json_object_set_new(o, "bias", json_boolean(l->bias));
        break;
    case NAS_LAYER_ACT:
        json_object_set_new(o, "act", json_string(nas_act_name(l->act) ? nas_act_name(l->act)
                                                                        : "none"));
        break;
    case NAS_LAYER_SE:
        json_object_set_new(o, "mid", json_integer(l->mid));
        json_object_set_new(o, "gate", json_string(l->gate_sigmoid ? "sigmoid" : "hsigmoid"));
        break;
    case NAS_LAYER_ADD:
        json_object_set_new(o, "src2", json_integer(l->src2));
        break;
    case NAS_LAYER_DROPOUT:
        json_object_set_new(o, "p", json_real(l->p));
        break;
    default:
        break;
    }
    return o;
}

int nas__arch_chain_json(const nas_arch *a, json_t **space, json_t **network, nas_error *err)
{
    *space = *network = NULL;
    nas_space *sp = NULL;
    nas_layers L;
    memset(&L, 0, sizeof L);
    int rc = nas_arch_space(a, &sp, err);
    if (!rc)
        rc = nas_space_layers(sp, &a->net.genotype, &L, err);
    char *conf = rc ? NULL : space_conf_text(&a->space);
    json_t *dec = json_object(), *layers = json_array();
    if (!rc && (!conf || !dec || !layers))
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory writing a chain architecture");
    for (int i = 0; !rc && i < a->net.genotype.len; i++) {
        char name[64];
        const char *tok = nas_space_token_name(sp, a->net.genotype.tok[i]);
        json_object_set_new(dec, nas_space_decision_name(sp, i, name, sizeof name),
                            json_string(tok ? tok : "?"));
    }
    for (int i = 0; !rc && i < L.n; i++) {
        json_t *l = layer_json(&L.l[i]);
        if (!l || json_array_append_new(layers, l))
            rc = nas_error_set(err, NAS_ENOMEM, "out of memory writing a chain architecture");
    }
    if (!rc) {
        *space = json_pack("{s:s, s:s}", "type", "chain", "conf", conf);
        *network = json_pack("{s:O, s:O}", "decisions", dec, "layers", layers);
        if (!*space || !*network) {
            json_decref(*space);
            json_decref(*network);
            *space = *network = NULL;
            rc = nas_error_set(err, NAS_ENOMEM, "out of memory writing a chain architecture");
        }
    }
    json_decref(dec);
    json_decref(layers);
    free(conf);
    nas_layers_free(&L);
    nas_space_destroy(sp);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------ */

int nas__arch_chain_read_space(const json_t *space, const char *path, nas_arch *a,
                               nas_error *err)
{
    json_t *conf = json_object_get(space, "conf");
    if (!json_is_string(conf))
        return nas_error_set(err, NAS_EFORMAT, "%s: key 'space.conf' %s", path,
                             conf ? "must be a string (the space's space.conf text)"
                                  : "is missing (a chain space needs its space.conf text)");
    const char *text = json_string_value(conf);
    size_t n = strlen(text) + 64;
    char *full = malloc(n);
    nas_config *cfg = malloc(sizeof *cfg);
    int rc = NAS_OK;
    if (!full || !cfg) {
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
    } else {
        snprintf(full, n, "experiment = \"arch\";\n%s", text);
        nas_error e2;
        nas_error_clear(&e2);
        if (nas_config_parse_string(full, "space.conf", cfg, &e2) != NAS_OK)
            rc = nas_error_set(err, NAS_EFORMAT, "%s: key 'space.conf': %s", path, e2.msg);
        else if (cfg->space.type != NAS_SPACE_CHAIN)
            rc = nas_error_set(err, NAS_EFORMAT, "%s: key 'space.conf' is not a chain space "
                               "(type = \"chain\")", path);
    }
    if (!rc) {
        a->space = cfg->space;
        snprintf(a->space_type, sizeof a->space_type, "chain");
        /* the widths the search's net description carries (checkpoint fingerprints) */
        a->net.channels = cfg->space.channels;
        a->net.stages = cfg->space.stages;
        a->net.cells_per_stage = cfg->space.cells_per_stage;
    }
    free(full);
    free(cfg);
    return rc;
}

/* 1 when JSON layer `j` describes layer `l`: name, kind, output shape. */
static int layer_matches(const json_t *j, const nas_layer *l)
{
    json_t *name = json_object_get(j, "name"), *kind = json_object_get(j, "kind");
    json_t *out = json_object_get(j, "out");
    if (!json_is_string(name) || strcmp(json_string_value(name), l->name) ||
        !json_is_string(kind) || strcmp(json_string_value(kind), nas_layer_kind_name(l->kind)))
        return 0;
    if (out) {
        int v[3] = {l->out_c, l->out_h, l->out_w};
        if (!json_is_array(out) || json_array_size(out) != 3)
            return 0;
        for (int k = 0; k < 3; k++)
            if (!json_is_integer(json_array_get(out, (size_t)k)) ||
                json_integer_value(json_array_get(out, (size_t)k)) != v[k])
                return 0;
    }
    return 1;
}

int nas__arch_chain_check(const json_t *network, const nas_space *sp, const char *path,
                          nas_arch *a, nas_error *err)
{
    int c, h, w, classes; /* only what the space sets: else the data's shape stands */
    nas_space_input(sp, &c, &h, &w, &classes);
    const nas_space_desc *d = nas_space_get_desc(sp);
    if ((d->in_c > 0 && (c != a->net.in_c || h != a->net.in_h || w != a->net.in_w)) ||
        (d->classes > 0 && classes != a->net.classes))
        return nas_error_set(err, NAS_EFORMAT, "%s: input.shape [%d, %d, %d] and classes %d "
                             "differ from the space's input [%d, %d, %d] and classes %d", path,
                             a->net.in_c, a->net.in_h, a->net.in_w, a->net.classes, c, h, w,
                             classes);
    json_t *layers = json_object_get(network, "layers");
    if (!layers)
        return NAS_OK; /* optional: the genotype and the space define the network */
    nas_layers L;
    memset(&L, 0, sizeof L);
    nas_error e2;
    int rc = nas_space_layers(sp, &a->net.genotype, &L, &e2);
    if (rc)
        return nas_error_set(err, NAS_EFORMAT, "%s: key 'genotype': %s", path, e2.msg);
    if (!json_is_array(layers) || json_array_size(layers) != (size_t)L.n) {
        rc = nas_error_set(err, NAS_EFORMAT, "%s: key 'network.layers' must list the %d layers "
                           "genotype %s lowers to", path, L.n, a->genotype);
    } else {
        for (int i = 0; i < L.n && !rc; i++)
            if (!layer_matches(json_array_get(layers, (size_t)i), &L.l[i]))
                rc = nas_error_set(err, NAS_EFORMAT, "%s: key 'network.layers': layer %d is "
                                   "not %s (%s, out [%d, %d, %d]), what genotype %s lowers to "
                                   "in space.conf", path, i, L.l[i].name,
                                   nas_layer_kind_name(L.l[i].kind), L.l[i].out_c, L.l[i].out_h,
                                   L.l[i].out_w, a->genotype);
    }
    nas_layers_free(&L);
    return rc;
}
