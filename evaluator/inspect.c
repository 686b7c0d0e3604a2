/*
 * evaluator/inspect.c - MACs and params of any genotype, and `nas space`:
 * a space's decisions, size, distinct keys and samples (nas/inspect.h).
 * Counting rules: nas/inspect.h (thop / fvcore conventions).
 */
#include <inttypes.h> /* PRId64 */
#include <math.h>     /* log10 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "nas/inspect.h"
#include "evaluator/evaluator_impl.h" /* nas__zc_list */

int64_t nas_layer_macs(const nas_layer *l)
{
    switch (l->kind) {
    case NAS_LAYER_CONV:
        return (int64_t)l->out_c * (l->in_c / (l->groups > 0 ? l->groups : 1)) * l->kernel * l->kernel *
               l->out_h * l->out_w;
    case NAS_LAYER_DWCONV:
        return (int64_t)l->out_c * l->kernel * l->kernel * l->out_h * l->out_w;
    case NAS_LAYER_SE: /* two 1x1 convs on the pooled 1x1 map */
        return 2 * (int64_t)l->in_c * l->mid;
    case NAS_LAYER_LINEAR:
        return (int64_t)l->in_c * l->out_c;
    default:
        return 0;
    }
}

int64_t nas_layer_params(const nas_layer *l)
{
    switch (l->kind) {
    case NAS_LAYER_CONV:
        return (int64_t)l->out_c * (l->in_c / (l->groups > 0 ? l->groups : 1)) * l->kernel * l->kernel +
               (l->bias ? l->out_c : 0);
    case NAS_LAYER_DWCONV:
        return (int64_t)l->out_c * l->kernel * l->kernel + (l->bias ? l->out_c : 0);
    case NAS_LAYER_BN:
        return 2 * (int64_t)l->out_c;
    case NAS_LAYER_SE:
        return 2 * (int64_t)l->in_c * l->mid + l->mid + l->in_c;
    case NAS_LAYER_LINEAR:
        return (int64_t)l->in_c * l->out_c + (l->bias ? l->out_c : 0);
    default:
        return 0;
    }
}

int nas_count_layers(const nas_layers *l, int64_t *macs, int64_t *params)
{
    if (macs)
        *macs = 0;
    if (params)
        *params = 0;
    if (!l || (l->n > 0 && !l->l))
        return NAS_EINVAL;
    int64_t m = 0, p = 0;
    for (int i = 0; i < l->n; i++) {
        m += nas_layer_macs(&l->l[i]);
        p += nas_layer_params(&l->l[i]);
    }
    if (macs)
        *macs = m;
    if (params)
        *params = p;
    return NAS_OK;
}

int nas_count_genotype(const nas_evaluator *ev, const nas_space *space, const nas_genotype *g,
                       int64_t *macs, int64_t *params)
{
    if (macs)
        *macs = 0;
    if (params)
        *params = 0;
    if (!g || (!ev && !space))
        return NAS_EINVAL;
    nas_net_desc d; /* a chain space's desc carries it: nas_count_net counts its layers */
    if (nas_evaluator_net_desc(ev, space, g, &d) != NAS_OK)
        return NAS_EINVAL;
    return nas_count_net(&d, macs, params, NULL, NULL);
}

/* ---- nas space ------------------------------------------------------------------- */

/* "1234567" or "more than 2^63 (about 10^21.5)" */
static void fmt_count(uint64_t v, int exact, double lg, char *buf, size_t n)
{
    if (exact)
        snprintf(buf, n, "%" PRIu64, v);
    else
        snprintf(buf, n, "more than 2^63 (about 10^%.1f)", lg);
}

static const char *se_word(int se) { return se == 2 ? "choice" : se ? "on" : "off"; }

static json_t *ops_json(const uint16_t *ops, int n)
{
    json_t *a = json_array();
    char w[16];
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(nas_chain_op_name(ops[i], w, sizeof w)));
    return a;
}

