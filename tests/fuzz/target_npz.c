/*
 * tests/fuzz/target_npz.c - .npz files through nas__npz_read
 * (trainer/weights.c: libzip, CRC-32, .npy headers). Promises checked: a
 * failure is an error code with a message naming the file and no
 * archive, and never NAS_ENOMEM for a file under 1 MiB (allocations
 * follow the data, not the sizes headers claim); a success gives members whose shape product is their count,
 * whose data is count * itemsize readable bytes (ASan checks the read)
 * and which nas__npz_find finds by name.
 */
#include <string.h>
#include "trainer/weights_impl.h"
#include "fuzz.h"

int nas_fuzz_npz(const uint8_t *data, size_t size)
{
    char path[64];
    nas_fuzz_file(0, data, size, path, sizeof path);
    nas__npz *z = (nas__npz *)path; /* must be reset */
    nas_error err;
    nas_error_clear(&err);
    int rc = nas__npz_read(path, &z, &err);
    if (rc != NAS_OK)
        return nas_fuzz_refused(rc, &err, z == NULL, path, NULL, size);
    NAS_FUZZ_CHECK(z != NULL, "no archive");
    unsigned sum = 0;
    for (int i = 0; i < nas__npz_count(z); i++) {
        const nas__npy *a = nas__npz_at(z, i);
        NAS_FUZZ_CHECK(a && a->ndim >= 0 && a->ndim <= NAS__NPY_MAX_DIMS, "member %d", i);
        size_t count = 1;
        for (int d = 0; d < a->ndim; d++)
            count *= (size_t)a->shape[d];
        NAS_FUZZ_CHECK(count == a->count, "member %s: count %zu, shape says %zu", a->name,
                       a->count, count);
        const unsigned char *p = a->data;
        size_t nbytes = a->count * a->itemsize;
        NAS_FUZZ_CHECK(nbytes == 0 || p != NULL, "member %s: no data", a->name);
        for (size_t k = 0; k < nbytes; k++)
            sum += p[k];
        const nas__npy *f = nas__npz_find(z, a->name);
        NAS_FUZZ_CHECK(f && strcmp(f->name, a->name) == 0, "member %s not found by name",
                       a->name);
    }
    nas__npz_free(z);
    return (int)(sum & 0);
}
