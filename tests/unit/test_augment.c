/*
 * tests/unit/test_augment.c - issue 16: augmentation (space/augment.c,
 * trainer/augment.c) and the batch loader (trainer/loader.c).
 *
 * Crop, flip and cutout are checked pixel by pixel on a known image: for
 * every key, the augmented image must equal exactly one image the
 * documented formula gives for some crop offset, flip and cutout centre
 * (computed here independently), and over many keys every offset, both
 * flips and every centre turn up. The loader must hand out the same
 * batches (bytes) with 0, 1 and 3 threads, equal to the batches computed
 * here from the documented order, and nas_train must give bit-identical
 * losses and weights with the loader's threads on and off.
 */
#include <setjmp.h> /* cmocka needs these three */
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "nas/trainer.h"
#include "trainer/loader_impl.h"
#include "unit/tiny_net.h"

#define C 2
#define H 5
#define W 6

static const float black[C] = {-1.5f, -2.5f};

/* A known image: every pixel distinct and non-zero. */
static void known(float *img)
{
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                img[(c * H + y) * W + x] = (float)(100 * (c + 1) + 10 * y + x);
}

/* The documented result for draws (dy, dx, flip, cy, cx); s = 0: no cutout. */
static void expected(const float *in, float *out, int dy, int dx, int flip, int s, int cy, int cx)
{
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int sy = y + dy, sx = (flip ? W - 1 - x : x) + dx;
                float v = sy >= 0 && sy < H && sx >= 0 && sx < W ? in[(c * H + sy) * W + sx] : black[c];
                if (s && y >= cy - s / 2 && y < cy - s / 2 + s && x >= cx - s / 2 && x < cx - s / 2 + s)
                    v = 0.0f;
                out[(c * H + y) * W + x] = v;
            }
}

static void test_parse_format(void **state)
{
    (void)state;
    nas_augment a;
    char buf[64];
    assert_int_equal(nas_augment_parse("crop,flip", &a), 0);
    assert_int_equal(a.crop_pad, 4);
    assert_int_equal(a.flip, 1);
    assert_int_equal(a.cutout, 0);
    nas_augment_format(&a, buf, sizeof buf);
    assert_string_equal(buf, "crop4,flip"); /* the spelling nas train always printed */
    assert_int_equal(nas_augment_parse("cutout8,flip,crop2", &a), 0);
    nas_augment_format(&a, buf, sizeof buf);
    assert_string_equal(buf, "crop2,flip,cutout8");
    assert_int_equal(nas_augment_parse("cutout", &a), 0);
    assert_int_equal(a.cutout, 16);
    assert_int_equal(nas_augment_parse("crop9", &a), 0); /* the old cropN */
    assert_int_equal(a.crop_pad, 9);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(nas_augment_parse(k ? "" : "none", &a), 0);
        nas_augment_format(&a, buf, sizeof buf);
        assert_string_equal(buf, "none");
    }
    static const char *const bad[] = {"crop,crop", "crop0", "crop65", "blur", ",flip", "crop,,flip",
                                      "cutout0", "flip,", "crop4x", "cutout-2", "flip,flip"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        a.flip = 7;
        assert_int_equal(nas_augment_parse(bad[i], &a), -1);
        assert_int_equal(a.flip, 0);
    }
}

/* Augment the known image with key `key` and find every draw that explains
 * the result; returns how many (must be 1), the draw in *d. */
static int explain(const nas_augment *a, uint64_t key, int d[5])
{
    float in[C * H * W], img[C * H * W], tmp[C * H * W], want[C * H * W];
    known(in);
    memcpy(img, in, sizeof img);
    nas_augment_image(a, img, tmp, C, H, W, black, 42, key);
    int p = a->crop_pad, found = 0;
    for (int dy = -p; dy <= p; dy++)
        for (int dx = -p; dx <= p; dx++)
            for (int f = 0; f <= a->flip; f++)
                for (int cy = 0; cy < (a->cutout ? H : 1); cy++)
                    for (int cx = 0; cx < (a->cutout ? W : 1); cx++) {
                        expected(in, want, dy, dx, f, a->cutout, cy, cx);
                        if (!memcmp(want, img, sizeof img)) {
                            found++;
                            d[0] = dy, d[1] = dx, d[2] = f, d[3] = cy, d[4] = cx;
                        }
                    }
    return found;
}