static json_t *ints_json(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static json_t *space_json(const nas_space *sp)
{
    const nas_space_desc *d = nas_space_get_desc(sp);
    int c, h, w, k;
    nas_space_input(sp, &c, &h, &w, &k);
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(d->type == NAS_SPACE_CHAIN ? "chain" : "cell"));
    int in[3] = {c, h, w};
    json_object_set_new(o, "input", ints_json(in, 3));
    json_object_set_new(o, "classes", json_integer(k));
    if (d->type != NAS_SPACE_CHAIN)
        return o;
    const nas_chain_desc *ch = &d->chain;
    json_object_set_new(o, "stem", json_pack("{s:i, s:i, s:i, s:s}", "kernel", ch->stem_kernel,
                                             "channels", ch->stem_channels, "stride", ch->stem_stride,
                                             "activation", nas_act_name(ch->stem_act)));
    json_t *stages = json_array();
    for (int s = 0; s < ch->n_stages; s++) {
        const nas_chain_stage *st = &ch->stages[s];
        json_t *j = json_object();
        json_object_set_new(j, "channels", ints_json(st->width, st->n_width));
        json_object_set_new(j, "channels_choice", json_boolean(st->width_choice));
        json_object_set_new(j, "stride", json_integer(st->stride));
        json_object_set_new(j, "layers", json_integer(st->layers));
        json_object_set_new(j, "depth", ints_json(st->depth, st->n_depth));
        json_object_set_new(j, "ops", ops_json(st->ops, st->n_ops));
        json_object_set_new(j, "first_ops", ops_json(st->first, st->n_first));
        json_object_set_new(j, "se", json_string(se_word(st->se)));
        json_object_set_new(j, "activation", json_string(nas_act_name(st->act)));
        json_array_append_new(stages, j);
    }
    json_object_set_new(o, "stages", stages);
    json_object_set_new(o, "head", json_pack("{s:i, s:i, s:s, s:f}", "channels", ch->head_channels,
                                             "mix", ch->head_mix, "activation",
                                             nas_act_name(ch->head_act), "dropout", ch->dropout));
    json_object_set_new(o, "se_gate", json_string(ch->se_gate_sigmoid ? "sigmoid" : "hsigmoid"));
    return o;
}

static int describe_genotype(FILE *out, const nas_space *sp, const nas_config *cfg, const char *gs,
                             int json, nas_error *err)
{
    nas_genotype g;
    int rc = nas_space_parse(sp, gs, &g, err);
    if (rc)
        return rc;
    if (!nas_space_is_valid(sp, &g))
        return nas_error_set(err, NAS_EINVAL, "genotype '%s' is not a valid member of the space", gs);
    char canon[NAS_GENOTYPE_STR_MAX], key[NAS_GENOTYPE_STR_MAX];
    nas_space_format(sp, &g, canon, sizeof canon);
    nas_space_key(sp, &g, key, sizeof key);
    int64_t macs = 0, params = 0;
    nas_layers l;
    memset(&l, 0, sizeof l);
    int chain = nas_space_get_desc(sp)->type == NAS_SPACE_CHAIN;
    if (chain) {
        if ((rc = nas_space_layers(sp, &g, &l, err)) != NAS_OK)
            return rc;
        nas_count_layers(&l, &macs, &params);
    } else if (nas_count_genotype(NULL, sp, &g, &macs, &params) != NAS_OK) {
        int h, w; /* issue 28: say why (the input the stages cannot pass) */
        char why[600] = "";
        nas_space_input(sp, NULL, &h, &w, NULL);
        nas_space_check_input(nas_space_get_desc(sp), h, w, why, sizeof why);
        return nas_error_set(err, NAS_EINVAL, "cannot count genotype '%s'%s%s", gs, why[0] ? ": " : "", why);
    }
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "genotype", json_string(canon));
        json_object_set_new(o, "key", json_string(key));
        json_object_set_new(o, "macs", json_integer(macs));
        json_object_set_new(o, "params", json_integer(params));
        json_t *arr = json_array();
        for (int i = 0; i < l.n; i++) {
            const nas_layer *y = &l.l[i];
            json_array_append_new(arr, json_pack("{s:s, s:s, s:[i,i,i], s:[i,i,i], s:I, s:I}", "name", y->name,
                                                 "kind", nas_layer_kind_name(y->kind), "in", y->in_c,
                                                 y->in_h, y->in_w, "out", y->out_c, y->out_h, y->out_w,
                                                 "macs", (json_int_t)nas_layer_macs(y), "params",
                                                 (json_int_t)nas_layer_params(y)));
        }
        json_object_set_new(o, "layers", arr);
        json_dumpf(o, out, JSON_INDENT(1));
        fputc('\n', out);
        json_decref(o);
    } else {
        fprintf(out, "genotype %s\nkey      %s\n", canon, key);
        if (chain) {
            fprintf(out, "\n%-4s %-20s %-8s %-15s %-15s %-6s %10s %12s\n", "#", "layer", "kind", "in",
                    "out", "k/s", "params", "MACs");
            for (int i = 0; i < l.n; i++) {
                const nas_layer *y = &l.l[i];
                char in[32], o2[32], ks[16] = "";
                snprintf(in, sizeof in, "%dx%dx%d", y->in_c, y->in_h, y->in_w);
                snprintf(o2, sizeof o2, "%dx%dx%d", y->out_c, y->out_h, y->out_w);
                if (y->kind == NAS_LAYER_CONV || y->kind == NAS_LAYER_DWCONV)
                    snprintf(ks, sizeof ks, "%d/%d", y->kernel, y->stride);
                else if (y->kind == NAS_LAYER_ACT)
                    snprintf(ks, sizeof ks, "%s", nas_act_name(y->act));
                else if (y->kind == NAS_LAYER_ADD)
                    snprintf(ks, sizeof ks, "+#%d", y->src2);
                fprintf(out, "%-4d %-20s %-8s %-15s %-15s %-6s %10" PRId64 " %12" PRId64 "\n", i, y->name,
                        nas_layer_kind_name(y->kind), in, o2, ks, nas_layer_params(y), nas_layer_macs(y));
            }
        }
        fprintf(out, "\nMACs     %" PRId64 " (%.3f M; FLOPs = 2 x MACs)\nparams   %" PRId64 "\n", macs,
                macs / 1e6, params);
    }
    (void)cfg;
    nas_layers_free(&l);
    return ferror(out) ? nas_error_set(err, NAS_EIO, "write error") : NAS_OK;
}

