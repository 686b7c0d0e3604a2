/*
 * tests/fuzz/target_arch_json.c - ARCH.json files through
 * nas_arch_read_json (export/export_json.c, jansson). Promises checked: a
 * failure is an error code with a message naming the file; a success is
 * a valid cell genotype, or a chain genotype of its space (issue 15), that
 * nas_arch_write_json writes and nas_arch_read_json reads back to the same
 * architecture and recipe.
 */
#include <stdlib.h>
#include <string.h>
#include "nas/export.h"
#include "nas/space.h"
#include "fuzz.h"

/* 1 when two chain spaces have the same canonical settings (their source
 * line numbers may differ: the writer prints the space in canonical form). */
static int same_space(const nas_space_desc *x, const nas_space_desc *y)
{
    static nas_config cx, cy;
    nas_config_defaults(&cx);
    nas_config_defaults(&cy);
    cx.space = *x;
    cy.space = *y;
    char *tx = nas_config_canonical(&cx), *ty = nas_config_canonical(&cy);
    int same = tx && ty && strcmp(tx, ty) == 0;
    free(tx);
    free(ty);
    return same;
}

int nas_fuzz_arch_json(const uint8_t *data, size_t size)
{
    char path[64], path2[64];
    nas_fuzz_file(0, data, size, path, sizeof path);
    static nas_arch a, b; /* large: keep them off the stack */
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_arch_read_json(path, &a, &err);
    if (rc != NAS_OK) {
        NAS_FUZZ_CHECK(rc < 0 && err.code == rc && strstr(err.msg, path), "rc %d msg '%s'", rc,
                       err.msg);
        return rc;
    }
    int chain = !strcmp(a.space_type, "chain");
    NAS_FUZZ_CHECK(chain || a.net.genotype.len == NAS_CELL_EDGES, "genotype length %d",
                   a.net.genotype.len);
    nas_fuzz_file(1, NULL, 0, path2, sizeof path2);
    NAS_FUZZ_CHECK(nas_arch_write_json(&a, path2, &err) == NAS_OK, "write: %s", err.msg);
    NAS_FUZZ_CHECK(nas_arch_read_json(path2, &b, &err) == NAS_OK, "read back: %s", err.msg);
    NAS_FUZZ_CHECK(strcmp(a.genotype, b.genotype) == 0 && a.op_mask == b.op_mask &&
                       strcmp(a.space_type, b.space_type) == 0 &&
                       a.net.genotype.len == b.net.genotype.len &&
                       memcmp(a.net.genotype.tok, b.net.genotype.tok,
                              (size_t)a.net.genotype.len) == 0 &&
                       (!chain || same_space(&a.space, &b.space)) &&
                       a.net.channels == b.net.channels && a.net.stages == b.net.stages &&
                       a.net.cells_per_stage == b.net.cells_per_stage &&
                       a.recipe.epochs == b.recipe.epochs &&
                       a.recipe.batch_size == b.recipe.batch_size &&
                       a.recipe.seed == b.recipe.seed && a.recipe.schedule == b.recipe.schedule,
                   "architecture changed on write + read: '%s' -> '%s'", a.genotype, b.genotype);
    return rc;
}