/* nas_augment_check refuses exactly the crops and cutouts that can leave
 * nothing of an H x W image: over many keys, an accepted policy never
 * turns the known image into padding or cutout alone (every pixel black or
 * 0), and a refused one (the next larger N) does for some key. */
static int leaves_nothing(const nas_augment *a)
{
    float img[C * H * W], tmp[C * H * W];
    for (uint64_t key = 0; key < 4000; key++) {
        known(img);
        nas_augment_image(a, img, tmp, C, H, W, black, 11, key);
        int kept = 0;
        for (int c = 0; c < C; c++)
            for (int i = 0; i < H * W; i++)
                kept += img[c * H * W + i] != black[c] && img[c * H * W + i] != 0.0f;
        if (!kept)
            return 1;
    }
    return 0;
}

static void test_check_size(void **state)
{
    (void)state;
    char msg[400];
    for (int n = 1; n <= 8; n++) {
        nas_augment crop = {.crop_pad = n}, cut = {.cutout = n};
        int rc = nas_augment_check(&crop, H, W, msg, sizeof msg);
        assert_int_equal(rc, n < H ? NAS_OK : NAS_ECONFIG); /* H = 5 < W = 6 */
        assert_int_equal(leaves_nothing(&crop), rc != NAS_OK);
        rc = nas_augment_check(&cut, H, W, msg, sizeof msg);
        assert_int_equal(rc, n < W ? NAS_OK : NAS_ECONFIG);
        assert_int_equal(leaves_nothing(&cut), rc != NAS_OK);
    }
    nas_augment both = {.crop_pad = 5, .flip = 1, .cutout = 3};
    assert_int_equal(nas_augment_check(&both, H, W, msg, sizeof msg), NAS_ECONFIG);
    assert_non_null(strstr(msg, "crop5 shifts the image by up to 5 pixels, but the images are "
                                "5x6 (H x W)"));
    assert_non_null(strstr(msg, "expected cropN with N at most 4"));
    nas_augment cut = {.flip = 1, .cutout = 16};
    assert_int_equal(nas_augment_check(&cut, 28, 28, msg, sizeof msg), NAS_OK); /* fmnist */
    assert_int_equal(nas_augment_check(&cut, 16, 12, msg, sizeof msg), NAS_ECONFIG);
    assert_non_null(strstr(msg, "cutout16 cuts out a 16x16 square, but the images are 16x12"));
    assert_non_null(strstr(msg, "expected cutoutN with N at most 15"));
    nas_augment one = {.crop_pad = 1};
    assert_int_equal(nas_augment_check(&one, 1, 9, msg, sizeof msg), NAS_ECONFIG);
    assert_non_null(strstr(msg, "expected no crop"));
    assert_int_equal(nas_augment_check(NULL, 1, 1, msg, sizeof msg), NAS_OK);
}

static void test_crop_flip_pixels(void **state)
{
    (void)state;
    nas_augment a = {.crop_pad = 2, .flip = 1};
    int seen_dy[5] = {0}, seen_dx[5] = {0}, seen_f[2] = {0}, d[5];
    for (uint64_t key = 0; key < 400; key++) {
        assert_int_equal(explain(&a, key, d), 1);
        seen_dy[d[0] + 2]++, seen_dx[d[1] + 2]++, seen_f[d[2]]++;
    }
    for (int i = 0; i < 5; i++) {
        assert_true(seen_dy[i] > 40); /* about 80 each */
        assert_true(seen_dx[i] > 40);
    }
    assert_true(seen_f[0] > 150 && seen_f[1] > 150);
    /* one hand-checked case: shift by (1, -2) then flip, pixel by pixel */
    float in[C * H * W], want[C * H * W];
    known(in);
    expected(in, want, 1, -2, 1, 0, 0, 0);
    assert_true(want[0] == in[(0 * H + 1) * W + 3]);                   /* x=0: x'=5, -2 -> 3 */
    assert_true(want[4] == black[0] && want[5] == black[0]);           /* x'=1, 0: -1, -2 */
    assert_true(want[(0 * H + 0) * W + 2] == in[(0 * H + 1) * W + 1]); /* x=2: x'=3, -2 -> 1 */
    assert_true(want[(1 * H + 4) * W + 3] == black[1]);                /* y=4: 5 is outside */
}

