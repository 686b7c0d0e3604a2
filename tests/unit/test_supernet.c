/*
 * tests/unit/test_supernet.c - the weight-sharing supernet (issue 32,
 * nas/supernet.h; docs/one-shot.md).
 *
 * Oracle: after a few supernet training steps (not at initialisation), a
 * subnet's eval logits with inherited weights (nas_supernet_subnet) equal,
 * within 1e-5, those of the stand-alone net of the same genotype
 * (nas_net_create, another init seed) whose weights this test slices out
 * of the supernet's checkpoint itself (its own reading of the slot names
 * and of "leading channels") and round-trips through nas_weights_save /
 * nas_weights_load. For a cell genotype and a chain genotype of narrower
 * widths than the widest, on the cpu and ref backends.
 * Also: a step changes only the slots of its path; training 6 steps in one
 * go equals 3 steps, a checkpoint, a fresh supernet loading it and 3 more;
 * a checkpoint with another fingerprint is refused; paths are a function
 * of (seed, step) and uniform per decision; evaluating subnets leaves the
 * supernet unchanged; evaluating several on threads gives each the bits
 * of evaluating it alone; a diverging supernet names the path (NAS_ENAN).
 * The mapped weights file (nas_supernet_write_weights, nas_supernet_map):
 * a mapped supernet evaluates every genotype (cell and chain, one and two
 * threads) to the bits of the supernet loaded from the checkpoint, holds no
 * copy of the values (its slots point into the mapping), and refuses to
 * train, load or save, leaving the file as it was; a truncated, damaged,
 * stale or foreign file is refused with a status, never a crash; a write
 * is renamed into place only once complete.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h> /* stat: the weights file's size */
#include <unistd.h> /* access */
#include <cmocka.h>
#include <math.h>
#include "nas/layers.h"
#include "nas/supernet.h"
#include "nas/trainer.h"
#include "tests/unit/chain_space.h"
#include "trainer/supernet_map_impl.h" /* nas__supernet_write_weights: the rename hook */
#include "trainer/weights_impl.h" /* nas__npz_read: the checkpoint, read by the oracle */
#include "tests/unit/supernet_fixture.h"
#define SCRATCH_NAME "supernet"
#include "tests/unit/scratch_dir.h"

/* ---- the oracle's own slicing ------------------------------------------------ */

/* The slot of parameter `name` in genotype g, as docs/one-shot.md names it. */
static void oracle_key(const nas_space *s, const nas_genotype *g, const char *name, char *key,
                       size_t n)
{
    int a, b;
    char dot[2];
    snprintf(key, n, "%s", name);
    if (nas_space_get_desc(s)->type == NAS_SPACE_CELL) {
        if (sscanf(name, "cells.%d.layers.%d%1[.]", &a, &b, dot) == 3)
            snprintf(key, n, "%s@%s", name, nas_op_name(g->tok[b]));
        return;
    }
    if (sscanf(name, "s%d.l%d%1[.]", &a, &b, dot) != 3)
        return;
    char want[32], nm[64];
    snprintf(want, sizeof want, "s%d.op%d", a, b);
    for (int i = 0; i < nas_space_seq_len(s); i++)
        if (strcmp(nas_space_decision_name(s, i, nm, sizeof nm), want) == 0)
            snprintf(key, n, "%s@%s", name, nas_space_token_name(s, g->tok[i]));
}

/* Upload into every parameter of net the leading block of its slot in
 * checkpoint z; counts the parameters narrower than their slot. */
static int oracle_slice(nas_net *net, const nas_space *s, const nas_genotype *g, const nas__npz *z)
{
    int np = nas_net_params(net, NULL, 0), narrower = 0;
    nas_net_param *p = calloc((size_t)np, sizeof *p);
    nas_net_params(net, p, np);
    for (int i = 0; i < np; i++) {
        char key[200];
        oracle_key(s, g, p[i].name, key, sizeof key);
        const nas__npy *a = nas__npz_find(z, key);
        if (!a)
            fail_msg("checkpoint has no slot %s", key);
        nas_tensor *t = p[i].value;
        int64_t S[4] = {a->shape[0], a->shape[1], a->shape[2], a->shape[3]};
        assert_true(t->n <= S[0] && t->c <= S[1] && t->h <= S[2] && t->w <= S[3]);
        narrower += t->n < S[0] || t->c < S[1];
        float *h = malloc(t->count * sizeof *h);
        const float *src = a->data;
        size_t k = 0;
        for (int x = 0; x < t->n; x++)
            for (int y = 0; y < t->c; y++)
                for (int u = 0; u < t->h; u++)
                    for (int v = 0; v < t->w; v++)
                        h[k++] = src[((x * S[1] + y) * S[2] + u) * S[3] + v];
        assert_int_equal(nas_tensor_upload(t, h, t->count), NAS_OK);
        free(h);
    }
    free(p);
    return narrower;
}

