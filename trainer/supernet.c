/*
 * trainer/supernet.c - the weight-sharing supernet of nas/supernet.h
 * (issue 32; docs/one-shot.md "Design").
 *
 * Slots live in host memory (values and SGD momentum, float32, 4-D as the
 * net's tensors), in creation order, found by an open-addressing hash of
 * their names (FNV-1a, linear probing). A step copies the leading blocks
 * into a net built by nas_net_create, trains it one step, and copies them
 * back: the net is always the stand-alone net of its genotype.
 *
 * A supernet made by nas_supernet_map holds no values of its own: each
 * slot's values point into a read-only shared mapping of the weights file
 * (trainer/supernet_map.c), and everything that would write a slot
 * (training, loading, growing) refuses with NAS_EINVAL instead.
 */
#include <math.h>   /* sqrtf */
#include <pthread.h> /* nas_supernet_evaluate_many */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, malloc, free */
#include <string.h>
#include <time.h>   /* clock_gettime */
#include "nas/layers.h"   /* nas_space_decision_name, nas_space_token_name */
#include "nas/supernet.h"
#include "trainer/loader_impl.h" /* the batches of nas_train's order */
#include "trainer/net_impl.h"    /* nas__train_step, nas__batch_io, momentum */
#include "trainer/supernet_map_impl.h" /* nas__snw_*: the mapped weights file */
#include "trainer/weights_impl.h" /* nas__npz_*: checkpoints */

#define KEY_MAX 160
#define SCAN_RANDOM 32
#define PATH_STREAM 0x73706f73ull /* "spos" */

enum slot_kind { K_WEIGHT, K_BIAS, K_GAMMA, K_BETA, K_RMEAN, K_RVAR };

typedef struct slot {
    char key[KEY_MAX];
    uint64_t hash;
    int shape[4];     /* extent held (n, c, h, w) */
    int kind;         /* slot_kind */
    float bound;      /* K_WEIGHT, K_BIAS: init range +-bound */
    float *val, *mom; /* shape's product floats; mom NULL for BN statistics */
    int mapped;       /* val points into sn->map (read-only; mom NULL) */
} slot;