static void test_cutout_pixels(void **state)
{
    (void)state;
    nas_augment a = {.cutout = 3};
    int seen[H][W], d[5];
    memset(seen, 0, sizeof seen);
    for (uint64_t key = 0; key < 600; key++) {
        assert_int_equal(explain(&a, key, d), 1);
        seen[d[3]][d[4]]++;
    }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            assert_true(seen[y][x] > 0);
    /* all three together */
    nas_augment all = {.crop_pad = 1, .flip = 1, .cutout = 2};
    for (uint64_t key = 0; key < 50; key++)
        assert_int_equal(explain(&all, key, d), 1);
}

static void test_keyed(void **state)
{
    (void)state;
    nas_augment a = {.crop_pad = 3, .flip = 1, .cutout = 2};
    float x1[C * H * W], x2[C * H * W], tmp[C * H * W];
    int differ = 0;
    for (uint64_t key = 0; key < 20; key++) {
        known(x1), known(x2);
        nas_augment_image(&a, x1, tmp, C, H, W, black, 5, key);
        nas_augment_image(&a, x2, tmp, C, H, W, black, 5, key);
        assert_memory_equal(x1, x2, sizeof x1); /* same (seed, key): same image */
        known(x2);
        nas_augment_image(&a, x2, tmp, C, H, W, black, 6, key);
        differ += memcmp(x1, x2, sizeof x1) != 0;
    }
    assert_true(differ >= 15); /* another seed: other draws */
    nas_augment none = {0};
    known(x1), known(x2);
    nas_augment_image(&none, x1, tmp, C, H, W, black, 5, 1);
    assert_memory_equal(x1, x2, sizeof x1);
}

/* A data set of n images C x H x W, pixel values from their index. */
static nas_dataset *toy(int n)
{
    nas_dataset *d = calloc(1, sizeof *d);
    d->n = n, d->c = C, d->h = H, d->w = W, d->classes = 5, d->owns = 1;
    d->images = malloc((size_t)n * C * H * W * sizeof(float));
    d->labels = malloc((size_t)n);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < C * H * W; k++)
            d->images[(size_t)i * C * H * W + k] = (float)(i * 1000 + k + 1);
        d->labels[i] = (uint8_t)(i % 5);
    }
    d->black[0] = black[0], d->black[1] = black[1];
    return d;
}

static void test_loader_order_and_threads(void **state)
{
    (void)state;
    const int n = 37, batch = 8, epochs = 3, per = C * H * W;
    nas_dataset *d = toy(n);
    nas_augment a = {.crop_pad = 2, .flip = 1, .cutout = 2};
    int per_epoch = (n + batch - 1) / batch;
    size_t total = (size_t)epochs * per_epoch;
    float *ref = calloc(total * batch * per, sizeof(float)), *lab = calloc(total * batch, sizeof(float));
    float tmp[C * H * W];
    /* the documented order, computed here */
    uint32_t idx[37];
    for (int ep = 0; ep < epochs; ep++) {
        for (int i = 0; i < n; i++)
            idx[i] = (uint32_t)i;
        nas_rng r;
        nas_rng_seed(&r, 11, (uint64_t)ep);
        nas_rng_shuffle(&r, idx, (size_t)n);
        for (int pos = 0; pos < n; pos++) {
            size_t k = (size_t)ep * per_epoch + (size_t)(pos / batch), i = (size_t)(pos % batch);
            float *img = ref + (k * batch + i) * per;
            memcpy(img, d->images + (size_t)idx[pos] * per, per * sizeof(float));
            nas_augment_image(&a, img, tmp, C, H, W, d->black, 11, (uint64_t)ep * n + pos);
            lab[k * batch + i] = (float)d->labels[idx[pos]];
        }
    }
    static const int threads[] = {0, 1, 3};
    for (size_t t = 0; t < 3; t++) {
        for (int first = 0; first < 2; first++) { /* from epoch 0, and resumed at epoch 1 */
            nas__loader *l = NULL;
            nas_error err;
            assert_int_equal(nas__loader_create(d, batch, 11, first, 0, epochs, &a, threads[t], &l, &err), 0);
            double wait = 0;
            for (size_t k = (size_t)first * per_epoch; k < total; k++) {
                const float *x, *y;
                int b = 0;
                assert_int_equal(nas__loader_next(l, &x, &y, &b, &wait), 0);
                assert_int_equal(b, k % per_epoch == (size_t)per_epoch - 1 ? n - (per_epoch - 1) * batch : batch);
                assert_memory_equal(x, ref + k * batch * per, (size_t)b * per * sizeof(float));
                assert_memory_equal(y, lab + k * batch, (size_t)b * sizeof(float));
            }
            const float *x, *y;
            int b;
            assert_int_equal(nas__loader_next(l, &x, &y, &b, &wait), NAS_ENOTFOUND);
            assert_true(wait >= 0);
            nas__loader_destroy(l);
        }
    }
    /* stopping early joins the threads (no hang, no leak under ASan) */
    nas__loader *l = NULL;
    assert_int_equal(nas__loader_create(d, batch, 11, 0, 0, epochs, &a, 2, &l, NULL), 0);
    const float *x, *y;
    int b;
    assert_int_equal(nas__loader_next(l, &x, &y, &b, NULL), 0);
    nas__loader_destroy(l);
    free(ref);
    free(lab);
    nas_dataset_destroy(d);
}

