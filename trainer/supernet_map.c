/*
 * trainer/supernet_map.c - the supernet's flat read-only weights file of
 * trainer/supernet_map_impl.h (layout there): written once after phase 1
 * of a one-shot search, mapped PROT_READ / MAP_SHARED by every process
 * that evaluates subnets (issue 32, docs/one-shot.md).
 *
 * Integers are written byte by byte in little-endian order; the floats are
 * the host's binary32, so a big-endian host is refused (as for .npz,
 * trainer/weights.c). Every check on reading is against the mapped size,
 * in 64-bit arithmetic with overflow checked, before the first value is
 * read; the CRC-32s (zlib) catch damage inside the bounds.
 */
#include <errno.h>
#include <fcntl.h>    /* open */
#include <limits.h>   /* INT_MAX */
#include <stdio.h>    /* FILE, rename */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* mmap */
#include <sys/stat.h> /* fstat */
#include <unistd.h>   /* close, fsync */
#include <zlib.h>     /* crc32 */
#include "nas/trainer.h" /* NAS_PATH_MAX */
#include "trainer/supernet_map_impl.h"

/* header field offsets (supernet_map_impl.h) */
enum {
    H_VERSION = 8, H_HSIZE = 12, H_STEPS = 16, H_FP_OFF = 24, H_FP_LEN = 32, H_TABLE = 40,
    H_NSLOTS = 48, H_DATA = 56, H_DATA_BYTES = 64, H_FILE_BYTES = 72, H_META_CRC = 80,
    H_DATA_CRC = 84
};
/* table entry field offsets */
enum { E_SHAPE = NAS__SNW_KEY, E_OFFSET = NAS__SNW_KEY + 16, E_COUNT = NAS__SNW_KEY + 24 };

static int little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* x rounded up to a multiple of 64 (x far below UINT64_MAX here). */
static uint64_t up64(uint64_t x)
{
    return (x + NAS__SNW_ALIGN - 1) & ~(uint64_t)(NAS__SNW_ALIGN - 1);
}

/* zlib's CRC-32 of n bytes at p continuing c (crc32_z: any size_t length). */
static uint32_t crc_bytes(uint32_t c, const void *p, uint64_t n)
{
    return (uint32_t)crc32_z(c, p, (z_size_t)n);
}

/* The header-and-table CRC-32: of b[0..end) with the two CRC fields
 * (H_META_CRC, H_DATA_CRC: 8 bytes) taken as zeros; the writer stores it,
 * the reader checks it. */
static uint32_t meta_crc(const unsigned char *b, uint64_t end)
{
    static const unsigned char zero[8];
    uint32_t c = crc_bytes((uint32_t)crc32(0L, Z_NULL, 0), b, H_META_CRC);
    c = crc_bytes(c, zero, sizeof zero);
    return crc_bytes(c, b + H_META_CRC + sizeof zero, end - (H_META_CRC + sizeof zero));
}

/* ---- writing ------------------------------------------------------------------ */

static uint64_t slot_count(const nas__snw_slot *s)
{
    return (uint64_t)s->shape[0] * (uint64_t)s->shape[1] * (uint64_t)s->shape[2] *
           (uint64_t)s->shape[3];
}

/* The header, fingerprint and table (data_off bytes, malloc'd into *meta)
 * and the file's size; the value offsets follow the table in order. */