static nas_net *standalone(const fixture *f, const nas_genotype *g, uint64_t seed)
{
    nas_net_desc d;
    memset(&d, 0, sizeof d);
    d.genotype = *g;
    const nas_space_desc *sd = nas_space_get_desc(f->space);
    d.channels = sd->channels;
    d.stages = sd->stages;
    d.cells_per_stage = sd->cells_per_stage;
    d.in_c = f->c;
    d.in_h = f->h;
    d.in_w = f->w;
    d.classes = f->classes;
    if (sd->type == NAS_SPACE_CHAIN)
        d.space = f->space;
    nas_net *net = NULL;
    nas_error err;
    if (nas_net_create(f->be, &d, BATCH * 2, seed, &net, &err))
        fail_msg("stand-alone net: %s", err.msg);
    return net;
}

/* The oracle for one space, genotype and backend. */
static void oracle(const char *conf, const char *cell, const char *backend)
{
    fixture f;
    fixture_open(&f, conf, backend);
    nas_supernet *sn = trained(&f, STEPS);
    nas_genotype g = genotype_of(&f, cell);
    nas_error err;
    char ck[512], wt[512];
    snprintf(ck, sizeof ck, "%s/%s-%s.npz", g_dir, cell ? "cell" : "chain", backend);
    snprintf(wt, sizeof wt, "%s/%s-%s-sliced.npz", g_dir, cell ? "cell" : "chain", backend);
    if (nas_supernet_save(sn, ck, "oracle", &err))
        fail_msg("save: %s", err.msg);
    nas_net *sub = NULL;
    if (nas_supernet_subnet(sn, &g, BATCH * 2, &sub, &err))
        fail_msg("subnet: %s", err.msg);
    /* the stand-alone net, sliced by the oracle, through a weights file */
    nas__npz *z = NULL;
    assert_int_equal(nas__npz_read(ck, &z, &err), NAS_OK);
    nas_net *sliced = standalone(&f, &g, 77);
    int narrower = oracle_slice(sliced, f.space, &g, z);
    if (!cell)
        assert_true(narrower > 0); /* the chain genotype really is sliced */
    assert_int_equal(nas_weights_save(sliced, wt, &err), NAS_OK);
    nas_net *alone = standalone(&f, &g, 99);
    if (nas_weights_load(alone, wt, &err))
        fail_msg("load: %s", err.msg);
    /* not at initialisation: some BN gamma moved off 1 */
    int np = nas_net_params(alone, NULL, 0), moved = 0;
    nas_net_param *p = calloc((size_t)np, sizeof *p);
    nas_net_params(alone, p, np);
    for (int i = 0; i < np && !moved; i++) {
        size_t n = p[i].value->count;
        if (!strstr(p[i].name, "bn") && !strstr(p[i].name, "op.2") && !strstr(p[i].name, "stem.1"))
            continue;
        if (!strstr(p[i].name, ".weight"))
            continue;
        float *h = malloc(n * sizeof *h);
        nas_tensor_download(p[i].value, h, n);
        for (size_t k = 0; k < n; k++)
            moved |= fabsf(h[k] - 1.0f) > 1e-6f;
        free(h);
    }
    free(p);
    assert_true(moved);
    float *a = malloc((size_t)N_EVAL * f.classes * sizeof *a);
    float *b = malloc((size_t)N_EVAL * f.classes * sizeof *b);
    eval_logits(f.be, sub, f.data, a, f.classes);
    eval_logits(f.be, alone, f.data, b, f.classes);
    double worst = 0;
    for (int i = 0; i < N_EVAL * f.classes; i++)
        worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
    if (!(worst <= 1e-5))
        fail_msg("%s %s: inherited and stand-alone logits differ by %g", backend,
                 cell ? cell : "chain", worst);
    free(a);
    free(b);
    nas__npz_free(z);
    nas_net_destroy(sub);
    nas_net_destroy(sliced);
    nas_net_destroy(alone);
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

static void test_oracle_cell_cpu(void **st) { (void)st; oracle(CELL_CONF, CELL_G, "cpu"); }
static void test_oracle_cell_ref(void **st) { (void)st; oracle(CELL_CONF, CELL_G, "ref"); }
static void test_oracle_chain_cpu(void **st) { (void)st; oracle(CHAIN_CONF, NULL, "cpu"); }
static void test_oracle_chain_ref(void **st) { (void)st; oracle(CHAIN_CONF, NULL, "ref"); }

/* ---- sharing, resume, fingerprint -------------------------------------------- */

/* Slots of a checkpoint that differ between two files (values only). */
static int differing(const char *p1, const char *p2, const char *skip_prefix)
{
    nas__npz *a = NULL, *b = NULL;
    nas_error err;
    assert_int_equal(nas__npz_read(p1, &a, &err), NAS_OK);
    assert_int_equal(nas__npz_read(p2, &b, &err), NAS_OK);
    assert_int_equal(nas__npz_count(a), nas__npz_count(b));
    int diff = 0;
    for (int i = 0; i < nas__npz_count(a); i++) {
        const nas__npy *x = nas__npz_at(a, i), *y = nas__npz_find(b, x->name);
        assert_non_null(y);
        if (skip_prefix && strncmp(x->name, skip_prefix, strlen(skip_prefix)) == 0)
            continue;
        assert_int_equal(x->count * x->itemsize, y->count * y->itemsize);
        diff += memcmp(x->data, y->data, x->count * x->itemsize) != 0;
    }
    nas__npz_free(a);
    nas__npz_free(b);
    return diff;
}

static void save(const nas_supernet *sn, const char *name, char *path, size_t n)
{
    nas_error err;
    snprintf(path, n, "%s/%s", g_dir, name);
    if (nas_supernet_save(sn, path, "fp", &err))
        fail_msg("save: %s", err.msg);
}

/* One step changes the slots of its path and no other (also not their
 * momentum); the cell edges' other ops keep their values. */
static void test_step_touches_only_its_path(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CELL_CONF, "cpu");
    nas_supernet *sn = trained(&f, 2);
    char p0[512], p1[512];
    save(sn, "before.npz", p0, sizeof p0);
    nas_genotype g;
    nas_supernet_path(sn, 2, &g);
    nas_recipe r = recipe();
    nas_supernet_train_opts o = {&r, 1, NULL, NULL, NULL, NULL};
    nas_error err;
    assert_int_equal(nas_supernet_train(sn, f.data, &o, NULL, &err), NAS_OK);
    save(sn, "after.npz", p1, sizeof p1);
    nas__npz *a = NULL, *b = NULL;
    assert_int_equal(nas__npz_read(p0, &a, &err), NAS_OK);
    assert_int_equal(nas__npz_read(p1, &b, &err), NAS_OK);
    int changed = 0, off_path_changed = 0;
    for (int i = 0; i < nas__npz_count(a); i++) {
        const nas__npy *x = nas__npz_at(a, i), *y = nas__npz_find(b, x->name);
        const char *at = strchr(x->name, '@');
        if (!at || strncmp(x->name, "__", 2) == 0)
            continue;
        int e = -1, ci;
        sscanf(x->name, "cells.%d.layers.%d", &ci, &e);
        char op[40];
        snprintf(op, sizeof op, "%s", at + 1);
        char *hash = strchr(op, '#');
        if (hash)
            *hash = 0;
        int on_path = e >= 0 && strcmp(op, nas_op_name(g.tok[e])) == 0;
        int diff = memcmp(x->data, y->data, x->count * x->itemsize) != 0;
        changed += on_path && diff;
        off_path_changed += !on_path && diff;
    }
    assert_true(changed > 0);
    assert_int_equal(off_path_changed, 0);
    nas__npz_free(a);
    nas__npz_free(b);
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

/* 6 steps in one go == 3 steps, checkpoint, a fresh supernet loads it, 3 more. */
static void test_resume_equals_uninterrupted(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CHAIN_CONF, "cpu");
    nas_supernet *full = trained(&f, 6), *half = trained(&f, 3), *fresh = NULL;
    char pf[512], ph[512], pr[512];
    save(full, "full.npz", pf, sizeof pf);
    save(half, "half.npz", ph, sizeof ph);
    nas_error err;
    assert_int_equal(nas_supernet_create(f.be, f.space, f.c, f.h, f.w, f.classes, 5, &fresh, &err),
                     NAS_OK);
    if (nas_supernet_load(fresh, ph, "fp", &err))
        fail_msg("load: %s", err.msg);
    assert_int_equal(nas_supernet_steps(fresh), 3);
    nas_recipe r = recipe();
    nas_supernet_train_opts o = {&r, 3, NULL, NULL, NULL, NULL};
    assert_int_equal(nas_supernet_train(fresh, f.data, &o, NULL, &err), NAS_OK);
    save(fresh, "resumed.npz", pr, sizeof pr);
    assert_int_equal(differing(pf, pr, NULL), 0);
    assert_true(differing(pf, ph, "__") > 0);
    /* another fingerprint is refused, naming both */
    assert_int_equal(nas_supernet_load(fresh, ph, "other", &err), NAS_EEXIST);
    assert_non_null(strstr(err.msg, "other"));
    nas_supernet_destroy(full);
    nas_supernet_destroy(half);
    nas_supernet_destroy(fresh);
    fixture_close(&f);
}