struct nas_supernet {
    nas_backend *be;
    const nas_space *space;
    nas_net_desc desc; /* genotype filled per subnet */
    uint64_t seed;
    int64_t steps;
    slot *slots;
    int n, cap;
    int *table;        /* hash -> slot index, -1 empty; tcap a power of 2 */
    int tcap;
    int op_dec[NAS_CHAIN_MAX_STAGES + 1][NAS_CHAIN_MAX_LAYERS]; /* chain: decision of sS.opL */
    nas__snw_map *map; /* nas_supernet_map: the weights file (read-only), else NULL */
    char map_path[NAS_PATH_MAX];
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t count4(const int s[4])
{
    return (size_t)s[0] * (size_t)s[1] * (size_t)s[2] * (size_t)s[3];
}

static int find_slot(const nas_supernet *sn, const char *key, uint64_t h)
{
    if (!sn->tcap)
        return -1;
    for (size_t i = h & (size_t)(sn->tcap - 1);; i = (i + 1) & (size_t)(sn->tcap - 1)) {
        int k = sn->table[i];
        if (k < 0)
            return -1;
        if (sn->slots[k].hash == h && strcmp(sn->slots[k].key, key) == 0)
            return k;
    }
}

static int rehash(nas_supernet *sn, int tcap)
{
    int *t = malloc((size_t)tcap * sizeof *t);
    if (!t)
        return NAS_ENOMEM;
    for (int i = 0; i < tcap; i++)
        t[i] = -1;
    for (int k = 0; k < sn->n; k++) {
        size_t i = sn->slots[k].hash & (size_t)(tcap - 1);
        while (t[i] >= 0)
            i = (i + 1) & (size_t)(tcap - 1);
        t[i] = k;
    }
    free(sn->table);
    sn->table = t;
    sn->tcap = tcap;
    return NAS_OK;
}

/* Initial value of element (n, c, h, w) of slot s: a function of the seed,
 * the slot's name and the position only. */
static float init_value(uint64_t seed, const slot *s, int n, int c, int h, int w)
{
    switch (s->kind) {
    case K_GAMMA:
    case K_RVAR: return 1.0f;
    case K_BETA:
    case K_RMEAN: return 0.0f;
    default: break;
    }
    uint64_t pos = (((uint64_t)n * 65536u + (uint64_t)c) * 256u + (uint64_t)h) * 256u + (uint64_t)w;
    uint64_t z = nas_rng_mix64(seed * NAS_RNG_GOLDEN + s->hash + pos * NAS_RNG_GOLDEN);
    float u = (float)(z >> 40) * (1.0f / 16777216.0f);
    return (2.0f * u - 1.0f) * s->bound;
}

/* Grow s to hold at least `need` (elementwise maximum), keeping the held
 * block and initialising new elements (values: init_value; momentum 0).
 * alloc 0 (while scanning): only the shape grows. */
static int grow_slot(const nas_supernet *sn, slot *s, const int need[4], int alloc)
{
    int ns[4], bigger = !s->val && alloc;
    for (int d = 0; d < 4; d++) {
        ns[d] = need[d] > s->shape[d] ? need[d] : s->shape[d];
        bigger |= ns[d] != s->shape[d];
    }
    if (!bigger)
        return NAS_OK;
    if (s->mapped && alloc) /* never written: the values are a read-only mapping */
        return NAS_EINVAL;
    if (s->kind == K_WEIGHT)
        s->bound = 1.0f / sqrtf((float)(ns[1] * ns[2] * ns[3]));
    if (!alloc) {
        memcpy(s->shape, ns, sizeof ns);
        return NAS_OK;
    }
    size_t cnt = count4(ns);
    int trainable = s->kind == K_WEIGHT || s->kind == K_BIAS || s->kind == K_GAMMA ||
                    s->kind == K_BETA;
    float *v = malloc(cnt * sizeof *v), *m = trainable ? calloc(cnt, sizeof *m) : NULL;
    if (!v || (trainable && !m)) {
        free(v);
        free(m);
        return NAS_ENOMEM;
    }
    size_t i = 0;
    for (int a = 0; a < ns[0]; a++)
        for (int b = 0; b < ns[1]; b++)
            for (int c = 0; c < ns[2]; c++)
                for (int d = 0; d < ns[3]; d++, i++) {
                    int old = s->val && a < s->shape[0] && b < s->shape[1] && c < s->shape[2] &&
                              d < s->shape[3];
                    size_t o = old ? (((size_t)a * s->shape[1] + b) * s->shape[2] + c) *
                                             s->shape[3] + d
                                   : 0;
                    v[i] = old ? s->val[o] : init_value(sn->seed, s, a, b, c, d);
                    if (m && old && s->mom)
                        m[i] = s->mom[o];
                }
    free(s->val);
    free(s->mom);
    s->val = v;
    s->mom = m;
    memcpy(s->shape, ns, sizeof ns);
    return NAS_OK;
}

/* ---- naming: parameter + choice -> slot ------------------------------------- */

/* The choice tag of parameter `name` in genotype g ("" for shared ones). */
static const char *choice_tag(const nas_supernet *sn, const nas_genotype *g, const char *name)
{
    int ci, e, st, l;
    char rest[8];
    if (nas_space_get_desc(sn->space)->type == NAS_SPACE_CELL) {
        if (sscanf(name, "cells.%d.layers.%d%1[.]", &ci, &e, rest) == 3 && e >= 0 &&
            e < NAS_CELL_EDGES && e < g->len)
            return nas_op_name(g->tok[e]);
        return "";
    }
    if (sscanf(name, "s%d.l%d%1[.]", &st, &l, rest) == 3 && st >= 0 &&
        st <= NAS_CHAIN_MAX_STAGES && l >= 0 && l < NAS_CHAIN_MAX_LAYERS) {
        int d = sn->op_dec[st][l];
        if (d >= 0 && d < g->len) {
            const char *t = nas_space_token_name(sn->space, g->tok[d]);
            return t ? t : "";
        }
    }
    return "";
}

static void slot_key(const nas_supernet *sn, const nas_genotype *g, const char *name,
                     char key[KEY_MAX])
{
    const char *tag = choice_tag(sn, g, name);
    snprintf(key, KEY_MAX, "%s%s%s", name, *tag ? "@" : "", tag);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Kind of parameter i of p[0..np): BN entries are weight, bias,
 * running_mean, running_var in a row (nas_net_params). */
static int param_kind(const nas_net_param *p, int np, int i)
{
    if (ends_with(p[i].name, ".running_mean"))
        return K_RMEAN;
    if (ends_with(p[i].name, ".running_var"))
        return K_RVAR;
    int is_w = ends_with(p[i].name, ".weight");
    int at = is_w ? i + 2 : i + 1; /* where this BN's running_mean would be */
    if (at < np && ends_with(p[at].name, ".running_mean") &&
        strncmp(p[at].name, p[i].name, strlen(p[i].name) - (is_w ? 6 : 4)) == 0)
        return is_w ? K_GAMMA : K_BETA;
    return is_w ? K_WEIGHT : K_BIAS;
}

/* A description of parameter i as a slot (no values): key, hash, the
 * tensor's shape, kind, init bound (a bias: from the slot of the weight
 * before it when held, else that weight's tensor). */
static void describe(const nas_supernet *sn, const nas_genotype *g, const nas_net_param *p,
                     int np, int i, slot *s)
{
    memset(s, 0, sizeof *s);
    slot_key(sn, g, p[i].name, s->key);
    s->hash = fnv1a(s->key);
    const nas_tensor *t = p[i].value;
    s->shape[0] = t->n;
    s->shape[1] = t->c;
    s->shape[2] = t->h;
    s->shape[3] = t->w;
    s->kind = param_kind(p, np, i);
    if (s->kind == K_WEIGHT)
        s->bound = 1.0f / sqrtf((float)(t->c * t->h * t->w));
    if (s->kind == K_BIAS && i > 0) {
        char wk[KEY_MAX];
        slot_key(sn, g, p[i - 1].name, wk);
        int k = find_slot(sn, wk, fnv1a(wk));
        const nas_tensor *w = p[i - 1].value;
        int fan = k >= 0 ? sn->slots[k].shape[1] * sn->slots[k].shape[2] * sn->slots[k].shape[3]
                         : w->c * w->h * w->w;
        s->bound = 1.0f / sqrtf((float)fan);
    }
}

/* The slot of parameter i, created or grown to hold the tensor (alloc 0:
 * shapes only, while scanning). *idx gets its index. */
static int ensure_slot(nas_supernet *sn, const nas_genotype *g, const nas_net_param *p, int np,
                       int i, int alloc, int *idx)
{
    slot d;
    describe(sn, g, p, np, i, &d);
    int k = find_slot(sn, d.key, d.hash);
    if (k < 0) {
        if (sn->n == sn->cap) {
            int cap = sn->cap ? 2 * sn->cap : 256;
            slot *ns = realloc(sn->slots, (size_t)cap * sizeof *ns);
            if (!ns)
                return NAS_ENOMEM;
            sn->slots = ns;
            sn->cap = cap;
        }
        k = sn->n++;
        sn->slots[k] = d;
        memset(sn->slots[k].shape, 0, sizeof d.shape);
        if (2 * sn->n > sn->tcap && rehash(sn, sn->tcap ? 2 * sn->tcap : 1024)) {
            sn->n--;
            return NAS_ENOMEM;
        }
        if (sn->tcap && find_slot(sn, d.key, d.hash) < 0) { /* not rehashed: insert */
            size_t j = d.hash & (size_t)(sn->tcap - 1);
            while (sn->table[j] >= 0)
                j = (j + 1) & (size_t)(sn->tcap - 1);
            sn->table[j] = k;
        }
    }
    *idx = k;
    return grow_slot(sn, &sn->slots[k], d.shape, alloc);
}

/* ---- copying between slots and a net ------------------------------------------ */

/* The leading block of shape t (n, c, h, w) of slot s (which = 0 values,
 * 1 momentum) into out; elements s does not hold: initial values (momentum 0). */
static void gather(const nas_supernet *sn, const slot *s, const nas_tensor *t, int which,
                   float *out)
{
    const float *src = which ? s->mom : s->val;
    size_t i = 0;
    for (int a = 0; a < t->n; a++)
        for (int b = 0; b < t->c; b++)
            for (int c = 0; c < t->h; c++)
                for (int d = 0; d < t->w; d++, i++) {
                    int held = src && a < s->shape[0] && b < s->shape[1] && c < s->shape[2] &&
                               d < s->shape[3];
                    if (held)
                        out[i] = src[(((size_t)a * s->shape[1] + b) * s->shape[2] + c) *
                                         s->shape[3] + d];
                    else
                        out[i] = which ? 0.0f : init_value(sn->seed, s, a, b, c, d);
                }
}

/* The inverse of gather, into a slot that holds the block. */
static void scatter(slot *s, const nas_tensor *t, int which, const float *in)
{
    float *dst = which ? s->mom : s->val;
    size_t i = 0;
    for (int a = 0; a < t->n; a++)
        for (int b = 0; b < t->c; b++)
            for (int c = 0; c < t->h; c++)
                for (int d = 0; d < t->w; d++, i++)
                    dst[(((size_t)a * s->shape[1] + b) * s->shape[2] + c) * s->shape[3] + d] = in[i];
}

/* The parameters of net (malloc'ed array into *p, count into *np) and,
 * when h is not NULL, a host buffer as large as the largest of them. On
 * failure nothing is left allocated. */
static int net_params(nas_net *net, nas_net_param **p, int *np, float **h)
{
    int n = nas_net_params(net, NULL, 0);
    *p = malloc((size_t)(n > 0 ? n : 1) * sizeof **p);
    if (!*p)
        return NAS_ENOMEM;
    *np = nas_net_params(net, *p, n);
    size_t m = 1;
    for (int i = 0; i < *np; i++)
        if ((*p)[i].value->count > m)
            m = (*p)[i].value->count;
    if (h && !(*h = malloc(m * sizeof **h))) {
        free(*p);
        return NAS_ENOMEM;
    }
    return NAS_OK;
}

/* Copy the slots of genotype g into net (values, statistics and, with
 * momentum, SGD momentum). A slot that does not exist (only possible for
 * a const supernet) reads as its initial values. */
static int load_net(const nas_supernet *sn, const nas_genotype *g, nas_net *net, int momentum)
{
    nas_net_param *p;
    float *h;
    int np, rc = net_params(net, &p, &np, &h);
    if (rc)
        return rc;
    for (int i = 0; i < np && !rc; i++) {
        slot d;
        describe(sn, g, p, np, i, &d);
        int k = find_slot(sn, d.key, d.hash);
        const slot *s = k >= 0 ? &sn->slots[k] : &d;
        gather(sn, s, p[i].value, 0, h);
        rc = nas_tensor_upload(p[i].value, h, p[i].value->count);
        nas_tensor *m = momentum ? nas__net_param_momentum(net, i) : NULL;
        if (!rc && m) {
            gather(sn, s, m, 1, h);
            rc = nas_tensor_upload(m, h, m->count);
        }
    }
    free(h);
    free(p);
    return rc;
}

/* Copy net's values, statistics and momentum back into the slots of g,
 * which hold them (ensure_slot ran for every parameter). */
static int store_net(nas_supernet *sn, const nas_genotype *g, nas_net *net)
{
    nas_net_param *p;
    float *h;
    int np, rc = net_params(net, &p, &np, &h);
    if (rc)
        return rc;
    for (int i = 0; i < np && !rc; i++) {
        char key[KEY_MAX];
        slot_key(sn, g, p[i].name, key);
        int k = find_slot(sn, key, fnv1a(key));
        if (k < 0) {
            rc = NAS_EINVAL;
            break;
        }
        rc = nas_tensor_download(p[i].value, h, p[i].value->count);
        if (!rc)
            scatter(&sn->slots[k], p[i].value, 0, h);
        nas_tensor *m = nas__net_param_momentum(net, i);
        if (!rc && m && sn->slots[k].mom) {
            rc = nas_tensor_download(m, h, m->count);
            if (!rc)
                scatter(&sn->slots[k], m, 1, h);
        }
    }
    free(h);
    free(p);
    return rc;
}

/* Create or grow every slot net (the subnet of g) uses. */
static int ensure_slots(nas_supernet *sn, const nas_genotype *g, nas_net *net, int alloc)
{
    nas_net_param *p;
    int np, k, rc = net_params(net, &p, &np, NULL);
    if (rc)
        return rc;
    for (int i = 0; i < np && !rc; i++)
        rc = ensure_slot(sn, g, p, np, i, alloc, &k);
    free(p);
    return rc;
}

/* ---- creating ------------------------------------------------------------------- */

/* The net of genotype g on backend be (the supernet's own, or an
 * evaluation thread's: nas_supernet_evaluate_many). */
static int build_on(const nas_supernet *sn, nas_backend *be, const nas_genotype *g, int max_batch,
                    nas_net **out, nas_error *err)
{
    nas_net_desc d = sn->desc;
    d.genotype = *g;
    d.genotype.len = nas_space_arch_len(sn->space); /* issue 33: the network's tokens, not
                                                      the recipe choices' */
    int rc = nas_net_create(be, &d, max_batch, sn->seed, out, err);
    if (rc) {
        char buf[NAS_GENOTYPE_STR_MAX];
        nas_space_format(sn->space, g, buf, sizeof buf);
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err ? err->msg : "");
        return nas_error_set(err, rc, "building subnet %s: %s", buf, why);
    }
    return NAS_OK;
}

static int build(const nas_supernet *sn, const nas_genotype *g, int max_batch, nas_net **out,
                 nas_error *err)
{
    return build_on(sn, sn->be, g, max_batch, out, err);
}

/* The number in a token's name ("c24" -> 24, "d3" -> 3), or -1. */
static int token_number(const nas_space *s, int tok)
{
    const char *t = nas_space_token_name(s, tok);
    while (t && *t && (*t < '0' || *t > '9'))
        t++;
    return t && *t ? atoi(t) : -1;
}

/* Cover genotype j: every op decision at its choice j (mod its count),
 * width and depth decisions at their largest. */
static void cover_genotype(const nas_supernet *sn, int j, nas_genotype *g)
{
    const nas_space *s = sn->space;
    g->len = nas_space_seq_len(s);
    for (int i = 0; i < g->len; i++) {
        char nm[64];
        int n = nas_space_decision_choices(s, i), pick = j % (n > 0 ? n : 1);
        nas_space_decision_name(s, i, nm, sizeof nm);
        if (ends_with(nm, ".channels") || ends_with(nm, ".depth"))
            for (int k = 0, best = -1; k < n; k++) {
                int v = token_number(s, nas_space_decision_token(s, i, k));
                if (v > best) {
                    best = v;
                    pick = k;
                }
            }
        g->tok[i] = (uint8_t)nas_space_decision_token(s, i, pick);
    }
}

static int max_choices(const nas_space *s)
{
    int m = 1;
    for (int i = 0; i < nas_space_seq_len(s); i++)
        if (nas_space_decision_choices(s, i) > m)
            m = nas_space_decision_choices(s, i);
    return m;
}

/* Allocate and initialise, at its shape, every slot that has no values
 * yet (all of them after scan; those the weights file lacks in attach). */
static int alloc_slots(nas_supernet *sn, nas_error *err)
{
    for (int k = 0; k < sn->n; k++)
        if (!sn->slots[k].val && grow_slot(sn, &sn->slots[k], sn->slots[k].shape, 1))
            return nas_error_set(err, NAS_ENOMEM, "supernet: out of memory allocating slot %s",
                                 sn->slots[k].key);
    return NAS_OK;
}

/* Find every slot and its largest shape (docs/one-shot.md), then (alloc)
 * allocate and initialise them. */
static int scan(nas_supernet *sn, int alloc, nas_error *err)
{
    int covers = max_choices(sn->space), rc = NAS_OK;
    for (int j = 0; j < covers + SCAN_RANDOM && !rc; j++) {
        nas_genotype g;
        if (j < covers)
            cover_genotype(sn, j, &g);
        else
            nas_supernet_path(sn, -(int64_t)(j - covers) - 1, &g);
        if (!nas_space_is_valid(sn->space, &g))
            continue;
        nas_net *net = NULL;
        rc = build(sn, &g, 1, &net, err);
        if (!rc && (rc = ensure_slots(sn, &g, net, 0)) != 0)
            nas_error_set(err, rc, "supernet: out of memory registering slots");
        nas_net_destroy(net);
    }
    return !rc && alloc ? alloc_slots(sn, err) : rc;
}

/* Chain: the decision of each layer's op ("sS.opL"), or -1. */
static void map_op_decisions(nas_supernet *sn)
{
    for (int s = 0; s <= NAS_CHAIN_MAX_STAGES; s++)
        for (int l = 0; l < NAS_CHAIN_MAX_LAYERS; l++)
            sn->op_dec[s][l] = -1;
    for (int i = 0; i < nas_space_seq_len(sn->space); i++) {
        char nm[64], rest[2];
        int s, l;
        nas_space_decision_name(sn->space, i, nm, sizeof nm);
        if (sscanf(nm, "s%d.op%d%1s", &s, &l, rest) == 2 && s >= 0 &&
            s <= NAS_CHAIN_MAX_STAGES && l >= 0 && l < NAS_CHAIN_MAX_LAYERS)
            sn->op_dec[s][l] = i;
    }
}

/* nas_supernet_create; alloc 0: the slots' shapes only, no values. */
static int create(nas_backend *be, const nas_space *space, int in_c, int in_h, int in_w,
                  int classes, uint64_t seed, int alloc, nas_supernet **out, nas_error *err)
{
    if (!out)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_create: NULL argument");
    *out = NULL;
    if (!be || !space || in_c <= 0 || in_h <= 0 || in_w <= 0 || classes < 2)
        return nas_error_set(err, NAS_EINVAL,
                             "nas_supernet_create: NULL argument or bad input %dx%dx%d, %d classes",
                             in_c, in_h, in_w, classes);
    nas_supernet *sn = calloc(1, sizeof *sn);
    if (!sn)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    const nas_space_desc *sd = nas_space_get_desc(space);
    sn->be = be;
    sn->space = space;
    sn->seed = seed;
    sn->desc.channels = sd->channels;
    sn->desc.stages = sd->stages;
    sn->desc.cells_per_stage = sd->cells_per_stage;
    sn->desc.in_c = in_c;
    sn->desc.in_h = in_h;
    sn->desc.in_w = in_w;
    sn->desc.classes = classes;
    if (sd->type == NAS_SPACE_CHAIN)
        sn->desc.space = space;
    map_op_decisions(sn);
    int rc = scan(sn, alloc, err);
    if (rc) {
        nas_supernet_destroy(sn);
        return rc;
    }
    *out = sn;
    return NAS_OK;
}

int nas_supernet_create(nas_backend *be, const nas_space *space, int in_c, int in_h, int in_w,
                        int classes, uint64_t seed, nas_supernet **out, nas_error *err)
{
    return create(be, space, in_c, in_h, in_w, classes, seed, 1, out, err);
}

void nas_supernet_destroy(nas_supernet *sn)
{
    if (!sn)
        return;
    for (int k = 0; k < sn->n; k++) {
        if (!sn->slots[k].mapped)
            free(sn->slots[k].val);
        free(sn->slots[k].mom);
    }
    free(sn->slots);
    free(sn->table);
    nas__snw_close(sn->map);
    free(sn);
}

int nas_supernet_is_mapped(const nas_supernet *sn) { return sn && sn->map; }

/* NAS_EINVAL when sn is mapped read-only (`what` is refused), else NAS_OK. */
static int refuse_mapped(const nas_supernet *sn, const char *what, nas_error *err)
{
    if (!sn->map)
        return NAS_OK;
    return nas_error_set(err, NAS_EINVAL, "%s: this supernet is mapped read-only from %s (for "
                         "evaluating subnets); train, load or save a supernet made by "
                         "nas_supernet_create", what, sn->map_path);
}

int nas_supernet_slots(const nas_supernet *sn) { return sn ? sn->n : 0; }

int64_t nas_supernet_floats(const nas_supernet *sn)
{
    int64_t f = 0;
    for (int k = 0; sn && k < sn->n; k++)
        f += (int64_t)count4(sn->slots[k].shape);
    return f;
}

int64_t nas_supernet_steps(const nas_supernet *sn) { return sn ? sn->steps : 0; }

void nas_supernet_path(const nas_supernet *sn, int64_t step, nas_genotype *g)
{
    nas_rng r;
    nas_rng_seed(&r, nas_rng_mix64(sn->seed + (uint64_t)step * NAS_RNG_GOLDEN), PATH_STREAM);
    const nas_space *s = sn->space;
    for (int tries = 0; tries < 1000; tries++) {
        g->len = nas_space_seq_len(s);
        for (int i = 0; i < g->len; i++) {
            int n = nas_space_decision_choices(s, i);
            g->tok[i] = (uint8_t)nas_space_decision_token(s, i, (int)nas_rng_bounded(&r, (uint32_t)n));
        }
        if (nas_space_is_valid(s, g))
            return;
    }
    nas_space_sample(s, &r, g); /* a space of almost no valid genotypes */
}

/* ---- training ------------------------------------------------------------------- */

/* One supernet step t on batch (x, y): build the path's subnet, copy its
 * slots in, train one step, copy them back. */
static int train_one(nas_supernet *sn, const nas_supernet_train_opts *o, const nas_tensor *x,
                     const nas_tensor *y, int t, int total, int ep, int s, int per_epoch,
                     float *loss, int *correct, nas_error *err)
{
    nas_genotype g;
    nas_supernet_path(sn, t, &g);
    nas_net *net = NULL;
    int rc = build(sn, &g, o->recipe->batch_size, &net, err);
    if (rc)
        return rc;
    rc = ensure_slots(sn, &g, net, 1);
    if (!rc)
        rc = load_net(sn, &g, net, 1);
    if (rc) {
        nas_net_destroy(net);
        return nas_error_set(err, rc, "supernet step %d: copying weights in: %s", t + 1,
                             nas_strerror(rc));
    }
    int skipped = 0;
    rc = nas__train_step(net, x, y, o->recipe, t, total, ep, s, per_epoch, loss, correct,
                         &skipped, err);
    if (rc == NAS_ENAN) {
        char buf[NAS_GENOTYPE_STR_MAX], why[sizeof err->msg];
        nas_space_format(sn->space, &g, buf, sizeof buf);
        snprintf(why, sizeof why, "%s", err ? err->msg : "");
        nas_error_set(err, rc, "supernet path %s: %s", buf, why);
    }
    if (!rc && (rc = store_net(sn, &g, net)) != 0)
        nas_error_set(err, rc, "supernet step %d: copying weights out: %s", t + 1,
                      nas_strerror(rc));
    nas_net_destroy(net);
    return rc;
}

/* Stats of the steps run and the per-epoch callback and checkpoint. */
typedef struct run_sums {
    double loss, seconds;
    long correct, seen, images;
} run_sums;

/* The end of epoch ep: the callback first, then the checkpoint, so what the
 * callback records of the epoch (the one-shot search's curve row) is on disk
 * before the checkpoint that makes a resume start after it; a kill between
 * the two leaves the epoch to be trained again, never unrecorded. */
static int end_epoch(nas_supernet *sn, const nas_supernet_train_opts *o, int ep,
                     run_sums *e, nas_error *err)
{
    int stop = 0;
    if (o->on_epoch) {
        nas_epoch_stats es = {ep + 1, o->recipe->epochs,
                              e->seen ? e->loss / (double)e->seen : 0,
                              e->seen ? (double)e->correct / (double)e->seen : 0, e->seconds, 0};
        es.images_per_s = e->seconds > 0 ? (double)e->seen / e->seconds : 0;
        stop = o->on_epoch(o->ctx, &es);
    }
    if (stop < 0) /* the epoch is not recorded: no checkpoint may claim it */
        return nas_error_set(err, NAS_EIO, "supernet training stopped after epoch %d: its "
                             "callback could not record it (no checkpoint written)", ep + 1);
    int rc = o->checkpoint ? nas_supernet_save(sn, o->checkpoint, o->fingerprint, err) : NAS_OK;
    if (!rc && stop)
        rc = nas_error_set(err, NAS_EINTR, "supernet training stopped after epoch %d", ep + 1);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The step loop of nas_supernet_train, from step sn->steps. */
static int train_loop(nas_supernet *sn, const nas_dataset *data, const nas_supernet_train_opts *o,
                      nas__batch_io *io, nas__loader *ld, int per_epoch, run_sums *all,
                      nas_error *err)
{
    int total = per_epoch * o->recipe->epochs, rc = NAS_OK;
    int64_t limit = o->max_steps > 0 ? sn->steps + o->max_steps : total;
    run_sums e = {0};
    while (!rc && sn->steps < total && sn->steps < limit) {
        int t = (int)sn->steps, ep = t / per_epoch, s = t % per_epoch, b = 0, correct = 0;
        float loss = 0;
        const float *hx, *hy;
        nas_tensor xv, yv;
        double t0 = now_s();
        rc = nas__loader_next(ld, &hx, &hy, &b, NULL);
        if (!rc)
            rc = nas__batch_io_upload(io, hx, hy, b, &xv, &yv);
        if (rc)
            return nas_error_set(err, rc, "supernet: loading batch %d of epoch %d: %s", s + 1,
                                 ep + 1, nas_strerror(rc));
        rc = train_one(sn, o, &xv, &yv, t, total, ep, s, per_epoch, &loss, &correct, err);
        if (rc)
            return rc;
        sn->steps++;
        double dt = now_s() - t0;
        run_sums add = {(double)loss * b, dt, correct, b, b};
        for (run_sums *r = &e; r; r = r == &e ? all : NULL) {
            r->loss += add.loss;
            r->seconds += add.seconds;
            r->correct += add.correct;
            r->seen += add.seen;
            r->images += add.images;
        }
        if (s + 1 == per_epoch) {
            rc = end_epoch(sn, o, ep, &e, err);
            memset(&e, 0, sizeof e);
        }
    }
    return rc;
}

int nas_supernet_train(nas_supernet *sn, const nas_dataset *data,
                       const nas_supernet_train_opts *o, nas_train_stats *stats, nas_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!sn || !data || !o || !o->recipe)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_train: NULL argument");
    if (refuse_mapped(sn, "nas_supernet_train", err))
        return NAS_EINVAL;
    const nas_recipe *rec = o->recipe;
    if (rec->epochs < 0 || rec->batch_size <= 0 || data->n <= 0 || !(rec->lr >= 0) ||
        data->c != sn->desc.in_c || data->h != sn->desc.in_h || data->w != sn->desc.in_w)
        return nas_error_set(err, NAS_EINVAL,
                             "nas_supernet_train: bad recipe (epochs %d, batch %d, lr %g) or data "
                             "(%d images of %dx%dx%d, the supernet takes %dx%dx%d)",
                             rec->epochs, rec->batch_size, rec->lr, data->n, data->c, data->h,
                             data->w, sn->desc.in_c, sn->desc.in_h, sn->desc.in_w);
    int per_epoch = (data->n + rec->batch_size - 1) / rec->batch_size;
    if (sn->steps > (int64_t)per_epoch * rec->epochs)
        return nas_error_set(err, NAS_EINVAL, "supernet: %lld steps done, the recipe has %d",
                             (long long)sn->steps, per_epoch * rec->epochs);
    nas__batch_io io;
    int rc = nas__batch_io_init(&io, sn->be, data, rec->batch_size);
    if (rc)
        return nas_error_set(err, rc, "allocating a batch of %d images: %s", rec->batch_size,
                             nas_strerror(rc));
    nas__loader *ld = NULL;
    int ep0 = (int)(sn->steps / per_epoch), b0 = (int)(sn->steps % per_epoch);
    rc = nas__loader_create(data, rec->batch_size, rec->seed, ep0, b0, rec->epochs, &rec->augment,
                            rec->loader_threads, &ld, err);
    run_sums all = {0};
    int64_t first = sn->steps;
    if (!rc)
        rc = train_loop(sn, data, o, &io, ld, per_epoch, &all, err);
    if (stats) {
        stats->train_loss = all.seen ? all.loss / (double)all.seen : 0;
        stats->train_accuracy = all.seen ? (double)all.correct / (double)all.seen : 0;
        stats->seconds = all.seconds;
        stats->images_per_s = all.seconds > 0 ? (double)all.images / all.seconds : 0;
        stats->steps = (int)(sn->steps - first);
        stats->epochs = (int)(sn->steps / per_epoch);
    }
    nas__loader_destroy(ld);
    nas__batch_io_free(&io);
    return rc;
}

/* ---- subnets ---------------------------------------------------------------------- */

/* nas_supernet_subnet on backend be. */
static int subnet_on(const nas_supernet *sn, nas_backend *be, const nas_genotype *g,
                     int max_batch, nas_net **out, nas_error *err)
{
    if (!out)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_subnet: NULL argument");
    *out = NULL;
    if (!sn || !g || max_batch <= 0)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_subnet: NULL argument or batch %d",
                             max_batch);
    if (!nas_space_is_valid(sn->space, g))
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_subnet: genotype not of the space");
    nas_net *net = NULL;
    int rc = build_on(sn, be, g, max_batch, &net, err);
    if (!rc && (rc = load_net(sn, g, net, 0)) != 0)
        nas_error_set(err, rc, "copying the supernet's weights into the subnet: %s",
                      nas_strerror(rc));
    if (rc) {
        nas_net_destroy(net);
        return rc;
    }
    *out = net;
    return NAS_OK;
}

