/*
 * trainer/supernet_map_impl.h - the supernet's flat read-only weights file
 * (internal; trainer/supernet_map.c, used by trainer/supernet.c; issue 32,
 * docs/one-shot.md "The mapped weights file").
 *
 * A supernet checkpoint (.npz: values and momentum of every slot) is what
 * training resumes from. Evaluating subnets needs the values only, and
 * every worker process needs all of them: this file holds them so that
 * workers mmap it read-only and shared (one physical copy in the page
 * cache for all workers) instead of each reading the .npz into its own
 * heap. Layout, every integer little-endian:
 *
 *   offset 0    header, NAS__SNW_HEADER (128) bytes:
 *                 magic "NASSNW\r\n" (8), u32 version (1), u32 header bytes
 *                 (128), i64 steps done, u64 fingerprint offset (128), u64
 *                 fingerprint length, u64 table offset, u64 slot count, u64
 *                 data offset, u64 data bytes, u64 file bytes, u32 CRC-32 of
 *                 the header (both CRC fields zero), fingerprint and table,
 *                 u32 CRC-32 of the data region, zeros to 128
 *   128         the fingerprint (bytes, no NUL), zeros to a multiple of 64
 *   table       one NAS__SNW_ENTRY (256) byte entry per slot: key (224 bytes,
 *                 NUL-terminated, NUL-padded), i32 shape[4] (n, c, h, w,
 *                 each >= 1), u64 file offset of its values (a multiple of
 *                 64), u64 float count (the shape's product)
 *   data        zeros to a multiple of 64, then each slot's float32 values
 *                 (row-major n, c, h, w) at its offset, in table order,
 *                 each padded with zeros to a multiple of 64 bytes
 *
 * No global state; nothing here writes into a mapping.
 */
#ifndef NAS_TRAINER_SUPERNET_MAP_IMPL_H
#define NAS_TRAINER_SUPERNET_MAP_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "nas/status.h"

#define NAS__SNW_MAGIC "NASSNW\r\n"
#define NAS__SNW_VERSION 1u
#define NAS__SNW_HEADER 128u
#define NAS__SNW_ENTRY 256u
#define NAS__SNW_KEY 224u
#define NAS__SNW_ALIGN 64u

/* One slot: its name, extent and values (count = product of shape floats). */
typedef struct nas__snw_slot {
    const char *key;
    int shape[4];
    const float *val;
} nas__snw_slot;

/* A weights file mapped read-only (PROT_READ, MAP_SHARED). slot[i].key and
 * slot[i].val point into the mapping; slot is malloc'd. */
typedef struct nas__snw_map {
    void *base;
    size_t size;
    int64_t steps;
    int n;
    nas__snw_slot *slot;
} nas__snw_map;

/*
 * Write slots s[0..n) with `fingerprint` and `steps` to `path`: to
 * "PATH.tmp", flushed and fsync'd, then renamed over `path` (a reader never
 * sees a half-written file under the final name; a kill leaves at most
 * PATH.tmp, which the next write replaces). before_rename (may be NULL) is
 * called with ctx once PATH.tmp is complete, before the rename (a test
 * hook). Errors: NAS_EINVAL (a key longer than NAS__SNW_KEY - 1 bytes or
 * empty, a shape dimension < 1, NULL arguments), NAS_EIO (names the path
 * and the system's reason; PATH.tmp is removed).
 */
int nas__snw_write(const char *path, const char *fingerprint, int64_t steps,
                   const nas__snw_slot *s, int n, void (*before_rename)(void *), void *ctx,
                   nas_error *err);

/*
 * Map `path` and check all of it before any value is used: its size, the
 * magic, version and header size, every offset and length against the
 * file's size, the table (keys NUL-terminated and non-empty, shapes >= 1
 * whose product is the count, values 64-byte aligned, in order, not
 * overlapping, inside the data region), both CRC-32s (header, fingerprint
 * and table; the values), then the fingerprint (equal to `fingerprint`)
 * and the steps (equal to `steps`; steps < 0: any). A truncated or damaged
 * file is refused, never read out of bounds. Errors: NAS_ENOTFOUND (no
 * file), NAS_EIO (cannot open or map it), NAS_EFORMAT (damaged or not a
 * weights file: the message says which check failed), NAS_EEXIST (another
 * supernet's fingerprint, or other steps than `steps`: stale), NAS_ENOMEM.
 * *out is NULL on failure.
 */
int nas__snw_open(const char *path, const char *fingerprint, int64_t steps, nas__snw_map **out,
                  nas_error *err);
void nas__snw_close(nas__snw_map *m); /* unmaps; NULL is a no-op */

struct nas_supernet;
/* nas_supernet_write_weights (trainer/supernet.c) with nas__snw_write's
 * before_rename hook: the one-shot search's test hook kills the process
 * there (evaluator/supernet_eval.c, NAS_FAULT=supernet_weights_kill). */
int nas__supernet_write_weights(const struct nas_supernet *sn, const char *path,
                                const char *fingerprint, void (*before_rename)(void *), void *ctx,
                                nas_error *err);

#endif
