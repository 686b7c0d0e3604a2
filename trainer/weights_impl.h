/*
 * trainer/weights_impl.h - NumPy .npz archives (internal; trainer/weights.c).
 *
 * An .npz file is a ZIP archive (PKWARE APPNOTE.TXT) whose members are
 * .npy files (NumPy "NEP 1: A simple file format for NumPy arrays", format
 * version 1.0). The ZIP container is libzip's job (issue 13; the layout is
 * the one nas wrote by hand before: members STORED, in the order added,
 * named "<name>.npy", no extra fields), so numpy.load reads our files
 * without our code; reading takes STORED or DEFLATE members (and any
 * other method libzip decompresses), so files rewritten by numpy.savez /
 * savez_compressed load too, and checks every member's CRC-32. Only
 * little-endian C-order arrays of <f4, <f8, <i8, <u8 and |u1 are
 * supported. tests/unit/test_npz.c holds the layout to files written
 * before libzip (tests/data/npz/).
 */
#ifndef NAS_TRAINER_WEIGHTS_IMPL_H
#define NAS_TRAINER_WEIGHTS_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "nas/status.h"
#include "nas/trainer.h"

#include "trainer/npy_impl.h" /* NAS__NPY_MAX_DIMS, nas__npy_header */

typedef struct nas__npz_writer nas__npz_writer;

/*
 * Start writing `path`. Members are kept in memory (a copy of each) until
 * nas__npz_close writes the archive to "PATH.tmp" and renames it over
 * `path`, so a reader never sees a half-written file (checkpoints rely on
 * this). Errors: NAS_EIO (libzip refused: the message names the path and
 * why; a missing or unwritable directory shows at nas__npz_close),
 * NAS_ENOMEM.
 */
int nas__npz_create(const char *path, nas__npz_writer **out, nas_error *err);

/* Add member `name` (".npy" is appended) holding an array of dtype `descr`
 * ("<f4", "<f8", "<i8", "<u8", "|u1"), `ndim` dims `shape` (ndim 0: a
 * scalar), data `nbytes` long. Errors: NAS_EINVAL (also when the shape's
 * byte count overflows or differs from nbytes), NAS_EIO, NAS_ENOMEM. */
int nas__npz_add(nas__npz_writer *z, const char *name, const char *descr, int ndim,
                 const int64_t *shape, const void *data, size_t nbytes, nas_error *err);

/* Write the archive (libzip zip_close), rename it into place; frees z.
 * Errors: NAS_EIO (names the path and libzip's or the system's reason). */
int nas__npz_close(nas__npz_writer *z, nas_error *err);

/* Discard a partly written archive (removes PATH.tmp); frees z. NULL ok. */
void nas__npz_abort(nas__npz_writer *z);

typedef struct nas__npy {
    char name[160];     /* member name without ".npy" */
    char descr[8];      /* "<f4", ... */
    int ndim;
    int64_t shape[NAS__NPY_MAX_DIMS];
    size_t count;       /* product of shape */
    size_t itemsize;
    const void *data;   /* count*itemsize bytes, owned by the archive */
} nas__npy;

typedef struct nas__npz nas__npz; /* a whole archive read into memory */

/* Read every member of `path`. Errors: NAS_EIO (cannot read), NAS_EFORMAT
 * (not a ZIP, a truncated or damaged archive, a CRC-32 mismatch, a member
 * that is not a supported .npy, or whose shape has a negative dimension,
 * overflows size_t in elements or bytes, or calls for another number of
 * bytes than the member holds: message names it), NAS_ENOMEM. */
int nas__npz_read(const char *path, nas__npz **out, nas_error *err);
/* nas__npz_read of only the members named names[0..k) (without ".npy"),
 * found through the ZIP central directory: the other members are not
 * read (a checkpoint's few metadata members without its weights). A name
 * the archive lacks is skipped (nas__npz_find returns NULL for it); a
 * name given twice is read twice. Errors: those of nas__npz_read for the
 * archive and the members read, NAS_EINVAL (NULL names). */
int nas__npz_read_members(const char *path, const char *const *names, int k, nas__npz **out,
                          nas_error *err);
void nas__npz_free(nas__npz *z); /* NULL is a no-op */
int nas__npz_count(const nas__npz *z);
const nas__npy *nas__npz_at(const nas__npz *z, int i);
/* Member `name` (without ".npy"), or NULL. */
const nas__npy *nas__npz_find(const nas__npz *z, const char *name);

/* PyTorch's shape for the nas parameter `name` held in tensor t: conv
 * weights (K,C,R,R), linear weight (M,K), vectors (C,) for BN entries and
 * the linear bias. Returns ndim. */
int nas__torch_shape(const char *name, const nas_tensor *t, int64_t shape[4]);

/* Add every parameter and buffer of `net` to z as "<prefix><name>" (float32,
 * PyTorch shapes); with bn_counters, also "<bn>.num_batches_tracked"
 * (int64 0) after each BN's running_var, as a PyTorch state_dict has.
 * Errors: NAS_EIO, NAS_ENOMEM, backend errors. */
int nas__weights_add(nas__npz_writer *z, nas_net *net, const char *prefix, int bn_counters,
                     nas_error *err);

/* Upload every parameter of `net` from members "<prefix><name>" of z
 * (`path` names z in messages). With an empty prefix, members that are no
 * parameter of net (other than *.num_batches_tracked and names holding a
 * '/') are an error. Errors: NAS_EFORMAT (missing member, wrong dtype or
 * shape: "the weights are for another architecture"), backend errors. */
int nas__weights_load_from(nas_net *net, const nas__npz *z, const char *path, const char *prefix,
                           nas_error *err);

#endif