int nas_supernet_subnet(const nas_supernet *sn, const nas_genotype *g, int max_batch,
                        nas_net **out, nas_error *err)
{
    return subnet_on(sn, sn ? sn->be : NULL, g, max_batch, out, err);
}

/* nas_supernet_subnet_recalibrated on backend be. */
static int recalibrated_on(const nas_supernet *sn, nas_backend *be, const nas_genotype *g,
                           const nas_dataset *calib, int recal_batches, int batch_size,
                           nas_net **out, nas_error *err)
{
    int rc = subnet_on(sn, be, g, batch_size, out, err);
    if (!rc)
        rc = nas_net_bn_recalibrate(*out, calib, recal_batches, batch_size, err);
    if (rc) {
        nas_net_destroy(*out);
        *out = NULL;
    }
    return rc;
}

int nas_supernet_subnet_recalibrated(const nas_supernet *sn, const nas_genotype *g,
                                     const nas_dataset *calib, int recal_batches, int batch_size,
                                     nas_net **out, nas_error *err)
{
    if (!out || (recal_batches > 0 && !calib))
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_subnet_recalibrated: NULL argument");
    return recalibrated_on(sn, sn ? sn->be : NULL, g, calib, recal_batches, batch_size, out, err);
}

/* nas_supernet_evaluate on backend be. */
static int evaluate_on(const nas_supernet *sn, nas_backend *be, const nas_genotype *g,
                       const nas_dataset *calib, int recal_batches, int batch_size,
                       const nas_dataset *valid, double *accuracy, double *loss, nas_error *err)
{
    if (!valid || !accuracy || (recal_batches > 0 && !calib))
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_evaluate: NULL argument");
    nas_net *net = NULL;
    int rc = recalibrated_on(sn, be, g, calib, recal_batches, batch_size, &net, err);
    if (!rc)
        rc = nas_net_evaluate(net, valid, batch_size, accuracy, loss, err);
    nas_net_destroy(net);
    return rc;
}

