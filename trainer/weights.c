/*
 * trainer/weights.c - a network's parameters in a file: NumPy .npz.
 *
 * Why .npz: the same file serves nas (trial weights, checkpoints) and
 * people (numpy.load, then torch.from_numpy, loads it into the exported
 * PyTorch module without our code). It is a ZIP archive (PKWARE
 * APPNOTE.TXT, "stored" members; written and read with libzip) of .npy
 * arrays (NumPy NEP 1, format 1.0), one per parameter, named as nas_net_params
 * names them and shaped as PyTorch's state_dict shapes them. Each BN
 * layer also gets "<module>.num_batches_tracked" (int64 scalar) so the
 * archive is a complete state_dict. Floats are little-endian IEEE-754
 * binary32 (x86/ARM hosts; a big-endian host gets NAS_EUNSUPPORTED).
 * Members whose name holds a '/' are ours (checkpoint state,
 * "optim/momentum/<param>", "state/...") and are skipped when loading
 * weights. docs/export.md describes the layout.
 */
#include <errno.h>  /* errno */
#include <stdio.h>  /* FILE, fopen, rename */
#include <stdlib.h> /* malloc, free */
#include <string.h> /* strerror, memcpy */
#include <sys/stat.h> /* stat: the archive's size */
#include <zip.h>    /* libzip: the ZIP container */
#include <zlib.h>   /* crc32: members are checked against the central directory */
#include "nas/trainer.h"
#include "trainer/weights_impl.h"

/* ---- byte order ---------------------------------------------------------------- */

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* ---- writing ------------------------------------------------------------------ */

/* The archive is built in memory by libzip (each member a copy of its
 * .npy bytes) and written to PATH.tmp by zip_close, which itself writes a
 * temporary file and renames it; we then rename PATH.tmp over PATH. */
struct nas__npz_writer {
    zip_t *za;
    char path[NAS_PATH_MAX];
    char tmp[NAS_PATH_MAX + 8];
};

/* libzip's message for its error code `code` into buf[n]. */
static const char *zip_code_text(int code, char *buf, size_t n)
{
    zip_error_t ze;
    zip_error_init_with_code(&ze, code);
    snprintf(buf, n, "%s", zip_error_strerror(&ze));
    zip_error_fini(&ze);
    return buf;
}

int nas__npz_create(const char *path, nas__npz_writer **out, nas_error *err)
{
    *out = NULL;
    if (!host_is_little_endian())
        return nas_error_set(err, NAS_EUNSUPPORTED, "writing %s: big-endian hosts are not supported",
                             path);
    if (strlen(path) >= NAS_PATH_MAX)
        return nas_error_set(err, NAS_EINVAL, "path too long: %s", path);
    nas__npz_writer *z = calloc(1, sizeof *z);
    if (!z)
        return nas_error_set(err, NAS_ENOMEM, "out of memory writing %s", path);
    snprintf(z->path, sizeof z->path, "%s", path);
    snprintf(z->tmp, sizeof z->tmp, "%s.tmp", path);
    int code = 0;
    z->za = zip_open(z->tmp, ZIP_CREATE | ZIP_TRUNCATE, &code);
    if (!z->za) {
        char why[256];
        free(z);
        return nas_error_set(err, NAS_EIO, "cannot write %s: %s", path,
                             zip_code_text(code, why, sizeof why));
    }
    *out = z;
    return NAS_OK;
}

void nas__npz_abort(nas__npz_writer *z)
{
    if (!z)
        return;
    if (z->za)
        zip_discard(z->za);
    remove(z->tmp);
    free(z);
}

static size_t descr_itemsize(const char *d)
{
    if (!strcmp(d, "<f4"))
        return 4;
    if (!strcmp(d, "<f8") || !strcmp(d, "<i8") || !strcmp(d, "<u8"))
        return 8;
    if (!strcmp(d, "|u1"))
        return 1;
    return 0;
}

/* Elements and bytes of an .npy array with `ndim` dims `shape` of
 * `itemsize`-byte items (NEP 1). Returns 0, or -1 when a dimension is
 * negative or the element count or byte count overflows size_t (a header
 * can claim (4611686018427387905,) '<f4': 2^64 + 4 bytes, which wraps to 4).
 * Kept apart from the ZIP container code: the reader and writer both use it. */