/* nas_train on the tiny net: the same losses and weights whatever the
 * loader's thread count, with augmentation on. */
static void train_once(int threads, float *loss, float *w, int nw)
{
    nas_backend *be = NULL;
    assert_int_equal(nas_backend_create("ref", 1, 0, &be, NULL), 0);
    static const int ops[6] = {NAS_OP_NOR_CONV_3X3, NAS_OP_SKIP_CONNECT, NAS_OP_AVG_POOL_3X3,
                               NAS_OP_NOR_CONV_1X1, NAS_OP_SKIP_CONNECT, NAS_OP_NOR_CONV_3X3};
    nas_net_desc desc = tiny_net_desc(ops, 1);
    nas_net *net = NULL;
    assert_int_equal(nas_net_create(be, &desc, 8, 3, &net, NULL), 0);
    nas_dataset *d = calloc(1, sizeof *d);
    d->n = 40, d->c = 1, d->h = 8, d->w = 8, d->classes = 5, d->owns = 1;
    d->images = malloc(40 * 64 * sizeof(float));
    d->labels = malloc(40);
    nas_rng r;
    nas_rng_seed(&r, 9, 9);
    for (int i = 0; i < 40 * 64; i++)
        d->images[i] = nas_rng_normal(&r);
    for (int i = 0; i < 40; i++)
        d->labels[i] = (uint8_t)(i % 5);
    d->black[0] = -0.8f;
    nas_recipe rec = {.epochs = 2, .batch_size = 8, .lr = 0.05, .momentum = 0.9, .nesterov = 1,
                      .weight_decay = 5e-4, .schedule = NAS_SCHEDULE_COSINE, .seed = 4,
                      .augment = {.crop_pad = 2, .flip = 1, .cutout = 3}, .loader_threads = threads};
    nas_train_stats st;
    nas_error err;
    assert_int_equal(nas_train(net, d, &rec, NULL, NULL, &st, &err), 0);
    *loss = (float)st.train_loss;
    assert_true(st.wait_seconds >= 0 && st.wait_seconds <= st.load_seconds + 1e-9);
    nas_net_param p[64];
    int np = nas_net_params(net, p, 64);
    int k = 0;
    for (int i = 0; i < np && k < nw; i++) {
        size_t cnt = p[i].value->count;
        float *h = malloc(cnt * sizeof *h);
        assert_int_equal(nas_tensor_download(p[i].value, h, cnt), 0);
        for (size_t j = 0; j < cnt && k < nw; j++)
            w[k++] = h[j];
        free(h);
    }
    nas_net_destroy(net);
    nas_backend_destroy(be);
    nas_dataset_destroy(d);
}

static void test_train_threads_identical(void **state)
{
    (void)state;
    enum { NW = 4000 };
    float l0, l1, l2;
    float *w0 = calloc(NW, sizeof(float)), *w1 = calloc(NW, sizeof(float)), *w2 = calloc(NW, sizeof(float));
    train_once(0, &l0, w0, NW);
    train_once(1, &l1, w1, NW);
    train_once(2, &l2, w2, NW);
    assert_memory_equal(&l0, &l1, sizeof l0);
    assert_memory_equal(&l0, &l2, sizeof l0);
    assert_memory_equal(w0, w1, NW * sizeof(float));
    assert_memory_equal(w0, w2, NW * sizeof(float));
    free(w0), free(w1), free(w2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_format),
        cmocka_unit_test(test_check_size),
        cmocka_unit_test(test_crop_flip_pixels),
        cmocka_unit_test(test_cutout_pixels),
        cmocka_unit_test(test_keyed),
        cmocka_unit_test(test_loader_order_and_threads),
        cmocka_unit_test(test_train_threads_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