/* A checkpoint whose steps are negative (a corrupted or hand-made file
 * with the right fingerprint) is refused as a bad file; before, training
 * went on to fail in the batch loader ("bad arguments"). */
static void test_negative_steps_refused(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CELL_CONF, "cpu");
    nas_supernet *sn = NULL;
    nas_error err;
    assert_int_equal(nas_supernet_create(f.be, f.space, f.c, f.h, f.w, f.classes, 5, &sn, &err),
                     NAS_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/neg.npz", g_dir);
    nas__npz_writer *z = NULL;
    int64_t two = 2, one = 1, steps = -5;
    assert_int_equal(nas__npz_create(path, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_add(z, "__supernet/fingerprint", "|u1", 1, &two, "fp", 2, &err), NAS_OK);
    assert_int_equal(nas__npz_add(z, "__supernet/steps", "<i8", 1, &one, &steps, sizeof steps, &err),
                     NAS_OK);
    assert_int_equal(nas__npz_close(z, &err), NAS_OK);
    assert_int_equal(nas_supernet_load(sn, path, "fp", &err), NAS_EFORMAT);
    assert_non_null(strstr(err.msg, "__supernet/steps = -5"));
    assert_int_equal(nas_supernet_steps(sn), 0);
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

/* What the per-epoch callback sees of the checkpoint: its steps, -1 when
 * there is none yet; stop_at E > 0: return 1 (stop) at epoch E; -E: return
 * -1 (the epoch could not be recorded) at epoch E. */
typedef struct epoch_probe {
    const char *path;
    int64_t seen[4];
    int calls, stop_at;
} epoch_probe;

static int probe_epoch(void *ctx, const nas_epoch_stats *e)
{
    epoch_probe *p = ctx;
    nas_error err;
    int64_t steps = -1;
    if (access(p->path, F_OK) == 0 &&
        nas_supernet_checkpoint_steps(p->path, "fp", &steps, &err) != NAS_OK)
        fail_msg("checkpoint steps: %s", err.msg);
    if (p->calls < 4)
        p->seen[p->calls++] = steps;
    return e->epoch == p->stop_at ? 1 : e->epoch == -p->stop_at ? -1 : 0;
}

/* The per-epoch callback runs before the epoch's checkpoint is written (the
 * one-shot search's curve row is on disk before a resume would skip the
 * epoch), and a stop it asks for still writes that checkpoint. */
static void test_on_epoch_before_checkpoint(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CELL_CONF, "cpu");
    int per_epoch = (N_IMAGES + BATCH - 1) / BATCH;
    char path[512];
    snprintf(path, sizeof path, "%s/order.npz", g_dir);
    nas_recipe r = recipe(); /* 2 epochs */
    epoch_probe p = {path, {0}, 0, 0};
    nas_supernet_train_opts o = {&r, 0, path, "fp", probe_epoch, &p};
    nas_supernet *sn = NULL;
    nas_error err;
    assert_int_equal(nas_supernet_create(f.be, f.space, f.c, f.h, f.w, f.classes, 5, &sn, &err),
                     NAS_OK);
    assert_int_equal(nas_supernet_train(sn, f.data, &o, NULL, &err), NAS_OK);
    assert_int_equal(p.calls, 2);
    assert_int_equal(p.seen[0], -1);       /* epoch 1: no checkpoint yet */
    assert_int_equal(p.seen[1], per_epoch); /* epoch 2: epoch 1's */
    int64_t steps = 0;
    assert_int_equal(nas_supernet_checkpoint_steps(path, "fp", &steps, &err), NAS_OK);
    assert_int_equal(steps, 2 * per_epoch);
    assert_int_equal(nas_supernet_checkpoint_steps(path, "other", &steps, &err), NAS_EEXIST);
    nas_supernet_destroy(sn);
    /* a stop at epoch 1 writes epoch 1's checkpoint, then NAS_EINTR */
    remove(path);
    sn = NULL;
    epoch_probe q = {path, {0}, 0, 1};
    o.ctx = &q;
    assert_int_equal(nas_supernet_create(f.be, f.space, f.c, f.h, f.w, f.classes, 5, &sn, &err),
                     NAS_OK);
    assert_int_equal(nas_supernet_train(sn, f.data, &o, NULL, &err), NAS_EINTR);
    assert_int_equal(q.calls, 1);
    assert_int_equal(nas_supernet_checkpoint_steps(path, "fp", &steps, &err), NAS_OK);
    assert_int_equal(steps, per_epoch);
    nas_supernet_destroy(sn);
    /* a callback that cannot record epoch 2 stops with NAS_EIO and leaves
     * epoch 1's checkpoint: no checkpoint claims an unrecorded epoch */
    sn = NULL;
    epoch_probe z = {path, {0}, 0, -2};
    o.ctx = &z;
    assert_int_equal(nas_supernet_create(f.be, f.space, f.c, f.h, f.w, f.classes, 5, &sn, &err),
                     NAS_OK);
    assert_int_equal(nas_supernet_train(sn, f.data, &o, NULL, &err), NAS_EIO);
    assert_int_equal(z.calls, 2); /* epoch 1 recorded and saved, epoch 2 not */
    assert_int_equal(nas_supernet_checkpoint_steps(path, "fp", &steps, &err), NAS_OK);
    assert_int_equal(steps, per_epoch);
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

/* The path of a step depends on (seed, step) only, and draws each
 * decision's choices uniformly (chain: every genotype is valid). */
static void test_path_uniform(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CHAIN_CONF, "ref");
    nas_supernet *a = NULL, *b = NULL;
    nas_error err;
    assert_int_equal(nas_supernet_create(f.be, f.space, f.c, f.h, f.w, f.classes, 5, &a, &err), NAS_OK);
    assert_int_equal(nas_supernet_create(f.be, f.space, f.c, f.h, f.w, f.classes, 5, &b, &err), NAS_OK);
    enum { N = 4000 };
    int len = nas_space_seq_len(f.space), differ = 0;
    int(*count)[256] = calloc((size_t)len, sizeof *count);
    nas_genotype prev;
    memset(&prev, 0, sizeof prev);
    for (int t = 0; t < N; t++) {
        nas_genotype g, h;
        nas_supernet_path(a, t, &g);
        nas_supernet_path(b, t, &h);
        assert_memory_equal(g.tok, h.tok, (size_t)len);
        if (t > 0)
            differ += memcmp(g.tok, prev.tok, (size_t)len) != 0;
        prev = g;
        for (int i = 0; i < len; i++)
            count[i][g.tok[i]]++;
    }
    assert_true(differ > N * 9 / 10);
    for (int i = 0; i < len; i++) {
        int n = nas_space_decision_choices(f.space, i);
        for (int j = 0; j < n; j++) {
            double want = (double)N / n, got = count[i][nas_space_decision_token(f.space, i, j)];
            if (fabs(got - want) > 5 * sqrt(want))
                fail_msg("decision %d choice %d drawn %g times, uniform: %g", i, j, got, want);
        }
    }
    free(count);
    nas_supernet_destroy(a);
    nas_supernet_destroy(b);
    fixture_close(&f);
}

/* Evaluating subnets (recalibration, validation) leaves the supernet as
 * it was: workers may share it read-only. The accuracy is a fraction. */
static void test_evaluate_leaves_supernet(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CELL_CONF, "cpu");
    nas_supernet *sn = trained(&f, 3);
    char p0[512], p1[512];
    save(sn, "eval-before.npz", p0, sizeof p0);
    nas_error err;
    for (int t = 0; t < 3; t++) {
        nas_genotype g;
        double acc = -1;
        nas_supernet_path(sn, 1000 + t, &g);
        if (nas_supernet_evaluate(sn, &g, f.data, 2, BATCH, f.data, &acc, NULL, &err))
            fail_msg("evaluate: %s", err.msg);
        assert_true(acc >= 0 && acc <= 1);
    }
    save(sn, "eval-after.npz", p1, sizeof p1);
    assert_int_equal(differing(p0, p1, NULL), 0);
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

/* nas_supernet_evaluate_many gives each genotype the bits of
 * nas_supernet_evaluate on a 1-thread backend (accuracy and loss), on 1,
 * 2, 3 and more threads than genotypes; a genotype not of the space fails
 * with its error whatever the thread count. */
static void test_evaluate_many_equals_one(void **st)
{
    (void)st;
    enum { K = 5 };
    fixture f;
    fixture_open(&f, CHAIN_CONF, "cpu");
    nas_supernet *sn = trained(&f, 3);
    nas_genotype g[K];
    double acc[K], loss[K];
    nas_error err;
    for (int i = 0; i < K; i++) {
        nas_supernet_path(sn, 2000 + i, &g[i]);
        if (nas_supernet_evaluate(sn, &g[i], f.data, 2, BATCH, f.data, &acc[i], &loss[i], &err))
            fail_msg("evaluate: %s", err.msg);
    }
    const int threads[] = {1, 2, 3, 8};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        double am[K], lm[K];
        memset(am, 0xff, sizeof am);
        if (nas_supernet_evaluate_many(sn, g, K, f.data, 2, BATCH, f.data, threads[t], am, lm,
                                       &err))
            fail_msg("evaluate_many on %d threads: %s", threads[t], err.msg);
        assert_memory_equal(am, acc, sizeof acc);
        assert_memory_equal(lm, loss, sizeof loss);
    }
    g[3].tok[0] = 250; /* not a token of the space */
    for (int t = 1; t <= 2; t++) {
        double am[K];
        assert_int_equal(nas_supernet_evaluate_many(sn, g, K, f.data, 2, BATCH, f.data, t, am,
                                                    NULL, &err),
                         NAS_EINVAL);
        assert_non_null(strstr(err.msg, "genotype not of the space"));
    }
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

/* A diverging supernet stops with NAS_ENAN naming the step's path. */
static void test_nan_names_the_path(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CHAIN_CONF, "cpu");
    nas_supernet *sn = NULL;
    nas_error err;
    assert_int_equal(nas_supernet_create(f.be, f.space, f.c, f.h, f.w, f.classes, 5, &sn, &err), NAS_OK);
    nas_recipe r = recipe();
    r.lr = 1e30;
    r.schedule = NAS_SCHEDULE_CONSTANT;
    nas_supernet_train_opts o = {&r, 0, NULL, NULL, NULL, NULL};
    assert_int_equal(nas_supernet_train(sn, f.data, &o, NULL, &err), NAS_ENAN);
    assert_non_null(strstr(err.msg, "supernet path mb1_k3|"));
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

/* Issue 33: a space with recipe choices (examples/fashion-recipe.conf:
 * lr, weight_decay and augment lists) makes a supernet over its network
 * tokens; two genotypes differing only in their recipe words are the same
 * subnet. Failed before: create built a cell from 9 tokens. */
static void test_recipe_space(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, "examples/fashion-recipe.conf", "cpu");
    assert_int_equal(nas_space_recipe_len(f.space), 3);
    nas_supernet *sn = trained(&f, 2);
    nas_genotype a = space_parse(f.space, CELL_G " lr=0.02 weight_decay=0.0 augment=none");
    nas_genotype b = space_parse(f.space, CELL_G " lr=0.1 weight_decay=0.0005 augment=crop4,flip");
    nas_net *na = NULL, *nb = NULL;
    nas_error err;
    if (nas_supernet_subnet(sn, &a, N_EVAL, &na, &err) || nas_supernet_subnet(sn, &b, N_EVAL, &nb, &err))
        fail_msg("subnet: %s", err.msg);
    float *la = malloc((size_t)N_EVAL * f.classes * sizeof *la);
    float *lb = malloc((size_t)N_EVAL * f.classes * sizeof *lb);
    eval_logits(f.be, na, f.data, la, f.classes);
    eval_logits(f.be, nb, f.data, lb, f.classes);
    assert_memory_equal(la, lb, (size_t)N_EVAL * f.classes * sizeof *la);
    free(la);
    free(lb);
    nas_net_destroy(na);
    nas_net_destroy(nb);
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

/* ---- the mapped weights file --------------------------------------------------- */

/* A supernet trained `steps` steps, saved as checkpoint NAME.npz and weights
 * file NAME.weights (fingerprint "fp"); the paths into ck and wt. */
static nas_supernet *saved_pair(const fixture *f, const char *name, int64_t steps, char *ck,
                                char *wt, size_t n)
{
    nas_supernet *sn = trained(f, steps);
    nas_error err;
    snprintf(ck, n, "%s/%s.npz", g_dir, name);
    snprintf(wt, n, "%s/%s.weights", g_dir, name);
    if (nas_supernet_save(sn, ck, "fp", &err) || nas_supernet_write_weights(sn, wt, "fp", &err))
        fail_msg("save: %s", err.msg);
    return sn;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    *n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *b = malloc(*n ? *n : 1);
    assert_int_equal(fread(b, 1, *n, fp), *n);
    fclose(fp);
    return b;
}

static void spill(const char *path, const unsigned char *b, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, n, fp), n);
    fclose(fp);
}