int nas_supernet_evaluate(const nas_supernet *sn, const nas_genotype *g, const nas_dataset *calib,
                          int recal_batches, int batch_size, const nas_dataset *valid,
                          double *accuracy, double *loss, nas_error *err)
{
    return evaluate_on(sn, sn ? sn->be : NULL, g, calib, recal_batches, batch_size, valid,
                       accuracy, loss, err);
}

/* nas_supernet_evaluate_many: what its threads share. Genotypes are
 * handed out in index order from `next`; `failed` stops the others after
 * an error (each thread keeps its first). */
typedef struct many_job {
    const nas_supernet *sn;
    const nas_genotype *g;
    int k;
    const nas_dataset *calib, *valid;
    int recal_batches, batch_size;
    double *accuracy, *loss;
    int next, failed; /* atomics (__atomic builtins) */
} many_job;

typedef struct many_thread {
    many_job *job;
    pthread_t tid;
    int started;
    int rc, index; /* first error and its genotype (index -1: none) */
    nas_error err;
} many_thread;

static void *many_main(void *arg)
{
    many_thread *t = arg;
    many_job *j = t->job;
    nas_backend *be = NULL;
    t->rc = nas_backend_create(nas_backend_name(j->sn->be), 1, 0, &be, &t->err);
    if (!t->rc && (t->rc = nas_backend_set_precision(be, nas_backend_get_precision(j->sn->be))))
        nas_error_set(&t->err, t->rc, "precision %s: %s", nas_backend_get_precision(j->sn->be),
                      nas_backend_last_error(be));
    if (t->rc)
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    while (!t->rc && !__atomic_load_n(&j->failed, __ATOMIC_RELAXED)) {
        int i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (i >= j->k)
            break;
        t->rc = evaluate_on(j->sn, be, &j->g[i], j->calib, j->recal_batches, j->batch_size,
                            j->valid, &j->accuracy[i], j->loss ? &j->loss[i] : NULL, &t->err);
        if (t->rc) {
            t->index = i;
            __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        }
    }
    nas_backend_destroy(be);
    return NULL;
}

