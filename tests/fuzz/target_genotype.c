/*
 * tests/fuzz/target_genotype.c - genotype strings through the cell space's
 * parser nas_space_parse (space/cell.c). Byte 0 picks the space's op set
 * (bits of NAS_OP_*; an invalid set parses without a space), the rest is
 * the string. Promises checked: a failure is NAS_EFORMAT with a message;
 * a success formats back (nas_space_format) to a string that parses to
 * the same tokens, and has a canonical key.
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
    char *str = malloc(size);
    NAS_FUZZ_CHECK(str != NULL, "malloc");
    memcpy(str, data + 1, size - 1);
    str[size - 1] = '\0';
    nas_genotype g;
    nas_error_clear(&err);
    int rc = nas_space_parse(sp, str, &g, &err);
    if (rc != NAS_OK) {
        NAS_FUZZ_CHECK(rc == NAS_EFORMAT && err.code == rc && err.msg[0], "rc %d msg '%s'", rc,
                       err.msg);
    } else {
        char buf[NAS_GENOTYPE_STR_MAX], key[NAS_GENOTYPE_STR_MAX];
        NAS_FUZZ_CHECK(g.len == NAS_CELL_EDGES, "len %d", g.len);
        NAS_FUZZ_CHECK(nas_space_format(sp, &g, buf, sizeof buf) == NAS_OK, "format '%s'", str);
        nas_genotype g2;
        NAS_FUZZ_CHECK(nas_space_parse(sp, buf, &g2, &err) == NAS_OK, "reparse '%s': %s", buf,
                       err.msg);
        NAS_FUZZ_CHECK(memcmp(g.tok, g2.tok, NAS_CELL_EDGES) == 0, "'%s' -> '%s'", str, buf);
        if (sp) {
            nas_space_key(sp, &g, key, sizeof key);
            NAS_FUZZ_CHECK(key[0] != '\0', "empty key for '%s'", buf);
        }
    }
    free(str);
    nas_space_destroy(sp);
    return rc;
}