static int build_meta(const char *fp, int64_t steps, const nas__snw_slot *s, int n,
                      unsigned char **meta, uint64_t *data_off, uint64_t *file_size)
{
    uint64_t fp_len = strlen(fp), table = up64(NAS__SNW_HEADER + fp_len);
    uint64_t data = up64(table + (uint64_t)n * NAS__SNW_ENTRY), at = data;
    unsigned char *m = calloc(1, (size_t)data);
    if (!m)
        return NAS_ENOMEM;
    memcpy(m, NAS__SNW_MAGIC, 8);
    put32(m + H_VERSION, NAS__SNW_VERSION);
    put32(m + H_HSIZE, NAS__SNW_HEADER);
    put64(m + H_STEPS, (uint64_t)steps);
    put64(m + H_FP_OFF, NAS__SNW_HEADER);
    put64(m + H_FP_LEN, fp_len);
    put64(m + H_TABLE, table);
    put64(m + H_NSLOTS, (uint64_t)n);
    put64(m + H_DATA, data);
    memcpy(m + NAS__SNW_HEADER, fp, (size_t)fp_len);
    uint32_t dcrc = (uint32_t)crc32(0L, Z_NULL, 0);
    static const unsigned char zeros[NAS__SNW_ALIGN];
    for (int i = 0; i < n; i++) {
        unsigned char *e = m + table + (uint64_t)i * NAS__SNW_ENTRY;
        uint64_t cnt = slot_count(&s[i]), end = up64(at + 4 * cnt);
        memcpy(e, s[i].key, strlen(s[i].key));
        for (int d = 0; d < 4; d++)
            put32(e + E_SHAPE + 4 * d, (uint32_t)s[i].shape[d]);
        put64(e + E_OFFSET, at);
        put64(e + E_COUNT, cnt);
        dcrc = crc_bytes(dcrc, s[i].val, 4 * cnt);
        dcrc = crc_bytes(dcrc, zeros, end - at - 4 * cnt);
        at = end;
    }
    put64(m + H_DATA_BYTES, at - data);
    put64(m + H_FILE_BYTES, at);
    put32(m + H_META_CRC, meta_crc(m, table + (uint64_t)n * NAS__SNW_ENTRY));
    put32(m + H_DATA_CRC, dcrc);
    *meta = m;
    *data_off = data;
    *file_size = at;
    return NAS_OK;
}

/* The metadata and every slot's values (each padded to 64 bytes) into f. */
static int write_all(FILE *f, const unsigned char *meta, uint64_t data_off,
                     const nas__snw_slot *s, int n)
{
    static const unsigned char zeros[NAS__SNW_ALIGN];
    int bad = fwrite(meta, 1, (size_t)data_off, f) != (size_t)data_off;
    for (int i = 0; i < n && !bad; i++) {
        size_t bytes = (size_t)(4 * slot_count(&s[i])), pad = (size_t)(up64(bytes) - bytes);
        bad = fwrite(s[i].val, 1, bytes, f) != bytes || fwrite(zeros, 1, pad, f) != pad;
    }
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    return bad ? NAS_EIO : NAS_OK;
}