int nas_supernet_evaluate_many(const nas_supernet *sn, const nas_genotype *g, int k,
                               const nas_dataset *calib, int recal_batches, int batch_size,
                               const nas_dataset *valid, int threads, double *accuracy,
                               double *loss, nas_error *err)
{
    if (!sn || !g || k < 0 || !accuracy)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_evaluate_many: NULL argument");
    if (threads > k)
        threads = k;
    if (threads <= 1 || strcmp(nas_backend_name(sn->be), "cpu") != 0) {
        int rc = NAS_OK;
        for (int i = 0; i < k && !rc; i++)
            rc = evaluate_on(sn, sn->be, &g[i], calib, recal_batches, batch_size, valid,
                             &accuracy[i], loss ? &loss[i] : NULL, err);
        return rc;
    }
    many_job job = {sn, g, k, calib, valid, recal_batches, batch_size, accuracy, loss, 0, 0};
    many_thread *t = calloc((size_t)threads, sizeof *t);
    if (!t)
        return nas_error_set(err, NAS_ENOMEM, "out of memory");
    int rc = NAS_OK, first = -1;
    for (int i = 0; i < threads; i++) {
        t[i].job = &job;
        t[i].index = -1;
        t[i].started = pthread_create(&t[i].tid, NULL, many_main, &t[i]) == 0;
        if (!t[i].started && !rc) {
            rc = nas_error_set(err, NAS_ENOMEM, "cannot start evaluation thread %d of %d",
                               i + 1, threads);
            __atomic_store_n(&job.failed, 1, __ATOMIC_RELAXED);
        }
    }
    for (int i = 0; i < threads; i++) {
        if (!t[i].started)
            continue;
        pthread_join(t[i].tid, NULL);
        if (t[i].rc && (first < 0 || t[i].index < t[first].index))
            first = i; /* a thread's backend (index -1), else the lowest genotype */
    }
    if (!rc && first >= 0) {
        rc = t[first].rc;
        if (err)
            *err = t[first].err;
    }
    free(t);
    return rc;
}

