/*
 * tests/fuzz/target_supernet_weights.c - supernet weights files (the flat
 * read-only file workers map in phase 2 of a one-shot search;
 * trainer/supernet_map_impl.h) through nas__snw_open (trainer/supernet_map.c),
 * with fingerprint "fuzz" and any steps. Promises checked: a failure is an
 * error code with a message naming the file and no mapping, and never
 * NAS_ENOMEM for a file under 1 MiB (allocations follow the file, not the
 * counts its header claims); a success gives slots whose keys are
 * NUL-terminated strings shorter than NAS__SNW_KEY, whose shapes are >= 1
 * with every value inside the mapping (read in full: ASan checks it), and
 * the file round-trips: written again with nas__snw_write, it reopens to
 * the same steps, keys, shapes and value bytes.
 */
#include <stdio.h>
#include <string.h>
#include "trainer/supernet_map_impl.h"
#include "fuzz.h"

/* Every value byte of m (summed, so none is skipped); checks the bounds. */
static unsigned touch(const nas__snw_map *m)
{
    unsigned sum = 0;
    const unsigned char *lo = m->base, *hi = lo + m->size;
    for (int i = 0; i < m->n; i++) {
        const nas__snw_slot *s = &m->slot[i];
        NAS_FUZZ_CHECK(strlen(s->key) > 0 && strlen(s->key) < NAS__SNW_KEY, "slot %d key", i);
        size_t count = 1;
        for (int d = 0; d < 4; d++) {
            NAS_FUZZ_CHECK(s->shape[d] >= 1, "slot %s shape", s->key);
            count *= (size_t)s->shape[d];
        }
        const unsigned char *p = (const unsigned char *)s->val;
        NAS_FUZZ_CHECK(p >= lo && p <= hi && count <= (size_t)(hi - p) / 4,
                       "slot %s: %zu floats outside the mapping", s->key, count);
        for (size_t k = 0; k < 4 * count; k++)
            sum += p[k];
    }
    return sum;
}

static void roundtrip(const nas__snw_map *m)
{
    char path[600];
    snprintf(path, sizeof path, "%s/rt.weights", nas_fuzz_dir());
    nas_error err;
    nas_error_clear(&err);
    int rc = nas__snw_write(path, "fuzz", m->steps, m->slot, m->n, NULL, NULL, &err);
    NAS_FUZZ_CHECK(rc == NAS_OK, "rewriting: %s", err.msg);
    nas__snw_map *r = NULL;
    rc = nas__snw_open(path, "fuzz", m->steps, &r, &err);
    NAS_FUZZ_CHECK(rc == NAS_OK && r->n == m->n, "reopening: %s", err.msg);
    for (int i = 0; i < m->n; i++) {
        const nas__snw_slot *a = &m->slot[i], *b = &r->slot[i];
        size_t count = (size_t)a->shape[0] * a->shape[1] * a->shape[2] * a->shape[3];
        NAS_FUZZ_CHECK(!strcmp(a->key, b->key) && !memcmp(a->shape, b->shape, sizeof a->shape) &&
                           !memcmp(a->val, b->val, 4 * count),
                       "slot %s differs after the round trip", a->key);
    }
    nas__snw_close(r);
}

int nas_fuzz_supernet_weights(const uint8_t *data, size_t size)
{
    char path[64];
    nas_fuzz_file(0, data, size, path, sizeof path);
    nas__snw_map *m = (nas__snw_map *)path; /* must be reset */
    nas_error err;
    nas_error_clear(&err);
    int rc = nas__snw_open(path, "fuzz", -1, &m, &err);
    if (rc != NAS_OK)
        return nas_fuzz_refused(rc, &err, m == NULL, path, NULL, size);
    NAS_FUZZ_CHECK(m != NULL && m->steps >= 0 && m->n >= 0, "no mapping");
    unsigned sum = touch(m);
    roundtrip(m);
    nas__snw_close(m);
    return (int)(sum & 0);
}