/* The supernet loaded from the checkpoint and the one mapping the weights
 * file evaluate K genotypes to the same bits (accuracy and loss), on 1 and
 * 2 threads; the mapped one is mapped, holds as many floats and steps. */
static void mapped_equals_loaded(const char *conf)
{
    enum { K = 5 };
    fixture f;
    fixture_open(&f, conf, "cpu");
    char ck[512], wt[512];
    nas_supernet *src = saved_pair(&f, "pair", 5, ck, wt, sizeof ck), *a = NULL, *b = NULL;
    nas_error err;
    assert_int_equal(nas_supernet_create(f.be, f.space, f.c, f.h, f.w, f.classes, 5, &a, &err), NAS_OK);
    if (nas_supernet_load(a, ck, "fp", &err))
        fail_msg("load: %s", err.msg);
    if (nas_supernet_map(f.be, f.space, f.c, f.h, f.w, f.classes, 5, wt, "fp", 5, &b, &err))
        fail_msg("map: %s", err.msg);
    assert_true(nas_supernet_is_mapped(b));
    assert_false(nas_supernet_is_mapped(a));
    assert_int_equal(nas_supernet_steps(b), 5);
    assert_int_equal(nas_supernet_floats(b), nas_supernet_floats(a));
    assert_int_equal(nas_supernet_slots(b), nas_supernet_slots(a));
    nas_genotype g[K];
    g[0] = genotype_of(&f, strstr(conf, "cells") ? CELL_G : NULL);
    for (int i = 1; i < K; i++)
        nas_supernet_path(src, 3000 + i, &g[i]);
    double acc[2][K], loss[2][K], am[K], lm[K];
    for (int i = 0; i < K; i++)
        for (int w = 0; w < 2; w++)
            if (nas_supernet_evaluate(w ? b : a, &g[i], f.data, 2, BATCH, f.data, &acc[w][i],
                                      &loss[w][i], &err))
                fail_msg("evaluate: %s", err.msg);
    assert_memory_equal(acc[0], acc[1], sizeof acc[0]);
    assert_memory_equal(loss[0], loss[1], sizeof loss[0]);
    if (nas_supernet_evaluate_many(b, g, K, f.data, 2, BATCH, f.data, 2, am, lm, &err))
        fail_msg("evaluate_many: %s", err.msg);
    assert_memory_equal(am, acc[0], sizeof am);
    assert_memory_equal(lm, loss[0], sizeof lm);
    nas_supernet_destroy(src);
    nas_supernet_destroy(a);
    nas_supernet_destroy(b);
    fixture_close(&f);
}

