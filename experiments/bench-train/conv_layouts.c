/*
 * experiments/bench-train/conv_layouts.c - how fast oneDNN runs chain-se's
 * convolutions in each fp32 activation layout (issue 34). oneDNN runs on
 * libgomp, which reads OMP_NUM_THREADS when the program starts.
 *
 *   OMP_NUM_THREADS=T conv_layouts [--batch N] [--reps K]
 *
 * For every convolution shape of chain-se (experiments/bench-train/run.sh's
 * G_CHAIN_SE at 28x28: the 1x1 expansions and projections, the 3x3 and 5x5
 * depthwise convolutions) it times a forward-inference convolution with a
 * bias in three layouts of both activations: nChw8c (what the cpu backend
 * keeps such nets in: 24 and 40 channels are not multiples of 16), nChw16c
 * (oneDNN pads 24 channels to 32 and 40 to 48; the backend's tensors have
 * no such padding) and nhwc. It prints one line per shape with each
 * layout's best time of K calls in ms and oneDNN's implementation name,
 * then the totals over the shapes. Inputs are fixed values (no data set).
 *
 * What it showed (2026-11-29, AMD EPYC with AVX-512, 2 threads, batch 128;
 * experiments/bench-train/README.md): on nChw8c oneDNN 2.6 runs its AVX2
 * kernels (jit_1x1:avx2, jit_dw:avx2), on nChw16c and nhwc its AVX-512
 * ones, together 1.47x faster. Each call here reuses the same tensors, so
 * they are warm in cache; inside a network they are not, and there an
 * inference plan that ran chain-se in nhwc gave its convolutions no gain
 * (README, same section): read these as an upper bound.
 *
 * Errors: a refused descriptor prints "refused" for that layout; a bad
 * argument exits with status 2.
 */
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One convolution: C_in, C_out, input H (= W), kernel R, stride S, groups. */
typedef struct {
    int c, k, h, r, s, g;
} conv_shape;

/* chain-se: mb1_k3 | c24:d2:mb3_k5:mb6_k3 | c40:d3:se_on:mb6_k5:mb6_k3:mb6_k5
 * | mb6_k5:mb6_k3 on a 28x28 input, after the stem (1 -> 16 channels), each
 * shape once, and the head's 1x1 to 128 channels. */
static const conv_shape SHAPES[] = {
    {16, 16, 28, 3, 1, 16},   {16, 16, 28, 1, 1, 1},    {16, 48, 28, 1, 1, 1},
    {48, 48, 28, 5, 2, 48},   {48, 24, 14, 1, 1, 1},    {24, 144, 14, 1, 1, 1},
    {144, 144, 14, 3, 1, 144}, {144, 24, 14, 1, 1, 1},  {144, 144, 14, 5, 2, 144},
    {144, 40, 7, 1, 1, 1},    {40, 240, 7, 1, 1, 1},    {240, 240, 7, 5, 1, 240},
    {240, 240, 7, 3, 1, 240}, {240, 40, 7, 1, 1, 1},    {240, 240, 7, 5, 2, 240},
    {240, 64, 4, 1, 1, 1},    {64, 384, 4, 1, 1, 1},    {384, 384, 4, 3, 1, 384},
    {384, 64, 4, 1, 1, 1},    {64, 128, 4, 1, 1, 1},
};

/* Best time in ms of `reps` forward-inference calls of shape sh with both
 * activations in layout tag, batch n; *impl: oneDNN's implementation name
 * (static storage of the library). Returns -1 when oneDNN refuses it. */