static int npy_size(int ndim, const int64_t *shape, size_t itemsize, size_t *count,
                    size_t *nbytes)
{
    size_t c = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (uint64_t)shape[i] > SIZE_MAX)
            return -1;
        size_t d = (size_t)shape[i];
        if (d && c > SIZE_MAX / d)
            return -1;
        c *= d;
    }
    if (itemsize && c > SIZE_MAX / itemsize)
        return -1;
    *count = c;
    *nbytes = c * itemsize;
    return 0;
}

int nas__npz_add(nas__npz_writer *z, const char *name, const char *descr, int ndim,
                 const int64_t *shape, const void *data, size_t nbytes, nas_error *err)
{
    size_t item = descr_itemsize(descr);
    size_t count, need;
    if (!item || ndim < 0 || ndim > NAS__NPY_MAX_DIMS ||
        npy_size(ndim, shape, item, &count, &need) != 0 || need != nbytes)
        return nas_error_set(err, NAS_EINVAL, "%s: member %s: bad dtype or shape", z->path, name);
    char hdr[1024];
    size_t hl = nas__npy_header(hdr, sizeof hdr, descr, ndim, shape);
    char member[NAS_PATH_MAX];
    if (!hl || (size_t)snprintf(member, sizeof member, "%s.npy", name) >= sizeof member)
        return nas_error_set(err, NAS_EINVAL, "%s: member %s: name or shape too long", z->path,
                             name);
    unsigned char *npy = malloc(hl + nbytes); /* libzip frees it (zip_source_buffer freep) */
    if (!npy)
        return nas_error_set(err, NAS_ENOMEM, "out of memory writing %s", z->path);
    memcpy(npy, hdr, hl);
    if (nbytes)
        memcpy(npy + hl, data, nbytes);
    zip_source_t *src = zip_source_buffer(z->za, npy, hl + nbytes, 1);
    if (!src) {
        free(npy);
        return nas_error_set(err, NAS_ENOMEM, "%s: member %s: %s", z->path, name,
                             zip_strerror(z->za));
    }
    zip_int64_t idx = zip_file_add(z->za, member, src, ZIP_FL_ENC_GUESS);
    if (idx < 0) {
        zip_source_free(src);
        return nas_error_set(err, NAS_EINVAL, "%s: member %s: %s", z->path, name,
                             zip_strerror(z->za));
    }
    /* Stored, as numpy.savez writes and any ZIP reader reads; -rw-r--r--. */
    if (zip_set_file_compression(z->za, (zip_uint64_t)idx, ZIP_CM_STORE, 0) != 0 ||
        zip_file_set_external_attributes(z->za, (zip_uint64_t)idx, 0, ZIP_OPSYS_UNIX,
                                         (zip_uint32_t)0100644 << 16) != 0)
        return nas_error_set(err, NAS_EIO, "%s: member %s: %s", z->path, name,
                             zip_strerror(z->za));
    return NAS_OK;
}

int nas__npz_close(nas__npz_writer *z, nas_error *err)
{
    int rc = NAS_OK;
    if (zip_close(z->za) != 0) {
        rc = nas_error_set(err, NAS_EIO, "cannot write %s: %s", z->path, zip_strerror(z->za));
        nas__npz_abort(z); /* zip_discard: nothing was written */
        return rc;
    }
    z->za = NULL;
    if (rename(z->tmp, z->path) != 0)
        rc = nas_error_set(err, NAS_EIO, "cannot rename %s to %s: %s", z->tmp, z->path,
                           strerror(errno));
    if (rc) {
        nas__npz_abort(z);
        return rc;
    }
    free(z);
    return NAS_OK;
}

/* ---- reading ------------------------------------------------------------------- */

struct nas__npz {
    nas__npy *a;
    int n;
    unsigned char **owned; /* each member's .npy bytes; a[i].data points into them */
    int n_owned;
};

void nas__npz_free(nas__npz *z)
{
    if (!z)
        return;
    for (int i = 0; i < z->n_owned; i++)
        free(z->owned[i]);
    free(z->owned);
    free(z->a);
    free(z);
}

