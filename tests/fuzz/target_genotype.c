/*
 * tests/fuzz/target_genotype.c - genotype strings through the cell space's
 * parser nas_space_parse (space/space.c -> space/cell.c). Byte 0 picks the space's op set
 * (bits of NAS_OP_*; an invalid set parses without a space), the rest is
 * the string. Promises checked (nas_fuzz_genotype_roundtrip in fuzz_util.c, shared with
 * the chain space's target): a failure is NAS_EFORMAT with a message; a
 * success formats back (nas_space_format) to a string that parses to the
 * same tokens, and has a canonical key; a cell has NAS_CELL_EDGES tokens.
 */
#include <stdlib.h>
#include <string.h>
#include "nas/space.h"
#include "fuzz.h"

int nas_fuzz_genotype(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    nas_space_desc d = {.type = NAS_SPACE_CELL, .op_mask = data[0] & ((1u << NAS_OP_COUNT) - 1),
                       .channels = 16, .stages = 3, .cells_per_stage = 1};
    nas_space *sp = NULL;
    nas_error err;
    if (nas_space_create(&d, &sp, &err) != NAS_OK)
        sp = NULL;
    char *str = nas_fuzz_cstr(data + 1, size - 1);
    nas_genotype g;
    int rc = nas_fuzz_genotype_roundtrip(sp, str, &g);
    if (rc == NAS_OK)
        NAS_FUZZ_CHECK(g.len == NAS_CELL_EDGES, "len %d", g.len);
    free(str);
    nas_space_destroy(sp);
    return rc;
}