/* ---- checkpoints ------------------------------------------------------------------ */

#define META_FP "__supernet/fingerprint"
#define META_STEPS "__supernet/steps"

int nas_supernet_save(const nas_supernet *sn, const char *path, const char *fingerprint,
                      nas_error *err)
{
    if (!sn || !path)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_save: NULL argument");
    if (refuse_mapped(sn, "nas_supernet_save", err)) /* it has no momentum to save */
        return NAS_EINVAL;
    const char *fp = fingerprint ? fingerprint : "";
    nas__npz_writer *z = NULL;
    int rc = nas__npz_create(path, &z, err);
    int64_t one = (int64_t)strlen(fp), scalar = 1, steps = sn->steps;
    if (!rc)
        rc = nas__npz_add(z, META_FP, "|u1", 1, &one, fp, (size_t)one, err);
    if (!rc)
        rc = nas__npz_add(z, META_STEPS, "<i8", 1, &scalar, &steps, sizeof steps, err);
    for (int k = 0; k < sn->n && !rc; k++) {
        const slot *s = &sn->slots[k];
        int64_t shape[4] = {s->shape[0], s->shape[1], s->shape[2], s->shape[3]};
        size_t bytes = count4(s->shape) * sizeof(float);
        char name[KEY_MAX + 16];
        rc = nas__npz_add(z, s->key, "<f4", 4, shape, s->val, bytes, err);
        snprintf(name, sizeof name, "%s#momentum", s->key);
        if (!rc && s->mom)
            rc = nas__npz_add(z, name, "<f4", 4, shape, s->mom, bytes, err);
    }
    if (rc) {
        nas__npz_abort(z);
        return rc;
    }
    return nas__npz_close(z, err);
}