int nas_space_report(FILE *out, const nas_config *cfg, const nas_space_report_opts *o,
                     nas_error *err)
{
    if (!out || !cfg || !o)
        return nas_error_set(err, NAS_EINVAL, "nas_space_report: NULL argument");
    nas_space *sp = NULL;
    int rc = nas_space_create(&cfg->space, &sp, err);
    if (rc)
        return rc;
    if (o->genotype) {
        rc = describe_genotype(out, sp, cfg, o->genotype, o->json, err);
        nas_space_destroy(sp);
        return rc;
    }
    int ih, iw; /* issue 28: no table of -1 counts for stages the input cannot pass */
    char why[600];
    nas_space_input(sp, NULL, &ih, &iw, NULL);
    if (nas_space_check_input(&cfg->space, ih, iw, why, sizeof why) != NAS_OK) {
        nas_space_destroy(sp);
        return nas_error_set(err, NAS_ECONFIG, "%s: %s (nas space counts at this input)", cfg->path, why);
    }
    nas_space_counts cnt;
    nas_space_counts_get(sp, &cnt);
    if (o->zero_cost && (!o->list || (cnt.size_exact && cnt.size <= o->enumerate_max))) {
        /* issue 31: every genotype, or sampled ones, with their proxies */
        rc = nas__zc_list(out, cfg, sp, o->list ? cnt.size : (uint64_t)o->samples, !o->list,
                          o->seed, o->zero_cost, err);
        nas_space_destroy(sp);
        return rc;
    }
    if (o->list) {
        char size_s[96];
        fmt_count(cnt.size, cnt.size_exact, cnt.log10_size, size_s, sizeof size_s);
        if (!cnt.size_exact || cnt.size > o->enumerate_max) {
            nas_space_destroy(sp);
            return nas_error_set(err, NAS_EUNSUPPORTED,
                                 "the space has %s genotypes, more than the %" PRIu64
                                 " listed at most (--enumerate N)",
                                 size_s, o->enumerate_max);
        }
        fprintf(out, "genotype,key,macs,params\n");
        for (uint64_t i = 0; i < cnt.size; i++) {
            nas_genotype g;
            nas_space_genotype_at(sp, i, &g);
            if (!nas_space_is_valid(sp, &g))
                continue;
            char gs[NAS_GENOTYPE_STR_MAX], key[NAS_GENOTYPE_STR_MAX];
            nas_space_format(sp, &g, gs, sizeof gs);
            nas_space_key(sp, &g, key, sizeof key);
            int64_t macs = -1, params = -1;
            nas_count_genotype(NULL, sp, &g, &macs, &params);
            fprintf(out, "\"%s\",\"%s\",%" PRId64 ",%" PRId64 "\n", gs, key, macs, params);
        }
        nas_space_destroy(sp);
        return ferror(out) ? nas_error_set(err, NAS_EIO, "write error") : NAS_OK;
    }
    uint64_t enum_keys = 0;
    int enumerated = 0;
    if (o->enumerate_max > 0 && cnt.size_exact && cnt.size <= o->enumerate_max) {
        rc = nas_space_enumerate_keys(sp, o->enumerate_max, &enum_keys, NULL);
        if (rc == NAS_ENOMEM) {
            nas_space_destroy(sp);
            return nas_error_set(err, rc, "out of memory enumerating the space");
        }
        enumerated = rc == NAS_OK;
    }
    int L = nas_space_seq_len(sp);
    int c, h, w, k;
    nas_space_input(sp, &c, &h, &w, &k);
    int chain = nas_space_get_desc(sp)->type == NAS_SPACE_CHAIN;
    char size_s[96], keys_s[96];
    fmt_count(cnt.size, cnt.size_exact, cnt.log10_size, size_s, sizeof size_s);
    fmt_count(cnt.keys, cnt.keys_exact, cnt.log10_keys, keys_s, sizeof keys_s);
    nas_rng rng;
    nas_rng_seed(&rng, o->seed, 7);
    json_t *root = o->json ? json_object() : NULL, *samples = o->json ? json_array() : NULL;
    if (root) {
        json_object_set_new(root, "config", json_string(cfg->path));
        json_object_set_new(root, "space", space_json(sp));
        json_t *decs = json_array();
        for (int i = 0; i < L; i++) {
            char name[64];
            json_t *ch = json_array();
            for (int j = 0; j < nas_space_decision_choices(sp, i); j++)
                json_array_append_new(ch, json_string(nas_space_token_name(sp, nas_space_decision_token(sp, i, j))));
            json_array_append_new(decs, json_pack("{s:s, s:o}", "name",
                                                  nas_space_decision_name(sp, i, name, sizeof name),
                                                  "choices", ch));
        }
        json_object_set_new(root, "decisions", decs);
        json_object_set_new(root, "size", cnt.size_exact ? json_integer((json_int_t)cnt.size) : json_null());
        json_object_set_new(root, "log10_size", json_real(cnt.log10_size));
        json_object_set_new(root, "keys", cnt.keys_counted && cnt.keys_exact ? json_integer((json_int_t)cnt.keys)
                                                                             : json_null());
        json_object_set_new(root, "log10_keys", json_real(cnt.log10_keys));
        json_object_set_new(root, "keys_enumerated", enumerated ? json_integer((json_int_t)enum_keys)
                                                                : json_null());
    } else {
        fprintf(out, "space      %s: %s, input %dx%dx%d, %d classes\n", cfg->path, chain ? "chain" : "cell",
                c, h, w, k);
        fprintf(out, "decisions  %d\n", L);
        for (int i = 0; i < L; i++) {
            char name[64];
            fprintf(out, "  %-14s", nas_space_decision_name(sp, i, name, sizeof name));
            for (int j = 0; j < nas_space_decision_choices(sp, i); j++)
                fprintf(out, " %s", nas_space_token_name(sp, nas_space_decision_token(sp, i, j)));
            fputc('\n', out);
        }
        fprintf(out, "genotypes  %s\n", size_s);
        if (cnt.keys_counted)
            fprintf(out, "keys       %s distinct (%s)", keys_s,
                    chain ? "by formula" : "of valid cells, by enumeration");
        else
            fprintf(out, "keys       not counted");
        if (enumerated && chain)
            fprintf(out, "; %" PRIu64 " by enumerating every genotype", enum_keys);
        else if (o->enumerate_max > 0 && chain)
            fprintf(out, "; too many genotypes to enumerate (more than %" PRIu64 ")", o->enumerate_max);
        fputc('\n', out);
        if (o->samples > 0)
            fprintf(out, "samples    (seed %" PRIu64 ")\n  %10s %10s  genotype\n", o->seed, "MMACs",
                    "params");
    }
    for (int i = 0; i < o->samples; i++) {
        nas_genotype g;
        nas_space_sample(sp, &rng, &g);
        char gs[NAS_GENOTYPE_STR_MAX], key[NAS_GENOTYPE_STR_MAX];
        nas_space_format(sp, &g, gs, sizeof gs);
        nas_space_key(sp, &g, key, sizeof key);
        int64_t macs = 0, params = 0;
        if (nas_count_genotype(NULL, sp, &g, &macs, &params) != NAS_OK)
            macs = params = -1;
        if (samples)
            json_array_append_new(samples, json_pack("{s:s, s:s, s:I, s:I}", "genotype", gs, "key", key,
                                                     "macs", (json_int_t)macs, "params",
                                                     (json_int_t)params));
        else
            fprintf(out, "  %10.3f %10" PRId64 "  %s\n", macs / 1e6, params, gs);
    }
    if (root) {
        json_object_set_new(root, "samples", samples);
        json_dumpf(root, out, JSON_INDENT(1));
        fputc('\n', out);
        json_decref(root);
    }
    nas_space_destroy(sp);
    return ferror(out) ? nas_error_set(err, NAS_EIO, "write error") : NAS_OK;
}