static void test_mapped_equals_loaded_cell(void **st) { (void)st; mapped_equals_loaded(CELL_CONF); }
static void test_mapped_equals_loaded_chain(void **st) { (void)st; mapped_equals_loaded(CHAIN_CONF); }

/* A mapped supernet is read-only: training, loading and saving refuse with
 * NAS_EINVAL, write nothing, and leave the file's bytes as they were. */
static void test_mapped_refuses_writes(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CHAIN_CONF, "cpu");
    char ck[512], wt[512], out[512];
    nas_supernet *src = saved_pair(&f, "ro", 3, ck, wt, sizeof ck), *b = NULL;
    size_t n0 = 0, n1 = 0;
    unsigned char *before = slurp(wt, &n0);
    nas_error err;
    if (nas_supernet_map(f.be, f.space, f.c, f.h, f.w, f.classes, 5, wt, "fp", -1, &b, &err))
        fail_msg("map: %s", err.msg);
    nas_recipe r = recipe();
    nas_supernet_train_opts o = {&r, 2, NULL, NULL, NULL, NULL};
    assert_int_equal(nas_supernet_train(b, f.data, &o, NULL, &err), NAS_EINVAL);
    assert_non_null(strstr(err.msg, "mapped read-only"));
    assert_int_equal(nas_supernet_steps(b), 3);
    snprintf(out, sizeof out, "%s/ro-save.npz", g_dir);
    assert_int_equal(nas_supernet_save(b, out, "fp", &err), NAS_EINVAL);
    assert_int_not_equal(access(out, F_OK), 0);
    assert_int_equal(nas_supernet_load(b, ck, "fp", &err), NAS_EINVAL);
    unsigned char *after = slurp(wt, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    /* reading it is allowed: a subnet as from the source */
    nas_genotype g = genotype_of(&f, NULL);
    double a0, a1;
    assert_int_equal(nas_supernet_evaluate(src, &g, f.data, 2, BATCH, f.data, &a0, NULL, &err), NAS_OK);
    assert_int_equal(nas_supernet_evaluate(b, &g, f.data, 2, BATCH, f.data, &a1, NULL, &err), NAS_OK);
    assert_memory_equal(&a0, &a1, sizeof a0);
    free(before);
    free(after);
    nas_supernet_destroy(src);
    nas_supernet_destroy(b);
    fixture_close(&f);
}