/* The first line that differs between a[0..na) and the string b: its
 * start and length in each. */
static void first_diff(const char *a, size_t na, const char *b, size_t *ia, size_t *la,
                       size_t *ib, size_t *lb)
{
    size_t nb = strlen(b), i = 0, j = 0;
    for (;;) {
        size_t ei = i, ej = j;
        while (ei < na && a[ei] != '\n')
            ei++;
        while (ej < nb && b[ej] != '\n')
            ej++;
        *ia = i;
        *la = ei - i;
        *ib = j;
        *lb = ej - j;
        if (ei - i != ej - j || memcmp(a + i, b + j, ei - i) != 0 || ei >= na || ej >= nb)
            return;
        i = ei + 1;
        j = ej + 1;
    }
}

/* Check the file's fingerprint and steps. */
static int load_meta(const nas__npz *z, const char *path, const char *fp, int64_t *steps,
                     nas_error *err)
{
    const nas__npy *f = nas__npz_find(z, META_FP), *st = nas__npz_find(z, META_STEPS);
    if (!f || !st || strcmp(f->descr, "|u1") != 0 || strcmp(st->descr, "<i8") != 0 ||
        st->count != 1)
        return nas_error_set(err, NAS_EFORMAT, "%s: not a supernet checkpoint (no %s / %s)", path,
                             META_FP, META_STEPS);
    if (f->count != strlen(fp) || memcmp(f->data, fp, f->count) != 0) {
        size_t ia = 0, ib = 0, la, lb;
        first_diff(f->data, f->count, fp, &ia, &la, &ib, &lb);
        return nas_error_set(err, NAS_EEXIST,
                             "%s belongs to another supernet: \"%.*s\" in the file, \"%.*s\" here",
                             path, (int)(la > 160 ? 160 : la), (const char *)f->data + ia,
                             (int)(lb > 160 ? 160 : lb), fp + ib);
    }
    memcpy(steps, st->data, sizeof *steps);
    if (*steps < 0)
        return nas_error_set(err, NAS_EFORMAT, "%s: %s = %lld, expected the steps done (>= 0)",
                             path, META_STEPS, (long long)*steps);
    return NAS_OK;
}

/* Copy member a (values or momentum) into slot s, growing it first. */
static int load_member(nas_supernet *sn, slot *s, const nas__npy *a, int which, const char *path,
                       nas_error *err)
{
    if (strcmp(a->descr, "<f4") != 0 || a->ndim != 4)
        return nas_error_set(err, NAS_EFORMAT, "%s: %s is not a 4-D float32 array", path, a->name);
    int need[4] = {(int)a->shape[0], (int)a->shape[1], (int)a->shape[2], (int)a->shape[3]};
    int rc = grow_slot(sn, s, need, 1);
    if (rc)
        return nas_error_set(err, rc, "out of memory");
    if (which && !s->mom)
        return nas_error_set(err, NAS_EFORMAT, "%s: %s: BN statistics have no momentum", path,
                             a->name);
    nas_tensor t = {need[0], need[1], need[2], need[3], a->count, NULL, NULL, 0};
    scatter(s, &t, which, a->data);
    return NAS_OK;
}

