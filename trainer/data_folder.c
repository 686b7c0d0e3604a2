/*
 * trainer/data_folder.c - the image-folder reader of data.format =
 * "folder" (issue 16) and its decode cache.
 *
 * Layout: data.dir/train/<class>/<image> and, optionally, data.dir/test/
 * with the same class names. Class k is the k-th subfolder of train/ in
 * byte order of the names (strcmp); within a class, the images are taken
 * in byte order of their file names. Image files are those whose names
 * end in .png, .jpg or .jpeg (any case); dot-files, other files and
 * deeper folders are ignored. data_image.c decodes them.
 *
 * Cache: decoding is done once. The decoded split is written to
 * dc->cache_dir as two .npy files (uint8 images N,C,H,W and uint8 labels
 * N; numpy.load reads them, and data.format = "npy" trains on them
 * identically), named after a 64-bit FNV-1a fingerprint (Fowler, Noll,
 * Vo; draft-eastlake-fnv) of the split: every class and file name, size
 * and modification time, and data.size. Later reads whose fingerprint
 * matches map the cache (nas__read_npy) instead of decoding; a changed
 * folder has another fingerprint, so it is decoded again and the old
 * cache files of that folder are removed. A cache that cannot be written
 * (read-only directory) is skipped: the decoded set is used as it is.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trainer/data_impl.h"
#include "trainer/weights_impl.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define CACHE_VERSION "nas folder cache 1"
#define MAX_CLASSES 256           /* labels are uint8 */
#define MAX_FILE_BYTES (1L << 28) /* one image file, 256 MiB */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * FNV_PRIME;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) { return fnv(h, s, strlen(s) + 1); }

/* The split's images: full paths, labels, fingerprint. */
typedef struct flist {
    char **path;
    uint8_t *label;
    int n, cap;
    int classes;
    uint64_t fp;
} flist;