/* Map a weights file expecting status `want`; a failure leaves *out NULL
 * and a message naming the file. */
static void expect_map(const fixture *f, const char *wt, const char *fp, int64_t steps, int want,
                       const char *what)
{
    nas_supernet *b = (nas_supernet *)wt; /* must be reset */
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_supernet_map(f->be, f->space, f->c, f->h, f->w, f->classes, 5, wt, fp, steps,
                              &b, &err);
    if (rc != want)
        fail_msg("%s: status %d, expected %d (%s)", what, rc, want, err.msg);
    if (rc) {
        assert_null(b);
        assert_non_null(strstr(err.msg, wt));
        if (strcmp(what, "another space") != 0) /* the check alone knows no space */
            assert_int_equal(nas_supernet_weights_check(wt, fp, steps, &err), want);
    }
    nas_supernet_destroy(b);
}

/* Truncated, damaged, stale, foreign or missing weights files are refused
 * with a status (never a crash, never a supernet), each byte region checked. */
static void test_weights_file_rejected(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CELL_CONF, "cpu");
    char ck[512], wt[512], bad[512];
    nas_supernet *src = saved_pair(&f, "rej", 2, ck, wt, sizeof ck);
    size_t n = 0;
    unsigned char *b = slurp(wt, &n);
    snprintf(bad, sizeof bad, "%s/bad.weights", g_dir);
    expect_map(&f, wt, "fp", 2, NAS_OK, "the file as written");
    expect_map(&f, wt, "other", 2, NAS_EEXIST, "another fingerprint");
    expect_map(&f, wt, "fp", 3, NAS_EEXIST, "stale steps");
    expect_map(&f, bad, "fp", 2, NAS_ENOTFOUND, "no file");
    const size_t cuts[] = {0, 7, 127, 128, 300, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        spill(bad, b, cuts[i]);
        expect_map(&f, bad, "fp", 2, NAS_EFORMAT, "truncated");
    }
    /* one byte changed: magic, version, steps, table offset, fingerprint,
     * a key, a shape, an offset, the values, the last byte */
    const size_t at[] = {0, 8, 16, 40, 130, 192, 192 + 224, 192 + 240, n - 300, n - 1};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        unsigned char *c = malloc(n);
        memcpy(c, b, n);
        c[at[i]] ^= 0x5a;
        spill(bad, c, n);
        nas_supernet *m = NULL;
        nas_error err;
        int rc = nas_supernet_map(f.be, f.space, f.c, f.h, f.w, f.classes, 5, bad, "fp", 2, &m,
                                  &err);
        if (rc != NAS_EFORMAT && rc != NAS_EEXIST)
            fail_msg("byte %zu changed: status %d (%s)", at[i], rc, err.msg);
        assert_null(m);
        free(c);
    }
    /* a file for another space: every slot unknown */
    fixture g;
    fixture_open(&g, CHAIN_CONF, "cpu");
    expect_map(&g, wt, "fp", 2, NAS_EFORMAT, "another space");
    fixture_close(&g);
    free(b);
    nas_supernet_destroy(src);
    fixture_close(&f);
}