int nas_supernet_checkpoint_steps(const char *path, const char *fingerprint, int64_t *steps,
                                  nas_error *err)
{
    if (!path || !steps)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_checkpoint_steps: NULL argument");
    *steps = 0;
    nas__npz *z = NULL; /* the two metadata members only, not the slots */
    const char *const meta[] = {META_FP, META_STEPS};
    int rc = nas__npz_read_members(path, meta, 2, &z, err);
    if (!rc)
        rc = load_meta(z, path, fingerprint ? fingerprint : "", steps, err);
    nas__npz_free(z);
    return rc;
}

int nas_supernet_load(nas_supernet *sn, const char *path, const char *fingerprint,
                      nas_error *err)
{
    if (!sn || !path)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_load: NULL argument");
    if (refuse_mapped(sn, "nas_supernet_load", err))
        return NAS_EINVAL;
    nas__npz *z = NULL;
    int rc = nas__npz_read(path, &z, err);
    int64_t steps = 0;
    if (!rc)
        rc = load_meta(z, path, fingerprint ? fingerprint : "", &steps, err);
    for (int i = 0; z && i < nas__npz_count(z) && !rc; i++) {
        const nas__npy *a = nas__npz_at(z, i);
        if (strncmp(a->name, "__supernet/", 11) == 0)
            continue;
        char key[KEY_MAX];
        snprintf(key, sizeof key, "%s", a->name);
        char *hash = strstr(key, "#momentum");
        if (hash)
            *hash = 0;
        int k = find_slot(sn, key, fnv1a(key));
        if (k < 0)
            rc = nas_error_set(err, NAS_EFORMAT, "%s: slot %s is not one of this supernet's: the "
                               "file is for another space", path, key);
        else
            rc = load_member(sn, &sn->slots[k], a, hash != NULL, path, err);
    }
    if (!rc)
        sn->steps = steps;
    nas__npz_free(z);
    return rc;
}

/* ---- the mapped weights file (trainer/supernet_map.c) ----------------------------- */

int nas__supernet_write_weights(const nas_supernet *sn, const char *path, const char *fingerprint,
                                void (*before_rename)(void *), void *ctx, nas_error *err)
{
    if (!sn || !path)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_write_weights: NULL argument");
    nas__snw_slot *w = malloc((size_t)(sn->n > 0 ? sn->n : 1) * sizeof *w);
    if (!w)
        return nas_error_set(err, NAS_ENOMEM, "out of memory writing %s", path);
    for (int k = 0; k < sn->n; k++) {
        const slot *s = &sn->slots[k];
        w[k].key = s->key;
        memcpy(w[k].shape, s->shape, sizeof w[k].shape);
        w[k].val = s->val;
    }
    int rc = nas__snw_write(path, fingerprint ? fingerprint : "", sn->steps, w, sn->n,
                            before_rename, ctx, err);
    free(w);
    return rc;
}

int nas_supernet_write_weights(const nas_supernet *sn, const char *path, const char *fingerprint,
                               nas_error *err)
{
    return nas__supernet_write_weights(sn, path, fingerprint, NULL, NULL, err);
}

/* Point the slots of sn (shapes only, no values yet) into the file m; a
 * slot the file lacks gets its initial values, as nas_supernet_load leaves
 * it. */
static int attach(nas_supernet *sn, const nas__snw_map *m, const char *path, nas_error *err)
{
    for (int i = 0; i < m->n; i++) {
        const nas__snw_slot *e = &m->slot[i];
        int k = find_slot(sn, e->key, fnv1a(e->key));
        if (k < 0)
            return nas_error_set(err, NAS_EFORMAT, "%s: slot %s is not one of this supernet's: "
                                 "the file is for another space", path, e->key);
        slot *s = &sn->slots[k];
        if (s->mapped)
            return nas_error_set(err, NAS_EFORMAT, "%s: slot %s appears twice", path, e->key);
        (void)grow_slot(sn, s, e->shape, 0); /* the shape (and init bound) as loading grows it */
        if (memcmp(s->shape, e->shape, sizeof s->shape) != 0)
            return nas_error_set(err, NAS_EFORMAT, "%s: slot %s holds %dx%dx%dx%d, less than "
                                 "this supernet's %dx%dx%dx%d", path, e->key, e->shape[0],
                                 e->shape[1], e->shape[2], e->shape[3], s->shape[0], s->shape[1],
                                 s->shape[2], s->shape[3]);
        union { const float *c; float *v; } ro = {e->val}; /* never written: PROT_READ */
        s->val = ro.v;
        s->mapped = 1;
    }
    return alloc_slots(sn, err);
}

int nas_supernet_map(nas_backend *be, const nas_space *space, int in_c, int in_h, int in_w,
                     int classes, uint64_t seed, const char *path, const char *fingerprint,
                     int64_t steps, nas_supernet **out, nas_error *err)
{
    if (!out || !path)
        return nas_error_set(err, NAS_EINVAL, "nas_supernet_map: NULL argument");
    *out = NULL;
    nas__snw_map *m = NULL;
    int rc = nas__snw_open(path, fingerprint ? fingerprint : "", steps, &m, err);
    nas_supernet *sn = NULL;
    if (!rc)
        rc = create(be, space, in_c, in_h, in_w, classes, seed, 0, &sn, err);
    if (!rc) {
        sn->map = m; /* the supernet owns it from here */
        m = NULL;
        sn->steps = sn->map->steps;
        snprintf(sn->map_path, sizeof sn->map_path, "%s", path);
        rc = attach(sn, sn->map, path, err);
    }
    if (rc) {
        nas__snw_close(m);
        nas_supernet_destroy(sn);
        return rc;
    }
    *out = sn;
    return NAS_OK;
}

int nas_supernet_weights_check(const char *path, const char *fingerprint, int64_t steps,
                               nas_error *err)
{
    nas__snw_map *m = NULL;
    int rc = nas__snw_open(path, fingerprint ? fingerprint : "", steps, &m, err);
    nas__snw_close(m);
    return rc;
}