int nas__npz_count(const nas__npz *z)
{
    return z ? z->n : 0;
}

const nas__npy *nas__npz_at(const nas__npz *z, int i)
{
    return z && i >= 0 && i < z->n ? &z->a[i] : NULL;
}

const nas__npy *nas__npz_find(const nas__npz *z, const char *name)
{
    for (int i = 0; z && i < z->n; i++)
        if (strcmp(z->a[i].name, name) == 0)
            return &z->a[i];
    return NULL;
}

/* Parse the .npy bytes p[0..len) into a (nas__npy_parse, headers of at
 * most 4096 bytes): 0, -1 (not a supported .npy header), -2 (a negative
 * dimension, or the shape's element or byte count overflows), -3 (the
 * shape calls for *need data bytes, *have are there). */
static int parse_npy(const unsigned char *p, size_t len, nas__npy *a, size_t *need, size_t *have)
{
    nas__npy_hdr h;
    int rc = nas__npy_parse(p, len, 4096, 0, &h);
    if (rc != NAS__NPY_OK && rc != NAS__NPY_ENEG)
        return -1;
    /* the dtype is checked before the dimensions' signs, as it was when
     * this reader parsed headers itself */
    if (strlen(h.descr) >= sizeof a->descr)
        return -1;
    snprintf(a->descr, sizeof a->descr, "%s", !strcmp(h.descr, "<u1") || !strcmp(h.descr, "u1") ?
                                                  "|u1" : h.descr);
    a->itemsize = descr_itemsize(a->descr);
    if (!a->itemsize)
        return -1;
    if (rc == NAS__NPY_ENEG)
        return -2;
    a->ndim = h.ndim;
    memcpy(a->shape, h.shape, sizeof a->shape);
    if (npy_size(a->ndim, a->shape, a->itemsize, &a->count, need) != 0)
        return -2;
    *have = len - h.offset;
    if (*have != *need)
        return -3;
    a->data = p + h.offset;
    return 0;
}

/* Read member `i` of `za` (archive `path`, `fsize` bytes) into z: its
 * bytes into z->owned, checked against the central directory's CRC-32, and
 * its .npy header into z->a[z->n]. */