static void flist_free(flist *L)
{
    for (int i = 0; i < L->n; i++)
        free(L->path[i]);
    free(L->path);
    free(L->label);
    memset(L, 0, sizeof *L);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_image_name(const char *s)
{
    const char *dot = strrchr(s, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

static void names_free(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* The entries of `dir` that are folders (want_dirs) or image files, not
 * starting with '.', sorted by strcmp: *out (malloc'd, *n of them). */
static int list_names(const char *dir, int want_dirs, char ***out, int *n, nas_error *err)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return nas_error_set(err, NAS_EIO, "cannot open the folder %s: %s", dir, strerror(errno));
    char **v = NULL, p[2 * NAS_PATH_MAX];
    int cnt = 0, cap = 0, rc = NAS_OK;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(p, &st) != 0)
            continue;
        if (want_dirs ? !S_ISDIR(st.st_mode) : !(S_ISREG(st.st_mode) && is_image_name(e->d_name)))
            continue;
        if (cnt == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                rc = nas_error_set(err, NAS_ENOMEM, "out of memory listing %s", dir);
                break;
            }
            v = nv;
        }
        if (!(v[cnt] = strdup(e->d_name))) {
            rc = nas_error_set(err, NAS_ENOMEM, "out of memory listing %s", dir);
            break;
        }
        cnt++;
    }
    closedir(d);
    if (rc) {
        names_free(v, cnt);
        return rc;
    }
    if (cnt)
        qsort(v, (size_t)cnt, sizeof *v, by_name);
    *out = v;
    *n = cnt;
    return NAS_OK;
}

/* Append the images of class `k` (folder `cdir`) to L, into the fingerprint. */
static int add_class(flist *L, const char *cdir, int k, nas_error *err)
{
    char **files = NULL;
    int nf = 0;
    int rc = list_names(cdir, 0, &files, &nf, err);
    if (!rc && nf == 0)
        rc = nas_error_set(err, NAS_EFORMAT, "%s: empty class folder: no .png, .jpg or .jpeg files",
                           cdir);
    if (!rc && L->n + nf > L->cap) {
        int cap = (L->n + nf) * 2;
        char **np = realloc(L->path, (size_t)cap * sizeof *np);
        if (np)
            L->path = np;
        uint8_t *nl = np ? realloc(L->label, (size_t)cap) : NULL;
        if (nl)
            L->label = nl;
        if (!np || !nl)
            rc = nas_error_set(err, NAS_ENOMEM, "out of memory listing %s", cdir);
        else
            L->cap = cap;
    }
    for (int i = 0; i < nf && !rc; i++) {
        size_t len = strlen(cdir) + strlen(files[i]) + 2;
        char *p = malloc(len);
        struct stat st;
        if (!p) {
            rc = nas_error_set(err, NAS_ENOMEM, "out of memory listing %s", cdir);
            break;
        }
        snprintf(p, len, "%s/%s", cdir, files[i]);
        if (stat(p, &st) != 0) {
            rc = nas_error_set(err, NAS_EIO, "cannot read %s: %s", p, strerror(errno));
            free(p);
            break;
        }
        long long meta[4] = {k, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                             (long long)st.st_mtim.tv_nsec};
        L->fp = fnv(fnv_str(L->fp, files[i]), meta, sizeof meta);
        L->path[L->n] = p;
        L->label[L->n++] = (uint8_t)k;
    }
    names_free(files, nf);
    return rc;
}

/*
 * The images of dir/<split> (split "train" or "test"), labelled by the
 * class folders of dir/train. *absent = 1 (and NAS_OK) when the split
 * folder does not exist.
 */
static int list_split(const char *dir, const char *split, const int size[2], flist *L, int *absent,
                      nas_error *err)
{
    memset(L, 0, sizeof *L);
    *absent = 0;
    char sdir[NAS_PATH_MAX + 16], tdir[NAS_PATH_MAX + 16], cdir[2 * NAS_PATH_MAX];
    snprintf(sdir, sizeof sdir, "%s/%s", dir, split);
    snprintf(tdir, sizeof tdir, "%s/train", dir);
    struct stat st;
    if (stat(sdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        *absent = 1;
        if (strcmp(split, "train") == 0)
            return nas_error_set(err, NAS_EIO, "%s holds no train/ folder (data.format = \"folder\" "
                                 "reads data.dir/train/<class>/<image>)", dir);
        return NAS_OK;
    }
    char **cls = NULL, **here = NULL;
    int nc = 0, nh = 0;
    int rc = list_names(tdir, 1, &cls, &nc, err);
    if (!rc && (nc == 0 || nc > MAX_CLASSES))
        rc = nas_error_set(err, NAS_EFORMAT, "%s: %d class folders, expected 1 to %d", tdir, nc,
                           MAX_CLASSES);
    if (!rc)
        rc = list_names(sdir, 1, &here, &nh, err);
    if (!rc && nh == 0)
        rc = nas_error_set(err, NAS_EFORMAT, "%s holds no class folders", sdir);
    L->fp = fnv_str(FNV_OFFSET, CACHE_VERSION);
    L->fp = fnv(fnv_str(L->fp, split), size, 2 * sizeof *size);
    for (int k = 0; k < nc && !rc; k++)
        L->fp = fnv_str(L->fp, cls[k]);
    for (int j = 0, k = 0; j < nh && !rc; j++) { /* both sorted: merge */
        while (k < nc && strcmp(cls[k], here[j]) < 0)
            k++;
        snprintf(cdir, sizeof cdir, "%s/%s", sdir, here[j]);
        if (k == nc || strcmp(cls[k], here[j]) != 0)
            rc = nas_error_set(err, NAS_EFORMAT, "%s: class folder not in %s (test classes must "
                               "be training classes)", cdir, tdir);
        else
            rc = add_class(L, cdir, k, err);
    }
    L->classes = nc;
    names_free(cls, nc);
    names_free(here, nh);
    if (rc)
        flist_free(L);
    return rc;
}

/* The whole file into *buf (malloc'd, *len bytes). */
static int slurp(const char *path, uint8_t **buf, size_t *len, nas_error *err)
{
    *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return nas_error_set(err, NAS_EIO, "cannot open %s: %s", path, strerror(errno));
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    int rc = NAS_OK;
    if (n < 0 || n > MAX_FILE_BYTES)
        rc = nas_error_set(err, NAS_EFORMAT, "%s: %ld bytes: not a readable image file of at most "
                           "%ld bytes", path, n, MAX_FILE_BYTES);
    else if (!(*buf = malloc(n ? (size_t)n : 1)))
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
    else if (fseek(f, 0, SEEK_SET) != 0 || fread(*buf, 1, (size_t)n, f) != (size_t)n)
        rc = nas_error_set(err, NAS_EIO, "%s: read error", path);
    fclose(f);
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    *len = (size_t)(n > 0 ? n : 0);
    return rc;
}

/* Image i (H,W,c interleaved, already h x w) into slot i of the 3-plane
 * N,3,H,W buffer; a grey image fills plane 0 only. */
static void put_image(uint8_t *all, size_t i, const uint8_t *px, int h, int w, int c)
{
    size_t hw = (size_t)h * w;
    uint8_t *o = all + i * 3 * hw;
    for (int k = 0; k < c; k++)
        for (size_t p = 0; p < hw; p++)
            o[k * hw + p] = px[p * c + k];
}

/* After every image is in: C = 1 when all are grey (compacted), else the
 * grey ones' plane 0 is replicated into planes 1 and 2. */
static void settle_channels(nas_rawset *r, const uint8_t *grey)
{
    size_t hw = (size_t)r->h * r->w;
    uint8_t *all = r->heap;
    int any_rgb = 0;
    for (int i = 0; i < r->n; i++)
        any_rgb |= !grey[i];
    r->c = any_rgb ? 3 : 1;
    for (int i = 0; i < r->n; i++) {
        uint8_t *o = all + (size_t)i * 3 * hw;
        if (!any_rgb) {
            memmove(all + (size_t)i * hw, o, hw);
        } else if (grey[i]) {
            memcpy(o + hw, o, hw);
            memcpy(o + 2 * hw, o, hw);
        }
    }
    if (!any_rgb) {
        uint8_t *shrunk = realloc(r->heap, (size_t)r->n * hw);
        if (shrunk)
            r->heap = shrunk;
    }
    r->pixels = r->heap;
}

/* Decode every image of L into r (uint8 N,C,H,W in r->heap). */
static int decode_all(const flist *L, const int size[2], nas_rawset *r, nas_error *err)
{
    int H = size[0], W = size[1], rc = NAS_OK, first = -1;
    uint8_t *grey = calloc((size_t)L->n, 1), *tmp = NULL;
    if (!grey)
        return nas_error_set(err, NAS_ENOMEM, "out of memory decoding %s", r->path);
    int fh = 0, fw = 0; /* the first image's own size, for the mixed-size message */
    for (int i = 0; i < L->n && !rc; i++) {
        uint8_t *bytes = NULL;
        size_t len = 0;
        nas__image im = {0};
        if ((rc = slurp(L->path[i], &bytes, &len, err)) ||
            (rc = nas__image_decode(bytes, len, L->path[i], NAS__IMAGE_MAX_PIXELS, &im, err))) {
            free(bytes);
            break;
        }
        free(bytes);
        if (first < 0) {
            first = i, fh = im.h, fw = im.w;
            if (!H)
                H = im.h, W = im.w;
            r->heap = malloc((size_t)L->n * 3 * H * W);
            tmp = malloc((size_t)3 * H * W);
            if (!r->heap || !tmp)
                rc = nas_error_set(err, NAS_ENOMEM, "out of memory for %d images of %dx%d in %s",
                                   L->n, H, W, r->path);
        } else if (!size[0] && (im.h != fh || im.w != fw)) {
            rc = nas_error_set(err, NAS_EFORMAT, "%s is %dx%d (HxW) but %s is %dx%d: images of "
                               "mixed sizes; set data.size = [H, W] to resize them", L->path[i],
                               im.h, im.w, L->path[first], fh, fw);
        }
        if (!rc) {
            nas__image_resize(im.px, im.h, im.w, im.c, tmp, H, W);
            put_image(r->heap, (size_t)i, tmp, H, W, im.c);
            grey[i] = im.c == 1;
        }
        free(im.px);
    }
    free(tmp);
    if (!rc) {
        r->n = L->n, r->h = H, r->w = W;
        settle_channels(r, grey);
    }
    free(grey);
    return rc;
}

/* ---- the cache ---------------------------------------------------------- */

/* prefix "folder-<hash of dir>-<split>-" and the two file names. */
static void cache_names(const nas_data_conf *dc, const char *split, uint64_t fp, char *prefix,
                        size_t np, char *img, char *lab, size_t n)
{
    uint64_t dh = fnv_str(FNV_OFFSET, dc->dir);
    snprintf(prefix, np, "folder-%08x-%s-", (unsigned)(dh ^ (dh >> 32)), split);
    snprintf(img, n, "%s/%s%016llx-images.npy", dc->cache_dir, prefix, (unsigned long long)fp);
    snprintf(lab, n, "%s/%s%016llx-labels.npy", dc->cache_dir, prefix, (unsigned long long)fp);
}

/* The cached split when it is there and agrees with L; NULL otherwise. */
static nas_rawset *cache_read(const char *img, const char *lab, const flist *L, const int size[2])
{
    nas_rawset *r = NULL;
    nas_error e;
    if (access(img, R_OK) != 0 || access(lab, R_OK) != 0 || nas__read_npy(img, lab, "nchw", &r, &e))
        return NULL;
    if (r->n != L->n || r->f32 || r->nhwc || (r->c != 1 && r->c != 3) ||
        (size[0] && (r->h != size[0] || r->w != size[1])) ||
        memcmp(r->labels, L->label, (size_t)L->n) != 0) {
        nas_rawset_destroy(r);
        return NULL;
    }
    return r;
}

/* Write one uint8 array as .npy through a temporary file renamed over
 * `path`. 0 or -1. */
static int write_npy(const char *path, const void *data, int ndim, const int64_t *shape)
{
    char hdr[256], tmp[2 * NAS_PATH_MAX];
    size_t hl = nas__npy_header(hdr, sizeof hdr, "|u1", ndim, shape), bytes = 1;
    for (int i = 0; i < ndim; i++)
        bytes *= (size_t)shape[i];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return -1;
    int ok = hl && fwrite(hdr, 1, hl, f) == hl && fwrite(data, 1, bytes, f) == bytes;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Write r as the cache (labels first, then images), then remove the
 * other cache files of this folder and split. Failures are not errors. */
static void cache_write(const nas_data_conf *dc, const char *prefix, const char *img,
                        const char *lab, const nas_rawset *r)
{
    mkdir(dc->cache_dir, 0777);
    int64_t ls[1] = {r->n}, is[4] = {r->n, r->c, r->h, r->w};
    if (write_npy(lab, r->labels, 1, ls) != 0 || write_npy(img, r->pixels, 4, is) != 0)
        return;
    DIR *d = opendir(dc->cache_dir);
    if (!d)
        return;
    const char *bi = strrchr(img, '/') + 1, *bl = strrchr(lab, '/') + 1;
    char p[2 * NAS_PATH_MAX];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || !strcmp(e->d_name, bi) ||
            !strcmp(e->d_name, bl) || strstr(e->d_name, ".tmp."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dc->cache_dir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

/* ---- entry points ------------------------------------------------------- */

int nas__read_folder(const nas_data_conf *dc, int test, nas_rawset **out, nas_error *err)
{
    *out = NULL;
    const char *split = test ? "test" : "train";
    flist L;
    int absent = 0;
    int rc = list_split(dc->dir, split, dc->size, &L, &absent, err);
    if (rc || absent)
        return rc;
    char prefix[64], img[2 * NAS_PATH_MAX], lab[2 * NAS_PATH_MAX], sdir[NAS_PATH_MAX + 16];
    snprintf(sdir, sizeof sdir, "%s/%s", dc->dir, split);
    cache_names(dc, split, L.fp, prefix, sizeof prefix, img, lab, sizeof img);
    nas_rawset *r = dc->cache_dir[0] ? cache_read(img, lab, &L, dc->size) : NULL;
    if (!r) {
        if (!(r = nas__rawset_new(sdir)) || !(r->labels = malloc((size_t)L.n))) {
            nas_rawset_destroy(r);
            flist_free(&L);
            return nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", sdir);
        }
        memcpy(r->labels, L.label, (size_t)L.n);
        rc = decode_all(&L, dc->size, r, err);
        if (!rc && dc->cache_dir[0])
            cache_write(dc, prefix, img, lab, r);
    }
    if (!rc) {
        snprintf(r->path, sizeof r->path, "%s", sdir);
        r->classes = L.classes;
        *out = r;
    } else {
        nas_rawset_destroy(r);
    }
    flist_free(&L);
    return rc;
}

int nas__rawset_grey_to_rgb(nas_rawset *r, nas_error *err)
{
    if (r->c != 1 || r->f32)
        return nas_error_set(err, NAS_EINVAL, "%s: not a one-channel uint8 set", r->path);
    size_t hw = (size_t)r->h * r->w;
    uint8_t *p = malloc((size_t)r->n * 3 * hw);
    if (!p)
        return nas_error_set(err, NAS_ENOMEM, "out of memory converting %s to RGB", r->path);
    for (int i = 0; i < r->n; i++)
        for (int k = 0; k < 3; k++)
            memcpy(p + ((size_t)i * 3 + k) * hw, (const uint8_t *)r->pixels + (size_t)i * hw, hw);
    if (r->map)
        munmap(r->map, r->map_len);
    r->map = NULL;
    free(r->heap);
    r->heap = p;
    r->pixels = p;
    r->c = 3;
    r->nhwc = 0;
    return NAS_OK;
}

void nas_data_cache_beside(nas_data_conf *dc, const char *db_path)
{
    if (dc && db_path && db_path[0])
        snprintf(dc->cache_dir, sizeof dc->cache_dir, "%.*s.data", (int)sizeof dc->cache_dir - 8,
                 db_path);
}