/* fsync the directory of path, so the rename is on disk (best effort). */
static void sync_dir(const char *path)
{
    char dir[NAS_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

static int check_slots(const char *path, const nas__snw_slot *s, int n, nas_error *err)
{
    for (int i = 0; i < n; i++) {
        size_t k = s[i].key ? strlen(s[i].key) : 0;
        int ok = k > 0 && k < NAS__SNW_KEY && s[i].val;
        for (int d = 0; d < 4; d++)
            ok &= s[i].shape[d] >= 1;
        if (!ok)
            return nas_error_set(err, NAS_EINVAL, "supernet weights %s: slot %d (%s) has an empty "
                                 "or too long key (at most %u bytes), no values or an empty shape",
                                 path, i, s[i].key ? s[i].key : "NULL", NAS__SNW_KEY - 1);
    }
    return NAS_OK;
}

int nas__snw_write(const char *path, const char *fingerprint, int64_t steps,
                   const nas__snw_slot *s, int n, void (*before_rename)(void *), void *ctx,
                   nas_error *err)
{
    if (!path || !fingerprint || (n > 0 && !s) || n < 0 || steps < 0)
        return nas_error_set(err, NAS_EINVAL, "nas__snw_write: NULL argument, %d slots or %lld "
                             "steps", n, (long long)steps);
    if (!little_endian())
        return nas_error_set(err, NAS_EUNSUPPORTED, "writing %s: big-endian hosts are not "
                             "supported", path);
    int rc = check_slots(path, s, n, err);
    if (rc)
        return rc;
    char tmp[NAS_PATH_MAX + 8];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return nas_error_set(err, NAS_EINVAL, "supernet weights path %s is too long", path);
    unsigned char *meta = NULL;
    uint64_t data_off = 0, size = 0;
    if (build_meta(fingerprint, steps, s, n, &meta, &data_off, &size))
        return nas_error_set(err, NAS_ENOMEM, "out of memory writing %s", path);
    FILE *f = fopen(tmp, "wb");
    rc = f ? write_all(f, meta, data_off, s, n) : NAS_EIO;
    int e = errno;
    free(meta);
    if (f && fclose(f) != 0 && !rc) {
        rc = NAS_EIO;
        e = errno;
    }
    if (!rc && before_rename)
        before_rename(ctx);
    if (!rc && rename(tmp, path) != 0) {
        rc = NAS_EIO;
        e = errno;
    }
    if (rc) {
        remove(tmp);
        return nas_error_set(err, NAS_EIO, "cannot write the supernet weights %s (%llu bytes, "
                             "via %s): %s", path, (unsigned long long)size, tmp, strerror(e));
    }
    sync_dir(path);
    return NAS_OK;
}

/* ---- reading ------------------------------------------------------------------ */

void nas__snw_close(nas__snw_map *m)
{
    if (!m)
        return;
    if (m->base)
        munmap(m->base, m->size);
    free(m->slot);
    free(m);
}

/* What the header says, checked against the file's size. */
typedef struct hdr {
    int64_t steps;
    uint64_t fp_len, table, n, data;
} hdr;

static int check_header(const nas__snw_map *m, const char *path, hdr *h, nas_error *err)
{
    const unsigned char *b = m->base;
    uint64_t size = m->size;
    if (memcmp(b, NAS__SNW_MAGIC, 8) != 0)
        return nas_error_set(err, NAS_EFORMAT, "%s is not a supernet weights file (magic)", path);
    if (get32(b + H_VERSION) != NAS__SNW_VERSION || get32(b + H_HSIZE) != NAS__SNW_HEADER)
        return nas_error_set(err, NAS_EFORMAT, "%s: version %u, header %u bytes; this nas reads "
                             "version %u, %u bytes", path, get32(b + H_VERSION),
                             get32(b + H_HSIZE), NAS__SNW_VERSION, NAS__SNW_HEADER);
    h->steps = (int64_t)get64(b + H_STEPS);
    h->fp_len = get64(b + H_FP_LEN);
    h->table = get64(b + H_TABLE);
    h->n = get64(b + H_NSLOTS);
    h->data = get64(b + H_DATA);
    if (get64(b + H_FILE_BYTES) != size)
        return nas_error_set(err, NAS_EFORMAT, "%s: %llu bytes, its header says %llu (truncated "
                             "or extended)", path, (unsigned long long)size,
                             (unsigned long long)get64(b + H_FILE_BYTES));
    int ok = get64(b + H_FP_OFF) == NAS__SNW_HEADER && h->fp_len <= size - NAS__SNW_HEADER &&
             h->table == up64(NAS__SNW_HEADER + h->fp_len) && h->table <= size && h->steps >= 0;
    ok = ok && h->n <= (size - h->table) / NAS__SNW_ENTRY && h->n <= INT_MAX &&
         h->data == up64(h->table + h->n * NAS__SNW_ENTRY) && h->data <= size &&
         get64(b + H_DATA_BYTES) == size - h->data;
    if (!ok)
        return nas_error_set(err, NAS_EFORMAT, "%s: damaged header (fingerprint, table, data "
                             "offsets or steps out of bounds for its %llu bytes)", path,
                             (unsigned long long)size);
    return NAS_OK;
}

/* Slot i's entry: bounds, alignment, order; into m->slot[i]. *end: where
 * the previous slot's values end (updated). */
static int check_entry(nas__snw_map *m, const hdr *h, int i, uint64_t *end, const char *path,
                       nas_error *err)
{
    const unsigned char *e = (const unsigned char *)m->base + h->table + (uint64_t)i * NAS__SNW_ENTRY;
    if (!memchr(e, 0, NAS__SNW_KEY) || !e[0])
        return nas_error_set(err, NAS_EFORMAT, "%s: slot %d: its key is empty or not "
                             "NUL-terminated", path, i);
    uint64_t prod = 1, off = get64(e + E_OFFSET), count = get64(e + E_COUNT);
    nas__snw_slot *s = &m->slot[i];
    s->key = (const char *)e;
    for (int d = 0; d < 4; d++) {
        uint32_t v = get32(e + E_SHAPE + 4 * d);
        if (v < 1 || v > INT_MAX || prod > (m->size / 4) / v)
            return nas_error_set(err, NAS_EFORMAT, "%s: slot %s: bad shape (dimension %d is %u)",
                                 path, s->key, d, v);
        s->shape[d] = (int)v;
        prod *= v;
    }
    if (count != prod || off % NAS__SNW_ALIGN != 0 || off < *end || off > m->size ||
        count > (m->size - off) / 4)
        return nas_error_set(err, NAS_EFORMAT, "%s: slot %s: %llu floats at offset %llu do not "
                             "fit its shape, the alignment, the order or the file's %llu bytes",
                             path, s->key, (unsigned long long)count, (unsigned long long)off,
                             (unsigned long long)m->size);
    s->val = (const float *)((const unsigned char *)m->base + off);
    *end = off + 4 * count;
    return NAS_OK;
}

/* The table, both CRC-32s, the fingerprint and the steps. */
static int check_body(nas__snw_map *m, const hdr *h, const char *path, const char *fp,
                      int64_t steps, nas_error *err)
{
    const unsigned char *b = m->base;
    m->n = (int)h->n;
    m->steps = h->steps;
    m->slot = calloc(h->n ? (size_t)h->n : 1, sizeof *m->slot);
    if (!m->slot)
        return nas_error_set(err, NAS_ENOMEM, "out of memory mapping %s", path);
    uint64_t end = h->data;
    for (int i = 0; i < m->n; i++) {
        int rc = check_entry(m, h, i, &end, path, err);
        if (rc)
            return rc;
    }
    if (meta_crc(b, h->table + h->n * NAS__SNW_ENTRY) != get32(b + H_META_CRC))
        return nas_error_set(err, NAS_EFORMAT, "%s: CRC-32 of its header and table mismatch "
                             "(damaged file)", path);
    if (crc_bytes((uint32_t)crc32(0L, Z_NULL, 0), b + h->data, m->size - h->data) !=
        get32(b + H_DATA_CRC))
        return nas_error_set(err, NAS_EFORMAT, "%s: CRC-32 of its values mismatch (damaged "
                             "file)", path);
    const char *f = (const char *)b + NAS__SNW_HEADER;
    if (h->fp_len != strlen(fp) || memcmp(f, fp, (size_t)h->fp_len) != 0)
        return nas_error_set(err, NAS_EEXIST, "%s belongs to another supernet (its fingerprint "
                             "differs)", path);
    if (steps >= 0 && h->steps != steps)
        return nas_error_set(err, NAS_EEXIST, "%s is stale: it holds the supernet after %lld "
                             "steps, the checkpoint %lld", path, (long long)h->steps,
                             (long long)steps);
    return NAS_OK;
}

/* Open and map path into a new *m (size checked to hold a header). */
static int map_file(const char *path, nas__snw_map **out, nas_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return nas_error_set(err, errno == ENOENT ? NAS_ENOTFOUND : NAS_EIO,
                             "cannot open the supernet weights %s: %s", path, strerror(errno));
    struct stat sb;
    int rc = fstat(fd, &sb) != 0 ? NAS_EIO : !S_ISREG(sb.st_mode) ? NAS_EFORMAT : NAS_OK;
    if (!rc && (sb.st_size < (off_t)NAS__SNW_HEADER || (uint64_t)sb.st_size > SIZE_MAX))
        rc = nas_error_set(err, NAS_EFORMAT, "%s: %lld bytes, too short for a supernet weights "
                           "file (truncated?)", path, (long long)sb.st_size);
    else if (rc)
        nas_error_set(err, rc, "%s: %s", path, rc == NAS_EIO ? strerror(errno)
                                                             : "not a regular file");
    nas__snw_map *m = rc ? NULL : calloc(1, sizeof *m);
    if (!rc && !m)
        rc = nas_error_set(err, NAS_ENOMEM, "out of memory mapping %s", path);
    if (!rc) {
        m->size = (size_t)sb.st_size;
        m->base = mmap(NULL, m->size, PROT_READ, MAP_SHARED, fd, 0);
        if (m->base == MAP_FAILED) {
            m->base = NULL;
            rc = nas_error_set(err, NAS_EIO, "cannot map %s: %s", path, strerror(errno));
        }
    }
    close(fd);
    if (rc)
        nas__snw_close(m);
    else
        *out = m;
    return rc;
}

int nas__snw_open(const char *path, const char *fingerprint, int64_t steps, nas__snw_map **out,
                  nas_error *err)
{
    if (!out)
        return nas_error_set(err, NAS_EINVAL, "nas__snw_open: NULL argument");
    *out = NULL;
    if (!path || !fingerprint)
        return nas_error_set(err, NAS_EINVAL, "nas__snw_open: NULL argument");
    if (!little_endian())
        return nas_error_set(err, NAS_EUNSUPPORTED, "reading %s: big-endian hosts are not "
                             "supported", path);
    nas__snw_map *m = NULL;
    int rc = map_file(path, &m, err);
    hdr h = {0, 0, 0, 0, 0};
    if (!rc)
        rc = check_header(m, path, &h, err);
    if (!rc)
        rc = check_body(m, &h, path, fingerprint, steps, err);
    if (rc) {
        nas__snw_close(m);
        return rc;
    }
    *out = m;
    return NAS_OK;
}