static int read_member(zip_t *za, zip_uint64_t i, const char *path, uint64_t fsize, nas__npz *z,
                       nas_error *err)
{
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za, i, 0, &st) != 0 ||
        (st.valid & (ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_CRC)) !=
            (ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_CRC))
        return nas_error_set(err, NAS_EFORMAT, "%s: damaged ZIP central directory entry %llu: %s",
                             path, (unsigned long long)i, zip_strerror(za));
    char name[256];
    snprintf(name, sizeof name, "%s", st.name);
    if (st.comp_size > fsize || st.size > SIZE_MAX - 1)
        return nas_error_set(err, NAS_EFORMAT, "%s: member %s is truncated", path, name);
    size_t usize = (size_t)st.size;
    /* The buffer grows with the bytes that arrive, up to the size the
     * directory claims: a compressed member that lies about its size costs
     * no more memory than it holds (issue 18: 207 bytes claimed 4 GB). */
    size_t cap = usize < ((size_t)1 << 20) ? usize : ((size_t)1 << 20);
    unsigned char *u = malloc(cap ? cap : 1);
    if (!u)
        return nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
    z->owned[z->n_owned++] = u;
    zip_file_t *zf = zip_fopen_index(za, i, 0);
    if (!zf) {
        int code = zip_error_code_zip(zip_get_error(za));
        return nas_error_set(err, NAS_EFORMAT, "%s: member %s: %s%s", path, name,
                             code == ZIP_ER_COMPNOTSUPP ? "unsupported compression: " : "",
                             zip_strerror(za));
    }
    size_t got = 0;
    zip_int64_t r = 1;
    while (got < usize) {
        if (got == cap) {
            size_t ncap = cap > usize / 2 ? usize : cap * 2;
            unsigned char *nu = realloc(u, ncap);
            if (!nu) {
                zip_fclose(zf);
                return nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
            }
            z->owned[z->n_owned - 1] = u = nu;
            cap = ncap;
        }
        if ((r = zip_fread(zf, u + got, cap - got)) <= 0)
            break;
        got += (size_t)r;
    }
    char extra;
    if (r >= 0) /* read to the end, so libzip checks the CRC too */
        r = zip_fread(zf, &extra, 1);
    int code = r < 0 ? zip_error_code_zip(zip_file_get_error(zf)) : 0;
    char why[256];
    snprintf(why, sizeof why, "%s", r < 0 ? zip_file_strerror(zf) : "");
    zip_fclose(zf);
    const uLong c = crc32_z(crc32(0L, Z_NULL, 0), u, got);
    if (code == ZIP_ER_CRC || (r >= 0 && got == usize && (uint32_t)c != st.crc))
        return nas_error_set(err, NAS_EFORMAT, "%s: member %s: CRC-32 mismatch (damaged file)",
                             path, name);
    if (r < 0)
        return nas_error_set(err, NAS_EFORMAT, "%s: member %s: %s", path, name, why);
    if (got != usize)
        return nas_error_set(err, NAS_EFORMAT, "%s: member %s is truncated", path, name);
    if (r != 0)
        return nas_error_set(err, NAS_EFORMAT, "%s: member %s is longer than its directory entry",
                             path, name);
    nas__npy *a = &z->a[z->n];
    size_t ln = strlen(name);
    if (ln < 4 || strcmp(name + ln - 4, ".npy") != 0 || ln - 4 >= sizeof a->name)
        return nas_error_set(err, NAS_EFORMAT, "%s: member %s is not a .npy array", path, name);
    memcpy(a->name, name, ln - 4);
    a->name[ln - 4] = 0;
    size_t need = 0, have = 0;
    int bad = parse_npy(u, usize, a, &need, &have);
    if (bad == -2)
        return nas_error_set(err, NAS_EFORMAT,
                             "%s: member %s: its .npy shape is negative or has more "
                             "elements than memory can address",
                             path, name);
    if (bad == -3)
        return nas_error_set(err, NAS_EFORMAT,
                             "%s: member %s: its .npy shape and dtype %s call for %zu "
                             "data bytes, it holds %zu",
                             path, name, a->descr, need, have);
    if (bad)
        return nas_error_set(err, NAS_EFORMAT,
                             "%s: member %s: not a little-endian C-order .npy array of a "
                             "supported dtype",
                             path, name);
    z->n++;
    return NAS_OK;
}

/* nas__npz_read, or with names (k of them) only the members of those
 * names (each looked up in the central directory; absent ones skipped). */