static double time_conv(dnnl_engine_t eng, dnnl_stream_t st, const conv_shape *sh, int n,
                        dnnl_format_tag_t tag, int reps, const char **impl)
{
    const int p = sh->r / 2, ho = (sh->h + 2 * p - sh->r) / sh->s + 1;
    dnnl_memory_desc_t src, wei, dst, bia;
    dnnl_dims_t sd = {n, sh->c, sh->h, sh->h}, dd = {n, sh->k, ho, ho}, bd = {sh->k};
    dnnl_dims_t wd5 = {sh->g, sh->k / sh->g, sh->c / sh->g, sh->r, sh->r};
    dnnl_dims_t wd4 = {sh->k, sh->c, sh->r, sh->r};
    if (dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, tag) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, tag) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&bia, 1, bd, dnnl_f32, dnnl_a) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&wei, sh->g > 1 ? 5 : 4, sh->g > 1 ? wd5 : wd4, dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success)
        return -1;
    dnnl_dims_t str = {sh->s, sh->s}, pl = {p, p};
    dnnl_dims_t pr = {(ho - 1) * sh->s + sh->r - sh->h - p, (ho - 1) * sh->s + sh->r - sh->h - p};
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
                                           &src, &wei, &bia, &dst, str, pl, pr) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL) != dnnl_success)
        return -1;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, impl);
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_t m[4] = {NULL, NULL, NULL, NULL};
    dnnl_primitive_t prim = NULL;
    double best = -1;
    if (dnnl_memory_create(&m[0], &src, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
        dnnl_memory_create(&m[1], wmd, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
        dnnl_memory_create(&m[2], &bia, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
        dnnl_memory_create(&m[3], &dst, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
        dnnl_primitive_create(&prim, pd) != dnnl_success)
        goto done;
    for (int i = 0; i < 3; i++) { /* fixed values; the padded lanes stay as oneDNN left them */
        const dnnl_memory_desc_t *md = i == 0 ? &src : i == 1 ? wmd : &bia;
        float *buf = NULL;
        dnnl_memory_get_data_handle(m[i], (void **)&buf);
        size_t count = dnnl_memory_desc_get_size(md) / sizeof(float);
        for (size_t j = 0; j < count; j++)
            buf[j] = 0.01f * (float)((j * 7 + (size_t)i) % 13) - 0.06f;
    }
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, m[0]},
                               {DNNL_ARG_WEIGHTS, m[1]},
                               {DNNL_ARG_BIAS, m[2]},
                               {DNNL_ARG_DST, m[3]}};
    for (int i = 0; i < reps; i++) {
        double t = now_s();
        if (dnnl_primitive_execute(prim, st, 4, args) != dnnl_success ||
            dnnl_stream_wait(st) != dnnl_success) {
            best = -1;
            break;
        }
        t = 1e3 * (now_s() - t);
        if (best < 0 || t < best)
            best = t;
    }
done:
    if (prim)
        dnnl_primitive_destroy(prim);
    for (int i = 0; i < 4; i++)
        if (m[i])
            dnnl_memory_destroy(m[i]);
    dnnl_primitive_desc_destroy(pd);
    return best;
}

static int arg_int(int argc, char **argv, const char *name, int def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return atoi(argv[i + 1]);
    return def;
}

int main(int argc, char **argv)
{
    const int n = arg_int(argc, argv, "--batch", 128), reps = arg_int(argc, argv, "--reps", 25);
    if (n < 1 || reps < 1) {
        fprintf(stderr, "conv_layouts: --batch and --reps must be positive\n");
        return 2;
    }
    const char *threads = getenv("OMP_NUM_THREADS");
    dnnl_engine_t eng = NULL;
    dnnl_stream_t st = NULL;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&st, eng, dnnl_stream_default_flags) != dnnl_success) {
        fprintf(stderr, "conv_layouts: no oneDNN cpu engine\n");
        return 1;
    }
    const dnnl_format_tag_t tags[3] = {dnnl_nChw8c, dnnl_nChw16c, dnnl_nhwc};
    const char *names[3] = {"nChw8c", "nChw16c", "nhwc"};
    double total[3] = {0, 0, 0};
    printf("# conv_layouts: chain-se's convolutions, forward inference with bias, batch %d, "
           "OMP_NUM_THREADS=%s, best of %d (ms)\n",
           n, threads ? threads : "(unset)", reps);
    printf("| C_in | C_out | H | R | stride | groups | nChw8c | nChw16c | nhwc |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        const conv_shape *sh = &SHAPES[i];
        printf("| %d | %d | %d | %d | %d | %d |", sh->c, sh->k, sh->h, sh->r, sh->s, sh->g);
        for (int l = 0; l < 3; l++) {
            const char *impl = "?";
            double ms = time_conv(eng, st, sh, n, tags[l], reps, &impl);
            if (ms < 0)
                printf(" refused |");
            else {
                printf(" %.3f (%s) |", ms, impl);
                total[l] += ms;
            }
        }
        printf("\n");
    }
    printf("\ntotal_ms %s=%.3f %s=%.3f %s=%.3f ratio_8c_over_16c=%.2f ratio_8c_over_nhwc=%.2f\n",
           names[0], total[0], names[1], total[1], names[2], total[2],
           total[1] > 0 ? total[0] / total[1] : 0.0, total[2] > 0 ? total[0] / total[2] : 0.0);
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    return 0;
}