/* A write is renamed into place only once complete: while PATH.tmp is
 * whole (the hook, where the one-shot search's kill test hook fires) the
 * final name does not exist. */
typedef struct rename_probe {
    const char *path;
    int calls, final_existed;
    long long tmp_size;
} rename_probe;

static void probe_rename(void *ctx)
{
    rename_probe *p = ctx;
    char tmp[600];
    struct stat sb;
    snprintf(tmp, sizeof tmp, "%s.tmp", p->path);
    p->calls++;
    p->final_existed = access(p->path, F_OK) == 0;
    p->tmp_size = stat(tmp, &sb) == 0 ? (long long)sb.st_size : -1;
}

static void test_weights_write_atomic(void **st)
{
    (void)st;
    fixture f;
    fixture_open(&f, CHAIN_CONF, "cpu");
    nas_supernet *sn = trained(&f, 2);
    char wt[512];
    snprintf(wt, sizeof wt, "%s/atomic.weights", g_dir);
    rename_probe p = {wt, 0, 0, 0};
    nas_error err;
    assert_int_equal(nas__supernet_write_weights(sn, wt, "fp", probe_rename, &p, &err), NAS_OK);
    struct stat sb;
    assert_int_equal(stat(wt, &sb), 0);
    assert_int_equal(p.calls, 1);
    assert_false(p.final_existed);
    assert_int_equal(p.tmp_size, (long long)sb.st_size);
    assert_true(sb.st_size >= 4 * nas_supernet_floats(sn));
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", wt);
    assert_int_not_equal(access(tmp, F_OK), 0);
    /* the checkpoint's steps are read from its metadata members only */
    char ck[512];
    snprintf(ck, sizeof ck, "%s/atomic.npz", g_dir);
    assert_int_equal(nas_supernet_save(sn, ck, "fp", &err), NAS_OK);
    const char *const meta[] = {"__supernet/steps", "__supernet/fingerprint"};
    nas__npz *z = NULL;
    assert_int_equal(nas__npz_read_members(ck, meta, 2, &z, &err), NAS_OK);
    assert_int_equal(nas__npz_count(z), 2);
    nas__npz_free(z);
    int64_t steps = 0;
    assert_int_equal(nas_supernet_checkpoint_steps(ck, "fp", &steps, &err), NAS_OK);
    assert_int_equal(steps, 2);
    nas_supernet_destroy(sn);
    fixture_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oracle_cell_cpu),
        cmocka_unit_test(test_oracle_cell_ref),
        cmocka_unit_test(test_oracle_chain_cpu),
        cmocka_unit_test(test_oracle_chain_ref),
        cmocka_unit_test(test_step_touches_only_its_path),
        cmocka_unit_test(test_resume_equals_uninterrupted),
        cmocka_unit_test(test_path_uniform),
        cmocka_unit_test(test_evaluate_leaves_supernet),
        cmocka_unit_test(test_evaluate_many_equals_one),
        cmocka_unit_test(test_nan_names_the_path),
        cmocka_unit_test(test_recipe_space),
        cmocka_unit_test(test_negative_steps_refused),
        cmocka_unit_test(test_on_epoch_before_checkpoint),
        cmocka_unit_test(test_mapped_equals_loaded_cell),
        cmocka_unit_test(test_mapped_equals_loaded_chain),
        cmocka_unit_test(test_mapped_refuses_writes),
        cmocka_unit_test(test_weights_file_rejected),
        cmocka_unit_test(test_weights_write_atomic),
    };
    return cmocka_run_group_tests(tests, scratch_dir_setup, scratch_dir_teardown);
}