static int read_archive(const char *path, const char *const *names, int k, nas__npz **out,
                        nas_error *err)
{
    *out = NULL;
    if (!host_is_little_endian())
        return nas_error_set(err, NAS_EUNSUPPORTED, "reading %s: big-endian hosts are not supported",
                             path);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return nas_error_set(err, NAS_EIO, "cannot read %s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return nas_error_set(err, NAS_EIO, "cannot read %s: not a regular file", path);
    int code = 0;
    zip_t *za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (!za) {
        char why[256];
        zip_code_text(code, why, sizeof why);
        if (code == ZIP_ER_OPEN || code == ZIP_ER_READ || code == ZIP_ER_NOENT ||
            code == ZIP_ER_MEMORY)
            return nas_error_set(err, code == ZIP_ER_MEMORY ? NAS_ENOMEM : NAS_EIO,
                                 "cannot read %s: %s", path, why);
        return nas_error_set(err, NAS_EFORMAT, "%s is not an .npz (ZIP) file: %s", path, why);
    }
    zip_int64_t n = zip_get_num_entries(za, 0);
    nas__npz *z = calloc(1, sizeof *z);
    if (z && n > 0) {
        z->a = calloc((size_t)n, sizeof *z->a);
        z->owned = calloc((size_t)n, sizeof *z->owned);
    }
    if (!z || (n > 0 && (!z->a || !z->owned))) {
        zip_discard(za);
        nas__npz_free(z);
        return nas_error_set(err, NAS_ENOMEM, "out of memory reading %s", path);
    }
    int rc = NAS_OK;
    for (zip_int64_t i = 0; !names && i < n && !rc; i++)
        rc = read_member(za, (zip_uint64_t)i, path, (uint64_t)sb.st_size, z, err);
    for (int j = 0; names && j < k && !rc; j++) {
        char member[sizeof z->a[0].name + 8];
        snprintf(member, sizeof member, "%s.npy", names[j]);
        zip_int64_t i = zip_name_locate(za, member, 0);
        if (i >= 0 && z->n < n)
            rc = read_member(za, (zip_uint64_t)i, path, (uint64_t)sb.st_size, z, err);
    }
    zip_discard(za); /* opened read-only: nothing to write */
    if (rc) {
        nas__npz_free(z);
        return rc;
    }
    *out = z;
    return NAS_OK;
}

int nas__npz_read(const char *path, nas__npz **out, nas_error *err)
{
    return read_archive(path, NULL, 0, out, err);
}

int nas__npz_read_members(const char *path, const char *const *names, int k, nas__npz **out,
                          nas_error *err)
{
    if (!names || k < 0) {
        *out = NULL;
        return nas_error_set(err, NAS_EINVAL, "nas__npz_read_members: NULL names for %s", path);
    }
    return read_archive(path, names, k, out, err);
}

/* ---- PyTorch shapes -------------------------------------------------------------- */

int nas__torch_shape(const char *name, const nas_tensor *t, int64_t shape[4])
{
    int linear = strncmp(name, "classifier.", 11) == 0;
    if (t->h == 1 && t->w == 1 && t->n == 1 && !linear) { /* BN vectors [1,C,1,1] */
        shape[0] = t->c;
        return 1;
    }
    if (linear && t->c == 1 && t->h == 1 && t->w == 1) { /* bias [M,1,1,1] */
        shape[0] = t->n;
        return 1;
    }
    if (linear) { /* weight [M,K,1,1] */
        shape[0] = t->n;
        shape[1] = (int64_t)t->c * t->h * t->w;
        return 2;
    }
    shape[0] = t->n;
    shape[1] = t->c;
    shape[2] = t->h;
    shape[3] = t->w;
    return 4;
}

/* ---- a net's weights --------------------------------------------------------------- */

static int all_params(nas_net *net, nas_net_param **out, int *n, nas_error *err)
{
    *out = NULL;
    *n = nas_net_params(net, NULL, 0);
    if (*n <= 0)
        return nas_error_set(err, NAS_EINVAL, "network has no parameters");
    *out = malloc((size_t)*n * sizeof **out);
    if (!*out)
        return nas_error_set(err, NAS_ENOMEM, "out of memory listing parameters");
    nas_net_params(net, *out, *n);
    return NAS_OK;
}

/* Add every parameter of net (with `prefix` before its name) to z; with
 * bn_counters, also "<bn>.num_batches_tracked" after each running_var. */
int nas__weights_add(nas__npz_writer *z, nas_net *net, const char *prefix, int bn_counters,
                     nas_error *err)
{
    nas_net_param *p;
    int n;
    int rc = all_params(net, &p, &n, err);
    if (rc)
        return rc;
    size_t maxc = 0;
    for (int i = 0; i < n; i++)
        if (p[i].value->count > maxc)
            maxc = p[i].value->count;
    float *h = malloc(maxc * sizeof *h);
    if (!h) {
        free(p);
        return nas_error_set(err, NAS_ENOMEM, "out of memory saving weights");
    }
    for (int i = 0; i < n && !rc; i++) {
        const nas_tensor *t = p[i].value;
        int64_t shape[4];
        int nd = nas__torch_shape(p[i].name, t, shape);
        rc = nas_tensor_download(t, h, t->count);
        if (rc) {
            rc = nas_error_set(err, rc, "downloading %s: %s", p[i].name, nas_strerror(rc));
            break;
        }
        char name[256];
        snprintf(name, sizeof name, "%s%s", prefix, p[i].name);
        rc = nas__npz_add(z, name, "<f4", nd, shape, h, t->count * sizeof *h, err);
        size_t ln = strlen(p[i].name);
        if (!rc && bn_counters && ln > 12 && strcmp(p[i].name + ln - 12, ".running_var") == 0) {
            snprintf(name, sizeof name, "%s%.*s.num_batches_tracked", prefix, (int)(ln - 12),
                     p[i].name);
            int64_t zero = 0;
            rc = nas__npz_add(z, name, "<i8", 0, NULL, &zero, sizeof zero, err);
        }
    }
    free(h);
    free(p);
    return rc;
}

int nas_weights_save(nas_net *net, const char *path, nas_error *err)
{
    if (!net || !path)
        return nas_error_set(err, NAS_EINVAL, "nas_weights_save: NULL argument");
    nas__npz_writer *z;
    int rc = nas__npz_create(path, &z, err);
    if (rc)
        return rc;
    rc = nas__weights_add(z, net, "", 1, err);
    if (rc) {
        nas__npz_abort(z);
        return rc;
    }
    return nas__npz_close(z, err);
}

/* "d0,d1,..." of shape[0..nd) into buf[n] (n > 24), leaving out the
 * dimensions from the one that might not fit. */
static void fmt_dims(const int64_t *shape, int nd, char *buf, size_t n)
{
    int k = 0;
    buf[0] = '\0';
    for (int d = 0; d < nd && k < (int)n - 24; d++)
        k += snprintf(buf + k, n - (size_t)k, "%s%lld", d ? "," : "", (long long)shape[d]);
}

/* Load every parameter of net from members "<prefix><name>" of z. */
int nas__weights_load_from(nas_net *net, const nas__npz *z, const char *path, const char *prefix,
                           nas_error *err)
{
    nas_net_param *p;
    int n;
    int rc = all_params(net, &p, &n, err);
    if (rc)
        return rc;
    for (int i = 0; i < n && !rc; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s%s", prefix, p[i].name);
        const nas__npy *a = nas__npz_find(z, name);
        if (!a) {
            rc = nas_error_set(err, NAS_EFORMAT,
                               "%s has no array '%s': the weights are for another architecture",
                               path, name);
            break;
        }
        int64_t shape[4];
        int nd = nas__torch_shape(p[i].name, p[i].value, shape);
        int same = a->ndim == nd && strcmp(a->descr, "<f4") == 0;
        for (int d = 0; same && d < nd; d++)
            same = a->shape[d] == shape[d];
        if (!same) {
            char want[96], got[96];
            fmt_dims(shape, nd, want, sizeof want);
            fmt_dims(a->shape, a->ndim, got, sizeof got);
            rc = nas_error_set(err, NAS_EFORMAT,
                               "%s: '%s' is %s (%s), the network needs float32 (%s): the weights "
                               "are for another architecture",
                               path, name, a->descr, got, want);
            break;
        }
        rc = nas_tensor_upload(p[i].value, a->data, a->count);
        if (rc)
            rc = nas_error_set(err, rc, "uploading %s: %s", name, nas_strerror(rc));
    }
    /* Members that belong to no parameter mean another architecture. */
    for (int i = 0; !rc && !prefix[0] && i < nas__npz_count(z); i++) {
        const nas__npy *a = nas__npz_at(z, i);
        size_t ln = strlen(a->name);
        if (strchr(a->name, '/') ||
            (ln > 20 && strcmp(a->name + ln - 20, ".num_batches_tracked") == 0))
            continue;
        int found = 0;
        for (int k = 0; k < n && !found; k++)
            found = strcmp(p[k].name, a->name) == 0;
        if (!found)
            rc = nas_error_set(err, NAS_EFORMAT,
                               "%s holds '%s', which this network does not have: the weights are "
                               "for another architecture",
                               path, a->name);
    }
    free(p);
    return rc;
}

int nas_weights_load(nas_net *net, const char *path, nas_error *err)
{
    if (!net || !path)
        return nas_error_set(err, NAS_EINVAL, "nas_weights_load: NULL argument");
    nas__npz *z;
    int rc = nas__npz_read(path, &z, err);
    if (rc)
        return rc;
    rc = nas__weights_load_from(net, z, path, "", err);
    nas__npz_free(z);
    return rc;
}
