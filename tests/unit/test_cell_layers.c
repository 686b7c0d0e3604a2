/*
 * tests/unit/test_cell_layers.c - the cell space lowered to the layer
 * description (nas_cell_layers, issue 15 "one net builder"): for every one
 * of the 5^6 NAS-Bench-201 cells, the MACs and parameters counted from
 * the layers (nas_count_layers) equal the TinyNetwork's analytic count
 * (evaluator/count.c, written independently from the reference table);
 * nodes are sums of 0, 2 or 3 operands (one operand is an alias, no
 * layer); every operand comes before its reader; the names are PyTorch's
 * module paths; an input the reductions cannot halve is refused. The
 * network trained from these layers is checked bit for bit by test_net.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "nas/evaluator.h"
#include "nas/inspect.h"
#include "nas/layers.h"

static nas_space_desc shape(int channels, int cells)
{
    nas_space_desc d;
    memset(&d, 0, sizeof d);
    d.channels = channels;
    d.stages = 3;
    d.cells_per_stage = cells;
    d.in_c = 1;
    d.in_h = d.in_w = 28;
    d.classes = 10;
    return d;
}

static nas_genotype cell_of(int idx)
{
    nas_genotype g;
    memset(&g, 0, sizeof g);
    g.len = NAS_CELL_EDGES;
    for (int e = 0; e < NAS_CELL_EDGES; e++, idx /= NAS_OP_COUNT)
        g.tok[e] = (uint8_t)(idx % NAS_OP_COUNT);
    return g;
}

static void test_counts_equal_the_analytic_count(void **state)
{
    (void)state;
    int cells_per_stage[2] = {1, 2};
    for (int v = 0; v < 2; v++) {
        nas_space_desc d = shape(16, cells_per_stage[v]);
        int total = 1;
        for (int e = 0; e < NAS_CELL_EDGES; e++)
            total *= NAS_OP_COUNT;
        for (int i = 0; i < total; i++) {
            nas_genotype g = cell_of(i);
            nas_layers L;
            nas_error err;
            assert_int_equal(nas_cell_layers(&d, &g, &L, &err), NAS_OK);
            int64_t m1 = 0, p1 = 0, m2 = -1, p2 = -1;
            assert_int_equal(nas_count_layers(&L, &m1, &p1), NAS_OK);
            nas_net_desc nd;
            memset(&nd, 0, sizeof nd);
            nd.genotype = g;
            nd.channels = d.channels;
            nd.stages = d.stages;
            nd.cells_per_stage = d.cells_per_stage;
            nd.in_c = d.in_c;
            nd.in_h = d.in_h;
            nd.in_w = d.in_w;
            nd.classes = d.classes;
            assert_int_equal(nas_count_net(&nd, &m2, &p2, NULL, NULL), NAS_OK);
            if (m1 != m2 || p1 != p2)
                fail_msg("cell %d (%d per stage): layers count %lld MACs %lld params, the "
                         "analytic count %lld and %lld",
                         i, d.cells_per_stage, (long long)m1, (long long)p1, (long long)m2,
                         (long long)p2);
            for (int k = 0; k < L.n; k++) {
                const nas_layer *l = &L.l[k];
                assert_true(l->src < k && l->src2 < k && l->src3 < k);
                if (l->kind == NAS_LAYER_ADD)
                    assert_true(l->n_src == 0 || l->n_src == 2 || l->n_src == 3);
            }
            assert_int_equal(L.l[L.n - 1].kind, NAS_LAYER_LINEAR);
            assert_int_equal(L.l[L.n - 1].out_c, 10);
            nas_layers_free(&L);
        }
    }
}

/* The all-conv cell: names, kinds and shapes of the first cell's layers. */
static void test_layer_order_and_names(void **state)
{
    (void)state;
    nas_space_desc d = shape(8, 1);
    nas_genotype g = cell_of(0);
    for (int e = 0; e < NAS_CELL_EDGES; e++)
        g.tok[e] = NAS_OP_NOR_CONV_3X3;
    g.tok[1] = NAS_OP_AVG_POOL_3X3; /* edge 2<-0 */
    g.tok[2] = NAS_OP_NONE;         /* edge 2<-1: node 2 = pool(node 0) alone */
    nas_layers L;
    nas_error err;
    assert_int_equal(nas_cell_layers(&d, &g, &L, &err), NAS_OK);
    static const char *const want[][2] = {
        {"stem.0", "conv"},
        {"stem.1", "bn"},
        {"cells.0.layers.0.op.0", "act"}, /* ReLU(node 0), shared by 1<-0 and 3<-0 */
        {"cells.0.layers.0.op.1", "conv"},
        {"cells.0.layers.0.op.2", "bn"},  /* node 1: one operand, no sum */
        {"cells.0.layers.1.op", "avgpool"}, /* node 2 */
        {"cells.0.layers.3.op.1", "conv"},
        {"cells.0.layers.3.op.2", "bn"},
        {"cells.0.layers.4.op.0", "act"}, /* ReLU(node 1) */
        {"cells.0.layers.4.op.1", "conv"},
        {"cells.0.layers.4.op.2", "bn"},
        {"cells.0.layers.5.op.0", "act"}, /* ReLU(node 2) */
        {"cells.0.layers.5.op.1", "conv"},
        {"cells.0.layers.5.op.2", "bn"},
        {"cells.0.node3", "add"},
        {"cells.1.conv_a.op.0", "act"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_string_equal(L.l[i].name, want[i][0]);
        assert_string_equal(nas_layer_kind_name(L.l[i].kind), want[i][1]);
    }
    assert_int_equal(L.l[6].src, 2); /* 3<-0 reuses ReLU(node 0) */
    assert_int_equal(L.l[14].n_src, 3);
    assert_int_equal(L.l[14].src, 7);
    assert_int_equal(L.l[14].src2, 10);
    assert_int_equal(L.l[14].src3, 13);
    assert_int_equal(L.l[5].kernel, 3);
    assert_int_equal(L.l[5].pad, 1);
    nas_layers_free(&L);
}

static void test_odd_size_and_bad_input(void **state)
{
    (void)state;
    nas_space_desc d = shape(8, 1);
    d.stages = 4; /* 28 -> 14 -> 7 -> odd */
    nas_genotype g = cell_of(77);
    nas_layers L;
    nas_error err;
    assert_int_equal(nas_cell_layers(&d, &g, &L, &err), NAS_EINVAL);
    assert_non_null(strstr(err.msg, "(28x28 -> 14x14 -> 7x7), and stage 4 would halve 7x7, an odd size"));
    assert_int_equal(L.n, 0);
    char msg[600]; /* issue 28: the check config loading and data loading run */
    assert_int_equal(nas_space_check_input(&d, 28, 28, msg, sizeof msg), NAS_ECONFIG);
    assert_non_null(strstr(msg, "space.stages = 4 cannot pass a 28x28 input"));
    assert_non_null(strstr(msg, "expected space.stages of at most 3"));
    assert_int_equal(nas_space_check_input(&d, 32, 32, msg, sizeof msg), NAS_OK);
    d.stages = 6; /* 32 -> 16 -> 8 -> 4 -> 2 -> 1 */
    assert_int_equal(nas_space_check_input(&d, 32, 32, msg, sizeof msg), NAS_OK);
    assert_int_equal(nas_space_check_input(&d, 32, 30, msg, sizeof msg), NAS_ECONFIG);
    assert_non_null(strstr(msg, "stage 3 would halve 16x15"));
    assert_int_equal(nas_space_check_input(&d, 0, 0, msg, sizeof msg), NAS_OK); /* not known yet */
    d = shape(8, 1);
    g.tok[3] = NAS_OP_COUNT;
    assert_int_equal(nas_cell_layers(&d, &g, &L, &err), NAS_EINVAL);
    assert_non_null(strstr(err.msg, "edge 3"));
    g = cell_of(5);
    g.len = 5;
    assert_int_equal(nas_cell_layers(&d, &g, &L, &err), NAS_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_equal_the_analytic_count),
        cmocka_unit_test(test_layer_order_and_names),
        cmocka_unit_test(test_odd_size_and_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
